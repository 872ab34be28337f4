#!/usr/bin/env bash
# Soak test: scripts/soak.sh DURATION (e.g. 5m, 1h; bare numbers are seconds).
# Builds the server (BUILD_DIR, default build/), installs the npm clients (tests/e2e), then runs
# tests/soak/soak.mjs: DURATION of load split between a recycle pool and a fresh pool (half
# each; server starts, the calls in flight at the end and shutdowns come on top), 8 concurrent
# SDK clients. Results (summary .md, .json, .png plot, server logs) go to
# tests/soak/results/ (SOAK_OUT to change). Exits non-zero when any check failed.
set -euo pipefail
if [[ $# -ne 1 ]]; then
  echo "usage: $0 DURATION   (e.g. 5m, 1h, 300)" >&2
  exit 2
fi
source "$(dirname "${BASH_SOURCE[0]}")/host.sh"
prepare_host
install_e2e_clients
build_dir="${BUILD_DIR:-$SANDBOX_ROOT/build}"
cmake -S "$SANDBOX_ROOT" -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build_dir" -j "$(nproc)" --target sandbox-mcp
SANDBOX_MCP_BIN="$build_dir/src/server/sandbox-mcp" exec node "$SANDBOX_ROOT/tests/soak/soak.mjs" \
  --duration "$1" --out "${SOAK_OUT:-$SANDBOX_ROOT/tests/soak/results}"
