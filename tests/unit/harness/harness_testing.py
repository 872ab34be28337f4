"""Helpers shared by the harness's tests: wait statuses, and the whole harness as a host process
(the packed payload through the server's bootstrap, in isolate=false mode: no Docker)."""

import base64
import json
import os
import subprocess
import sys
import tempfile
import time

import harness_config
import harness_payload
from sandbox_harness import wire

HERE = os.path.dirname(os.path.abspath(__file__))
FAKE_MPL = os.path.join(HERE, "fake_mpl")  # a stand-in for matplotlib (see its __init__.py)


def exited(code):
    return code << 8  # a raw wait status of a normal exit


def killed(sig):
    return int(sig)  # a raw wait status of a death by signal


def b64(data):
    return base64.b64encode(data).decode()


class Zygote:
    """The harness as a host process through the real bootstrap, in isolate=false mode."""

    def __init__(self, test, boot_path=None, **config):
        """boot_path: a directory put first on the zygote's sys.path (-I ignores PYTHONPATH)."""
        self.workdir = tempfile.mkdtemp(prefix="harness-test-", dir="/tmp")
        test.addCleanup(self.cleanup)
        boot = harness_payload.BOOT
        if boot_path is not None:
            boot = "import sys;sys.path.insert(0,%r);%s" % (boot_path, boot)
        self.proc = subprocess.Popen([sys.executable, "-I", "-u", "-c", boot], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
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
