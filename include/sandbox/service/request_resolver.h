// Request resolution: what a run, a session or a session upload may ask of a pool, checked
// against the pool's configuration and turned into the limits its sandbox gets. One place for
// the rules, so one-shot runs and sessions cannot drift apart: the pool's name, the limit
// overrides against the pool's maxima, and the files (count, total size, paths — every path
// a request brings goes through CheckPath).
//
// Thread-safety: const methods from any thread; `current_limits` must be too.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "sandbox/config/config.h"
#include "sandbox/core/result.h"
#include "sandbox/exec/run_types.h"
#include "sandbox/runner/sandbox.h"

namespace sandbox::service {

class RequestResolver {
 public:
  // The default limits of a pool now (admin changes apply to new runs and sessions).
  using CurrentLimits = std::function<config::Limits(const config::PoolConfig& pool)>;

  // `config` must outlive the resolver. Without `current_limits`, each pool's configured
  // limits are its defaults.
  RequestResolver(const config::Config& config, runner::InputLimits input,
                  CurrentLimits current_limits = {});

  // The configured pool of `name` ("" = the default pool); kInvalidArgument naming it when
  // there is none.
  Result<const config::PoolConfig*> FindPool(const std::string& name) const;

  // The limits a run in `pool` gets: the pool's defaults narrowed or raised by `overrides`
  // within the pool's maxima (kInvalidArgument naming the field otherwise, never clamped).
  Result<runner::RunLimits> Resolve(const std::string& pool,
                                    const exec::LimitOverrides& overrides) const;
  // The network policy a run or session in `pool` gets when `request` narrows the pool's
  // (nullopt: the pool's own, unchanged). A request may turn the network off or keep some of
  // the pool's entries and deny more; an entry wider than the pool's is kInvalidArgument naming
  // it, as is asking for entries in a pool without a network.
  Result<std::optional<config::NetworkPolicy>> ResolveNetwork(
      const std::string& pool, const std::optional<exec::NetworkRequest>& request) const;
  // Resolve() plus CheckFiles() of a one-shot run.
  Result<runner::RunLimits> ResolveRun(const exec::RunRequest& request) const;

  // The files a request brings, against the limits the harness enforces too, so that a
  // request passing here is never refused inside the sandbox: count, paths (CheckPath), the
  // same file twice or a file under another, total size.
  Status CheckFiles(const std::vector<exec::InputFile>& files) const;

  // A file path a request brings (`field` names it in the error): the harness's own rules
  // (runner::InputPathError). `normalized`, when given, receives the path the harness uses.
  static Status CheckPath(std::string_view field, std::string_view path,
                          std::string* normalized = nullptr);

 private:
  const config::Config& config_;
  runner::InputLimits input_;
  CurrentLimits current_limits_;
};

}  // namespace sandbox::service
