#!/usr/bin/env python3
"""What the egress allowlist costs (issue 29 item 8, docs/network.md "Cost").

Two measurements, each against its baseline in the same run:

1. Downloads. An upstream HTTP(S) server (a container of this script on a bridge network of its
   own, the server's egress.upstream_network, with the name web.bench) serves a tiny file and a
   large one. The same client code runs, round after round, alternating which goes first:
   - "proxy": in a sandbox of a real server's allowlist pool (POST /v1/execute), where the pool's
     http_proxy/https_proxy send urllib through the pool's egress proxy (plain HTTP: an
     absolute-form request; HTTPS: a CONNECT tunnel);
   - "direct": in a plain container of the same image on the upstream's bridge network, no proxy
     (docker exec), with the sandbox's CPU and memory limits.
   The code times, per request, the first byte of the body (a new connection each time, as the
   proxy makes one upstream connection per request) and, for the large file, the whole body
   (MB/s, 10^6 bytes). HTTPS uses a throwaway self-signed certificate that the client does not
   verify (the cost measured is the tunnel's, not the PKI's).
2. Start-up. Servers with the same pool (recycle, min_idle K) with and without a network
   policy, alternating, several rounds: process start -> /healthz idle 1 (first idle sandbox)
   and idle K (full), each sandbox's start time (the pool's debug line "started sandbox ... in N
   ms", stamped on arrival), when the egress proxy was up (its info line), the engine calls
   (/metrics) and the time to stop; and, as the engine's own share, `docker start` of the image
   on no network against on an internal bridge network.
   Two rows take the proxied request apart: a TCP connect to the next hop (the proxy; the
   upstream) and the proxy's own 403 for a name outside the policy (no upstream involved).

Writes <out>.md (the report), <out>.json (every sample) and <out>.png (plot, drawn by
bench/plot_egress.py inside the sandbox image, which has matplotlib).

  python3 bench/egress.py            # the full run (≈ 3 min here)
  python3 bench/egress.py --quick    # smoke (≈ 1 min): 1 round, 8 MiB

It holds /tmp/sbx-engine.lock (flock) while it runs, like tests/integration/egress/smoke.sh, so
that other users' engine tests on a shared machine do not run during it; SBX_ENGINE_LOCKED=1
skips that (when the caller holds the lock already).

Needs: the engine, sandbox-mcp-python:latest, the host firewall (deploy/egress/host-firewall.sh
install), a built server and sandbox-egress (images/egress/build.sh builds the proxy's image from
it when that image is missing or stale). Everything it creates carries the label
io.sandbox-mcp.test=egress-bench (the server's own containers and networks: its instance id
egress-bench-*) and is removed at the end, also on failure.
"""
import argparse
import datetime
import fcntl
import json
import os
import platform
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
LABEL = "io.sandbox-mcp.test=egress-bench"
TAG = f"egb{os.getpid()}"
HOST = "web.bench"
ENGINE_LOCK = "/tmp/sbx-engine.lock"

# The upstream: both files in memory, HTTP on 8080, HTTPS on 8443, one thread per connection.
UPSTREAM = r'''
import http.server, os, ssl, sys, threading
LARGE = os.urandom(int(sys.argv[1]))
SMALL = b"x" * 100
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"
    def do_GET(self):
        body = LARGE if self.path == "/large" else SMALL
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        view = memoryview(body)
        for i in range(0, len(body), 1 << 20):
            self.wfile.write(view[i:i + (1 << 20)])
    def log_message(self, *args):
        pass
class S(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 64
plain = S(("0.0.0.0", 8080), H)
tls = S(("0.0.0.0", 8443), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain("/certs/cert.pem", "/certs/key.pem")
tls.socket = ctx.wrap_socket(tls.socket, server_side=True)
threading.Thread(target=tls.serve_forever, daemon=True).start()
print("ready", flush=True)
plain.serve_forever()
'''

# The client: the same code in the sandbox and in the plain container. PARAMS is replaced by a
# JSON literal. It prints one JSON line.
CLIENT = r'''
import json, os, socket, ssl, time, urllib.error, urllib.request
P = json.loads(PARAMS)
ctx = ssl._create_unverified_context()  # the upstream's throwaway self-signed certificate
opener = urllib.request.build_opener(urllib.request.HTTPSHandler(context=ctx))
buf = bytearray(1 << 20)
def get(url, whole):
    t0 = time.perf_counter()
    try:
        r = opener.open(url, timeout=120)
    except urllib.error.HTTPError as e:  # the proxy's own 403
        r = e
    with r:
        n = len(r.read(1))
        t1 = time.perf_counter()
        if whole:
            while True:
                k = r.readinto(buf)
                if not k:
                    break
                n += k
        else:
            n += len(r.read())
    t2 = time.perf_counter()
    return {"first_ms": (t1 - t0) * 1e3, "total_ms": (t2 - t0) * 1e3, "bytes": n,
            "status": r.status}
def connect(where):
    host, port = where.rsplit(":", 1)
    t0 = time.perf_counter()
    socket.create_connection((host, int(port)), timeout=20).close()
    return {"first_ms": (time.perf_counter() - t0) * 1e3}
if os.environ.get("http_proxy"):  # through the proxy, the next hop is the proxy
    P["urls"].setdefault("next_hop", os.environ["http_proxy"].split("//")[1].rstrip("/"))
out = {"proxy_env": os.environ.get("http_proxy", ""), "samples": {}}
get(P["urls"]["http"] + "/small", False)  # warm-up, not kept
for kind, base, path, whole, reps in P["plan"]:
    if base not in P["urls"]:
        continue
    out["samples"].setdefault(kind, []).extend(
        connect(P["urls"][base]) if path is None else get(P["urls"][base] + path, whole)
        for _ in range(reps))
print(json.dumps(out))
'''


def run(*args, check=True, **kwargs):
    return subprocess.run(args, check=check, capture_output=True, text=True, **kwargs)


def log(msg):
    print(f"[egress-bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pct(xs, p):
    """Nearest-rank percentile (p in 0..100) of the samples."""
    if not xs:
        return float("nan")
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, int(round(p / 100 * len(s) + 0.5)) - 1))]


def http_json(port, method, path, body=None, timeout=30):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, method=method,
                                 headers={"Content-Type": "application/json"} if data else {})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


def http_text(port, path, timeout=30):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=timeout) as r:
        return r.read().decode()


class Server:
    """A sandbox-mcp process with its own instance id; stderr lines stamped on arrival."""

    def __init__(self, binary, config, tag, log_level="info"):
        self.instance = f"egress-bench-{tag}-{os.getpid()}"
        config = dict(config, instance_id=self.instance)
        self.dir = tempfile.mkdtemp(prefix="egress-bench-")
        self.config_path = os.path.join(self.dir, "config.json")
        with open(self.config_path, "w") as f:
            json.dump(config, f)
        self.port = free_port()
        self.lines = []  # (seconds since spawn, line)
        self.t0 = time.monotonic()
        self.proc = subprocess.Popen(
            [binary, "--listen", f"127.0.0.1:{self.port}", "--config", self.config_path,
             "--log-level", log_level], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            text=True, bufsize=1)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stderr:
            self.lines.append((time.monotonic() - self.t0, line.rstrip("\n")))

    def since(self):
        return time.monotonic() - self.t0

    def health(self):
        try:
            return http_json(self.port, "GET", "/healthz", timeout=5)
        except (OSError, ValueError):
            return None

    def wait_idle(self, pool, idle, limit_s=300, interval=0.05):
        deadline = time.monotonic() + limit_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server {self.instance} exited: " + self.tail())
            h = self.health()
            if h:
                for p in h.get("pools", []):
                    if p["name"] == pool and p["idle"] >= idle:
                        return self.since()
            time.sleep(interval)
        raise RuntimeError(f"pool {pool} of {self.instance} never had {idle} idle: " + self.tail())

    def tail(self, n=30):
        return "\n".join(line for _, line in self.lines[-n:])

    def stop(self):
        """SIGTERM; seconds until the process ended."""
        if self.proc.poll() is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            return 0.0
        t = time.monotonic()
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        took = time.monotonic() - t
        self.reader.join(timeout=5)
        shutil.rmtree(self.dir, ignore_errors=True)
        return took

    def leftovers(self):
        sel = f"label=io.sandbox-mcp.instance={self.instance}"
        return (run("docker", "ps", "-aq", "--filter", sel).stdout.split(),
                run("docker", "network", "ls", "-q", "--filter", sel).stdout.split())


def remove_instance(instance):
    sel = f"label=io.sandbox-mcp.instance={instance}"
    for c in run("docker", "ps", "-aq", "--filter", sel, check=False).stdout.split():
        run("docker", "rm", "-f", c, check=False)
    for n in run("docker", "network", "ls", "-q", "--filter", sel, check=False).stdout.split():
        run("docker", "network", "rm", n, check=False)


def cleanup_labelled():
    for c in run("docker", "ps", "-aq", "--filter", f"label={LABEL}", check=False).stdout.split():
        run("docker", "rm", "-f", c, check=False)
    for n in run("docker", "network", "ls", "-q", "--filter", f"label={LABEL}",
                 check=False).stdout.split():
        run("docker", "network", "rm", n, check=False)


# ---------------------------------------------------------------- set-up


def make_cert(directory):
    run("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
        f"/CN={HOST}", "-addext", f"subjectAltName=DNS:{HOST}", "-keyout",
        os.path.join(directory, "key.pem"), "-out", os.path.join(directory, "cert.pem"))
    os.chmod(directory, 0o755)
    for f in ("key.pem", "cert.pem"):
        os.chmod(os.path.join(directory, f), 0o644)  # throwaway; the upstream runs as 10001


def start_upstream(image, large_bytes, certs):
    net = f"{TAG}-up"
    run("docker", "network", "create", "--label", LABEL, net)
    name = f"{TAG}-web"
    run("docker", "run", "-d", "--label", LABEL, "--name", name, "--network", net,
        "--network-alias", HOST, "--read-only", "--user", "10001:10001", "--cap-drop", "ALL",
        "--security-opt", "no-new-privileges", "-v", f"{certs}:/certs:ro", "--entrypoint",
        "python3", image, "-c", UPSTREAM, str(large_bytes))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if "ready" in run("docker", "logs", name, check=False).stdout:
            break
        time.sleep(0.2)
    else:
        raise RuntimeError("the upstream did not start: " +
                           run("docker", "logs", name, check=False).stderr[-2000:])
    ip = run("docker", "inspect", "-f",
             "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}", name).stdout.strip()
    return net, name, ip


def start_direct(image, net, cpus, memory_bytes):
    """The baseline client: the sandbox image on the upstream's bridge network, no proxy."""
    name = f"{TAG}-direct"
    run("docker", "run", "-d", "--label", LABEL, "--name", name, "--network", net,
        "--cpus", str(cpus), "--memory", str(memory_bytes), "--read-only", "--tmpfs", "/tmp",
        "--user", "10001:10001", "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
        "--entrypoint", "python3", image, "-c", "import time; time.sleep(10**8)")
    return name


# ---------------------------------------------------------------- downloads


def client_code(params):
    return CLIENT.replace("PARAMS", repr(json.dumps(params)), 1)


def run_proxy(server, params):
    body = http_json(server.port, "POST", "/v1/execute",
                     {"code": client_code(params), "pool": "net", "timeout_s": 280},
                     timeout=300)
    if body.get("verdict") != "ok":
        raise RuntimeError("sandbox run failed: " + json.dumps(body)[:3000])
    return json.loads(body["stdout"].strip().splitlines()[-1])


def run_direct(container, params):
    done = run("docker", "exec", container, "python3", "-c", client_code(params), check=False,
               timeout=300)
    if done.returncode != 0:
        raise RuntimeError("direct run failed: " + done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def egress_allowed(server):
    text = http_text(server.port, "/metrics")
    total = 0.0
    for line in text.splitlines():
        if (line.startswith("sandbox_egress_total{") and 'kind="conn"' in line
                and 'verdict="allowed"' in line and 'pool="net"' in line):
            total += float(line.rsplit(" ", 1)[1])
    return total


def downloads(o, net, upstream_ip, direct):
    """Rounds of the same plan through the proxy and directly, alternating which goes first."""
    limits = {"cpus": 1.0, "memory_bytes": 512 << 20}
    config = {
        "default_pool": "net",
        "sessions": {"enabled": False},
        "egress": {"upstream_network": net},
        "pools": [{"name": "net", "mode": "recycle", "min_idle": 1, "max_total": 1,
                   "limits": dict(limits, timeout_s=60, output_bytes=1 << 20),
                   "max_limits": {"timeout_s": 300},
                   "network": {"mode": "allowlist",
                               "allow": [f"{HOST}:8080,8443", f"{upstream_ip}:8080,8443"]}}],
    }
    server = Server(o.server, config, "dl")
    try:
        server.wait_idle("net", 1)
        urls = {"http": f"http://{HOST}:8080", "addr": f"http://{upstream_ip}:8080",
                "https": f"https://{HOST}:8443"}
        small = max(1, o.small_n // o.rounds)
        large = max(1, o.large_reps // o.rounds)
        # tcp_connect: a TCP connect and close to the next hop (the proxy; the upstream directly)
        # refused_403: a name outside the policy, answered by the proxy itself (proxy only).
        plan = [["tcp_connect", "next_hop", None, False, small],
                ["refused_403", "refused", "/small", False, small],
                ["first_byte_http", "http", "/small", False, small],
                ["first_byte_http_addr", "addr", "/small", False, small]]
        if not o.no_https:
            plan.append(["first_byte_https", "https", "/small", False, small])
        plan.append(["large_http", "http", "/large", True, large])
        if not o.no_https:
            plan.append(["large_https", "https", "/large", True, large])
        proxy_params = {"urls": dict(urls, refused="http://refused.bench:8080"), "plan": plan}
        direct_params = {"urls": dict(urls, next_hop=f"{upstream_ip}:8080"), "plan": plan}
        samples = {"proxy": {}, "direct": {}}
        envs = {}
        requests_per_round = 1 + sum(p[4] for p in plan if p[0] not in ("tcp_connect", "refused_403"))
        before = egress_allowed(server)
        for r in range(o.rounds):
            order = ["proxy", "direct"] if r % 2 == 0 else ["direct", "proxy"]
            for path in order:
                t = time.monotonic()
                got = (run_proxy(server, proxy_params) if path == "proxy" else
                       run_direct(direct, direct_params))
                envs[path] = got["proxy_env"]
                for kind, xs in got["samples"].items():
                    samples[path].setdefault(kind, []).extend(xs)
                lg = got["samples"].get("large_http", [])
                log(f"round {r + 1}/{o.rounds} {path}: {time.monotonic() - t:.1f} s, "
                    f"large http {[round(x['bytes'] / x['total_ms'] / 1e3, 1) for x in lg]} MB/s")
        time.sleep(1.0)  # the proxy's conn events arrive at each connection's end
        through_proxy = egress_allowed(server) - before
        return {"samples": samples, "proxy_env": envs, "plan": plan, "urls": proxy_params["urls"],
                "egress_allowed_conns": through_proxy, "proxy_conns": audit_conns(server),
                "requests_through_proxy": requests_per_round * o.rounds,
                "limits": limits}
    finally:
        server.stop()
        remove_instance(server.instance)


FIELD_RE = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|\S+)')


def audit_conns(server):
    """The proxy's own record of each connection (the server's audit line: target, bytes, ms)."""
    out = []
    for _, line in server.lines:
        if "[audit]" not in line or "kind=conn" not in line:
            continue
        fields = {k: v.strip('"') for k, v in FIELD_RE.findall(line)}
        out.append({"method": fields.get("method"), "target": fields.get("target"),
                    "verdict": fields.get("verdict"), "ms": int(fields.get("ms", -1)),
                    "bytes_down": int(fields.get("bytes_down", -1))})
    return out


def summarize_downloads(d, large_bytes):
    rows = {}
    for path in ("proxy", "direct"):
        for kind, xs in d["samples"][path].items():
            if kind.startswith("first_byte") or kind in ("tcp_connect", "refused_403"):
                v = [x["first_ms"] for x in xs]
                rows.setdefault(kind, {})[path] = {
                    "n": len(v), "p50": pct(v, 50), "p90": pct(v, 90), "p99": pct(v, 99),
                    "mean": statistics.fmean(v)}
            else:
                bad = [x["bytes"] for x in xs if x["bytes"] != large_bytes]
                if bad:
                    raise RuntimeError(f"{path} {kind}: short downloads {bad}")
                mbs = [x["bytes"] / x["total_ms"] / 1e3 for x in xs]
                first = [x["first_ms"] for x in xs]
                rows.setdefault(kind, {})[path] = {
                    "n": len(mbs), "median_mbs": statistics.median(mbs), "min_mbs": min(mbs),
                    "max_mbs": max(mbs), "first_ms_p50": pct(first, 50)}
    conns = d.get("proxy_conns", [])
    for label, keep in (("small_http", lambda c: c["method"] != "CONNECT" and c["bytes_down"] < 10000),
                        ("small_https", lambda c: c["method"] == "CONNECT" and c["bytes_down"] < 100000),
                        ("large_http", lambda c: c["method"] != "CONNECT" and c["bytes_down"] >= large_bytes),
                        ("large_https", lambda c: c["method"] == "CONNECT" and c["bytes_down"] >= large_bytes)):
        ms = [c["ms"] for c in conns if c["verdict"] == "allowed" and keep(c)]
        if ms:
            rows.setdefault("proxy_conn_ms", {})[label] = {"n": len(ms), "p50": pct(ms, 50),
                                                           "p90": pct(ms, 90)}
    return rows


# ---------------------------------------------------------------- start-up

START_RE = re.compile(r"pool '(?P<pool>[^']+)': started sandbox (?P<name>\S+) in (?P<ms>\d+) ms")
PROXY_UP_RE = re.compile(r"egress proxy of pool '(?P<pool>[^']+)' on engine .* is up")


def parse_histogram(text, pool):
    """sandbox_pool_container_start_seconds{pool=...,result="ok"}: buckets, sum, count."""
    out = {"buckets": {}, "sum": None, "count": None}
    for line in text.splitlines():
        if not line.startswith("sandbox_pool_container_start_seconds") or f'pool="{pool}"' not in line:
            continue
        if 'result="ok"' not in line:
            continue
        value = float(line.rsplit(" ", 1)[1])
        if line.startswith("sandbox_pool_container_start_seconds_bucket"):
            le = re.search(r'le="([^"]+)"', line).group(1)
            out["buckets"][le] = value
        elif line.startswith("sandbox_pool_container_start_seconds_sum"):
            out["sum"] = value
        elif line.startswith("sandbox_pool_container_start_seconds_count"):
            out["count"] = value
    return out


def parse_engine_ops(text):
    """sandbox_engine_request_duration_seconds by operation: {op: [seconds, calls]}."""
    out = {}
    for line in text.splitlines():
        for kind, i in (("_sum{", 0), ("_count{", 1)):
            if line.startswith("sandbox_engine_request_duration_seconds" + kind):
                op = re.search(r'operation="([^"]+)"', line).group(1)
                out.setdefault(op, [0.0, 0.0])[i] += float(line.rsplit(" ", 1)[1])
    return out


def startup_round(o, net, upstream_ip, policy, idle):
    pool = {"name": "p", "mode": "recycle", "min_idle": idle, "max_total": idle}
    if policy:
        pool["network"] = {"mode": "allowlist",
                           "allow": [f"{HOST}:8080,8443", f"{upstream_ip}:8080,8443"]}
    config = {"default_pool": "p", "sessions": {"enabled": False},
              "egress": {"upstream_network": net},
              "pools": [pool]}
    server = Server(o.server, config, "pol" if policy else "nopol", log_level="debug")
    try:
        # Listening: the first /healthz answer.
        listening = None
        deadline = time.monotonic() + 60
        while listening is None and time.monotonic() < deadline:
            if server.health() is not None:
                listening = server.since()
            else:
                time.sleep(0.02)
        first = server.wait_idle("p", 1)
        full = server.wait_idle("p", idle)
        metrics = http_text(server.port, "/metrics")
        hist = parse_histogram(metrics, "p")
        ops = parse_engine_ops(metrics)
    finally:
        stop_s = server.stop()
        left_c, left_n = server.leftovers()
        remove_instance(server.instance)
    starts = []
    proxy_up = None
    for t, line in server.lines:
        m = START_RE.search(line)
        if m and m.group("pool") == "p":
            ms = int(m.group("ms"))
            starts.append({"end_s": t, "ms": ms, "begin_s": t - ms / 1e3})
        m = PROXY_UP_RE.search(line)
        if m and proxy_up is None:
            proxy_up = t
    gateway_s = None
    if policy and proxy_up is not None and starts:
        gateway_s = proxy_up - min(s["begin_s"] for s in starts)
    for s in starts:
        # A start that began before the proxy was up waited for the network, the proxy and the
        # firewall probe (the gateway starts with the first sandbox of the pool).
        s["with_gateway"] = bool(policy and proxy_up is not None and s["begin_s"] < proxy_up)
    return {"policy": policy, "listening_s": listening, "first_idle_s": first,
            "full_s": full, "proxy_up_s": proxy_up, "gateway_s": gateway_s, "starts": starts, "histogram": hist, "engine_ops": ops,
            "stop_s": stop_s, "left_containers": left_c, "left_networks": left_n}


def engine_start(o):
    """The engine alone: `docker start` of the image on no network against on an internal bridge
    network with ICC off (as the pool's), alternating; the CLI's own overhead is in both."""
    internal = f"{TAG}-int"
    run("docker", "network", "create", "--label", LABEL, "--internal", "-o",
        "com.docker.network.bridge.enable_icc=false", internal)
    out = {"none": [], "bridge": []}
    try:
        for i in range(o.engine_reps):
            for network in (["none", internal] if i % 2 == 0 else [internal, "none"]):
                cid = run("docker", "create", "--label", LABEL, "--network", network,
                          "--entrypoint", "true", o.image).stdout.strip()
                t = time.monotonic()
                run("docker", "start", cid)
                out["none" if network == "none" else "bridge"].append(
                    (time.monotonic() - t) * 1e3)
                run("docker", "rm", "-f", cid, check=False)
    finally:
        run("docker", "network", "rm", internal, check=False)
    log(f"engine start ms: none {[round(x) for x in out['none']]}, "
        f"internal bridge {[round(x) for x in out['bridge']]}")
    return out


def startup(o, net, upstream_ip):
    rounds = {"policy": [], "none": [], "engine_start": engine_start(o)}
    for r in range(o.start_rounds):
        order = [True, False] if r % 2 == 0 else [False, True]
        for policy in order:
            got = startup_round(o, net, upstream_ip, policy, o.start_idle)
            rounds["policy" if policy else "none"].append(got)
            log(f"start-up round {r + 1}/{o.start_rounds} {'policy' if policy else 'none  '}: "
                f"first idle {got['first_idle_s']:.2f} s, {o.start_idle} idle {got['full_s']:.2f} s, "
                f"proxy up {got['proxy_up_s']}, starts {[s['ms'] for s in got['starts']]} ms, "
                f"stop {got['stop_s']:.2f} s")
            time.sleep(2)
    return rounds


def summarize_startup(rounds):
    out = {"paired": {}}
    # Round i of each set-up ran back to back: the ratio of each pair, then their median.
    for k in ("first_idle_s", "full_s", "stop_s"):
        pairs = [a[k] / b[k] for a, b in zip(rounds["policy"], rounds["none"]) if a[k] and b[k]]
        out["paired"][k] = {"ratios": pairs, "median": statistics.median(pairs) if pairs else None}
    for k, pick in (("starts_p50", lambda r: [s["ms"] for s in r["starts"]]),
                    ("later_p50", lambda r: [s["ms"] for s in
                                             sorted(r["starts"], key=lambda s: s["begin_s"])[2:]])):
        pairs = [pct(pick(a), 50) / pct(pick(b), 50)
                 for a, b in zip(rounds["policy"], rounds["none"]) if pick(a) and pick(b)]
        out["paired"][k] = {"ratios": pairs, "median": statistics.median(pairs) if pairs else None}
    for key in ("policy", "none"):
        rs = rounds[key]
        starts = [s for r in rs for s in r["starts"]]
        gateway = [s["ms"] for s in starts if s["with_gateway"]]
        steady = [s["ms"] for s in starts if not s["with_gateway"]]
        # Without a policy the first starts of a round (begun at once, with the server's own
        # start-up) are the counterpart of the policy pool's gateway starts.
        first_two = [s["ms"] for r in rs for s in sorted(r["starts"], key=lambda s: s["begin_s"])[:2]]
        later = [s["ms"] for r in rs for s in sorted(r["starts"], key=lambda s: s["begin_s"])[2:]]
        med = lambda k: statistics.median([r[k] for r in rs if r[k] is not None]) if any(
            r[k] is not None for r in rs) else None
        out[key] = {
            "rounds": len(rs),
            "listening_s": med("listening_s"), "first_idle_s": med("first_idle_s"),
            "full_s": med("full_s"), "proxy_up_s": med("proxy_up_s"), "stop_s": med("stop_s"),
            "first_idle_all": [r["first_idle_s"] for r in rs],
            "full_all": [r["full_s"] for r in rs],
            "starts_n": len(starts),
            "starts_p50": pct([s["ms"] for s in starts], 50),
            "starts_p90": pct([s["ms"] for s in starts], 90),
            "gateway_n": len(gateway), "gateway_p50": pct(gateway, 50),
            "gateway_max": max(gateway) if gateway else None,
            "steady_n": len(steady), "steady_p50": pct(steady, 50), "steady_p90": pct(steady, 90),
            "first_two_p50": pct(first_two, 50), "later_n": len(later),
            "later_p50": pct(later, 50), "later_p90": pct(later, 90),
            "hist_mean_ms": (1e3 * sum(r["histogram"]["sum"] or 0 for r in rs) /
                             max(1, sum(r["histogram"]["count"] or 0 for r in rs))),
            "left": sum(len(r["left_containers"]) + len(r["left_networks"]) for r in rs),
            "gateway_s": med("gateway_s"),
            "gateway_all": [r["gateway_s"] for r in rs],
        }
        ops = {}
        for r in rs:
            for op, (sec, calls) in r["engine_ops"].items():
                o = ops.setdefault(op, [0.0, 0.0])
                o[0] += sec
                o[1] += calls
        # Per round: calls and engine time; per call: mean ms.
        out[key]["engine_ops"] = {op: {"calls_per_round": c / len(rs), "s_per_round": t / len(rs),
                                       "mean_ms": 1e3 * t / c if c else None}
                                  for op, (t, c) in ops.items()}
    return out


# ---------------------------------------------------------------- report


def f1(x):
    return "-" if x is None or x != x else (f"{x:,.0f}" if abs(x) >= 1000 else
                                             f"{x:.1f}" if abs(x) >= 10 else f"{x:.2f}")


def ratio(a, b):
    return "-" if not a or not b else f"{a / b:.2f}"


def report(meta, dl, ds, su, o):
    L = []
    L.append(f"# Egress allowlist: what it costs, {meta['started_utc']} (bench/egress.py)")
    L.append("")
    L.append(f"Command: `{meta['command']}`. Machine: {meta['machine']}; load average at start "
             f"{meta['load_start']}, at end {meta['load_end']} (a shared, noisy 2-core VM: "
             "same-run ratios are what these figures support, not the absolute values). "
             f"Server {meta['server_commit']}, proxy image {meta['proxy_image']}.")
    L.append("")
    if ds is not None:
        L.append("## Downloads through the proxy against the same download without it")
        L.append("")
        L.append(f"Upstream: `python3 http.server` (threaded) in the sandbox image on a bridge network "
                 f"of its own, files held in memory: 100 B and {meta['large_mib']} MiB. Client: the "
                 "same urllib code, a new connection per request. proxy = a sandbox of an allowlist "
                 "pool (`POST /v1/execute`, the pool's `http_proxy`/`https_proxy`: HTTP as an "
                 "absolute-form request, HTTPS through `CONNECT`); direct = a container of the same "
                 "image on the upstream's network, no proxy, the sandbox's limits (1 CPU, 512 MiB). "
                 f"{o.rounds} rounds, alternating which path goes first. First byte = from `urlopen` "
                 "to the first body byte (connect, request, upstream's answer; through the proxy also "
                 "its name resolution and upstream connect; HTTPS: the TLS handshake too). MB/s = "
                 "10^6 bytes over the whole request. HTTPS: a throwaway self-signed certificate, not "
                 "verified by the client.")
        L.append("")
        L.append("| measure | path | n | p50 | p90 | p99 | ratio proxy/direct (p50) |")
        L.append("|---|---|---:|---:|---:|---:|---:|")
        names = {"first_byte_http": "first byte ms, HTTP by name",
                 "first_byte_http_addr": "first byte ms, HTTP by address",
                 "first_byte_https": "first byte ms, HTTPS by name (CONNECT + TLS)"}
        names.update({"tcp_connect": "TCP connect + close to the next hop (proxy / upstream), ms",
                      "refused_403": "the proxy's own 403 (a name outside the policy), first byte ms"})
        for kind, label in names.items():
            if kind not in ds:
                continue
            p, d = ds[kind]["proxy"], ds[kind].get("direct")
            if d is None:
                L.append(f"| {label} | proxy | {p['n']} | {f1(p['p50'])} | {f1(p['p90'])} | "
                         f"{f1(p['p99'])} | |")
                continue
            L.append(f"| {label} | proxy | {p['n']} | {f1(p['p50'])} | {f1(p['p90'])} | "
                     f"{f1(p['p99'])} | {ratio(p['p50'], d['p50'])} |")
            L.append(f"| | direct | {d['n']} | {f1(d['p50'])} | {f1(d['p90'])} | {f1(d['p99'])} | |")
        L.append("")
        L.append("| download of the large file | path | n | median MB/s | min-max MB/s | first byte p50 ms | ratio proxy/direct (median) |")
        L.append("|---|---|---:|---:|---:|---:|---:|")
        for kind, label in (("large_http", f"{meta['large_mib']} MiB, HTTP"),
                            ("large_https", f"{meta['large_mib']} MiB, HTTPS (CONNECT tunnel)")):
            if kind not in ds:
                continue
            p, d = ds[kind]["proxy"], ds[kind]["direct"]
            L.append(f"| {label} | proxy | {p['n']} | {f1(p['median_mbs'])} | "
                     f"{f1(p['min_mbs'])}-{f1(p['max_mbs'])} | {f1(p['first_ms_p50'])} | "
                     f"{ratio(p['median_mbs'], d['median_mbs'])} |")
            L.append(f"| | direct | {d['n']} | {f1(d['median_mbs'])} | "
                     f"{f1(d['min_mbs'])}-{f1(d['max_mbs'])} | {f1(d['first_ms_p50'])} | |")
        L.append("")
        L.append(f"Checks: the sandbox's `http_proxy` was `{dl['proxy_env']['proxy']}`, the direct "
                 f"container's `{dl['proxy_env']['direct'] or '(unset)'}`; the proxy counted "
                 f"{dl['egress_allowed_conns']:.0f} allowed connections "
                 f"(`sandbox_egress_total`) for the {dl['requests_through_proxy']} requests the "
                 "sandbox made; every large download had its full length.")
        L.append("")
        pc = ds.get("proxy_conn_ms")
        if pc:
            names = {"small_http": "100 B over HTTP", "small_https": "100 B over HTTPS (tunnel)",
                     "large_http": f"{meta['large_mib']} MiB over HTTP",
                     "large_https": f"{meta['large_mib']} MiB over HTTPS (tunnel)"}
            L.append("The proxy's own view of the same connections (its `conn` events, whole "
                     "milliseconds from accept to close, as the audit log has them), p50 / p90: " +
                     "; ".join(f"{names[k]} {f1(v['p50'])} / {f1(v['p90'])} ms (n {v['n']})"
                               for k, v in pc.items()) + ".")
            L.append("")
    if su is not None:
        p, n = su["policy"], su["none"]
        L.append("## Start-up: a pool with a policy against the same pool without")
        L.append("")
        L.append(f"Each round starts a server with one pool (recycle, min_idle {o.start_idle}, "
                 "max_concurrent_starts 2, the default) with or without `network` (allowlist), "
                 f"everything else the same; {o.start_rounds} rounds each, alternating which goes "
                 "first; medians over rounds. Per-sandbox starts are the pool's own measure (its "
                 "debug line `started sandbox ... in N ms`, also the histogram "
                 "`sandbox_pool_container_start_seconds`): container create, start, the harness "
                 "ready, and with a policy the network join and the proxy's admission. The first "
                 "starts of a policy pool also wait for its gateway (network, proxy container, "
                 "firewall probe), which starts with the pool's first sandbox: those are the starts "
                 "begun before the proxy's `is up` line.")
        L.append("")
        pr = su["paired"]
        pm = lambda k: "-" if pr[k]["median"] is None else f"{pr[k]['median']:.2f}"
        es = su.get("engine_start")
        L.append("| measure | with policy | without | ratio of medians | median of paired ratios |")
        L.append("|---|---:|---:|---:|---:|")
        L.append(f"| process start -> listening (s) | {f1(p['listening_s'])} | {f1(n['listening_s'])} | {ratio(p['listening_s'], n['listening_s'])} | |")
        L.append(f"| process start -> first idle sandbox (s) | {f1(p['first_idle_s'])} | {f1(n['first_idle_s'])} | {ratio(p['first_idle_s'], n['first_idle_s'])} | {pm('first_idle_s')} |")
        L.append(f"| process start -> {o.start_idle} idle (s) | {f1(p['full_s'])} | {f1(n['full_s'])} | {ratio(p['full_s'], n['full_s'])} | {pm('full_s')} |")
        L.append(f"| the gateway: first sandbox's start -> proxy up (network, proxy container, firewall probe; s) | {f1(p['gateway_s'])} ({', '.join(f1(x) for x in p['gateway_all'])}) | - | | |")
        L.append(f"| per-sandbox start, all (ms, p50 / p90; n) | {f1(p['starts_p50'])} / {f1(p['starts_p90'])}; {p['starts_n']} | {f1(n['starts_p50'])} / {f1(n['starts_p90'])}; {n['starts_n']} | {ratio(p['starts_p50'], n['starts_p50'])} | {pm('starts_p50')} |")
        L.append(f"| per-sandbox start, the first two of a server (with a policy: waited for the gateway; ms, p50; n) | {f1(p['first_two_p50'])}; {p['gateway_n']} | {f1(n['first_two_p50'])} | {ratio(p['first_two_p50'], n['first_two_p50'])} | |")
        L.append(f"| per-sandbox start, steady state: the later ones (ms, p50 / p90; n) | {f1(p['later_p50'])} / {f1(p['later_p90'])}; {p['later_n']} | {f1(n['later_p50'])} / {f1(n['later_p90'])}; {n['later_n']} | {ratio(p['later_p50'], n['later_p50'])} | {pm('later_p50')} |")
        L.append(f"| per-sandbox start, the histogram's mean (ms) | {f1(p['hist_mean_ms'])} | {f1(n['hist_mean_ms'])} | {ratio(p['hist_mean_ms'], n['hist_mean_ms'])} | |")
        L.append(f"| SIGTERM -> exit, containers (and network) removed (s) | {f1(p['stop_s'])} | {f1(n['stop_s'])} | {ratio(p['stop_s'], n['stop_s'])} | {pm('stop_s')} |")
        if es:
            L.append(f"| the engine alone: `docker start` of the image, internal bridge (ICC off) against no network (ms, p50; n) | {f1(es['bridge_p50'])}; {es['n']} | {f1(es['none_p50'])}; {es['n']} | {ratio(es['bridge_p50'], es['none_p50'])} | |")
        L.append("")
        ops = sorted(set(p["engine_ops"]) | set(n["engine_ops"]),
                     key=lambda op: -max(p["engine_ops"].get(op, {}).get("s_per_round", 0),
                                         n["engine_ops"].get(op, {}).get("s_per_round", 0)))
        L.append("Engine calls per round (the server's `sandbox_engine_request_duration_seconds`; "
                 "calls, engine time in s, mean ms per call), the ten that took longest:")
        L.append("")
        L.append("| operation | with policy: calls / s / ms each | without: calls / s / ms each |")
        L.append("|---|---:|---:|")
        cell = lambda e: ("-" if not e else
                          f"{e['calls_per_round']:.1f} / {e['s_per_round']:.2f} / {f1(e['mean_ms'])}")
        for op in ops[:10]:
            L.append(f"| `{op}` | {cell(p['engine_ops'].get(op))} | {cell(n['engine_ops'].get(op))} |")
        L.append("")
        L.append(f"Rounds (first idle / {o.start_idle} idle, s): with policy "
                 f"{', '.join(f'{a:.2f}/{b:.2f}' for a, b in zip(p['first_idle_all'], p['full_all']))}; "
                 f"without {', '.join(f'{a:.2f}/{b:.2f}' for a, b in zip(n['first_idle_all'], n['full_all']))}. "
                 f"Left behind by the servers: {p['left'] + n['left']} containers and networks.")
        L.append("")
    if meta.get("plot"):
        L.append(f"![first byte, throughput and starts]({os.path.basename(meta['plot'])})")
        L.append("")
    return "\n".join(L)


def server_commit(binary):
    """The commit of the tree the binary sits in (its build directory), and the binary's time."""
    where = os.path.dirname(os.path.abspath(binary))
    commit = run("git", "-C", where, "rev-parse", "--short", "HEAD", check=False).stdout.strip()
    built = datetime.datetime.fromtimestamp(os.path.getmtime(binary), datetime.timezone.utc)
    return f"{binary} (tree at {commit or '?'}, built {built.strftime('%Y-%m-%d %H:%M UTC')})"


def plot(image, json_path, png_path):
    """bench/plot_egress.py inside the sandbox image (matplotlib), the results directory mounted."""
    out_dir = os.path.dirname(os.path.abspath(png_path))
    done = run("docker", "run", "--rm", "--label", LABEL, "--network", "none", "--user", "0:0",
               "--read-only", "--tmpfs", "/tmp", "-e", "MPLCONFIGDIR=/tmp",
               "-v", f"{ROOT}/bench:/bench:ro", "-v", f"{out_dir}:/out",
               "--entrypoint", "python3", image, "/bench/plot_egress.py",
               "/out/" + os.path.basename(json_path), "/out/" + os.path.basename(png_path),
               check=False)
    if done.returncode != 0:
        log("plot failed: " + done.stderr[-2000:])
        return None
    return png_path


def lock_engine():
    """Holds /tmp/sbx-engine.lock until the process ends (skipped with SBX_ENGINE_LOCKED=1)."""
    if os.environ.get("SBX_ENGINE_LOCKED"):
        return
    fd = os.open(ENGINE_LOCK, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        log(f"waiting for {ENGINE_LOCK} (another engine user holds it; if you hold it yourself, "
            "e.g. flock ... python3 bench/egress.py, set SBX_ENGINE_LOCKED=1)")
        fcntl.flock(fd, fcntl.LOCK_EX)
    globals()["_engine_lock_fd"] = fd


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--server", default=os.path.join(ROOT, "build/src/server/sandbox-mcp"))
    ap.add_argument("--egress-bin", default=os.path.join(ROOT, "build/src/egress/sandbox-egress"))
    ap.add_argument("--image", default=os.environ.get("SANDBOX_IMAGE", "sandbox-mcp-python:latest"))
    ap.add_argument("--rounds", type=int, default=8, help="download rounds (alternating)")
    ap.add_argument("--small-n", type=int, default=40, help="first-byte requests per path and kind")
    ap.add_argument("--large-reps", type=int, default=16, help="large downloads per path and kind")
    ap.add_argument("--large-mib", type=int, default=64)
    ap.add_argument("--no-https", action="store_true")
    ap.add_argument("--start-rounds", type=int, default=6)
    ap.add_argument("--start-idle", type=int, default=6)
    ap.add_argument("--engine-reps", type=int, default=8,
                    help="docker start on no network / an internal bridge, each")
    ap.add_argument("--skip-downloads", action="store_true")
    ap.add_argument("--skip-startup", action="store_true")
    ap.add_argument("--quick", action="store_true", help="1 round, 8 MiB, 2 start-up rounds of 3")
    ap.add_argument("--out", default="", help="path without extension (default "
                    "bench/results/<UTC date-time>-egress)")
    o = ap.parse_args()
    lock_engine()
    if o.quick:
        o.rounds, o.small_n, o.large_reps, o.large_mib = 1, 10, 2, 8
        o.start_rounds, o.start_idle, o.engine_reps = 2, 3, 2
    stamp = datetime.datetime.now(datetime.timezone.utc)
    out = o.out or os.path.join(ROOT, "bench/results", stamp.strftime("%Y-%m-%d-%H%M") + "-egress")
    large_bytes = o.large_mib << 20

    if run("bash", f"{ROOT}/deploy/egress/host-firewall.sh", "check", check=False).returncode:
        sys.exit("the host firewall is not installed: deploy/egress/host-firewall.sh install")
    built = run("bash", f"{ROOT}/images/egress/build.sh", o.egress_bin, check=False)
    if built.returncode:
        sys.exit("images/egress/build.sh: " + built.stderr[-2000:])
    load_start = open("/proc/loadavg").read().split()[:3]
    meta = {
        "started_utc": stamp.strftime("%Y-%m-%d %H:%M UTC"),
        "command": "python3 bench/egress.py" + ("".join(" " + a for a in sys.argv[1:])),
        "machine": f"{os.cpu_count()} cores, Linux {platform.release()}, Docker "
                   f"{run('docker', 'version', '--format', '{{.Server.Version}}').stdout.strip()}",
        "load_start": " ".join(load_start),
        "server_commit": server_commit(o.server),
        "proxy_image": run("docker", "image", "inspect", "-f", "{{.Id}}",
                           "sandbox-mcp-egress:latest").stdout.strip()[7:19],
        "large_mib": o.large_mib,
        "settings": vars(o),
    }
    log(f"load average {meta['load_start']}; results -> {out}.md/.json/.png")
    certs = tempfile.mkdtemp(prefix="egress-bench-certs-")
    dl = ds = su_rounds = su = None
    try:
        make_cert(certs)
        net, _, upstream_ip = start_upstream(o.image, large_bytes, certs)
        log(f"upstream {HOST} at {upstream_ip} on {net}")
        if not o.skip_downloads:
            direct = start_direct(o.image, net, 1.0, 768 << 20)
            dl = downloads(o, net, upstream_ip, direct)
            ds = summarize_downloads(dl, large_bytes)
        if not o.skip_startup:
            su_rounds = startup(o, net, upstream_ip)
            su = summarize_startup(su_rounds)
            e = su_rounds["engine_start"]
            su["engine_start"] = {"n": len(e["none"]), "none_p50": pct(e["none"], 50),
                                  "bridge_p50": pct(e["bridge"], 50)}
    finally:
        cleanup_labelled()
        shutil.rmtree(certs, ignore_errors=True)
    meta["load_end"] = " ".join(open("/proc/loadavg").read().split()[:3])
    result = {"meta": meta, "downloads": dl, "downloads_summary": ds, "startup": su_rounds,
              "startup_summary": su}
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out + ".json", "w") as f:
        json.dump(result, f, indent=1)
    meta["plot"] = plot(o.image, out + ".json", out + ".png")
    cleanup_labelled()
    text = report(meta, dl, ds, su, o)
    with open(out + ".md", "w") as f:
        f.write(text + "\n")
    with open(out + ".json", "w") as f:
        json.dump(result, f, indent=1)
    print(text)


if __name__ == "__main__":
    main()
