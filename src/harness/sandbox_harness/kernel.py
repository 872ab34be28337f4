"""Kernel calls the standard library lacks (prctl, unshare, setns, mount, capset, clone through
ctypes; the seccomp filter) and the run's resource limits."""

import ctypes
import os
import resource
import signal

# -- ctypes: prctl, unshare, mount, capset, clone, seccomp ---------------------------------------

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_SECCOMP = 22
PR_CAPBSET_READ = 23
PR_CAPBSET_DROP = 24
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
SECCOMP_MODE_FILTER = 2
CLONE_VM = 0x00000100
CLONE_FILES = 0x00000400
CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REC = 16384
MS_PRIVATE = 1 << 18
LINUX_CAPABILITY_VERSION_3 = 0x20080522
CAP_SYS_ADMIN = 21
CAP_SETFCAP = 31


SLEEPER_STACK = 64 << 10  # plenty for glibc's pause()
_SLEEPER_STACKS = []


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


class Kernel:
    """The few system calls the standard library lacks, through libc."""

    def __init__(self):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong,
                               ctypes.c_ulong]
        libc.prctl.restype = ctypes.c_int
        libc.unshare.argtypes = [ctypes.c_int]
        libc.setns.argtypes = [ctypes.c_int, ctypes.c_int]
        libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong,
                               ctypes.c_char_p]
        libc.capset.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        libc.clone.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
        libc.clone.restype = ctypes.c_int
        libc.fork.argtypes = []
        libc.fork.restype = ctypes.c_int
        self.libc = libc
        self._pause = ctypes.cast(libc.pause, ctypes.c_void_p)
        # One sleeper stack, made here in the zygote before any fork: the first sleeper of each
        # forked process (I's init G, U's exit sleeper) runs on that process's copy of it, so it
        # copies the page or two pause() touches instead of zeroing 64 KiB of new heap (some 50
        # copy-on-write faults per process).
        self._stack = ctypes.create_string_buffer(SLEEPER_STACK)
        self._stack_pid = None  # the process whose sleeper runs on self._stack
        self._seccomp = None  # (bpf, its buffer, the sock_fprog, its address): seccomp_program
        # Read once here, not in every run's intermediate (drop_capabilities).
        try:
            with open("/proc/sys/kernel/cap_last_cap") as f:
                self.cap_last = int(f.read())
        except (OSError, ValueError):
            self.cap_last = 63

    @staticmethod
    def _check(rc, what):
        if rc != 0:
            err = ctypes.get_errno()
            raise OSError(err, "%s: %s" % (what, os.strerror(err)))
        return rc

    def prctl(self, option, a2=0, a3=0, a4=0, a5=0, what="prctl"):
        return self._check(self.libc.prctl(option, a2, a3, a4, a5), what)

    def unshare(self, flags):
        self._check(self.libc.unshare(flags), "unshare")

    def setns(self, fd, nstype):
        self._check(self.libc.setns(fd, nstype), "setns")

    def mount(self, source, target, fstype, flags, data):
        enc = lambda s: s.encode() if s is not None else None  # noqa: E731
        self._check(self.libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)),
                    "mount %s" % target)

    def drop_capabilities(self, keep=()):
        """Empties the bounding, ambient, effective, permitted and inheritable sets, except the
        capabilities in `keep` (effective and permitted; the forker keeps CAP_SYS_ADMIN)."""
        prctl = self.libc.prctl
        for cap in range(self.cap_last + 1):
            if cap in keep:
                continue
            if prctl(PR_CAPBSET_READ, cap, 0, 0, 0) == 1 and prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
                self._check(-1, "PR_CAPBSET_DROP %d" % cap)
        self.libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)  # EINVAL on old kernels
        hdr = _CapHeader(LINUX_CAPABILITY_VERSION_3, 0)
        data = (_CapData * 2)()
        for cap in keep:
            data[cap // 32].effective |= 1 << (cap % 32)
            data[cap // 32].permitted |= 1 << (cap % 32)
        self._check(self.libc.capset(ctypes.byref(hdr), ctypes.byref(data)), "capset")

    def fork_bare(self):
        """fork() through libc alone, without CPython's work around it: os.fork runs, in the
        child, the at-fork hooks of threading, random, logging and matplotlib's font cache,
        some 340 copy-on-write page faults in a preloaded interpreter. Only for a child that
        runs harness code on one thread and never the user's (the run's intermediate I, the
        forker F under F0): the interpreter state it inherits is consistent because the parent
        has a single thread, which holds no lock across the call (ctypes releases the GIL
        around it). Returns 0 in the child, the child's pid in the parent."""
        pid = self.libc.fork()
        if pid < 0:
            err = ctypes.get_errno()
            raise OSError(err, "fork: %s" % os.strerror(err))
        return pid

    @staticmethod
    def sleeper_stack():
        """A stack for spawn_sleeper(stack=...): the caller keeps it until the sleeper is reaped."""
        return ctypes.create_string_buffer(SLEEPER_STACK)

    def spawn_sleeper(self, stack=None):
        """A child that shares this process's memory and descriptor table and does nothing but
        sleep in pause() (C code: it never runs Python, so sharing the interpreter's memory is
        safe). It is the run's init: copying the page tables of the preloaded address space
        for a Python init, and tearing them down again, cost a few ms of CPU per run. The
        caller sets its signal dispositions first (none may run a handler; SIGCHLD ignored,
        so the kernel reaps the orphans it inherits). stack: one of sleeper_stack(), which the
        caller keeps until the sleeper is reaped (the forker, whose sleepers come and go);
        else the process's first sleeper runs on the stack made in the zygote. Returns its pid."""
        if stack is None and self._stack_pid != os.getpid():
            self._stack_pid = os.getpid()
            stack = self._stack
        elif stack is None:  # a second sleeper of this process (tests): a stack of its own
            stack = self.sleeper_stack()
            _SLEEPER_STACKS.append(stack)  # pause() sits on it until the child dies: never freed
        top = (ctypes.addressof(stack) + SLEEPER_STACK - 64) & ~15
        pid = self.libc.clone(self._pause, top, CLONE_VM | CLONE_FILES | signal.SIGCHLD, None)
        if pid < 0:
            err = ctypes.get_errno()
            raise OSError(err, "clone: %s" % os.strerror(err))
        return pid

    def seccomp_program(self, bpf):
        """The address of a sock_fprog for `bpf`, built once: the zygote builds it at start-up,
        so a run process only loads it (building it in every run cost ~50 copy-on-write page
        faults, 2-3 ms on a loaded 2-core VM)."""
        if self._seccomp is None or self._seccomp[0] is not bpf:
            buf = ctypes.create_string_buffer(bpf, len(bpf))
            prog = _SockFprog(len(bpf) // 8, ctypes.cast(buf, ctypes.c_void_p))
            self._seccomp = (bpf, buf, prog, ctypes.addressof(prog))
        return self._seccomp[3]

    def install_seccomp(self, bpf):
        prog = self.seccomp_program(bpf)
        self.prctl(PR_SET_NO_NEW_PRIVS, 1, what="PR_SET_NO_NEW_PRIVS")
        self.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, prog, what="PR_SET_SECCOMP")


# -- the run's resource limits -----------------------------------------------------------------


def _set_rlimit(resource_mod, res, soft, hard=None):
    cur_soft, cur_hard = resource_mod.getrlimit(res)
    hard = soft if hard is None else hard
    if cur_hard != resource_mod.RLIM_INFINITY:
        hard = min(hard, cur_hard)
        soft = min(soft, hard)
    resource_mod.setrlimit(res, (soft, hard))


# RLIMIT_DATA's hard limit lies this far above the soft one: after the cell the harness raises
# the soft limit to it, so that a cell that used its whole budget still gets its traceback,
# figures and files reported (the cell itself may raise it too: 32 MiB more, within the
# container's memory limit, which stays the hard ceiling).
DATA_HEADROOM = 32 << 20


def parse_vm_data(status_text):
    """VmData of /proc/<pid>/status, in bytes, or None."""
    for line in status_text.splitlines():
        if line.startswith("VmData:"):
            parts = line.split()
            if len(parts) >= 2 and parts[1].isdigit():
                unit = parts[2].lower() if len(parts) > 2 else "kb"
                return int(parts[1]) * (1024 if unit == "kb" else 1)
    return None


def data_rlimit(base_bytes, budget_bytes):
    """(soft, hard) RLIMIT_DATA for a run: what the process already maps privately (inherited
    from the zygote: preloaded modules, mostly shared copy-on-write) plus the run's budget."""
    soft = base_bytes + budget_bytes
    return soft, soft + DATA_HEADROOM


def narrowed_memory(run_limits, config_limits):
    """The run's memory budget when the request narrowed it below the pool's (config.limits), or
    None: at the pool's own budget the container's cgroup limit is the only enforcement, because
    RLIMIT_DATA also counts untouched reservations (see apply_rlimits)."""
    budget = run_limits.get("memory_bytes", 0)
    pool = config_limits.get("memory_bytes", 0)
    if budget > 0 and (pool <= 0 or budget < pool):
        return budget
    return None


def _vm_data():
    try:
        with open("/proc/self/status") as f:
            return parse_vm_data(f.read())
    except OSError:
        return None


def apply_rlimits(limits, memory_budget=None, cpu=True):
    """Sets the run's rlimits; returns RLIMIT_DATA's (soft, hard) when the memory is narrowed.
    cpu=False (session mode): no RLIMIT_CPU, since a session's CPU time adds up over cells."""
    if cpu:
        _set_rlimit(resource, resource.RLIMIT_CPU, limits["cpu_s"], limits["cpu_s"] + 1)
    _set_rlimit(resource, resource.RLIMIT_NPROC, limits["nproc"])
    _set_rlimit(resource, resource.RLIMIT_NOFILE, limits["nofile"])
    _set_rlimit(resource, resource.RLIMIT_FSIZE, limits["fsize_bytes"])
    _set_rlimit(resource, resource.RLIMIT_CORE, 0)
    # Per-run memory narrowing. RLIMIT_DATA (Linux >= 4.7 counts every private writable mapping,
    # not only the heap) refuses allocations past the budget: Python raises MemoryError, which
    # the zygote reports as verdict `memory`. RLIMIT_AS is not used: it also counts PROT_NONE
    # reservations (malloc arenas) and shared libraries. RLIMIT_DATA still counts writable
    # mappings that are never touched (8 MiB per thread stack, ~64 MiB per OpenBLAS buffer, one
    # per thread calling BLAS at once): hence it is applied only to a narrowed budget.
    if memory_budget is not None:
        base = _vm_data()
        if base is not None:
            soft, hard = data_rlimit(base, memory_budget)
            _set_rlimit(resource, resource.RLIMIT_DATA, soft, hard)
            return resource.getrlimit(resource.RLIMIT_DATA)
    return None


def relax_data_limit():
    """After the cell: the soft RLIMIT_DATA up to the hard one (see DATA_HEADROOM)."""
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
        if soft != hard:
            resource.setrlimit(resource.RLIMIT_DATA, (hard, hard))
    except (OSError, ValueError):
        pass
