"""Tracebacks of the user's code as Python prints them, less every frame of the harness's own
(its modules all have code filenames in one directory: see is_harness_file), bounded for
a RecursionError a million frames deep."""

import linecache
import os
import traceback
import types

from .checks import omitted_frame

CELL_FILENAME = "<cell>"
# The directory of every harness module's code filename: this package's directory, or the
# payload's name ("<harness>") when the loader (src/harness/loader.py) installed the modules.
HARNESS_DIR = os.path.dirname(__file__)


def is_harness_file(filename):
    """Whether a code filename is the harness's: one of its modules', or the payload's own."""
    return filename == HARNESS_DIR or os.path.dirname(filename) == HARNESS_DIR


class _HarnessFiles:
    """The default `drop_files`: a container of every harness code filename."""

    def __contains__(self, filename):
        return isinstance(filename, str) and is_harness_file(filename)


HARNESS_FILES = _HarnessFiles()


def safe_str(exc):
    try:
        return str(exc)
    except BaseException:  # noqa: B902
        return "<str() of the exception failed>"


def exception_type_name(exc_type):
    """The name Python's traceback printer uses: qualname, prefixed by the module unless it is
    builtins or __main__."""
    mod = getattr(exc_type, "__module__", None)
    name = getattr(exc_type, "__qualname__", None) or getattr(exc_type, "__name__", "?")
    if mod not in (None, "builtins", "__main__"):
        return "%s.%s" % (mod, name)
    return name


def user_frames(frames, drop_files=HARNESS_FILES):
    """Removes the harness's own frames from a list of FrameSummary (or dicts with "file")."""
    out = []
    for f in frames:
        name = f["file"] if isinstance(f, dict) else f.filename
        if name not in drop_files:
            out.append(f)
    return out


def deep_traceback(exc, max_frames, drop_files=HARNESS_FILES):
    """None when exc's traceback is short, else (first frames, number omitted, last frames) as
    FrameSummary lists: a RecursionError under sys.setrecursionlimit(10**6) has a million
    frames, and extracting them all (source lines included) takes seconds and hundreds of MB.
    Only the kept frames are extracted; the harness's frames (at the start) are dropped."""
    tb = exc.__traceback__
    n, node = 0, tb
    while node is not None:
        n += 1
        node = node.tb_next
    head_n = max_frames // 2
    tail_n = max_frames - head_n - 1
    window = head_n + 8  # the harness's frames come first
    if n <= window + tail_n:
        return None
    head_all = user_frames(traceback.extract_tb(tb, limit=window), drop_files)
    head = head_all[:head_n]
    node = tb
    for _ in range(n - tail_n):
        node = node.tb_next
    tail = user_frames(traceback.extract_tb(node), drop_files)
    return head, (len(head_all) - len(head)) + (n - window - tail_n), tail


def structured_traceback(exc, drop_files=HARNESS_FILES, max_frames=None):
    """An exception -> {type, message, frames:[{file, line, function}]}, harness frames removed;
    with max_frames, a longer one keeps its first and last frames and an omitted_frame."""
    deep = deep_traceback(exc, max_frames, drop_files) if max_frames else None
    if deep is None:
        frames = [{"file": f.filename, "line": f.lineno, "function": f.name}
                  for f in user_frames(traceback.extract_tb(exc.__traceback__), drop_files)]
    else:
        head, omitted, tail = deep
        frames = ([{"file": f.filename, "line": f.lineno, "function": f.name} for f in head]
                  + [omitted_frame(omitted)]
                  + [{"file": f.filename, "line": f.lineno, "function": f.name} for f in tail])
    return {"type": exception_type_name(type(exc)), "message": safe_str(exc), "frames": frames}


def format_deep_exception(exc, deep):
    """The text of a traceback bounded by deep_traceback (its chained exceptions left out)."""
    head, omitted, tail = deep
    out = ["Traceback (most recent call last):\n"]
    out += traceback.StackSummary.from_list(head).format()
    out.append("  [... %d frames omitted ...]\n" % omitted)
    out += traceback.StackSummary.from_list(tail).format()
    out += traceback.format_exception_only(type(exc), exc)
    return "".join(out)


def _trim_te(te, drop_files, seen):
    if te is None or id(te) in seen:
        return
    seen.add(id(te))
    te.stack = traceback.StackSummary.from_list(user_frames(list(te.stack), drop_files))
    _trim_te(getattr(te, "__cause__", None), drop_files, seen)
    _trim_te(getattr(te, "__context__", None), drop_files, seen)
    for sub in getattr(te, "exceptions", None) or ():
        _trim_te(sub, drop_files, seen)


def format_exception_trimmed(exc, drop_files=HARNESS_FILES, sources=None, max_frames=None):
    """The text Python prints for an uncaught exception, without the harness's frames.
    `sources` (a CellSources, session mode) gives frames of earlier cells their own lines.
    With max_frames, a longer traceback is cut as by deep_traceback."""
    deep = deep_traceback(exc, max_frames, drop_files) if max_frames else None
    if deep is not None:
        return format_deep_exception(exc, deep)
    te = traceback.TracebackException(type(exc), exc, exc.__traceback__,
                                      lookup_lines=sources is None)
    if sources is not None:
        _lookup_cell_lines(te, exc, sources, set())
    _trim_te(te, drop_files, set())
    return "".join(te.format())


class CellSources:
    """Session mode: every cell is compiled as <cell>, so linecache only knows the latest one.
    This remembers which cell each code object came from, so that a traceback through a
    function defined in an earlier cell shows that cell's line, not the current cell's."""

    def __init__(self):
        self.cells = []
        self.by_code = {}  # id(code) -> (code, cell index); the code is kept so ids stay unique

    def add(self, source, codes):
        lines = source.splitlines(True)
        if lines and not lines[-1].endswith("\n"):
            lines[-1] += "\n"
        index = len(self.cells)
        self.cells.append((len(source), lines))
        todo = [c for c in codes if c is not None]
        while todo:
            code = todo.pop()
            self.by_code[id(code)] = (code, index)
            todo.extend(c for c in code.co_consts if isinstance(c, types.CodeType))

    def entry(self, code):
        """linecache's entry for the cell `code` was compiled in, or None."""
        found = self.by_code.get(id(code))
        if found is None or found[0] is not code:
            return None
        size, lines = self.cells[found[1]]
        return (size, None, lines, CELL_FILENAME)


def _lookup_cell_lines(te, exc, sources, seen):
    """Looks up every frame's source line now (FrameSummary caches it), with linecache's <cell>
    entry pointing at the cell the frame's code comes from."""
    if te is None or exc is None or id(te) in seen:
        return
    seen.add(id(te))
    stack = list(te.stack)
    frames = [f for f, _ in traceback.walk_tb(exc.__traceback__)]
    current = linecache.cache.get(CELL_FILENAME)
    try:
        for i, fs in enumerate(stack):
            entry = None
            if len(frames) == len(stack) and fs.filename == CELL_FILENAME:
                entry = sources.entry(frames[i].f_code)
            if entry is not None:
                linecache.cache[CELL_FILENAME] = entry
            elif current is not None:
                linecache.cache[CELL_FILENAME] = current
            fs.line  # noqa: B018 - looked up (and cached) while the right cell is registered
    finally:
        if current is not None:
            linecache.cache[CELL_FILENAME] = current
    _lookup_cell_lines(getattr(te, "__cause__", None), exc.__cause__, sources, seen)
    _lookup_cell_lines(getattr(te, "__context__", None), exc.__context__, sources, seen)
    for sub_te, sub in zip(getattr(te, "exceptions", None) or (),
                           getattr(exc, "exceptions", None) or ()):
        _lookup_cell_lines(sub_te, sub, sources, seen)


def compile_error_report(exc):
    """A cell that does not compile -> (stderr text, structured traceback) as Python shows it:
    no "Traceback" header and no frames (the compiler's frames are not the user's)."""
    text = "".join(traceback.format_exception_only(type(exc), exc))
    return text, {"type": exception_type_name(type(exc)), "message": safe_str(exc), "frames": []}
