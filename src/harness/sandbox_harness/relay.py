"""The one relay loop of both modes: a request goes to the run process U, and everything U's
tree sends comes back (output relayed within its limit, records handed to the mode, statuses
read) until U answers or is gone, with the request's deadline, the server's control messages
(ping, cancel, exit) and the kill in one place."""

import array
import fcntl
import os
import selectors
import termios
import time

from .errors import FatalError, ProtocolError
from .messages import FILE_OPS
from .osutil import log
from .wire import KIND_STDERR, KIND_STDOUT

OUTPUT_CHUNK = 1 << 16
OUTPUT_MARKER = "\n[output truncated: limit of {n} bytes reached]\n"
# The order in which the loop handles what is ready at once: an answer first (what follows it in
# the other pipes belongs to the time after the request), the control channel last.
_ORDER = {"res": 0, "out": 1, "err": 2, "st": 3, "req": 4, "ctl": 5}


def read_output(fd):
    """A read of a run's stdout or stderr pipe, plus whatever is already waiting behind it (no
    waiting for more): print() alone makes two writes, and each read becomes one frame."""
    data = os.read(fd, OUTPUT_CHUNK)
    while data and len(data) < OUTPUT_CHUNK:
        n = pipe_available(fd)
        if n <= 0:
            break
        more = os.read(fd, min(n, OUTPUT_CHUNK - len(data)))
        if not more:
            break
        data += more
    return data


def pipe_available(fd):
    """Bytes waiting in a pipe (FIONREAD), 0 if unknown."""
    buf = array.array("i", [0])
    try:
        fcntl.ioctl(fd, termios.FIONREAD, buf, True)
    except OSError:
        return 0
    return buf[0]


def apply_output_limit(used, limit, data):
    """How much of `data` may still be relayed: (bytes to send, limit_reached)."""
    remaining = limit - used
    if len(data) <= remaining:
        return data, False
    return data[:max(remaining, 0)], True


class Relay:
    """The zygote's part that relays one request (a mixin of Zygote)."""

    def _exchange(self, p, state, deadline, run, on_records):
        """Relays U's tree until U answers or is gone. `p.pending` holds request bytes still to
        write (U may not read: never blocks on it). run: output is relayed and result bytes
        count against the run's budget (else, during a file op, output is dropped). on_records
        (state, p, data) gets the bytes of U's result pipe and returns U's answer or None.
        Returns the answer, or None when U's tree ended or was killed (`state` says how)."""
        answer = None
        writing = False
        gone = False  # U or its init ended, or I closed its status pipe
        st_closed_at = None
        budget = self._result_budget()
        sel = selectors.DefaultSelector()
        try:
            for fd, tag in p.open.items():
                sel.register(fd, selectors.EVENT_READ, tag)
            if not self.chan.eof:
                sel.register(self.chan.in_fd, selectors.EVENT_READ, "ctl")
            self._control(state, p, run)  # messages that arrived with the request
            while answer is None:
                if p.pending and not writing:
                    sel.register(p.req_w, selectors.EVENT_WRITE, "req")
                    writing = True
                now = time.monotonic()
                if state.kill_reason is None and now >= deadline:
                    self._kill(state, p, "timeout")
                if state.kill_time is not None and now - state.kill_time > 10:
                    raise FatalError("the %s processes did not die within 10 s of SIGKILL"
                                     % ("session's" if self.session else "run's"))
                pipes = any(t in ("out", "err", "res") for t in p.open.values())
                if not gone and (state.ustatus is not None or state.gstatus is not None
                                 or p.st_r not in p.open):
                    gone = True
                    # What is left of the tree dies with U. A tree its PID namespace contains
                    # and that holds no pipe is ended after `done` (by _discard), so the
                    # teardown of U's address space does not delay the report.
                    if pipes or not self.isolate:
                        self._kill_tree(p)
                if gone and not pipes:
                    break
                if st_closed_at is not None and now - st_closed_at > 2:
                    log("request %r: pipes still open 2 s after the run's init ended; giving up "
                        "on them" % state.rid)
                    break
                timeout = max(deadline - now, 0) if state.kill_reason is None else 0.5
                if st_closed_at is not None:
                    timeout = 0.1
                for key, _ in sorted(sel.select(timeout), key=lambda e: _ORDER[e[0].data]):
                    tag = key.data
                    if tag == "req":
                        try:
                            n = os.write(p.req_w, p.pending[:1 << 16])
                            del p.pending[:n]
                        except BlockingIOError:
                            continue
                        except OSError:  # EPIPE: U is gone, its status follows
                            p.pending.clear()
                        if not p.pending:
                            sel.unregister(p.req_w)
                            writing = False
                        continue
                    if tag == "ctl":
                        self.chan.on_readable()
                        if self.chan.eof:
                            sel.unregister(self.chan.in_fd)
                            self.exit_requested = True
                        self._control(state, p, run)
                        continue
                    data = read_output(key.fd) if tag in ("out", "err") else \
                        os.read(key.fd, 1 << 16)
                    if not data:
                        sel.unregister(key.fd)
                        del p.open[key.fd]
                        if tag == "st":
                            st_closed_at = time.monotonic()
                        continue
                    if tag == "res":
                        if run:
                            state.result_bytes += len(data)
                            if state.result_bytes > budget:  # no longer read: the run is killed
                                sel.unregister(key.fd)
                                del p.open[key.fd]
                                self._kill(state, p, "result_limit")
                                continue
                        answer = on_records(state, p, data)
                        if answer is not None:
                            break  # what else is readable now belongs to the idle session
                    elif tag == "st":
                        p.st_decoder.feed(data)
                        for _, payload in p.st_decoder.frames():
                            self._on_status(state, payload)
                    elif run:
                        self._relay(state, p, KIND_STDOUT if tag == "out" else KIND_STDERR, data)
                    else:
                        p.discarded += len(data)
            if answer is not None and run:
                self._drain_output(state, p)
        finally:
            sel.close()
        return answer

    def _control(self, state, p, run):
        """The server's messages during a request. During a session's file op, runs and other
        file ops wait in the queue (served after its reply); during a run they are protocol
        errors, except a file op outside session mode (answered at once: refused)."""
        deferred = []
        while self.chan.queue:
            msg = self.chan.queue.pop(0)
            op = msg["op"]
            if op == "ping":
                self.chan.send(self._pong(True))
            elif op == "cancel":
                if run and msg.get("id") == state.rid:
                    self._kill(state, p, "cancel")
                else:
                    log("cancel for %r while %r is in progress: ignored" % (msg.get("id"), state.rid))
            elif op == "exit":
                self.exit_requested = True
            elif op == "input_reply":
                self.handle_input_reply(state if run else None, msg)
            elif op == "session":
                self.handle_session_op(msg)  # a protocol error outside session mode
            elif op == "resume" and self.session:
                self.handle_resume_op(msg)
            elif op in FILE_OPS and not self.session:
                self.handle_file_op(msg)
            elif op == "run" or op in FILE_OPS:
                if run:
                    raise ProtocolError("%s %r arrived while run %r is in progress"
                                        % (op, msg.get("id"), state.rid))
                deferred.append(msg)
            elif op == "config":
                raise ProtocolError("config was already given")
            else:
                raise ProtocolError("unknown op %r" % op)
        self.chan.queue[:0] = deferred

    def _kill(self, state, p, reason):
        if state.kill_reason is None:
            state.kill_reason = reason
            state.kill_time = time.monotonic()
        self._kill_tree(p)

    def _relay(self, state, p, kind, data):
        if state.output_cut:
            return
        chunk, cut = apply_output_limit(state.out_bytes, state.limits["output_bytes"], data)
        self.chan.send_output(kind, chunk)
        state.out_bytes += len(chunk)
        if cut:
            state.output_cut = True
            marker = OUTPUT_MARKER.format(n=state.limits["output_bytes"]).encode()
            self.chan.send_output(KIND_STDOUT, marker)
            self._kill(state, p, "output_limit")

    def _drain_output(self, state, p):
        """After the cell-finished record: relays what U wrote before it, which is already in
        the pipes (bytes written later belong to the time between cells)."""
        for fd, kind in ((p.out_r, KIND_STDOUT), (p.err_r, KIND_STDERR)):
            if fd not in p.open:
                continue
            n = pipe_available(fd)
            while n > 0 and not state.output_cut:
                data = os.read(fd, min(n, 1 << 16))
                if not data:
                    break
                n -= len(data)
                self._relay(state, p, kind, data)
