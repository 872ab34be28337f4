"""Verdicts (verdicts.py)."""

import signal
import unittest

from harness_testing import exited, killed
from sandbox_harness import verdicts


class VerdictTest(unittest.TestCase):
    L = {"timeout_s": 1, "output_bytes": 100, "cpu_s": 2}

    def v(self, **kw):
        return verdicts.decide_verdict(limits=self.L, **kw)

    def test_killed_by_zygote(self):
        self.assertEqual(self.v(kill_reason="cancel", ustatus=killed(9))[0], "cancelled")
        self.assertEqual(self.v(kill_reason="timeout", oom_kills=1)[0], "timeout")
        v = self.v(kill_reason="output_limit")
        self.assertEqual((v[0], v[1], v[2]), ("output_limit", None, signal.SIGKILL))
        # The code can write to its own result pipe: over the budget is its doing, not ours.
        self.assertEqual(self.v(kill_reason="result_limit")[0], "error")

    def test_claimed_failure_is_at_most_error(self):
        v = self.v(ustatus=exited(0), claimed_failure=verdicts.RUN_SIDE_FAILURE)
        self.assertEqual(v, ("error", 0, None, verdicts.RUN_SIDE_FAILURE))
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


class DeathReasonTest(unittest.TestCase):
    """Why a session's process ended."""

    def test_verdicts(self):
        v = verdicts.decide_verdict(kill_reason="corrupt", corrupt="garbage")
        self.assertEqual(v, ("error", None, signal.SIGKILL, "garbage"))
        self.assertEqual(verdicts.death_reason(exited(3), None, 0),
                         "the session's process exited with status 3")
        self.assertIn("signal 9 (SIGKILL)", verdicts.death_reason(None, killed(9), 0))
        self.assertIn("OOM killer", verdicts.death_reason(killed(9), None, 1))
        self.assertEqual(verdicts.death_reason(None, None, 0), "the session's process ended")
