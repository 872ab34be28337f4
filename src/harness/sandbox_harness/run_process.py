"""The run process U: prepared ahead of its request (work dir, fresh stdio, a new __main__,
figure capture), then, once the request arrives, the request's files, rlimits, seccomp, the
user's cell, and the report of its results (figures, files, value, traceback) to the zygote."""

import base64
import builtins
import json
import os
import signal
import sys
import threading
import types

from .cells import interpreter_shutdown, run_cell
from .figures import FigureCapture
from .kernel import PR_SET_NO_NEW_PRIVS, PR_SET_PDEATHSIG, apply_rlimits, narrowed_memory, relax_data_limit
from .messages import validate_rel_path
from .osutil import close_fds_except, flush_stdio, fresh_stdio, read_all, write_all
from .pip_site import apply as apply_pip_site
from .session_process import session_serve
from .stdin_bridge import install as install_stdin
from .tracebacks import CELL_FILENAME
from .wire import encode_json_frame, send_record
from .workdir import collect_files, write_inputs

EX_INTERNAL = 70  # exit status of a run process that failed before or after the user's code


def run_process(spec):
    """U: waits for the request, then runs it. Never returns."""
    code = EX_INTERNAL
    res_w = spec.res_w
    try:
        spec.kernel.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if spec.isolate:
            # Its own session and process group: I, F and Z share the container's group, and
            # kill(0) / killpg(getpgrp()) would reach them across the PID namespace. (Without
            # namespaces G made the session; U stays in G's group, which _kill_tree kills.)
            os.setsid()
        devnull = os.open("/dev/null", os.O_RDWR)
        os.dup2(devnull, 0)
        os.dup2(spec.out_w, 1)
        os.dup2(spec.err_w, 2)
        close_fds_except({0, 1, 2, spec.req_r, res_w, spec.in_r} - {None})
        prepared = prepare_run(spec)
        send_record(res_w, {"t": "waiting"})
        if spec.cfg["mode"] == "session":
            code = session_serve(spec, prepared)
        else:
            raw = read_all(spec.req_r)
            os.close(spec.req_r)
            if not raw:
                os._exit(0)  # the zygote discarded this prepared child
            code = run_request(json.loads(raw.decode("utf-8")), spec, prepared)
    except BaseException as e:  # noqa: B902
        try:
            send_record(res_w, {"t": "internal", "message": "%s: %s" % (type(e).__name__, e)})
        except BaseException:  # noqa: B902
            pass
    finally:
        # Closing the pipes first lets the zygote see EOF before this big address space is torn
        # down; the exit status still comes from the init.
        for fd in (1, 2, res_w):
            try:
                os.close(fd)
            except OSError:
                pass
        if spec.isolate:
            # A sleeper sharing this address space keeps it alive past our exit: the exit is then
            # quick, I reports our status at once, and the teardown of the address space (some
            # ms of CPU) happens when I ends the namespace, after `done` has gone out.
            try:
                spec.kernel.spawn_sleeper()
            except BaseException:  # noqa: B902 - e.g. RLIMIT_NPROC: then the exit is just slower
                pass
        os._exit(code)


class ResultSender:
    """Records to Z. Locked: in a session a thread of the user's may call plt.show() while the
    harness answers an op, and a record larger than PIPE_BUF is written in several parts."""

    def __init__(self, fd):
        self.fd = fd
        self.lock = threading.Lock()
        if hasattr(os, "register_at_fork"):  # a fork while another thread held it
            os.register_at_fork(after_in_child=self._new_lock)

    def _new_lock(self):
        self.lock = threading.Lock()

    def send(self, obj):
        data = encode_json_frame(obj)
        with self.lock:
            write_all(self.fd, data)


def prepare_run(spec):
    """U, before the request: everything that does not depend on it."""
    cfg = spec.cfg
    sender = ResultSender(spec.res_w)
    os.chdir(cfg["workdir"])
    fresh_stdio()
    sys.path.insert(0, cfg["workdir"])
    if getattr(spec, "pip_site", None) is not None:
        try:
            apply_pip_site(spec.pip_site)  # the user site on this run's /tmp (pip_site.py)
        except OSError:
            pass  # /tmp full or unwritable: pip's own error will say so, if pip is used
    main_mod = types.ModuleType("__main__")
    main_mod.__dict__["__builtins__"] = builtins  # the module, as in a real __main__
    sys.modules["__main__"] = main_mod
    capture = FigureCapture(sender, cfg["image"])
    capture.install()
    return sender, main_mod, capture


def run_request(req, spec, prepared):
    """U, after the request arrived: files, limits, seccomp, the cell, figures, files out."""
    cfg = spec.cfg
    sender, main_mod, capture = prepared
    workdir = cfg["workdir"]
    files = [(validate_rel_path(f["path"]), base64.b64decode(f["content_b64"]))
             for f in req.get("files", [])]
    input_hashes = write_inputs(files)
    sys.argv = [CELL_FILENAME] + list(req.get("argv", []))
    apply_rlimits(req["limits"], narrowed_memory(req["limits"], cfg["limits"]))
    spec.kernel.prctl(PR_SET_NO_NEW_PRIVS, 1, what="PR_SET_NO_NEW_PRIVS")
    if cfg["seccomp_bpf"] is not None:
        spec.kernel.install_seccomp(cfg["seccomp_bpf"])
    if req.get("stdin") == "interactive" and spec.in_r is not None:
        install_stdin(sender, spec.in_r, cfg["input"]["max_prompt_chars"])
    # -- nothing but the user's code and the collection of its results after this point --
    sender.send({"t": "started"})
    run_pid = os.getpid()
    status, value, tb, memory_error = run_cell(req["code"], main_mod.__dict__,
                                                cfg["value_max_chars"], on_end=relax_data_limit,
                                                tb_limits=cfg["traceback"])
    interpreter_shutdown()
    flush_stdio()
    if os.getpid() != run_pid:
        os._exit(status)  # a process the cell forked reached the cell's end: it exits like Python
    try:
        capture.capture_all()
    except BaseException as e:  # noqa: B902
        sys.stderr.write("[sandbox] figures could not be captured: %s\n" % e)
    flush_stdio()
    files_truncated = collect_files(workdir, input_hashes, cfg["files_out"], sender)
    sender.send({"t": "result", "value": value, "traceback": tb, "memory_error": memory_error,
                 "files_truncated": files_truncated, "images_truncated": capture.truncated})
    return status
