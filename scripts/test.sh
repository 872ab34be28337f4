#!/usr/bin/env bash
# Builds everything and runs every test: unit, integration against the real Docker engine,
# attack, end-to-end, lint, sanitizers and fuzzing, in the steps docs/ci.md describes. Prints
# CTest's summaries and one closing line; exits non-zero on any failure.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/host.sh"
prepare_host --image-in-background
ci_flags=(-DSANDBOX_WERROR=OFF)
# CI: warnings are errors, and line tables only (-g1, not -g): CI never debugs its binaries
# and compiles 13-27 % faster (docs/ci.md). Only in CI's fresh clone, so a developer's build/
# does not flip between this and scripts/run.sh's flags.
[[ "${CI:-}" == true ]] &&
  ci_flags=(-DSANDBOX_WERROR=ON "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG")
build="$SANDBOX_ROOT/build"
cmake -S "$SANDBOX_ROOT" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSANDBOX_BUILD_TESTS=ON \
  "${ci_flags[@]}" >/dev/null
cd "$build"
# The tests run in steps (docs/ci.md has what each runs and its measured time). Every step
# passes this script's arguments on to CTest (e.g. -R NAME).
ctest_args=(--output-on-failure --timeout 900 "$@")
status=0
summary="$(mktemp)"
background_log="$(mktemp)"
background=""
# An interrupted run stops the background step too (its own session and process group).
trap '[[ -n "$background" ]] && kill -- -"$background" 2>/dev/null; rm -f "$summary" "$background_log"' EXIT
# Each step and the build print their wall time, so CI's log says where the minutes went.
took() { printf '[test] %s: %d s (at %d s)\n' "$1" "$((SECONDS - $2))" "$SECONDS"; }
step() {
  local rc=0 start=$SECONDS
  ctest "${ctest_args[@]}" "$@" | tee -a "$summary" || rc=${PIPESTATUS[0]}
  took "ctest $*" "$start"
  ((rc == 0)) || status=1
}
# Background (label background: lint, the sanitizer build): CPU-only work that nothing times.
# It starts now and runs beside the compile and the engine tests in a scheduling group of its
# own (setsid: an autogroup, niced as a whole, and nice 19 within it), so it only takes the CPU
# they leave idle: links, waits on containers. The engine tests, some of them load-sensitive
# (fork bombs, OOM under a tight budget), get the machine as when they ran alone.
setsid bash -c 'echo 19 >/proc/self/autogroup 2>/dev/null || true
  exec nice -n 19 ctest "$@"' background "${ctest_args[@]}" -L '^background$' -j 2 \
  >"$background_log" 2>&1 &
background=$!
took "host preparation and configure" 0
build_status=0
build_start=$SECONDS
cmake --build "$build" -j "$(nproc)" || build_status=$?
took build "$build_start"
wait_for_image
took "build and sandbox image" "$build_start"
((build_status == 0)) || exit "$build_status"
# The compose tests' server image (a Release compile inside Docker, ~7 min of both cores when it
# was part of the compose test) builds now, beside the unit and engine tests, at CPU weight 2
# (the test containers weigh 1024), under the lock compose_test.sh takes before its own build:
# the compose tests run last and find it cached. Its log is printed only if it failed; the
# compose test then builds and reports for itself.
server_image="${SANDBOX_COMPOSE_TEST_IMAGE:-sandbox-mcp-server:test}"
server_image_log="$(mktemp)"
(
  exec 8>"${TMPDIR:-/tmp}/sandbox-mcp-server-image.lock"
  flock 8
  previous="$(docker image inspect -f '{{.Id}}' "$server_image" 2>/dev/null || true)"
  docker build --cpu-shares 2 --build-arg BASE=sandbox-mcp-base:bookworm --build-arg JOBS=2 \
    -f "$SANDBOX_ROOT/images/server/Dockerfile" -t "$server_image" "$SANDBOX_ROOT"
  current="$(docker image inspect -f '{{.Id}}' "$server_image")"
  if [[ -n "$previous" && "$previous" != "$current" ]]; then docker rmi "$previous" || true; fi
) >"$server_image_log" 2>&1 &
server_image_job=$!
# 1. The hermetic unit and harness tests, two at a time.
step -L '^unit$' -j 2
# 2. The tests against the real engine (label integration: integration, attack, e2e, compose,
#    metrics, soak), one at a time as always.
step -L '^integration$'
background_rc=0
wait_start=$SECONDS
wait "$background" || background_rc=$?
took "waiting for the background step" "$wait_start"
background=""
cat "$background_log"
cat "$background_log" >>"$summary"
((background_rc == 0)) || status=1
# 3. The rest at full priority, two at a time: the sanitized unit tests and the fuzz targets
#    (time-boxed: niced, they would fuzz less), and any test with none of the labels above.
#    They need sanitize_build (a CTest fixture): done in the background when it passed there.
built=()
grep -Eq 'sanitize_build \.+ +Passed' "$background_log" && built=(-FS sanitize_build)
step -LE '^(unit|integration|background)$' "${built[@]}" -j 2
if ! wait "$server_image_job"; then
  echo "[test] the background build of $server_image failed:" >&2
  tail -n 40 "$server_image_log" >&2
fi
rm -f "$server_image_log"
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
