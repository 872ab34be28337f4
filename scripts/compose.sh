#!/usr/bin/env bash
# Runs the compose deployment (compose.yaml) on this host, set up first:
#
#   scripts/compose.sh                 build and start it: up -d --build
#   scripts/compose.sh logs -f         any other arguments go to docker compose as they are
#
# Installs Docker and Compose when missing, starts dockerd when no engine answers, builds the
# sandbox image when missing or out of date (images/build.sh), writes .env with a random
# SANDBOX_MCP_TOKEN on first use and keeps DOCKER_GID there equal to the socket's group.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/host.sh"

cd "$SANDBOX_ROOT"
command -v docker >/dev/null || install_packages docker.io iptables
ensure_engine

# Compose v2 (the docker plugin) when present, else v1 (Debian's docker-compose).
if docker compose version >/dev/null 2>&1; then
  compose=(docker compose)
else
  command -v docker-compose >/dev/null || install_packages docker-compose
  compose=(docker-compose)
fi

env_file="$SANDBOX_ROOT/.env"
env_value() { [[ -f "$env_file" ]] && sed -n "s/^$1=//p" "$env_file" | tail -n 1; }
set_env() {
  local tmp
  tmp="$(mktemp "$env_file.XXXXXX")"
  { [[ -f "$env_file" ]] && grep -v "^$1=" "$env_file"; printf '%s=%s\n' "$1" "$2"; } >"$tmp" || true
  chmod 600 "$tmp"
  mv "$tmp" "$env_file"
}

# .env holds the token, so only its owner may read it; compose reads it from this directory,
# so later `docker-compose logs` or `down` work without this script.
if [[ -z "${SANDBOX_MCP_TOKEN:-}" && -z "$(env_value SANDBOX_MCP_TOKEN)" ]]; then
  set_env SANDBOX_MCP_TOKEN "$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')"
  log "wrote a new SANDBOX_MCP_TOKEN to $env_file (clients send it as Authorization: Bearer)"
fi
sock="${SANDBOX_DOCKER_SOCK:-$DOCKER_SOCK}"
gid="$(stat -c %g "$sock")"
[[ "$(env_value DOCKER_GID)" == "$gid" ]] || set_env DOCKER_GID "$gid"
export DOCKER_GID="$gid"

# The offline sandbox image has a base of its own, which the server image builds on too; online,
# the server image builds on Debian's from the registry.
if [[ "${SANDBOX_IMAGE_SOURCE:-offline}" == online ]]; then
  export SANDBOX_BUILD_BASE="${SANDBOX_BUILD_BASE:-debian:bookworm}"
fi

if (($# == 0)); then
  [[ "${SANDBOX_IMAGE_SOURCE:-offline}" == online ]] || command -v debootstrap >/dev/null ||
    install_packages debootstrap
  # The server starts its sandboxes from this image.
  bash "$SANDBOX_ROOT/images/build.sh"
  set -- up -d --build
fi
exec "${compose[@]}" -f "$SANDBOX_ROOT/compose.yaml" "$@"
