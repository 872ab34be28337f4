#!/usr/bin/env bash
# Builds everything and runs every test: unit, integration against the real Docker engine,
# attack and end-to-end. Prints CTest's summary; exits non-zero on any failure.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/host.sh"
prepare_host --image-in-background
werror=OFF
[[ "${CI:-}" == true ]] && werror=ON
build_status=0
build_server "$SANDBOX_ROOT/build" -DSANDBOX_BUILD_TESTS=ON -DSANDBOX_WERROR="$werror" ||
  build_status=$?
wait_for_image
((build_status == 0)) || exit "$build_status"
cd "$SANDBOX_ROOT/build"
status=0
ctest --output-on-failure --timeout 900 "$@" || status=$?
# Every container a test starts carries io.sandbox-mcp.managed=true and either the label
# io.sandbox-mcp.test=true or an instance id starting with test- or e2e-; none may outlive the
# run. Containers of other instances (a server running beside the tests) are left alone.
leftover="$(docker ps -a --filter label=io.sandbox-mcp.managed=true \
  --format '{{.ID}}|{{.Label "io.sandbox-mcp.instance"}}|{{.Label "io.sandbox-mcp.test"}}' |
  awk -F'|' '$3 == "true" || $2 ~ /^(test|e2e)-/ {print $1}' || true)"
if [[ -n "$leftover" ]]; then
  echo "[test] containers left behind by the tests:" >&2
  docker ps -a --filter label=io.sandbox-mcp.managed=true >&2
  docker rm -f $leftover >/dev/null || true
  status=1
fi
exit "$status"
