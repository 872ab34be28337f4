"""The work dir: walk, pieces, budgets (workdir.py)."""

import base64
import os
import subprocess
import tempfile
import unittest

import harness_config
from sandbox_harness import config, fileops, workdir


def setUpModule():
    # The bounds of paths and of the work dir's walk, as the zygote sets them at start.
    config.apply_config(config.parse_config(harness_config.config()))


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
        found, truncated = workdir.walk_regular_files(self.dir)
        self.assertEqual([rel for rel, _ in found], ["sparse", "sub/a.txt", "top.txt"])
        self.assertTrue(truncated)  # the two names that are no valid result path
        self.assertEqual(found[0][1].st_size, 1 << 40)
        # a FIFO is never opened (it would block); a sparse file is read only up to the bound
        self.assertIsNone(workdir.read_regular(self.p("fifo"), 10))
        self.assertIsNone(workdir.read_regular(self.p("passwd"), 10))
        self.assertEqual(workdir.read_regular(self.p("sparse"), 5), bytes(5))

        class Sender:
            recs = []

            def send(self, rec):
                self.recs.append(rec)
        sender = Sender()
        cfg = {"max_count": 20, "max_total_bytes": 1 << 20}
        self.assertTrue(workdir.collect_files(self.dir, {}, cfg, sender))
        self.assertEqual([(r["path"], r["offset"], r["last"], base64.b64decode(r["data_b64"]))
                          for r in sender.recs],
                         [("sub/a.txt", 0, True, b"a"), ("top.txt", 0, True, b"x")])
        files, truncated = fileops.list_files(self.dir, 10)
        self.assertEqual([f["path"] for f in files], ["sparse", "sub/a.txt", "top.txt"])
        self.assertTrue(truncated)

    def test_files_travel_in_pieces(self):
        # A file is sent in FILE_PIECE pieces, in order, the last marked; an empty one is one
        # record; so collecting never holds more than a piece of a file.
        data = os.urandom(2 * workdir.FILE_PIECE + 5)
        with open(self.p("big.bin"), "wb") as f:
            f.write(data)
        open(self.p("empty"), "wb").close()

        class Sender:
            def __init__(self):
                self.recs = []

            def send(self, rec):
                self.recs.append(rec)
        sender = Sender()
        self.assertTrue(workdir.send_file_pieces(self.p("big.bin"), "big.bin", 1 << 30, "x/y", sender))
        recs = sender.recs
        self.assertEqual([(r["offset"], r["last"]) for r in recs],
                         [(0, False), (workdir.FILE_PIECE, False), (2 * workdir.FILE_PIECE, True)])
        self.assertEqual(b"".join(base64.b64decode(r["data_b64"]) for r in recs), data)
        sender = Sender()
        self.assertTrue(workdir.send_file_pieces(self.p("big.bin"), "big.bin", workdir.FILE_PIECE, "x", sender))
        self.assertEqual([(r["offset"], r["last"], len(base64.b64decode(r["data_b64"])))
                          for r in sender.recs], [(0, True, workdir.FILE_PIECE)])
        sender = Sender()
        self.assertTrue(workdir.send_file_pieces(self.p("empty"), "empty", 10, "x", sender))
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
        found, truncated = workdir.walk_regular_files(self.dir)
        self.assertEqual([rel for rel, _ in found], ["top.txt"])
        self.assertTrue(truncated)
        found, truncated = workdir.walk_regular_files(self.dir, max_depth=2000)
        self.assertEqual(len(found), 1)  # 'd/'*1000 is longer than a result path may be
        self.assertTrue(truncated)
        many = self.p("many")
        os.mkdir(many)
        for i in range(300):
            _write(os.path.join(many, "f%03d" % i), "")
        found, truncated = workdir.walk_regular_files(many, max_entries=100)
        self.assertEqual(len(found), 100)
        self.assertTrue(truncated)
        found, truncated = workdir.walk_regular_files(many)
        self.assertEqual((len(found), truncated), (300, False))


class FilesOutTest(unittest.TestCase):
    """Which files go out."""


    def test_plan_files_out(self):
        cands = [("a", 5, False), ("in.csv", 3, True), ("b", 100, False), ("c", 4, False),
                 ("d", 1, False)]
        self.assertEqual(workdir.plan_files_out(cands, 10, 1000), (["a", "b", "c", "d"], False))
        self.assertEqual(workdir.plan_files_out(cands, 10, 10), (["a", "c", "d"], True))
        self.assertEqual(workdir.plan_files_out(cands, 2, 1000), (["a", "b"], True))
        self.assertEqual(workdir.plan_files_out([("x", 1, True)], 0, 0), ([], False))

    def test_changed_files(self):
        before = {"a": (1, 10, 5), "b": (2, 20, 6), "gone": (1, 1, 1)}
        after = {"a": (1, 10, 5), "b": (2, 21, 6), "c": (0, 1, 7)}
        self.assertEqual(workdir.changed_files(before, after), ["b", "c"])
        self.assertEqual(workdir.changed_files({"a": (1, 10, 5)}, {"a": (1, 10, 8)}), ["a"])  # replaced
