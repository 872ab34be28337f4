#!/usr/bin/env bash
# A smoke test of sandbox-egress in real containers (not in CTest yet): the proxy on an
# --internal network with a sandbox-like client, an HTTP upstream on a second network, and the
# policy pushed over the proxy's attached stdin. Shows: allowed, refused by name (403 naming the
# pool), an SNI mismatch (the access_denied alert), the null DNS answer, and the audit events.
#   tests/integration/egress/smoke.sh BUILD_DIR
# Everything it creates is labelled io.sandbox-mcp.test=true and removed; engine use is
# serialized with other users of the machine through /tmp/sbx-engine.lock.
set -euo pipefail
if [[ -z "${SBX_ENGINE_LOCKED:-}" ]]; then
  exec env SBX_ENGINE_LOCKED=1 flock /tmp/sbx-engine.lock "$0" "$@"
fi
build="${1:?usage: smoke.sh BUILD_DIR}"
binary="$build/src/egress/sandbox-egress"
[[ -x "$binary" ]] || { echo "smoke: no $binary" >&2; exit 2; }
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
id="egsmoke$$"
label=(--label io.sandbox-mcp.test=true)
work="$(mktemp -d)"
int_net="$id-int" up_net="$id-up"
proxy="$id-proxy" upstream="$id-upstream" client="$id-client"
image="sandbox-mcp-egress-smoke:$id"
cleanup() {
  exec 9>&- 2>/dev/null || true
  docker rm -f "$proxy" "$upstream" "$client" >/dev/null 2>&1 || true
  docker network rm "$int_net" "$up_net" >/dev/null 2>&1 || true
  docker rmi "$image" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

docker network create "${label[@]}" --internal --subnet 10.213.250.0/24 \
  -o com.docker.network.bridge.enable_icc=true "$int_net" >/dev/null
docker network create "${label[@]}" --subnet 10.213.251.0/24 "$up_net" >/dev/null
docker run -d "${label[@]}" --name "$upstream" --network "$up_net" --ip 10.213.251.10 \
  --network-alias upstream.test --entrypoint python3 sandbox-mcp-python:latest \
  -m http.server 8080 --bind 0.0.0.0 --directory /tmp >/dev/null

# The proxy: the binary alone on the base image (an image of this run's own, removed at the
# end), non-root, read-only, attached stdin.
mkdir "$work/context"
cp "$binary" "$work/context/sandbox-egress"
printf 'FROM sandbox-mcp-base:bookworm\nCOPY sandbox-egress /usr/local/bin/sandbox-egress\n' \
  >"$work/context/Dockerfile"
docker build -q "${label[@]}" -t "$image" "$work/context" >/dev/null
docker create -i "${label[@]}" --name "$proxy" --network "$int_net" --ip 10.213.250.2 \
  --read-only --cap-drop ALL --security-opt no-new-privileges --user 10001:10001 \
  --sysctl net.ipv4.ip_unprivileged_port_start=0 --entrypoint /usr/local/bin/sandbox-egress \
  "$image" --listen 0.0.0.0:3128 --dns-port 53 >/dev/null
docker network connect "$up_net" "$proxy"
mkfifo "$work/control"
docker start -ai "$proxy" <"$work/control" >"$work/events" 2>"$work/stderr" &
exec 9>"$work/control"
for _ in $(seq 100); do grep -q '"ready"' "$work/events" 2>/dev/null && break; sleep 0.1; done
grep -q '"ready"' "$work/events" || { cat "$work/stderr"; echo "smoke: the proxy did not start" >&2; exit 1; }
echo '{"op":"set","addr":"10.213.250.3","pool":"data","id":1,"policy":{"mode":"allowlist","allow":["upstream.test:8080","10.213.251.0/24:8080"],"deny":["evil.upstream.test"]}}' >&9
for _ in $(seq 50); do grep -q '"applied"' "$work/events" && break; sleep 0.1; done

docker run --rm -i "${label[@]}" --name "$client" --network "$int_net" --ip 10.213.250.3 \
  --read-only --cap-drop ALL --security-opt no-new-privileges --user 10001:10001 \
  --entrypoint python3 sandbox-mcp-python:latest - <"$here/smoke_client.py" | tee "$work/client"
echo '{"op":"clear"}' >&9
exec 9>&-
wait || true
echo "--- proxy events"
cat "$work/events"
fail=0
grep -q '^ok allowed' "$work/client" || fail=1
grep -q '^ok refused' "$work/client" || fail=1
grep -q '^ok sni' "$work/client" || fail=1
grep -q '^ok dns' "$work/client" || fail=1
grep -q '"verdict":"allowed"' "$work/events" || fail=1
grep -q '"ev":"dns"' "$work/events" || fail=1
if ((fail)); then echo "smoke: FAILED" >&2; cat "$work/stderr" >&2; exit 1; fi
echo "smoke: passed"
