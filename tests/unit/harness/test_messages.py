"""The server's requests: run, session and file ops, paths and input files (messages.py)."""

import base64
import unittest

import harness_config
from sandbox_harness import config, errors, messages


def setUpModule():
    # The bounds of paths and of the work dir's walk, as the zygote sets them at start.
    config.apply_config(config.parse_config(harness_config.config()))


class PathTest(unittest.TestCase):
    def test_valid(self):
        self.assertEqual(messages.validate_rel_path("a.txt"), "a.txt")
        self.assertEqual(messages.validate_rel_path("./d//e/f.csv"), "d/e/f.csv")
        self.assertEqual(messages.validate_rel_path("..a/b.."), "..a/b..")

    def test_invalid(self):
        for bad in ("", "/etc/passwd", "../x", "a/../../b", "a/..", ".", "./", "a\x00b",
                    "x" * 256, None, 3):
            with self.assertRaises(errors.InputError, msg=repr(bad)):
                messages.validate_rel_path(bad)

    def test_input_files(self):
        b64 = lambda b: base64.b64encode(b).decode()  # noqa: E731
        out = messages.validate_input_files([{"path": "a", "content_b64": b64(b"xy")},
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
            with self.assertRaises(errors.InputError) as cm:
                messages.validate_input_files(files, 5, 10)
            self.assertIn(needle, str(cm.exception))


class SessionOpsTest(unittest.TestCase):
    """The session and file ops."""

    def test_session_op(self):
        cfg = config.parse_config(harness_config.config({"limits": {"nproc": 7}}))
        rid, limits = messages.parse_session_op({"op": "session", "limits": {"memory_bytes": 5}}, cfg)
        self.assertIsNone(rid)
        self.assertEqual((limits["memory_bytes"], limits["nproc"], limits["timeout_s"]), (5, 7, 10.0))
        rid, _ = messages.parse_session_op({"op": "session", "id": "s1"}, cfg)
        self.assertEqual(rid, "s1")
        for bad in ({"id": 3}, {"id": "x" * 257}, {"limits": []}, {"limits": {"nofile": "9"}}):
            with self.assertRaises(errors.ProtocolError, msg=str(bad)):
                messages.parse_session_op(dict(bad, op="session"), cfg)

    def test_file_op_parsing(self):
        cfg = config.parse_config(harness_config.config({"files_in": {"max_count": 2, "max_total_bytes": 4},
                                      "files_out": {"max_total_bytes": 99},
                                      "list_max_entries": 3}))
        self.assertEqual(messages.parse_op_id({"op": "get_file", "id": "g"}), "g")
        for bad in ({}, {"id": ""}, {"id": 1}, {"id": "x" * 257}):
            with self.assertRaises(errors.ProtocolError, msg=str(bad)):
                messages.parse_op_id(dict(bad, op="get_file"))
        b64 = base64.b64encode(b"abc").decode()
        req = messages.parse_file_op({"op": "put_files", "files": [{"path": "./d//a", "content_b64": b64}]},
                              cfg)
        self.assertEqual(req, {"op": "put_files", "files": [{"path": "d/a", "content_b64": b64}],
                               "sizes": [("d/a", 3)]})
        self.assertEqual(messages.parse_file_op({"op": "list_files"}, cfg),
                         {"op": "list_files", "max_entries": 3})
        self.assertEqual(messages.parse_file_op({"op": "get_file", "path": "a"}, cfg)["max_bytes"], 99)
        self.assertEqual(messages.parse_file_op({"op": "get_file", "path": "a", "max_bytes": 0}, cfg)
                         ["max_bytes"], 0)
        self.assertEqual(messages.parse_file_op({"op": "delete_file", "path": "a/./b"}, cfg),
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
            with self.assertRaises(errors.InputError, msg=str(msg)) as cm:
                messages.parse_file_op(msg, cfg)
            self.assertIn(needle, str(cm.exception))
