#!/usr/bin/env python3
"""`pip install` through the real server (docs/network.md, "pip install"): a pool with a network
policy and `pip_index_url`, whose image has pip and trusts the test index's CA, installs from the
test package index (index/index_fixture.sh) through the server's own proxy, imports in the same
run, and the pool's next run does not have the package; an index outside the allowlist is
refused and the refusal reaches the audit log.

The index is on the server's egress.upstream_network. Needs: SANDBOX_MCP_BIN, the engine, the
host firewall (scripts/host.sh installs it), SANDBOX_EGRESS_BIN for the proxy's image
(images/egress/build.sh). Not timed: generous waits, no durations compared.
"""
import json
import os
import signal
import socket
import subprocess
import tempfile
import time
import unittest
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
FIXTURE = os.path.join(HERE, "index", "index_fixture.sh")
LABEL = "io.sandbox-mcp.test=egress-pip"
TAG = "egpipsrv%d" % os.getpid()
INSTANCE = "test-egress-pip-%d" % os.getpid()
PIP_IMAGE = "sandbox-mcp-python:test-egress-pip"  # cached between runs (index_fixture pip-image)
PACKAGES = ["curl", "python3-pip", "python3-requests"]  # its io.sandbox-mcp.packages label


def run(*args, check=True):
    return subprocess.run(args, check=check, capture_output=True, text=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def key_values(text):
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


class ServerPipTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = None
        cls.fixture = {}
        cls.bin = os.environ["SANDBOX_MCP_BIN"]
        cls.ca_image = "sandbox-mcp-python:%s-ca" % TAG
        cls.net = TAG + "-idx"
        try:
            cls._set_up()
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def _set_up(cls):
        built = run("bash", SOURCE + "/images/egress/build.sh", os.environ["SANDBOX_EGRESS_BIN"],
                    check=False)
        if built.returncode != 0:
            raise RuntimeError("images/egress/build.sh: " + built.stdout + built.stderr)
        check = run("bash", SOURCE + "/deploy/egress/host-firewall.sh", "check", check=False)
        if check.returncode != 0:
            raise RuntimeError("the host firewall is not installed (scripts/host.sh installs "
                               "it): " + check.stdout + check.stderr)
        # The index's network, the server's upstream network: outside egress.subnets.
        run("docker", "network", "create", "--label", LABEL, "--internal", "--subnet",
            "10.214.48.0/24", cls.net)
        cls.fixture = key_values(run(FIXTURE, "up", "--network", cls.net, "--ip", "10.214.48.10",
                                     "--name", TAG + "-index").stdout)
        run(FIXTURE, "pip-image", "--tag", PIP_IMAGE)
        run(FIXTURE, "trust", "--ca", cls.fixture["ca"], "--from", PIP_IMAGE, "--tag",
            cls.ca_image)
        cls.port = free_port()
        cls.log_path = tempfile.mktemp(prefix="egress-pip-server-", suffix=".log")
        config = {
            "instance_id": INSTANCE,
            "sessions": {"warm": 0},
            "egress": {"upstream_network": cls.net},
            "pools": [
                {"name": "default", "min_idle": 0, "max_total": 1},
                {"name": "pip", "image": cls.ca_image, "packages": PACKAGES,
                 "min_idle": 1, "max_total": 2, "network": {
                     "mode": "allowlist", "allow": cls.fixture["allow"].split(),
                     "pip_index_url": cls.fixture["index_url"]}},
            ],
        }
        cls.config_path = tempfile.mktemp(prefix="egress-pip-server-", suffix=".json")
        with open(cls.config_path, "w") as f:
            json.dump(config, f)
        cls.log = open(cls.log_path, "w")
        cls.server = subprocess.Popen(
            [cls.bin, "--listen", "127.0.0.1:%d" % cls.port, "--config", cls.config_path,
             "--log-level", "info"], stderr=cls.log, stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            if cls.server.poll() is not None:
                raise RuntimeError("the server exited: " + open(cls.log_path).read()[-3000:])
            try:
                health = json.load(urllib.request.urlopen(
                    "http://127.0.0.1:%d/healthz" % cls.port, timeout=5))
                if any(p.get("name") == "pip" and p.get("idle", 0) >= 1
                       for p in health.get("pools", [])):
                    return
            except OSError:
                pass
            time.sleep(0.5)
        raise RuntimeError("the pool 'pip' never had an idle sandbox: " +
                           open(cls.log_path).read()[-3000:])

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
        for c in run("docker", "ps", "-aq", "--filter",
                     "label=io.sandbox-mcp.instance=" + INSTANCE).stdout.split():
            run("docker", "rm", "-f", c, check=False)
        for n in run("docker", "network", "ls", "-q", "--filter",
                     "label=io.sandbox-mcp.instance=" + INSTANCE).stdout.split():
            run("docker", "network", "rm", n, check=False)
        run(FIXTURE, "down", "--name", TAG + "-index", "--dir", cls.fixture.get("dir", ""),
            "--rmi", cls.ca_image, check=False)
        run("docker", "network", "rm", cls.net, check=False)
        for path in (getattr(cls, "config_path", None), getattr(cls, "log_path", None)):
            if path and os.path.exists(path):
                os.unlink(path)
        if problems:
            raise AssertionError("; ".join(problems))

    def execute(self, code):
        request = json.dumps({"code": code, "pool": "pip", "timeout_s": 120}).encode()
        req = urllib.request.Request("http://127.0.0.1:%d/v1/execute" % self.port, data=request,
                                     headers={"Content-Type": "application/json"})
        return json.load(urllib.request.urlopen(req, timeout=300))

    def test_install_and_import_in_a_run_gone_for_the_next(self):
        body = self.execute(
            "import subprocess, sys\n"
            "r = subprocess.run([sys.executable, '-m', 'pip', 'install', 'sbxtestapp'],\n"
            "                   capture_output=True, text=True)\n"
            "print(r.stdout, r.stderr)\n"
            "import sbxtestapp\n"
            "print('MARKER', sbxtestapp.MARKER)\n")
        self.assertEqual(body["verdict"], "ok", body)
        self.assertIn("Successfully installed sbxtestapp-1.0 sbxtestpkg-1.1", body["stdout"])
        self.assertIn("MARKER sbxtestapp 1.0 with sbxtestpkg 1.1 from the test index",
                      body["stdout"])
        body = self.execute("import sbxtestapp\n")
        self.assertEqual(body["verdict"], "error", body)
        self.assertIn("No module named 'sbxtestapp'", body["stderr"])

    def test_an_index_outside_the_allowlist_is_refused_and_audited(self):
        body = self.execute(
            "import subprocess, sys\n"
            "r = subprocess.run([sys.executable, '-m', 'pip', 'install', '--retries', '0',\n"
            "                    '--index-url', 'https://elsewhere.test/simple/', 'sbxtestpkg'],\n"
            "                   capture_output=True, text=True)\n"
            "print('PIP_RC', r.returncode)\n")
        self.assertIn("PIP_RC 1", body["stdout"], body)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with open(self.log_path) as f:
                audit = [line for line in f if "elsewhere.test:443" in line]
            if audit:
                break
            time.sleep(0.5)
        self.assertTrue(audit, "no audit line for elsewhere.test:443")
        self.assertIn("refused", audit[0])


if __name__ == "__main__":
    unittest.main()
