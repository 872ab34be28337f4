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
import harness_config
from harness_config import config, leaf_paths, without

HERE = os.path.dirname(os.path.abspath(__file__))
HARNESS_PATH = os.path.abspath(h.__file__)


def setUpModule():
    # The bounds of paths and of the work dir's walk, as the zygote sets them at start.
    h.apply_config(h.parse_config(config()))


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
    def test_every_field_is_required(self):
        # The server owns every value: a config without one is refused, naming it.
        for path in leaf_paths(config()):
            with self.assertRaises(h.ProtocolError, msg=str(path)) as cm:
                h.parse_config(without(path))
            self.assertIn(path[-1], str(cm.exception))

    def test_complete_config(self):
        cfg = h.parse_config(config())
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
            with self.assertRaises(h.ProtocolError, msg=str(bad)):
                h.parse_config(config(bad))

    def test_bpf(self):
        raw = struct.pack("=HBBI", 0x06, 0, 0, 0x7FFF0000)
        cfg = h.parse_config(config({"seccomp_bpf": base64.b64encode(raw).decode(),
                                      "isolate": "auto"}))
        self.assertEqual(cfg["seccomp_bpf"], raw)
        self.assertEqual(cfg["isolate"], "auto")

    def test_run_limits_merge(self):
        cfg = h.parse_config(config({"limits": {"output_bytes": 5}}))
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
        cfg = h.parse_config(config())
        self.assertEqual(cfg["limits"]["memory_bytes"], 0)
        run = h.parse_run({"op": "run", "id": "a", "code": ""}, cfg)
        self.assertEqual(run["limits"]["memory_bytes"], 0)
        cfg = h.parse_config(config({"limits": {"memory_bytes": 512 << 20}}))
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
        # The code can write to its own result pipe: over the budget is its doing, not ours.
        self.assertEqual(self.v(kill_reason="result_limit")[0], "error")

    def test_claimed_failure_is_at_most_error(self):
        v = self.v(ustatus=exited(0), claimed_failure=h.RUN_SIDE_FAILURE)
        self.assertEqual(v, ("error", 0, None, h.RUN_SIDE_FAILURE))
        # the zygote's own findings still come first
        self.assertEqual(self.v(kill_reason="timeout", claimed_failure="x")[0], "timeout")
        self.assertEqual(self.v(ustatus=killed(9), claimed_failure="x")[0], "signal")

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


class SessionOpsTest(unittest.TestCase):
    """Session mode's pure parts: config, op parsing, checks of U's replies, file diffs."""

    def test_config(self):
        cfg = h.parse_config(config({"mode": "session"}))
        self.assertEqual((cfg["mode"], cfg["op_timeout_s"], cfg["list_max_entries"]),
                         ("session", 10.0, 1000))
        cfg = h.parse_config(config({"op_timeout_s": 2, "list_max_entries": 5}))
        self.assertEqual((cfg["op_timeout_s"], cfg["list_max_entries"]), (2.0, 5))
        for bad in ({"op_timeout_s": 0}, {"op_timeout_s": "1"}, {"list_max_entries": 0},
                    {"list_max_entries": 1.5}, {"mode": "sessions"}):
            with self.assertRaises(h.ProtocolError, msg=str(bad)):
                h.parse_config(config(bad))

    def test_session_op(self):
        cfg = h.parse_config(config({"limits": {"nproc": 7}}))
        rid, limits = h.parse_session_op({"op": "session", "limits": {"memory_bytes": 5}}, cfg)
        self.assertIsNone(rid)
        self.assertEqual((limits["memory_bytes"], limits["nproc"], limits["timeout_s"]), (5, 7, 10.0))
        rid, _ = h.parse_session_op({"op": "session", "id": "s1"}, cfg)
        self.assertEqual(rid, "s1")
        for bad in ({"id": 3}, {"id": "x" * 257}, {"limits": []}, {"limits": {"nofile": "9"}}):
            with self.assertRaises(h.ProtocolError, msg=str(bad)):
                h.parse_session_op(dict(bad, op="session"), cfg)

    def test_file_op_parsing(self):
        cfg = h.parse_config(config({"files_in": {"max_count": 2, "max_total_bytes": 4},
                                      "files_out": {"max_total_bytes": 99},
                                      "list_max_entries": 3}))
        self.assertEqual(h.parse_op_id({"op": "get_file", "id": "g"}), "g")
        for bad in ({}, {"id": ""}, {"id": 1}, {"id": "x" * 257}):
            with self.assertRaises(h.ProtocolError, msg=str(bad)):
                h.parse_op_id(dict(bad, op="get_file"))
        b64 = base64.b64encode(b"abc").decode()
        req = h.parse_file_op({"op": "put_files", "files": [{"path": "./d//a", "content_b64": b64}]},
                              cfg)
        self.assertEqual(req, {"op": "put_files", "files": [{"path": "d/a", "content_b64": b64}],
                               "sizes": [("d/a", 3)]})
        self.assertEqual(h.parse_file_op({"op": "list_files"}, cfg),
                         {"op": "list_files", "max_entries": 3})
        self.assertEqual(h.parse_file_op({"op": "get_file", "path": "a"}, cfg)["max_bytes"], 99)
        self.assertEqual(h.parse_file_op({"op": "get_file", "path": "a", "max_bytes": 0}, cfg)
                         ["max_bytes"], 0)
        self.assertEqual(h.parse_file_op({"op": "delete_file", "path": "a/./b"}, cfg),
                         {"op": "delete_file", "path": "a/b"})
        cases = [({"op": "put_files", "files": {}}, "must be a list"),
                 ({"op": "put_files", "files": [{"path": "a", "content_b64": b64 * 2}]},
                  "limit of 4 bytes"),
                 ({"op": "put_files", "files": [{"path": "../a", "content_b64": ""}]}, "'..'"),
                 ({"op": "get_file", "path": "/etc/passwd"}, "absolute"),
                 ({"op": "get_file", "path": "../x"}, "contains '..'"),
                 ({"op": "get_file", "path": "a", "max_bytes": -1}, "max_bytes"),
                 ({"op": "get_file", "path": "a", "max_bytes": True}, "max_bytes"),
                 ({"op": "delete_file"}, "non-empty string")]
        for msg, needle in cases:
            with self.assertRaises(h.InputError, msg=str(msg)) as cm:
                h.parse_file_op(msg, cfg)
            self.assertIn(needle, str(cm.exception))

    def test_check_reply(self):
        get = {"op": "get_file", "path": "a.txt", "max_bytes": 5}
        data = base64.b64encode(b"hello").decode()
        ok = {"ok": True, "result": {"path": "a.txt", "size": 5, "mime_type": "text/plain",
                                     "data_b64": data}}
        self.assertEqual(h.check_reply(get, ok), (True, ok["result"]))
        for result in ({"path": "b.txt", "size": 5, "mime_type": "x", "data_b64": data},
                       {"path": "a.txt", "size": 4, "mime_type": "x", "data_b64": data},
                       {"path": "a.txt", "size": 6, "mime_type": "x",
                        "data_b64": base64.b64encode(b"hello!").decode()},
                       {"path": "a.txt", "size": 5, "mime_type": "x", "data_b64": "@@@@@@@@"},
                       {"path": "a.txt", "size": 5, "mime_type": None, "data_b64": data}, []):
            with self.assertRaises(ValueError, msg=str(result)):
                h.check_reply(get, {"ok": True, "result": result})
        self.assertEqual(h.check_reply(get, {"ok": False, "error": "e" * 5000}), (False, "e" * 2000))
        for bad in ({"ok": False}, {"ok": "yes", "error": "x"}, {}):
            with self.assertRaises(ValueError):
                h.check_reply(get, bad)
        lst = {"op": "list_files", "max_entries": 2}
        entry = {"path": "a", "size": 1, "mime_type": "m" * 300, "mtime": 1.5, "extra": 1}
        ok, res = h.check_reply(lst, {"ok": True, "result": {"files": [entry], "truncated": True}})
        self.assertEqual(res, {"files": [{"path": "a", "size": 1, "mime_type": "m" * 200,
                                          "mtime": 1.5}], "truncated": True})
        for result in ({"files": [entry] * 3, "truncated": False}, {"files": [entry]},
                       {"files": [dict(entry, size=-1)], "truncated": False},
                       {"files": [dict(entry, mtime=float("nan"))], "truncated": False},
                       {"files": [dict(entry, path="")], "truncated": False}):
            with self.assertRaises(ValueError, msg=str(result)):
                h.check_reply(lst, {"ok": True, "result": result})
        # What Z knows itself is not taken from U.
        put = {"op": "put_files", "sizes": [("a", 3)]}
        self.assertEqual(h.check_reply(put, {"ok": True, "result": {"files": "forged"}}),
                         (True, {"files": [{"path": "a", "size": 3}]}))
        self.assertEqual(h.check_reply({"op": "delete_file", "path": "a"},
                                       {"ok": True, "result": {"path": "/etc"}}),
                         (True, {"path": "a"}))

    def test_reply_bound(self):
        self.assertGreaterEqual(h.reply_bound({"op": "get_file", "path": "a", "max_bytes": 3 << 20}),
                                4 << 20)
        self.assertLess(h.reply_bound({"op": "get_file", "path": "a", "max_bytes": 0}), 1 << 17)
        self.assertGreater(h.reply_bound({"op": "list_files", "max_entries": 1000}), 1000 * 6 * 4096)
        self.assertEqual(h.reply_bound({"op": "delete_file", "path": "a"}), 64 << 10)

    def test_changed_files(self):
        before = {"a": (1, 10, 5), "b": (2, 20, 6), "gone": (1, 1, 1)}
        after = {"a": (1, 10, 5), "b": (2, 21, 6), "c": (0, 1, 7)}
        self.assertEqual(h.changed_files(before, after), ["b", "c"])
        self.assertEqual(h.changed_files({"a": (1, 10, 5)}, {"a": (1, 10, 8)}), ["a"])  # replaced

    def test_memory_usage(self):
        with tempfile.TemporaryDirectory() as d:
            self.assertIsNone(h.read_memory_usage(d))
            with open(os.path.join(d, "memory.current"), "w") as f:
                f.write("123\n")
            self.assertEqual(h.read_memory_usage(d), 123)
            os.mkdir(os.path.join(d, "memory"))
            with open(os.path.join(d, "memory", "memory.usage_in_bytes"), "w") as f:
                f.write("456\n")
            self.assertEqual(h.read_memory_usage(d), 456)  # v1 first, as this engine shows

    def test_verdicts(self):
        v = h.decide_verdict(kill_reason="corrupt", corrupt="garbage")
        self.assertEqual(v, ("error", None, signal.SIGKILL, "garbage"))
        self.assertEqual(h.death_reason(exited(3), None, 0),
                         "the session's process exited with status 3")
        self.assertIn("signal 9 (SIGKILL)", h.death_reason(None, killed(9), 0))
        self.assertIn("OOM killer", h.death_reason(killed(9), None, 1))
        self.assertEqual(h.death_reason(None, None, 0), "the session's process ended")

    def test_earlier_cell_lines_in_tracebacks(self):
        sources = h.CellSources()
        ns = {}
        cell1 = "x = 1\n\ndef f():\n    return 1 / 0\n"
        cell2 = "y = 2\nf()\nz = 3\n"
        for src in (cell1, cell2):
            h.register_source(src)
            body, expr = h.split_cell(src)
            sources.add(src, (body, expr))
            try:
                exec(body, ns)
            except ZeroDivisionError as e:
                exc = e
        text = h.format_exception_trimmed(exc, drop_files=(__file__,), sources=sources)
        self.assertIn('line 2, in <module>\n    f()\n', text)
        self.assertIn('line 4, in f\n    return 1 / 0\n', text)  # cell 1's line, not cell 2's
        self.assertEqual(h.linecache.cache[h.CELL_FILENAME][2], cell2.splitlines(True))


class SessionFilesTest(unittest.TestCase):
    """U's file operations, on a temporary work dir."""

    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="harness-files-")
        self.addCleanup(lambda: __import__("shutil").rmtree(self.root, ignore_errors=True))
        self.work = os.path.join(self.root, "work")

    def test_put_list_get_delete(self):
        h.put_files(self.work, [("d/a.csv", b"1,2\n"), ("b.bin", b"\0" * 5)], 1 << 20)
        h.put_files(self.work, [("b.bin", b"new")], 1 << 20)  # overwrite
        os.symlink("/etc/passwd", os.path.join(self.work, "link"))
        os.mkfifo(os.path.join(self.work, "fifo"))
        files, truncated = h.list_files(self.work, 10)
        self.assertEqual([(f["path"], f["size"], f["mime_type"]) for f in files],
                         [("b.bin", 3, "application/octet-stream"), ("d/a.csv", 4, "text/csv")])
        self.assertFalse(truncated)
        self.assertIsInstance(files[0]["mtime"], float)
        self.assertEqual(h.list_files(self.work, 1)[1], True)
        got = h.get_file(self.work, "d/a.csv", 10)
        self.assertEqual((got["size"], base64.b64decode(got["data_b64"])), (4, b"1,2\n"))
        errors = [("nope", 10, "no such file: nope"), ("d", 10, "not a regular file: d"),
                  ("link", 10, "not a regular file: link"), ("fifo", 10, "not a regular file: fifo"),
                  ("d/a.csv", 3, "d/a.csv is 4 bytes, more than the limit of 3 bytes"),
                  ("b.bin/x", 10, "no such file: b.bin/x"), ("q/x", 10, "no such file: q/x")]
        for path, limit, message in errors:
            with self.assertRaises(h.FileOpError) as cm:
                h.get_file(self.work, path, limit)
            self.assertEqual(str(cm.exception), message)
        self.assertEqual(h.delete_file(self.work, "b.bin"), {"path": "b.bin"})
        for path, message in (("b.bin", "no such file: b.bin"), ("d", "not a regular file: d"),
                              ("link", "not a regular file: link")):
            with self.assertRaises(h.FileOpError) as cm:
                h.delete_file(self.work, path)
            self.assertEqual(str(cm.exception), message)
        self.assertTrue(os.path.exists("/etc/passwd"))

    def test_symlinked_parents_are_refused(self):
        outside = os.path.join(self.root, "outside")
        os.mkdir(outside)
        h.put_files(self.work, [("x", b"")], 1 << 20)
        os.symlink(outside, os.path.join(self.work, "esc"))
        with self.assertRaises(h.FileOpError) as cm:
            h.put_files(self.work, [("esc/f", b"data")], 1 << 20)
        self.assertIn("symbolic link", str(cm.exception))
        self.assertEqual(os.listdir(outside), [])
        with open(os.path.join(outside, "f"), "w") as f:
            f.write("secret")
        for fn in (lambda: h.get_file(self.work, "esc/f", 100),
                   lambda: h.delete_file(self.work, "esc/f")):
            with self.assertRaises(h.FileOpError):
                fn()
        # A symlink as the target itself is replaced, not followed.
        os.symlink(os.path.join(outside, "f"), os.path.join(self.work, "l"))
        h.put_files(self.work, [("l", b"mine")], 1 << 20)
        self.assertFalse(os.path.islink(os.path.join(self.work, "l")))
        with open(os.path.join(outside, "f")) as f:
            self.assertEqual(f.read(), "secret")
        with self.assertRaises(h.FileOpError) as cm:
            h.put_files(self.work, [("x/y", b"")], 1 << 20)
        self.assertIn("x is not a directory", str(cm.exception))
        os.mkdir(os.path.join(self.work, "dir"))
        with self.assertRaises(h.FileOpError) as cm:
            h.put_files(self.work, [("dir", b"")], 1 << 20)
        self.assertIn("it is a directory", str(cm.exception))

    def test_snapshot(self):
        h.put_files(self.work, [("a", b"1"), ("s/b", b"2")], 1 << 20)
        before = h.snapshot_files(self.work)
        self.assertEqual(list(before), ["a", "s/b"])
        h.put_files(self.work, [("s/b", b"22"), ("c", b"")], 1 << 20)
        self.assertEqual(h.changed_files(before, h.snapshot_files(self.work)), ["c", "s/b"])


class ReapTest(unittest.TestCase):
    """F waits for the last run's processes before preparing the next run (bounded)."""

    def _child(self, seconds):
        pid = os.fork()
        if pid == 0:
            time.sleep(seconds)
            os._exit(0)
        return pid

    def test_waits_for_children_that_are_ending(self):
        children = {self._child(0.1), self._child(0.2)}
        h._reap_within(children, 5.0)
        self.assertEqual(children, set())

    def test_gives_up_after_the_bound(self):
        pid = self._child(30)
        self.addCleanup(lambda: (os.kill(pid, signal.SIGKILL), os.waitpid(pid, 0)))
        children = {pid}
        h._reap_within(children, 0.05)
        self.assertEqual(children, {pid})


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


def _proc_status(pid):
    with open("/proc/%d/status" % pid) as f:
        return dict(line.split(":\t", 1) for line in f.read().splitlines() if ":\t" in line)


class SleeperInitTest(unittest.TestCase):
    """The run's init: a CLONE_VM child sleeping in pause(), with no signal handler and SIGCHLD
    ignored; I reaps U and G and reports both."""

    def test_sleeper_dispositions_and_kill(self):
        k = h.Kernel()
        int_before = signal.getsignal(signal.SIGINT)
        pid = h._spawn_init(k)
        try:
            # I's own dispositions are restored at once
            self.assertIs(signal.getsignal(signal.SIGINT), int_before)
            self.assertEqual(signal.getsignal(signal.SIGCHLD), signal.SIG_DFL)
            for _ in range(200):
                st = _proc_status(pid)
                if st["State"].startswith("S"):
                    break
                time.sleep(0.01)
            self.assertTrue(st["State"].startswith("S"), st["State"])
            ign, cgt = int(st["SigIgn"], 16), int(st["SigCgt"], 16)
            self.assertTrue(ign & (1 << (signal.SIGCHLD - 1)), "SIGCHLD not ignored")
            self.assertFalse(cgt & (1 << (signal.SIGINT - 1)), "a SIGINT handler")
            self.assertEqual(cgt & ((1 << 31) - 1), 0, "handlers for standard signals")
        finally:
            os.kill(pid, signal.SIGKILL)
            _, status = os.waitpid(pid, 0)
        self.assertEqual(status, killed(signal.SIGKILL))

    def test_reap_run_reports_u_then_g(self):
        # I reports U's end at once but leaves G alone: Z ends the namespace (kills G) after
        # `done`, so the teardown of U's address space does not compete with the report.
        r, w = os.pipe()
        pid_r, pid_w = os.pipe()
        helper = os.fork()
        if helper == 0:  # plays I: sleeper G, U exiting 3, then the reaping loop
            try:
                os.close(r)
                os.close(pid_r)
                gpid = h._spawn_init(h.Kernel())
                os.write(pid_w, b"%d\n" % gpid)
                upid = os.fork()
                if upid == 0:
                    os._exit(3)
                h._reap_run(w, gpid, upid)
            finally:
                os._exit(0)
        os.close(w)
        os.close(pid_w)
        gpid = int(os.read(pid_r, 64))
        os.close(pid_r)
        dec = h.FrameDecoder()
        recs = []
        while len(recs) < 1:
            chunk = os.read(r, 4096)
            self.assertTrue(chunk, "no ustatus before EOF")
            dec.feed(chunk)
            recs += [json.loads(payload) for _, payload in dec.frames()]
        self.assertEqual([x["t"] for x in recs], ["ustatus"])
        self.assertEqual(recs[0]["status"], exited(3))
        self.assertIn("cpu_ms", recs[0])
        time.sleep(0.2)
        self.assertEqual(os.waitpid(helper, os.WNOHANG), (0, 0), "I must wait for G")
        os.kill(gpid, signal.SIGKILL)  # what Z does after `done`
        data = b""
        while True:
            chunk = os.read(r, 4096)
            if not chunk:
                break
            data += chunk
        os.close(r)
        os.waitpid(helper, 0)
        dec.feed(data)
        recs = [json.loads(payload) for _, payload in dec.frames()]
        self.assertEqual([x["t"] for x in recs], ["gstatus"])
        self.assertEqual(recs[0]["status"], killed(signal.SIGKILL))


class ResultChecksTest(unittest.TestCase):
    """The checks Z applies to U's claims (file paths, tracebacks)."""

    def test_result_paths(self):
        for ok in ("a", "a/b.txt", "dir/sub/é.csv", "x" * 255, "/".join(["d"] * 300)[:1023]):
            self.assertIsNone(h.result_path_error(ok), ok)
        bad = ["", None, 3, "/etc/passwd", "../../etc/forged", "a/../b", "./a", "a/./b", "a//b",
               "a/", "a\x00b", "new\nline", "tab\there", "del\x7f", "bad\udcff.txt",
               "x" * 1025, "a/" + "y" * 256]
        for path in bad:
            self.assertIsNotNone(h.result_path_error(path), repr(path))

    def test_cut_text(self):
        self.assertEqual(h.cut_text("short", 100), "short")
        cut = h.cut_text("é" * 1000, 100)
        self.assertLessEqual(len(cut.encode()), 100)
        self.assertTrue(cut.endswith(" bytes omitted]"), cut)
        kept = cut[:cut.index(" [...")]
        self.assertEqual(len(kept.encode()) + int(cut.split()[-3]), 2000)

    L = {"max_frames": 100, "max_message_bytes": 8192, "max_name_bytes": 512,
         "max_total_bytes": 65536}

    def test_bound_traceback_frames(self):
        tb = {"type": "RecursionError", "message": "m",
              "frames": [{"file": "<cell>", "line": i, "function": "f"} for i in range(10 ** 6)]}
        b = h.bound_traceback(tb, self.L)
        self.assertEqual(len(b["frames"]), 100)
        self.assertEqual(b["frames"][49]["line"], 49)
        self.assertEqual(b["frames"][50], h.omitted_frame(10 ** 6 - 99))
        self.assertEqual(b["frames"][51]["line"], 10 ** 6 - 49)
        self.assertEqual(h.bound_traceback(b, self.L), b)  # idempotent: the server does it again
        small = {"type": "E", "message": "m", "frames": [{"file": "a", "line": 1, "function": "f"}]}
        self.assertEqual(h.bound_traceback(small, self.L), small)
        self.assertIsNone(h.bound_traceback("not a traceback", self.L))
        marked = {"type": "E", "message": "m", "frames": [
            {"file": "a", "line": 1, "function": "f"}, h.omitted_frame(5000),
            {"file": "a", "line": 2, "function": "g"}]}
        self.assertEqual(h.bound_traceback(marked, self.L), marked)  # the marker stays put

    def test_bound_traceback_bytes(self):
        tb = {"type": "T" * 5000, "message": "m" * 100000, "frames": [
            {"file": "f" * 5000, "line": "x", "function": "g" * 5000}] * 100 + ["junk"]}
        b = h.bound_traceback(tb, self.L)
        self.assertLessEqual(len(h.encode_json(b)), self.L["max_total_bytes"])
        self.assertLessEqual(len(b["message"].encode()), 8192)
        self.assertLessEqual(len(b["type"].encode()), 512)
        self.assertTrue(all(f["line"] == 0 or f["file"] == "" for f in b["frames"]))
        marker = [f for f in b["frames"] if f["file"] == "" and "omitted" in f["function"]]
        self.assertEqual(len(marker), 1)

    def test_deep_traceback_extracts_only_the_ends(self):
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(20000)
        try:
            def f(n):
                return f(n + 1)
            try:
                f(0)
            except RecursionError as e:
                exc = e
        finally:
            sys.setrecursionlimit(limit)
        tb = h.structured_traceback(exc, drop_files=(), max_frames=100)
        self.assertEqual(len(tb["frames"]), 100)
        self.assertIn("frames omitted", tb["frames"][50]["function"])
        text = h.format_exception_trimmed(exc, drop_files=(), max_frames=100)
        self.assertIn("frames omitted ...]", text)
        self.assertTrue(text.endswith("RecursionError: maximum recursion depth exceeded\n"), text)
        self.assertLess(len(text), 20000)
        full = h.structured_traceback(exc, drop_files=())  # no bound: every frame
        self.assertGreater(len(full["frames"]), 10000)


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)


class WalkTest(unittest.TestCase):
    """The work dir walk survives any tree the code can build."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="harness-walk-")
        self.addCleanup(subprocess.run, ["rm", "-rf", self.dir])  # shutil.rmtree recurses

    def p(self, *parts):
        return os.path.join(self.dir, *parts)

    def test_odd_trees(self):
        import socket as socket_mod
        _write(self.p("top.txt"), "x")
        os.mkdir(self.p("sub"))
        _write(self.p("sub", "a.txt"), "a")
        _write(os.fsencode(self.p("bad")) + b"\xff.txt", "b")
        _write(self.p("new\nline.txt"), "n")
        os.symlink("loop", self.p("loop"))
        os.symlink(".", self.p("self"))
        os.symlink("..", self.p("sub", "up"))
        os.symlink("/etc/passwd", self.p("passwd"))
        os.mkfifo(self.p("fifo"))
        s = socket_mod.socket(socket_mod.AF_UNIX)
        self.addCleanup(s.close)
        s.bind(self.p("sock"))
        with open(self.p("sparse"), "wb") as f:
            f.truncate(1 << 40)
        found, truncated = h.walk_regular_files(self.dir)
        self.assertEqual([rel for rel, _ in found], ["sparse", "sub/a.txt", "top.txt"])
        self.assertTrue(truncated)  # the two names that are no valid result path
        self.assertEqual(found[0][1].st_size, 1 << 40)
        # a FIFO is never opened (it would block); a sparse file is read only up to the bound
        self.assertIsNone(h.read_regular(self.p("fifo"), 10))
        self.assertIsNone(h.read_regular(self.p("passwd"), 10))
        self.assertEqual(h.read_regular(self.p("sparse"), 5), bytes(5))

        class Sender:
            recs = []

            def send(self, rec):
                self.recs.append(rec)
        sender = Sender()
        cfg = {"max_count": 20, "max_total_bytes": 1 << 20}
        self.assertTrue(h._collect_files(self.dir, {}, cfg, sender))
        self.assertEqual([(r["path"], r["offset"], r["last"], base64.b64decode(r["data_b64"]))
                          for r in sender.recs],
                         [("sub/a.txt", 0, True, b"a"), ("top.txt", 0, True, b"x")])
        files, truncated = h.list_files(self.dir, 10)
        self.assertEqual([f["path"] for f in files], ["sparse", "sub/a.txt", "top.txt"])
        self.assertTrue(truncated)

    def test_files_travel_in_pieces(self):
        # A file is sent in FILE_PIECE pieces, in order, the last marked; an empty one is one
        # record; so collecting never holds more than a piece of a file.
        data = os.urandom(2 * h.FILE_PIECE + 5)
        with open(self.p("big.bin"), "wb") as f:
            f.write(data)
        open(self.p("empty"), "wb").close()

        class Sender:
            def __init__(self):
                self.recs = []

            def send(self, rec):
                self.recs.append(rec)
        sender = Sender()
        self.assertTrue(h.send_file_pieces(self.p("big.bin"), "big.bin", 1 << 30, "x/y", sender))
        recs = sender.recs
        self.assertEqual([(r["offset"], r["last"]) for r in recs],
                         [(0, False), (h.FILE_PIECE, False), (2 * h.FILE_PIECE, True)])
        self.assertEqual(b"".join(base64.b64decode(r["data_b64"]) for r in recs), data)
        sender = Sender()
        self.assertTrue(h.send_file_pieces(self.p("big.bin"), "big.bin", h.FILE_PIECE, "x", sender))
        self.assertEqual([(r["offset"], r["last"], len(base64.b64decode(r["data_b64"])))
                          for r in sender.recs], [(0, True, h.FILE_PIECE)])
        sender = Sender()
        self.assertTrue(h.send_file_pieces(self.p("empty"), "empty", 10, "x", sender))
        self.assertEqual([(r["offset"], r["last"], r["data_b64"]) for r in sender.recs],
                         [(0, True, "")])

    def test_depth_and_count_bounds(self):
        cwd = os.getcwd()
        os.chdir(self.dir)
        try:
            for _ in range(1000):  # 2000 bytes of path from the top: deeper than any bound
                os.mkdir("d")
                os.chdir("d")
            _write("deep.txt", "deep")
        finally:
            os.chdir(cwd)
        _write(self.p("top.txt"), "x")
        found, truncated = h.walk_regular_files(self.dir)
        self.assertEqual([rel for rel, _ in found], ["top.txt"])
        self.assertTrue(truncated)
        found, truncated = h.walk_regular_files(self.dir, max_depth=2000)
        self.assertEqual(len(found), 1)  # 'd/'*1000 is longer than a result path may be
        self.assertTrue(truncated)
        many = self.p("many")
        os.mkdir(many)
        for i in range(300):
            _write(os.path.join(many, "f%03d" % i), "")
        found, truncated = h.walk_regular_files(many, max_entries=100)
        self.assertEqual(len(found), 100)
        self.assertTrue(truncated)
        found, truncated = h.walk_regular_files(many)
        self.assertEqual((len(found), truncated), (300, False))


class ForkerTest(unittest.TestCase):
    def test_fd_passing(self):
        import socket as socket_mod
        a, b = socket_mod.socketpair(socket_mod.AF_UNIX, socket_mod.SOCK_SEQPACKET)
        self.addCleanup(a.close)
        self.addCleanup(b.close)
        r, w = os.pipe()
        h.send_fds(a, b'{"pid": 7}', [r, w])
        os.close(r)
        os.close(w)
        data, fds = h.recv_fds(b, 4096, 5)
        self.assertEqual((data, len(fds)), (b'{"pid": 7}', 2))
        os.write(fds[1], b"x")
        self.assertEqual(os.read(fds[0], 1), b"x")
        self.assertFalse(os.get_inheritable(fds[0]))
        for fd in fds:
            os.close(fd)


BOOT = ("import sys;b=sys.stdin.buffer;n=int(b.readline());"
        "exec(compile(b.read(n),'<harness>','exec'))")


class Zygote:
    """The harness as a host process through the real bootstrap, in isolate=false mode."""

    def __init__(self, test, boot_path=None, **config):
        """boot_path: a directory put first on the zygote's sys.path (-I ignores PYTHONPATH)."""
        self.workdir = tempfile.mkdtemp(prefix="harness-test-", dir="/tmp")
        test.addCleanup(self.cleanup)
        boot = BOOT
        if boot_path is not None:
            boot = "import sys;sys.path.insert(0,%r);%s" % (boot_path, BOOT)
        self.proc = subprocess.Popen([sys.executable, "-I", "-u", "-c", boot], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        with open(HARNESS_PATH, "rb") as f:
            src = f.read()
        self.cfg_workdir = os.path.join(self.workdir, "work")
        cfg = harness_config.config({"isolate": False, "preload": [], "warm_plot": False,
                                     "workdir": self.cfg_workdir})
        harness_config.merge(cfg, config)
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

    def test_forged_records_are_checked(self):
        z = Zygote(self)
        z.frames("ready")
        forge = ("import json, os, struct\n"
                 "def forge(rec):\n"
                 "    data = json.dumps(rec).encode()\n"
                 "    for fd in range(3, 64):\n"
                 "        try:\n"
                 "            os.write(fd, struct.pack('>I', len(data)) + b'J' + data)\n"
                 "        except OSError:\n"
                 "            pass\n")
        files = "".join("forge({'t': 'file', 'path': %r, 'size': 1, 'mime_type': 'text/plain', "
                        "'data_b64': 'eA=='})\n" % p
                        for p in ("../../etc/forged", "/etc/passwd", "a//b", "n\nl", "./x"))
        out, err, ev = z.run(forge + files + "forge({'t': 'file', 'path': 'ok', 'size': 5, "
                             "'mime_type': 'x', 'data_b64': 'eA=='})\n")
        done = ev[-1]
        self.assertEqual([e for e in ev if e["ev"] == "file"], [])
        self.assertEqual((done["verdict"], done["files_truncated"]), ("ok", True), done)
        z.frames("ready")
        out, err, ev = z.run(forge + "forge({'t': 'internal', 'message': 'pwned by the code'})\n")
        done = ev[-1]
        self.assertEqual((done["verdict"], done["exit_code"], done["detail"]),
                         ("error", 0, h.RUN_SIDE_FAILURE), done)
        self.assertNotIn("pwned", json.dumps(ev))
        z.frames("ready")
        out, err, ev = z.run("import sys\nsys.setrecursionlimit(100000)\n"
                             "def f(n):\n    return f(n + 1)\nf(0)\n", id="deep")
        tb = ev[-1]["traceback"]
        self.assertEqual((ev[-1]["verdict"], tb["type"], len(tb["frames"])),
                         ("error", "RecursionError", 100))
        self.assertIn("frames omitted", tb["frames"][50]["function"])
        self.assertIn(b"frames omitted ...]", err)
        self.assertLess(len(err), 20000)

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



FAKE_MPL = os.path.join(HERE, "fake_mpl")  # a stand-in for matplotlib (see its __init__.py)


def figure_labels(events):
    """The labels of the fake figures the run's image events carry, in order."""
    labels = []
    for e in events:
        if e["ev"] == "image":
            data = base64.b64decode(e["data_b64"])
            labels.append(data[data.index(b"fig:") + 4:].decode())
    return labels


class FigureCaptureTest(unittest.TestCase):
    """Figures end to end with the fake matplotlib: those shown, then those still open when the
    code ends, once each, in both pool modes and in sessions, preloaded or imported by the cell."""

    IMPORT = "import matplotlib.pyplot as plt\n"

    def zygote(self, preloaded, **config):
        config.setdefault("preload", ["matplotlib"] if preloaded else [])
        z = Zygote(self, boot_path=FAKE_MPL, **config)
        ready = z.frames("ready")[-1][1]
        self.assertEqual(ready["errors"], [])
        self.assertEqual(ready["preloaded"], ["matplotlib"] if preloaded else [])
        return z

    def run_figures(self, z, code, **fields):
        _, err, ev = z.run(self.IMPORT + code, **fields)
        return figure_labels(ev), ev[-1], err

    def test_pool_modes(self):
        cases = [
            # (code, labels, verdict)
            ("plt.plot([3, 1, 2])", ["1"], "ok"),
            ("plt.plot([3, 1, 2])\nx = 1", ["1"], "ok"),
            ("plt.figure(label='a'); plt.show()\nplt.figure(label='b'); plt.plot([2])",
             ["a", "b"], "ok"),
            ("plt.plot([1]); plt.close()", [], "ok"),
            ("plt.figure(label='a'); plt.figure(label='b'); plt.close(1)", ["b"], "ok"),
            ("plt.plot([1])\nraise ValueError('after the plot')", ["1"], "error"),
            ("import sys\nplt.plot([1])\nsys.exit(3)", ["1"], "error"),
            ("import atexit\nplt.plot([1])\natexit.register(plt.close, 'all')", [], "ok"),
            ("import atexit\natexit.register(lambda: plt.figure(label='x'))", ["x"], "ok"),
        ]
        for mode in ("recycle", "fresh"):
            for preloaded in (True, False):
                for code, labels, verdict in cases:
                    with self.subTest(mode=mode, preloaded=preloaded, code=code):
                        z = self.zygote(preloaded, mode=mode)
                        got, done, err = self.run_figures(z, code)
                        self.assertEqual((got, done["verdict"], done["images_truncated"]),
                                         (labels, verdict, False), err)
                        if mode == "recycle":  # the next run starts with no figure
                            z.frames("ready")
                            got, done, _ = self.run_figures(z, "x = 2")
                            self.assertEqual((got, done["verdict"]), ([], "ok"))

    def test_max_figures_bounds_open_figures(self):
        for preloaded in (True, False):
            z = self.zygote(preloaded, image={"max_figures": 2})
            got, done, _ = self.run_figures(z, "plt.figure(label='a'); plt.show()\n"
                                               "for n in 'bcd':\n    plt.figure(label=n)")
            self.assertEqual((got, done["images_truncated"]), (["a", "b"], True))
            z.frames("ready")
            got, done, _ = self.run_figures(z, "plt.figure(label='e')")
            self.assertEqual((got, done["images_truncated"]), (["e"], False))

    def test_session_cells(self):
        for preloaded in (True, False):
            with self.subTest(preloaded=preloaded):
                z = self.zygote(preloaded, mode="session")
                got, done, err = self.run_figures(z, "plt.plot([3, 1, 2])", id="a")
                self.assertEqual((got, done["verdict"]), (["1"], "ok"), err)
                z.frames("ready")
                got, done, _ = self.run_figures(z, "y = 1", id="b")
                self.assertEqual(got, [], "an earlier cell's figure is not returned again")
                z.frames("ready")
                got, _, _ = self.run_figures(z, "plt.figure(label='s'); plt.show()\n"
                                                "plt.figure(label='o')", id="c")
                self.assertEqual(got, ["s", "o"])
                z.frames("ready")
                got, done, _ = self.run_figures(z, "plt.figure(label='e')\n1 / 0", id="d")
                self.assertEqual((got, done["verdict"], done["session_reset"]),
                                 (["e"], "error", False))
                z.frames("ready")
                got, _, _ = self.run_figures(z, "plt.figure(label='c'); plt.close('all')", id="e")
                self.assertEqual(got, [])


def b64(data):
    return base64.b64encode(data).decode()


class SessionModeTest(unittest.TestCase):
    """Session mode end to end without Docker (isolate=false: U is a plain process)."""

    def op(self, z, **msg):
        z.send(msg)
        frames = z.frames("reply")
        return frames[-1][1]

    def test_state_files_and_tracebacks(self):
        z = Zygote(self, mode="session")
        ready = z.frames("ready")[-1][1]
        self.assertEqual((ready["protocol"], ready["mode"], ready["cells"], ready["session_started"]),
                         (3, "session", 0, False))
        out, _, ev = z.run("x = 41\nimport json\ndef f(a):\n    return a * 2\nprint('one')", id="a")
        self.assertEqual((out, ev[-1]["verdict"], ev[-1]["session_reset"], ev[-1]["cells"]),
                         (b"one\n", "ok", False, 1))
        ready = z.frames("ready")[-1][1]
        self.assertEqual((ready["run_count"], ready["cells"], ready["session_started"]), (1, 1, True))
        _, _, ev = z.run("json.dumps(f(x + 1) // 2)", id="b")
        self.assertEqual((ev[-1]["value"], ev[-1]["cells"]), ("'42'", 2))
        z.frames("ready")
        # A function of cell 3 failing when called from cell 4: each frame shows its own line.
        z.run("def g():\n    return 1 / 0\n", id="c")
        z.frames("ready")
        _, err, ev = z.run("y = 1\ng()", id="d")
        self.assertEqual([f["line"] for f in ev[-1]["traceback"]["frames"]], [2, 2])
        self.assertIn(b"line 2, in <module>\n    g()\n", err)
        self.assertIn(b"line 2, in g\n    return 1 / 0\n", err)
        z.frames("ready")
        # Files: put, then only what a cell creates or changes comes back, once.
        reply = self.op(z, op="put_files", id="p", files=[{"path": "in/a.csv", "content_b64": b64(b"a\n1\n")}])
        self.assertEqual(reply, {"ev": "reply", "id": "p", "ok": True,
                                 "result": {"files": [{"path": "in/a.csv", "size": 4}]}})
        _, _, ev = z.run("import os\nos.chdir('/')\n"
                         "open(os.path.join(%r, 'out.txt'), 'w').write('x')" % z.cfg_workdir, id="e",
                         files=[{"path": "req.txt", "content_b64": b64(b"r")},
                                {"path": "in/a.csv", "content_b64": b64(b"a\n2\n")}])
        self.assertEqual([e["path"] for e in ev if e["ev"] == "file"], ["out.txt"])
        z.frames("ready")
        out, _, ev = z.run("import os\nprint(os.getcwd())", id="f")  # cell e's chdir persists
        self.assertEqual(out, b"/\n")
        z.frames("ready")
        _, _, ev = z.run("import os\nos.chdir(%r)\nopen('req.txt', 'a').write('!')" % z.cfg_workdir,
                         id="g")
        self.assertEqual([(e["path"], b64(b"r!")) for e in ev if e["ev"] == "file"],
                         [("req.txt", e["data_b64"]) for e in ev if e["ev"] == "file"])
        z.frames("ready")
        reply = self.op(z, op="list_files", id="l")
        self.assertEqual([(f["path"], f["size"]) for f in reply["result"]["files"]],
                         [("in/a.csv", 4), ("out.txt", 1), ("req.txt", 2)])
        reply = self.op(z, op="get_file", id="g1", path="in/a.csv")
        self.assertEqual(base64.b64decode(reply["result"]["data_b64"]), b"a\n2\n")
        reply = self.op(z, op="get_file", id="g2", path="req.txt", max_bytes=1)
        self.assertEqual(reply, {"ev": "reply", "id": "g2", "ok": False,
                                 "error": "req.txt is 2 bytes, more than the limit of 1 bytes"})
        self.assertEqual(self.op(z, op="get_file", id="g3", path="../x")["error"],
                         "file path '../x' contains '..'")
        self.assertEqual(self.op(z, op="delete_file", id="d", path="out.txt")["ok"], True)
        self.assertEqual(self.op(z, op="get_file", id="g4", path="out.txt")["error"],
                         "no such file: out.txt")
        z.send({"op": "ping"})
        pong = z.frames("pong")[-1][1]
        self.assertEqual((pong["busy"], pong["cells"], pong["session_started"]), (False, 7, True))

    def test_exit_codes_memory_and_limits(self):
        z = Zygote(self, mode="session")
        z.frames("ready")
        self.assertEqual(self.op(z, op="session", id="s", limits={"memory_bytes": 64 << 20}),
                         {"ev": "reply", "id": "s", "ok": True})
        out, _, ev = z.run("import resource\nkeep = 'kept'\n"
                           "print(resource.getrlimit(resource.RLIMIT_CPU)[0] == resource.RLIM_INFINITY)\n"
                           "import sys\nsys.exit(2)", limits={"cpu_s": 1})
        self.assertEqual((out, ev[-1]["verdict"], ev[-1]["exit_code"], ev[-1]["session_reset"]),
                         (b"True\n", "error", 2, False))
        z.frames("ready")
        z.send({"op": "session", "limits": {"nproc": 50}})  # no id: null; only for a next U
        self.assertEqual(z.frames("reply")[-1][1], {"ev": "reply", "id": None, "ok": True})
        _, _, ev = z.run("raise SystemExit")
        self.assertEqual((ev[-1]["verdict"], ev[-1]["exit_code"]), ("ok", 0))
        z.frames("ready")
        for i in range(2):  # the narrowed budget holds for every cell, not only the first
            _, err, ev = z.run("b = bytearray(256 << 20)", id="m%d" % i)
            self.assertEqual((ev[-1]["verdict"], ev[-1]["session_reset"], ev[-1]["exit_code"]),
                             ("memory", False, 1), ev[-1])
            self.assertIn(b"MemoryError", err)
            self.assertIn("memory limit of %d bytes" % (64 << 20), ev[-1]["detail"])
            z.frames("ready")
        out, _, ev = z.run("small = bytearray(8 << 20)\nprint(keep)")
        self.assertEqual((out, ev[-1]["verdict"]), (b"kept\n", "ok"))
        z.frames("ready")

    def test_put_files_limits(self):
        z = Zygote(self, mode="session", files_in={"max_count": 2, "max_total_bytes": 4096})
        z.frames("ready")
        self.op(z, op="session", id="s", limits={"fsize_bytes": 1000})
        reply = self.op(z, op="put_files", id="p", files=[{"path": "ok", "content_b64": b64(b"x")},
                                                          {"path": "big", "content_b64": b64(b"y" * 2000)}])
        self.assertEqual(reply["error"], "cannot write big: it is more than the limit of 1000 bytes per file")
        listed = self.op(z, op="list_files", id="l")["result"]["files"]
        self.assertEqual([f["path"] for f in listed], ["ok"])  # the failed file is removed
        reply = self.op(z, op="put_files", id="p2", files=[{"path": "a", "content_b64": b64(b"z" * 5000)}])
        self.assertEqual(reply["error"], "input files exceed the limit of 4096 bytes in total")
        reply = self.op(z, op="put_files", id="p3", files=[{"path": str(i), "content_b64": ""}
                                                           for i in range(3)])
        self.assertEqual(reply["error"], "3 input files exceed the limit of 2")
        _, _, ev = z.run("print(1)", files=[{"path": "big", "content_b64": b64(b"y" * 2000)}])
        self.assertEqual((ev[-1]["verdict"], ev[-1]["exit_code"], [e["ev"] for e in ev]),
                         ("error", None, ["done"]))
        self.assertEqual(ev[-1]["detail"], "input files could not be written: cannot write big: "
                                           "it is more than the limit of 1000 bytes per file")

    def test_resets(self):
        z = Zygote(self, mode="session")
        z.frames("ready")
        reset_note = "the session was restarted empty (variables and files are lost)"
        killers = (("while True: pass", {"timeout_s": 0.5}, "timeout"),
                   ("import os\nprint('bye', flush=True)\nos._exit(3)", {}, "error"),
                   ("while True: print('x' * 99)", {"output_bytes": 1000}, "output_limit"),
                   ("import os\nos.kill(os.getpid(), 11)", {}, "signal"))
        for i, (code, limits, verdict) in enumerate(killers):
            self.op(z, op="put_files", id="p", files=[{"path": "f.txt", "content_b64": ""}])
            z.run("x = 1")
            z.frames("ready")
            out, _, ev = z.run(code, limits=limits, id="k")
            done = ev[-1]
            self.assertEqual((done["verdict"], done["session_reset"], done["cells"]),
                             (verdict, True, 2 if i == 0 else 3), done)
            self.assertTrue(done["detail"].endswith(reset_note), done["detail"])
            if verdict == "error":
                self.assertEqual((out, done["exit_code"]), (b"bye\n", 3))
            ready = z.frames("ready")[-1][1]
            self.assertEqual((ready["cells"], ready["session_started"]), (0, False))
            _, err, ev = z.run("print(os.listdir('.'))\nx")
            self.assertEqual((ev[-1]["verdict"], ev[-1]["cells"]), ("error", 1))
            self.assertIn(b"NameError", err)
            z.frames("ready")
        # cancel
        z.send({"op": "run", "id": "c", "code": "import time\ntime.sleep(30)"})
        z.frames("started")
        z.send({"op": "cancel", "id": "c"})
        done = z.frames("done")[-1][1]
        self.assertEqual((done["verdict"], done["session_reset"]), ("cancelled", True))
        z.frames("ready")
        # Death between cells: a session_reset event, then ready; the next cell runs in a new U.
        _, _, ev = z.run("import threading, os, time\nv = 1\n"
                         "threading.Thread(target=lambda: (time.sleep(0.5), os._exit(4))).start()")
        self.assertEqual(ev[-1]["session_reset"], False)
        z.frames("ready")
        t0 = time.monotonic()
        frames = z.frames("ready")
        self.assertEqual(frames[0][1], {"ev": "session_reset", "reason":
                                        "the session's process exited with status 4; " + reset_note})
        self.assertLess(time.monotonic() - t0, 3)
        _, err, ev = z.run("v")
        self.assertIn(b"NameError", err)

    def test_background_output_and_threads(self):
        z = Zygote(self, mode="session")
        z.frames("ready")
        # A thread writing 200 KB/s between cells (more than a pipe holds) must block nothing.
        _, _, ev = z.run("import threading, time, sys\nstop = False\n"
                         "def spam():\n    while not stop:\n        sys.stdout.write('y' * 20000 + '\\n')\n"
                         "        time.sleep(0.1)\n"
                         "t = threading.Thread(target=spam, daemon=True)\nt.start()\nprint('started')")
        self.assertEqual(ev[-1]["verdict"], "ok")
        z.frames("ready")
        time.sleep(1.0)
        out, _, ev = z.run("stop = True\nt.join()\nprint('joined')", limits={"timeout_s": 5})
        self.assertEqual(ev[-1]["verdict"], "ok")
        self.assertTrue(out.endswith(b"joined\n"))
        z.frames("ready")
        # A thread still running when its cell ends is not joined.
        t0 = time.monotonic()
        _, _, ev = z.run("import threading, time\nthreading.Thread(target=time.sleep, args=(5,)).start()")
        self.assertLess(time.monotonic() - t0, 2)
        z.frames("ready")
        z.send({"op": "exit"})
        self.assertEqual(z.proc.wait(10), 0)
        self.assertIn(b"bytes written between cells", z.proc.stderr.read())

    def test_resume_returns_the_record_and_the_watchdog_ends_an_abandoned_session(self):
        z = Zygote(self, mode="session", watchdog_s=60)
        z.frames("ready")
        record = {"v": 1, "principal": "alice", "mac": "00"}
        self.assertEqual(self.op(z, op="session", id="s", record=record)["ok"], True)
        out, _, ev = z.run("x = 41\nprint(x)")
        self.assertEqual(out, b"41\n")
        z.frames("ready")
        reply = self.op(z, op="resume", id="r")
        self.assertEqual(reply["ok"], True)
        result = reply["result"]
        self.assertEqual(result["record"], record)
        self.assertEqual((result["protocol"], result["watchdog_s"]), (h.PROTOCOL_VERSION, 60.0))
        self.assertGreaterEqual(result["idle_s"], 0)
        self.assertEqual(result["session_started"], True)
        out, _, ev = z.run("print(x + 1)")
        self.assertEqual(out, b"42\n")  # a resume changes nothing of the session
        z.frames("ready")
        # A short watchdog and no server any more: the harness exits by itself.
        self.assertEqual(self.op(z, op="session", id="w", watchdog_s=0.5)["ok"], True)
        self.assertEqual(z.proc.wait(30), 0)
        self.assertIn(b"no message from a server", z.proc.stderr.read())

    def test_record_and_watchdog_are_checked(self):
        self.assertIsNone(h.parse_session_record({"op": "session"}))
        for bad in ("text", [1], {"big": "x" * 5000}):
            with self.assertRaises(h.ProtocolError, msg=repr(bad)[:40]):
                h.parse_session_record({"op": "session", "record": bad})
        self.assertEqual(h.parse_watchdog({"watchdog_s": 0}, "config"), 0.0)
        for bad in (-1, "5", True, float("inf")):
            with self.assertRaises(h.ProtocolError, msg=repr(bad)):
                h.parse_watchdog({"watchdog_s": bad}, "config")
        with self.assertRaises(h.ProtocolError):
            h.parse_watchdog({}, "config")

    def test_op_timeout_and_untrusted_replies(self):
        z = Zygote(self, mode="session", op_timeout_s=1)
        z.frames("ready")
        self.op(z, op="put_files", id="p", files=[{"path": "a.txt", "content_b64": b64(b"abc")}])
        # The cell reaches the harness's globals in its own process and forges answers.
        # (through the stack: the harness's objects are frozen, so gc.get_objects() omits them)
        z.run("import sys\nf = sys._getframe()\nwhile 'check_reply' not in f.f_globals:\n    f = f.f_back\n"
              "H = f.f_globals\n"
              "H['list_files'] = lambda w, n: ([{'path': 'p', 'size': -5, 'mime_type': 'x', 'mtime': 1}], False)\n"
              "H['get_file'] = lambda w, r, m: {'path': r, 'size': 1, 'mime_type': 'x', 'data_b64': 'QUJD' * (1 << 20)}\n"
              "x = 'alive'")
        z.frames("ready")
        reply = self.op(z, op="list_files", id="l")
        self.assertEqual(reply["ok"], False)
        self.assertIn("invalid answer", reply["error"])
        out, _, ev = z.run("print(x)")
        self.assertEqual(out, b"alive\n")  # an invalid but well-framed answer keeps the session
        z.frames("ready")
        z.send({"op": "get_file", "id": "g", "path": "a.txt", "max_bytes": 10})
        frames = z.frames("ready")
        events = [p for k, p in frames if k == b"J"]
        self.assertEqual([e["ev"] for e in events], ["reply", "session_reset", "ready"])
        self.assertEqual(events[0]["ok"], False)
        self.assertIn("exceeded", events[0]["error"])
        # A thread holding the GIL: the op times out, the session is reset.
        z.run("import threading, re, time\npat = re.compile(r'(a+)+$')\n"
              "def hog():\n    time.sleep(0.3)\n    pat.match('a' * 60 + 'b')\n"
              "threading.Thread(target=hog, daemon=True).start()")
        z.frames("ready")
        time.sleep(0.6)
        t0 = time.monotonic()
        z.send({"op": "list_files", "id": "t"})
        frames = z.frames("ready")
        events = [p for k, p in frames if k == b"J"]
        self.assertEqual([e["ev"] for e in events], ["reply", "session_reset", "ready"])
        self.assertIn("did not finish within 1 s", events[0]["error"])
        self.assertLess(time.monotonic() - t0, 4)

    def test_protocol(self):
        z = Zygote(self)  # recycle: file ops are answered, the session op is a protocol error
        z.frames("ready")
        self.assertEqual(self.op(z, op="get_file", id="g", path="a"),
                         {"ev": "reply", "id": "g", "ok": False,
                          "error": "file operations need session mode"})
        done = z.run("pass")[2][-1]
        self.assertEqual(done["session_reset"], False)
        self.assertNotIn("cells", done)
        z.frames("ready")
        z.send({"op": "session"})
        self.assertIn("session mode", z.frames("fatal")[-1][1]["message"])
        z = Zygote(self, mode="session")
        z.frames("ready")
        # A run sent right behind a file op waits for the op's reply.
        z.send({"op": "put_files", "id": "p", "files": []})
        z.send({"op": "run", "id": "r", "code": "print('ran')"})
        frames = z.frames("done")
        self.assertEqual([p["ev"] for k, p in frames if k == b"J"], ["reply", "started", "done"])
        z.frames("ready")
        # The session op is also answered during a run; a file op during a run is a protocol error.
        z.send({"op": "run", "id": "r2", "code": "import time\ntime.sleep(0.5)"})
        z.frames("started")
        z.send({"op": "session", "id": "s"})
        self.assertEqual(z.frames("reply")[-1][1]["id"], "s")
        z.send({"op": "list_files", "id": "l"})
        self.assertIn("in progress", z.frames("fatal")[-1][1]["message"])
        z = Zygote(self, mode="session")
        z.frames("ready")
        z.send({"op": "list_files"})
        self.assertIn("list_files.id", z.frames("fatal")[-1][1]["message"])

if __name__ == "__main__":
    unittest.main()
