"""The zygote's checks of the run process's claims (checks.py)."""

import base64
import sys
import unittest

import harness_config
from sandbox_harness import checks, config, tracebacks, wire


def setUpModule():
    # The bounds of paths and of the work dir's walk, as the zygote sets them at start.
    config.apply_config(config.parse_config(harness_config.config()))


class ResultChecksTest(unittest.TestCase):
    """The checks Z applies to U's claims (file paths, tracebacks)."""

    def test_result_paths(self):
        for ok in ("a", "a/b.txt", "dir/sub/é.csv", "x" * 255, "/".join(["d"] * 300)[:1023]):
            self.assertIsNone(checks.result_path_error(ok), ok)
        bad = ["", None, 3, "/etc/passwd", "../../etc/forged", "a/../b", "./a", "a/./b", "a//b",
               "a/", "a\x00b", "new\nline", "tab\there", "del\x7f", "bad\udcff.txt",
               "x" * 1025, "a/" + "y" * 256]
        for path in bad:
            self.assertIsNotNone(checks.result_path_error(path), repr(path))

    def test_cut_text(self):
        self.assertEqual(checks.cut_text("short", 100), "short")
        cut = checks.cut_text("é" * 1000, 100)
        self.assertLessEqual(len(cut.encode()), 100)
        self.assertTrue(cut.endswith(" bytes omitted]"), cut)
        kept = cut[:cut.index(" [...")]
        self.assertEqual(len(kept.encode()) + int(cut.split()[-3]), 2000)

    L = {"max_frames": 100, "max_message_bytes": 8192, "max_name_bytes": 512,
         "max_total_bytes": 65536}

    def test_bound_traceback_frames(self):
        tb = {"type": "RecursionError", "message": "m",
              "frames": [{"file": "<cell>", "line": i, "function": "f"} for i in range(10 ** 6)]}
        b = checks.bound_traceback(tb, self.L)
        self.assertEqual(len(b["frames"]), 100)
        self.assertEqual(b["frames"][49]["line"], 49)
        self.assertEqual(b["frames"][50], checks.omitted_frame(10 ** 6 - 99))
        self.assertEqual(b["frames"][51]["line"], 10 ** 6 - 49)
        self.assertEqual(checks.bound_traceback(b, self.L), b)  # idempotent: the server does it again
        small = {"type": "E", "message": "m", "frames": [{"file": "a", "line": 1, "function": "f"}]}
        self.assertEqual(checks.bound_traceback(small, self.L), small)
        self.assertIsNone(checks.bound_traceback("not a traceback", self.L))
        marked = {"type": "E", "message": "m", "frames": [
            {"file": "a", "line": 1, "function": "f"}, checks.omitted_frame(5000),
            {"file": "a", "line": 2, "function": "g"}]}
        self.assertEqual(checks.bound_traceback(marked, self.L), marked)  # the marker stays put

    def test_bound_traceback_bytes(self):
        tb = {"type": "T" * 5000, "message": "m" * 100000, "frames": [
            {"file": "f" * 5000, "line": "x", "function": "g" * 5000}] * 100 + ["junk"]}
        b = checks.bound_traceback(tb, self.L)
        self.assertLessEqual(len(wire.encode_json(b)), self.L["max_total_bytes"])
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
        tb = tracebacks.structured_traceback(exc, drop_files=(), max_frames=100)
        self.assertEqual(len(tb["frames"]), 100)
        self.assertIn("frames omitted", tb["frames"][50]["function"])
        text = tracebacks.format_exception_trimmed(exc, drop_files=(), max_frames=100)
        self.assertIn("frames omitted ...]", text)
        self.assertTrue(text.endswith("RecursionError: maximum recursion depth exceeded\n"), text)
        self.assertLess(len(text), 20000)
        full = tracebacks.structured_traceback(exc, drop_files=())  # no bound: every frame
        self.assertGreater(len(full["frames"]), 10000)


class ReplyCheckTest(unittest.TestCase):
    """File-op replies from U."""

    def test_check_reply(self):
        get = {"op": "get_file", "path": "a.txt", "max_bytes": 5}
        data = base64.b64encode(b"hello").decode()
        ok = {"ok": True, "result": {"path": "a.txt", "size": 5, "mime_type": "text/plain",
                                     "data_b64": data}}
        self.assertEqual(checks.check_reply(get, ok), (True, ok["result"]))
        for result in ({"path": "b.txt", "size": 5, "mime_type": "x", "data_b64": data},
                       {"path": "a.txt", "size": 4, "mime_type": "x", "data_b64": data},
                       {"path": "a.txt", "size": 6, "mime_type": "x",
                        "data_b64": base64.b64encode(b"hello!").decode()},
                       {"path": "a.txt", "size": 5, "mime_type": "x", "data_b64": "@@@@@@@@"},
                       {"path": "a.txt", "size": 5, "mime_type": None, "data_b64": data}, []):
            with self.assertRaises(ValueError, msg=str(result)):
                checks.check_reply(get, {"ok": True, "result": result})
        self.assertEqual(checks.check_reply(get, {"ok": False, "error": "e" * 5000}), (False, "e" * 2000))
        for bad in ({"ok": False}, {"ok": "yes", "error": "x"}, {}):
            with self.assertRaises(ValueError):
                checks.check_reply(get, bad)
        lst = {"op": "list_files", "max_entries": 2}
        entry = {"path": "a", "size": 1, "mime_type": "m" * 300, "mtime": 1.5, "extra": 1}
        ok, res = checks.check_reply(lst, {"ok": True, "result": {"files": [entry], "truncated": True}})
        # Not a type/subtype: replaced, as every claim outside the grammar.
        self.assertEqual(res, {"files": [{"path": "a", "size": 1,
                                          "mime_type": "application/octet-stream",
                                          "mtime": 1.5}], "truncated": True})
        for result in ({"files": [entry] * 3, "truncated": False}, {"files": [entry]},
                       {"files": [dict(entry, size=-1)], "truncated": False},
                       {"files": [dict(entry, mtime=float("nan"))], "truncated": False},
                       {"files": [dict(entry, path="")], "truncated": False}):
            with self.assertRaises(ValueError, msg=str(result)):
                checks.check_reply(lst, {"ok": True, "result": result})
        # What Z knows itself is not taken from U.
        put = {"op": "put_files", "sizes": [("a", 3)]}
        self.assertEqual(checks.check_reply(put, {"ok": True, "result": {"files": "forged"}}),
                         (True, {"files": [{"path": "a", "size": 3}]}))
        self.assertEqual(checks.check_reply({"op": "delete_file", "path": "a"},
                                       {"ok": True, "result": {"path": "/etc"}}),
                         (True, {"path": "a"}))

    def test_checked_mime_type(self):
        for good in ("text/plain", "application/ld+json", "a" * 127 + "/" + "b" * 127):
            self.assertEqual(checks.checked_mime_type(good), good)
        for bad in ("", "text", "text/plain\r\nX-Injected: 1", "text/pl\x00ain", "text/plain\n",
                    "text/plain; charset=utf-8", " text/plain", "text/", "a" * 128 + "/b", None, 7):
            self.assertEqual(checks.checked_mime_type(bad), "application/octet-stream", repr(bad))

    def test_reply_bound(self):
        self.assertGreaterEqual(checks.reply_bound({"op": "get_file", "path": "a", "max_bytes": 3 << 20}),
                                4 << 20)
        self.assertLess(checks.reply_bound({"op": "get_file", "path": "a", "max_bytes": 0}), 1 << 17)
        self.assertGreater(checks.reply_bound({"op": "list_files", "max_entries": 1000}), 1000 * 6 * 4096)
        self.assertEqual(checks.reply_bound({"op": "delete_file", "path": "a"}), 64 << 10)
