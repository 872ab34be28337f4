#!/usr/bin/env bash
# The Snekbox drop-in deployment (deploy/compose.snekbox.yaml) end to end against the real
# engine: the server listens on 127.0.0.1:8060 of its own network namespace with Snekbox's
# limits (deploy/config.snekbox.json) and no token; a client container joined to that
# namespace (the file's `bot` service, here the server image with curl standing in for
# python-discord's bot) sends the bot's two request shapes to $URLS_SNEKBOX_EVAL_API and gets
# 200 with the right output; the host cannot reach the server at all. Runs after
# compose_integration_test, whose image (sandbox-mcp-server:test) it reuses.
set -euo pipefail

src="${SANDBOX_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)}"
t0=$(date +%s)
log() { printf '[snekbox-compose-test +%ds] %s\n' "$(($(date +%s) - t0))" "$*" >&2; }
fail() { log "FAIL: $*"; exit 1; }

if docker compose version >/dev/null 2>&1; then
  compose_cmd=(docker compose)
elif command -v docker-compose >/dev/null; then
  compose_cmd=(docker-compose)
else
  fail "neither Compose v2 (docker compose) nor v1 (docker-compose) is installed"
fi

suffix="$(od -An -tx1 -N4 /dev/urandom | tr -d ' \n')"
project="sandbox-mcp-snekbox-test-$suffix"
instance="test-snekbox-compose-$suffix"
image="${SANDBOX_COMPOSE_TEST_IMAGE:-sandbox-mcp-server:test}"
work="$(mktemp -d)"
chmod 755 "$work"
: >"$work/empty.env"

export SANDBOX_MCP_INSTANCE_ID="$instance" SANDBOX_MCP_SERVER_IMAGE="$image"
export SNEKBOX_CLIENT_IMAGE="$image"
DOCKER_GID="$(stat -c %g "${SANDBOX_DOCKER_SOCK:-/var/run/docker.sock}")"
export DOCKER_GID

compose() {
  "${compose_cmd[@]}" --env-file "$work/empty.env" -p "$project" \
    -f "$src/deploy/compose.snekbox.yaml" "$@"
}
instance_containers() {
  docker ps -aq --no-trunc --filter "label=io.sandbox-mcp.instance=$instance"
}
cleanup() {
  local status=$?
  set +e
  trap - EXIT INT TERM
  if ((status != 0)); then
    log "server log (last 60 lines):"
    compose logs --no-color --tail 60 snekbox >&2
  fi
  compose --profile bot down --remove-orphans >/dev/null 2>&1
  local left
  left="$(instance_containers)"
  [[ -z "$left" ]] || xargs docker rm -f <<<"$left" >/dev/null
  rm -rf "$work"
  log "done, exit $status"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

wait_for() {
  local what="$1" deadline=$(($(date +%s) + $2))
  shift 2
  until "$@"; do
    (($(date +%s) < deadline)) || fail "$what: not within the deadline"
    sleep 1
  done
}

docker image inspect sandbox-mcp-python:latest >/dev/null 2>&1 ||
  fail "the sandbox image sandbox-mcp-python:latest is missing: run images/build.sh"
if ! docker image inspect "$image" >/dev/null 2>&1; then
  log "building $image"
  compose build >"$work/build.log" 2>&1 || { tail -n 40 "$work/build.log" >&2; fail "compose build"; }
fi

compose up -d --no-build >"$work/up.log" 2>&1 || { cat "$work/up.log" >&2; fail "compose up"; }
server="$(compose ps -q snekbox)"
[[ -n "$server" ]] || fail "compose started no snekbox container"
[[ -z "$(compose ps -q bot 2>/dev/null)" ]] || fail "the bot profile started without being asked for"
log "started ${server:0:12}, instance $instance"

# The client: the file's bot service, its command replaced by curl on the URL it is given.
client() {
  compose run --rm --no-deps -T --entrypoint sh bot -c \
    'curl -sS --max-time 60 -o /tmp/body -w "%{http_code}\n" -H "Content-Type: application/json" -d "$1" "$URLS_SNEKBOX_EVAL_API" && cat /tmp/body' \
    sh "$1"
}
ready() { [[ "$(compose run --rm --no-deps -T --entrypoint curl bot -fsS --max-time 5 http://127.0.0.1:8060/readyz 2>/dev/null)" == *'"ready":true'* ]]; }
wait_for "/readyz answering through the shared namespace" 300 ready
log "/readyz answers on 127.0.0.1:8060 inside the namespace"

# The bot's !eval: the code as main.py, a versioned interpreter path.
main_py="$(printf 'import sys\nprint("hi", sys.argv)\n' | base64 -w0)"
out="$(client '{"args": ["main.py"], "files": [{"path": "main.py", "content": "'"$main_py"'"}], "executable_path": "/snekbin/python/3.14/bin/python"}')"
[[ "${out%%$'\n'*}" == 200 ]] || fail "!eval shape: $out"
tail -n +2 <<<"$out" | python3 -c '
import json, sys
r = json.load(sys.stdin)
assert r == {"stdout": "hi [\x27main.py\x27]\n", "returncode": 0, "files": []}, r' ||
  fail "!eval shape answered: $out"
log "!eval shape: 200, stdout and returncode as the bot expects"

# The bot's !timeit.
out="$(client '{"args": ["-m", "timeit", "-s", "x = list(range(100))", "sum(x)"], "files": [], "executable_path": "/snekbin/python/3.13/bin/python"}')"
[[ "${out%%$'\n'*}" == 200 && "$out" == *"best of"* ]] || fail "!timeit shape: $out"
log "!timeit shape: 200"

# Snekbox's limits from deploy/config.snekbox.json: 6 s, and 70 MiB of memory.
out="$(client '{"input": "import time; time.sleep(20)"}')"
[[ "$out" == *'"returncode":137'* ]] || fail "a 20 s sleep under the 6 s limit: $out"
out="$(client '{"input": "x = bytearray(100 << 20)\nx[::4096] = b\"x\" * len(x[::4096])"}')"
[[ "$out" == *'"returncode":137'* ]] || fail "100 MiB under the 70 MiB limit: $out"
log "6 s and 70 MiB limits: 137"

# Nothing outside the namespace reaches it: no port is published and it is bound to loopback.
# (The image EXPOSEs 8080, which publishes nothing: `docker port` lists only published ports.)
published="$(docker port "$server")"
[[ -z "$published" ]] || fail "the server publishes ports: $published"
ip="$(docker inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' "$server")"
if [[ -n "$ip" ]] && curl -s --max-time 3 "http://$ip:8060/readyz" >/dev/null; then
  fail "the server answers on its network address $ip"
fi
log "not reachable from outside its namespace (address ${ip:-none})"

compose stop >/dev/null 2>&1 || fail "compose stop"
[[ -z "$(instance_containers)" ]] || fail "sandboxes of instance $instance left after stopping"
log "stopped: no sandbox left"
