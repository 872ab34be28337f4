"""Hermetic tests of the harness (src/harness/harness.py): its pure parts, and the whole zygote in
`isolate: false` mode as a host process (no Docker, no namespaces, no preloads).

Run: PYTHONPATH=src/harness python3 -m unittest -v test_harness_units   (from this directory)
"""

import base64
import json
import os
import signal
import struct
import subprocess
import sys
import tempfile
import time
import unittest

import harness as h

HERE = os.path.dirname(os.path.abspath(__file__))
HARNESS_PATH = os.path.abspath(h.__file__)


def exited(code):
    return code << 8  # a raw wait status of a normal exit


def killed(sig):
    return int(sig)  # a raw wait status of a death by signal


class FrameTest(unittest.TestCase):
    def test_encode_layout(self):
        self.assertEqual(h.encode_frame(b"1", b"hi"), b"\x00\x00\x00\x02" + b"1" + b"hi")
        self.assertEqual(h.encode_frame(b"J", b""), b"\x00\x00\x00\x00J")

    def test_roundtrip_split_at_every_position(self):
        stream = (h.encode_json_frame({"ev": "a", "x": "\u00e9"}) + h.encode_frame(b"1", b"out")
                  + h.encode_frame(b"2", b"") + h.encode_json_frame({"ev": "b"}))
        for cut in range(len(stream) + 1):
            d = h.FrameDecoder()
            d.feed(stream[:cut])
            frames = d.frames()
            d.feed(stream[cut:])
            frames += d.frames()
            self.assertEqual([k for k, _ in frames], [b"J", b"1", b"2", b"J"])
            self.assertEqual(json.loads(frames[0][1]), {"ev": "a", "x": "\u00e9"})
            self.assertEqual(frames[1][1], b"out")
            self.assertEqual(d.pending, 0)

    def test_unknown_kind_and_oversize(self):
        d = h.FrameDecoder()
        d.feed(b"\x00\x00\x00\x01Xa")
        with self.assertRaises(h.ProtocolError):
            d.frames()
        d = h.FrameDecoder(max_payload=10)
        d.feed(b"\x00\x00\x00\x0bJ")
        with self.assertRaises(h.ProtocolError):
            d.frames()

    def test_frames_before_error(self):
        d = h.FrameDecoder()
        d.feed(h.encode_frame(b"J", b"{}") + h.encode_frame(b"1", b"x") + b"\x00\x00\x00\x01Zq")
        frames, error = d.frames_before_error()
        self.assertEqual(frames, [(b"J", b"{}"), (b"1", b"x")])
        self.assertIsInstance(error, h.ProtocolError)
        with self.assertRaises(h.ProtocolError):
            d.frames()

    def test_decode_message(self):
        self.assertEqual(h.decode_message(b"J", b'{"op":"ping"}'), {"op": "ping"})
        for bad in (b"{nope", b"[1]", b'{"op":1}', b'{"x":1}', b"\xff"):
            with self.assertRaises(h.ProtocolError):
                h.decode_message(b"J", bad)
        with self.assertRaises(h.ProtocolError):
            h.decode_message(b"1", b'{"op":"ping"}')

    def test_json_is_always_valid_utf8(self):
        data = h.encode_json({"value": "a\udc80b", "list": ["\ud800"]})
        obj = json.loads(data.decode("utf-8"))  # strict UTF-8
        self.assertEqual(obj["value"], "a\\udc80b")
        self.assertEqual(obj["list"], ["\\ud800"])


class ConfigTest(unittest.TestCase):
    def test_defaults(self):
        cfg = h.parse_config({"op": "config"})
        self.assertEqual(cfg["mode"], "recycle")
        self.assertEqual(cfg["preload"], ["numpy", "pandas", "matplotlib"])
        self.assertIs(cfg["isolate"], True)
        self.assertEqual(cfg["workdir"], "/tmp/work")
        self.assertIsNone(cfg["seccomp_bpf"])
        self.assertEqual(cfg["limits"]["cpu_s"], 0)  # derived from each run's timeout
        run = h.parse_run({"op": "run", "id": "a", "code": ""}, cfg)
        self.assertEqual(run["limits"]["cpu_s"], 11)  # timeout 10 s, rounded up, + 1

    def test_first_message_must_be_config(self):
        with self.assertRaises(h.ProtocolError):
            h.parse_config({"op": "run"})

    def test_bad_fields(self):
        for bad in ({"mode": "x"}, {"isolate": "yes"}, {"workdir": "rel"}, {"workdir": "/tmp"},
                    {"workdir": "/tmp/../etc"}, {"preload": "numpy"}, {"image": {"dpi": 0}},
                    {"files_out": {"max_count": -1}}, {"seccomp_bpf": "!!"},
                    {"seccomp_bpf": base64.b64encode(b"1234567").decode()},
                    {"limits": {"timeout_s": "1"}}, {"limits": {"nproc": True}}):
            msg = {"op": "config"}
            msg.update(bad)
            with self.assertRaises(h.ProtocolError, msg=str(bad)):
                h.parse_config(msg)

    def test_bpf(self):
        raw = struct.pack("=HBBI", 0x06, 0, 0, 0x7FFF0000)
        cfg = h.parse_config({"op": "config", "seccomp_bpf": base64.b64encode(raw).decode(),
                              "isolate": "auto"})
        self.assertEqual(cfg["seccomp_bpf"], raw)
        self.assertEqual(cfg["isolate"], "auto")

    def test_run_limits_merge(self):
        cfg = h.parse_config({"op": "config", "limits": {"output_bytes": 5}})
        run = h.parse_run({"op": "run", "id": "a", "code": "", "limits": {"timeout_s": 2.5}}, cfg)
        self.assertEqual(run["limits"]["output_bytes"], 5)
        self.assertEqual(run["limits"]["timeout_s"], 2.5)
        self.assertEqual(run["limits"]["cpu_s"], 4)
        for bad in ({"id": "", "code": ""}, {"id": "a"}, {"id": "a", "code": "", "argv": [1]},
                    {"id": "a", "code": "", "files": {}}, {"id": "a", "code": "", "limits": []},
                    {"id": "a", "code": "", "limits": {"memory_bytes": -1}},
                    {"id": "a", "code": "", "limits": {"memory_bytes": 1.5}}):
            with self.assertRaises(h.ProtocolError, msg=str(bad)):
                h.parse_run(dict(bad, op="run"), cfg)

    def test_memory_limit(self):
        cfg = h.parse_config({"op": "config"})
        self.assertEqual(cfg["limits"]["memory_bytes"], 0)
        run = h.parse_run({"op": "run", "id": "a", "code": ""}, cfg)
        self.assertEqual(run["limits"]["memory_bytes"], 0)
        cfg = h.parse_config({"op": "config", "limits": {"memory_bytes": 512 << 20}})
        run = h.parse_run({"op": "run", "id": "a", "code": ""}, cfg)
        self.assertEqual(run["limits"]["memory_bytes"], 512 << 20)
        # RLIMIT_DATA only for a budget narrowed below the pool's (the cgroup covers the rest).
        self.assertIsNone(h.narrowed_memory(run["limits"], cfg["limits"]))
        run = h.parse_run({"op": "run", "id": "a", "code": "", "limits": {"memory_bytes": 64 << 20}},
                          cfg)
        self.assertEqual(h.narrowed_memory(run["limits"], cfg["limits"]), 64 << 20)
        self.assertEqual(h.narrowed_memory({"memory_bytes": 5}, {"memory_bytes": 0}), 5)
        self.assertIsNone(h.narrowed_memory({"memory_bytes": 0}, {"memory_bytes": 0}))
        self.assertIsNone(h.narrowed_memory({"memory_bytes": 9}, {"memory_bytes": 8}))

    def test_vm_data(self):
        status = "Name:\tpython\nVmPeak:\t  504424 kB\nVmData:\t  343612 kB\nVmStk:\t 548 kB\n"
        self.assertEqual(h.parse_vm_data(status), 343612 * 1024)
        self.assertIsNone(h.parse_vm_data("Name: x\n"))
        self.assertEqual(h.data_rlimit(100, 50), (150, 150 + h.DATA_HEADROOM))


class PathTest(unittest.TestCase):
    def test_valid(self):
        self.assertEqual(h.validate_rel_path("a.txt"), "a.txt")
        self.assertEqual(h.validate_rel_path("./d//e/f.csv"), "d/e/f.csv")
        self.assertEqual(h.validate_rel_path("..a/b.."), "..a/b..")

    def test_invalid(self):
        for bad in ("", "/etc/passwd", "../x", "a/../../b", "a/..", ".", "./", "a\x00b",
                    "x" * 256, None, 3):
            with self.assertRaises(h.InputError, msg=repr(bad)):
                h.validate_rel_path(bad)

    def test_input_files(self):
        b64 = lambda b: base64.b64encode(b).decode()  # noqa: E731
        out = h.validate_input_files([{"path": "a", "content_b64": b64(b"xy")},
                                      {"path": "d/b", "content_b64": b64(b"")}], 5, 10)
        self.assertEqual(out, [("a", b"xy"), ("d/b", b"")])
        cases = [
            ([{"path": "a", "content_b64": b64(b"x" * 11)}], "limit of 10 bytes"),
            ([{"path": "a", "content_b64": ""}] * 6, "exceed the limit of 5"),
            ([{"path": "a", "content_b64": "@@"}], "not valid base64"),
            ([{"path": "a", "content_b64": ""}, {"path": "./a", "content_b64": ""}], "twice"),
            ([{"path": "a", "content_b64": ""}, {"path": "a/b", "content_b64": ""}], "conflict"),
            ([{"path": "/a", "content_b64": ""}], "absolute"),
            (["a"], "must be an object"),
        ]
        for files, needle in cases:
            with self.assertRaises(h.InputError) as cm:
                h.validate_input_files(files, 5, 10)
            self.assertIn(needle, str(cm.exception))


class CellTest(unittest.TestCase):
    def run_cell(self, src):
        body, expr = h.split_cell(src)
        ns = {"__name__": "__main__"}
        exec(body, ns)
        return eval(expr, ns) if expr is not None else None

    def test_final_expression(self):
        self.assertEqual(self.run_cell("a = 2\na * 21"), 42)
        self.assertIsNone(h.split_cell("a = 2")[1])
        self.assertIsNone(h.split_cell("")[1])
        self.assertIsNone(h.split_cell("for i in []:\n    i")[1])
        self.assertEqual(self.run_cell("x = [1]\nx.append(2)\nx"), [1, 2])

    def test_expression_only_runs_once(self):
        body, expr = h.split_cell("n = []\nn.append(1) or len(n)")
        ns = {}
        exec(body, ns)
        self.assertEqual(eval(expr, ns), 1)

    def test_syntax_error(self):
        with self.assertRaises(SyntaxError):
            h.split_cell("print('a'")
        try:
            h.split_cell("x = 1\nprint('a'")
        except SyntaxError as e:
            text, tb = h.compile_error_report(e)
        self.assertNotIn("Traceback", text)
        self.assertIn('File "<cell>", line 2', text)
        self.assertEqual(tb["type"], "SyntaxError")
        self.assertEqual(tb["frames"], [])

    def test_line_numbers_and_linecache(self):
        src = "x = 1\n\ndef f():\n    return 1 / 0\nf()\n"
        h.register_source(src)
        body, expr = h.split_cell(src)
        ns = {}
        exec(body, ns)
        try:
            eval(expr, ns)
        except ZeroDivisionError as e:
            tb = h.structured_traceback(e, drop_files=(__file__,))
            text = h.format_exception_trimmed(e, drop_files=(__file__,))
        self.assertEqual([(f["file"], f["line"], f["function"]) for f in tb["frames"]],
                         [("<cell>", 5, "<module>"), ("<cell>", 4, "f")])
        self.assertEqual(tb["type"], "ZeroDivisionError")
        self.assertEqual(tb["message"], "division by zero")
        self.assertTrue(text.startswith("Traceback (most recent call last):\n"))
        self.assertIn("    return 1 / 0\n", text)  # the source line comes from linecache
        self.assertNotIn(__file__, text)

    def test_format_value(self):
        self.assertIsNone(h.format_value(None, 10))
        self.assertEqual(h.format_value("ab", 10), "'ab'")
        long = h.format_value("x" * 100, 20)
        self.assertTrue(long.startswith("'" + "x" * 19) and "more characters" in long)

        class Bad:
            def __repr__(self):
                raise RuntimeError("nope")
        self.assertIn("repr() failed: RuntimeError: nope", h.format_value(Bad(), 100))

    def test_exception_type_name(self):
        class Local(Exception):
            pass
        Local.__module__ = "__main__"
        self.assertEqual(h.exception_type_name(ValueError), "ValueError")
        self.assertEqual(h.exception_type_name(Local), Local.__qualname__)
        self.assertEqual(h.exception_type_name(json.JSONDecodeError), "json.decoder.JSONDecodeError")

    def test_system_exit(self):
        self.assertEqual(h.system_exit_status(SystemExit()), (0, None))
        self.assertEqual(h.system_exit_status(SystemExit(3)), (3, None))
        self.assertEqual(h.system_exit_status(SystemExit(256)), (0, None))
        self.assertEqual(h.system_exit_status(SystemExit(-1)), (255, None))
        self.assertEqual(h.system_exit_status(SystemExit(True)), (1, None))
        self.assertEqual(h.system_exit_status(SystemExit("bye")), (1, "bye"))


def _raise_through_fake_harness():
    # frames compiled under the harness's own filename, as the bootstrap does
    code = compile("def outer(f):\n    f()\n", h.HARNESS_FILE, "exec")
    ns = {}
    exec(code, ns)
    src = "def user():\n    raise KeyError('k')\n"
    h.register_source(src, "<cell>")
    user_ns = {}
    exec(compile(src, "<cell>", "exec"), user_ns)
    try:
        ns["outer"](user_ns["user"])
    except KeyError as e:
        return e


class TracebackTrimTest(unittest.TestCase):
    def test_harness_frames_removed(self):
        e = _raise_through_fake_harness()
        drop = (h.HARNESS_FILE, __file__)
        tb = h.structured_traceback(e, drop)
        self.assertEqual(tb["frames"], [{"file": "<cell>", "line": 2, "function": "user"}])
        text = h.format_exception_trimmed(e, drop)
        self.assertNotIn(h.HARNESS_FILE, text)
        self.assertIn("KeyError: 'k'", text)

    def test_chained(self):
        try:
            try:
                raise ValueError("inner")
            except ValueError:
                raise _raise_through_fake_harness()
        except KeyError as e:
            text = h.format_exception_trimmed(e, (h.HARNESS_FILE, __file__))
        self.assertIn("ValueError: inner", text)
        self.assertIn("During handling of the above exception", text)
        self.assertNotIn(__file__, text)

    def test_user_frames_on_dicts(self):
        frames = [{"file": "<harness>"}, {"file": "<cell>"}, {"file": "/usr/lib/x.py"}]
        self.assertEqual(h.user_frames(frames, ("<harness>",)), frames[1:])


class FigureTest(unittest.TestCase):
    def test_fit_dpi(self):
        self.assertEqual(h.fit_dpi(6.4, 4.8, 100, 2000, 2000), 100)
        self.assertAlmostEqual(h.fit_dpi(40, 2, 100, 2000, 2000), 50)
        self.assertAlmostEqual(h.fit_dpi(2, 40, 100, 2000, 1000), 25)
        self.assertGreater(h.fit_dpi(1e9, 1, 100, 10, 10), 0)
        self.assertEqual(h.fit_dpi(0, 0, 72, 10, 10), 72)

    def test_png_size(self):
        png = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + struct.pack(">II", 640, 480) + b"..."
        self.assertEqual(h.png_size(png), (640, 480))
        self.assertIsNone(h.png_size(b"GIF89a" + b"\x00" * 30))

    def test_budget(self):
        b = h.FigureBudget(2)
        self.assertEqual([b.take(), b.take(), b.take()], [True, True, False])
        self.assertTrue(b.truncated)
        z = h.FigureBudget(0)
        self.assertFalse(z.take())


class BudgetTest(unittest.TestCase):
    def test_output_limit(self):
        self.assertEqual(h.apply_output_limit(0, 10, b"12345"), (b"12345", False))
        self.assertEqual(h.apply_output_limit(5, 10, b"12345"), (b"12345", False))
        self.assertEqual(h.apply_output_limit(8, 10, b"12345"), (b"12", True))
        self.assertEqual(h.apply_output_limit(10, 10, b"1"), (b"", True))

    def test_plan_files_out(self):
        cands = [("a", 5, False), ("in.csv", 3, True), ("b", 100, False), ("c", 4, False),
                 ("d", 1, False)]
        self.assertEqual(h.plan_files_out(cands, 10, 1000), (["a", "b", "c", "d"], False))
        self.assertEqual(h.plan_files_out(cands, 10, 10), (["a", "c", "d"], True))
        self.assertEqual(h.plan_files_out(cands, 2, 1000), (["a", "b"], True))
        self.assertEqual(h.plan_files_out([("x", 1, True)], 0, 0), ([], False))


class VerdictTest(unittest.TestCase):
    L = {"timeout_s": 1, "output_bytes": 100, "cpu_s": 2}

    def v(self, **kw):
        return h.decide_verdict(limits=self.L, **kw)

    def test_killed_by_zygote(self):
        self.assertEqual(self.v(kill_reason="cancel", ustatus=killed(9))[0], "cancelled")
        self.assertEqual(self.v(kill_reason="timeout", oom_kills=1)[0], "timeout")
        v = self.v(kill_reason="output_limit")
        self.assertEqual((v[0], v[1], v[2]), ("output_limit", None, signal.SIGKILL))
        self.assertEqual(self.v(kill_reason="result_limit")[0], "internal")

    def test_exit_codes(self):
        self.assertEqual(self.v(ustatus=exited(0)), ("ok", 0, None, ""))
        self.assertEqual(self.v(ustatus=exited(1))[:3], ("error", 1, None))
        self.assertEqual(self.v(ustatus=exited(3))[:3], ("error", 3, None))

    def test_signals(self):
        self.assertEqual(self.v(ustatus=killed(signal.SIGSEGV))[:3], ("signal", None, 11))
        self.assertEqual(self.v(ustatus=killed(signal.SIGKILL))[:3], ("signal", None, 9))
        self.assertEqual(self.v(ustatus=killed(signal.SIGXCPU))[0], "timeout")
        self.assertEqual(self.v(ustatus=killed(signal.SIGKILL), cpu_ms=2500)[0], "timeout")

    def test_memory(self):
        self.assertEqual(self.v(ustatus=killed(9), oom_kills=1)[:3], ("memory", None, 9))
        self.assertEqual(self.v(ustatus=killed(9), limit_hits=3)[0], "memory")
        self.assertEqual(self.v(ustatus=killed(11), limit_hits=3)[0], "signal")
        self.assertEqual(self.v(ustatus=exited(0), oom_kills=1)[0], "memory")
        self.assertEqual(self.v(gstatus=killed(9), oom_kills=1)[0], "memory")
        # An uncaught MemoryError (RLIMIT_DATA refused an allocation) is `memory`, exit code kept.
        self.assertEqual(self.v(ustatus=exited(1), memory_error=True)[:3], ("memory", 1, None))
        self.assertEqual(self.v(ustatus=exited(0), memory_error=True)[0], "ok")
        self.assertEqual(self.v(ustatus=killed(11), memory_error=True)[0], "signal")
        self.assertEqual(self.v(kill_reason="timeout", memory_error=True)[0], "timeout")
        self.assertEqual(self.v(ustatus=exited(70), internal="x", memory_error=True)[0], "internal")

    def test_corrupt_result_channel(self):
        # The code wrote garbage to its own result pipe: its fault (error), not the harness's.
        self.assertEqual(self.v(ustatus=exited(0), corrupt="garbage"), ("error", 0, None, "garbage"))
        self.assertEqual(self.v(ustatus=killed(11), corrupt="garbage")[0], "signal")
        self.assertEqual(self.v(ustatus=exited(70), internal="x", corrupt="garbage")[0], "internal")

    def test_internal(self):
        self.assertEqual(self.v()[0], "internal")
        self.assertEqual(self.v(ustatus=exited(70), internal="seccomp: EINVAL")[0], "internal")
        self.assertEqual(self.v(gstatus=exited(0))[0], "internal")

    def test_counters(self):
        self.assertEqual(h.parse_counters("oom_kill_disable 0\nunder_oom 0\noom_kill 3\n"),
                         {"oom_kill_disable": 0, "under_oom": 0, "oom_kill": 3})
        with tempfile.TemporaryDirectory() as d:
            self.assertEqual(h.read_memory_counters(d), {"oom_kill": None, "limit_hits": None})
            with open(os.path.join(d, "memory.events"), "w") as f:
                f.write("low 0\nhigh 0\nmax 7\noom 2\noom_kill 1\n")
            self.assertEqual(h.read_memory_counters(d), {"oom_kill": 1, "limit_hits": 7})
            os.mkdir(os.path.join(d, "memory"))
            with open(os.path.join(d, "memory", "memory.oom_control"), "w") as f:
                f.write("oom_kill_disable 0\nunder_oom 0\noom_kill 4\n")
            with open(os.path.join(d, "memory", "memory.failcnt"), "w") as f:
                f.write("12\n")
            self.assertEqual(h.read_memory_counters(d), {"oom_kill": 4, "limit_hits": 12})
        self.assertEqual(h.counter_delta({"oom_kill": 1}, {"oom_kill": 3}, "oom_kill"), 2)
        self.assertEqual(h.counter_delta({"oom_kill": None}, {"oom_kill": 3}, "oom_kill"), 0)


class ImportTest(unittest.TestCase):
    def test_import_has_no_side_effects(self):
        # With stdin left open, main() would block reading a config: the import must return.
        p = subprocess.run([sys.executable, "-c", "import harness; print('imported')"],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           env=dict(os.environ, PYTHONPATH=os.path.dirname(HARNESS_PATH)), timeout=30)
        self.assertEqual(p.stdout, b"imported\n", p.stderr)

    def test_python38_syntax(self):
        import ast
        with open(HARNESS_PATH) as f:
            ast.parse(f.read(), feature_version=(3, 8))


BOOT = ("import sys;b=sys.stdin.buffer;n=int(b.readline());"
        "exec(compile(b.read(n),'<harness>','exec'))")


class Zygote:
    """The harness as a host process through the real bootstrap, in isolate=false mode."""

    def __init__(self, test, **config):
        self.workdir = tempfile.mkdtemp(prefix="harness-test-", dir="/tmp")
        test.addCleanup(self.cleanup)
        self.proc = subprocess.Popen([sys.executable, "-I", "-u", "-c", BOOT], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        with open(HARNESS_PATH, "rb") as f:
            src = f.read()
        cfg = {"op": "config", "isolate": False, "preload": [], "warm_plot": False,
               "workdir": os.path.join(self.workdir, "work")}
        cfg.update(config)
        self.proc.stdin.write(b"%d\n" % len(src) + src + h.encode_json_frame(cfg))
        self.proc.stdin.flush()
        self.decoder = h.FrameDecoder()
        self.pending = []

    def send(self, obj):
        self.proc.stdin.write(h.encode_json_frame(obj))
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


class ProcessModeTest(unittest.TestCase):
    """End to end without Docker: protocol, output relay, verdicts, files (isolate=false)."""

    def test_runs(self):
        z = Zygote(self)
        ready = z.frames("ready")[-1][1]
        self.assertEqual((ready["isolation"], ready["run_count"], ready["errors"]), ("process", 0, []))
        out, err, ev = z.run("print(1)\nimport sys\nprint('e', file=sys.stderr)\n6 * 7")
        done = ev[-1]
        self.assertEqual((out, err), (b"1\n", b"e\n"))
        self.assertEqual(ev[0], {"ev": "started", "id": "r"})
        self.assertEqual((done["verdict"], done["exit_code"], done["value"]), ("ok", 0, "42"))
        self.assertEqual(z.frames("ready")[-1][1]["run_count"], 1)

        out, err, ev = z.run("def f():\n    1/0\nf()", id="e")
        done = ev[-1]
        self.assertEqual(done["verdict"], "error")
        self.assertEqual([f["line"] for f in done["traceback"]["frames"]], [3, 2])
        self.assertNotIn(b"<harness>", err)
        self.assertIn(b"    1/0\n", err)
        z.frames("ready")

        b64 = base64.b64encode(b"in").decode()
        out, err, ev = z.run("open('out.txt', 'w').write(open('in.txt').read() * 2)",
                             files=[{"path": "in.txt", "content_b64": b64}])
        files = [e for e in ev if e.get("ev") == "file"]
        self.assertEqual([(f["path"], base64.b64decode(f["data_b64"])) for f in files],
                         [("out.txt", b"inin")])
        z.frames("ready")

        out, err, ev = z.run("open('/x', 'w')", files=[{"path": "../x", "content_b64": ""}])
        self.assertEqual(ev[-1]["verdict"], "error")
        self.assertIn("'..'", ev[-1]["detail"])
        self.assertNotIn("started", [e["ev"] for e in ev])
        z.frames("ready")

        z.send({"op": "ping"})
        pong = z.frames("pong")[-1][1]
        self.assertEqual((pong["ev"], pong["busy"]), ("pong", False))
        self.assertTrue(pong["memory_bytes"] is None or pong["memory_bytes"] > 0, pong)

    def test_limits_and_cancel(self):
        z = Zygote(self)
        z.frames("ready")
        t0 = time.monotonic()
        _, _, ev = z.run("while True: pass", limits={"timeout_s": 0.5})
        self.assertEqual(ev[-1]["verdict"], "timeout")
        self.assertLess(time.monotonic() - t0, 3)
        z.frames("ready")
        out, _, ev = z.run("while True: print('x' * 50)", limits={"output_bytes": 1000})
        self.assertEqual(ev[-1]["verdict"], "output_limit")
        self.assertTrue(ev[-1]["output_truncated"])
        self.assertTrue(out.endswith(b"\n[output truncated: limit of 1000 bytes reached]\n"))
        self.assertEqual(len(out), 1000 + len("\n[output truncated: limit of 1000 bytes reached]\n"))
        z.frames("ready")
        _, _, ev = z.run("import os\nos.kill(os.getpid(), 11)")
        self.assertEqual((ev[-1]["verdict"], ev[-1]["signal"]), ("signal", 11))
        z.frames("ready")
        z.send({"op": "run", "id": "c", "code": "import time\ntime.sleep(30)"})
        z.frames("started")
        t0 = time.monotonic()
        z.send({"op": "cancel", "id": "c"})
        done = z.frames("done")[-1][1]
        self.assertEqual(done["verdict"], "cancelled")
        self.assertLess(time.monotonic() - t0, 1.0)

    def test_memory_narrowing(self):
        z = Zygote(self, limits={"memory_bytes": 0})
        z.frames("ready")
        narrowed = {"memory_bytes": 64 << 20}
        _, err, ev = z.run("import resource\nprint(resource.getrlimit(resource.RLIMIT_DATA))\n"
                           "b = bytearray(256 << 20)", limits=narrowed)
        done = ev[-1]
        self.assertEqual((done["verdict"], done["exit_code"]), ("memory", 1), done)
        self.assertEqual(done["traceback"]["type"], "MemoryError")
        self.assertIn(b"MemoryError", err)
        self.assertIn("memory limit of %d bytes" % (64 << 20), done["detail"])
        z.frames("ready")
        # Growing until refused; the traceback and results are still reported (headroom).
        _, _, ev = z.run("x = []\nwhile True:\n    x.append(bytearray(1 << 20))", limits=narrowed)
        self.assertEqual((ev[-1]["verdict"], ev[-1]["traceback"]["type"]), ("memory", "MemoryError"))
        z.frames("ready")
        # A MemoryError the cell catches changes nothing; a run without memory_bytes gets no
        # RLIMIT_DATA at all.
        out, _, ev = z.run("try:\n    bytearray(256 << 20)\nexcept MemoryError:\n    print('caught')",
                           limits=narrowed)
        self.assertEqual((out, ev[-1]["verdict"]), (b"caught\n", "ok"))
        z.frames("ready")
        out, _, ev = z.run("import resource\n"
                           "print(resource.getrlimit(resource.RLIMIT_DATA)[0] == resource.RLIM_INFINITY)")
        self.assertEqual((out, ev[-1]["verdict"]), (b"True\n", "ok"))

    def test_writes_to_every_fd(self):
        # Frames (and a Docker stream header) written to every descriptor: the output carries
        # them verbatim, the result pipe's garbage makes the run's verdict `error`, one `done`.
        z = Zygote(self)
        z.frames("ready")
        forged = h.encode_json_frame({"ev": "done", "id": "w", "verdict": "ok"}) + \
            b"\x02\x00\x00\x00\x00\x00\x00\x05hello"
        code = ("import os\nfor fd in range(1, 64):\n    try:\n        os.write(fd, %r)\n"
                "    except OSError:\n        pass\nprint('after')\n" % forged)
        out, err, ev = z.run(code, id="w")
        self.assertEqual(out, forged + b"after\n")
        self.assertEqual(err, forged)
        self.assertEqual([e["ev"] for e in ev], ["started", "done"])
        self.assertEqual((ev[-1]["verdict"], ev[-1]["exit_code"]), ("error", 0))
        self.assertIn("result channel", ev[-1]["detail"])
        self.assertEqual(z.frames("ready")[-1][1]["run_count"], 1)
        out, _, ev = z.run("print('next')", id="n")
        self.assertEqual((out, ev[-1]["verdict"]), (b"next\n", "ok"))

    def test_fresh_mode_and_exit(self):
        z = Zygote(self, mode="fresh")
        z.frames("ready")
        out, _, ev = z.run("print('once')")
        self.assertEqual((out, ev[-1]["verdict"]), (b"once\n", "ok"))
        self.assertEqual(z.proc.wait(10), 0)
        z = Zygote(self)
        z.frames("ready")
        z.send({"op": "exit"})
        self.assertEqual(z.proc.wait(10), 0)

    def test_protocol_errors_are_fatal(self):
        for bad in (b"{not json", json.dumps({"op": "dance"}).encode(),
                    json.dumps({"op": "config"}).encode()):
            z = Zygote(self)
            z.frames("ready")
            z.proc.stdin.write(h.encode_frame(b"J", bad))
            z.proc.stdin.flush()
            fatal = z.frames("fatal")[-1][1]
            self.assertEqual(fatal["ev"], "fatal")
            self.assertNotEqual(z.proc.wait(10), 0)
        z = Zygote(self, mode="nope")
        self.assertIn("config.mode", z.frames("fatal")[-1][1]["message"])


if __name__ == "__main__":
    unittest.main()
