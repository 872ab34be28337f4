"""The zygote's run children: each run's process tree is forked (by F) and isolated ahead of
its request, waits prepared, and is killed and discarded after its run."""

import json
import os
import select
import signal
import time

from .cgroup import read_memory_counters
from .errors import FatalError, ProtocolError
from .forker import TREE_DIRECT, Forker, ForkerState
from .osutil import log
from .wire import KIND_JSON, FrameDecoder


class Prepared:
    """A forked, isolated child waiting for its request."""

    def __init__(self, ipid, gpid, req_w, out_r, err_r, res_r, st_r, in_w=None):
        self.ipid = ipid  # I's pid (the intermediate tree), else None
        self.gpid = gpid  # G's pid: the direct tree's from F (in F's namespace), else I's record
        self.req_w, self.out_r, self.err_r, self.res_r, self.st_r = req_w, out_r, err_r, res_r, st_r
        self.in_w = in_w  # U's stdin channel (interactive_input), never blocking Z
        if in_w is not None:
            os.set_blocking(in_w, False)
        self.st_decoder = FrameDecoder(max_payload=1 << 16, kinds=(KIND_JSON,))
        self.reaped = False
        self.res_decoder = None  # U's result records (see watch)
        self.open = {}  # fd -> tag of U's pipes not yet at EOF
        self.pending = bytearray()  # request bytes not yet written to req_w
        # session mode (see Children._session_setup)
        self.started = False  # a request was sent: U applied its limits, state may exist
        self.cells = 0
        self.seq = 0  # request number, echoed in U's answers: a stale answer is never taken
        self.discarded = 0  # bytes read from U's pipes and dropped since the last request
        self.counters = None
        self.limits = None  # the session limits U was initialized with (at its first request)

    def fds(self):
        return [fd for fd in (self.req_w, self.out_r, self.err_r, self.res_r, self.st_r,
                              self.in_w) if fd is not None]

    def watch(self, max_record):
        """From its first request on, Z reads U's pipes: all of them open, records decoded."""
        self.res_decoder = FrameDecoder(max_payload=max_record, kinds=(KIND_JSON,))
        self.open = {self.out_r: "out", self.err_r: "err", self.res_r: "res", self.st_r: "st"}


class Children:
    """The zygote's part that creates and ends run children (a mixin of Zygote: it uses the
    zygote's config, channel, forker and isolation state)."""

    def _start_forker(self, direct=None):
        """Forks F (see "The forker"), before any request reached the zygote. With namespaces
        the direct tree is tried first (direct=None), the intermediate one where it is refused."""
        if any(m.get("op") != "ping" for m in self.chan.queue) or self.chan.decoder.pending:
            raise ProtocolError("a request arrived before the first ready (the server must wait "
                                "for it: nothing of a request may reach the forker's memory)")
        fs = ForkerState(cfg=self.cfg, kernel=self.kernel, zygote_pid=self.pid,
                          mpl_seed=self.mpl_seed, tmp_keep=self.tmp_keep,
                          pip_site=self.pip_site,
                          in_container=self.in_container, sock_fd=None)
        close = (self.chan.in_fd, self.chan.out_fd)
        if direct is None:
            direct = self.isolate
        if direct:
            try:
                self.forker = Forker.start(fs, close_in_child=close, direct=True)
                return
            except FatalError as e:
                self._direct_refused(e)
        self.forker = Forker.start(fs, close_in_child=close)

    def _direct_refused(self, why):
        log("the direct run tree is unavailable (%s); each run forks an intermediate process"
            % why)

    def _spawn(self):
        ipid, gpid, fds = self.forker.prepare(self.isolate, self.cfg["interactive_input"])
        return Prepared(ipid, gpid, *fds)

    def _await_prepared(self, p, timeout=15.0):
        """Waits for I's `pid` record and U's `waiting` record; returns None or the error."""
        deadline = time.monotonic() + timeout
        waiting = False
        res_decoder = FrameDecoder(max_payload=1 << 16, kinds=(KIND_JSON,))
        while p.gpid is None or not waiting:
            wait = deadline - time.monotonic()
            if wait <= 0:
                return "the child did not finish its set-up within %g s" % timeout
            r, _, _ = select.select([p.st_r, p.res_r], [], [], wait)
            if p.st_r in r:
                data = os.read(p.st_r, 1 << 16)
                if not data:
                    return "the child exited during set-up"
                p.st_decoder.feed(data)
                for _, payload in p.st_decoder.frames():
                    rec = json.loads(payload.decode("utf-8"))
                    if rec.get("t") == "pid":
                        p.gpid = int(rec["pid"])
                    elif rec.get("t") == "setup_error":
                        return rec.get("message", "unknown set-up error")
                    elif rec.get("t") in ("gstatus", "ustatus"):
                        return "the child exited during set-up (status %s)" % rec.get("status")
            if p.res_r in r:
                data = os.read(p.res_r, 1 << 16)
                if not data:
                    return "the run process exited during set-up"
                res_decoder.feed(data)
                for _, payload in res_decoder.frames():
                    rec = json.loads(payload.decode("utf-8"))
                    if rec.get("t") == "waiting":
                        waiting = True
                    elif rec.get("t") == "internal":
                        return "run process: %s" % rec.get("message")
        return None

    def prepare(self):
        """Forks and isolates the next run's child. Sends `fatal` if that is impossible."""
        while True:
            p = self._spawn()
            err = self._await_prepared(p)
            if err is None:
                if self.session:
                    self._session_setup(p)
                self.prepared = p
                return
            self._discard(p)
            if self.forker.tree == TREE_DIRECT and not self.ready_sent:
                # Before the first ready no request reached Z: it may still fork another forker.
                self._direct_refused(err)
                self.forker.close()
                self._start_forker(direct=False)
                continue
            if self.isolate and self.cfg["isolate"] == "auto" and \
                    self.forker.tree != TREE_DIRECT:
                # (The direct tree's F cannot serve runs without namespaces: its PID namespace
                # is not the container's. It failed after serving runs: the container is sick.)
                self.errors.append("isolate: per-run namespaces unavailable (%s); runs use plain "
                                   "processes (isolate=false guarantees)" % err)
                log(self.errors[-1])
                self.isolate = False
                continue
            what = "per-run isolation failed" if self.isolate else "preparing a run failed"
            raise FatalError("%s: %s" % (what, err))

    def _discard(self, p):
        """Kills a prepared (or finished) child and closes its pipes."""
        if not p.reaped:
            self._kill_tree(p)
            if p.ipid:
                try:
                    os.kill(p.ipid, signal.SIGKILL)
                except OSError:
                    pass
        for fd in p.fds():
            try:
                os.close(fd)
            except OSError:
                pass
        p.reaped = True  # by F (its child), without blocking: the exit's teardown is slow

    def _kill_tree(self, p):
        """SIGKILL to the run's init: with a PID namespace the kernel kills the whole tree. In
        the direct tree F sends it (G is F's child and in F's PID namespace, which hides the
        container's pids; unreaped, so the pid cannot name another process)."""
        if p.gpid and self.forker.tree == TREE_DIRECT:
            self.forker.kill(p.gpid)
            return
        if p.gpid:
            try:
                os.kill(p.gpid, signal.SIGKILL)
            except OSError:
                pass
        if not self.isolate:
            if p.gpid:
                try:
                    os.killpg(p.gpid, signal.SIGKILL)
                except OSError:
                    pass
            if self.in_container:
                self.forker.sweep()  # what escaped the group (F spares PID 1, Z and itself)

    def _session_setup(self, p):
        """A prepared child becomes the session's U: its pipes stay open across requests."""
        p.watch(self._max_result_record())
        os.set_blocking(p.req_w, False)  # Z never blocks on a U that does not read
        p.counters = read_memory_counters()

    def _log_discarded(self, p):
        if p.discarded:
            log("discarded %d bytes written between cells" % p.discarded)
            p.discarded = 0
