"""The cgroup's counters and usage (cgroup.py)."""

import os
import tempfile
import unittest

from sandbox_harness import cgroup


class CgroupTest(unittest.TestCase):
    """cgroup v1 and v2 files."""

    def test_counters(self):
        self.assertEqual(cgroup.parse_counters("oom_kill_disable 0\nunder_oom 0\noom_kill 3\n"),
                         {"oom_kill_disable": 0, "under_oom": 0, "oom_kill": 3})
        with tempfile.TemporaryDirectory() as d:
            self.assertEqual(cgroup.read_memory_counters(d), {"oom_kill": None, "limit_hits": None})
            with open(os.path.join(d, "memory.events"), "w") as f:
                f.write("low 0\nhigh 0\nmax 7\noom 2\noom_kill 1\n")
            self.assertEqual(cgroup.read_memory_counters(d), {"oom_kill": 1, "limit_hits": 7})
            os.mkdir(os.path.join(d, "memory"))
            with open(os.path.join(d, "memory", "memory.oom_control"), "w") as f:
                f.write("oom_kill_disable 0\nunder_oom 0\noom_kill 4\n")
            with open(os.path.join(d, "memory", "memory.failcnt"), "w") as f:
                f.write("12\n")
            self.assertEqual(cgroup.read_memory_counters(d), {"oom_kill": 4, "limit_hits": 12})
        self.assertEqual(cgroup.counter_delta({"oom_kill": 1}, {"oom_kill": 3}, "oom_kill"), 2)
        self.assertEqual(cgroup.counter_delta({"oom_kill": None}, {"oom_kill": 3}, "oom_kill"), 0)

    def test_memory_usage(self):
        with tempfile.TemporaryDirectory() as d:
            self.assertIsNone(cgroup.read_memory_usage(d))
            with open(os.path.join(d, "memory.current"), "w") as f:
                f.write("123\n")
            self.assertEqual(cgroup.read_memory_usage(d), 123)
            os.mkdir(os.path.join(d, "memory"))
            with open(os.path.join(d, "memory", "memory.usage_in_bytes"), "w") as f:
                f.write("456\n")
            self.assertEqual(cgroup.read_memory_usage(d), 456)  # v1 first, as this engine shows
