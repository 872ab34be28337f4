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
# The tiers run in three steps (docs/ci.md has what each runs and its measured time):
#  1. the hermetic unit and harness tests (label unit), two at a time;
#  2. the tests against the real engine (label integration: integration, attack, e2e, compose,
#     soak), one at a time as always, while the CPU-only work that nothing times (label
#     background: lint, the sanitizer build) runs beside them in a session of its own at the
#     lowest priority, so that it only takes the CPU the engine tests leave idle (they mostly
#     wait on containers) and the load-sensitive cases (fork bombs, OOM under a tight budget)
#     see the machine as before;
#  3. the rest at full priority, two at a time: the sanitized unit tests and the fuzz targets
#     (time-boxed: niced, they would fuzz less), and any test with none of those labels.
# Each step passes the arguments of this script on to CTest (e.g. -R NAME).
ctest_args=(--output-on-failure --timeout 900 "$@")
status=0
summary="$(mktemp)"
background_log="$(mktemp)"
trap 'rm -f "$summary" "$background_log"' EXIT
step() {
  local rc=0
  ctest "${ctest_args[@]}" "$@" | tee -a "$summary" || rc=${PIPESTATUS[0]}
  ((rc == 0)) || status=1
}
step -L '^unit$' -j 2
# setsid: a scheduling group (autogroup) of its own, niced as a whole, so the engine tests'
# containers and servers win the CPU when they want it.
setsid bash -c 'echo 19 >/proc/self/autogroup 2>/dev/null || true
  exec nice -n 19 ctest "$@"' background "${ctest_args[@]}" -L '^background$' \
  >"$background_log" 2>&1 &
background=$!
step -L '^integration$'
background_rc=0
wait "$background" || background_rc=$?
cat "$background_log"
cat "$background_log" >>"$summary"
((background_rc == 0)) || status=1
# The fuzz targets and sanitized unit tests need sanitize_build (a CTest fixture): done above
# when it passed there, so not again.
built=()
grep -Eq 'sanitize_build \.+ +Passed' "$background_log" && built=(-FS sanitize_build)
step -LE '^(unit|integration|background)$' "${built[@]}" -j 2
# One closing line for the whole run, from the steps' CTest summaries.
awk '/tests passed, [0-9]+ tests? failed out of/ {
       failed += $4; total += $NF } END { printf "tests: %d passed, %d failed\n", total - failed, failed }' \
  "$summary"
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
