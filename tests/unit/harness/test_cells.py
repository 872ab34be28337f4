"""Cells: compiling, values, SystemExit, compile errors (cells.py)."""

import json
import unittest

from sandbox_harness import cells, tracebacks


class CellTest(unittest.TestCase):
    def run_cell(self, src):
        body, expr = cells.split_cell(src)
        ns = {"__name__": "__main__"}
        exec(body, ns)
        return eval(expr, ns) if expr is not None else None

    def test_final_expression(self):
        self.assertEqual(self.run_cell("a = 2\na * 21"), 42)
        self.assertIsNone(cells.split_cell("a = 2")[1])
        self.assertIsNone(cells.split_cell("")[1])
        self.assertIsNone(cells.split_cell("for i in []:\n    i")[1])
        self.assertEqual(self.run_cell("x = [1]\nx.append(2)\nx"), [1, 2])

    def test_expression_only_runs_once(self):
        body, expr = cells.split_cell("n = []\nn.append(1) or len(n)")
        ns = {}
        exec(body, ns)
        self.assertEqual(eval(expr, ns), 1)

    def test_syntax_error(self):
        with self.assertRaises(SyntaxError):
            cells.split_cell("print('a'")
        try:
            cells.split_cell("x = 1\nprint('a'")
        except SyntaxError as e:
            text, tb = tracebacks.compile_error_report(e)
        self.assertNotIn("Traceback", text)
        self.assertIn('File "<cell>", line 2', text)
        self.assertEqual(tb["type"], "SyntaxError")
        self.assertEqual(tb["frames"], [])

    def test_line_numbers_and_linecache(self):
        src = "x = 1\n\ndef f():\n    return 1 / 0\nf()\n"
        cells.register_source(src)
        body, expr = cells.split_cell(src)
        ns = {}
        exec(body, ns)
        try:
            eval(expr, ns)
        except ZeroDivisionError as e:
            tb = tracebacks.structured_traceback(e, drop_files=(__file__,))
            text = tracebacks.format_exception_trimmed(e, drop_files=(__file__,))
        self.assertEqual([(f["file"], f["line"], f["function"]) for f in tb["frames"]],
                         [("<cell>", 5, "<module>"), ("<cell>", 4, "f")])
        self.assertEqual(tb["type"], "ZeroDivisionError")
        self.assertEqual(tb["message"], "division by zero")
        self.assertTrue(text.startswith("Traceback (most recent call last):\n"))
        self.assertIn("    return 1 / 0\n", text)  # the source line comes from linecache
        self.assertNotIn(__file__, text)

    def test_format_value(self):
        self.assertIsNone(cells.format_value(None, 10))
        self.assertEqual(cells.format_value("ab", 10), "'ab'")
        long = cells.format_value("x" * 100, 20)
        self.assertTrue(long.startswith("'" + "x" * 19) and "more characters" in long)

        class Bad:
            def __repr__(self):
                raise RuntimeError("nope")
        self.assertIn("repr() failed: RuntimeError: nope", cells.format_value(Bad(), 100))

    def test_exception_type_name(self):
        class Local(Exception):
            pass
        Local.__module__ = "__main__"
        self.assertEqual(tracebacks.exception_type_name(ValueError), "ValueError")
        self.assertEqual(tracebacks.exception_type_name(Local), Local.__qualname__)
        self.assertEqual(tracebacks.exception_type_name(json.JSONDecodeError), "json.decoder.JSONDecodeError")

    def test_system_exit(self):
        self.assertEqual(cells.system_exit_status(SystemExit()), (0, None))
        self.assertEqual(cells.system_exit_status(SystemExit(3)), (3, None))
        self.assertEqual(cells.system_exit_status(SystemExit(256)), (0, None))
        self.assertEqual(cells.system_exit_status(SystemExit(-1)), (255, None))
        self.assertEqual(cells.system_exit_status(SystemExit(True)), (1, None))
        self.assertEqual(cells.system_exit_status(SystemExit("bye")), (1, "bye"))
