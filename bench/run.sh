#!/usr/bin/env bash
# One command for the benchmark: builds sandbox-mcp (Release, in build-bench/), installs the MCP
# client (npm ci in bench/), makes sure the engine and the image are there, runs bench.mjs (which
# starts and stops its own servers) and prints the results table. The table also goes to
# bench/results/<UTC date>.md (raw numbers in .json next to it, progress log in .log).
#
#   bench/run.sh                 # the full run: n=200 latency samples per row, 10 s windows
#   bench/run.sh --quick         # a smoke test: n=10, 3 s windows
#   bench/run.sh --n 50 --duration 5 --out /tmp/b.md
#
# Environment: BENCH_BUILD_DIR (default build-bench), SANDBOX_IMAGE (default
# sandbox-mcp-python:latest).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
BUILD=${BENCH_BUILD_DIR:-$ROOT/build-bench}
IMAGE=${SANDBOX_IMAGE:-sandbox-mcp-python:latest}

say() { echo "bench/run.sh: $*" >&2; }

command -v node >/dev/null || { say "node (>= 20) is required"; exit 1; }
command -v docker >/dev/null || { say "the docker CLI is required"; exit 1; }
docker version >/dev/null 2>&1 || { say "no Docker engine answers (scripts/run.sh starts one)"; exit 1; }
if ! docker image inspect "$IMAGE" >/dev/null 2>&1; then
  say "image $IMAGE missing; building it (images/build.sh)"
  images/build.sh
fi

say "building sandbox-mcp (Release) in $BUILD"
mkdir -p "$BUILD"
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >"$BUILD/bench-build.log" 2>&1 &&
  cmake --build "$BUILD" -j"$(nproc)" --target sandbox-mcp >>"$BUILD/bench-build.log" 2>&1 ||
  { tail -50 "$BUILD/bench-build.log" >&2; say "build failed (log: $BUILD/bench-build.log)"; exit 1; }

if [ ! -d bench/node_modules/@modelcontextprotocol/sdk ] ||
   [ bench/package-lock.json -nt bench/node_modules/.package-lock.json ]; then
  say "installing the MCP client (npm ci)"
  (cd bench && npm ci --no-audit --no-fund >&2)
fi

OUT=()
case " $* " in *" --out "*) ;; *) OUT=(--out "bench/results/$(date -u +%F).md") ;; esac
say "load average: $(cut -d' ' -f1-3 /proc/loadavg) (results are noisy above ~2 on 2 cores)"
export BENCH_COMMAND="bench/run.sh${*:+ $*}"
exec node bench/bench.mjs --bin "$BUILD/src/server/sandbox-mcp" --image "$IMAGE" "${OUT[@]}" "$@"
