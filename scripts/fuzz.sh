#!/usr/bin/env bash
# Builds the sanitizer + libFuzzer directory (clang, -DSANDBOX_FUZZ=ON) and runs the fuzz targets
# of tests/fuzz, or the unit tests under ASan + UBSan.
#
#   scripts/fuzz.sh [--time SECONDS] [--build-dir DIR] [--out DIR] [--rss-mb MB] [--merge]
#                   [--no-build] [--build-only] [--fuzz-only] [--unit] [TARGET...]
#
# Every target (or the named ones, e.g. `json mcp_dispatcher`) runs SECONDS (default 600) from
# its checked-in seed corpus tests/fuzz/corpus/<target>/ with its dictionary; new inputs go to a
# scratch corpus OUT/corpus/<target>/ (the checked-in one only with --merge, which minimizes the
# scratch corpus into it afterwards). Findings (crash-*, leak-*, timeout-*, oom-*) are saved in
# OUT/artifacts/<target>/ and logs in OUT/logs/. Prints per target the executions reached and
# whether anything was found; exits non-zero on any finding.
# --unit runs the hermetic unit tests (CTest label unit) of that build with halt_on_error.
# --fuzz-only builds the fuzz targets and their libraries, not the unit tests (half the work:
# CI's sanitize_build; --unit then needs a full build first).
# Defaults: DIR build/sanitize, OUT DIR/fuzz-out.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
seconds=600
build_dir="$root/build/sanitize"
out=""
rss_mb=2048
merge=0
build=1
run=1
unit=0
build_target=()
targets=()
while (($#)); do
  case "$1" in
    --time) seconds="$2"; shift 2 ;;
    --build-dir) build_dir="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --rss-mb) rss_mb="$2"; shift 2 ;;
    --merge) merge=1; shift ;;
    --no-build) build=0; shift ;;
    --build-only) run=0; shift ;;
    --unit) unit=1; shift ;;
    --fuzz-only) build_target=(--target fuzz_targets); shift ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
out="${out:-$build_dir/fuzz-out}"
log() { printf '[fuzz] %s\n' "$*" >&2; }

if ((build)); then
  for tool in clang clang++; do
    command -v "$tool" >/dev/null || { log "$tool not found (Debian: clang, libclang-rt-14-dev)"; exit 1; }
  done
  cmake -S "$root" -B "$build_dir" -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DSANDBOX_FUZZ=ON -DSANDBOX_BUILD_TESTS=ON -DSANDBOX_WERROR="${SANDBOX_WERROR:-OFF}" >/dev/null
  cmake --build "$build_dir" -j "$(nproc)" "${build_target[@]}"
fi
((run)) || exit 0

# Leaks and undefined behaviour fail at once, with a stack.
export ASAN_OPTIONS="${ASAN_OPTIONS:-halt_on_error=1:abort_on_error=1:detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:abort_on_error=1:print_stacktrace=1}"

if ((unit)); then
  # The harness's Python tests carry the label too; they gain nothing from the sanitizers.
  exec ctest --test-dir "$build_dir" -L '^unit$' -E '^harness_unit_test_' --output-on-failure
fi

if ((${#targets[@]} == 0)); then
  for source in "$root"/tests/fuzz/fuzz_*.cc; do
    name="$(basename "$source" .cc)"
    targets+=("${name#fuzz_}")
  done
fi

mkdir -p "$out/logs"
status=0
summary=()
for target in "${targets[@]}"; do
  binary="$build_dir/tests/fuzz/fuzz_$target"
  [[ -x "$binary" ]] || { log "no such fuzz target: $binary"; status=1; continue; }
  corpus="$out/corpus/$target"
  artifacts="$out/artifacts/$target"
  seeds="$root/tests/fuzz/corpus/$target"
  mkdir -p "$corpus" "$artifacts"
  args=(-max_total_time="$seconds" -rss_limit_mb="$rss_mb" -timeout=30 -print_final_stats=1
    -artifact_prefix="$artifacts/")
  [[ -f "$root/tests/fuzz/$target.dict" ]] && args+=(-dict="$root/tests/fuzz/$target.dict")
  log "$target: ${seconds}s (log $out/logs/$target.log)"
  rc=0
  # Findings of earlier runs stay in $artifacts; only this run's count.
  stamp="$out/logs/$target.start"
  touch "$stamp"
  "$binary" "${args[@]}" "$corpus" "$seeds" >"$out/logs/$target.log" 2>&1 || rc=$?
  execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/logs/$target.log" | tail -n 1)"
  # slow-unit-* (an input above 10 s) are kept but are no finding; a hang is a timeout-*.
  found="$(find "$artifacts" -type f ! -name 'slow-unit-*' -newer "$stamp" | wc -l)"
  if ((rc != 0 || found > 0)); then
    status=1
    result="FOUND (exit $rc, $found artifact(s) in $artifacts)"
    grep -E 'ERROR|FUZZ_CHECK|runtime error|exception escaped|Test unit written' \
      "$out/logs/$target.log" | head -n 20 >&2 || true
  else
    result="nothing found"
  fi
  summary+=("$(printf '%-16s %12s execs  %s' "$target" "${execs:-?}" "$result")")
  if ((merge && rc == 0)); then
    "$binary" -merge=1 -rss_limit_mb="$rss_mb" "$seeds" "$corpus" >>"$out/logs/$target.log" 2>&1
  fi
done
printf '%s\n' "${summary[@]}"
exit "$status"
