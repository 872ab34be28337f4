#!/usr/bin/env bash
# Extra Docker engines on this machine, for the multi-engine tests of issue 28 (item 6).
#
# Each engine is a dockerd of its own: its own --data-root, --exec-root, --pidfile, cgroup parent and
# bridge, listening only on tcp://127.0.0.1:PORT with mutual TLS from certificates made here with
# openssl. The main engine on /var/run/docker.sock is never started, stopped or changed; its image is
# copied into each extra engine with `docker save | docker load`.
#
# Usage (run as root; every command is idempotent enough to re-run after a failure):
#   extra_engines.sh start N        start engines 1..N (certificates, bridges, dockerd, image)
#   extra_engines.sh stop           remove every container, stop every engine, delete all state
#   extra_engines.sh status         one line per engine: name, port, pid, state
#   extra_engines.sh engines-json   the `docker.engines` entries for the server config (JSON array)
#   extra_engines.sh docker I ARGS  run the docker CLI against engine I (e.g. `docker 1 ps -a`)
#   extra_engines.sh kill I         SIGKILL engine I's dockerd (its containerd and containers live on)
#   extra_engines.sh stall I        SIGSTOP engine I's dockerd (connections open, nothing answers)
#   extra_engines.sh resume I       SIGCONT engine I's dockerd
#   extra_engines.sh restart I      start engine I's dockerd again after `kill` (same state, same port)
#
# Environment (defaults in brackets):
#   EXTRA_ENGINES_ROOT   state directory, data-roots, certificates, logs [/var/tmp/sbx-extra-engines]
#                        (not a tmpfs: each data-root holds a copy of the image, about 1.3 GB)
#   EXTRA_ENGINES_PORT   engine I listens on PORT+I [23760]
#   EXTRA_ENGINES_NET    engine I's bridge gets NET.I.1/24 [10.231]
#   EXTRA_ENGINES_IMAGE  image copied into each engine [sandbox-mcp-python:latest]
#   EXTRA_ENGINES_DAEMON_JSON  dockerd --config-file; the default copies /etc/docker/daemon.json when it
#                        exists so that the extra engines offer the same runtimes (e.g. runsc) as the main one
#   EXTRA_ENGINES_KEEP_DATA=1  `stop` keeps each data-root (and so its image) for the next `start`:
#                        deleting a data-root and loading the image again are the slow parts
#                        (minutes on a busy machine; docs/scale-out.md has the numbers)
# Other fixtures use other names: tests/integration/faults/fault_env.h owns sbxfault0 (172.31.254.0/24)
# and /var/tmp/sandbox-mcp-faults-engine.
set -euo pipefail

ROOT=${EXTRA_ENGINES_ROOT:-/var/tmp/sbx-extra-engines}
BASE_PORT=${EXTRA_ENGINES_PORT:-23760}
NET=${EXTRA_ENGINES_NET:-10.231}
IMAGE=${EXTRA_ENGINES_IMAGE:-sandbox-mcp-python:latest}
TLS=$ROOT/tls
START_DEADLINE_S=60

log() { printf 'extra_engines: %s\n' "$*" >&2; }
die() {
  log "error: $*"
  exit 1
}

[[ $(id -u) == 0 ]] || die "must run as root (dockerd, bridges and cgroups need it)"

# Names are short on purpose: a bridge name has at most 15 characters, and containerd's socket lives
# under the exec-root, whose path must stay well below the 108-byte limit of a unix socket path.
engine_dir() { echo "$ROOT/e$1"; }
bridge_name() { echo "sbxe$1"; }
cgroup_parent() { echo "/sbx-extra-e$1"; }
port_of() { echo $((BASE_PORT + $1)); }
host_of() { echo "tcp://127.0.0.1:$(port_of "$1")"; }
pid_of() {
  local f
  f="$(engine_dir "$1")/dockerd.pid"
  [[ -s $f ]] && cat "$f"
}
alive() {
  local pid state
  pid=$(pid_of "$1") || return 1
  # A killed dockerd stays a zombie until its parent reaps it: count that as gone.
  state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) || return 1
  [[ -n $state && $state != Z ]]
}
engines() {
  local d
  for d in "$ROOT"/e*; do
    [[ -d $d ]] && echo "${d##*/e}"
  done | sort -n
}
dk() {
  local i=$1
  shift
  docker -H "$(host_of "$i")" --tlsverify --tlscacert "$TLS/ca.pem" --tlscert "$TLS/client-cert.pem" \
    --tlskey "$TLS/client-key.pem" "$@"
}
# The engine's own view of whether it serves: GET /_ping over mutual TLS, with a deadline so that a
# stalled engine (SIGSTOP) answers "no" instead of hanging the caller.
ping_engine() {
  curl -fsS --max-time 2 --cacert "$TLS/ca.pem" --cert "$TLS/client-cert.pem" --key "$TLS/client-key.pem" \
    "https://127.0.0.1:$(port_of "$1")/_ping" >/dev/null 2>&1
}

make_certs() {
  [[ -s $TLS/ca.pem && -s $TLS/client-key.pem ]] && return 0
  mkdir -p "$TLS"
  chmod 700 "$TLS"
  (
    cd "$TLS"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 30 \
      -subj "/CN=sandbox-mcp test engines CA" -keyout ca-key.pem -out ca.pem 2>/dev/null
    # Server: every engine shares one certificate; they all answer on 127.0.0.1.
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=127.0.0.1" \
      -keyout server-key.pem -out server.csr 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >server.ext
    openssl x509 -req -in server.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 30 \
      -extfile server.ext -out server-cert.pem 2>/dev/null
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=sandbox-mcp test client" \
      -keyout client-key.pem -out client.csr 2>/dev/null
    printf 'extendedKeyUsage=clientAuth\n' >client.ext
    openssl x509 -req -in client.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 30 \
      -extfile client.ext -out client-cert.pem 2>/dev/null
    rm -f ./*.csr ./*.ext ca.srl
    chmod 600 ./*-key.pem
  )
}

make_bridge() {
  local i=$1 br
  br=$(bridge_name "$i")
  if ! ip link show "$br" >/dev/null 2>&1; then
    ip link add "$br" type bridge
    ip addr add "$NET.$i.1/24" dev "$br"
  fi
  ip link set "$br" up
}

daemon_json() {
  local i=$1 f
  f="$(engine_dir "$i")/daemon.json"
  if [[ -n ${EXTRA_ENGINES_DAEMON_JSON:-} ]]; then
    cp "$EXTRA_ENGINES_DAEMON_JSON" "$f"
  elif [[ -s /etc/docker/daemon.json ]]; then
    cp /etc/docker/daemon.json "$f"
  else
    echo '{}' >"$f"
  fi
  echo "$f"
}

launch() {
  local i=$1 dir pidfile cfg
  dir=$(engine_dir "$i")
  pidfile=$dir/dockerd.pid
  mkdir -p "$dir/data" "$dir/exec"
  if alive "$i"; then
    log "e$i already runs (pid $(pid_of "$i"))"
    return 0
  fi
  # A dockerd killed with SIGKILL leaves its pid file, and the next one refuses to start.
  rm -f "$pidfile"
  # Its containerd dies with it (parent-death signal) but may linger as a zombie until reaped; dockerd
  # takes a pid file naming any such process for a live containerd and waits for its socket forever.
  local cpid
  cpid=$(cat "$dir/exec/containerd/containerd.pid" 2>/dev/null || true)
  if [[ -n $cpid ]] && ! process_of_engine "$cpid" "$dir"; then
    rm -f "$dir/exec/containerd/containerd.pid"
  fi
  make_bridge "$i"
  cfg=$(daemon_json "$i")
  # --iptables/--ip-masq off: the sandboxes run with NetworkMode none, and the main engine owns the
  # host's NAT rules. --bridge names our own bridge: `--bridge=none` would delete docker0.
  setsid dockerd \
    --config-file "$cfg" \
    --data-root "$dir/data" \
    --exec-root "$dir/exec" \
    --pidfile "$pidfile" \
    --bridge "$(bridge_name "$i")" --iptables=false --ip-masq=false \
    --cgroup-parent "$(cgroup_parent "$i")" \
    -H "$(host_of "$i")" \
    --tlsverify --tlscacert "$TLS/ca.pem" --tlscert "$TLS/server-cert.pem" --tlskey "$TLS/server-key.pem" \
    >>"$dir/dockerd.log" 2>&1 </dev/null &
  local waited=0
  until ping_engine "$i"; do
    sleep 0.2
    waited=$((waited + 1))
    if ((waited > START_DEADLINE_S * 5)); then
      tail -5 "$dir/dockerd.log" >&2
      log "e$i did not answer on $(host_of "$i") within ${START_DEADLINE_S}s (log: $dir/dockerd.log)"
      return 1
    fi
  done
}

load_image() {
  local i=$1 want have
  want=$(docker image inspect --format '{{.Id}}' "$IMAGE") || die "the main engine has no $IMAGE"
  have=$(dk "$i" image inspect --format '{{.Id}}' "$IMAGE" 2>/dev/null || true)
  if [[ $have == "$want" ]]; then
    log "e$i already has $IMAGE ($want)"
    return 0
  fi
  docker save "$IMAGE" | dk "$i" load -q >/dev/null
  have=$(dk "$i" image inspect --format '{{.Id}}' "$IMAGE")
  [[ $have == "$want" ]] || die "e$i: loaded $IMAGE has id $have, the main engine's is $want"
}

now_ms() { date +%s%3N; }

cmd_start() {
  local n=${1:-2} i t0 t1 t2
  [[ $n =~ ^[1-9][0-9]*$ ]] || die "start N: N must be a positive number"
  command -v dockerd >/dev/null || die "dockerd not found (Debian: apt-get install docker.io)"
  make_certs
  for ((i = 1; i <= n; i++)); do
    t0=$(now_ms)
    launch "$i" || exit 1
    t1=$(now_ms)
    load_image "$i"
    t2=$(now_ms)
    log "e$i up on $(host_of "$i"): dockerd answered in $((t1 - t0)) ms, image ready in $((t2 - t1)) ms"
  done
}

# Kills every process left in an engine's cgroups: after a SIGKILL of its dockerd (and a failed
# restart) the containers live on under its own cgroup parent, which names only this engine.
kill_cgroup_leftovers() {
  local i=$1 parent d
  parent=$(cgroup_parent "$i")
  for d in /sys/fs/cgroup/pids/"$parent" /sys/fs/cgroup/memory/"$parent" /sys/fs/cgroup/unified/"$parent"; do
    [[ -d $d ]] || continue
    find "$d" -name cgroup.procs -exec cat {} + 2>/dev/null | while read -r pid; do
      kill -KILL "$pid" 2>/dev/null || true
    done
  done
  sleep 0.2
  for d in /sys/fs/cgroup/*/"$parent"; do
    if [[ -d $d ]]; then
      find "$d" -depth -type d -exec rmdir {} + 2>/dev/null || true
    fi
  done
}

# True when PID is a live (not zombie) process whose command line names engine directory DIR.
process_of_engine() {
  local pid=$1 dir=$2 state cmd
  state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) || return 1
  [[ -n $state && $state != Z ]] || return 1
  cmd=$(tr "\\0" " " 2>/dev/null <"/proc/$pid/cmdline") || return 1
  [[ $cmd == *"$dir/"* ]]
}

# Processes of this engine other than dockerd (its containerd and shims) name its exec-root on their
# command line; we match that exact path, never a process name. A shim killed this way leaves its
# socket in /run/containerd/s, named (containerd 1.6) by sha256("<containerd address>/<ns>/<id>"):
# that exact file is removed too, so nothing of this engine stays behind.
kill_exec_root_processes() {
  local dir=$1 p cmd
  local -a args
  for p in /proc/[0-9]*; do
    cmd=$(tr "\\0" " " 2>/dev/null <"$p/cmdline") || continue
    [[ $cmd == *"$dir/exec"* ]] || continue
    kill -KILL "${p#/proc/}" 2>/dev/null || true
    read -r -a args <<<"$cmd"
    if [[ ${args[0]} == *containerd-shim* ]]; then
      local ns="" id="" address="" k
      for ((k = 1; k + 1 < ${#args[@]}; k++)); do
        case ${args[k]} in
          -namespace) ns=${args[k + 1]} ;;
          -id) id=${args[k + 1]} ;;
          -address) address=${args[k + 1]} ;;
        esac
      done
      if [[ -n $ns && -n $id && $address == "$dir/exec/"* ]]; then
        rm -f "/run/containerd/s/$(printf '%s' "$address/$ns/$id" | sha256sum | cut -c1-64)"
      fi
    fi
  done
}

unmount_under() {
  local dir=$1 m
  # Deepest first; mountinfo field 5 is the mount point (spaces are escaped as \040, our paths have none).
  awk -v d="$dir/" 'index($5, d) == 1 { print $5 }' /proc/self/mountinfo | sort -r | while read -r m; do
    umount -l "$m" 2>/dev/null || true
  done
}

stop_engine() {
  local i=$1 dir pid t0
  t0=$(now_ms)
  dir=$(engine_dir "$i")
  pid=$(pid_of "$i" || true)
  if [[ -n $pid ]]; then
    kill -CONT "$pid" 2>/dev/null || true
  fi
  # Containers are removed through the engine's own API when it answers: that releases their mounts,
  # network namespaces and shims cleanly. A killed engine is not started again for this (a restart
  # takes about 10 s); its shims, containers and mounts are removed by hand below.
  if ping_engine "$i"; then
    local ids=()
    mapfile -t ids < <(dk "$i" ps -aq 2>/dev/null || true)
    if ((${#ids[@]} > 0)); then
      dk "$i" rm -f "${ids[@]}" >/dev/null 2>&1 || true
    fi
  fi
  pid=$(pid_of "$i" || true)
  if [[ -n $pid ]] && kill -TERM "$pid" 2>/dev/null; then
    local waited=0
    while kill -0 "$pid" 2>/dev/null && ((waited < 150)); do
      sleep 0.2
      waited=$((waited + 1))
    done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  log "e$i: engine stopped after $(($(now_ms) - t0)) ms; removing leftovers and state"
  kill_exec_root_processes "$dir"
  kill_cgroup_leftovers "$i"
  unmount_under "$dir"
  if [[ ${EXTRA_ENGINES_KEEP_DATA:-0} == 1 ]]; then
    rm -rf "$dir/exec" "$dir/dockerd.pid"
  else
    rm -rf "$dir"
  fi
  ip link del "$(bridge_name "$i")" 2>/dev/null || true
  log "e$i stopped in $(($(now_ms) - t0)) ms"
}

cmd_stop() {
  local i
  for i in $(engines); do
    stop_engine "$i"
  done
  if [[ ${EXTRA_ENGINES_KEEP_DATA:-0} != 1 ]]; then
    rm -rf "$TLS"
    rmdir "$ROOT" 2>/dev/null || true
  fi
}

cmd_status() {
  local i state
  for i in $(engines); do
    if ! alive "$i"; then
      state=down
    elif [[ $(awk '{print $3}' "/proc/$(pid_of "$i")/stat") == T ]]; then
      state=stalled
    elif ping_engine "$i"; then
      state=up
    else
      state=not-answering
    fi
    printf 'e%s %s pid=%s %s\n' "$i" "$(host_of "$i")" "$(pid_of "$i" || echo -)" "$state"
  done
}

cmd_engines_json() {
  local i first=1
  printf '['
  for i in $(engines); do
    ((first)) || printf ','
    first=0
    printf '{"name":"e%s","host":"%s","tls_ca":"%s","tls_cert":"%s","tls_key":"%s"}' \
      "$i" "$(host_of "$i")" "$TLS/ca.pem" "$TLS/client-cert.pem" "$TLS/client-key.pem"
  done
  printf ']\n'
}

need_engine() {
  [[ ${1:-} =~ ^[1-9][0-9]*$ && -d $(engine_dir "${1:-0}") ]] || die "no engine '${1:-}' under $ROOT"
}

signal_engine() {
  local sig=$1 i=$2 pid
  need_engine "$i"
  pid=$(pid_of "$i") || die "e$i has no pid file"
  kill "-$sig" "$pid"
  log "e$i: sent SIG$sig to dockerd $pid"
}

# One caller at a time changes the engines (two test processes would fight over ports and bridges).
# flock -o holds the lock in the flock process itself and closes it for this script, so the
# engines started here (dockerd, containerd, shims) never inherit it: one that outlived a killed
# dockerd would otherwise keep every later command waiting.
case ${1:-} in
  start | stop | restart)
    if [[ -z ${EXTRA_ENGINES_LOCKED:-} ]]; then
      mkdir -p "$(dirname "$ROOT")"
      export EXTRA_ENGINES_LOCKED=1
      exec flock -o "${ROOT%/}.lock" bash "$0" "$@"
    fi
    ;;
esac

case ${1:-} in
  start) cmd_start "${2:-2}" ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  engines-json) cmd_engines_json ;;
  docker)
    need_engine "${2:-}"
    i=$2
    shift 2
    dk "$i" "$@"
    ;;
  kill) signal_engine KILL "${2:-}" ;;
  stall) signal_engine STOP "${2:-}" ;;
  resume) signal_engine CONT "${2:-}" ;;
  restart)
    need_engine "${2:-}"
    launch "$2" || exit 1
    ;;
  *) die "usage: $0 start N | stop | status | engines-json | docker I ARGS | kill I | stall I | resume I | restart I" ;;
esac
