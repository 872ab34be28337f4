"""The zygote Z: the preloaded interpreter that owns the control channel, prepares each run's
process tree ahead of its request, and serves the server's messages (docs/harness-protocol.md).

Process tree of one run (``isolate`` mode; see the protocol doc, "Isolation"), the direct tree:

    zygote (Z)            preloaded interpreter, non-dumpable, owns the control channel
     └─ forker parent (F0) the forker's own user and PID namespaces (forker_ns.py); waits for F
         └─ forker (F)      PID 1 there; forks every run's tree (forker.py); never sees a request
             ├─ init (G)       PID 1 of the run's fresh PID namespace, sleeps in pause()
             └─ run (U)        PID 2: its own user, mount and IPC namespaces (isolation.py), then
                               the request's code (run_process.py, session_process.py)

and its fallback, the intermediate tree (also isolate=false's, without namespaces):

    zygote (Z)
     └─ forker (F)
         └─ intermediate (I)  namespaces, reaps U and G (isolation.py)
             ├─ init (G)       PID 1 of the run's PID namespace, sleeps in pause()
             └─ run (U)        PID 2: the request's code

G and U (and I) are created AHEAD of the request; a request only has to cross a pipe. In
``session`` mode U stays alive across runs (one persistent ``__main__``) and also serves file
operations.

Zygote is put together from one class per job: Children (run children), Relay (the relay
loop), Records (U's records and the done event), Runs (pool runs), ZygoteSession (sessions).
"""

import gc
import io
import mimetypes
import os
import select
import sys
import time
import traceback

from .cgroup import read_cgroup_baseline, read_memory_usage
from .channel import Channel
from .config import apply_config, parse_config
from .errors import FatalError, ProtocolError
from .kernel import PR_SET_DUMPABLE, Kernel
from .messages import FILE_OPS
from .osutil import flush_stdio, log
from .pip_site import plan as plan_pip_site
from .relay import Relay
from .wire import PROTOCOL_VERSION
from .zygote_children import Children
from .zygote_input import Input
from .zygote_records import Records
from .zygote_runs import Runs
from .zygote_session import ZygoteSession


class Zygote(Children, Input, Relay, Records, Runs, ZygoteSession):
    """Start-up, the main loop and the messages outside a request."""

    def __init__(self, channel, cfg):
        self.chan = channel
        self.cfg = cfg
        self.kernel = Kernel()
        if cfg["seccomp_bpf"] is not None:
            self.kernel.seccomp_program(cfg["seccomp_bpf"])  # built once, loaded by each run
        self.errors = []
        self.preloaded = []
        self.isolate = cfg["isolate"] is not False  # may turn False in "auto" mode
        self.run_count = 0
        self.prepared = None
        self.exit_requested = False
        self.pid = os.getpid()
        self.in_container = self.pid == 1 or os.getppid() == 1
        self.tmp_keep = set()
        self.mpl_seed = None
        self.pip_site = None  # run-time pip installs (pip_site.py), planned after the preload
        self.forker = None  # F, from the end of the preload on
        self.ready_sent = False
        self.session = cfg["mode"] == "session"
        self.session_limits = cfg["limits"]  # the latest `session` op's, for U's not started yet
        self.session_record = None  # the server's record of the session, for `resume`
        self.watchdog_s = cfg["watchdog_s"] if self.session else 0.0
        self.last_contact = time.monotonic()  # of the last message from the server

    # -- start-up ---------------------------------------------------------------------------

    def preload(self):
        os.environ.setdefault("MPLBACKEND", "Agg")
        import importlib
        for name in self.cfg["preload"]:
            try:
                importlib.import_module(name)
                if name == "matplotlib":
                    importlib.import_module("matplotlib.pyplot")
                self.preloaded.append(name)
            except (Exception, SystemExit) as e:
                self.errors.append("preload %s: %s: %s" % (name, type(e).__name__, e))
        if self.cfg["warm_plot"]:
            try:
                import matplotlib.pyplot as plt
                fig = plt.figure()
                ax = fig.add_subplot(1, 1, 1)
                ax.plot([0, 1], [0, 1], label="warm")
                ax.set_title("warm")
                ax.legend()
                fig.savefig(io.BytesIO(), format="png")
                plt.close(fig)
            except (Exception, SystemExit) as e:
                self.errors.append("warm_plot: %s: %s" % (type(e).__name__, e))
        mimetypes.init()
        self._snapshot_mpl_config()
        try:
            self.tmp_keep = set(os.listdir("/tmp"))
        except OSError:
            self.tmp_keep = set()
        self.pip_site, why = plan_pip_site(os.environ, self.cfg["workdir"])
        if why:
            log("run-time pip installs are off: %s" % why)
        # Everything preloaded goes to the collector's permanent generation: a full collection
        # in a run (any cell allocating some 10^5 objects triggers one) would otherwise write
        # to the header of every preloaded object and so copy most of the zygote's heap.
        gc.collect()
        gc.freeze()

    def _snapshot_mpl_config(self):
        """matplotlib's cache dir lives on /tmp (MPLCONFIGDIR): runs get a copy in their /tmp."""
        d = os.environ.get("MPLCONFIGDIR")
        if not d or not d.startswith("/tmp/") or not os.path.isdir(d):
            return
        files, total = {}, 0
        for name in os.listdir(d):
            full = os.path.join(d, name)
            if os.path.isfile(full) and not os.path.islink(full):
                total += os.path.getsize(full)
                if total > (8 << 20):
                    return
                with open(full, "rb") as f:
                    files[name] = f.read()
        self.mpl_seed = (d, files)

    # -- events ----------------------------------------------------------------------------

    def ready_event(self):
        ev = {"ev": "ready", "protocol": PROTOCOL_VERSION, "python": "%d.%d.%d" % sys.version_info[:3],
              "pid": self.pid, "preloaded": self.preloaded, "errors": list(self.errors),
              "isolation": "namespaces" if self.isolate else "process",
              "run_tree": self.forker.tree if self.isolate else "process",
              "run_count": self.run_count,
              "mode": self.cfg["mode"], "cgroup": read_cgroup_baseline()}
        if self.session:
            ev.update(self._session_fields())
        return ev

    def _session_fields(self):
        p = self.prepared
        return {"cells": p.cells if p else 0, "session_started": bool(p and p.started)}

    def _pong(self, busy):
        ev = {"ev": "pong", "memory_bytes": read_memory_usage(), "busy": busy}
        if self.session:
            ev.update(self._session_fields())
        return ev

    # -- main loop --------------------------------------------------------------------------

    def serve(self):
        self.preload()
        self.kernel.prctl(PR_SET_DUMPABLE, 0, what="PR_SET_DUMPABLE")
        self._start_forker()
        self.prepare()
        self.chan.send(self.ready_event())
        self.ready_sent = True
        self.last_contact = time.monotonic()  # the preload's seconds are not idle time
        while True:
            if not self.chan.queue:
                if self.chan.eof or self.exit_requested:
                    break
                if self.session:
                    watch = [self.chan.in_fd] + (list(self.prepared.open) if self.prepared else [])
                    wait = None
                    if self.watchdog_s > 0:
                        wait = self.last_contact + self.watchdog_s - time.monotonic()
                        if wait <= 0:
                            log("no message from a server for %.0f s: exiting" % self.watchdog_s)
                            break
                    r, _, _ = select.select(watch, [], [], wait)
                    self._session_idle(r)
                    if self.chan.in_fd in r:
                        self.chan.on_readable()
                        self.last_contact = time.monotonic()
                    continue
                watch = [self.chan.in_fd] + ([self.prepared.st_r] if self.prepared else [])
                r, _, _ = select.select(watch, [], [])
                if self.prepared and self.prepared.st_r in r:
                    # a prepared child must stay silent until its run: it died (e.g. OOM)
                    log("the prepared child died while idle; preparing another")
                    self._discard(self.prepared)
                    self.prepared = None
                    self.prepare()
                if self.chan.in_fd in r:
                    self.chan.on_readable()
                continue
            msg = self.chan.queue.pop(0)
            op = msg["op"]
            if op == "ping":
                self.chan.send(self._pong(False))
            elif op == "cancel":
                log("cancel for %r while idle: ignored" % msg.get("id"))
            elif op == "input_reply":
                self.handle_input_reply(None, msg)  # it crossed its run's end
            elif op == "session":
                self.handle_session_op(msg)
            elif op == "resume":
                self.handle_resume_op(msg)
            elif op in FILE_OPS:
                self.handle_file_op(msg)
            elif op == "exit":
                break
            elif op == "run":
                self.handle_run(msg)
                if self.cfg["mode"] == "fresh" or self.exit_requested:
                    break
                if self.prepared is None:
                    self.prepare()
                self.chan.send(self.ready_event())
            elif op == "config":
                raise ProtocolError("config was already given")
            else:
                raise ProtocolError("unknown op %r" % op)
            self.last_contact = time.monotonic()  # a run or an op is contact until its end
        if self.prepared is not None:
            self._log_discarded(self.prepared)
            self._discard(self.prepared)
            self.prepared = None
        if not self.isolate and self.in_container:
            self.forker.cleanup()
        self.forker.close()


def main():
    """The harness: the config message, then the zygote until the server is done with it."""
    try:
        chan = Channel()
    except Exception as e:
        log("cannot set up the control channel: %s" % e)
        os._exit(3)
    code = 0
    try:
        msg = chan.next_message()
        if msg is None:
            log("the control stream ended before the config message")
            os._exit(0)
        cfg = parse_config(msg)
        apply_config(cfg)
        Zygote(chan, cfg).serve()
    except ProtocolError as e:
        log("protocol error: %s" % e)
        _send_fatal(chan, "protocol error: %s" % e)
        code = 2
    except FatalError as e:
        log("fatal: %s" % e)
        _send_fatal(chan, str(e))
        code = 3
    except BaseException as e:  # noqa: B902
        log("internal error:\n" + "".join(traceback.format_exception(type(e), e, e.__traceback__)))
        _send_fatal(chan, "internal error: %s: %s" % (type(e).__name__, e))
        code = 4
    flush_stdio()
    os._exit(code)


def _send_fatal(chan, message):
    try:
        chan.send({"ev": "fatal", "message": message})
    except OSError:
        pass
