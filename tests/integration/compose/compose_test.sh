#!/usr/bin/env bash
# The compose deployment (compose.yaml) end to end against the real engine:
#  - compose refuses to start without SANDBOX_MCP_TOKEN;
#  - the server image builds from this tree (images/server/Dockerfile), and the egress proxy's
#    image with it (its egress stage), which compose does not start;
#  - the service starts under a project name, instance id, port and token of its own, with a
#    configuration file mounted, answers /healthz and turns healthy;
#  - print(1) through POST /v1/execute with the token; 401 without it or with a wrong one;
#  - the server container runs hardened as compose.yaml says; the sandboxes it starts carry the
#    managed and instance labels and have no Docker socket mounted;
#  - after a SIGKILL the server is restarted (restart policy), its predecessor's sandboxes are
#    gone and code runs again;
#  - stopping it (SIGTERM) removes every container of the instance.
# Every path out goes through cleanup: compose down and removal of the instance's containers.
set -euo pipefail

src="${SANDBOX_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)}"
t0=$(date +%s)
log() { printf '[compose-test +%ds] %s\n' "$(($(date +%s) - t0))" "$*" >&2; }
fail() { log "FAIL: $*"; exit 1; }

if docker compose version >/dev/null 2>&1; then
  compose_cmd=(docker compose)
elif command -v docker-compose >/dev/null; then
  compose_cmd=(docker-compose)
else
  fail "neither Compose v2 (docker compose) nor v1 (docker-compose) is installed"
fi

suffix="$(od -An -tx1 -N4 /dev/urandom | tr -d ' \n')"
project="sandbox-mcp-test-$suffix"
# "test-" instance ids are the tests' own: scripts/test.sh fails a run that leaves one behind.
instance="test-compose-$suffix"
token="$(od -An -tx1 -N24 /dev/urandom | tr -d ' \n')"
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
# A tag of the test's own, kept between runs as the build cache; a deployment's image is not
# touched.
image="${SANDBOX_COMPOSE_TEST_IMAGE:-sandbox-mcp-server:test}"
egress_image="${SANDBOX_COMPOSE_TEST_EGRESS_IMAGE:-sandbox-mcp-egress:test}"
base_url="http://127.0.0.1:$port"
work="$(mktemp -d)"
chmod 755 "$work"

# An empty env file: a developer's .env next to compose.yaml must not leak into the test.
: >"$work/empty.env"
# Small pools keep the test light; mounting a file also exercises SANDBOX_MCP_CONFIG.
cat >"$work/config.json" <<'JSON'
// compose_test.sh: one warm sandbox, no warm session container.
{"pools": [{"name": "default", "min_idle": 1, "max_total": 2}], "sessions": {"warm": 0}}
JSON
chmod 644 "$work/config.json"

export SANDBOX_MCP_TOKEN="$token" SANDBOX_MCP_INSTANCE_ID="$instance"
export SANDBOX_MCP_PUBLISH="127.0.0.1:$port" SANDBOX_MCP_SERVER_IMAGE="$image"
export SANDBOX_EGRESS_IMAGE="$egress_image"
export SANDBOX_MCP_CONFIG="$work/config.json"
DOCKER_GID="$(stat -c %g "${SANDBOX_DOCKER_SOCK:-/var/run/docker.sock}")"
export DOCKER_GID

compose() {
  "${compose_cmd[@]}" --env-file "$work/empty.env" -p "$project" -f "$src/compose.yaml" "$@"
}

instance_containers() {
  docker ps -aq --no-trunc --filter "label=io.sandbox-mcp.instance=$instance"
}

cleanup() {
  local status=$?
  set +e
  trap - EXIT INT TERM
  if ((status != 0)); then
    log "server log (last 80 lines):"
    compose logs --no-color --tail 80 >&2
  fi
  compose down --remove-orphans >/dev/null 2>&1
  local left
  left="$(instance_containers)"
  if [[ -n "$left" ]]; then
    log "removing containers left by instance $instance"
    xargs docker rm -f <<<"$left" >/dev/null
  fi
  rm -rf "$work"
  log "done, exit $status, $(($(date +%s) - t0)) s in all"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Polls COMMAND until it succeeds; the deadline only guards against a hang.
wait_for() {
  local what="$1" deadline=$(($(date +%s) + $2))
  shift 2
  until "$@"; do
    (($(date +%s) < deadline)) || fail "$what: not within the deadline"
    sleep 1
  done
}

# POST /v1/execute; prints the HTTP status on the first line and the body after it.
execute() {
  local code="$1"
  shift
  curl -sS --max-time 120 -o "$work/body" -w '%{http_code}\n' "$@" \
    -H 'Content-Type: application/json' \
    -d "$(python3 -c 'import json, sys; print(json.dumps({"code": sys.argv[1]}))' "$code")" \
    "$base_url/v1/execute"
  cat "$work/body"
}

expect_print_1() {
  local out status
  out="$(execute 'print(1)' -H "Authorization: Bearer $token")"
  status="${out%%$'\n'*}"
  [[ "$status" == 200 ]] || fail "POST /v1/execute with the token: HTTP $status: $(tail -n +2 <<<"$out")"
  tail -n +2 <<<"$out" | python3 -c '
import json, sys
r = json.load(sys.stdin)
problems = [f"{k}={r.get(k)!r}, expected {v!r}"
            for k, v in (("verdict", "ok"), ("exit_code", 0), ("stdout", "1\n"))
            if r.get(k) != v]
if problems:
    sys.exit("; ".join(problems))' || fail "print(1) gave an unexpected result: $(tail -n +2 <<<"$out")"
}

healthz_ok() { [[ "$(curl -fsS --max-time 5 "$base_url/healthz" 2>/dev/null)" == *'"status":"ok"'* ]]; }
server_health() { docker inspect -f '{{.State.Health.Status}}' "$server" 2>/dev/null; }
is_healthy() { [[ "$(server_health)" == healthy ]]; }

# 1. Without a token compose refuses to start anything.
if env -u SANDBOX_MCP_TOKEN "${compose_cmd[@]}" --env-file "$work/empty.env" -p "$project" \
  -f "$src/compose.yaml" config >/dev/null 2>"$work/config.err"; then
  fail "compose accepted a configuration without SANDBOX_MCP_TOKEN"
fi
grep -q SANDBOX_MCP_TOKEN "$work/config.err" || fail "compose's refusal does not name SANDBOX_MCP_TOKEN"
log "compose ($("${compose_cmd[@]}" version --short 2>/dev/null || echo '?')) refuses to start without a token"

# 2. Build the server image. An image of the previous run that this build replaces is removed.
docker image inspect sandbox-mcp-python:latest >/dev/null 2>&1 ||
  fail "the sandbox image sandbox-mcp-python:latest is missing: run images/build.sh"
previous="$(docker image inspect -f '{{.Id}}' "$image" 2>/dev/null || true)"
previous_egress="$(docker image inspect -f '{{.Id}}' "$egress_image" 2>/dev/null || true)"
log "building $image (project $project)"
build_start=$(date +%s)
# scripts/test.sh builds the same image beforehand, in the background at a low CPU weight, under
# this lock (docs/ci.md): waiting for it makes this build a cache hit, not a second compile.
exec 8>"${TMPDIR:-/tmp}/sandbox-mcp-server-image.lock"
flock 8
compose build >"$work/build.log" 2>&1 || { tail -n 40 "$work/build.log" >&2; fail "compose build"; }
flock -u 8
exec 8>&-
log "built $image in $(($(date +%s) - build_start)) s"
current="$(docker image inspect -f '{{.Id}}' "$image")"
if [[ -n "$previous" && "$previous" != "$current" ]]; then
  docker rmi "$previous" >/dev/null 2>&1 || true
fi
current_egress="$(docker image inspect -f '{{.Id}}' "$egress_image")" ||
  fail "compose build made no egress image $egress_image"
if [[ -n "$previous_egress" && "$previous_egress" != "$current_egress" ]]; then
  docker rmi "$previous_egress" >/dev/null 2>&1 || true
fi
read -r egress_user egress_entry <<<"$(docker image inspect -f \
  '{{.Config.User}} {{json .Config.Entrypoint}}' "$egress_image")"
[[ "$egress_user $egress_entry" == '65534:65534 ["/usr/local/bin/sandbox-egress"]' ]] ||
  fail "the egress image runs '$egress_entry' as '$egress_user'"
log "built $egress_image (sandbox-egress as 65534:65534)"

# 3. Start it and wait until it serves.
compose up -d --no-build >"$work/up.log" 2>&1 || { cat "$work/up.log" >&2; fail "compose up"; }
server="$(compose ps -q sandbox-mcp)"
[[ -n "$server" ]] || fail "compose started no sandbox-mcp container"
[[ -z "$(compose ps -q sandbox-egress)" ]] || fail "compose started a sandbox-egress container"
log "started server container ${server:0:12} on $base_url, instance $instance"
wait_for "/healthz answering ok" 300 healthz_ok
log "/healthz answers ok"

# 4. Code runs with the token; without it, or with a wrong one, the answer is 401.
expect_print_1
log "print(1) through POST /v1/execute: verdict ok, stdout \"1\\n\""
for auth in "" "Authorization: Bearer wrong-${token}"; do
  args=()
  [[ -n "$auth" ]] && args=(-H "$auth")
  out="$(execute 'print(1)' "${args[@]}")"
  status="${out%%$'\n'*}"
  [[ "$status" == 401 ]] || fail "POST /v1/execute ${auth:+with a wrong token}${auth:-without a token}: HTTP $status, expected 401"
done
log "no token and a wrong token: 401"

# 5. The server container is hardened as compose.yaml says and holds the socket.
read -r user ro caps nnp <<<"$(docker inspect -f \
  '{{.Config.User}} {{.HostConfig.ReadonlyRootfs}} {{json .HostConfig.CapDrop}} {{json .HostConfig.SecurityOpt}}' \
  "$server")"
[[ "$user" == 10002:10002 ]] || fail "server user is '$user', expected 10002:10002"
[[ "$ro" == true ]] || fail "server root filesystem is not read-only"
[[ "$caps" == '["ALL"]' ]] || fail "server CapDrop is $caps"
[[ "$nnp" == *no-new-privileges* ]] || fail "server SecurityOpt is $nnp"
[[ "$(docker inspect -f '{{range .Mounts}}{{.Destination}} {{end}}' "$server")" == *docker.sock* ]] ||
  fail "the server container has no Docker socket"

# 6. The sandboxes: labelled with the instance, no Docker socket.
check_sandboxes() {
  local ids id labels mounts owner
  ids="$(docker ps -q --no-trunc --filter "label=io.sandbox-mcp.instance=$instance")"
  [[ -n "$ids" ]] || fail "no running sandbox container carries io.sandbox-mcp.instance=$instance"
  for id in $ids; do
    labels="$(docker inspect -f '{{index .Config.Labels "io.sandbox-mcp.managed"}} {{index .Config.Labels "io.sandbox-mcp.instance"}}' "$id")"
    [[ "$labels" == "true $instance" ]] || fail "sandbox ${id:0:12} has labels '$labels'"
    # The owner label names the server's own container, so a restarted server can tell its
    # predecessor's sandboxes from a live neighbour's.
    owner="$(docker inspect -f '{{index .Config.Labels "io.sandbox-mcp.owner"}}' "$id")"
    [[ "$owner" == "v1 "*" container=$server "* ]] ||
      fail "sandbox ${id:0:12} has owner label '$owner', expected one naming container $server"
    mounts="$(docker inspect -f '{{json .Mounts}} {{json .HostConfig.Binds}}' "$id")"
    [[ "$mounts" != *docker.sock* ]] || fail "sandbox ${id:0:12} has the Docker socket: $mounts"
  done
  echo "$ids"
}
sandboxes="$(check_sandboxes)"
log "$(wc -w <<<"$sandboxes") sandbox container(s): labelled, no Docker socket"

wait_for "the compose healthcheck reporting healthy" 300 is_healthy
log "compose healthcheck: healthy"

# 7. Crash recovery: kill the server outright; the restart policy brings it back, and the new
# server (same instance id) has removed whatever its predecessor left before serving. Its own
# sandboxes may also go by themselves (AutoRemove once their stdin closes), so a stand-in
# leftover that never would is planted too: a created, never started container of the instance
# with the killed server's owner label (as one it created just before it died would carry).
owner_label="$(docker inspect -f '{{index .Config.Labels "io.sandbox-mcp.owner"}}' \
  "$(head -n1 <<<"$sandboxes")")"
leftover="$(docker create --name "$project-leftover" --network none \
  --label io.sandbox-mcp.managed=true --label "io.sandbox-mcp.instance=$instance" \
  --label "io.sandbox-mcp.owner=$owner_label" \
  --label io.sandbox-mcp.test=true sandbox-mcp-python:latest true)"
pid="$(docker inspect -f '{{.State.Pid}}' "$server")"
restarts="$(docker inspect -f '{{.RestartCount}}' "$server")"
if [[ $(id -u) -eq 0 ]]; then kill -KILL "$pid"; else sudo -n kill -KILL "$pid"; fi
log "killed the server (pid $pid) with SIGKILL"
restarted() { (($(docker inspect -f '{{.RestartCount}}' "$server") > restarts)); }
wait_for "the server restarting" 300 restarted
wait_for "/healthz answering ok after the restart" 300 healthz_ok
for id in $sandboxes $leftover; do
  ! docker inspect "$id" >/dev/null 2>&1 || fail "container ${id:0:12} of the killed server is still there"
done
compose logs --no-color >"$work/server.log" 2>&1
grep -q "left by an earlier run of instance \"$instance\"" "$work/server.log" ||
  fail "the restarted server's log does not report removing the leftovers"
expect_print_1
sandboxes="$(check_sandboxes)"
log "restarted after the crash: the predecessor's containers are gone, print(1) runs again"

# 8. Stopping sends SIGTERM: the server removes all its containers before it exits.
compose stop >"$work/stop.log" 2>&1 || { cat "$work/stop.log" >&2; fail "compose stop"; }
exit_code="$(docker inspect -f '{{.State.ExitCode}}' "$server")"
[[ "$exit_code" == 0 ]] || fail "the server exited with $exit_code on SIGTERM"
left="$(instance_containers)"
[[ -z "$left" ]] || fail "containers of instance $instance left after stopping: $(tr '\n' ' ' <<<"$left")"
compose logs --no-color >"$work/server.log" 2>&1
grep -q 'all sandbox containers removed' "$work/server.log" ||
  fail "the server's log does not report its containers removed"
log "stopped (exit 0): every sandbox of the instance removed"
compose down --remove-orphans >"$work/down.log" 2>&1 || { cat "$work/down.log" >&2; fail "compose down"; }
[[ -z "$(instance_containers)" ]] || fail "containers of instance $instance left after compose down"
log "compose down: nothing of instance $instance is left"
