#!/usr/bin/env bash
# The host firewall of egress allowlist pools (docs/network.md, "Host firewall"): a static
# ruleset the operator installs once per Docker host, keyed on the bridge-name prefix the server
# gives every pool network (sbxeg<N>) and on the proxy's address (.2 of the pool's /24).
#
#   deploy/egress/host-firewall.sh install   (re)build the chains and their jumps, atomically
#   deploy/egress/host-firewall.sh remove    delete them
#   deploy/egress/host-firewall.sh check     exit 0 when installed, else name what is missing
#
# Environment (install and check must see the same values):
#   SANDBOX_EGRESS_CONNLIMIT   connections from one sandbox to the proxy (default 40: above the
#                              proxy's own 32 per source, so the 33rd still gets the proxy's
#                              readable 429; the kernel resets past 40)
#   SANDBOX_EGRESS_PROXY_PORT  the proxy's port (default 3128)
#
# IPv4 (iptables), from a pool bridge:
#   DOCKER-USER -i sbxeg+ -> SBX-EGRESS: to the proxy's port and DNS on the same bridge, and
#     the proxy's replies, accepted; the rest rejected at once (Docker's own rules drop
#     silently: clients would hang). DOCKER-USER runs before Docker's isolation and ICC rules.
#   INPUT -i sbxeg+ -> SBX-EGRESS-IN: the host itself (the gateway and every host address)
#     rejected with icmp-admin-prohibited; a sandbox sees EHOSTUNREACH, which is how the server
#     tells a firewalled host from a bare one (ECONNREFUSED).
# IPv6 (ip6tables, when present): everything from a pool bridge rejected (the networks have no
# IPv6; defence in depth). Needs root and, for DOCKER-USER, the engine up.
set -euo pipefail

prefix=sbxeg
chain=SBX-EGRESS
chain_in=SBX-EGRESS-IN
connlimit="${SANDBOX_EGRESS_CONNLIMIT:-40}"
port="${SANDBOX_EGRESS_PROXY_PORT:-3128}"
proxy=0.0.0.2/0.0.0.255  # .2 of any /24: a non-contiguous mask, one rule for every pool
bridged=(-m physdev --physdev-is-bridged)  # in and out of the same bridge: not routed

log() { printf 'host-firewall: %s\n' "$*" >&2; }
die() { log "$*"; exit 2; }

[[ "$connlimit" =~ ^[1-9][0-9]{0,5}$ ]] || die "SANDBOX_EGRESS_CONNLIMIT must be a number >= 1"
if ! [[ "$port" =~ ^[1-9][0-9]{0,4}$ ]] || ((port > 65535)); then
  die "SANDBOX_EGRESS_PROXY_PORT must be a port number"
fi

have_ip6() { command -v ip6tables >/dev/null; }

# The rules of each chain, one a line, in order (a line is split on spaces: no quoting).
rules_v4() {
  case "$1" in
    "$chain")
      local over="-m connlimit --connlimit-above $connlimit --connlimit-mask 32"  # per source
      echo "-d $proxy -p tcp --dport $port --syn ${bridged[*]} $over -j REJECT --reject-with tcp-reset"
      echo "-d $proxy -p tcp --dport $port ${bridged[*]} -j ACCEPT"
      echo "-d $proxy -p udp --dport 53 ${bridged[*]} -j ACCEPT"
      echo "-d $proxy -p tcp --dport 53 ${bridged[*]} -j ACCEPT"
      echo "-s $proxy ${bridged[*]} -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT"
      echo "-p tcp -j REJECT --reject-with tcp-reset"
      echo "-j REJECT --reject-with icmp-admin-prohibited"
      ;;
    "$chain_in")
      echo "-j REJECT --reject-with icmp-admin-prohibited"
      ;;
  esac
}
rules_v6() {
  echo "-p tcp -j REJECT --reject-with tcp-reset"
  echo "-j REJECT --reject-with icmp6-adm-prohibited"
}

# Where the forward chain is jumped from: Docker's DOCKER-USER (before its own rules, and kept
# when the engine restarts); ip6tables has it only when the engine manages IPv6 rules.
forward_hook() {
  local tool="$1"
  if "$tool" -w -S DOCKER-USER >/dev/null 2>&1; then echo DOCKER-USER; else echo FORWARD; fi
}

# How many times HOOK jumps to TARGET for the bridge prefix.
jumps() {
  local tool="$1" hook="$2" target="$3"
  "$tool" -w -S "$hook" 2>/dev/null | grep -cxF -- "-A $hook -i $prefix+ -j $target" || true
}

# One iptables-restore transaction: the chains (re)declared, which flushes them, their rules,
# old jumps deleted and one jump each inserted first. Atomic: no moment without the rules.
restore_input() {
  local tool="$1" fwd_hook="$2" rules="$3" c n
  echo '*filter'
  echo ":$chain - [0:0]"
  echo ":$chain_in - [0:0]"
  for c in "$chain" "$chain_in"; do
    "$rules" "$c" | sed "s/^/-A $c /"
  done
  n="$(jumps "$tool" "$fwd_hook" "$chain")"
  for ((; n > 0; n--)); do echo "-D $fwd_hook -i $prefix+ -j $chain"; done
  n="$(jumps "$tool" INPUT "$chain_in")"
  for ((; n > 0; n--)); do echo "-D INPUT -i $prefix+ -j $chain_in"; done
  echo "-I $fwd_hook 1 -i $prefix+ -j $chain"
  echo "-I INPUT 1 -i $prefix+ -j $chain_in"
  echo COMMIT
}

install() {
  iptables -w -S DOCKER-USER >/dev/null 2>&1 ||
    die "iptables has no DOCKER-USER chain: start the Docker engine first (it creates the chain)"
  # Bridged frames pass iptables only with br_netfilter (Docker turns it on for ICC=false
  # networks; without it a bridge forwards between sandboxes unfiltered).
  [[ -d /proc/sys/net/bridge ]] || modprobe br_netfilter ||
    die "cannot load br_netfilter (bridged traffic would bypass iptables)"
  echo 1 >/proc/sys/net/bridge/bridge-nf-call-iptables
  restore_input iptables DOCKER-USER rules_v4 | iptables-restore -w --noflush
  if have_ip6; then
    restore_input ip6tables "$(forward_hook ip6tables)" rules_v6 | ip6tables-restore -w --noflush
  fi
  check >/dev/null || { check; die "installed, but the check above fails"; }
  log "installed ($chain: proxy port $port, at most $connlimit connections a sandbox)"
}

remove_family() {
  local tool="$1" hook
  for hook in DOCKER-USER FORWARD; do
    while "$tool" -w -D "$hook" -i "$prefix+" -j "$chain" 2>/dev/null; do :; done
  done
  while "$tool" -w -D INPUT -i "$prefix+" -j "$chain_in" 2>/dev/null; do :; done
  for c in "$chain" "$chain_in"; do
    if "$tool" -w -S "$c" >/dev/null 2>&1; then
      "$tool" -w -F "$c"
      "$tool" -w -X "$c"
    fi
  done
}

remove() {
  remove_family iptables
  have_ip6 && remove_family ip6tables
  log "removed"
}

# Prints one line per missing piece; false when there is any.
check_family() {
  local tool="$1" fwd_hook="$2" rules="$3" ok=0 c spec want have first
  for c in "$chain" "$chain_in"; do
    if ! "$tool" -w -S "$c" >/dev/null 2>&1; then
      echo "$tool: chain $c is missing"; ok=1; continue
    fi
    want=0
    while read -r spec; do
      want=$((want + 1))
      # shellcheck disable=SC2086  # a rule is words separated by spaces
      "$tool" -w -C "$c" $spec 2>/dev/null || { echo "$tool: $c lacks: $spec"; ok=1; }
    done < <("$rules" "$c")
    have="$("$tool" -w -S "$c" | grep -c '^-A' || true)"
    ((have == want)) || { echo "$tool: $c has $have rules, expected $want"; ok=1; }
  done
  for c in "$fwd_hook:$chain" "INPUT:$chain_in"; do
    # The jump must come first: a rule before it could accept what the chain refuses.
    first="$("$tool" -w -S "${c%%:*}" 2>/dev/null | grep -m1 '^-A' || true)"
    [[ "$first" == "-A ${c%%:*} -i $prefix+ -j ${c#*:}" ]] ||
      { echo "$tool: the first rule of ${c%%:*} is not the jump to ${c#*:} (-i $prefix+)"; ok=1; }
  done
  return "$ok"
}

check() {
  local ok=0
  [[ "$(cat /proc/sys/net/bridge/bridge-nf-call-iptables 2>/dev/null)" == 1 ]] ||
    { echo "net.bridge.bridge-nf-call-iptables is not 1 (br_netfilter)"; ok=1; }
  iptables -w -S DOCKER-USER >/dev/null 2>&1 ||
    { echo "iptables: no DOCKER-USER chain (is the Docker engine running?)"; ok=1; }
  check_family iptables DOCKER-USER rules_v4 || ok=1
  if have_ip6; then
    check_family ip6tables "$(forward_hook ip6tables)" rules_v6 || ok=1
  fi
  ((ok == 0)) && echo "host-firewall: installed"
  return "$ok"
}

(($(id -u) == 0)) || die "needs root (iptables)"
case "${1:-}" in
  install) install ;;
  remove) remove ;;
  check) check ;;
  *) echo "usage: $0 install|remove|check" >&2; exit 2 ;;
esac
