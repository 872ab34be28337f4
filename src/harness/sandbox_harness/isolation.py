"""The run side's process tree below the forker, two ways (docs/harness-protocol.md,
"Isolation"): the user, mount, PID and IPC namespaces, a private /tmp, no capabilities.

Direct (the forker F lives in a user and PID namespace of its own, forker_ns.py): F creates the
run's init G and forks the run process U straight into a fresh PID namespace; U isolates itself
(direct_run_process) and F reaps both.

    forker (F)           unshare(pid) for each run, then setns back to its own PID namespace
     ├─ init (G)          PID 1 of the run's PID namespace: shares F's memory, sleeps in pause()
     └─ run (U)           PID 2: unshare(user|mount|ipc), maps, tmpfs /tmp, caps dropped; then
                          the request, rlimits, seccomp, user code

Intermediate (the fallback when F cannot have namespaces of its own, e.g. under gVisor; and
isolate=false without namespaces): F forks I for each run.

    intermediate (I)   unshare(user|mount|pid|ipc), maps, private tmpfs /tmp, caps dropped;
     │                 reaps U and G and reports their status
     ├─ init (G)        PID 1 of the run's PID namespace: shares I's memory, sleeps in pause()
     └─ run (U)         PID 2: waits for the request, then rlimits, seccomp, user code
"""

import _signal
import os
import signal

from .kernel import (CLONE_NEWIPC, CLONE_NEWNS, CLONE_NEWPID, CLONE_NEWUSER, MS_NODEV, MS_NOEXEC,
                     MS_NOSUID, MS_PRIVATE, MS_REC, PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS,
                     PR_SET_PDEATHSIG)
from .osutil import close_fds_except, write_file
from .run_process import EX_INTERNAL, run_process
from .wire import send_record


class ChildSpec:
    """What a forked child needs: config, pipe ends, and the isolation mode."""

    def __init__(self, **kw):
        self.__dict__.update(kw)

    def child_fds(self):
        """The pipe ends the run process U keeps (in_r: its stdin channel, when there is one)."""
        return [fd for fd in (self.req_r, self.out_w, self.err_w, self.res_w, self.in_r)
                if fd is not None]


def intermediate(spec):
    """I: isolates (namespaces, mounts, caps), creates the init G and the run process U, reports
    G's pid and the fates of U and G."""
    st_w = spec.st_w
    try:
        k = spec.kernel
        k.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != spec.parent_pid:  # the forker died before the prctl
            os._exit(0)
        devnull = os.open("/dev/null", os.O_RDWR)
        os.dup2(devnull, 0)
        os.dup2(devnull, 1)
        close_fds_except({0, 1, 2, st_w} | set(spec.child_fds()))
        # The zygote is non-dumpable, so its fork's /proc/self files belong to root: become
        # dumpable while writing them (oom_score_adj, uid_map), non-dumpable again below.
        k.prctl(PR_SET_DUMPABLE, 1, what="PR_SET_DUMPABLE")
        write_file("/proc/self/oom_score_adj", "1000")
        if spec.isolate:
            _isolate(spec)
        k.drop_capabilities()
        k.prctl(PR_SET_NO_NEW_PRIVS, 1, what="PR_SET_NO_NEW_PRIVS")
        k.prctl(PR_SET_DUMPABLE, 0, what="PR_SET_DUMPABLE")
        if not spec.isolate:
            gpid = os.fork()
            if gpid == 0:
                _init(spec)
            send_record(st_w, {"t": "pid", "pid": gpid})
            for fd in spec.child_fds():
                os.close(fd)
            _, status = os.waitpid(gpid, 0)
            send_record(st_w, {"t": "gstatus", "status": status})
            os._exit(0)
        # With a PID namespace: the first child is PID 1 (G, the sleeping init), the second
        # PID 2 (U, forked from I: one copy of the zygote's address space per run, not two).
        gpid = _spawn_init(k, getattr(spec, "init_signals", None))
        send_record(st_w, {"t": "pid", "pid": gpid})
        try:
            upid = os.fork()
        except BaseException:  # noqa: B902
            os.kill(gpid, signal.SIGKILL)
            raise
        if upid == 0:
            run_process(spec)
        for fd in spec.child_fds():
            os.close(fd)
        _reap_run(st_w, gpid, upid)
        os._exit(0)
    except BaseException as e:  # noqa: B902 - report anything, then die
        try:
            send_record(st_w, {"t": "setup_error", "message": "%s: %s" % (type(e).__name__, e)})
        except BaseException:  # noqa: B902
            pass
        os._exit(1)


def handled_signals():
    """The signals with a Python handler here (SIGINT's KeyboardInterrupt, any a preloaded module
    set), as numbers, except SIGCHLD (which G ignores). The forker finds them once; each run's
    G gets only these reset (_spawn_init), not every signal through the enum-wrapping signal
    functions."""
    out = []
    for sig in signal.valid_signals():
        if sig == signal.SIGCHLD:
            continue
        try:
            h = signal.getsignal(sig)
        except (OSError, ValueError):
            continue
        if callable(h):
            out.append(int(sig))
    return out


def _spawn_init(k, handled=None, stack=None):
    """G: PID 1 of the run's namespace, a sleeper (Kernel.spawn_sleeper; stack: see there). It
    inherits its creator's (I's or F's) signal dispositions: no handler (the kernel drops every
    signal without one that a process of the namespace sends its init, so nothing in the run
    can stop it or make it run code) and SIGCHLD ignored (orphans of the run are reaped by the
    kernel). The creator's own are restored. handled: the signals with a Python handler
    (handled_signals(), found now if None). The C module _signal is used directly:
    signal.signal's enum conversions cost ~30 page faults."""
    if handled is None:
        handled = handled_signals()
    saved = []
    try:
        saved.append((_signal.SIGCHLD, _signal.signal(_signal.SIGCHLD, _signal.SIG_IGN)))
        for sig in handled:
            saved.append((sig, _signal.signal(sig, _signal.SIG_DFL)))
        return k.spawn_sleeper(stack)
    finally:
        for sig, h in saved:
            _signal.signal(sig, h if h is not None else _signal.SIG_DFL)


def _reap_run(st_w, gpid, upid):
    """I, after forking G and U: reports U's status (with its rusage), ends the namespace when
    U has ended, and reports G's status."""
    left = {gpid, upid}
    while left:
        try:
            pid, status, usage = os.wait4(-1, 0)
        except ChildProcessError:
            break
        if pid == upid:
            rec = {"t": "ustatus", "status": status,
                   "cpu_ms": int((usage.ru_utime + usage.ru_stime) * 1000),
                   "max_rss_kb": int(usage.ru_maxrss)}
            send_record(st_w, rec)
            # The run ends with U, but its namespace is ended by Z (it kills G), after `done`
            # when nothing of the run holds its pipes: killing G here would tear down U's
            # address space (kept by U's sleeper) while Z reports the run, on the same cores.
        elif pid == gpid:
            send_record(st_w, {"t": "gstatus", "status": status})
        left.discard(pid)


def direct_run_process(spec):
    """U of the direct tree: forked by the forker F as PID 2 of the run's fresh PID namespace
    (G is PID 1). It isolates itself (user, mount and IPC namespaces of its own, the mounts, no
    capabilities), then becomes the run process. A failure before the run process is reported
    as an `internal` record on the result pipe (Z's set-up check reads it). Never returns."""
    try:
        k = spec.kernel
        k.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # F is its parent: no getppid() check, F's
        # death ends F's PID namespace and so this process
        for fd in spec.forker_fds:  # F's socket, its namespace and wake-up fds, other runs' pipes
            try:
                os.close(fd)
            except OSError:
                pass
        _signal.set_wakeup_fd(-1)
        _signal.signal(_signal.SIGCHLD, _signal.SIG_DFL)  # F's handler
        k.prctl(PR_SET_DUMPABLE, 1, what="PR_SET_DUMPABLE")  # see intermediate()
        write_file("/proc/self/oom_score_adj", "1000")
        _isolate(spec, CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWIPC)
        k.drop_capabilities()
        k.prctl(PR_SET_NO_NEW_PRIVS, 1, what="PR_SET_NO_NEW_PRIVS")
        k.prctl(PR_SET_DUMPABLE, 0, what="PR_SET_DUMPABLE")
    except BaseException as e:  # noqa: B902 - report anything, then die
        try:
            send_record(spec.res_w, {"t": "internal", "message": "set-up: %s: %s"
                                     % (type(e).__name__, e)})
        except BaseException:  # noqa: B902
            pass
        os._exit(EX_INTERNAL)
    run_process(spec)


def _isolate(spec, flags=CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC):
    """Fresh namespaces (user, mount and IPC, and PID for I's later children unless the forker
    made it); a private tmpfs on /tmp (and the work dir), /dev/shm and /dev/mqueue."""
    k = spec.kernel
    uid, gid = os.getuid(), os.getgid()
    k.unshare(flags)
    write_file("/proc/self/setgroups", "deny")
    write_file("/proc/self/uid_map", "%d %d 1" % (uid, uid))
    write_file("/proc/self/gid_map", "%d %d 1" % (gid, gid))
    k.mount(None, "/", None, MS_REC | MS_PRIVATE, None)
    opts = "size=%d,mode=0700" % spec.cfg["tmpfs_size_bytes"]
    k.mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, opts)
    workdir = spec.cfg["workdir"]
    if not workdir.startswith("/tmp/"):
        k.mount("tmpfs", workdir, "tmpfs", MS_NOSUID | MS_NODEV, opts)
    # The container's /dev/shm (POSIX shared memory, multiprocessing) is one tmpfs for the whole
    # container, and /dev/mqueue shows the message queues of the container's IPC namespace (not
    # of the run's new one): cover both, or whatever one run leaves there the next one sees.
    if os.path.isdir("/dev/shm"):
        k.mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                "size=%d,mode=1777" % spec.cfg["tmpfs_size_bytes"])
    if os.path.isdir("/dev/mqueue"):
        k.mount("mqueue", "/dev/mqueue", "mqueue", MS_NOSUID | MS_NODEV | MS_NOEXEC, None)
    _seed_tmp(spec)


def _seed_tmp(spec):
    """Creates the work dir and restores the matplotlib config dir in a fresh /tmp."""
    os.makedirs(spec.cfg["workdir"], mode=0o700, exist_ok=True)
    if spec.mpl_seed:
        d, files = spec.mpl_seed
        os.makedirs(d, mode=0o700, exist_ok=True)
        for name, data in files.items():
            with open(os.path.join(d, name), "wb") as f:
                f.write(data)


def _init(spec):
    """G without namespaces (isolate=false): leads the run's process group, forks the run
    process U, reaps, reports U's status."""
    try:
        spec.kernel.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if not spec.isolate:
            os.setsid()
        upid = os.fork()
        if upid == 0:
            run_process(spec)
        for fd in spec.child_fds():
            os.close(fd)
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1,
                    signal.SIGUSR2):
            signal.signal(sig, signal.SIG_IGN)
        status, usage = None, None
        while True:
            try:
                pid, st, ru = os.wait4(-1, 0)
            except ChildProcessError:
                break
            if pid == upid:
                status, usage = st, ru
                break
        rec = {"t": "ustatus", "status": status}
        if usage is not None:
            rec["cpu_ms"] = int((usage.ru_utime + usage.ru_stime) * 1000)
            rec["max_rss_kb"] = int(usage.ru_maxrss)
        send_record(spec.st_w, rec)
    finally:
        os._exit(0)
