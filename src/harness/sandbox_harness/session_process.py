"""The session's run process: cells in one persistent __main__ (limits and seccomp applied once,
at the first request), and the file operations, until the zygote closes the request pipe."""

import base64
import os
import resource
import sys

from .cells import run_cell
from .fileops import FileOpError, delete_file, get_file, list_files, put_files
from .kernel import PR_SET_NO_NEW_PRIVS, apply_rlimits, narrowed_memory, relax_data_limit
from .osutil import flush_stdio
from .stdin_bridge import install as install_stdin
from .tracebacks import CELL_FILENAME, CellSources
from .wire import read_request
from .workdir import changed_files, send_files, snapshot_files, walk_regular_files


class _SessionContext:
    def __init__(self):
        self.initialized = False
        self.data_limit = None  # RLIMIT_DATA (soft, hard) when the session's memory is narrowed
        self.fsize = None  # the session's RLIMIT_FSIZE, named in a put_files error
        self.sources = CellSources()


def session_serve(spec, prepared):
    """U in session mode: serves requests until Z closes the request pipe. Limits and the
    seccomp filter are applied once, before the first request is handled."""
    cfg = spec.cfg
    sender = prepared[0]
    ctx = _SessionContext()
    while True:
        req = read_request(spec.req_r)
        if req is None:
            return 0
        if not ctx.initialized:
            limits = req["session_limits"]
            ctx.data_limit = apply_rlimits(limits, narrowed_memory(limits, cfg["limits"]),
                                            cpu=False)
            ctx.fsize = limits["fsize_bytes"]
            spec.kernel.prctl(PR_SET_NO_NEW_PRIVS, 1, what="PR_SET_NO_NEW_PRIVS")
            if cfg["seccomp_bpf"] is not None:
                spec.kernel.install_seccomp(cfg["seccomp_bpf"])
            relax_data_limit()  # the narrowed budget is lowered again for each cell
            ctx.initialized = True
        if req["t"] == "run":
            _session_cell(req, spec, prepared, ctx)
        else:
            sender.send(_session_file_op(req, cfg, ctx))


def _session_file_op(req, cfg, ctx):
    """A file op's reply record. Harness code on absolute paths (the cell may have chdir'ed)."""
    workdir = cfg["workdir"]
    op = req["op"]
    reply = {"t": "reply", "seq": req["seq"], "id": req["id"]}
    try:
        if op == "put_files":
            put_files(workdir, [(f["path"], base64.b64decode(f["content_b64"])) for f in req["files"]],
                      cfg["tmpfs_size_bytes"], ctx.fsize)
            result = {}
        elif op == "list_files":
            files, truncated = list_files(workdir, req["max_entries"])
            result = {"files": files, "truncated": truncated}
        elif op == "get_file":
            result = get_file(workdir, req["path"], req["max_bytes"])
        elif op == "delete_file":
            result = delete_file(workdir, req["path"])
        else:
            raise FileOpError("unknown file operation %r" % op)
        reply.update(ok=True, result=result)
    except FileOpError as e:
        reply.update(ok=False, error=str(e))
    except OSError as e:
        reply.update(ok=False, error="%s failed: %s" % (op, e))
    return reply


def _session_cell(req, spec, prepared, ctx):
    """One cell in the session's persistent __main__. Ends with the `result` record ("cell
    finished"); threads are not joined and atexit does not run (the interpreter lives on)."""
    cfg = spec.cfg
    sender, main_mod, capture = prepared
    workdir = cfg["workdir"]
    seq = req["seq"]
    try:
        put_files(workdir, [(f["path"], base64.b64decode(f["content_b64"])) for f in req["files"]],
                  cfg["tmpfs_size_bytes"], ctx.fsize)
    except FileOpError as e:
        sender.send({"t": "result", "seq": seq, "input_error": str(e)})
        return
    before = snapshot_files(workdir)
    sys.argv = [CELL_FILENAME] + list(req.get("argv", []))
    capture.reset()
    if ctx.data_limit is not None:
        try:
            resource.setrlimit(resource.RLIMIT_DATA, ctx.data_limit)
        except (OSError, ValueError):
            pass  # the code lowered the hard limit itself
    usage0 = _self_usage()
    restore_stdin = None
    if req.get("stdin") == "interactive" and spec.in_r is not None:
        # for this cell only
        restore_stdin = install_stdin(sender, spec.in_r, cfg["input"]["max_prompt_chars"])
    sender.send({"t": "started"})
    run_pid = os.getpid()
    status, value, tb, memory_error = run_cell(req["code"], main_mod.__dict__,
                                                cfg["value_max_chars"], on_end=relax_data_limit,
                                                sources=ctx.sources, tb_limits=cfg["traceback"])
    flush_stdio()
    if os.getpid() != run_pid:
        os._exit(status)  # a process the cell forked reached the cell's end: it exits like Python
    if restore_stdin is not None:
        restore_stdin()
    try:
        capture.capture_all()
    except BaseException as e:  # noqa: B902
        sys.stderr.write("[sandbox] figures could not be captured: %s\n" % e)
    flush_stdio()
    after, walk_truncated = walk_regular_files(workdir)
    changed = set(changed_files(before, {rel: (st.st_size, st.st_mtime_ns, st.st_ino)
                                         for rel, st in after}))
    files_truncated = send_files(workdir, [(rel, st.st_size, rel not in changed)
                                            for rel, st in after], cfg["files_out"], sender)
    files_truncated = files_truncated or walk_truncated
    usage1 = _self_usage()
    sender.send({"t": "result", "seq": seq, "status": status, "value": value, "traceback": tb,
                 "memory_error": memory_error, "files_truncated": files_truncated,
                 "images_truncated": capture.truncated,
                 "cpu_ms": int((usage1[0] - usage0[0]) * 1000), "max_rss_kb": usage1[1]})


def _self_usage():
    """(CPU seconds, max RSS kB) of this process and its waited-for children."""
    a = resource.getrusage(resource.RUSAGE_SELF)
    b = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime,
            int(max(a.ru_maxrss, b.ru_maxrss)))
