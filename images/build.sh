#!/usr/bin/env bash
# Builds the sandbox image when it is missing or its sources changed.
#
#   images/build.sh [--offline|--online] [--force]
#
# offline (default): debootstraps a Debian bookworm rootfs with Python and the scientific
#   packages, imports it as $SANDBOX_BASE_IMAGE, then builds images/sandbox on top of it.
#   Needs only a Debian package mirror, no container registry.
# online: builds images/sandbox FROM the official Python image (needs a registry).
#
# The image carries the label io.sandbox-mcp.source-hash: a hash of everything under images/
# plus the mode, so it is rebuilt only when those change.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mode="${SANDBOX_IMAGE_SOURCE:-offline}"
force=0
for arg in "$@"; do
  case "$arg" in
    --offline) mode=offline ;;
    --online) mode=online ;;
    --force) force=1 ;;
    *) echo "usage: $0 [--offline|--online] [--force]" >&2; exit 2 ;;
  esac
done

image="${SANDBOX_IMAGE:-sandbox-mcp-python:latest}"
base_image="${SANDBOX_BASE_IMAGE:-sandbox-mcp-base:bookworm}"
online_base="${SANDBOX_ONLINE_BASE:-python:3.11-slim-bookworm}"
suite="bookworm"
# The Debian packages of the offline base: Python and what the sandbox promises to import.
base_packages="python3,python3-numpy,python3-matplotlib,python3-pandas,python3-scipy,python3-sympy,python3-pil,fonts-dejavu-core,ca-certificates,tzdata"

log() { printf '[images] %s\n' "$*" >&2; }

label_of() {
  docker image inspect --format "{{ index .Config.Labels \"$2\" }}" "$1" 2>/dev/null || true
}

hash_sources() {
  (cd "$here" && find . -type f ! -name '*.pyc' -print0 | LC_ALL=C sort -z | xargs -0 sha256sum) |
    { cat; printf 'mode=%s\nbase=%s\npackages=%s\n' "$1" "$2" "$base_packages"; } |
    sha256sum | cut -c1-16
}

debian_mirror() {
  local uri
  uri="$(grep -hsE '^(URIs:|deb )' /etc/apt/sources.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
    grep -v security | grep -m1 -oE 'https?://[^ ]+/debian' || true)"
  echo "${uri:-http://deb.debian.org/debian}"
}

ensure_offline_base() {
  local want have
  want="$(printf '%s %s\n' "$suite" "$base_packages" | sha256sum | cut -c1-16)"
  have="$(label_of "$base_image" io.sandbox-mcp.base-hash)"
  if [[ "$have" == "$want" && "$force" == 0 ]]; then
    log "base $base_image is up to date"
    return
  fi
  command -v debootstrap >/dev/null || { log "debootstrap is missing (apt-get install debootstrap)"; exit 1; }
  local root
  root="$(mktemp -d /var/tmp/sandbox-rootfs.XXXXXX)"
  trap 'rm -rf "$root"' RETURN
  log "debootstrapping $suite into $root from $(debian_mirror) (a few minutes)"
  debootstrap --variant=minbase --include="$base_packages" "$suite" "$root" "$(debian_mirror)" \
    >/var/tmp/sandbox-debootstrap.log 2>&1 || { tail -n 30 /var/tmp/sandbox-debootstrap.log >&2; exit 1; }
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* "$root"/tmp/* "$root"/var/tmp/*
  log "importing $base_image"
  tar -C "$root" -c . | docker import \
    --change "LABEL io.sandbox-mcp.base-hash=$want" \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["python3"]' - "$base_image" >/dev/null
}

from="$online_base"
[[ "$mode" == offline ]] && from="$base_image"
want="$(hash_sources "$mode" "$from")"
have="$(label_of "$image" io.sandbox-mcp.source-hash)"
if [[ "$have" == "$want" && "$force" == 0 ]]; then
  log "$image is up to date ($want)"
  exit 0
fi

[[ "$mode" == offline ]] && ensure_offline_base
log "building $image from $from ($mode, source hash $want)"
docker build --quiet --build-arg "BASE=$from" --build-arg "SOURCE_HASH=$want" \
  -t "$image" "$here/sandbox" >/dev/null
log "built $image"
