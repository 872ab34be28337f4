#!/usr/bin/env bash
# Builds the sandbox image when it is missing or its sources changed, and optionally an image
# with extra packages on top of it.
#
#   images/build.sh [--offline|--online] [--force]
#   images/build.sh --tag IMAGE [--packages "DEB ..."] [--pip "PIP ..."] [--offline|--online] [--force]
#
# offline (default): debootstraps a Debian bookworm rootfs with Python and the scientific
#   packages, imports it as $SANDBOX_BASE_IMAGE, then builds images/sandbox on top of it.
#   Needs only a Debian package mirror, no container registry.
# online: builds images/sandbox FROM the official Python image (needs a registry).
# --tag with --packages and/or --pip: then builds IMAGE FROM the sandbox image (images/packages)
#   with those Debian packages (from the Debian mirror: works offline) and pip packages (need
#   PyPI). A pool uses it with "image": IMAGE and the same "packages" / "pip_packages"; the
#   server checks the image's labels against them at start-up (docs/images.md, "Images
#   with extra packages").
#
# The image carries the label io.sandbox-mcp.source-hash: a hash of images/sandbox and this
# script plus the mode, so it is rebuilt only when those change; an image with packages carries
# io.sandbox-mcp.packages-hash (the sandbox image's id, the package lists, images/packages).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mode="${SANDBOX_IMAGE_SOURCE:-offline}"
force=0
tag=""
deb_list=""
pip_list=""
usage() {
  echo "usage: $0 [--offline|--online] [--force] [--tag IMAGE [--packages \"DEB ...\"] [--pip \"PIP ...\"]]" >&2
  exit 2
}
while (($#)); do
  case "$1" in
    --offline) mode=offline ;;
    --online) mode=online ;;
    --force) force=1 ;;
    --tag) (($# >= 2)) || usage; tag="$2"; shift ;;
    --packages) (($# >= 2)) || usage; deb_list="$2"; shift ;;
    --pip) (($# >= 2)) || usage; pip_list="$2"; shift ;;
    *) usage ;;
  esac
  shift
done
# One spelling of a list, the one the server compares with a pool's "packages": sorted, unique,
# separated by single spaces (commas are accepted as separators too).
canonical() { tr ', ' '\n\n' <<<"$1" | sed '/^$/d' | LC_ALL=C sort -u | paste -sd' ' -; }
deb_list="$(canonical "$deb_list")"
pip_list="$(canonical "$pip_list")"
if [[ -n "$deb_list$pip_list" && -z "$tag" ]]; then
  echo "$0: --packages and --pip need --tag IMAGE (the name a pool's \"image\" gives)" >&2
  exit 2
fi
if [[ -n "$tag" && -z "$deb_list$pip_list" ]]; then
  echo "$0: --tag needs --packages or --pip (the sandbox image itself is \$SANDBOX_IMAGE)" >&2
  exit 2
fi
for p in $deb_list; do
  [[ "$p" =~ ^[a-z0-9][a-z0-9+.-]+(=[A-Za-z0-9.+:~-]+)?$ ]] || { echo "$0: not a Debian package name: $p" >&2; exit 2; }
done
for p in $pip_list; do
  [[ "$p" =~ ^[A-Za-z0-9][A-Za-z0-9._-]*(\[[A-Za-z0-9,._-]+\])?([<>=!~]=?[A-Za-z0-9.*+!-]+)?$ ]] ||
    { echo "$0: not a pip requirement: $p" >&2; exit 2; }
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
  (cd "$here" && find build.sh sandbox -type f ! -name '*.pyc' -print0 | LC_ALL=C sort -z | xargs -0 sha256sum) |
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
  # Cleared when it fires: a RETURN trap stays set and would fire again in the caller.
  trap 'rm -rf "${root:-}"; trap - RETURN' RETURN
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

build_sandbox_image() {
  local from="$online_base" want have
  [[ "$mode" == offline ]] && from="$base_image"
  want="$(hash_sources "$mode" "$from")"
  have="$(label_of "$image" io.sandbox-mcp.source-hash)"
  if [[ "$have" == "$want" && "$force" == 0 ]]; then
    log "$image is up to date ($want)"
    return
  fi
  [[ "$mode" == offline ]] && ensure_offline_base
  log "building $image from $from ($mode, source hash $want)"
  docker build --quiet --build-arg "BASE=$from" --build-arg "SOURCE_HASH=$want" \
    -t "$image" "$here/sandbox" >/dev/null
  log "built $image"
}

build_packages_image() {
  local base_id want have
  base_id="$(docker image inspect --format '{{.Id}}' "$image")"
  want="$( { printf 'base=%s\ndeb=%s\npip=%s\n' "$base_id" "$deb_list" "$pip_list"
             sha256sum "$here/packages/Dockerfile" | cut -d' ' -f1; } | sha256sum | cut -c1-16)"
  have="$(label_of "$tag" io.sandbox-mcp.packages-hash)"
  if [[ "$have" == "$want" && "$force" == 0 ]]; then
    log "$tag is up to date ($want)"
    return
  fi
  log "building $tag from $image with${deb_list:+ Debian packages: $deb_list}${pip_list:+ pip: $pip_list}"
  docker build --quiet --build-arg "BASE=$image" --build-arg "DEBIAN_PACKAGES=$deb_list" \
    --build-arg "PIP_PACKAGES=$pip_list" --build-arg "PACKAGES_HASH=$want" \
    -t "$tag" "$here/packages" >/dev/null
  log "built $tag (packages hash $want)"
}

build_sandbox_image
[[ -n "$tag" ]] && build_packages_image
exit 0
