#!/usr/bin/env bash
# Host preparation shared by scripts/run.sh and scripts/test.sh, safe to run again:
# installs missing Debian packages, starts dockerd when no engine answers on the socket
# (a running engine is left alone), builds the sandbox image when missing or out of date.
set -euo pipefail

SANDBOX_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DOCKER_SOCK="${DOCKER_SOCK:-/var/run/docker.sock}"

# Build and run-time packages. Node.js/npm drive the end-to-end tests with real MCP clients.
SANDBOX_BUILD_PACKAGES=(build-essential cmake pkg-config git ca-certificates curl
  libcurl4-openssl-dev libssl-dev nlohmann-json3-dev libcpp-httplib-dev libspdlog-dev
  libgtest-dev libgmock-dev libseccomp-dev prometheus-cpp-dev python3 ccache)
# Only the test command needs these: its `lint` test runs scripts/lint.sh, and its sanitize
# tests build with clang and libFuzzer (scripts/fuzz.sh; libFuzzer and the sanitizer runtimes
# are in libclang-rt-14-dev); metrics_integration_test scrapes the server with a real
# Prometheus and checks its text with promtool (both in prometheus); balancer_integration_test
# puts two servers behind a real HAProxy (haproxy, with deploy/balancer/haproxy.cfg).
SANDBOX_TEST_PACKAGES=(clang-format clang-tidy clang libclang-rt-14-dev prometheus haproxy)
# iptables and kmod (modprobe br_netfilter): the egress pools' host firewall (deploy/egress).
SANDBOX_ENGINE_PACKAGES=(docker.io docker-compose debootstrap iptables kmod runsc)

log() { printf '[host] %s\n' "$*" >&2; }

as_root() {
  if [[ $(id -u) -eq 0 ]]; then "$@"; else sudo "$@"; fi
}

install_packages() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  ((${#missing[@]} == 0)) && return 0
  log "installing ${missing[*]}"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
}

engine_answers() {
  curl -fsS --max-time 2 --unix-socket "$DOCKER_SOCK" http://docker/_ping >/dev/null 2>&1
}

# Registers gVisor's runsc with dockerd (pools may choose "runtime": "runsc"). Only touches a
# daemon.json that does not exist yet or has no runtimes; takes effect when dockerd starts.
register_runsc() {
  command -v runsc >/dev/null || return 0
  local conf=/etc/docker/daemon.json
  if [[ -f "$conf" ]] && grep -q '"runtimes"' "$conf"; then return 0; fi
  as_root mkdir -p /etc/docker
  if [[ -s "$conf" ]]; then
    python3 - "$conf" <<'PY'
import json, sys
path = sys.argv[1]
conf = json.load(open(path))
conf.setdefault("runtimes", {})["runsc"] = {"path": "/usr/bin/runsc", "runtimeArgs": ["--network=none"]}
json.dump(conf, open(path, "w"), indent=2)
PY
  else
    # --network=none: runsc refuses to start containers here without it (see docs/security.md).
    echo '{"runtimes": {"runsc": {"path": "/usr/bin/runsc", "runtimeArgs": ["--network=none"]}}}' |
      as_root tee "$conf" >/dev/null
  fi
  log "registered the gVisor runtime (runsc) in $conf"
}

# The host firewall of egress allowlist pools (deploy/egress/host-firewall.sh, docs/network.md
# "Host firewall"), installed when `check` finds it missing. After the engine is up: it hooks
# into Docker's DOCKER-USER chain. Not for an engine elsewhere (DOCKER_HOST=tcp://...): the
# rules belong on that engine's host. A failure is logged, not fatal: only egress pools and
# their tests need the rules, and the server refuses such pools on a host without them.
install_egress_firewall() {
  local script="$SANDBOX_ROOT/deploy/egress/host-firewall.sh"
  if [[ -n "${DOCKER_HOST:-}" && "${DOCKER_HOST}" != unix://* ]]; then
    log "egress host firewall: not installed here (the engine is at $DOCKER_HOST)"; return 0
  fi
  as_root bash "$script" check >/dev/null 2>&1 && return 0
  log "installing the egress host firewall ($script)"
  as_root bash "$script" install
}

start_engine() {
  if [[ -n "${DOCKER_HOST:-}" && "${DOCKER_HOST}" != unix://* ]]; then
    log "DOCKER_HOST=$DOCKER_HOST does not answer; start that engine first"; return 1
  fi
  command -v dockerd >/dev/null || install_packages "${SANDBOX_ENGINE_PACKAGES[@]}"
  register_runsc
  # A killed daemon leaves its pid file, and the next dockerd refuses to start.
  as_root rm -f /var/run/docker.pid
  log "starting dockerd (log: /var/log/dockerd.log)"
  as_root sh -c 'nohup dockerd >>/var/log/dockerd.log 2>&1 &'
  for _ in $(seq 1 120); do
    engine_answers && { log "engine is up"; return 0; }
    sleep 0.5
  done
  log "dockerd did not answer within 60 s; see /var/log/dockerd.log"; tail -n 20 /var/log/dockerd.log >&2
  return 1
}

ensure_engine() {
  engine_answers || start_engine || return 1
  install_egress_firewall || log "egress host firewall: install failed (egress pools cannot start)"
}

# The end-to-end tests (tests/e2e) drive the server with real MCP clients from npm, pinned in
# tests/e2e/package-lock.json: `npm ci` when node_modules is missing or the lock file changed.
install_e2e_clients() {
  local dir="$SANDBOX_ROOT/tests/e2e"
  local stamp="$dir/node_modules/.package-lock.sha256" want
  want="$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)"
  [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]] && return 0
  if ! command -v npm >/dev/null; then
    log "npm not found: the end-to-end tests need Node.js >= 20 with npm"; return 1
  fi
  log "installing the end-to-end test clients (npm ci in tests/e2e)"
  (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >&2)
  echo "$want" >"$stamp"
}

# prepare_host [--image-in-background]: with the option the sandbox image builds beside
# whatever the caller does next (the test command's compile: the two together take minutes
# less than one after the other on 2 cores); wait_for_image then waits for it.
SANDBOX_IMAGE_JOB=""
SANDBOX_IMAGE_LOG=""
prepare_host() {
  # Only the test command needs the npm clients and the lint tools.
  if [[ "$(basename "$0")" == test.sh ]]; then
    install_packages "${SANDBOX_BUILD_PACKAGES[@]}" "${SANDBOX_ENGINE_PACKAGES[@]}" \
      "${SANDBOX_TEST_PACKAGES[@]}"
    install_e2e_clients
  else
    install_packages "${SANDBOX_BUILD_PACKAGES[@]}" "${SANDBOX_ENGINE_PACKAGES[@]}"
  fi
  ensure_engine
  if [[ "${1:-}" == --image-in-background ]]; then
    SANDBOX_IMAGE_LOG="$(mktemp)"
    log "building the sandbox image in the background (log: $SANDBOX_IMAGE_LOG)"
    bash "$SANDBOX_ROOT/images/build.sh" >"$SANDBOX_IMAGE_LOG" 2>&1 &
    SANDBOX_IMAGE_JOB=$!
  else
    bash "$SANDBOX_ROOT/images/build.sh"
  fi
}

wait_for_image() {
  [[ -n "$SANDBOX_IMAGE_JOB" ]] || return 0
  local status=0
  wait "$SANDBOX_IMAGE_JOB" || status=$?
  cat "$SANDBOX_IMAGE_LOG" >&2
  rm -f "$SANDBOX_IMAGE_LOG"
  SANDBOX_IMAGE_JOB=""
  ((status == 0)) || { log "the sandbox image failed to build (exit $status)"; return "$status"; }
}

build_server() {
  local build_dir="$1"; shift
  cmake -S "$SANDBOX_ROOT" -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
  cmake --build "$build_dir" -j "$(nproc)"
}
