"""The config message (config.py)."""

import base64
import struct
import unittest

import harness_config
from harness_config import leaf_paths, without
from sandbox_harness import config, errors, messages


def setUpModule():
    # The bounds of paths and of the work dir's walk, as the zygote sets them at start.
    config.apply_config(config.parse_config(harness_config.config()))


class ConfigTest(unittest.TestCase):
    def test_every_field_is_required(self):
        # The server owns every value: a config without one is refused, naming it.
        for path in leaf_paths(harness_config.config()):
            with self.assertRaises(errors.ProtocolError, msg=str(path)) as cm:
                config.parse_config(without(path))
            self.assertIn(path[-1], str(cm.exception))

    def test_complete_config(self):
        cfg = config.parse_config(harness_config.config())
        self.assertEqual(cfg["mode"], "recycle")
        self.assertEqual(cfg["preload"], ["numpy", "pandas", "matplotlib"])
        self.assertIs(cfg["isolate"], True)
        self.assertEqual(cfg["workdir"], "/tmp/work")
        self.assertIsNone(cfg["seccomp_bpf"])
        self.assertEqual(cfg["limits"]["cpu_s"], 0)  # derived from each run's timeout
        run = messages.parse_run({"op": "run", "id": "a", "code": ""}, cfg)
        self.assertEqual(run["limits"]["cpu_s"], 11)  # timeout 10 s, rounded up, + 1

    def test_first_message_must_be_config(self):
        with self.assertRaises(errors.ProtocolError):
            config.parse_config({"op": "run"})

    def test_bad_fields(self):
        for bad in ({"mode": "x"}, {"isolate": "yes"}, {"workdir": "rel"}, {"workdir": "/tmp"},
                    {"workdir": "/tmp/../etc"}, {"preload": "numpy"}, {"image": {"dpi": 0}},
                    {"files_out": {"max_count": -1}}, {"seccomp_bpf": "!!"},
                    {"seccomp_bpf": base64.b64encode(b"1234567").decode()},
                    {"limits": {"timeout_s": "1"}}, {"limits": {"nproc": True}}):
            with self.assertRaises(errors.ProtocolError, msg=str(bad)):
                config.parse_config(harness_config.config(bad))

    def test_bpf(self):
        raw = struct.pack("=HBBI", 0x06, 0, 0, 0x7FFF0000)
        cfg = config.parse_config(harness_config.config({"seccomp_bpf": base64.b64encode(raw).decode(),
                                      "isolate": "auto"}))
        self.assertEqual(cfg["seccomp_bpf"], raw)
        self.assertEqual(cfg["isolate"], "auto")

    def test_run_limits_merge(self):
        cfg = config.parse_config(harness_config.config({"limits": {"output_bytes": 5}}))
        run = messages.parse_run({"op": "run", "id": "a", "code": "", "limits": {"timeout_s": 2.5}}, cfg)
        self.assertEqual(run["limits"]["output_bytes"], 5)
        self.assertEqual(run["limits"]["timeout_s"], 2.5)
        self.assertEqual(run["limits"]["cpu_s"], 4)
        for bad in ({"id": "", "code": ""}, {"id": "a"}, {"id": "a", "code": "", "argv": [1]},
                    {"id": "a", "code": "", "files": {}}, {"id": "a", "code": "", "limits": []},
                    {"id": "a", "code": "", "limits": {"memory_bytes": -1}},
                    {"id": "a", "code": "", "limits": {"memory_bytes": 1.5}}):
            with self.assertRaises(errors.ProtocolError, msg=str(bad)):
                messages.parse_run(dict(bad, op="run"), cfg)


class SessionConfigTest(unittest.TestCase):
    """Session mode's fields of the config."""

    def test_config(self):
        cfg = config.parse_config(harness_config.config({"mode": "session"}))
        self.assertEqual((cfg["mode"], cfg["op_timeout_s"], cfg["list_max_entries"]),
                         ("session", 10.0, 1000))
        cfg = config.parse_config(harness_config.config({"op_timeout_s": 2, "list_max_entries": 5}))
        self.assertEqual((cfg["op_timeout_s"], cfg["list_max_entries"]), (2.0, 5))
        for bad in ({"op_timeout_s": 0}, {"op_timeout_s": "1"}, {"list_max_entries": 0},
                    {"list_max_entries": 1.5}, {"mode": "sessions"}):
            with self.assertRaises(errors.ProtocolError, msg=str(bad)):
                config.parse_config(harness_config.config(bad))
