"""The forker's own user and PID namespaces, and the run trees it forks straight into a fresh PID
namespace per run (the "direct" tree; docs/harness-protocol.md, "Isolation").

`unshare(CLONE_NEWPID)` moves only the caller's later children, and a second one fails until
the caller's namespace for children is its active one again, which `setns` restores only with
CAP_SYS_ADMIN in the user namespace owning that PID namespace. The container's PID namespace
belongs to the initial user namespace, so the forker lives (once, from start-up) in a user
namespace and a PID namespace of its own:

    forker parent (F0)   forked by Z: unshare(user|pid), uid/gid map 1:1; waits for F
     └─ forker (F)        PID 1 of its PID namespace, CAP_SYS_ADMIN (and CAP_SETFCAP) in its
        │                 user namespace only;
        │                 per run: unshare(pid), G, U, setns back; reaps G and U, reports them
        ├─ init (G)        PID 1 of the run's namespace: a sleeper sharing F's memory
        └─ run (U)         PID 2: its own user, mount and IPC namespaces (isolation.py)

So each run costs one fork of the preloaded address space (U), not two (I and U)."""

import os
import select
import signal
import time

from .isolation import _spawn_init, direct_run_process
from .kernel import (CAP_SETFCAP, CAP_SYS_ADMIN, CLONE_NEWPID, CLONE_NEWUSER, PR_SET_DUMPABLE,
                     PR_SET_NO_NEW_PRIVS)
from .osutil import log, write_file
from .run_process import EX_INTERNAL
from .wire import send_record


def enter_forker_namespaces(k):
    """F0: a user namespace (uid and gid mapped 1:1) and a PID namespace for its children (F
    becomes its PID 1). Raises OSError where namespaces are unavailable (gVisor refuses the
    maps, Docker's default seccomp profile refuses unshare)."""
    uid, gid = os.getuid(), os.getgid()
    k.unshare(CLONE_NEWUSER | CLONE_NEWPID)
    # The zygote is non-dumpable, so this process's /proc/self files belong to root.
    k.prctl(PR_SET_DUMPABLE, 1, what="PR_SET_DUMPABLE")
    try:
        write_file("/proc/self/setgroups", "deny")
        write_file("/proc/self/uid_map", "%d %d 1" % (uid, uid))
        write_file("/proc/self/gid_map", "%d %d 1" % (gid, gid))
    finally:
        k.prctl(PR_SET_DUMPABLE, 0, what="PR_SET_DUMPABLE")


class _Tree:
    """One run's G and U as F sees them, until both are reaped."""

    def __init__(self, gpid, st_w, stack):
        self.gpid = gpid
        self.upid = None
        self.st_w = st_w  # the run's status pipe: F writes U's and G's statuses (G's pid goes
        # with F's answer to Z)
        self.stack = stack  # G's stack, in F's memory: reused once G is reaped


class DirectTrees:
    """F's run trees: creates them (spawn), kills them on Z's word (kill) and reaps them,
    reporting U's status with its rusage and G's status on each tree's status pipe."""

    def __init__(self, kernel, init_signals):
        self.kernel = kernel
        self.init_signals = init_signals
        if os.getpid() != 1:
            raise OSError(0, "the forker is not PID 1 of its namespace (pid %d)" % os.getpid())
        self.pidns_fd = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
        # The per-run dance, once, so that a refusal (the container's seccomp profile without
        # setns) shows at start-up, where Z can still fall back to the intermediate tree.
        kernel.unshare(CLONE_NEWPID)
        kernel.setns(self.pidns_fd, CLONE_NEWPID)
        # F keeps CAP_SYS_ADMIN (in its user namespace) for unshare and setns, and CAP_SETFCAP,
        # which a U running as root needs to map uid 0 in its new user namespace (the kernel
        # asks whether the creator of a namespace could set file capabilities); U gets every
        # other capability it needs from its new user namespace.
        kernel.drop_capabilities(keep=(CAP_SYS_ADMIN, CAP_SETFCAP))
        kernel.prctl(PR_SET_NO_NEW_PRIVS, 1, what="PR_SET_NO_NEW_PRIVS")
        # U's and G's deaths wake F's select (a SIGCHLD handler and the wake-up pipe).
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_w, False)
        os.set_blocking(self.wake_r, False)
        signal.signal(signal.SIGCHLD, _on_sigchld)
        signal.set_wakeup_fd(self.wake_w)
        self.by_pid = {}  # G's and U's pids -> their tree
        self.trees = {}  # G's pid -> tree
        self.stacks = []  # G stacks no longer in use

    def own_fds(self):
        """F's descriptors a new U must close first (with the socket to Z)."""
        return [self.pidns_fd, self.wake_r, self.wake_w] + [t.st_w for t in self.trees.values()]

    def spawn(self, spec):
        """G (PID 1) and U (PID 2, running spec) in a fresh PID namespace; spec.st_w becomes the
        tree's. Returns G's pid (in F's namespace: Z names the tree with it)."""
        k = self.kernel
        stack = self.stacks.pop() if self.stacks else k.sleeper_stack()
        k.unshare(CLONE_NEWPID)
        try:
            try:
                gpid = _spawn_init(k, self.init_signals, stack)
            except BaseException:  # noqa: B902
                self.stacks.append(stack)
                raise
            tree = _Tree(gpid, spec.st_w, stack)
            spec.st_w = None  # the tree's now: closed when G is reaped
            self.trees[gpid] = tree
            self.by_pid[gpid] = tree
            try:
                upid = os.fork()
            except BaseException:  # noqa: B902
                os.kill(gpid, signal.SIGKILL)
                raise
            if upid == 0:
                try:
                    direct_run_process(spec)
                finally:
                    os._exit(EX_INTERNAL)
            tree.upid = upid
            self.by_pid[upid] = tree
        finally:
            k.setns(self.pidns_fd, CLONE_NEWPID)
            # While G was created, F's SIGCHLD was ignored (G inherits that, so that the kernel
            # reaps the run's orphans): a child of F that ended just then was reaped unseen.
            self._reconcile()
        return gpid

    def kill(self, gpid):
        """Z's word: end the tree whose init is gpid. G is F's unreaped child, so the pid is
        still G's; its death ends the run's namespace (U and everything it started)."""
        if gpid in self.trees:
            try:
                os.kill(gpid, signal.SIGKILL)
            except OSError:
                pass

    def kill_all(self):
        for gpid in list(self.trees):
            self.kill(gpid)

    def reap(self):
        """Reaps whatever of F's children ended (without blocking) and reports it."""
        while True:
            try:
                pid, status, usage = os.wait4(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            self._ended(pid, status, usage)

    def wait_gone(self, seconds):
        """Waits (bounded) until every tree is reaped: a dying run's processes count against
        the next run's pids and memory."""
        deadline = time.monotonic() + seconds
        self.reap()
        while self.trees:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            select.select([self.wake_r], [], [], left)
            self.drain_wake()
            self.reap()

    def drain_wake(self):
        try:
            while os.read(self.wake_r, 512):
                pass
        except (BlockingIOError, InterruptedError):
            pass

    def _ended(self, pid, status, usage):
        tree = self.by_pid.pop(pid, None)
        if tree is None:
            return
        if pid == tree.upid:
            rec = {"t": "ustatus", "status": status}
            if usage is not None:
                rec["cpu_ms"] = int((usage.ru_utime + usage.ru_stime) * 1000)
                rec["max_rss_kb"] = int(usage.ru_maxrss)
            self._send(tree, rec)
        else:  # G: the namespace is gone (the kernel waits for all of it before G is reaped)
            self._send(tree, {"t": "gstatus", "status": status})
            del self.trees[tree.gpid]
            self.stacks.append(tree.stack)
            if tree.upid is not None and tree.upid in self.by_pid:  # not expected: U first
                del self.by_pid[tree.upid]
            try:
                os.close(tree.st_w)
            except OSError:
                pass

    @staticmethod
    def _send(tree, rec):
        try:
            send_record(tree.st_w, rec)
        except OSError:  # Z closed its end: the run was discarded
            pass

    def _reconcile(self):
        """Children reaped by the kernel while SIGCHLD was ignored: reported without a status."""
        self.reap()
        for pid in list(self.by_pid):
            try:
                done = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                log("child %d ended while SIGCHLD was ignored" % pid)
                self._ended(pid, None, None)
                continue
            if done[0] == pid:
                self._ended(pid, done[1], None)


def _on_sigchld(signum, frame):
    """Nothing: the wake-up fd is what wakes F's select."""
