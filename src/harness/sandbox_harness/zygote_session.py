"""The zygote's side of session mode: one run process U lives across requests (cells and file
operations), each request sent with a sequence number and relayed until U's answer; the
`session` and `resume` ops; and the reset of a session whose U died or broke its channel."""

import json
import os
import time

from .cgroup import counter_delta, read_memory_counters
from .checks import check_reply, reply_bound
from .config import is_int, parse_session_record, parse_watchdog
from .errors import InputError, ProtocolError
from .kernel import narrowed_memory
from .messages import parse_file_op, parse_op_id, parse_session_op
from .osutil import log
from .protocol import VERDICT
from .verdicts import CORRUPT_RESULTS, RESET_SUFFIX, death_reason, decide_verdict
from .wire import PROTOCOL_VERSION, encode_json_frame
from .zygote_records import RunState


class ZygoteSession:
    """The zygote's part that serves a session (a mixin of Zygote)."""

    def handle_session_op(self, msg):
        if not self.session:
            raise ProtocolError("the session op needs session mode (config.mode \"session\")")
        rid, limits = parse_session_op(msg, self.cfg)
        record = parse_session_record(msg)
        watchdog = parse_watchdog(msg, "session", default=self.watchdog_s)
        self.session_limits = limits
        if record is not None:
            self.session_record = record
        self.watchdog_s = watchdog
        self.chan.send({"ev": "reply", "id": rid, "ok": True})

    def handle_resume_op(self, msg):
        """A server (re-)attached to this container: what it needs to serve the session again.
        idle_s is how long no server had spoken to the harness before this op."""
        if not self.session:
            raise ProtocolError("the resume op needs session mode (config.mode \"session\")")
        rid = parse_op_id(msg)
        result = {"record": self.session_record, "protocol": PROTOCOL_VERSION,
                  "idle_s": round(max(time.monotonic() - self.last_contact, 0.0), 3),
                  "watchdog_s": self.watchdog_s}
        result.update(self._session_fields())
        self.chan.send({"ev": "reply", "id": rid, "ok": True, "result": result})

    def _session_idle(self, readable):
        """Between requests: U's output is read and dropped (so that nothing of the session
        blocks on a full pipe), and the death of U or G resets the session."""
        p = self.prepared
        if p is None:
            return
        for fd in readable:
            tag = p.open.get(fd)
            if tag is None:
                continue
            data = os.read(fd, 1 << 16)
            if tag == "st":
                statuses = RunState(None, {})
                if data:
                    p.st_decoder.feed(data)
                    for _, payload in p.st_decoder.frames():
                        self._on_status(statuses, payload)
                else:
                    del p.open[fd]
                oom = counter_delta(p.counters or {}, read_memory_counters(), "oom_kill")
                self._session_reset(p, death_reason(statuses.ustatus, statuses.gstatus, oom))
                return
            if not data:
                del p.open[fd]
                continue
            p.discarded += len(data)
            if tag == "res":
                p.res_decoder.feed(data)
                _, error = p.res_decoder.frames_before_error()  # records now are nobody's: dropped
                if error is not None:
                    self._session_reset(p, "the code wrote data that is not a result record to "
                                           "the harness's result channel")
                    return

    def _session_reset(self, p, reason):
        """U (or G) is gone or unusable outside a run: kill what is left, tell the server, and
        prepare an empty session. A U that never got a request held nothing: replaced silently."""
        self._log_discarded(p)
        self._discard(p)
        self.prepared = None
        if not p.started:
            log("the prepared child died while idle; preparing another")
            self.prepare()
            return
        log("session reset: %s" % reason)
        self.chan.send({"ev": "session_reset", "reason": reason + RESET_SUFFIX})
        self.prepare()
        self.chan.send(self.ready_event())

    def _session_exchange(self, p, request, deadline, state, run):
        """Sends one request to the session's U and relays U's pipes until U answers (the
        cell's `result` record or the op's `reply`, with this request's seq) or is gone.
        Returns the answer, or None when U was killed or died (`state` says how)."""
        p.seq += 1
        request["seq"] = p.seq
        request["session_limits"] = self.session_limits  # used by U at its first request only
        if not p.started:
            p.limits = self.session_limits
        p.started = True
        p.pending += encode_json_frame(request)
        try:
            return self._exchange(p, state, deadline, run,
                                  lambda st, pp, data: self._session_records(st, pp, data,
                                                                             request, run))
        finally:
            p.counters = read_memory_counters()

    def _session_records(self, state, p, data, request, run):
        """Bytes from U's result pipe during a request -> the answer record, or None. Other
        records of a run are handled as in the other modes; during an op they are dropped."""
        p.res_decoder.feed(data)
        frames, error = p.res_decoder.frames_before_error()
        answer = None
        for _, payload in frames:
            if answer is not None:
                p.discarded += len(payload)  # a thread's record right behind the answer
                continue
            try:
                rec = json.loads(payload.decode("utf-8"))
            except ValueError:
                rec = None
            if not isinstance(rec, dict):
                error = error or ProtocolError("not a JSON object")
                break
            t = rec.get("t")
            if t in ("result", "reply") and rec.get("seq") == p.seq:
                if run and t == "result":
                    answer = state.result = rec
                elif not run and t == "reply" and rec.get("id") == request["id"]:
                    if len(payload) > reply_bound(request):
                        self._kill(state, p, "oversize")
                        return None
                    answer = rec
                continue
            if run and t not in ("result", "reply"):
                self._on_record(state, rec)
            else:
                p.discarded += len(payload)
        if error is not None and answer is None:
            # The stream cannot be trusted to be in sync any more: the session ends.
            state.corrupt = CORRUPT_RESULTS
            self._kill(state, p, "corrupt")
            return None
        return answer


    def _session_run(self, p, run, files):
        """A cell in the session's U. Returns True when U ended (the session must be reset)."""
        state = RunState(run["id"], run["limits"])
        state.code_ran_before = p.cells > 0  # U has run user code: none of its records is trusted
        if run["stdin"] == "interactive":
            state.stdin_w = p.in_w
        limits = dict(run["limits"], cpu_s=0)  # no RLIMIT_CPU in a session
        self._log_discarded(p)
        counters0 = read_memory_counters()
        t0 = time.monotonic()
        req = {"t": "run", "code": run["code"], "argv": run["argv"], "stdin": run["stdin"],
               "files": [{"path": path, "content_b64": f["content_b64"]}
                         for (path, _), f in zip(files, run["files"])]}
        answer = self._session_exchange(p, req, t0 + limits["timeout_s"], state, run=True)
        limits["memory_bytes"] = narrowed_memory(p.limits, self.cfg["limits"]) or 0
        duration_ms = int((time.monotonic() - t0) * 1000)
        counters1 = read_memory_counters()
        oom = counter_delta(counters0, counters1, "oom_kill")
        alive = answer is not None and state.kill_reason is None
        if alive and "input_error" in answer:
            state.result = {}
            detail = "input files could not be written: %s" % str(answer["input_error"])[:2000]
            self.chan.send(self._done_event(state, VERDICT.error, None, None, detail,
                                            duration_ms))
            return False
        p.cells += 1
        if alive:
            status = answer.get("status")
            if not is_int(status) or not 0 <= status <= 255:
                status = 1
            cpu_ms, rss = answer.get("cpu_ms"), answer.get("max_rss_kb")
            state.cpu_ms = cpu_ms if is_int(cpu_ms) and cpu_ms >= 0 else None
            state.max_rss_kb = rss if is_int(rss) and rss >= 0 else None
            verdict, exit_code, sig, detail = decide_verdict(
                ustatus=status << 8, oom_kills=oom, limits=limits,
                memory_error=answer.get("memory_error") is True,
                claimed_failure=state.claimed_failure)
        else:
            verdict, exit_code, sig, detail = decide_verdict(
                kill_reason=state.kill_reason, internal=state.internal, ustatus=state.ustatus,
                gstatus=state.gstatus, oom_kills=oom, corrupt=state.corrupt,
                claimed_failure=state.claimed_failure,
                limit_hits=counter_delta(counters0, counters1, "limit_hits"), cpu_ms=state.cpu_ms,
                limits=limits, memory_error=state.result.get("memory_error") is True)
            detail += RESET_SUFFIX
        self.chan.send(self._done_event(state, verdict, exit_code, sig, detail, duration_ms,
                                        session_reset=not alive))
        return not alive

    def handle_file_op(self, msg):
        rid = parse_op_id(msg)
        if not self.session:
            self.chan.send({"ev": "reply", "id": rid, "ok": False,
                            "error": "file operations need session mode"})
            return
        try:
            req = parse_file_op(msg, self.cfg)
        except InputError as e:
            self.chan.send({"ev": "reply", "id": rid, "ok": False, "error": str(e)})
            return
        if self.prepared is None:
            self.prepare()
        p = self.prepared
        self._log_discarded(p)
        state = RunState(rid, {})
        req["id"] = rid
        ureq = {k: v for k, v in req.items() if k != "sizes"}
        ureq["t"] = "op"
        p.res_decoder.max_payload = max(reply_bound(req), self._max_result_record())
        t0 = time.monotonic()
        try:
            answer = self._session_exchange(p, ureq, t0 + self.cfg["op_timeout_s"], state,
                                            run=False)
        finally:
            p.res_decoder.max_payload = self._max_result_record()
        if answer is not None and state.kill_reason is None:
            try:
                ok, out = check_reply(req, answer)
            except ValueError as e:
                ok, out = False, "the session sent an invalid answer (%s)" % e
            reply = {"ev": "reply", "id": rid, "ok": ok}
            reply["result" if ok else "error"] = out
            self.chan.send(reply)
            return
        if state.kill_reason == "timeout":
            reason = "the file operation did not finish within %g s" % self.cfg["op_timeout_s"]
        elif state.kill_reason == "oversize":
            reason = "the session's answer exceeded %d bytes" % reply_bound(req)
        elif state.kill_reason == "corrupt":
            reason = "the code wrote data that is not a result record to the harness's result channel"
        else:
            reason = death_reason(state.ustatus, state.gstatus,
                                  counter_delta(p.counters or {}, read_memory_counters(), "oom_kill"))
        self.chan.send({"ev": "reply", "id": rid, "ok": False, "error": reason + RESET_SUFFIX})
        self._session_reset(p, reason)
