"""The forker's helpers (forker.py, forker_sweep.py)."""

import os
import signal
import time
import unittest

from sandbox_harness import forker, forker_sweep


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
        forker_sweep.reap_within(children, 5.0)
        self.assertEqual(children, set())

    def test_gives_up_after_the_bound(self):
        pid = self._child(30)
        self.addCleanup(lambda: (os.kill(pid, signal.SIGKILL), os.waitpid(pid, 0)))
        children = {pid}
        forker_sweep.reap_within(children, 0.05)
        self.assertEqual(children, {pid})


class ForkerTest(unittest.TestCase):
    def test_fd_passing(self):
        import socket as socket_mod
        a, b = socket_mod.socketpair(socket_mod.AF_UNIX, socket_mod.SOCK_SEQPACKET)
        self.addCleanup(a.close)
        self.addCleanup(b.close)
        r, w = os.pipe()
        forker.send_fds(a, b'{"pid": 7}', [r, w])
        os.close(r)
        os.close(w)
        data, fds = forker.recv_fds(b, 4096, 5)
        self.assertEqual((data, len(fds)), (b'{"pid": 7}', 2))
        os.write(fds[1], b"x")
        self.assertEqual(os.read(fds[0], 1), b"x")
        self.assertFalse(os.get_inheritable(fds[0]))
        for fd in fds:
            os.close(fd)
