"""Small OS helpers (osutil.py)."""

import os
import tempfile
import unittest

from sandbox_harness import osutil


class OsUtilTest(unittest.TestCase):
    def test_write_all_and_read_all(self):
        r, w = os.pipe()
        data = os.urandom(50000)
        pid = os.fork()
        if pid == 0:  # the writer: more than a pipe holds at once
            os.close(r)
            osutil.write_all(w, data * 4)
            os._exit(0)
        os.close(w)
        self.assertEqual(osutil.read_all(r), data * 4)
        os.close(r)
        os.waitpid(pid, 0)

    def test_remove_tree_contents(self):
        with tempfile.TemporaryDirectory() as d:
            os.makedirs(os.path.join(d, "a", "b"))
            with open(os.path.join(d, "a", "b", "f"), "w") as f:
                f.write("x")
            os.chmod(os.path.join(d, "a", "b"), 0o500)  # fixed on the way
            os.mkdir(os.path.join(d, "keep"))
            os.symlink("/etc", os.path.join(d, "link"))  # removed, never followed
            osutil.remove_tree_contents(d, keep={"keep"})
            self.assertEqual(os.listdir(d), ["keep"])
            self.assertTrue(os.path.isdir("/etc"))

    def test_close_fds_except(self):
        r, w = os.pipe()
        other_r, other_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            osutil.close_fds_except({0, 1, 2, w})
            closed = []
            for fd in (r, other_r, other_w):
                try:
                    os.fstat(fd)
                except OSError:
                    closed.append(fd)
            os.write(w, b"1" if closed == [r, other_r, other_w] else b"0")
            os._exit(0)
        for fd in (w, other_r, other_w):
            os.close(fd)
        self.assertEqual(os.read(r, 1), b"1")
        os.close(r)
        os.waitpid(pid, 0)
