#!/usr/bin/env bash
# The test package index: a PEP 503 simple index of tiny wheels (sbxtestpkg 1.0 and 1.1, and
# sbxtestapp 1.0 which requires sbxtestpkg), served over HTTPS by nginx in a container of its
# own, under a throwaway test CA made at test time. For tests of `pip install` through the
# egress proxy (docs/network.md, "pip install"): pip_install_test.py here, and an end-to-end
# test through the real server.
#
#   index_fixture.sh image
#       Builds the index image when it is missing or its sources changed (Debian's nginx-light,
#       python3-build, from the Debian mirror: offline). Prints image=IMAGE.
#   index_fixture.sh up --network NET [--ip ADDR] [--name NAME] [--dir DIR]
#       Makes a CA and a certificate for index.test and files.index.test in DIR (default: a new
#       directory under /tmp; the CA's key is deleted once the certificate is signed), starts
#       the index on the Docker network NET (which must exist) with the network aliases
#       index.test and files.index.test, at ADDR if given, and waits until it answers HTTPS.
#       Prints, one KEY=VALUE a line:
#         name=NAME  ip=ADDR  subnet=CIDR (NET's)  dir=DIR  ca=DIR/ca.pem
#         index_url=https://index.test/simple/  hosts=index.test files.index.test
#         allow=index.test:443 files.index.test:443 CIDR:443   (the allowlist the index needs:
#               the names resolve to a private address, which only an address entry opens)
#   index_fixture.sh pip-image --tag TAG [--packages "DEB ..."]
#       Builds TAG when missing or stale: the sandbox image (SANDBOX_IMAGE,
#       sandbox-mcp-python:latest) with Debian packages (default "python3-pip python3-requests
#       curl": pip, and the other clients the proxy settings must reach), made as
#       `images/build.sh --tag TAG --packages LIST` makes it (images/packages/Dockerfile, the
#       same labels) but labelled as a test image. Prints image=TAG.
#   index_fixture.sh trust --ca CA --from IMAGE --tag TAG
#       Builds TAG: IMAGE with CA added to the system's trust store (update-ca-certificates).
#       Debian's pip, requests, urllib (ssl's default context) and curl all read that store:
#       no REQUESTS_CA_BUNDLE, SSL_CERT_FILE or CURL_CA_BUNDLE needed. IMAGE's labels (its
#       packages) are kept. Prints image=TAG.
#   index_fixture.sh down [--name NAME] [--dir DIR] [--rmi IMAGE]...
#       Removes the container, DIR and the images named (the index image stays, for the next
#       run; `--rmi sandbox-mcp-egress-index:test` removes it too).
#
# Everything it creates carries the label $FIXTURE_LABEL (io.sandbox-mcp.test=egress-pip).
# Environment: INDEX_IMAGE (sandbox-mcp-egress-index:test), INDEX_BASE_IMAGE
# (sandbox-mcp-base:bookworm, images/build.sh makes it).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../../.." && pwd)"
label="${FIXTURE_LABEL:-io.sandbox-mcp.test=egress-pip}"
index_image="${INDEX_IMAGE:-sandbox-mcp-egress-index:test}"
base_image="${INDEX_BASE_IMAGE:-sandbox-mcp-base:bookworm}"

log() { printf '[index] %s\n' "$*" >&2; }
die() { printf 'index_fixture: %s\n' "$*" >&2; exit 1; }
usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }

cmd_image() {
  docker image inspect "$base_image" >/dev/null 2>&1 ||
    die "no $base_image: build it with images/build.sh"
  local want have
  want="$( { docker image inspect --format '{{.Id}}' "$base_image"
             cd "$here" && sha256sum Dockerfile build_index.py nginx.conf; } | sha256sum | cut -c1-16)"
  have="$(docker image inspect --format '{{ index .Config.Labels "io.sandbox-mcp.fixture-hash" }}' \
    "$index_image" 2>/dev/null || true)"
  if [[ "$have" != "$want" ]]; then
    log "building $index_image from $base_image (nginx-light and the wheels; a minute or two)"
    docker build --quiet --label "$label" --build-arg "BASE=$base_image" \
      --build-arg "FIXTURE_HASH=$want" -t "$index_image" "$here" >/dev/null
  fi
  echo "image=$index_image"
}

make_pki() {  # DIR: ca.pem; tls/server.pem, tls/server.key (and tls/ca.pem for the health check)
  local d="$1"
  mkdir -p "$d/tls"
  (
    umask 077
    cd "$d"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
      -keyout ca.key -out ca.pem -subj "/CN=sandbox-mcp egress test CA $(date +%s)-$$" \
      -addext "basicConstraints=critical,CA:TRUE" \
      -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
      -keyout tls/server.key -out server.csr -subj "/CN=index.test" 2>/dev/null
    printf '%s\n' "basicConstraints=CA:FALSE" "keyUsage=critical,digitalSignature" \
      "extendedKeyUsage=serverAuth" "subjectAltName=DNS:index.test,DNS:files.index.test" \
      "authorityKeyIdentifier=keyid" "subjectKeyIdentifier=hash" >server.ext
    openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
      -extfile server.ext -out tls/server.pem 2>/dev/null
    rm -f ca.key ca.srl server.csr server.ext  # throwaway: nothing else is ever signed
  )
  chmod 644 "$d/ca.pem" "$d/tls/server.pem"
  cp "$d/ca.pem" "$d/tls/ca.pem"
}

cmd_up() {
  local net="" ip="" name="index-$$" dir=""
  while (($#)); do
    case "$1" in
      --network) net="$2"; shift ;;
      --ip) ip="$2"; shift ;;
      --name) name="$2"; shift ;;
      --dir) dir="$2"; shift ;;
      *) usage ;;
    esac
    shift
  done
  [[ -n "$net" ]] || usage
  docker network inspect "$net" >/dev/null 2>&1 || die "no Docker network $net"
  cmd_image >/dev/null
  if [[ -z "$dir" ]]; then
    dir="$(mktemp -d /tmp/egress-index.XXXXXX)"
  else
    mkdir -p "$dir"
  fi
  dir="$(cd "$dir" && pwd)"
  make_pki "$dir"
  local args=(--name "$name" --label "$label" --network "$net"
              --network-alias index.test --network-alias files.index.test)
  [[ -n "$ip" ]] && args+=(--ip "$ip")
  docker create "${args[@]}" "$index_image" >/dev/null
  docker cp "$dir/tls/." "$name:/etc/index/tls/"
  docker start "$name" >/dev/null
  # Ready when a TLS client that trusts only the test CA gets the simple index for index.test.
  local probe='import socket, ssl, sys
ctx = ssl.create_default_context(cafile="/etc/index/tls/ca.pem")
for host in ("index.test", "files.index.test"):
    with socket.create_connection(("127.0.0.1", 443), timeout=2) as s:
        with ctx.wrap_socket(s, server_hostname=host) as t:
            t.sendall(b"GET /simple/sbxtestpkg/ HTTP/1.0\r\nHost: " + host.encode() + b"\r\n\r\n")
            head = t.recv(64)
    if not head.startswith(b"HTTP/1.1 200"):
        sys.exit("%s: %r" % (host, head))'
  local ok=0
  for _ in $(seq 150); do
    if docker exec "$name" python3 -c "$probe" >/dev/null 2>&1; then ok=1; break; fi
    [[ "$(docker inspect --format '{{.State.Running}}' "$name")" == true ]] || break
    sleep 0.2
  done
  if ((!ok)); then
    docker logs "$name" >&2 || true
    docker exec "$name" python3 -c "$probe" >&2 || true
    die "the index did not come up (container $name left for a look; index_fixture.sh down --name $name)"
  fi
  local addr subnet
  addr="$(docker inspect --format "{{ (index .NetworkSettings.Networks \"$net\").IPAddress }}" "$name")"
  subnet="$(docker network inspect --format '{{range .IPAM.Config}}{{.Subnet}} {{end}}' "$net" |
    tr ' ' '\n' | grep -m1 -E '^[0-9.]+/[0-9]+$' || true)"
  [[ -n "$subnet" ]] || subnet="$addr/32"
  printf '%s\n' "name=$name" "ip=$addr" "subnet=$subnet" "dir=$dir" "ca=$dir/ca.pem" \
    "index_url=https://index.test/simple/" "hosts=index.test files.index.test" \
    "allow=index.test:443 files.index.test:443 $subnet:443"
}

cmd_pip_image() {
  local tag="" list="python3-pip python3-requests curl"
  while (($#)); do
    case "$1" in
      --tag) tag="$2"; shift ;;
      --packages) list="$2"; shift ;;
      *) usage ;;
    esac
    shift
  done
  [[ -n "$tag" ]] || usage
  local sandbox="${SANDBOX_IMAGE:-sandbox-mcp-python:latest}" want have
  docker image inspect "$sandbox" >/dev/null 2>&1 || die "no $sandbox: build it with images/build.sh"
  list="$(tr ', ' '\n\n' <<<"$list" | sed '/^$/d' | LC_ALL=C sort -u | paste -sd' ' -)"
  want="$( { docker image inspect --format '{{.Id}}' "$sandbox"
             printf 'deb=%s\nlabel=%s\n' "$list" "$label"
             sha256sum <"$root/images/packages/Dockerfile"; } | sha256sum | cut -c1-16)"
  have="$(docker image inspect --format '{{ index .Config.Labels "io.sandbox-mcp.packages-hash" }}' \
    "$tag" 2>/dev/null || true)"
  if [[ "$have" != "$want" ]]; then
    log "building $tag from $sandbox with Debian packages: $list"
    docker build --quiet --label "$label" --build-arg "BASE=$sandbox" \
      --build-arg "DEBIAN_PACKAGES=$list" --build-arg "PACKAGES_HASH=$want" \
      -t "$tag" "$root/images/packages" >/dev/null
  fi
  echo "image=$tag"
}

cmd_trust() {
  local ca="" from="" tag=""
  while (($#)); do
    case "$1" in
      --ca) ca="$2"; shift ;;
      --from) from="$2"; shift ;;
      --tag) tag="$2"; shift ;;
      *) usage ;;
    esac
    shift
  done
  [[ -n "$ca" && -n "$from" && -n "$tag" ]] || usage
  [[ -f "$ca" ]] || die "no CA file $ca"
  docker image inspect "$from" >/dev/null 2>&1 || die "no image $from"
  local user ctx
  user="$(docker image inspect --format '{{.Config.User}}' "$from")"
  ctx="$(mktemp -d)"
  cp "$ca" "$ctx/sandbox-mcp-test-ca.crt"
  cat >"$ctx/Dockerfile" <<'EOF'
ARG BASE
FROM ${BASE}
ARG RESTORE_USER=0:0
USER 0:0
COPY sandbox-mcp-test-ca.crt /usr/local/share/ca-certificates/sandbox-mcp-test-ca.crt
RUN update-ca-certificates >/dev/null 2>&1 && \
    grep -q "$(sed -n 2p /usr/local/share/ca-certificates/sandbox-mcp-test-ca.crt)" \
      /etc/ssl/certs/ca-certificates.crt
USER ${RESTORE_USER}
EOF
  docker build --quiet --label "$label" --build-arg "BASE=$from" \
    --build-arg "RESTORE_USER=${user:-0:0}" -t "$tag" "$ctx" >/dev/null ||
    { rm -rf "$ctx"; die "building $tag failed"; }
  rm -rf "$ctx"
  echo "image=$tag"
}

cmd_down() {
  local name="" dir="" rmi=()
  while (($#)); do
    case "$1" in
      --name) name="$2"; shift ;;
      --dir) dir="$2"; shift ;;
      --rmi) rmi+=("$2"); shift ;;
      *) usage ;;
    esac
    shift
  done
  [[ -n "$name" ]] && docker rm -f "$name" >/dev/null 2>&1 || true
  if [[ -n "$dir" && -f "$dir/ca.pem" ]]; then rm -rf "$dir"; fi
  local image
  for image in "${rmi[@]}"; do docker rmi "$image" >/dev/null 2>&1 || true; done
}

(($#)) || usage
command="$1"
shift
case "$command" in
  image) cmd_image "$@" ;;
  up) cmd_up "$@" ;;
  pip-image) cmd_pip_image "$@" ;;
  trust) cmd_trust "$@" ;;
  down) cmd_down "$@" ;;
  *) usage ;;
esac
