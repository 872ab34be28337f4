#!/usr/bin/env python3
"""`pip install` through the egress proxy, without the server (docs/network.md, "pip install").

In real containers: the test package index (index/index_fixture.sh: nginx, HTTPS under a test CA)
on an internal network of its own; the proxy, sandbox-egress, on that network and on an internal
sandbox network, its policy pushed as a control line on its attached stdin; and the real harness
(tests/harness/drive.py's Session: the bootstrap, the packed harness, the hardened container) in
a sandbox-like container of an image with pip, curl and requests that trusts the test CA, with
the environment the server gives an allowlist pool's sandboxes (the proxy in http_proxy,
https_proxy and their upper-case forms, PIP_INDEX_URL). Checks:

- a pool run: `pip install sbxtestapp` (which requires sbxtestpkg: both come from the index, the
  files from a second name) and then `import sbxtestapp` in the same run; the installed console
  script runs; urllib, requests and curl reach the index through the proxy with the system's
  trust store, nothing set by the code;
- the next run of the same sandbox does not have the package;
- `pip install` from an index not in the allowlist fails, and the proxy's `conn` event says
  refused (pip itself says little);
- a session: what one cell installs, a later cell imports (and a new interpreter too);
- without per-run namespaces (isolate false): install and import in a run, gone for the next.

Not timed: every wait is generous, nothing compares durations.

    pip_install_test.py --egress BUILD/src/egress/sandbox-egress [--keep] [-v]

Needs the Docker engine and sandbox-mcp-python:latest and sandbox-mcp-base:bookworm
(images/build.sh); builds the rest (the index image and the test pip image once, then cached;
the CA-trusting image and the proxy's image per run, removed). Everything it creates is labelled
io.sandbox-mcp.test=egress-pip and removed at the end (--keep: left for a look). Engine use is
serialized through /tmp/sbx-engine.lock.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "harness"))
import drive  # noqa: E402

FIXTURE = os.path.join(HERE, "index", "index_fixture.sh")
LABEL = "io.sandbox-mcp.test=egress-pip"
PIP_IMAGE = "sandbox-mcp-python:test-egress-pip"  # cached between runs (index_fixture pip-image)
# Outside the server's egress.subnets default (10.213.0.0/16): a server running beside the test
# never competes for these.
INDEX_NET, INDEX_IP = "10.214.46.0/24", "10.214.46.10"
SANDBOX_NET, PROXY_IP = "10.214.47.0/24", "10.214.47.2"
POOL_IP, SESSION_IP, PROCESS_IP = "10.214.47.3", "10.214.47.4", "10.214.47.5"
PROXY_URL = "http://%s:3128" % PROXY_IP
RUN_LIMITS = {"timeout_s": 180}  # pip on a loaded 2-core machine: seconds; never the bound here


def sh(*cmd, check=True, capture=True):
    r = subprocess.run(list(cmd), stdout=subprocess.PIPE if capture else None,
                       stderr=subprocess.PIPE if capture else None, text=True)
    if check and r.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (" ".join(cmd), r.returncode,
                                                   (r.stderr or "").strip()[-2000:]))
    return r.stdout or ""


def key_values(text):
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


class Proxy:
    """sandbox-egress in a container with attached stdin (control lines) and stdout (events)."""

    def __init__(self, name):
        self.name = name
        self.events = []
        self.cond = threading.Condition()
        self.proc = subprocess.Popen(["docker", "start", "-ai", name], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        threading.Thread(target=self._read, daemon=True).start()
        self.stderr = []
        threading.Thread(target=lambda: self.stderr.extend(self.proc.stderr),
                         daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            try:
                ev = json.loads(line)
            except ValueError:
                ev = {"ev": "unparsed", "line": line}
            with self.cond:
                self.events.append(ev)
                self.cond.notify_all()

    def wait(self, pred, what, timeout=60):
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for ev in self.events:
                    if pred(ev):
                        return ev
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    raise RuntimeError("proxy: no %s; events %s; stderr %s"
                                       % (what, self.events[-20:], self.stderr[-10:]))
                self.cond.wait(min(left, 1))

    def send(self, obj):
        self.proc.stdin.write(json.dumps(obj) + "\n")
        self.proc.stdin.flush()

    def close(self):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def conns(self, target):
        with self.cond:
            return [e for e in self.events if e.get("ev") == "conn" and e.get("target") == target]


class Check:
    def __init__(self):
        self.failures = []

    def __call__(self, ok, message, detail=""):
        print("%s %s" % ("ok  " if ok else "FAIL", message))
        if not ok:
            if detail:
                print("     " + str(detail).replace("\n", "\n     "))
            self.failures.append(message)


def lines_with(text, prefix):
    return [line[len(prefix):].strip() for line in text.splitlines() if line.startswith(prefix)]


INSTALL_AND_USE = r"""
import json, os, subprocess, sys
print("ENV " + json.dumps({k: os.environ.get(k) for k in (
    "https_proxy", "HTTPS_PROXY", "PIP_INDEX_URL", "PYTHONUSERBASE", "PIP_BREAK_SYSTEM_PACKAGES",
    "no_proxy", "REQUESTS_CA_BUNDLE", "SSL_CERT_FILE", "CURL_CA_BUNDLE", "PIP_CERT")}))
try:
    import sbxtestapp
    print("BEFORE present")
except ImportError:
    print("BEFORE absent")
r = subprocess.run([sys.executable, "-m", "pip", "install", "sbxtestapp"], capture_output=True,
                   text=True)
print(r.stdout)
print(r.stderr, file=sys.stderr)
print("PIP_RC %d" % r.returncode)
import sbxtestapp, sbxtestpkg
print("MARKER " + sbxtestapp.MARKER)
print("FILE " + sbxtestpkg.__file__)
r = subprocess.run(["sbxtestpkg"], capture_output=True, text=True)
print("SCRIPT %d %s %s" % (r.returncode, r.stdout.strip(), r.stderr.strip()[-300:]))
import urllib.request
with urllib.request.urlopen("https://index.test/simple/", timeout=60) as u:
    print("URLLIB %d" % u.status)
import requests
print("REQUESTS %d" % requests.get(
    "https://files.index.test/packages/sbxtestpkg-1.0-py3-none-any.whl", timeout=60).status_code)
r = subprocess.run(["curl", "-sS", "--max-time", "60", "-o", "/dev/null", "-w", "%{http_code}",
                    "https://index.test/simple/sbxtestapp/"], capture_output=True, text=True)
print("CURL %s %s" % (r.stdout, r.stderr.strip()))
"""

NEXT_RUN = r"""
import os, site, sys
d = [p for p in sys.path if p.startswith(os.environ["PYTHONUSERBASE"] + "/")]
print("SITE %s %s" % (d, sorted(os.listdir(d[0])) if d else None))
try:
    import sbxtestpkg
    print("IMPORT present " + sbxtestpkg.__file__)
except ImportError as e:
    print("IMPORT absent " + str(e))
"""

REFUSED = r"""
import subprocess, sys, urllib.request
r = subprocess.run([sys.executable, "-m", "pip", "install", "--retries", "0", "--timeout", "60",
                    "--index-url", "https://elsewhere.test/simple/", "sbxtestpkg"],
                   capture_output=True, text=True)
print(r.stdout)
print(r.stderr, file=sys.stderr)
print("PIP_RC %d" % r.returncode)
try:
    urllib.request.urlopen("https://elsewhere.test/simple/", timeout=60)
    print("URLLIB reached")
except OSError as e:
    print("URLLIB %s" % e)
"""

SESSION_INSTALL = r"""
import subprocess, sys
r = subprocess.run([sys.executable, "-m", "pip", "install", "sbxtestpkg==1.0"],
                   capture_output=True, text=True)
print(r.stdout)
print(r.stderr, file=sys.stderr)
print("PIP_RC %d" % r.returncode)
"""

PROCESS_INSTALL = r"""
import subprocess, sys
r = subprocess.run([sys.executable, "-m", "pip", "install", "sbxtestpkg"], capture_output=True,
                   text=True)
print(r.stdout)
print(r.stderr, file=sys.stderr)
print("PIP_RC %d" % r.returncode)
import sbxtestpkg
print("MARKER " + sbxtestpkg.MARKER)
"""

SESSION_USE = r"""
import subprocess, sys
import sbxtestpkg
print("MARKER " + sbxtestpkg.MARKER)
r = subprocess.run([sys.executable, "-c", "import sbxtestpkg; print(sbxtestpkg.__version__)"],
                   capture_output=True, text=True)
print("CHILD %d %s %s" % (r.returncode, r.stdout.strip(), r.stderr.strip()[-300:]))
r = subprocess.run([sys.executable, "-m", "pip", "list", "--user"], capture_output=True, text=True)
print("LIST " + " ".join(r.stdout.split()))
"""


def sandbox_opts(image, name, network, ip, mode, isolate=True):
    """drive.Session's options: the hardened container on the sandbox network at ip, with the
    environment the server gives an allowlist pool's sandboxes."""
    env = ["-e", "http_proxy=" + PROXY_URL, "-e", "https_proxy=" + PROXY_URL,
           "-e", "HTTP_PROXY=" + PROXY_URL, "-e", "HTTPS_PROXY=" + PROXY_URL,
           "-e", "PIP_INDEX_URL=https://index.test/simple/"]
    return types.SimpleNamespace(
        image=image, network=network, label=LABEL, mode=mode,
        isolate=isolate, config="{}", no_run_seccomp=False, harness=None,
        container_seccomp=drive.POLICY if os.path.exists(drive.POLICY) else "unconfined",
        docker_arg=["--name", name, "--ip", ip, "--memory", "512m"] + env)


def run(session, code, verbose):
    res = session.run(code, limits=RUN_LIMITS, timeout=RUN_LIMITS["timeout_s"] + 60)
    out = res.stdout.decode("utf-8", "replace")
    err = res.stderr.decode("utf-8", "replace")
    if verbose:
        print("---- stdout\n" + out + "---- stderr\n" + err + "---- verdict %s" % res.verdict)
    return res, out, err


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--egress", required=True, help="the sandbox-egress binary")
    ap.add_argument("--keep", action="store_true", help="leave everything for a look")
    ap.add_argument("-v", "--verbose", action="store_true")
    opts = ap.parse_args()
    if not os.environ.get("SBX_ENGINE_LOCKED"):
        os.environ["SBX_ENGINE_LOCKED"] = "1"
        os.execvp("flock", ["flock", "/tmp/sbx-engine.lock", sys.executable] + sys.argv)
    if not os.access(opts.egress, os.X_OK):
        print("pip_install_test: no executable %s" % opts.egress, file=sys.stderr)
        return 2

    ident = "egpip%d" % os.getpid()
    index_net, sandbox_net = ident + "-idx", ident + "-sbx"
    index_name, proxy_name = ident + "-index", ident + "-proxy"
    pool_name, session_name = ident + "-pool", ident + "-session"
    process_name = ident + "-process"
    ca_image, proxy_image = "sandbox-mcp-python:%s-ca" % ident, "sandbox-mcp-egress:%s" % ident
    work = tempfile.mkdtemp(prefix="egress-pip-test.")
    check = Check()
    proxy = None
    sessions = []
    fixture = {}

    def cleanup():
        for s in sessions:
            s.close()
        if proxy is not None:
            proxy.close()
        for name in (pool_name, session_name, process_name, proxy_name):
            sh("docker", "rm", "-f", name, check=False)
        sh(FIXTURE, "down", "--name", index_name, "--dir", fixture.get("dir", ""),
           "--rmi", ca_image, "--rmi", proxy_image, check=False)
        for net in (index_net, sandbox_net):
            sh("docker", "network", "rm", net, check=False)
        shutil.rmtree(work, ignore_errors=True)

    # Leftovers of a run that was killed (under the lock: no other run of this test is live).
    for kind, fmt in (("ps", "{{.Names}}"), ("network", "{{.Name}}")):
        listing = sh("docker", *(["ps", "-a"] if kind == "ps" else ["network", "ls"]),
                     "--filter", "label=" + LABEL, "--format", fmt, check=False)
        for name in listing.split():
            if name.startswith("egpip"):
                sh("docker", *(["rm", "-f"] if kind == "ps" else ["network", "rm"]), name,
                   check=False)
    try:
        # Networks: the index's and the sandboxes' (both internal: nothing here needs the
        # outside). ICC stays on: without the host ruleset (deploy/egress, the firewall test)
        # ICC off would cut the sandboxes from the proxy too.
        sh("docker", "network", "create", "--label", LABEL, "--internal", "--subnet", INDEX_NET,
           index_net)
        sh("docker", "network", "create", "--label", LABEL, "--internal", "--subnet",
           SANDBOX_NET, sandbox_net)
        fixture = key_values(sh(FIXTURE, "up", "--network", index_net, "--ip", INDEX_IP,
                                "--name", index_name, "--dir", os.path.join(work, "index")))
        print("index: %s at %s, CA %s" % (fixture["index_url"], fixture["ip"], fixture["ca"]))
        sh(FIXTURE, "pip-image", "--tag", PIP_IMAGE)
        sh(FIXTURE, "trust", "--ca", fixture["ca"], "--from", PIP_IMAGE, "--tag", ca_image)

        # The proxy: the binary alone on the base image, non-root, read-only, stdin attached.
        ctx = os.path.join(work, "proxy")
        os.makedirs(ctx)
        shutil.copy(opts.egress, os.path.join(ctx, "sandbox-egress"))
        with open(os.path.join(ctx, "Dockerfile"), "w") as f:
            f.write("FROM sandbox-mcp-base:bookworm\n"
                    "COPY sandbox-egress /usr/local/bin/sandbox-egress\n")
        sh("docker", "build", "-q", "--label", LABEL, "-t", proxy_image, ctx)
        sh("docker", "create", "-i", "--label", LABEL, "--name", proxy_name,
           "--network", sandbox_net, "--ip", PROXY_IP, "--read-only", "--cap-drop", "ALL",
           "--security-opt", "no-new-privileges", "--user", "10001:10001",
           "--entrypoint", "/usr/local/bin/sandbox-egress", proxy_image,
           "--listen", "0.0.0.0:3128", "--dns-port", "0")
        sh("docker", "network", "connect", index_net, proxy_name)
        proxy = Proxy(proxy_name)
        proxy.wait(lambda e: e.get("ev") == "ready", "ready")
        allow = fixture["allow"].split()  # the names, and the index's subnet (private)
        for n, addr in enumerate((POOL_IP, SESSION_IP, PROCESS_IP)):
            proxy.send({"op": "set", "id": n + 1, "addr": addr, "pool": "test",
                        "policy": {"mode": "allowlist", "allow": allow}})
            proxy.wait(lambda e, i=n + 1: e.get("ev") in ("applied", "error") and e.get("id") == i,
                       "applied")
        bad = [e for e in proxy.events if e.get("ev") == "error"]
        check(not bad, "the proxy took the policy %s" % allow, bad)

        # A pool sandbox (recycle mode), the real harness.
        pool = drive.Session(sandbox_opts(ca_image, pool_name, sandbox_net, POOL_IP, "recycle"),
                             verbose=False, name=pool_name)
        sessions.append(pool)
        pool.wait_event("ready", timeout=180)
        res, out, err = run(pool, INSTALL_AND_USE, opts.verbose)
        env = json.loads(lines_with(out, "ENV ")[0]) if lines_with(out, "ENV ") else {}
        check(env.get("https_proxy") == PROXY_URL and env.get("PYTHONUSERBASE") == "/tmp/.local"
              and env.get("PIP_BREAK_SYSTEM_PACKAGES") == "1",
              "the run has the proxy and pip's environment", env)
        check(all(env.get(k) is None for k in ("REQUESTS_CA_BUNDLE", "SSL_CERT_FILE",
                                               "CURL_CA_BUNDLE", "PIP_CERT")),
              "no CA bundle variable: the system's trust store only", env)
        check(lines_with(out, "BEFORE") == ["absent"], "sbxtestapp is not there before", out)
        check(lines_with(out, "PIP_RC") == ["0"] and
              "Successfully installed sbxtestapp-1.0 sbxtestpkg-1.1" in out,
              "pip install sbxtestapp (and its requirement sbxtestpkg) in a run", out + err)
        check(lines_with(out, "MARKER") == ["sbxtestapp 1.0 with sbxtestpkg 1.1 from the test "
                                            "index"], "import in the same run", out + err)
        check(lines_with(out, "FILE") == ["/tmp/.local/lib/python3.11/site-packages/sbxtestpkg/"
                                          "__init__.py"], "installed in the run's user site", out)
        check(lines_with(out, "SCRIPT") == ["0 sbxtestpkg 1.1 from the test index"],
              "the installed console script is on PATH and runs", out)
        check(lines_with(out, "URLLIB") == ["200"], "urllib through the proxy", out + err)
        check(lines_with(out, "REQUESTS") == ["200"], "requests through the proxy", out + err)
        check(lines_with(out, "CURL") == ["200"], "curl through the proxy", out + err)
        check(res.verdict == "ok", "the run's verdict is ok", res.done)
        check([f for f in res.files] == [], "nothing of the install comes back as a file",
              [f.get("path") for f in res.files])
        for target in ("index.test:443", "files.index.test:443"):
            conns = proxy.conns(target)
            check(conns and all(c.get("verdict") == "allowed" and c.get("addr") == POOL_IP
                                for c in conns),
                  "the proxy allowed %s for the sandbox" % target, conns)

        res, out, err = run(pool, NEXT_RUN, opts.verbose)
        check(lines_with(out, "SITE") == ["['/tmp/.local/lib/python3.11/site-packages'] []"],
              "the next run has an empty user site of its own", out + err)
        check(lines_with(out, "IMPORT") == ["absent No module named 'sbxtestpkg'"],
              "the next run does not have the package", out + err)

        res, out, err = run(pool, REFUSED, opts.verbose)
        check(lines_with(out, "PIP_RC") not in ([], ["0"]),
              "pip install from an index not in the allowlist fails", out + err)
        refused = proxy.wait(lambda e: e.get("ev") == "conn" and
                             e.get("target") == "elsewhere.test:443", "conn elsewhere.test",
                             timeout=30)
        check(refused.get("verdict") == "refused" and refused.get("status") == 403 and
              refused.get("addr") == POOL_IP,
              "the proxy refused elsewhere.test:443 (%s)" % refused.get("reason"), refused)
        urllib_says = lines_with(out, "URLLIB")
        check(urllib_says and "403" in urllib_says[0],
              "urllib sees the proxy's 403 (%s)" % (urllib_says[0] if urllib_says else ""), out)
        print("     pip says: " + " | ".join(
            line.strip() for line in err.splitlines() if "ERROR" in line or "403" in line)[:600])

        # A session: one cell installs, a later one imports.
        session = drive.Session(sandbox_opts(ca_image, session_name, sandbox_net, SESSION_IP,
                                             "session"),
                                verbose=False, name=session_name)
        sessions.append(session)
        session.wait_event("ready", timeout=180)
        res, out, err = run(session, SESSION_INSTALL, opts.verbose)
        check(lines_with(out, "PIP_RC") == ["0"] and "Successfully installed sbxtestpkg-1.0" in out,
              "pip install sbxtestpkg==1.0 in a session's cell", out + err)
        session.wait_event("ready", timeout=60)
        res, out, err = run(session, SESSION_USE, opts.verbose)
        check(lines_with(out, "MARKER") == ["sbxtestpkg 1.0 from the test index"],
              "a later cell of the session imports it", out + err)
        check(lines_with(out, "CHILD") == ["0 1.0"], "and so does a new interpreter", out + err)
        check("sbxtestpkg 1.0" in " ".join(lines_with(out, "LIST")),
              "pip list --user shows it", out)

        # isolate=false (the "auto" fallback where namespaces are refused): the run shares the
        # container's /tmp, which F empties between runs. That /tmp is Docker's tmpfs, noexec:
        # pure-Python packages work, compiled extensions and console scripts do not.
        process = drive.Session(sandbox_opts(ca_image, process_name, sandbox_net, PROCESS_IP,
                                             "recycle", isolate=False),
                                verbose=False, name=process_name)
        sessions.append(process)
        ready = process.wait_event("ready", timeout=180)[1]
        check(ready.get("isolation") == "process", "a sandbox without per-run namespaces", ready)
        res, out, err = run(process, PROCESS_INSTALL, opts.verbose)
        check(lines_with(out, "PIP_RC") == ["0"] and
              lines_with(out, "MARKER") == ["sbxtestpkg 1.1 from the test index"],
              "without namespaces: install and import in a run", out + err)
        res, out, err = run(process, NEXT_RUN, opts.verbose)
        check(lines_with(out, "SITE") == ["['/tmp/.local/lib/python3.11/site-packages'] []"] and
              lines_with(out, "IMPORT") == ["absent No module named 'sbxtestpkg'"],
              "without namespaces: the next run does not have it", out + err)
    except Exception as e:  # noqa: BLE001 - reported as the failure it is
        check(False, "the test ran to its end", "%s: %s" % (type(e).__name__, e))
    finally:
        if opts.keep:
            print("kept: networks %s %s, containers %s %s %s %s %s, images %s %s, dir %s"
                  % (index_net, sandbox_net, index_name, proxy_name, pool_name, session_name,
                     process_name, ca_image, proxy_image, work))
        else:
            cleanup()
    if proxy is not None and opts.verbose:
        print("---- proxy events")
        for ev in proxy.events:
            print(json.dumps(ev))
    if check.failures:
        print("pip_install_test: %d FAILED" % len(check.failures))
        return 1
    print("pip_install_test: passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
