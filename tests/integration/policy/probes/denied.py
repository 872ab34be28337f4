# Probe: syscalls the container seccomp profile must refuse (x86-64 numbers). Each line prints the
# errno the call returned; exits 1 if any call got through or failed with an unexpected errno.
import ctypes
import errno
import mmap
import os
import socket
import sys

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long

EPERM, ENOSYS = errno.EPERM, errno.ENOSYS
CLONE_NEWUSER, CLONE_NEWNET, CLONE_NEWNS, CLONE_NEWUTS = 0x10000000, 0x40000000, 0x20000, 0x04000000
SIGCHLD = 17
calls = {
    "ptrace(PTRACE_TRACEME)": (101, [0, 0, 0, 0], EPERM),
    "process_vm_readv": (310, [1, 0, 0, 0, 0, 0], EPERM),
    "kcmp": (312, [1, 1, 0, 0, 0], EPERM),
    "pidfd_getfd": (438, [0, 0, 0], EPERM),
    "keyctl": (250, [0, 0, 0, 0, 0], EPERM),
    "add_key": (248, [0, 0, 0, 0, 0], EPERM),
    "request_key": (249, [0, 0, 0, 0], EPERM),
    "bpf": (321, [0, 0, 0], EPERM),
    "userfaultfd": (323, [0], EPERM),
    "perf_event_open": (298, [0, 0, 0, 0, 0], EPERM),
    "io_uring_setup": (425, [1, 0], EPERM),
    "io_uring_enter": (426, [0, 0, 0, 0, 0, 0], EPERM),
    "io_uring_register": (427, [0, 0, 0, 0], EPERM),
    "io_setup": (206, [1, 0], EPERM),
    "kexec_load": (246, [0, 0, 0, 0], EPERM),
    "init_module": (175, [0, 0, 0], EPERM),
    "finit_module": (313, [0, 0, 0], EPERM),
    "delete_module": (176, [0, 0], EPERM),
    "open_by_handle_at": (304, [0, 0, 0], EPERM),
    "name_to_handle_at": (303, [0, 0, 0, 0, 0], EPERM),
    "pivot_root": (155, [0, 0], EPERM),
    "chroot": (161, [0], EPERM),
    "setns": (308, [0, 0], EPERM),
    "sethostname": (170, [0, 0], EPERM),
    "acct": (163, [0], EPERM),
    "swapon": (167, [0, 0], EPERM),
    "reboot": (169, [0, 0, 0, 0], EPERM),
    "settimeofday": (164, [0, 0], EPERM),
    "clock_settime": (227, [0, 0], EPERM),
    "adjtimex": (159, [0], EPERM),
    "mount_setattr": (442, [0, 0, 0, 0, 0], EPERM),
    "open_tree": (428, [0, 0, 0], EPERM),
    "move_mount": (429, [0, 0, 0, 0, 0], EPERM),
    "fsopen": (430, [0, 0], EPERM),
    "fsmount": (432, [0, 0, 0], EPERM),
    "fspick": (433, [0, 0, 0], EPERM),
    "lookup_dcookie": (212, [0, 0, 0], EPERM),
    "quotactl": (179, [0, 0, 0, 0], EPERM),
    "vhangup": (153, [], EPERM),
    "syslog": (103, [3, 0, 0], EPERM),
    "iopl": (172, [3], EPERM),
    "ioperm": (173, [0, 1, 1], EPERM),
    "modify_ldt": (154, [0, 0, 0], EPERM),
    "get_mempolicy": (239, [0, 0, 0, 0, 0], EPERM),
    "landlock_create_ruleset": (444, [0, 0, 1], EPERM),
    "personality(ADDR_NO_RANDOMIZE)": (135, [0x0040000], EPERM),
    "clone3": (435, [0, 0], ENOSYS),
    "clone(CLONE_NEWUSER|SIGCHLD)": (56, [CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0], EPERM),
    "clone(CLONE_NEWNS|SIGCHLD)": (56, [CLONE_NEWNS | SIGCHLD, 0, 0, 0, 0], EPERM),
    "unshare(CLONE_NEWNET)": (272, [CLONE_NEWNET], EPERM),
    "unshare(CLONE_NEWUTS)": (272, [CLONE_NEWUTS], EPERM),
    "unshare(CLONE_NEWUSER|upper bit)": (272, [CLONE_NEWUSER | (1 << 40)], EPERM),
    "socket(AF_NETLINK)": (41, [16, 3, 0], EPERM),
    "socket(AF_PACKET)": (41, [17, 3, 0], EPERM),
    "socket(AF_ALG)": (41, [38, 5, 0], EPERM),
    "socket(AF_VSOCK)": (41, [40, 1, 0], EPERM),
    "socket(AF_INET|upper bit)": (41, [2 | (1 << 32), 1, 0], EPERM),
    "socketpair(AF_INET)": (53, [2, 1, 0, 0], EPERM),
}
failed = False
for name, (nr, args, want) in calls.items():
    ctypes.set_errno(0)
    rc = libc.syscall(ctypes.c_long(nr), *[ctypes.c_ulong(a) for a in args])
    err = ctypes.get_errno()
    ok = rc == -1 and err == want
    failed |= not ok
    print(f"{'ok  ' if ok else 'FAIL'} {name}: rc={rc} errno={errno.errorcode.get(err, err)}")


def run_machine_code(code):
    """Runs code in a forked child; returns ('exit', status) or ('signal', number)."""
    pid = os.fork()
    if pid == 0:
        buf = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
        buf.write(code)
        addr = ctypes.addressof(ctypes.c_char.from_buffer(buf))
        rc = ctypes.CFUNCTYPE(ctypes.c_long)(addr)()
        os._exit(0 if rc == -EPERM else 3 if rc < 0 else 4)
    _, status = os.waitpid(pid, 0)
    return ("signal", os.WTERMSIG(status)) if os.WIFSIGNALED(status) else ("exit", os.WEXITSTATUS(status))


# 32-bit ABI from a 64-bit process: mov eax, 20 (getpid on i386); int 0x80; ret. The profile lists
# no i386 arch, so this must not run (killed by SIGSYS, or refused).
how = run_machine_code(bytes([0xB8, 20, 0, 0, 0, 0xCD, 0x80, 0xC3]))
ok = how != ("exit", 4)
failed |= not ok
print(f"{'ok  ' if ok else 'FAIL'} i386 int 0x80 getpid: {how}")
# x32 ABI: mov eax, 0x40000000|39 (getpid); syscall; ret
how = run_machine_code(bytes([0xB8, 39, 0, 0, 0x40, 0x0F, 0x05, 0xC3]))
ok = how != ("exit", 4)
failed |= not ok
print(f"{'ok  ' if ok else 'FAIL'} x32 getpid: {how}")

# Allowed: a plain socket and a plain fork still work.
socket.socket(socket.AF_UNIX).close()
print("denied: all refused" if not failed else "denied: SOME CALLS GOT THROUGH")
sys.exit(1 if failed else 0)
