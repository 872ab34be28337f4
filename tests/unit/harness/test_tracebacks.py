"""Tracebacks without harness frames, bounded (tracebacks.py)."""

import linecache
import os
import unittest

from sandbox_harness import cells, tracebacks


# A code filename of the harness's: every module's lies in one directory (the loader's
# "<harness>/<module>.py" in the container, the package's directory here).
FAKE_HARNESS = os.path.join(tracebacks.HARNESS_DIR, "relay.py")


def _raise_through_fake_harness(catch_in_harness=False):
    """A KeyError from a cell's function called through a harness frame; with catch_in_harness
    the exception is caught in harness code too, as run_cell catches the cell's."""
    code = compile("def outer(f):\n    f()\n\n"
                   "def catch(f):\n    try:\n        outer(f)\n    except KeyError as e:\n"
                   "        return e\n", FAKE_HARNESS, "exec")
    ns = {}
    exec(code, ns)
    src = "def user():\n    raise KeyError('k')\n"
    cells.register_source(src, "<cell>")
    user_ns = {}
    exec(compile(src, "<cell>", "exec"), user_ns)
    if catch_in_harness:
        return ns["catch"](user_ns["user"])
    try:
        ns["outer"](user_ns["user"])
    except KeyError as e:
        return e


class HarnessFilesTest(unittest.TestCase):
    def test_every_module_and_the_payload_are_harness_files(self):
        import sandbox_harness
        pkg = os.path.dirname(sandbox_harness.__file__)
        for name in os.listdir(pkg):
            if name.endswith(".py"):
                self.assertIn(os.path.join(pkg, name), tracebacks.HARNESS_FILES, name)
        self.assertTrue(tracebacks.is_harness_file(tracebacks.HARNESS_DIR))  # the payload's name
        for other in ("<cell>", "<string>", "/usr/lib/python3/json/__init__.py", __file__,
                      os.path.join(tracebacks.HARNESS_DIR, "sub", "x.py"), None):
            self.assertNotIn(other, tracebacks.HARNESS_FILES, other)

    def test_default_drops_harness_frames(self):
        e = _raise_through_fake_harness(catch_in_harness=True)
        tb = tracebacks.structured_traceback(e)
        self.assertEqual(tb["frames"], [{"file": "<cell>", "line": 2, "function": "user"}])
        text = tracebacks.format_exception_trimmed(e)
        self.assertNotIn(FAKE_HARNESS, text)
        self.assertIn('File "<cell>", line 2, in user', text)


class TracebackTrimTest(unittest.TestCase):
    def test_harness_frames_removed(self):
        e = _raise_through_fake_harness()
        drop = (FAKE_HARNESS, __file__)
        tb = tracebacks.structured_traceback(e, drop)
        self.assertEqual(tb["frames"], [{"file": "<cell>", "line": 2, "function": "user"}])
        text = tracebacks.format_exception_trimmed(e, drop)
        self.assertNotIn(FAKE_HARNESS, text)
        self.assertIn("KeyError: 'k'", text)

    def test_chained(self):
        try:
            try:
                raise ValueError("inner")
            except ValueError:
                raise _raise_through_fake_harness()
        except KeyError as e:
            text = tracebacks.format_exception_trimmed(e, (FAKE_HARNESS, __file__))
        self.assertIn("ValueError: inner", text)
        self.assertIn("During handling of the above exception", text)
        self.assertNotIn(__file__, text)

    def test_user_frames_on_dicts(self):
        frames = [{"file": "<harness>"}, {"file": "<cell>"}, {"file": "/usr/lib/x.py"}]
        self.assertEqual(tracebacks.user_frames(frames, ("<harness>",)), frames[1:])


class CellSourcesTest(unittest.TestCase):
    """Session mode: earlier cells' lines."""

    def test_earlier_cell_lines_in_tracebacks(self):
        sources = tracebacks.CellSources()
        ns = {}
        cell1 = "x = 1\n\ndef f():\n    return 1 / 0\n"
        cell2 = "y = 2\nf()\nz = 3\n"
        for src in (cell1, cell2):
            cells.register_source(src)
            body, expr = cells.split_cell(src)
            sources.add(src, (body, expr))
            try:
                exec(body, ns)
            except ZeroDivisionError as e:
                exc = e
        text = tracebacks.format_exception_trimmed(exc, drop_files=(__file__,), sources=sources)
        self.assertIn('line 2, in <module>\n    f()\n', text)
        self.assertIn('line 4, in f\n    return 1 / 0\n', text)  # cell 1's line, not cell 2's
        self.assertEqual(linecache.cache[tracebacks.CELL_FILENAME][2], cell2.splitlines(True))
