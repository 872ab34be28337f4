// A service::TunablePools in memory: settings as applied, stats echoing them, drains counted.
// Thread-safety: every method under one mutex.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "sandbox/service/tunable_pools.h"

namespace sandbox::admin::testing {

class FakePools : public service::TunablePools {
 public:
  FakePools() { Add("default"); }

  void Add(const std::string& name) {
    std::lock_guard lock(mu_);
    service::PoolSettings settings;
    settings.name = name;
    settings.mode = "recycle";
    settings.image = "sandbox-mcp-python:latest";
    settings.sizes = {2, 8, 2};
    settings.max_limits = config::Limits::DefaultMaxima();
    settings_[name] = settings;
  }

  std::vector<std::string> PoolNames() const override {
    std::lock_guard lock(mu_);
    std::vector<std::string> names;
    for (const auto& [name, s] : settings_) names.push_back(name);
    return names;
  }
  std::optional<service::PoolSettings> Settings(const std::string& pool) const override {
    std::lock_guard lock(mu_);
    auto it = settings_.find(pool);
    if (it == settings_.end()) return std::nullopt;
    return it->second;
  }
  std::optional<pool::PoolStats> Stats(const std::string& pool) const override {
    std::lock_guard lock(mu_);
    auto it = settings_.find(pool);
    if (it == settings_.end()) return std::nullopt;
    pool::PoolStats stats;
    stats.sizes = it->second.sizes;
    stats.autoscaled = it->second.autoscale.enabled;
    stats.min_idle_target =
        stats.autoscaled ? it->second.autoscale.min_idle_floor : it->second.sizes.min_idle;
    stats.idle = 1;
    stats.drain.drains_total = drains_;
    return stats;
  }
  bool Apply(const std::string& pool, const service::PoolSettings& settings) override {
    std::lock_guard lock(mu_);
    auto it = settings_.find(pool);
    if (it == settings_.end()) return false;
    ++applied_;
    it->second.sizes = settings.sizes;
    it->second.autoscale = settings.autoscale;
    it->second.limits = settings.limits;
    it->second.network = settings.network;
    return true;
  }
  std::optional<pool::DrainProgress> Drain(const std::string& pool) override {
    std::lock_guard lock(mu_);
    if (!settings_.contains(pool)) return std::nullopt;
    ++drains_;
    return pool::DrainProgress{drains_, 3, 1};
  }

  int applied() const {
    std::lock_guard lock(mu_);
    return applied_;
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, service::PoolSettings> settings_;
  int applied_ = 0;
  std::uint64_t drains_ = 0;
};

}  // namespace sandbox::admin::testing
