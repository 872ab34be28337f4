// The cost of placement (issue 28 item 7, docs/scale-out.md section 4): engine::Choose over 100
// fake engines holding one pool's 1,000 sandboxes, per decision, in wall time (percentiles, each
// decision timed alone) and in process CPU (a batch of decisions, no clock read between them).
// No engine, no container: the decision the pool makes under its lock, nothing else.
//
//   cmake --build build --target bench_placement       # builds and runs this, prints the table
//   build/bench/placement_bench [--engines 100] [--sandboxes 1000] [--decisions 200000] [--seed 1]
//
// The workload: a fill (one start per sandbox, from empty), then steady cycles of a recycle pool
// at 90 % leased: lend an idle sandbox (kLend), give a random leased one back; and of a fresh
// pool: lend, retire a random leased one and place its replacement (kStart). Each decision is
// counted on its engine before the next, as the pool does.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "sandbox/engine/placement.h"

namespace {

using sandbox::engine::Choose;
using sandbox::engine::EngineLoad;
using sandbox::engine::Purpose;
using sandbox::engine::Rng;
using Clock = std::chrono::steady_clock;

struct Options {
  int engines = 100;
  int sandboxes = 1000;
  int decisions = 200000;  // per steady workload
  std::uint64_t seed = 1;
};

std::int64_t CpuNanos() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

std::int64_t Nanos(Clock::duration d) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
}

// Per-decision wall times, and the figures the table prints.
struct Samples {
  std::vector<std::int64_t> ns;
  std::int64_t cpu_ns = 0;    // process CPU over the untimed batch
  std::int64_t batch_ns = 0;  // wall time over the untimed batch
  std::int64_t batch_n = 0;   // decisions in the untimed batch

  double Percentile(double p) {
    std::sort(ns.begin(), ns.end());
    const auto at = static_cast<std::size_t>(p / 100.0 * static_cast<double>(ns.size() - 1));
    return static_cast<double>(ns[at]);
  }
};

// One pool over `engines` engines: the loads Choose reads, kept current as the pool would.
class Pool {
 public:
  Pool(const Options& options, std::uint64_t seed)
      : loads_(static_cast<std::size_t>(options.engines)), placement_(seed), workload_(seed + 1) {
    const double share = static_cast<double>(options.sandboxes) / options.engines;
    for (auto& e : loads_) {
      e.share = share;
      e.max_concurrent_starts = 2;
    }
  }

  // Timed: one decision. Counted on its engine at once (a start counts before its create call).
  std::size_t Decide(Purpose purpose) {
    const std::optional<std::size_t> pick = Choose(loads_, purpose, placement_);
    if (!pick) {
      std::fprintf(stderr, "placement_bench: no engine eligible (a bug in the workload)\n");
      std::abort();
    }
    return *pick;
  }
  void Started(std::size_t i) { ++loads_[i].starting; }
  void Ready(std::size_t i) {
    --loads_[i].starting;
    ++loads_[i].idle;
  }
  void Lent(std::size_t i) {
    --loads_[i].idle;
    ++loads_[i].leased;
    ++leased_total_;
  }
  // A leased sandbox back, from a random engine that has one: to idle (recycle) or gone
  // (fresh). A few ns (at 90 % leased the first draw almost always finds one), so the CPU
  // figures stay the decisions'.
  void GiveBackRandom(bool retire) {
    for (;;) {
      auto& e = loads_[workload_.Below(loads_.size())];
      if (e.leased == 0) continue;
      --e.leased;
      --leased_total_;
      if (!retire) ++e.idle;
      return;
    }
  }
  int leased_total() const { return leased_total_; }
  const std::vector<EngineLoad>& loads() const { return loads_; }

 private:
  std::vector<EngineLoad> loads_;
  Rng placement_;
  Rng workload_;
  int leased_total_ = 0;
};

// A start placed and, at once, its container ready (the fill's starts complete in order; two in
// flight per engine would change nothing the decision reads but `starting`).
void StartOne(Pool& pool) {
  const std::size_t i = pool.Decide(Purpose::kStart);
  pool.Started(i);
  pool.Ready(i);
}

struct Row {
  const char* name = "";
  Samples samples;
};

// Fills from empty, repeated until `decisions` starts were timed. `spread`: the most the fullest
// and the emptiest engine differed by at the end of a fill.
Samples Fill(const Options& options, std::uint64_t seed, int& spread) {
  Samples s;
  const int rounds = std::max(1, options.decisions / options.sandboxes);
  s.ns.reserve(static_cast<std::size_t>(rounds) * static_cast<std::size_t>(options.sandboxes));
  spread = 0;
  for (int r = 0; r < rounds; ++r) {
    Pool pool(options, seed + static_cast<std::uint64_t>(r));
    for (int n = 0; n < options.sandboxes; ++n) {
      const auto t0 = Clock::now();
      const std::size_t i = pool.Decide(Purpose::kStart);
      const auto t1 = Clock::now();
      s.ns.push_back(Nanos(t1 - t0));
      pool.Started(i);
      pool.Ready(i);
    }
    const auto [low, high] = std::minmax_element(
        pool.loads().begin(), pool.loads().end(),
        [](const EngineLoad& a, const EngineLoad& b) { return a.idle < b.idle; });
    spread = std::max(spread, high->idle - low->idle);
  }
  // The untimed batch: the same fills without a clock read.
  const std::int64_t cpu0 = CpuNanos();
  const auto wall0 = Clock::now();
  for (int r = 0; r < rounds; ++r) {
    Pool batch(options, seed + static_cast<std::uint64_t>(rounds + r));
    for (int n = 0; n < options.sandboxes; ++n) StartOne(batch);
  }
  s.batch_ns = Nanos(Clock::now() - wall0);
  s.cpu_ns = CpuNanos() - cpu0;
  s.batch_n = static_cast<std::int64_t>(rounds) * options.sandboxes;
  return s;
}

// Steady state of a full pool at 90 % leased. Recycle: lend, give back. Fresh: lend, retire,
// place the replacement. Timed: the decisions of `timed` (kLend or kStart).
Samples Steady(const Options& options, std::uint64_t seed, bool fresh, Purpose timed) {
  Samples s;
  Pool pool(options, seed);
  for (int n = 0; n < options.sandboxes; ++n) StartOne(pool);
  const int leased_target = options.sandboxes * 9 / 10;
  while (pool.leased_total() < leased_target) pool.Lent(pool.Decide(Purpose::kLend));
  s.ns.reserve(static_cast<std::size_t>(options.decisions));
  for (int n = 0; n < options.decisions; ++n) {
    auto t0 = Clock::now();
    const std::size_t lent = pool.Decide(Purpose::kLend);
    auto t1 = Clock::now();
    if (timed == Purpose::kLend) s.ns.push_back(Nanos(t1 - t0));
    pool.Lent(lent);
    pool.GiveBackRandom(fresh);
    if (fresh) {
      t0 = Clock::now();
      const std::size_t started = pool.Decide(Purpose::kStart);
      t1 = Clock::now();
      if (timed == Purpose::kStart) s.ns.push_back(Nanos(t1 - t0));
      pool.Started(started);
      pool.Ready(started);
    }
  }
  // The untimed batch: the same cycles without a clock read; CPU per decision is the cycle's
  // CPU over its decisions (one, or two for fresh), the workload's few ns of bookkeeping in it.
  const std::int64_t cpu0 = CpuNanos();
  const auto wall0 = Clock::now();
  for (int n = 0; n < options.decisions; ++n) {
    const std::size_t lent = pool.Decide(Purpose::kLend);
    pool.Lent(lent);
    pool.GiveBackRandom(fresh);
    if (fresh) {
      const std::size_t started = pool.Decide(Purpose::kStart);
      pool.Started(started);
      pool.Ready(started);
    }
  }
  s.batch_ns = Nanos(Clock::now() - wall0);
  s.cpu_ns = CpuNanos() - cpu0;
  s.batch_n = static_cast<std::int64_t>(options.decisions) * (fresh ? 2 : 1);
  return s;
}

// What reading the clock twice costs here: the floor under every timed row.
double ClockOverheadNs() {
  std::vector<std::int64_t> ns;
  for (int i = 0; i < 100000; ++i) {
    const auto t0 = Clock::now();
    const auto t1 = Clock::now();
    ns.push_back(Nanos(t1 - t0));
  }
  std::sort(ns.begin(), ns.end());
  return static_cast<double>(ns[ns.size() / 2]);
}

std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string a;
  std::string b;
  std::string c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

bool ParseArgs(int argc, char** argv, Options& options) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) return false;
    const long long value = std::atoll(argv[++i]);
    if (value < 1) return false;
    if (arg == "--engines") {
      options.engines = static_cast<int>(value);
    } else if (arg == "--sandboxes") {
      options.sandboxes = static_cast<int>(value);
    } else if (arg == "--decisions") {
      options.decisions = static_cast<int>(value);
    } else if (arg == "--seed") {
      options.seed = static_cast<std::uint64_t>(value);
    } else {
      return false;
    }
  }
  return options.sandboxes >= options.engines;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  if (!ParseArgs(argc, argv, options)) {
    std::fprintf(stderr,
                 "usage: placement_bench [--engines N] [--sandboxes M >= N] [--decisions D] "
                 "[--seed S]\n");
    return 2;
  }
  const std::string load_before = LoadAverage();
  int spread = 0;
  Row results[] = {
      {"fill: start, from empty to full", Fill(options, options.seed, spread)},
      {"recycle at 90 % leased: lend", Steady(options, options.seed, false, Purpose::kLend)},
      {"fresh at 90 % leased: lend", Steady(options, options.seed, true, Purpose::kLend)},
      {"fresh at 90 % leased: start", Steady(options, options.seed, true, Purpose::kStart)},
  };
  std::printf(
      "placement_bench: %d engines, %d sandboxes (share %.1f each), %d timed decisions "
      "per steady row, seed %llu\n",
      options.engines, options.sandboxes, static_cast<double>(options.sandboxes) / options.engines,
      options.decisions, static_cast<unsigned long long>(options.seed));
  std::printf(
      "load average before: %s, after: %s; two clock reads cost %.0f ns (in every "
      "timed figure)\n",
      load_before.c_str(), LoadAverage().c_str(), ClockOverheadNs());
  std::printf(
      "fill spread: after each fill the fullest and the emptiest engine differ by at most "
      "%d sandbox(es)\n\n",
      spread);
  std::printf(
      "| decision | p50 ns | p90 ns | p99 ns | p99.9 ns | max ns | CPU ns/decision | wall "
      "ns/decision |\n");
  std::printf("|---|---:|---:|---:|---:|---:|---:|---:|\n");
  for (auto& r : results) {
    auto& s = r.samples;
    const double max = static_cast<double>(*std::max_element(s.ns.begin(), s.ns.end()));
    const auto n = static_cast<double>(s.batch_n);
    std::printf("| %s | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f |\n", r.name,
                s.Percentile(50), s.Percentile(90), s.Percentile(99), s.Percentile(99.9), max,
                static_cast<double>(s.cpu_ns) / n, static_cast<double>(s.batch_ns) / n);
  }
  std::printf(
      "\nPercentiles: each decision timed alone (two clock reads included). CPU and wall "
      "ns/decision: the same workload run again without clock reads, over its decisions (the "
      "workload's few ns of bookkeeping included; the fresh rows share one figure, a cycle's lend "
      "and start together).\n");
  return 0;
}
