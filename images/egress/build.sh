#!/usr/bin/env bash
# Builds the egress proxy's image from a sandbox-egress built on this host, when the image is
# missing or was built from another binary (or Dockerfile, or base).
#
#   images/egress/build.sh [--force] [BINARY]     (default BINARY: build/src/egress/sandbox-egress)
#
# Tag: $SANDBOX_EGRESS_IMAGE (default sandbox-mcp-egress:latest), FROM $SANDBOX_BASE_IMAGE
# (default sandbox-mcp-base:bookworm, which images/build.sh imports). The image carries the
# label io.sandbox-mcp.source-hash: a hash of the binary, the Dockerfile and the base image's id.
# Compose builds the same image from source instead (the egress stage of images/server/Dockerfile).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
image="${SANDBOX_EGRESS_IMAGE:-sandbox-mcp-egress:latest}"
base_image="${SANDBOX_BASE_IMAGE:-sandbox-mcp-base:bookworm}"
force=0
binary=""
usage() { echo "usage: $0 [--force] [BINARY]" >&2; exit 2; }
while (($#)); do
  case "$1" in
    --force) force=1 ;;
    -*) usage ;;
    *) [[ -z "$binary" ]] || usage; binary="$1" ;;
  esac
  shift
done
binary="${binary:-$root/build/src/egress/sandbox-egress}"

log() { printf '[images] %s\n' "$*" >&2; }

[[ -x "$binary" ]] ||
  { log "no executable $binary (cmake --build build --target sandbox-egress)"; exit 1; }
base_id="$(docker image inspect --format '{{.Id}}' "$base_image" 2>/dev/null)" ||
  { log "the base image $base_image is missing: run images/build.sh"; exit 1; }
want="$( { sha256sum <"$binary"; sha256sum <"$here/Dockerfile"; echo "$base_id"; } |
  sha256sum | cut -c1-16)"
have="$(docker image inspect --format '{{ index .Config.Labels "io.sandbox-mcp.source-hash" }}' \
  "$image" 2>/dev/null || true)"
if [[ "$have" == "$want" && "$force" == 0 ]]; then
  log "$image is up to date ($want)"
  exit 0
fi
# The context is the binary and the Dockerfile alone (not the build directory).
context="$(mktemp -d)"
trap 'rm -rf "$context"' EXIT
cp "$binary" "$context/sandbox-egress"
cp "$here/Dockerfile" "$context/Dockerfile"
log "building $image from $binary (source hash $want)"
docker build --quiet --build-arg "BASE=$base_image" --build-arg "SOURCE_HASH=$want" \
  -t "$image" "$context" >/dev/null
log "built $image"
