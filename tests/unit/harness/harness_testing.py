"""Helpers shared by the harness's tests: wait statuses, the whole harness as a host process
(the packed payload through the server's bootstrap, in isolate=false mode unless a test asks for
namespaces: no Docker), and small seccomp filters that take a kernel feature away from it."""

import atexit
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import harness_config
import harness_payload
from sandbox_harness import wire

HERE = os.path.dirname(os.path.abspath(__file__))
FAKE_MPL = os.path.join(HERE, "fake_mpl")  # a stand-in for matplotlib (see its __init__.py)
FAKE_PIP = os.path.join(HERE, "fake_pip")  # a stand-in for pip (see its __init__.py)
if os.path.realpath(FAKE_PIP).startswith("/tmp/"):
    # A run with namespaces gets a fresh /tmp: a tree checked out under /tmp (a CI clone) would
    # hide the stand-in from the run, which would then find the real pip.
    _outside = tempfile.mkdtemp(prefix="sandbox-fake-pip-", dir="/var/tmp")
    os.chmod(_outside, 0o755)
    shutil.copytree(FAKE_PIP, os.path.join(_outside, "fake_pip"))
    atexit.register(shutil.rmtree, _outside, True)
    FAKE_PIP = os.path.join(_outside, "fake_pip")


def exited(code):
    return code << 8  # a raw wait status of a normal exit


def killed(sig):
    return int(sig)  # a raw wait status of a death by signal


def b64(data):
    return base64.b64encode(data).decode()


class Zygote:
    """The harness as a host process through the real bootstrap, in isolate=false mode."""

    def __init__(self, test, boot_path=None, preexec=None, env=None, **config):
        """boot_path: a directory put first on the zygote's sys.path (-I ignores PYTHONPATH).
        preexec: run in the harness's process before it executes Python (e.g. a seccomp
        filter). env: the harness's environment (the container's; default: the test's).
        config: overrides of the test config (isolate=false unless given)."""
        self.workdir = tempfile.mkdtemp(prefix="harness-test-", dir="/tmp")
        test.addCleanup(self.cleanup)
        boot = harness_payload.BOOT
        if boot_path is not None:
            boot = "import sys;sys.path.insert(0,%r);%s" % (boot_path, boot)
        self.proc = subprocess.Popen([sys.executable, "-I", "-u", "-c", boot], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     preexec_fn=preexec, env=env)
        src = harness_payload.pack()
        self.cfg_workdir = os.path.join(self.workdir, "work")
        cfg = harness_config.config({"isolate": False, "preload": [], "warm_plot": False,
                                     "workdir": self.cfg_workdir})
        harness_config.merge(cfg, config)
        self.proc.stdin.write(b"%d\n" % len(src) + src + wire.encode_json_frame(cfg))
        self.proc.stdin.flush()
        self.decoder = wire.FrameDecoder()
        self.pending = []

    def send(self, obj):
        self.proc.stdin.write(wire.encode_json_frame(obj))
        self.proc.stdin.flush()

    def frames(self, until, timeout=20):
        """Reads frames up to and including the first JSON event named `until`."""
        out = []
        deadline = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        import select
        while True:
            self.pending += self.decoder.frames()
            while self.pending:
                kind, payload = self.pending.pop(0)
                item = (kind, json.loads(payload) if kind == b"J" else payload)
                out.append(item)
                if kind == b"J" and item[1].get("ev") in (until, "fatal"):
                    return out
            r, _, _ = select.select([fd], [], [], max(deadline - time.monotonic(), 0))
            if not r:
                raise AssertionError("no %r event; got %r" % (until, out))
            data = os.read(fd, 1 << 16)
            if not data:
                raise AssertionError("harness exited; got %r; stderr %r"
                                     % (out, self.proc.stderr.read()))
            self.decoder.feed(data)

    def run(self, code, **fields):
        msg = {"op": "run", "id": fields.pop("id", "r"), "code": code}
        msg.update(fields)
        self.send(msg)
        frames = self.frames("done")
        out = b"".join(p for k, p in frames if k == b"1")
        err = b"".join(p for k, p in frames if k == b"2")
        events = [p for k, p in frames if k == b"J"]
        return out, err, events

    def cleanup(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            f.close()
        import shutil
        shutil.rmtree(self.workdir, ignore_errors=True)


def figure_labels(events):
    """The labels of the fake figures the run's image events carry, in order."""
    labels = []
    for e in events:
        if e["ev"] == "image":
            data = base64.b64decode(e["data_b64"])
            labels.append(data[data.index(b"fig:") + 4:].decode())
    return labels


# -- seccomp filters for tests: one syscall refused with EPERM --------------------------------

_SYSCALLS = {"x86_64": {"unshare": 272, "setns": 308},
             "aarch64": {"unshare": 97, "setns": 268}}


def deny_filter(name, arg0=None):
    """A classic BPF program refusing syscall `name` with EPERM (only when its first argument's
    low 32 bits equal arg0, if given); everything else is allowed. No architecture check: the
    filter only takes away, in a test's own child."""
    import platform
    import struct
    nr = _SYSCALLS[platform.machine()][name]
    ld, jeq, ret = 0x20, 0x15, 0x06
    allow, eperm = 0x7FFF0000, 0x00050000 | 1
    if arg0 is None:
        prog = [(ld, 0, 0, 0), (jeq, 0, 1, nr), (ret, 0, 0, eperm), (ret, 0, 0, allow)]
    else:
        prog = [(ld, 0, 0, 0), (jeq, 0, 3, nr), (ld, 0, 0, 16), (jeq, 0, 1, arg0),
                (ret, 0, 0, eperm), (ret, 0, 0, allow)]
    return b"".join(struct.pack("=HBBI", *ins) for ins in prog)


def seccomp_preexec(*bpfs):
    """A preexec for Zygote: installs the filters (no_new_privs first, as the harness does)."""
    def install():
        from sandbox_harness import kernel
        k = kernel.Kernel()
        for bpf in bpfs:
            k.install_seccomp(bpf)
    return install


def user_namespaces_work():
    """Whether this host lets a process make a user and PID namespace (the direct tree needs
    both; CI hosts may refuse)."""
    import ctypes
    pid = os.fork()
    if pid == 0:
        libc = ctypes.CDLL(None, use_errno=True)
        os._exit(0 if libc.unshare(0x10000000 | 0x20000000) == 0 else 1)
    _, status = os.waitpid(pid, 0)
    return status == 0
