"""The run's init and the intermediate's reaping (isolation.py, kernel.py)."""

import json
import os
import signal
import time
import unittest

from harness_testing import exited, killed
from sandbox_harness import isolation, kernel, wire


def _proc_status(pid):
    with open("/proc/%d/status" % pid) as f:
        return dict(line.split(":\t", 1) for line in f.read().splitlines() if ":\t" in line)


class SleeperInitTest(unittest.TestCase):
    """The run's init: a CLONE_VM child sleeping in pause(), with no signal handler and SIGCHLD
    ignored; I reaps U and G and reports both."""

    def test_sleeper_dispositions_and_kill(self):
        k = kernel.Kernel()
        int_before = signal.getsignal(signal.SIGINT)
        pid = isolation._spawn_init(k)
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

    def test_handled_signals_found_once(self):
        # the forker finds them once; I resets only these (and SIGCHLD) around the clone
        handled = isolation.handled_signals()
        self.assertIn(signal.SIGINT, handled)  # KeyboardInterrupt's handler
        self.assertNotIn(signal.SIGCHLD, handled)
        pid = isolation._spawn_init(kernel.Kernel(), handled)
        try:
            self.assertIs(signal.getsignal(signal.SIGINT), signal.default_int_handler)
            for _ in range(200):
                st = _proc_status(pid)
                if st["State"].startswith("S"):
                    break
                time.sleep(0.01)
            cgt, ign = int(st["SigCgt"], 16), int(st["SigIgn"], 16)
            self.assertEqual(cgt & ((1 << 31) - 1), 0, "handlers for standard signals")
            self.assertTrue(ign & (1 << (signal.SIGCHLD - 1)), "SIGCHLD not ignored")
        finally:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)

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
                gpid = isolation._spawn_init(kernel.Kernel())
                os.write(pid_w, b"%d\n" % gpid)
                upid = os.fork()
                if upid == 0:
                    os._exit(3)
                isolation._reap_run(w, gpid, upid)
            finally:
                os._exit(0)
        os.close(w)
        os.close(pid_w)
        gpid = int(os.read(pid_r, 64))
        os.close(pid_r)
        dec = wire.FrameDecoder()
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
