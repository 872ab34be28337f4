#!/usr/bin/env python3
"""Development driver for the in-container harness (src/harness/sandbox_harness, packed as the
server packs it).

Starts the harness in the real sandbox image the way the server will (docker run -i --rm with the
production-like options, the bootstrap command, the harness source over stdin), sends config and
run messages, and prints the decoded frames. Needs a Docker engine and the image
`sandbox-mcp-python:latest`; standard library only.

Usage:
    drive.py --code 'print(1)'                 # one ad-hoc run, frames printed
    drive.py --code-file cell.py --limits '{"timeout_s": 2}'
    drive.py --scenario all                    # every scenario below, PASS/FAIL each, exit 1 on FAIL
    drive.py --scenario basic,timeout -v       # some scenarios, printing every frame
    drive.py --list                            # scenario names

Container options: --network none --read-only --tmpfs /tmp:rw,nosuid,size=64m --cap-drop ALL
--security-opt no-new-privileges --user 10001:10001 --init and the labels
io.sandbox-mcp.managed=true, io.sandbox-mcp.test=true; --security-opt seccomp=<file> with
policies/seccomp-container.json when it exists (override with --container-seccomp PATH or
"unconfined", or "default" for Docker's default profile, which denies unshare). `--memory` adds --memory/--memory-swap. The per-run filter sent in config is a
small development BPF built here (denies namespace, mount, ptrace, keyring, bpf, ... syscalls;
x86_64 and aarch64) unless --no-run-seccomp; the server will send its own.

Config overrides: --isolate true|false|auto, --mode recycle|fresh|session, --config '{"...": ...}'.
The session_* scenarios always use session mode (session_isolate_false also isolate false).
"""

import argparse
import base64
import json
import os
import platform
import queue
import struct
import subprocess
import sys
import threading
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
# The complete config the harness requires (it has no defaults), and the packed harness, shared
# with its unit tests.
sys.path.insert(0, os.path.join(ROOT, "tests", "unit", "harness"))
import harness_config  # noqa: E402
import harness_payload  # noqa: E402
sys.path.insert(0, os.path.join(ROOT, "src", "harness"))
from sandbox_harness.wire import PROTOCOL_VERSION  # noqa: E402
POLICY = os.path.join(ROOT, "policies", "seccomp-container.json")
IMAGE = "sandbox-mcp-python:latest"
PYTHON = "/snekbin/python/default/bin/python"
BOOT = ("import sys;b=sys.stdin.buffer;n=int(b.readline());"
        "exec(compile(b.read(n),'<harness>','exec'))")

# ------------------------------------------------------------------------------------------
# A development per-run seccomp filter (raw classic BPF; the server builds the real one)

_ARCH = {  # machine -> (AUDIT_ARCH, {name: nr})
    "x86_64": (0xC000003E, {
        "unshare": 272, "setns": 308, "mount": 165, "umount2": 166, "pivot_root": 155,
        "chroot": 161, "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311,
        "keyctl": 250, "add_key": 248, "request_key": 249, "bpf": 321, "userfaultfd": 323,
        "perf_event_open": 298, "kexec_load": 246, "init_module": 175, "finit_module": 313,
        "delete_module": 176, "open_by_handle_at": 304, "name_to_handle_at": 303,
        "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432,
        "fspick": 433, "mount_setattr": 442, "io_uring_setup": 425, "clone": 56, "clone3": 435}),
    "aarch64": (0xC00000B7, {
        "unshare": 97, "setns": 268, "mount": 40, "umount2": 39, "pivot_root": 41, "chroot": 51,
        "ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271, "keyctl": 219,
        "add_key": 217, "request_key": 218, "bpf": 280, "userfaultfd": 282,
        "perf_event_open": 241, "kexec_load": 104, "init_module": 105, "finit_module": 273,
        "delete_module": 106, "open_by_handle_at": 265, "name_to_handle_at": 264,
        "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432,
        "fspick": 433, "mount_setattr": 442, "io_uring_setup": 425, "clone": 220, "clone3": 435}),
}
_CLONE_NS_FLAGS = 0x7E020000  # NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET


def dev_bpf(machine=None):
    """A small allow-by-default filter for development runs, as base64 of sock_filter[]."""
    arch, nrs = _ARCH[machine or platform.machine()]
    ins = []

    def op(code, k, jt=0, jf=0):
        ins.append(struct.pack("=HBBI", code, jt, jf, k))

    ld_abs, jeq, jset, jge, ret = 0x20, 0x15, 0x45, 0x35, 0x06
    eperm, enosys, allow, kill = 0x00050001, 0x00050026, 0x7FFF0000, 0x80000000
    op(ld_abs, 4)                      # seccomp_data.arch
    op(jeq, arch, 1, 0)
    op(ret, kill)
    op(ld_abs, 0)                      # seccomp_data.nr
    op(jge, 0x40000000, 0, 1)          # x32 ABI
    op(ret, eperm)
    for name, nr in sorted(nrs.items()):
        if name in ("clone", "clone3"):
            continue
        op(jeq, nr, 0, 1)
        op(ret, eperm)
    op(jeq, nrs["clone3"], 0, 1)       # flags live in memory: make glibc fall back to clone
    op(ret, enosys)
    op(jeq, nrs["clone"], 0, 3)
    op(ld_abs, 16)                     # args[0], low 32 bits (little-endian)
    op(jset, _CLONE_NS_FLAGS, 0, 1)
    op(ret, eperm)
    op(ret, allow)
    return base64.b64encode(b"".join(ins)).decode()


# ------------------------------------------------------------------------------------------
# A harness session


def frame(kind, payload):
    return struct.pack(">I", len(payload)) + kind + payload


class Session:
    """One container running the harness."""

    def __init__(self, opts, config=None, memory=None, verbose=False, name="drive"):
        self.verbose = verbose
        self.events = queue.Queue()
        self.stderr_lines = []
        # opts.network and opts.label: for scripts that use Session (tests/integration/egress)
        cmd = ["docker", "run", "-i", "--rm", "--network", getattr(opts, "network", "none"),
               "--read-only", "--tmpfs", "/tmp:rw,nosuid,size=64m", "--cap-drop", "ALL",
               "--security-opt", "no-new-privileges", "--user", "10001:10001", "--init",
               "--label", "io.sandbox-mcp.managed=true",
               "--label", getattr(opts, "label", "io.sandbox-mcp.test=true")]
        if opts.container_seccomp != "default":  # "default": Docker's own profile
            cmd += ["--security-opt", "seccomp=" + opts.container_seccomp]
        if memory:
            cmd += ["--memory", memory, "--memory-swap", memory]
        cmd += opts.docker_arg or []
        cmd += [opts.image, PYTHON, "-I", "-u", "-c", BOOT]
        self.t_start = time.monotonic()
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()
        if getattr(opts, "harness", None):
            with open(opts.harness, "rb") as f:
                src = f.read()
        else:
            src = harness_payload.pack()
        cfg = harness_config.config({"mode": opts.mode, "isolate": opts.isolate,
                                     "seccomp_bpf": None if opts.no_run_seccomp else dev_bpf()})
        harness_config.merge(cfg, json.loads(opts.config))
        harness_config.merge(cfg, config or {})
        self.write(b"%d\n" % len(src) + src)
        self.send(cfg)

    def write(self, data):
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, obj):
        if self.verbose:
            shown = {k: (v if k not in ("seccomp_bpf", "code") or v is None else "...")
                     for k, v in obj.items()}
            print("  >>", json.dumps(shown)[:300])
        self.write(frame(b"J", json.dumps(obj).encode()))

    def _read_stdout(self):
        out = self.proc.stdout
        while True:
            head = out.read(5)
            if len(head) < 5:
                self.events.put((time.monotonic(), "eof", None))
                return
            n = struct.unpack(">I", head[:4])[0]
            kind = head[4:5]
            payload = out.read(n)
            now = time.monotonic()
            if kind == b"J":
                obj = json.loads(payload)
                self.events.put((now, "J", obj))
                if self.verbose:
                    shown = {k: (v[:60] + "..." if isinstance(v, str) and len(v) > 80 else v)
                             for k, v in obj.items()}
                    print("  <<", json.dumps(shown)[:600])
            else:
                self.events.put((now, kind.decode(), payload))
                if self.verbose:
                    print("  <<", kind.decode(), repr(payload[:200]))

    def _read_stderr(self):
        for line in self.proc.stderr:
            self.stderr_lines.append(line.decode("utf-8", "replace").rstrip("\n"))
            if self.verbose:
                print("  [container stderr]", self.stderr_lines[-1])

    def exit_info(self):
        try:
            rc = self.proc.wait(10)
        except subprocess.TimeoutExpired:
            rc = "still running"
        time.sleep(0.2)  # let the stderr reader catch up
        return "exit status %s, stderr: %s" % (rc, self.stderr_lines[-10:])

    def next(self, timeout):
        try:
            return self.events.get(timeout=timeout)
        except queue.Empty:
            return None

    def wait_event(self, ev, timeout=60):
        deadline = time.monotonic() + timeout
        while True:
            item = self.next(max(deadline - time.monotonic(), 0.01))
            if item is None:
                raise RuntimeError("no %r event within %s s; stderr: %s"
                                   % (ev, timeout, self.stderr_lines[-10:]))
            t, kind, obj = item
            if kind == "eof":
                raise RuntimeError("harness exited waiting for %r: %s" % (ev, self.exit_info()))
            if kind == "J" and obj.get("ev") == ev:
                return t, obj
            if kind == "J" and obj.get("ev") == "fatal":
                raise RuntimeError("fatal: %s" % obj.get("message"))

    def run(self, code, files=None, limits=None, rid=None, argv=None, during=None, timeout=60):
        """Sends a run; collects everything up to `done`. `during(session, result)` is called
        once the run started (for cancel/ping tests)."""
        rid = rid or "r%d" % int(time.monotonic() * 1e6)
        msg = {"op": "run", "id": rid, "code": code, "limits": limits or {}}
        if files is not None:
            msg["files"] = files
        if argv is not None:
            msg["argv"] = argv
        res = RunResult(rid)
        res.t_sent = time.monotonic()
        self.send(msg)
        deadline = res.t_sent + timeout
        while res.done is None:
            item = self.next(max(deadline - time.monotonic(), 0.01))
            if item is None:
                raise RuntimeError("run %s: no done within %s s" % (rid, timeout))
            t, kind, obj = item
            if kind == "eof":
                raise RuntimeError("harness exited during run: %s" % self.exit_info())
            if kind == "1":
                res.stdout += obj
                res.out_frames += 1
            elif kind == "2":
                res.stderr += obj
                res.out_frames += 1
            elif kind == "J":
                res.events.append((t, obj))
                ev = obj.get("ev")
                if ev == "started":
                    res.t_started = t
                    if during:
                        during(self, res)
                elif ev == "image":
                    res.images.append(obj)
                elif ev == "file":
                    res.files.append(obj)
                elif ev == "pong":
                    res.pongs.append(t)
                elif ev == "done":
                    res.done = obj
                    res.t_done = t
                elif ev == "fatal":
                    raise RuntimeError("fatal: %s" % obj.get("message"))
        return res

    def op(self, msg, timeout=30):
        """Sends a session or file op; returns its reply (other events are dropped)."""
        self.send(msg)
        deadline = time.monotonic() + timeout
        while True:
            item = self.next(max(deadline - time.monotonic(), 0.01))
            if item is None:
                raise RuntimeError("no reply to %s within %s s" % (msg.get("op"), timeout))
            _, kind, obj = item
            if kind == "eof":
                raise RuntimeError("harness exited waiting for a reply: %s" % self.exit_info())
            if kind == "J" and obj.get("ev") == "fatal":
                raise RuntimeError("fatal: %s" % obj.get("message"))
            if kind == "J" and obj.get("ev") == "reply" and obj.get("id") == msg.get("id"):
                return obj

    def close(self, timeout=10):
        try:
            self.send({"op": "exit"})
            self.proc.stdin.close()
        except (BrokenPipeError, OSError, ValueError):
            pass
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()


class RunResult:
    def __init__(self, rid):
        self.rid = rid
        self.stdout = b""
        self.stderr = b""
        self.events = []
        self.images = []
        self.files = []
        self.pongs = []
        self.out_frames = 0
        self.done = None
        self.t_sent = self.t_started = self.t_done = None

    @property
    def verdict(self):
        return self.done and self.done.get("verdict")

    def ms(self, a, b):
        return (b - a) * 1000 if a is not None and b is not None else float("nan")


# ------------------------------------------------------------------------------------------
# Scenarios: each returns a list of (ok, message)

SCENARIOS = []


def scenario(fn):
    SCENARIOS.append(fn)
    return fn


def check(cond, message):
    return (bool(cond), message)


@scenario
def basic(opts):
    s = Session(opts, verbose=opts.verbose)
    _, ready = s.wait_event("ready")
    r = s.run("print(1)")
    s.close()
    return [check(ready.get("isolation") == ("namespaces" if opts.isolate is not False else "process"),
                  "ready: isolation=%s preloaded=%s errors=%s"
                  % (ready.get("isolation"), ready.get("preloaded"), ready.get("errors"))),
            check(r.stdout == b"1\n", "stdout %r" % r.stdout),
            check(r.verdict == "ok" and r.done["exit_code"] == 0, "done %s" % short(r.done))]


@scenario
def figures(opts):
    s = Session(opts, verbose=opts.verbose)
    s.wait_event("ready")
    r = s.run("import matplotlib.pyplot as plt\n"
              "plt.figure(); plt.plot([1, 2, 3])\n"
              "plt.figure(figsize=(40, 2)); plt.bar([1, 2], [3, 4])\n"
              "plt.show()\n"
              "print(len(plt.get_fignums()))\n")
    s.close()
    sizes = [(i["width"], i["height"]) for i in r.images]
    pngs = [base64.b64decode(i["data_b64"])[:8] == b"\x89PNG\r\n\x1a\n" for i in r.images]
    return [check(len(r.images) == 2 and all(pngs), "2 PNG images: sizes %s" % sizes),
            check(all(w <= 2000 and h <= 2000 for w, h in sizes), "within 2000x2000 px"),
            check(r.stdout == b"0\n", "figures closed by show(): %r" % r.stdout),
            check(r.verdict == "ok", "verdict %s, run->done %.0f ms" % (r.verdict, r.ms(r.t_sent, r.t_done)))]


@scenario
def error_traceback(opts):
    s = Session(opts, verbose=opts.verbose)
    s.wait_event("ready")
    r = s.run("x = 1\n\ndef f():\n    return 1/0\n\nf()\n")
    syn = s.run("print('a'\n")
    ex = s.run("import sys\nsys.exit(3)")
    ex0 = s.run("raise SystemExit")
    s.close()
    tb = r.done.get("traceback") or {}
    frames = tb.get("frames", [])
    return [check(r.verdict == "error" and r.done["exit_code"] == 1, "1/0: verdict %s exit %s"
                  % (r.verdict, r.done["exit_code"])),
            check(tb.get("type") == "ZeroDivisionError" and tb.get("message") == "division by zero",
                  "type/message %s: %s" % (tb.get("type"), tb.get("message"))),
            check([(f["file"], f["line"], f["function"]) for f in frames]
                  == [("<cell>", 6, "<module>"), ("<cell>", 4, "f")], "frames %s" % frames),
            check(b"<harness>" not in r.stderr and b"return 1/0" in r.stderr
                  and r.stderr.startswith(b"Traceback (most recent call last):"),
                  "stderr traceback without harness frames:\n%s" % r.stderr.decode()),
            check(syn.verdict == "error" and syn.done["traceback"]["type"] == "SyntaxError",
                  "syntax error: %s / %r" % (syn.done["traceback"], syn.stderr[-80:])),
            check(ex.verdict == "error" and ex.done["exit_code"] == 3 and ex.done["traceback"] is None,
                  "sys.exit(3): %s exit %s" % (ex.verdict, ex.done["exit_code"])),
            check(ex0.verdict == "ok" and ex0.done["exit_code"] == 0, "raise SystemExit: ok")]


@scenario
def final_value(opts):
    s = Session(opts, verbose=opts.verbose)
    s.wait_event("ready")
    r = s.run("import numpy as np\na = np.arange(3)\na * 2")
    r2 = s.run("x = 5\nprint(x)\nNone")
    r3 = s.run("'y' * 100000")
    s.close()
    return [check(r.done["value"] == "array([0, 2, 4])", "value %r" % r.done["value"]),
            check(r2.done["value"] is None and r2.stdout == b"5\n", "None -> null value"),
            check(len(r3.done["value"]) < 10100, "long repr bounded to %d chars" % len(r3.done["value"]))]


@scenario
def timeout(opts):
    s = Session(opts, verbose=opts.verbose)
    s.wait_event("ready")
    r = s.run("while True: pass", limits={"timeout_s": 1})
    _, ready = s.wait_event("ready")
    ok = s.run("print('after')")
    s.close()
    return [check(r.verdict == "timeout", "verdict %s, %s" % (r.verdict, r.done["detail"])),
            check(900 <= r.done["duration_ms"] <= 1600, "duration %d ms" % r.done["duration_ms"]),
            check(ok.stdout == b"after\n" and ready["run_count"] == 1, "next run served")]


@scenario
def output_limit(opts):
    s = Session(opts, verbose=opts.verbose)
    s.wait_event("ready")
    r = s.run("while True:\n    print('x' * 99)", limits={"output_bytes": 100000})
    s.close()
    marker = b"\n[output truncated: limit of 100000 bytes reached]\n"
    return [check(r.verdict == "output_limit" and r.done["output_truncated"], "verdict %s" % r.verdict),
            check(r.stdout.endswith(marker) and len(r.stdout) + len(r.stderr) == 100000 + len(marker),
                  "relayed %d bytes + marker" % (len(r.stdout) - len(marker)))]


@scenario
def signal_segv(opts):
    s = Session(opts, verbose=opts.verbose)
    s.wait_event("ready")
    r = s.run("import os\nprint('before', flush=True)\nos.kill(os.getpid(), 11)")
    r2 = s.run("import ctypes\nctypes.string_at(0)")
    s.close()
    return [check(r.verdict == "signal" and r.done["signal"] == 11 and r.stdout == b"before\n",
                  "os.kill(self, 11): %s signal %s" % (r.verdict, r.done["signal"])),
            check(r2.verdict == "signal" and r2.done["signal"] == 11,
                  "real segfault: %s signal %s" % (r2.verdict, r2.done["signal"]))]


@scenario
def memory(opts):
    s = Session(opts, memory="512m", verbose=opts.verbose)
    s.wait_event("ready")
    r = s.run("print('allocating', flush=True)\nb = bytearray(2 * 1024**3)\nprint('survived')",
              limits={"timeout_s": 30})
    _, ready = s.wait_event("ready")
    r2 = s.run("import numpy\nprint('next run ok')")
    s.close()
    return [check(r.verdict == "memory", "bomb: verdict %s signal %s detail %s (%d ms)"
                  % (r.verdict, r.done["signal"], r.done["detail"], r.done["duration_ms"])),
            check(r2.verdict == "ok" and r2.stdout == b"next run ok\n",
                  "zygote survived (pid %s), next run %s" % (ready["pid"], r2.verdict))]


@scenario
def leftovers(opts):
    s = Session(opts, verbose=opts.verbose)
    s.wait_event("ready")
    r1 = s.run("import subprocess, os\n"
               "p = subprocess.Popen(['sleep', '50'], start_new_session=True)\n"
               "open('/tmp/secret', 'w').write('x')\nopen('mine.txt', 'w').write('y')\n"
               "print(os.getcwd(), os.getpid())")
    r2 = s.run("import os, glob\n"
               "procs = []\n"
               "for p in glob.glob('/proc/[0-9]*/cmdline'):\n"
               "    try: procs.append(open(p, 'rb').read())\n"
               "    except OSError: pass\n"
               "print(any(c.startswith(b'sleep') for c in procs))\n"
               "print(os.path.exists('/tmp/secret'), os.path.exists('mine.txt'), sorted(os.listdir('.')))")
    s.close()
    return [check(r1.verdict == "ok", "run 1: cwd/pid %r" % r1.stdout),
            check(any(f["path"] == "mine.txt" for f in r1.files), "run 1 returned mine.txt"),
            check(r2.stdout == b"False\nFalse False []\n", "run 2 sees no sleep, no files: %r" % r2.stdout)]


@scenario
def init_reaps_and_ignores(opts):
    """The run's init (PID 1, a sleeper sharing I's memory) reaps orphans and cannot be signalled
    from inside the run."""
    s = Session(opts, verbose=opts.verbose)
    s.wait_event("ready")
    r = s.run("import os, signal, time\n"
              "for i in range(150):\n"
              "    pid = os.fork()\n"
              "    if pid == 0:\n"
              "        if os.fork() == 0:\n"
              "            os._exit(0)\n"
              "        os._exit(0)\n"
              "    os.waitpid(pid, 0)\n"
              "time.sleep(0.2)\n"
              "zombies = 0\n"
              "for p in os.listdir('/proc'):\n"
              "    if p.isdigit():\n"
              "        try:\n"
              "            zombies += open('/proc/%s/stat' % p).read().rsplit(')', 1)[1].split()[0] == 'Z'\n"
              "        except OSError:\n"
              "            pass\n"
              "for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGSTOP, signal.SIGKILL):\n"
              "    os.kill(1, sig)\n"
              "time.sleep(0.1)\n"
              "print('zombies', zombies, 'alive', os.getpid())",
              limits={"nproc": 32})
    r2 = s.run("print(2)")
    s.close()
    return [check(r.verdict == "ok" and r.stdout == b"zombies 0 alive 2\n",
                  "150 orphans reaped, PID 1 survives signals: %s %r %r"
                  % (r.verdict, r.stdout, r.stderr[-300:])),
            check(r2.verdict == "ok" and r2.stdout == b"2\n", "next run ok")]


@scenario
def cancel_and_ping(opts):
    s = Session(opts, verbose=opts.verbose)
    s.wait_event("ready")
    marks = {}

    def during(sess, res):
        time.sleep(0.3)
        marks["ping"] = time.monotonic()
        sess.send({"op": "ping"})
        time.sleep(0.2)
        marks["cancel"] = time.monotonic()
        sess.send({"op": "cancel", "id": res.rid})

    r = s.run("import time\nprint('start', flush=True)\ntime.sleep(30)", during=during)
    s.close()
    dt = (r.t_done - marks["cancel"]) * 1000
    return [check(r.verdict == "cancelled", "verdict %s" % r.verdict),
            check(dt < 1000, "done %.1f ms after cancel" % dt),
            check(r.pongs and (r.pongs[0] - marks["ping"]) < 0.5,
                  "pong during the run after %.1f ms" % ((r.pongs[0] - marks["ping"]) * 1000 if r.pongs else -1))]


@scenario
def files_roundtrip(opts):
    s = Session(opts, verbose=opts.verbose)
    s.wait_event("ready")
    blob = bytes(range(256)) * 10
    files = [{"path": "data.csv", "content_b64": base64.b64encode(b"a,b\n1,2\n").decode()},
             {"path": "sub/blob.bin", "content_b64": base64.b64encode(blob).decode()},
             {"path": "keep.txt", "content_b64": base64.b64encode(b"same").decode()}]
    r = s.run("import pandas as pd\ndf = pd.read_csv('data.csv')\n"
              "df['c'] = df.a + df.b\ndf.to_csv('out.csv', index=False)\n"
              "open('sub/blob.bin', 'ab').write(b'!')\nopen('keep.txt', 'w').write('same')\n"
              "import sys; print(sys.argv)", files=files, argv=["--flag"])
    got = {f["path"]: (f["mime_type"], base64.b64decode(f["data_b64"])) for f in r.files}
    bad = [s.run("pass", files=[{"path": p, "content_b64": ""}]) for p in ("../x", "/etc/x", "a/../../b")]
    s.close()
    return [check(r.verdict == "ok", "verdict %s %r" % (r.verdict, r.stderr[-300:])),
            check(got.get("out.csv") == ("text/csv", b"a,b,c\n1,2,3\n"), "out.csv %r" % (got.get("out.csv"),)),
            check(got.get("sub/blob.bin", (0, b""))[1] == blob + b"!", "modified input returned"),
            check("data.csv" not in got and "keep.txt" not in got, "unchanged inputs not returned: %s" % sorted(got)),
            check(r.stdout == b"['<cell>', '--flag']\n", "argv %r" % r.stdout),
            check(all(b.verdict == "error" and "invalid input files" in b.done["detail"] for b in bad),
                  "bad paths rejected: %s" % [b.done["detail"] for b in bad])]


@scenario
def raw_output(opts):
    s = Session(opts, verbose=opts.verbose)
    s.wait_event("ready")
    r = s.run("import os, subprocess, sys\nos.write(1, b'raw\\n')\nos.write(2, b'err\\n')\n"
              "subprocess.run(['echo', 'hi'])\nsubprocess.run(['sh', '-c', 'echo e >&2'])\n"
              "print('no newline', end='')")
    s.close()
    return [check(r.stdout == b"raw\nhi\nno newline", "stdout %r" % r.stdout),
            check(r.stderr == b"err\ne\n", "stderr %r" % r.stderr)]


@scenario
def forged_frames(opts):
    s = Session(opts, verbose=opts.verbose)
    s.wait_event("ready")
    fake = json.dumps({"ev": "done", "id": "x", "verdict": "ok"}).encode()
    code = ("import os, struct, sys\n"
            "fake = %r\n"
            "blob = struct.pack('>I', len(fake)) + b'J' + fake\n"
            "sys.stdout.buffer.write(blob); sys.stdout.flush()\n"
            "for fd in range(3, 64):\n"
            "    try: os.write(fd, blob)\n"
            "    except OSError: pass\n"
            "print('end')" % fake)
    r = s.run(code)
    r2 = s.run("print(2)")
    s.close()
    dones = [e for _, e in r.events if e.get("ev") == "done"]
    return [check(len(dones) == 1 and dones[0]["id"] == r.rid, "exactly one done, ours"),
            check(r.stdout.startswith(struct.pack(">I", len(fake)) + b"J" + fake),
                  "fake frame arrived as plain stdout bytes"),
            check(r2.stdout == b"2\n", "stream still in sync")]


@scenario
def confinement(opts):
    s = Session(opts, verbose=opts.verbose)
    s.wait_event("ready")
    r = s.run("import os, ctypes\n"
              "st = dict(l.split(':\\t') for l in open('/proc/self/status').read().splitlines() if ':\\t' in l)\n"
              "print(os.getpid(), os.getuid(), st['CapEff'], st['CapBnd'], st['NoNewPrivs'], st['Seccomp'])\n"
              "libc = ctypes.CDLL(None, use_errno=True)\n"
              "print(libc.unshare(0x10000000), ctypes.get_errno())\n"
              "print(open('/proc/self/oom_score_adj').read().strip())\n"
              "print(sorted(os.listdir('/tmp')), os.getcwd())\n"
              "import resource; print(resource.getrlimit(resource.RLIMIT_NPROC))",
              limits={"nproc": 32})
    bomb = s.run("import os\nn = 0\ntry:\n    while True:\n        if os.fork() == 0:\n            import time; time.sleep(5); os._exit(0)\n"
                 "        n += 1\nexcept OSError as e:\n    print('forks', n, e.errno)",
                 limits={"nproc": 32, "timeout_s": 20})
    s.close()
    lines = r.stdout.decode().splitlines()
    return [check(r.verdict == "ok", "verdict %s %r" % (r.verdict, r.stderr[-300:])),
            check(lines and lines[0].split()[2:] == ["0000000000000000", "0000000000000000", "1",
                                                      "2" if not opts.no_run_seccomp else "0"],
                  "pid uid CapEff CapBnd NoNewPrivs Seccomp: %s" % (lines[:1],)),
            check(len(lines) > 1 and (lines[1] == "-1 1" or opts.no_run_seccomp), "unshare in the run: %s" % lines[1:2]),
            check(len(lines) > 2 and lines[2] == "1000", "oom_score_adj %s" % lines[2:3]),
            check(True, "tmp/cwd/nproc: %s" % lines[3:]),
            check(bomb.verdict == "ok" and b"forks" in bomb.stdout, "fork bomb with nproc 32: %r %s" % (bomb.stdout, bomb.verdict))]


@scenario
def protocol_errors(opts):
    out = []
    for name, msg in (("bad json", b"{nope"), ("unknown op", json.dumps({"op": "dance"}).encode())):
        s = Session(opts, verbose=opts.verbose)
        s.wait_event("ready")
        s.write(frame(b"J", msg))
        _, fatal = s.wait_event("fatal", timeout=10)
        rc = s.proc.wait(10)
        out.append(check(rc != 0, "%s -> fatal %r, exit %d" % (name, fatal["message"], rc)))
    return out


@scenario
def fresh_mode(opts):
    class O:
        pass
    o = O()
    o.__dict__.update(vars(opts))
    o.mode = "fresh"
    s = Session(o, verbose=opts.verbose)
    s.wait_event("ready")
    r = s.run("print('only')")
    rc = s.proc.wait(10)
    return [check(r.stdout == b"only\n" and r.verdict == "ok", "one run"),
            check(rc == 0, "harness exited %d after it" % rc)]


@scenario
def process_mode(opts):
    class O:
        pass
    o = O()
    o.__dict__.update(vars(opts))
    o.isolate = False
    s = Session(o, verbose=opts.verbose)
    _, ready = s.wait_event("ready")
    r1 = s.run("import subprocess, os\nsubprocess.Popen(['sleep', '50'], start_new_session=True)\n"
               "open('/tmp/secret', 'w').write('x')\nprint(os.getcwd())")
    r2 = s.run("import os, glob\nprocs = []\n"
               "for p in glob.glob('/proc/[0-9]*/cmdline'):\n"
               "    try: procs.append(open(p, 'rb').read())\n"
               "    except OSError: pass\n"
               "print(any(c.startswith(b'sleep') for c in procs), os.path.exists('/tmp/secret'))")
    s.close()
    return [check(ready["isolation"] == "process", "isolation %s" % ready["isolation"]),
            check(r1.verdict == "ok" and r2.stdout == b"False False\n",
                  "leftover process and /tmp file gone: %r %r" % (r2.stdout, r2.stderr[-200:]))]


@scenario
def isolation_unavailable(opts):
    """Docker's default seccomp profile denies unshare: "auto" falls back, true is fatal."""
    class O:
        pass
    o = O()
    o.__dict__.update(vars(opts))
    o.container_seccomp = "default"
    o.isolate = "auto"
    s = Session(o, verbose=opts.verbose)
    _, ready = s.wait_event("ready")
    r = s.run("print('fallback works')")
    s.close()
    o.isolate = True
    s2 = Session(o, verbose=opts.verbose)
    try:
        s2.wait_event("ready", timeout=60)
        fatal = None
    except RuntimeError as e:
        fatal = str(e)
    rc = s2.proc.wait(10)
    return [check(ready["isolation"] == "process" and ready["errors"],
                  "auto: isolation %s, errors %s" % (ready["isolation"], ready["errors"])),
            check(r.stdout == b"fallback works\n", "auto: run ok"),
            check(fatal and "isolation failed" in fatal and rc == 3, "true: %s, exit %s" % (fatal, rc))]


@scenario
def timing(opts):
    s = Session(opts, verbose=False)
    t_ready, ready = s.wait_event("ready", timeout=60)
    boot_ms = (t_ready - s.t_start) * 1000
    starts, totals, plots = [], [], []
    for i in range(20):
        r = s.run("print(1)")
        starts.append(r.ms(r.t_sent, r.t_started))
        totals.append(r.ms(r.t_sent, r.t_done))
        s.wait_event("ready")
    for i in range(5):
        r = s.run("import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()")
        plots.append(r.ms(r.t_sent, r.t_done))
        s.wait_event("ready")
    t0 = time.monotonic()
    n = 0
    while time.monotonic() - t0 < 3:
        s.run("pass")
        s.wait_event("ready")
        n += 1
    rate = n / (time.monotonic() - t0)
    s.close()

    def stats(xs):
        xs = sorted(xs)
        return "median %.1f ms, min %.1f, max %.1f" % (xs[len(xs) // 2], xs[0], xs[-1])

    return [check(True, "container start to first ready: %.0f ms (preload %s)" % (boot_ms, ready["preloaded"])),
            check(True, "run -> started: " + stats(starts)),
            check(True, "print(1) run -> done: " + stats(totals)),
            check(True, "one line plot run -> done: " + stats(plots)),
            check(True, "serial throughput (run, done, ready): %.1f runs/s" % rate)]


# ------------------------------------------------------------------------------------------
# Session mode


def session_opts(opts, **overrides):
    class O:
        pass
    o = O()
    o.__dict__.update(vars(opts))
    o.mode = "session"
    o.__dict__.update(overrides)
    return o


def b64(data):
    return base64.b64encode(data).decode()


RESET_NOTE = "the session was restarted empty (variables and files are lost)"


@scenario
def session_state(opts):
    s = Session(session_opts(opts), verbose=opts.verbose)
    _, ready = s.wait_event("ready")
    r1 = s.run("x = 41\nimport numpy as np\ndef f(a):\n    return np.array(a) * 2\n")
    r2 = s.run("x + 1")
    r3 = s.run("f([1, 2]).tolist()")
    r4 = s.run("import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.show()\n"
               "plt.figure()\nplt.plot([3])\nprint(len(plt.get_fignums()))")
    r5 = s.run("print(len(plt.get_fignums()), np.__name__)")
    _, ready5 = s.wait_event("ready")
    s.close()
    return [check(ready.get("protocol") == PROTOCOL_VERSION and ready.get("mode") == "session"
                  and ready.get("cells") == 0 and ready.get("session_started") is False,
                  "ready: protocol %s mode %s cells %s" % (ready.get("protocol"), ready.get("mode"),
                                                           ready.get("cells"))),
            check(r1.verdict == "ok" and r2.done["value"] == "42", "x + 1 -> %r" % r2.done["value"]),
            check(r3.done["value"] == "[2, 4]", "function and import of cell 1 -> %r" % r3.done["value"]),
            check([r.done["cells"] for r in (r1, r2, r3, r4, r5)] == [1, 2, 3, 4, 5]
                  and not any(r.done["session_reset"] for r in (r1, r2, r3, r4, r5)),
                  "cells %s, no reset" % [r.done["cells"] for r in (r1, r2, r3, r4, r5)]),
            check(len(r4.images) == 2 and r4.stdout == b"1\n", "figures: show() + one left open: "
                  "%d images" % len(r4.images)),
            check(not r5.images and r5.stdout == b"0 numpy\n", "next cell: no figures left: %r"
                  % r5.stdout),
            check(ready5["run_count"] == 5 and ready5["cells"] == 5, "ready after done: run_count %s"
                  % ready5["run_count"])]


@scenario
def session_files(opts):
    s = Session(session_opts(opts), verbose=opts.verbose)
    s.wait_event("ready")
    put = s.op({"op": "put_files", "id": "p1", "files": [
        {"path": "data.csv", "content_b64": b64(b"a,b\n1,2\n3,4\n")}]})
    r1 = s.run("import pandas as pd\ndf = pd.read_csv('data.csv')\n"
               "open('out.txt', 'w').write(str(df.a.sum()))\ndf.b.sum()")
    r2 = s.run("print(open('out.txt').read())")
    listing = s.op({"op": "list_files", "id": "l1"})
    got = s.op({"op": "get_file", "id": "g1", "path": "out.txt"})
    missing = s.op({"op": "get_file", "id": "g2", "path": "nope.txt"})
    large = s.op({"op": "get_file", "id": "g3", "path": "data.csv", "max_bytes": 4})
    bad = s.op({"op": "get_file", "id": "g4", "path": "../x"})
    dirop = s.op({"op": "get_file", "id": "g5", "path": "."})
    deleted = s.op({"op": "delete_file", "id": "d1", "path": "out.txt"})
    gone = s.op({"op": "get_file", "id": "g6", "path": "out.txt"})
    # Fill the session's tmpfs (64 MiB), then put more: a clear ENOSPC error.
    fill = s.run("for i in range(4):\n    open('fill%d' % i, 'wb').write(b'x' * (15 << 20))",
                 limits={"timeout_s": 30})
    full = s.op({"op": "put_files", "id": "p2",
                 "files": [{"path": "big.bin", "content_b64": b64(b"y" * (8 << 20))}]})
    after = s.op({"op": "list_files", "id": "l2"})
    s.close()
    listed = [(f["path"], f["size"], f["mime_type"]) for f in listing.get("result", {}).get("files", [])]
    data = base64.b64decode(got.get("result", {}).get("data_b64", ""))
    return [check(put.get("ok") and put["result"] == {"files": [{"path": "data.csv", "size": 12}]},
                  "put_files %s" % put),
            check(r1.verdict == "ok" and r1.done["value"] == "6"
                  and [f["path"] for f in r1.files] == ["out.txt"],
                  "pandas read the put file, value %r, files %s" % (r1.done["value"],
                                                                    [f["path"] for f in r1.files])),
            check(r2.stdout == b"4\n" and not r2.files, "next cell: out.txt not sent again (%d files)"
                  % len(r2.files)),
            check(listed == [("data.csv", 12, "text/csv"), ("out.txt", 1, "text/plain")]
                  and listing["result"]["truncated"] is False, "list_files %s" % listed),
            check(got.get("ok") and data == b"4" and got["result"]["mime_type"] == "text/plain",
                  "get_file out.txt -> %r" % data),
            check(missing == {"ev": "reply", "id": "g2", "ok": False, "error": "no such file: nope.txt"},
                  "missing: %s" % missing.get("error")),
            check(large.get("error") == "data.csv is 12 bytes, more than the limit of 4 bytes",
                  "too large: %s" % large.get("error")),
            check(bad.get("error") == "file path '../x' contains '..'", "../x: %s" % bad.get("error")),
            check(dirop.get("ok") is False, "'.': %s" % dirop.get("error")),
            check(deleted.get("ok") and gone.get("error") == "no such file: out.txt",
                  "delete_file, then %s" % gone.get("error")),
            check(fill.verdict == "ok" and full.get("ok") is False
                  and "no space left in the session's file system" in full.get("error", ""),
                  "tmpfs full: %s" % full.get("error")),
            check(after.get("ok") and "big.bin" not in [f["path"] for f in after["result"]["files"]],
                  "the file that did not fit is removed")]


@scenario
def session_reset_timeout(opts):
    s = Session(session_opts(opts), verbose=opts.verbose)
    s.wait_event("ready")
    s.op({"op": "put_files", "id": "p", "files": [{"path": "keep.txt", "content_b64": b64(b"k")}]})
    r1 = s.run("x = 1")
    r2 = s.run("while True: pass", limits={"timeout_s": 1})
    _, ready = s.wait_event("ready")
    r3 = s.run("import os\nprint(sorted(os.listdir('.')))\nx")
    s.close()
    d = r2.done
    return [check(r1.verdict == "ok", "x = 1"),
            check(d["verdict"] == "timeout" and d["session_reset"] is True and d["cells"] == 2,
                  "verdict %s, session_reset %s, cells %s" % (d["verdict"], d["session_reset"], d["cells"])),
            check(d["detail"].endswith(RESET_NOTE) and 900 <= d["duration_ms"] <= 1800,
                  "detail %r, %d ms" % (d["detail"], d["duration_ms"])),
            check(ready["cells"] == 0 and ready["session_started"] is False, "ready: empty session"),
            check(r3.verdict == "error" and r3.done["traceback"]["type"] == "NameError"
                  and r3.stdout == b"[]\n" and r3.done["cells"] == 1,
                  "next cell: %s, files %r, cells %s" % (r3.done["traceback"]["type"], r3.stdout,
                                                         r3.done["cells"]))]


@scenario
def session_reset_exit(opts):
    s = Session(session_opts(opts), verbose=opts.verbose)
    s.wait_event("ready")
    s.run("x = 1")
    r = s.run("import os\nprint('bye', flush=True)\nos._exit(3)")
    r2 = s.run("x")
    s.close()
    return [check(r.verdict == "error" and r.done["exit_code"] == 3 and r.done["session_reset"]
                  and r.stdout == b"bye\n", "os._exit(3): %s exit %s reset %s stdout %r"
                  % (r.verdict, r.done["exit_code"], r.done["session_reset"], r.stdout)),
            check(r.done["detail"] == "exit status 3; " + RESET_NOTE, "detail %r" % r.done["detail"]),
            check(r2.done["traceback"]["type"] == "NameError", "state gone")]


@scenario
def session_sysexit(opts):
    s = Session(session_opts(opts), verbose=opts.verbose)
    s.wait_event("ready")
    s.run("x = 5")
    r = s.run("import sys\nprint('a')\nsys.exit(2)")
    r0 = s.run("raise SystemExit")
    r2 = s.run("x")
    s.close()
    return [check(r.verdict == "error" and r.done["exit_code"] == 2 and r.done["session_reset"] is False
                  and r.stdout == b"a\n", "sys.exit(2): %s exit %s reset %s"
                  % (r.verdict, r.done["exit_code"], r.done["session_reset"])),
            check(r0.verdict == "ok" and r0.done["exit_code"] == 0, "raise SystemExit: %s" % r0.verdict),
            check(r2.done["value"] == "5" and r2.done["cells"] == 4, "state kept: x = %r, cells %s"
                  % (r2.done["value"], r2.done["cells"]))]


@scenario
def session_memory(opts):
    s = Session(session_opts(opts), memory="1g", verbose=opts.verbose)
    s.wait_event("ready")
    rep = s.op({"op": "session", "id": "s1", "limits": {"memory_bytes": 128 << 20}})
    r1 = s.run("import resource\nkeep = 'kept'\n"
               "print(resource.getrlimit(resource.RLIMIT_CPU)[0] == resource.RLIM_INFINITY)")
    r2 = s.run("b = bytearray(512 << 20)")
    r3 = s.run("import numpy as np\na = np.ones((1 << 30) // 8)")
    r4 = s.run("c = bytearray(32 << 20)\nprint(keep, len(c))")
    s.close()
    return [check(rep == {"ev": "reply", "id": "s1", "ok": True}, "session op reply %s" % rep),
            check(r1.stdout == b"True\n", "no RLIMIT_CPU in a session: %r" % r1.stdout),
            check(r2.verdict == "memory" and not r2.done["session_reset"] and r2.done["exit_code"] == 1,
                  "bytearray(512 MiB): %s reset %s (%s)" % (r2.verdict, r2.done["session_reset"],
                                                             r2.done["detail"])),
            check(r3.verdict == "memory" and not r3.done["session_reset"],
                  "numpy 1 GiB in cell 3: %s (the budget holds for later cells too)" % r3.verdict),
            check(r4.verdict == "ok" and r4.stdout == b"kept 33554432\n", "session continues: %r"
                  % r4.stdout)]


@scenario
def session_oom(opts):
    s = Session(session_opts(opts), memory="512m", verbose=opts.verbose)
    s.wait_event("ready")
    s.run("x = 1")
    r = s.run("b = bytearray(2 * 1024**3)", limits={"timeout_s": 30})
    s.wait_event("ready")
    r2 = s.run("import threading, time\nv = 1\n"
               "def grow():\n    time.sleep(0.5)\n    global big\n    big = bytearray(2 * 1024**3)\n"
               "threading.Thread(target=grow).start()")
    _, reset = s.wait_event("session_reset", timeout=30)
    _, ready = s.wait_event("ready", timeout=30)
    r3 = s.run("print('alive')")
    s.close()
    return [check(r.verdict == "memory" and r.done["session_reset"] is True,
                  "OOM in a cell: %s, reset %s, %s" % (r.verdict, r.done["session_reset"], r.done["detail"])),
            check(r2.verdict == "ok", "cell starting the thread: %s" % r2.verdict),
            check(reset.get("reason", "").startswith("out of memory: the OOM killer ended the session's process"),
                  "OOM while idle: %r" % reset.get("reason")),
            check(r3.stdout == b"alive\n" and r3.done["cells"] == 1, "next cell in a fresh U")]


@scenario
def session_idle_death(opts):
    s = Session(session_opts(opts), verbose=opts.verbose)
    s.wait_event("ready")
    r = s.run("import threading, os, time\nv = 1\n"
              "threading.Thread(target=lambda: (time.sleep(0.5), os._exit(7))).start()")
    t0 = time.monotonic()
    _, reset = s.wait_event("session_reset", timeout=10)
    t_reset = time.monotonic() - t0
    _, ready = s.wait_event("ready", timeout=30)
    r2 = s.run("v")
    s.close()
    return [check(r.verdict == "ok" and r.done["session_reset"] is False, "cell: %s" % r.verdict),
            check(reset.get("reason") == "the session's process exited with status 7; " + RESET_NOTE
                  and t_reset < 3, "session_reset after %.1f s: %r" % (t_reset, reset.get("reason"))),
            check(ready["cells"] == 0 and ready["session_started"] is False, "then ready"),
            check(r2.done["traceback"]["type"] == "NameError" and r2.done["cells"] == 1,
                  "next cell runs in a fresh U")]


@scenario
def session_background_output(opts):
    s = Session(session_opts(opts), verbose=opts.verbose)
    s.wait_event("ready")
    r1 = s.run("import threading, time, sys\nstop = False\n"
               "def spam():\n    while not stop:\n        sys.stdout.write('y' * 50000 + '\\n')\n"
               "        time.sleep(0.02)\n"
               "t = threading.Thread(target=spam, daemon=True)\nt.start()\nprint('started')")
    time.sleep(2)  # ~5 MB written between cells: far more than a pipe holds
    r2 = s.run("print('still fine')", limits={"output_bytes": 10 << 20})
    r3 = s.run("stop = True\nt.join()\nprint('joined')")
    time.sleep(0.3)
    r4 = s.run("print('quiet')")
    s.close()
    time.sleep(0.3)
    logged = [l for l in s.stderr_lines if "bytes written between cells" in l]
    # print() writes the text and its newline separately: the thread's output may come between.
    return [check(r1.verdict == "ok" and b"started" in r1.stdout, "thread started: %s, %d bytes %r"
                  % (short(r1.done), len(r1.stdout), r1.stdout[-30:])),
            check(r2.verdict == "ok" and b"still fine" in r2.stdout
                  and r2.ms(r2.t_sent, r2.t_done) < 2000,
                  "a cell while it writes: %s in %.0f ms" % (r2.verdict, r2.ms(r2.t_sent, r2.t_done))),
            check(r3.verdict == "ok" and r3.stdout.endswith(b"joined\n"), "stopped and joined"),
            check(r4.stdout == b"quiet\n", "a later cell's output is its own: %r" % r4.stdout[:40]),
            check(logged, "logged: %s" % logged[:1])]


@scenario
def session_pong(opts):
    s = Session(session_opts(opts), verbose=opts.verbose)
    s.wait_event("ready")
    s.send({"op": "ping"})
    _, pong0 = s.wait_event("pong")
    r = s.run("import time\nx = bytearray(50 << 20)\ntime.sleep(0.5)",
              during=lambda sess, res: sess.send({"op": "ping"}))
    s.send({"op": "ping"})
    _, pong1 = s.wait_event("pong")
    s.close()
    busy = [e for _, e in r.events if e.get("ev") == "pong"]
    return [check(isinstance(pong0.get("memory_bytes"), int) and pong0["memory_bytes"] > 0
                  and pong0.get("busy") is False and pong0.get("cells") == 0
                  and pong0.get("session_started") is False, "idle pong %s" % pong0),
            check(busy and busy[0].get("busy") is True, "pong during the run: %s" % busy[:1]),
            check(pong1.get("cells") == 1 and pong1.get("session_started") is True
                  and pong1["memory_bytes"] > pong0["memory_bytes"] + (40 << 20),
                  "after the cell: %s (50 MB kept)" % pong1)]


@scenario
def session_isolate_false(opts):
    s = Session(session_opts(opts, isolate=False), verbose=opts.verbose)
    _, ready = s.wait_event("ready")
    r1 = s.run("x = 41\nopen('/tmp/outside', 'w').write('o')\nopen('in.txt', 'w').write('i')")
    r2 = s.run("import os\nprint(os.path.exists('/tmp/outside'), os.listdir('.'))\nx + 1")
    got = s.op({"op": "get_file", "id": "g", "path": "in.txt"})
    r3 = s.run("import os\nos._exit(1)")
    _, ready3 = s.wait_event("ready")
    r4 = s.run("import os\nprint(os.path.exists('/tmp/outside'), os.listdir('.'))")
    s.close()
    return [check(ready["isolation"] == "process", "isolation %s" % ready["isolation"]),
            check(r2.done["value"] == "42" and r2.stdout == b"True ['in.txt']\n",
                  "state and /tmp kept between cells: %r %r" % (r2.done["value"], r2.stdout)),
            check(got.get("ok") and base64.b64decode(got["result"]["data_b64"]) == b"i", "get_file"),
            check(r3.done["session_reset"] and r4.stdout == b"False []\n",
                  "after the reset /tmp is clean: %r" % r4.stdout)]


@scenario
def session_timing(opts):
    s = Session(session_opts(opts), verbose=False)
    s.wait_event("ready")
    totals, ops, gets = [], [], []
    s.run("x = 0")
    for i in range(20):
        r = s.run("x += 1\nprint(x)")
        totals.append(r.ms(r.t_sent, r.t_done))
    blob = b64(b"z" * (1 << 20))
    for i in range(10):
        t0 = time.monotonic()
        s.op({"op": "put_files", "id": "p%d" % i, "files": [{"path": "f.bin", "content_b64": blob}]})
        ops.append((time.monotonic() - t0) * 1000)
        t0 = time.monotonic()
        s.op({"op": "get_file", "id": "g%d" % i, "path": "f.bin"})
        gets.append((time.monotonic() - t0) * 1000)
    t0 = time.monotonic()
    r = s.run("import os\nos._exit(0)")
    s.wait_event("ready")
    reset_ms = (time.monotonic() - t0) * 1000
    s.close()

    def stats(xs):
        xs = sorted(xs)
        return "median %.1f ms, min %.1f, max %.1f" % (xs[len(xs) // 2], xs[0], xs[-1])

    return [check(True, "session cell print(x) run -> done: " + stats(totals)),
            check(True, "put_files 1 MiB -> reply: " + stats(ops)),
            check(True, "get_file 1 MiB -> reply: " + stats(gets)),
            check(r.done["session_reset"], "os._exit cell -> ready of the next U: %.0f ms" % reset_ms)]


def short(done):
    return {k: v for k, v in (done or {}).items() if k not in ("traceback",)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--code")
    ap.add_argument("--code-file")
    ap.add_argument("--limits", default="{}")
    ap.add_argument("--scenario")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("--image", default=IMAGE)
    ap.add_argument("--memory")
    ap.add_argument("--mode", default="recycle")
    ap.add_argument("--isolate", default="true", choices=["true", "false", "auto"])
    ap.add_argument("--config", default="{}", help="JSON merged into the config message")
    ap.add_argument("--container-seccomp", default=POLICY if os.path.exists(POLICY) else "unconfined")
    ap.add_argument("--no-run-seccomp", action="store_true")
    ap.add_argument("--docker-arg", action="append", help="extra docker run argument")
    ap.add_argument("--harness", default=None,
                    help="harness payload to run instead of the packed source tree (e.g. an older "
                         "build's harness_payload.py, to compare timings)")
    opts = ap.parse_args()
    opts.isolate = {"true": True, "false": False, "auto": "auto"}[opts.isolate]
    if opts.list:
        print("\n".join(f.__name__ for f in SCENARIOS))
        return 0
    if opts.code or opts.code_file:
        code = opts.code if opts.code else open(opts.code_file).read()
        s = Session(opts, memory=opts.memory, verbose=True)
        s.wait_event("ready")
        r = s.run(code, limits=json.loads(opts.limits))
        print("stdout: %r\nstderr: %r" % (r.stdout, r.stderr))
        print("run->started %.1f ms, run->done %.1f ms" % (r.ms(r.t_sent, r.t_started), r.ms(r.t_sent, r.t_done)))
        s.close()
        return 0 if r.verdict == "ok" else 1
    names = (opts.scenario or "all").split(",")
    chosen = [f for f in SCENARIOS if "all" in names or f.__name__ in names]
    print("container seccomp: %s; run seccomp: %s; isolate: %s"
          % (opts.container_seccomp, "none" if opts.no_run_seccomp else "development BPF", opts.isolate))
    failed = 0
    for fn in chosen:
        t0 = time.monotonic()
        try:
            results = fn(opts)
        except Exception as e:  # a scenario that crashed is a failure
            results = [(False, "crashed: %s: %s" % (type(e).__name__, e))]
        bad = [m for ok, m in results if not ok]
        failed += bool(bad)
        print("%s %s (%.1f s)" % ("PASS" if not bad else "FAIL", fn.__name__, time.monotonic() - t0))
        for ok, m in results:
            print("    %s %s" % ("ok  " if ok else "FAIL", m))
    print("%d passed, %d failed" % (len(chosen) - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
