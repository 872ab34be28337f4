# Probe: the harness's per-run isolation steps (docs: per-run-isolation.md) under the container
# seccomp profile, with ctypes only. Optional argv[1]: base64 of the per-run BPF program
# (RunFilter::Compile); when given, the run filter is installed and checked too (x86-64 numbers).
# Prints "isolation ok" on success.
import base64
import ctypes
import errno
import os
import runpy
import subprocess
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy  # noqa: F401  (the zygote has the scientific stack imported, as the harness does)

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID = 0x20000, 0x08000000, 0x10000000, 0x20000000
CLONE_NEWNET = 0x40000000
PR_SET_DUMPABLE, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP = 4, 24, 38, 22
SECCOMP_MODE_FILTER = 2
MS_NOSUID, MS_NODEV = 2, 4


def check(rc, what):
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def isolate(bpf):
    uid, gid = os.getuid(), os.getgid()
    check(libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0), "PR_SET_DUMPABLE")
    check(libc.unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC), "unshare")
    with open("/proc/self/setgroups", "w") as f:
        f.write("deny")
    with open("/proc/self/uid_map", "w") as f:
        f.write(f"{uid} {uid} 1")
    with open("/proc/self/gid_map", "w") as f:
        f.write(f"{gid} {gid} 1")
    check(libc.mount(b"none", b"/tmp", b"tmpfs", MS_NOSUID | MS_NODEV, b"size=16m,mode=0700"),
          "mount tmpfs /tmp")
    for cap in range(64):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 and ctypes.get_errno() != errno.EINVAL:
            check(-1, f"PR_CAPBSET_DROP {cap}")
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this thread
    data = (ctypes.c_uint32 * 6)()
    check(libc.capset(header, data), "capset")
    check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "PR_SET_NO_NEW_PRIVS")
    if bpf:
        buf = ctypes.create_string_buffer(bpf, len(bpf))
        prog = SockFprog(len(bpf) // 8, ctypes.cast(buf, ctypes.c_void_p))
        check(libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0),
              "PR_SET_SECCOMP")


def expect_errno(what, rc, want):
    err = ctypes.get_errno()
    if rc != -1 or err != want:
        raise AssertionError(f"{what}: rc={rc} errno={errno.errorcode.get(err, err)}, "
                             f"want {errno.errorcode[want]}")


def run(bpf):
    # What the run's code may and may not do.
    assert os.getpid() == 1, os.getpid()
    assert not os.listdir("/tmp"), os.listdir("/tmp")
    with open("/tmp/run-file", "w") as f:
        f.write("x")
    fig, ax = plt.subplots()
    ax.plot([1, 2, 3])
    fig.savefig("/tmp/plot.png")
    assert subprocess.run(["ls", "/tmp"], capture_output=True, check=True).stdout.split() == \
        [b"plot.png", b"run-file"]
    status = open("/proc/self/status").read()
    for field in ("CapEff", "CapPrm", "CapBnd"):
        assert f"{field}:\t0000000000000000" in status, status
    if bpf:
        expect_errno("unshare(NEWUSER)", libc.unshare(CLONE_NEWUSER), errno.EPERM)
        expect_errno("unshare(NEWNET)", libc.unshare(CLONE_NEWNET), errno.EPERM)
        expect_errno("mount", libc.mount(b"none", b"/tmp", b"tmpfs", 0, None), errno.EPERM)
        expect_errno("umount2", libc.umount2(b"/tmp", 2), errno.EPERM)
        expect_errno("clone3", libc.syscall(435, 0, 0), errno.ENOSYS)
        expect_errno("clone(NEWUSER)", libc.syscall(56, CLONE_NEWUSER | 17, 0, 0, 0, 0),
                     errno.EPERM)
        expect_errno("personality", libc.syscall(135, 0xFFFFFFFF), errno.EPERM)
    # The whole workload probe (numpy, pandas, scipy, threads, multiprocessing, sockets) under the
    # run's namespaces and filter.
    runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "workload.py"))
    # A child left behind must die with the run (PID namespace).
    subprocess.Popen(["sleep", "50"])
    os._exit(0)


def one_run(bpf):
    pid = os.fork()
    if pid == 0:
        try:
            isolate(bpf)
            grandchild = os.fork()
            if grandchild == 0:
                try:
                    run(bpf)
                except BaseException as e:  # noqa: BLE001
                    print("run failed:", repr(e), file=sys.stderr)
                    os._exit(2)
            _, status = os.waitpid(grandchild, 0)
            os._exit(os.waitstatus_to_exitcode(status))
        except BaseException as e:  # noqa: BLE001
            print("isolation failed:", repr(e), file=sys.stderr)
            os._exit(3)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


bpf = base64.b64decode(sys.argv[1]) if len(sys.argv) > 1 else b""
assert len(bpf) % 8 == 0
fig, ax = plt.subplots()  # warm the font manager, as the zygote does
ax.plot([0, 1])
fig.savefig("/tmp/warm.png")
libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
for i in range(2):  # the second run must not see the first one's files
    rc = one_run(bpf)
    assert rc == 0, f"run {i} exited {rc}"
for entry in os.listdir("/proc"):  # the runs' `sleep 50` died with their PID namespaces
    if entry.isdigit():
        try:
            comm = open(f"/proc/{entry}/comm").read().strip()
        except OSError:
            continue
        assert comm != "sleep", f"pid {entry} survived its run"
print("isolation ok" + (" (with run filter)" if bpf else ""))
