#!/usr/bin/env python3
"""Credentials outside the sandbox, through the real server (docs/network.md, "Credentials"):
a pool's `network.inject` names a header for api.test and the server's environment variable that
holds its value; the code calls the API over HTTPS and the API receives the credential, while the
code never sees it: not in its environment, not in what the API reflects back (scrubbed to `*`),
not in the server's logs. A run that narrows api.test away is refused as any other host.

The pieces are real: the server, its proxy (the deployment CA sent over its stdin), a sandbox
image that trusts that CA (index/index_fixture.sh trust), and an HTTPS upstream of its own CA
(egress.upstream_ca_file) that echoes what it received and logs the Authorization header it got.

Needs: SANDBOX_MCP_BIN, SANDBOX_EGRESS_BIN, the engine, the host firewall, openssl.
"""
import json
import os
import signal
import socket
import subprocess
import tempfile
import time
import unittest
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
FIXTURE = os.path.join(HERE, "index", "index_fixture.sh")
LABEL = "io.sandbox-mcp.test=egress-inject"
TAG = f"eginj{os.getpid()}"
INSTANCE = f"test-egress-inject-{os.getpid()}"
SECRET = "Bearer sk-egress-test-0123456789abcdef"
SUBNET = "10.214.49"

UPSTREAM = r'''
import http.server, json, ssl
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        auth = self.headers.get("Authorization", "")
        print("AUTH " + auth, flush=True)
        body = json.dumps({"path": self.path, "reflect": auth,
                           "headers": dict(self.headers)}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("X-Reflect", auth)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
server = http.server.ThreadingHTTPServer(("0.0.0.0", 443), H)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain("/pki/api.pem", "/pki/api.key")
server.socket = context.wrap_socket(server.socket, server_side=True)
server.serve_forever()
'''


def run(*args, check=True, **kwargs):
    return subprocess.run(args, check=check, capture_output=True, text=True, **kwargs)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_pki(directory):
    """A deployment CA, an upstream CA and api.test's certificate from it (throwaway)."""
    def ca(name, subject):
        run("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
            "-nodes", "-keyout", f"{directory}/{name}.key", "-out", f"{directory}/{name}.pem",
            "-days", "2", "-subj", f"/CN={subject}",
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    ca("deploy-ca", "sandbox-mcp test deployment CA")
    ca("upstream-ca", "sandbox-mcp test upstream CA")
    run("openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
        "-keyout", f"{directory}/api.key", "-out", f"{directory}/api.csr", "-subj", "/CN=api.test")
    with open(f"{directory}/api.ext", "w") as f:
        f.write("subjectAltName=DNS:api.test\nextendedKeyUsage=serverAuth\n")
    run("openssl", "x509", "-req", "-in", f"{directory}/api.csr", "-CA",
        f"{directory}/upstream-ca.pem", "-CAkey", f"{directory}/upstream-ca.key",
        "-CAcreateserial", "-out", f"{directory}/api.pem", "-days", "2", "-extfile",
        f"{directory}/api.ext")
    for name in os.listdir(directory):
        os.chmod(f"{directory}/{name}", 0o644)  # the upstream runs as another user


class EgressInjectTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = None
        cls.pki = tempfile.mkdtemp(prefix="egress-inject-")
        os.chmod(cls.pki, 0o755)
        cls.net = f"{TAG}-up"
        cls.image = f"sandbox-mcp-python:{TAG}-ca"
        try:
            cls._set_up()
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def _set_up(cls):
        built = run("bash", f"{SOURCE}/images/egress/build.sh", os.environ["SANDBOX_EGRESS_BIN"],
                    check=False)
        if built.returncode != 0:
            raise RuntimeError("images/egress/build.sh: " + built.stdout + built.stderr)
        make_pki(cls.pki)
        run("docker", "network", "create", "--label", LABEL, "--subnet", f"{SUBNET}.0/24",
            cls.net)
        cls.api_ip = f"{SUBNET}.10"
        run("docker", "run", "-d", "--label", LABEL, "--name", f"{TAG}-api", "--network",
            cls.net, "--ip", cls.api_ip, "--network-alias", "api.test", "--read-only",
            "--user", "10001:10001", "--cap-drop", "ALL",
            "--sysctl", "net.ipv4.ip_unprivileged_port_start=0",
            "-v", f"{cls.pki}:/pki:ro", "--entrypoint", "python3",
            "sandbox-mcp-python:latest", "-c", UPSTREAM)
        run(FIXTURE, "trust", "--ca", f"{cls.pki}/deploy-ca.pem", "--from",
            "sandbox-mcp-python:latest", "--tag", cls.image)
        cls.port = free_port()
        cls.log_path = f"{cls.pki}/server.log"
        config = {
            "instance_id": INSTANCE,
            "sessions": {"warm": 0},
            "egress": {"upstream_network": cls.net,
                       "ca_cert_file": f"{cls.pki}/deploy-ca.pem",
                       "ca_key_file": f"{cls.pki}/deploy-ca.key",
                       "upstream_ca_file": f"{cls.pki}/upstream-ca.pem"},
            "pools": [
                {"name": "default", "min_idle": 0, "max_total": 1},
                {"name": "api", "image": cls.image, "min_idle": 1, "max_total": 2, "network": {
                    "mode": "allowlist", "allow": ["api.test:443", f"{cls.api_ip}:443"],
                    "inject": [{"host": "api.test", "header": "Authorization",
                                "value_env": "EGRESS_TEST_API_TOKEN"}]}},
            ],
        }
        cls.config_path = f"{cls.pki}/server.json"
        with open(cls.config_path, "w") as f:
            json.dump(config, f)
        cls.log = open(cls.log_path, "w")
        env = dict(os.environ, EGRESS_TEST_API_TOKEN=SECRET)
        cls.server = subprocess.Popen(
            [os.environ["SANDBOX_MCP_BIN"], "--listen", f"127.0.0.1:{cls.port}", "--config",
             cls.config_path, "--log-level", "debug"], stderr=cls.log,
            stdout=subprocess.DEVNULL, env=env)
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            if cls.server.poll() is not None:
                raise RuntimeError("the server exited: " + cls.server_log()[-3000:])
            try:
                health = json.load(urllib.request.urlopen(
                    f"http://127.0.0.1:{cls.port}/healthz", timeout=5))
                if any(p.get("name") == "api" and p.get("idle", 0) >= 1
                       for p in health.get("pools", [])):
                    return
            except OSError:
                pass
            time.sleep(0.5)
        raise RuntimeError("the pool 'api' never had an idle sandbox: " +
                           cls.server_log()[-3000:])

    @classmethod
    def server_log(cls):
        with open(cls.log_path) as f:
            return f.read()

    @classmethod
    def tearDownClass(cls):
        problems = []
        if cls.server is not None:
            cls.server.send_signal(signal.SIGTERM)
            try:
                cls.server.wait(timeout=120)
            except subprocess.TimeoutExpired:
                cls.server.kill()
                problems.append("the server did not stop within 120 s")
            cls.log.close()
            # Whatever the server logged, at debug, never holds the credential.
            if SECRET.split()[1] in cls.server_log():
                problems.append("the server's log holds the credential")
        for c in run("docker", "ps", "-aq", "--filter", f"label={LABEL}").stdout.split():
            run("docker", "rm", "-f", c, check=False)
        for c in run("docker", "ps", "-aq", "--filter",
                     f"label=io.sandbox-mcp.instance={INSTANCE}").stdout.split():
            run("docker", "rm", "-f", c, check=False)
        for n in run("docker", "network", "ls", "-q", "--filter",
                     f"label=io.sandbox-mcp.instance={INSTANCE}").stdout.split():
            run("docker", "network", "rm", n, check=False)
        run("docker", "network", "rm", cls.net, check=False)
        run("docker", "rmi", cls.image, check=False)
        run("rm", "-rf", cls.pki, check=False)
        if problems:
            raise AssertionError("; ".join(problems))

    def execute(self, code, **extra):
        req = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/v1/execute",
            data=json.dumps({"code": code, "pool": "api", "timeout_s": 60, **extra}).encode(),
            headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=180) as r:
            body = json.load(r)
        self.assertEqual(body["verdict"], "ok", body)
        return body

    CALL = r'''
import json, os, urllib.request, urllib.error
def call(url, headers=None):
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            return {"status": r.status, "body": r.read().decode(), "reflect": r.headers.get("X-Reflect")}
    except urllib.error.HTTPError as e:
        return {"status": e.code, "body": e.read().decode(), "reflect": None}
    except Exception as e:
        return {"status": 0, "body": type(e).__name__ + ": " + str(e), "reflect": None}
'''

    def upstream_saw(self):
        return run("docker", "logs", f"{TAG}-api").stdout

    def test_the_api_gets_the_credential_and_the_code_never_sees_it(self):
        body = self.execute(self.CALL + r'''
got = call("https://api.test/echo", {"Authorization": "Bearer code-made-up-token"})
environ = "\n".join(f"{k}={v}" for k, v in os.environ.items())
print(json.dumps({"got": got, "environ": environ}))''')
        self.assertNotIn(SECRET.split()[1], body["stdout"] + body["stderr"])
        out = json.loads(body["stdout"].strip().splitlines()[-1])
        got = out["got"]
        self.assertEqual(got["status"], 200, got)
        echoed = json.loads(got["body"])
        # The API received the credential (in place of the code's own header) ...
        self.assertIn("AUTH " + SECRET, self.upstream_saw())
        self.assertNotIn("code-made-up-token", self.upstream_saw())
        # ... and what it reflected came back as stars, in the body and in a header.
        self.assertEqual(echoed["reflect"], "*" * len(SECRET))
        self.assertEqual(got["reflect"], "*" * len(SECRET))
        self.assertNotIn("EGRESS_TEST_API_TOKEN", out["environ"])

    def test_a_run_that_narrows_the_host_away_is_refused_like_any_other(self):
        body = self.execute(
            self.CALL + 'print(json.dumps(call("https://api.test/echo")))',
            network={"allow": [f"{self.api_ip}:443"]})
        got = json.loads(body["stdout"].strip().splitlines()[-1])
        self.assertNotEqual(got["status"], 200, got)
        self.assertIn("403", got["body"])

    def test_plain_http_to_the_host_is_refused(self):
        body = self.execute(self.CALL + 'print(json.dumps(call("http://api.test:443/echo")))')
        got = json.loads(body["stdout"].strip().splitlines()[-1])
        self.assertEqual(got["status"], 403, got)


if __name__ == "__main__":
    unittest.main(verbosity=2)
