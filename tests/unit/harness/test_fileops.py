"""Session file operations in the run process (fileops.py)."""

import base64
import os
import tempfile
import unittest

import harness_config
from sandbox_harness import config, fileops, workdir


def setUpModule():
    # The bounds of paths and of the work dir's walk, as the zygote sets them at start.
    config.apply_config(config.parse_config(harness_config.config()))


class SessionFilesTest(unittest.TestCase):
    """U's file operations, on a temporary work dir."""

    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="harness-files-")
        self.addCleanup(lambda: __import__("shutil").rmtree(self.root, ignore_errors=True))
        self.work = os.path.join(self.root, "work")

    def test_put_list_get_delete(self):
        fileops.put_files(self.work, [("d/a.csv", b"1,2\n"), ("b.bin", b"\0" * 5)], 1 << 20)
        fileops.put_files(self.work, [("b.bin", b"new")], 1 << 20)  # overwrite
        os.symlink("/etc/passwd", os.path.join(self.work, "link"))
        os.mkfifo(os.path.join(self.work, "fifo"))
        files, truncated = fileops.list_files(self.work, 10)
        self.assertEqual([(f["path"], f["size"], f["mime_type"]) for f in files],
                         [("b.bin", 3, "application/octet-stream"), ("d/a.csv", 4, "text/csv")])
        self.assertFalse(truncated)
        self.assertIsInstance(files[0]["mtime"], float)
        self.assertEqual(fileops.list_files(self.work, 1)[1], True)
        got = fileops.get_file(self.work, "d/a.csv", 10)
        self.assertEqual((got["size"], base64.b64decode(got["data_b64"])), (4, b"1,2\n"))
        errors = [("nope", 10, "no such file: nope"), ("d", 10, "not a regular file: d"),
                  ("link", 10, "not a regular file: link"), ("fifo", 10, "not a regular file: fifo"),
                  ("d/a.csv", 3, "d/a.csv is 4 bytes, more than the limit of 3 bytes"),
                  ("b.bin/x", 10, "no such file: b.bin/x"), ("q/x", 10, "no such file: q/x")]
        for path, limit, message in errors:
            with self.assertRaises(fileops.FileOpError) as cm:
                fileops.get_file(self.work, path, limit)
            self.assertEqual(str(cm.exception), message)
        self.assertEqual(fileops.delete_file(self.work, "b.bin"), {"path": "b.bin"})
        for path, message in (("b.bin", "no such file: b.bin"), ("d", "not a regular file: d"),
                              ("link", "not a regular file: link")):
            with self.assertRaises(fileops.FileOpError) as cm:
                fileops.delete_file(self.work, path)
            self.assertEqual(str(cm.exception), message)
        self.assertTrue(os.path.exists("/etc/passwd"))

    def test_symlinked_parents_are_refused(self):
        outside = os.path.join(self.root, "outside")
        os.mkdir(outside)
        fileops.put_files(self.work, [("x", b"")], 1 << 20)
        os.symlink(outside, os.path.join(self.work, "esc"))
        with self.assertRaises(fileops.FileOpError) as cm:
            fileops.put_files(self.work, [("esc/f", b"data")], 1 << 20)
        self.assertIn("symbolic link", str(cm.exception))
        self.assertEqual(os.listdir(outside), [])
        with open(os.path.join(outside, "f"), "w") as f:
            f.write("secret")
        for fn in (lambda: fileops.get_file(self.work, "esc/f", 100),
                   lambda: fileops.delete_file(self.work, "esc/f")):
            with self.assertRaises(fileops.FileOpError):
                fn()
        # A symlink as the target itself is replaced, not followed.
        os.symlink(os.path.join(outside, "f"), os.path.join(self.work, "l"))
        fileops.put_files(self.work, [("l", b"mine")], 1 << 20)
        self.assertFalse(os.path.islink(os.path.join(self.work, "l")))
        with open(os.path.join(outside, "f")) as f:
            self.assertEqual(f.read(), "secret")
        with self.assertRaises(fileops.FileOpError) as cm:
            fileops.put_files(self.work, [("x/y", b"")], 1 << 20)
        self.assertIn("x is not a directory", str(cm.exception))
        os.mkdir(os.path.join(self.work, "dir"))
        with self.assertRaises(fileops.FileOpError) as cm:
            fileops.put_files(self.work, [("dir", b"")], 1 << 20)
        self.assertIn("it is a directory", str(cm.exception))

    def test_snapshot(self):
        fileops.put_files(self.work, [("a", b"1"), ("s/b", b"2")], 1 << 20)
        before = workdir.snapshot_files(self.work)
        self.assertEqual(list(before), ["a", "s/b"])
        fileops.put_files(self.work, [("s/b", b"22"), ("c", b"")], 1 << 20)
        self.assertEqual(workdir.changed_files(before, workdir.snapshot_files(self.work)), ["c", "s/b"])
