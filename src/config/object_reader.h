// Reading the configuration's JSON (private to sandbox_config): the error every refusal
// carries, and a field-by-field reader of one object that reports unknown keys (typos).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "sandbox/core/error.h"
#include "sandbox/core/result.h"

namespace sandbox::config::detail {

// "configuration <path>: <what>", the shape of every refusal of the configuration.
inline Error Invalid(const std::string& path, const std::string& what) {
  return Error(ErrorCode::kInvalidArgument, "configuration " + path + ": " + what);
}

// Reads one JSON object field by field; remembers which keys were used so leftovers
// (typos) are reported.
class ObjectReader {
 public:
  ObjectReader(const nlohmann::json& object, std::string path)
      : object_(object), path_(std::move(path)) {}

  Status Check() const {
    if (!object_.is_object()) return Invalid(path_, "expected an object");
    return OkStatus();
  }

  template <typename T>
  Status Read(const char* key, T& out) {
    used_.insert(key);
    auto it = object_.find(key);
    if (it == object_.end()) return OkStatus();
    return Convert(*it, Child(key), out);
  }

  // Reads a nested object with `fn(const nlohmann::json&, std::string path)`.
  template <typename Fn>
  Status ReadObject(const char* key, Fn&& fn) {
    used_.insert(key);
    auto it = object_.find(key);
    if (it == object_.end()) return OkStatus();
    return fn(*it, Child(key));
  }

  Status RejectUnknown() const {
    for (const auto& item : object_.items()) {
      if (!used_.contains(item.key())) return Invalid(Child(item.key()), "unknown key");
    }
    return OkStatus();
  }

  std::string Child(const std::string& key) const {
    return path_.empty() ? key : path_ + "." + key;
  }

 private:
  static Status Convert(const nlohmann::json& v, const std::string& path, std::string& out) {
    if (!v.is_string()) return Invalid(path, "expected a string");
    out = v.get<std::string>();
    return OkStatus();
  }
  static Status Convert(const nlohmann::json& v, const std::string& path, bool& out) {
    if (!v.is_boolean()) return Invalid(path, "expected true or false");
    out = v.get<bool>();
    return OkStatus();
  }
  static Status Convert(const nlohmann::json& v, const std::string& path, double& out) {
    if (!v.is_number()) return Invalid(path, "expected a number");
    out = v.get<double>();
    return OkStatus();
  }
  static Status Convert(const nlohmann::json& v, const std::string& path, std::int64_t& out) {
    if (!v.is_number_integer()) return Invalid(path, "expected an integer");
    out = v.get<std::int64_t>();
    return OkStatus();
  }
  static Status Convert(const nlohmann::json& v, const std::string& path, int& out) {
    if (!v.is_number_integer()) return Invalid(path, "expected an integer");
    auto wide = v.get<std::int64_t>();
    if (wide < INT32_MIN || wide > INT32_MAX) return Invalid(path, "out of range");
    out = static_cast<int>(wide);
    return OkStatus();
  }
  static Status Convert(const nlohmann::json& v, const std::string& path, std::uint16_t& out) {
    if (!v.is_number_integer()) return Invalid(path, "expected an integer");
    auto wide = v.get<std::int64_t>();
    if (wide < 0 || wide > 65535) return Invalid(path, "expected a port number (0-65535)");
    out = static_cast<std::uint16_t>(wide);
    return OkStatus();
  }
  static Status Convert(const nlohmann::json& v, const std::string& path,
                        std::map<std::string, std::string>& out) {
    if (!v.is_object()) return Invalid(path, "expected an object of strings");
    out.clear();
    for (const auto& [key, item] : v.items()) {
      if (!item.is_string()) return Invalid(path + "." + key, "expected a string");
      out[key] = item.get<std::string>();
    }
    return OkStatus();
  }
  static Status Convert(const nlohmann::json& v, const std::string& path,
                        std::vector<std::string>& out) {
    if (!v.is_array()) return Invalid(path, "expected an array of strings");
    out.clear();
    for (const auto& item : v) {
      if (!item.is_string()) return Invalid(path, "expected an array of strings");
      out.push_back(item.get<std::string>());
    }
    return OkStatus();
  }
  template <typename Rep, typename Period>
  static Status Convert(const nlohmann::json& v, const std::string& path,
                        std::chrono::duration<Rep, Period>& out) {
    if (!v.is_number_integer()) return Invalid(path, "expected an integer");
    out = std::chrono::duration<Rep, Period>(v.get<Rep>());
    return OkStatus();
  }

  const nlohmann::json& object_;
  std::string path_;
  std::set<std::string> used_;
};

}  // namespace sandbox::config::detail
