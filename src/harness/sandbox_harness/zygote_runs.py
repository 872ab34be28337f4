"""The zygote's runs in the pool modes (recycle, fresh): one prepared child per run, sent its
request at once, relayed to its end, reported with a verdict, and discarded."""

import os
import time

from .cgroup import counter_delta, read_memory_counters
from .errors import InputError
from .messages import parse_run, validate_input_files
from .osutil import write_all
from .protocol import VERDICT
from .verdicts import CORRUPT_RESULTS, decide_verdict
from .wire import encode_json
from .zygote_records import RunState


class Runs:
    """The zygote's part that serves `run` (a mixin of Zygote): a pool run here, a session's
    cell in zygote_session."""

    def handle_run(self, msg):
        run = parse_run(msg, self.cfg)
        try:
            files = validate_input_files(run["files"], self.cfg["files_in"]["max_count"],
                                         self.cfg["files_in"]["max_total_bytes"])
        except InputError as e:
            self.chan.send(self._done_event(RunState(run["id"], run["limits"]), VERDICT.error,
                                            None, None, "invalid input files: %s" % e, 0))
            return
        if self.prepared is None:
            self.prepare()
        if self.session:
            p = self.prepared
            reset = True
            try:
                reset = self._session_run(p, run, files)
            finally:
                self.run_count += 1
                if reset:
                    self._log_discarded(p)
                    self._discard(p)
                    self.prepared = None  # serve() prepares the next U and sends ready
            return
        p, self.prepared = self.prepared, None
        try:
            self._execute(p, run, files)
        finally:
            self._discard(p)
            self.run_count += 1

    def _execute(self, p, run, files):
        state = RunState(run["id"], run["limits"])
        if run["stdin"] == "interactive":
            state.stdin_w = p.in_w
        limits = run["limits"]
        counters0 = read_memory_counters()
        t0 = time.monotonic()
        payload = encode_json({"code": run["code"], "argv": run["argv"], "limits": limits,
                               "stdin": run["stdin"],
                               "files": [{"path": path, "content_b64": f["content_b64"]}
                                         for (path, _), f in zip(files, run["files"])]})
        # U reads the whole request before anything else: a blocking write, then EOF.
        try:
            write_all(p.req_w, payload)
        except BrokenPipeError:
            state.internal = "the run process vanished before its request"
        os.close(p.req_w)  # U reads to its EOF
        p.req_w = None
        p.watch(self._max_result_record())
        self._exchange(p, state, t0 + limits["timeout_s"], True, self._pool_records)
        end = time.monotonic()
        counters1 = read_memory_counters()
        verdict, exit_code, sig, detail = decide_verdict(
            kill_reason=state.kill_reason, internal=state.internal, ustatus=state.ustatus,
            gstatus=state.gstatus, oom_kills=counter_delta(counters0, counters1, "oom_kill"),
            corrupt=state.corrupt, claimed_failure=state.claimed_failure,
            limit_hits=counter_delta(counters0, counters1, "limit_hits"), cpu_ms=state.cpu_ms,
            limits=limits, memory_error=state.result.get("memory_error") is True)
        self.chan.send(self._done_event(state, verdict, exit_code, sig, detail,
                                        int((end - t0) * 1000)))

    def _pool_records(self, state, p, data):
        """Bytes of U's result pipe in a pool run: every record is handled as it comes (the run
        has no answer: it ends when U's tree has)."""
        if state.corrupt:
            return None  # drained (so the run never blocks on it), not parsed
        p.res_decoder.feed(data)
        frames, error = p.res_decoder.frames_before_error()
        for _, payload in frames:
            self._on_result(state, payload)
        if error is not None:
            state.corrupt = CORRUPT_RESULTS
        return None
