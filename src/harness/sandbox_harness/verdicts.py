"""Verdicts: what the `done` event says of a run, from how its processes ended and what the
zygote saw (kills, cgroup counters, the run's own claims)."""

import os
import signal

from .protocol import VERDICT

# The cell can write to the result pipe of its own process (see "Trust" in the protocol doc):
# garbage there is the code's doing, not a failure of the harness or the server.
CORRUPT_RESULTS = ("the code wrote data that is not a result record to the harness's result "
                   "channel; the run's results may be incomplete")
# An `internal` record from U after the code started: the code may have written it (or broken
# the harness code in its own process); the message goes to the harness log only.
RUN_SIDE_FAILURE = ("the harness code in the run process reported a failure after the code "
                    "started; the run's results may be incomplete")
RESET_SUFFIX = "; the session was restarted empty (variables and files are lost)"


def _signame(sig):
    try:
        return signal.Signals(sig).name
    except ValueError:
        return "signal %d" % sig


def decide_verdict(kill_reason=None, internal=None, ustatus=None, gstatus=None, oom_kills=0,
                   limit_hits=0, cpu_ms=None, limits=None, memory_error=False, corrupt=None,
                   claimed_failure=None):
    """The done event's verdict. Returns (verdict, exit_code, signal, detail).

    kill_reason: what the zygote killed the run for ("cancel", "output_limit", "timeout",
    "result_limit", "corrupt") or None; internal: a harness failure reported for the run; ustatus: the run
    process's raw wait status (from the PID-1 init), gstatus: the init's own raw wait status;
    oom_kills / limit_hits: growth of the cgroup's counters during the run; memory_error: the
    run process reported that the cell ended with an uncaught MemoryError (an allocation refused
    by RLIMIT_DATA, the per-run memory limit, or larger than the address space allows);
    corrupt: why the run's result channel could not be parsed (the code wrote to it);
    claimed_failure: the run process reported a failure after the user's code started (a claim
    of the run about itself: at most its own `error`, never `internal`)."""
    limits = limits or {}
    if kill_reason == "cancel":
        return VERDICT.cancelled, None, signal.SIGKILL, "cancelled by request"
    if kill_reason == "output_limit":
        return (VERDICT.output_limit, None, signal.SIGKILL,
                "output exceeded the limit of %d bytes" % limits.get("output_bytes", 0))
    if kill_reason == "timeout":
        return (VERDICT.timeout, None, signal.SIGKILL,
                "wall-clock limit of %g s reached" % limits.get("timeout_s", 0))
    if kill_reason == "result_limit":  # the code can write to its own result pipe: its doing
        return VERDICT.error, None, signal.SIGKILL, "the run sent more result data than its limits allow"
    if kill_reason == "corrupt":  # session mode: the result channel cannot be resynchronized
        return VERDICT.error, None, signal.SIGKILL, corrupt or CORRUPT_RESULTS
    if kill_reason is not None:
        return VERDICT.internal, None, None, "killed: %s" % kill_reason
    status = ustatus
    if status is None and gstatus is not None and os.WIFSIGNALED(gstatus):
        status = gstatus  # the run's init itself was killed (e.g. by the OOM killer)
    if status is None:
        if oom_kills > 0:
            return VERDICT.memory, None, None, "out of memory: the OOM killer ended the run"
        return VERDICT.internal, None, None, internal or "the run ended without reporting a status"
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if oom_kills > 0 or (sig == signal.SIGKILL and limit_hits > 0):
            return VERDICT.memory, None, sig, "out of memory: the OOM killer ended the run"
        cpu_s = limits.get("cpu_s")
        if sig == signal.SIGXCPU or (sig == signal.SIGKILL and cpu_s and cpu_ms is not None
                                      and cpu_ms >= cpu_s * 1000):
            return VERDICT.timeout, None, sig, "CPU-time limit of %d s reached" % cpu_s
        return VERDICT.signal, None, sig, "killed by signal %d (%s)" % (sig, _signame(sig))
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
    if oom_kills > 0:
        return VERDICT.memory, code, None, "out of memory: the OOM killer killed a process of the run"
    if internal:
        return VERDICT.internal, code, None, internal
    if corrupt:
        return VERDICT.error, code, None, corrupt
    if claimed_failure:
        return VERDICT.error, code, None, claimed_failure
    if code != 0 and memory_error:
        budget = limits.get("memory_bytes")
        return (VERDICT.memory, code, None, "out of memory: an allocation failed (MemoryError)"
                + (" under the run's memory limit of %d bytes" % budget if budget else ""))
    if code != 0:
        return VERDICT.error, code, None, "exit status %s" % code
    return VERDICT.ok, 0, None, ""


def death_reason(ustatus, gstatus, oom_kills):
    """Why the session's process ended outside a run (a session_reset's reason)."""
    if oom_kills > 0:
        return "out of memory: the OOM killer ended the session's process"
    status = ustatus if ustatus is not None else gstatus
    if status is None:
        return "the session's process ended"
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        return "the session's process was killed by signal %d (%s)" % (sig, _signame(sig))
    return "the session's process exited with status %d" % os.WEXITSTATUS(status)
