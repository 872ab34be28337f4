#!/usr/bin/env bash
# The operator's endpoints against real things:
#  - /readyz answers 200 with every pool ready while the engine answers;
#  - /metrics is valid exposition text that `promtool check metrics` accepts (naming rules:
#    units in names, _total counters);
#  - a real Prometheus scrapes the server every second; after runs through POST /v1/execute
#    (ok, error and timeout verdicts) PromQL sees them by verdict, and sees engine calls,
#    container starts, acquire waits and HTTP requests;
#  - label values never carry code, ids or tokens;
#  - after SIGTERM begins, /readyz stops answering 200 before the server is gone.
set -euo pipefail

bin="${SANDBOX_MCP_BIN:?SANDBOX_MCP_BIN names the sandbox-mcp binary}"
t0=$(date +%s)
log() { printf '[metrics-test +%ds] %s\n' "$(($(date +%s) - t0))" "$*" >&2; }
fail() {
  log "FAIL: $*"
  [[ -f "${work:-}/server.log" ]] && tail -n 40 "$work/server.log" >&2
  [[ -f "${work:-}/prometheus.log" ]] && tail -n 20 "$work/prometheus.log" >&2
  exit 1
}
for tool in prometheus promtool curl python3; do
  command -v "$tool" >/dev/null || fail "$tool is not installed (Debian: prometheus, curl)"
done

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
suffix="$(od -An -tx1 -N4 /dev/urandom | tr -d ' \n')"
instance="test-metrics-$suffix"
port="$(free_port)"
prom_port="$(free_port)"
work="$(mktemp -d)"
server_pid=""
prom_pid=""
cleanup() {
  [[ -n "$prom_pid" ]] && kill "$prom_pid" 2>/dev/null && wait "$prom_pid" 2>/dev/null
  if [[ -n "$server_pid" ]] && kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid"
    wait "$server_pid" 2>/dev/null || true
  fi
  ids="$(docker ps -aq --filter "label=io.sandbox-mcp.instance=$instance")"
  [[ -n "$ids" ]] && docker rm -f $ids >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT

cat >"$work/config.json" <<JSON
{"instance_id": "$instance",
 "pools": [{"name": "default", "min_idle": 1, "max_total": 2, "acquire_timeout_ms": 60000}],
 "sessions": {"warm": 0}}
JSON
"$bin" --config "$work/config.json" --listen "127.0.0.1:$port" >"$work/server.log" 2>&1 &
server_pid=$!
base="http://127.0.0.1:$port"

wait_for() {  # wait_for WHAT SECONDS COMMAND...
  local what="$1" limit="$2"
  shift 2
  local end=$(($(date +%s) + limit))
  until "$@"; do
    (($(date +%s) < end)) || fail "timed out after ${limit}s waiting for $what"
    kill -0 "$server_pid" 2>/dev/null || fail "the server exited"
    sleep 0.5
  done
}
ready() { [[ "$(curl -s -o /dev/null -w '%{http_code}' "$base/readyz")" == 200 ]]; }
wait_for "/readyz to answer 200" 180 ready
body="$(curl -s "$base/readyz")"
python3 - "$body" <<'PY' || fail "/readyz body: $body"
import json, sys
b = json.loads(sys.argv[1])
assert b["ready"] is True and b["engine"] == "reachable", b
assert {p["name"] for p in b["pools"]} == {"default", "default/sessions"}, b
assert all(p["ready"] for p in b["pools"]), b
PY
log "/readyz: 200, engine reachable, both pools ready"

# A real Prometheus scraping every second.
cat >"$work/prometheus.yml" <<YAML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: sandbox-mcp
    metrics_path: /metrics
    static_configs:
      - targets: ["127.0.0.1:$port"]
YAML
promtool check config "$work/prometheus.yml" >/dev/null || fail "promtool rejects the scrape configuration"
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/tsdb" \
  --web.listen-address="127.0.0.1:$prom_port" >"$work/prometheus.log" 2>&1 &
prom_pid=$!

run() {  # run CODE: POST /v1/execute, prints the verdict
  curl -s -X POST "$base/v1/execute" -H 'Content-Type: application/json' \
    --data "$(python3 -c 'import json,sys; print(json.dumps({"code": sys.argv[1], "timeout_s": 3}))' "$1")" |
    python3 -c 'import json,sys; print(json.load(sys.stdin).get("verdict"))'
}
secret="SECRET_$suffix"
for i in 1 2 3; do
  [[ "$(run "print('$secret', $i)")" == ok ]] || fail "run $i was not ok"
done
[[ "$(run "raise ValueError('$secret')")" == error ]] || fail "the failing run was not error"
[[ "$(run "import time; time.sleep(30)")" == timeout ]] || fail "the sleeping run was not timeout"
log "5 runs: 3 ok, 1 error, 1 timeout"

curl -s "$base/metrics" >"$work/metrics.txt"
promtool check metrics <"$work/metrics.txt" >"$work/promtool.txt" 2>&1 ||
  { cat "$work/promtool.txt" >&2; fail "promtool check metrics rejects /metrics"; }
! grep -q "$secret" "$work/metrics.txt" || fail "a label value carries the code's text"
! grep -qE '[0-9a-f]{64}' "$work/metrics.txt" || fail "a label value carries a container id"
for name in sandbox_runs_total sandbox_run_duration_seconds_bucket sandbox_run_code_duration_seconds_bucket \
  sandbox_pool_sandboxes sandbox_pool_acquire_wait_seconds_bucket sandbox_pool_container_start_seconds_bucket \
  sandbox_pool_container_starts_total sandbox_engine_requests_total sandbox_engine_request_duration_seconds_bucket \
  sandbox_http_requests_total sandbox_sessions sandbox_mcp_sessions sandbox_http_streams \
  sandbox_run_output_bytes_total process_resident_memory_bytes process_open_fds process_threads \
  sandbox_build_info; do
  grep -q "^$name[{ ]" "$work/metrics.txt" || fail "/metrics has no $name"
done
log "/metrics: promtool accepts it, every expected family present, no code or ids in labels"

query() {  # query PROMQL: prints the first result's value, or nothing
  curl -s --get "http://127.0.0.1:$prom_port/api/v1/query" --data-urlencode "query=$1" |
    python3 -c 'import json,sys; r = json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else "")' 2>/dev/null
}
equals() { [[ "$(query "$1")" == "$2" ]]; }
wait_for "Prometheus to see 3 ok runs" 120 equals 'sum(sandbox_runs_total{job="sandbox-mcp",verdict="ok"})' 3
equals 'sum(sandbox_runs_total{verdict="error"})' 1 || fail "PromQL: error runs are $(query 'sum(sandbox_runs_total{verdict="error"})')"
equals 'sum(sandbox_runs_total{verdict="timeout"})' 1 || fail "PromQL: timeout runs are $(query 'sum(sandbox_runs_total{verdict="timeout"})')"
equals 'sum by (pool, mode) (sandbox_runs_total{pool="default",mode="recycle"})' 5 ||
  fail "PromQL: runs by pool and mode"
[[ "$(query 'sum(sandbox_http_requests_total{route="/v1/execute",method="POST",status="200"})')" == 5 ]] ||
  fail "PromQL: /v1/execute requests"
starts="$(query 'sum(sandbox_pool_container_starts_total{pool="default",result="ok"})')"
[[ -n "$starts" && "$starts" -ge 1 ]] || fail "PromQL: container starts are '$starts'"
calls="$(query 'sum(sandbox_engine_requests_total{operation="POST /containers/{id}/start"})')"
[[ -n "$calls" && "$calls" -ge 1 ]] || fail "PromQL: engine start calls are '$calls'"
up="$(query 'up{job="sandbox-mcp"}')"
[[ "$up" == 1 ]] || fail "Prometheus reports the target as up=$up"
p95="$(query 'histogram_quantile(0.95, sum by (le) (sandbox_run_duration_seconds_bucket))')"
[[ -n "$p95" && "$p95" != NaN ]] || fail "PromQL: no run-duration p95"
log "Prometheus: runs by verdict 3/1/1, requests, starts ($starts), engine start calls ($calls), run p95 ${p95}s"

# One large result (16 MiB of stdout and a 15 MiB file: about 38 MB of JSON) must not leave the
# server bigger for good: freed buffers go back to the kernel (MemoryTrimmer, every 5 s).
rss() { curl -s "$base/metrics" | sed -n 's/^process_resident_memory_bytes \([0-9.e+]*\)$/\1/p' | python3 -c 'import sys; print(int(float(sys.stdin.read())))'; }
before="$(rss)"
big='import sys
sys.stdout.write("x" * (16 * 1024 * 1024 - 64))
open("big.bin", "wb").write(b"\1" * (15 * 1024 * 1024))'
size="$(curl -s -X POST "$base/v1/execute" -H 'Content-Type: application/json' \
  --data "$(python3 -c 'import json,sys; print(json.dumps({"code": sys.argv[1], "output_bytes": 16 << 20}))' "$big")" | wc -c)"
((size > 35000000)) || fail "the large result is only $size bytes"
peak="$(rss)"
settled() {
  now="$(rss)"
  ((now - before < 48 * 1024 * 1024))
}
wait_for "RSS to return within 48 MiB of its level before the large result" 60 settled
log "one ${size}-byte result: RSS $((before >> 20)) MiB before, $((peak >> 20)) MiB after it, $((now >> 20)) MiB settled"

# Shutdown: /readyz stops answering 200 at once, while the server still finishes its work.
kill -TERM "$server_pid"
code="$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$base/readyz" || true)"
[[ "$code" != 200 ]] || fail "/readyz still answers 200 after SIGTERM"
wait "$server_pid" || fail "the server exited non-zero after SIGTERM"
server_pid=""
log "after SIGTERM /readyz answers $code (not 200); the server exited cleanly"
log "done, $(($(date +%s) - t0)) s"
