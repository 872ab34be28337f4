"""Cells: compiling the user's code (its last expression's value shown, as in a notebook),
running it in a namespace, and reporting its end as Python would (traceback, SystemExit)."""

import ast
import linecache
import sys

from .checks import bound_traceback
from .config import is_int
from .tracebacks import (CELL_FILENAME, compile_error_report, format_exception_trimmed, safe_str,
                         structured_traceback)


def split_cell(source, filename=CELL_FILENAME):
    """Compiles a cell. If its last statement is an expression, it is compiled separately (eval
    mode) so its value can be shown, as in a notebook. Returns (body_code, expr_code_or_None);
    raises SyntaxError."""
    tree = ast.parse(source, filename, "exec")
    expr = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = tree.body.pop()
        expr = compile(ast.Expression(last.value), filename, "eval", dont_inherit=True)
    body = compile(tree, filename, "exec", dont_inherit=True)
    return body, expr


def register_source(source, filename=CELL_FILENAME):
    """Lets linecache (hence tracebacks) show the cell's lines."""
    lines = source.splitlines(True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    linecache.cache[filename] = (len(source), None, lines, filename)


def format_value(value, max_chars):
    """repr() of a cell's final value, bounded; None for None (nothing to show)."""
    if value is None:
        return None
    try:
        text = repr(value)
    except BaseException as e:  # noqa: B902 - a user's __repr__ may raise anything
        text = "<repr() failed: %s: %s>" % (type(e).__name__, safe_str(e))
    if not isinstance(text, str):
        text = str(text)
    if len(text) > max_chars:
        text = text[:max_chars] + "... [%d more characters]" % (len(text) - max_chars)
    return text


def system_exit_status(exc):
    """SystemExit -> (exit status, text to print on stderr or None), as the interpreter does."""
    code = exc.code
    if code is None:
        return 0, None
    if is_int(code) or isinstance(code, bool):
        return int(code) & 0xFF, None
    return 1, safe_str(code)


def run_cell(source, namespace, value_max_chars, on_end=None, sources=None, tb_limits=None):
    """Runs the cell. Returns (exit status, value repr or None, structured traceback or None,
    memory_error: the cell ended with an uncaught MemoryError). `on_end` is called as soon as
    the cell's code is over, before anything is reported. `sources`: session mode's CellSources."""
    on_end = on_end or (lambda: None)
    max_frames = tb_limits["max_frames"] if tb_limits else None
    register_source(source)
    try:
        body, expr = split_cell(source)
        if sources is not None:
            sources.add(source, (body, expr))
    except (SyntaxError, ValueError, OverflowError, MemoryError, RecursionError) as e:
        on_end()
        text, tb = compile_error_report(e)
        sys.stderr.write(text)
        return 1, None, tb, isinstance(e, MemoryError)
    try:
        exec(body, namespace)
        value = None
        if expr is not None:
            value = format_value(eval(expr, namespace), value_max_chars)
        on_end()
        return 0, value, None, False
    except SystemExit as e:
        on_end()
        status, text = system_exit_status(e)
        if text is not None:
            sys.stderr.write(text + "\n")
        return status, None, None, False
    except BaseException as e:  # noqa: B902 - exactly what the interpreter would report
        on_end()
        try:
            sys.stderr.write(format_exception_trimmed(e, sources=sources, max_frames=max_frames))
        except BaseException:  # noqa: B902
            pass
        tb = structured_traceback(e, max_frames=max_frames)
        if tb_limits is not None:
            tb = bound_traceback(tb, tb_limits)
        return 1, None, tb, isinstance(e, MemoryError)


def _keep_figures_open(atexit_mod):
    """pyplot registers Gcf.destroy_all with atexit: run there, it would close every figure
    still open before the harness captures them (the end of the run returns open figures)."""
    helpers = sys.modules.get("matplotlib._pylab_helpers")
    gcf = getattr(helpers, "Gcf", None)
    if gcf is not None and hasattr(gcf, "destroy_all"):
        atexit_mod.unregister(gcf.destroy_all)


def interpreter_shutdown():
    """What the interpreter does after __main__: join non-daemon threads, run atexit (except
    matplotlib's closing of the figures, which are captured after this)."""
    try:
        import threading
        if hasattr(threading, "_shutdown"):
            threading._shutdown()
    except BaseException:  # noqa: B902
        pass
    import atexit
    try:
        _keep_figures_open(atexit)
    except BaseException:  # noqa: B902 - the code may have replaced matplotlib's modules
        pass
    try:
        atexit._run_exitfuncs()
    except BaseException:  # noqa: B902
        pass
