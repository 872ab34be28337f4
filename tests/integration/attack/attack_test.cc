// The attack suite: hostile Python sent through SandboxService (the interface the MCP and HTTP
// layers use) to the real engine, in both pool modes. Every attack has an exact expected
// verdict (and, where it matters, the exact output, exception or exit status), and after every
// attack the service must still serve a run. The `layer` of each case names what stops it.
//
// Layers, outermost first:
//   docker     the container: network none, read-only root, no Docker socket, masked /proc,
//              read-only /sys and /proc/sys, uid 10001, all capabilities dropped,
//              no-new-privileges, private IPC, an init process
//   cgroup     the container's cgroup: memory (+ swap equal), pids
//   container seccomp   policies/seccomp-container.json, applied by runc to every process
//   namespaces the run's own user, mount, PID and IPC namespaces (recycle mode; in fresh mode
//              the run has a container to itself as well)
//   run seccomp         policies/seccomp-run.json, installed by the harness before the code
//   rlimits    RLIMIT_NPROC, NOFILE, FSIZE, CPU, DATA (narrowed memory), set by the harness
//   tmpfs      the run's private /tmp (and work dir) of bounded size
//   harness    wall-clock deadline, output limit, frames the code cannot reach
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "integration/service/shared_service.h"
#include "sandbox/runner/sandbox_spec.h"
#include "support/engine_fixture.h"
#include "support/secret_scan.h"

namespace sandbox::attack {
namespace {

using sandbox::testing::Describe;
using sandbox::testing::Engine;
using sandbox::testing::RunCode;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// Pool limits of this suite (smaller than the defaults where an attack tests them).
constexpr std::int64_t kFsizeBytes = 8LL << 20;
constexpr std::int64_t kTmpfsBytes = 32LL << 20;

// One attack: code, the exact verdict, optional exact checks, and what stops it.
struct Attack {
  Attack(std::string name_, std::string layer_, std::string code_, exec::Verdict verdict_)
      : name(std::move(name_)),
        layer(std::move(layer_)),
        code(std::move(code_)),
        verdict(verdict_) {}
  Attack& Stdout(std::string s) {
    stdout_exact = std::move(s);
    return *this;
  }
  Attack& StdoutStarts(std::string s) {
    stdout_prefix = std::move(s);
    return *this;
  }
  Attack& Exception(std::string type, std::string message_part = "") {
    exception_type = std::move(type);
    exception_message = std::move(message_part);
    return *this;
  }
  Attack& Stderr(std::string s) {
    stderr_exact = std::move(s);
    return *this;
  }
  Attack& Detail(std::string s) {
    detail_part = std::move(s);
    return *this;
  }
  Attack& ExitCode(int code_) {
    exit_code = code_;
    return *this;
  }
  Attack& Signal(int sig) {
    signal = sig;
    return *this;
  }
  Attack& Timeout(double s) {
    timeout_s = s;
    return *this;
  }
  Attack& Truncated() {
    output_truncated = true;
    return *this;
  }
  // The exact paths of the files returned, and files_truncated.
  Attack& Files(std::vector<std::string> paths, bool truncated) {
    file_paths = std::move(paths);
    files_truncated = truncated;
    return *this;
  }
  // How many files are returned (which ones the bounded walk saw is the file system's order).
  Attack& FileCount(std::size_t n, bool truncated) {
    file_count = n;
    files_truncated = truncated;
    return *this;
  }
  // A text that must appear nowhere in the result's detail (the code's own words).
  Attack& DetailLacks(std::string s) {
    detail_lacks = std::move(s);
    return *this;
  }
  // The traceback is bounded: at most 100 frames with one "frames omitted" marker frame, and
  // stderr stays small.
  Attack& BoundedTraceback() {
    bounded_traceback = true;
    return *this;
  }
  // In recycle mode the runs before and after the attack must be served by the same
  // container: the zygote survived, nothing had to be replaced.
  Attack& SameContainerAfter() {
    same_container_after = true;
    return *this;
  }
  // A second run that checks what the first left behind (both end with /etc/hostname as their
  // value: in recycle mode they must share the container, or the check would prove nothing).
  Attack& Then(std::string code_, std::string expected_stdout) {
    next_code = std::move(code_);
    next_stdout = std::move(expected_stdout);
    return *this;
  }

  std::string name, layer, code;
  exec::Verdict verdict;
  std::optional<std::string> stdout_exact, stdout_prefix, stderr_exact, detail_part, exception_type,
      exception_message;
  std::optional<int> exit_code, signal;
  std::optional<double> timeout_s;
  bool output_truncated = false;
  bool same_container_after = false;
  std::optional<std::vector<std::string>> file_paths;
  std::optional<std::size_t> file_count;
  bool files_truncated = false;
  std::optional<std::string> detail_lacks;
  bool bounded_traceback = false;
  std::optional<std::string> next_code, next_stdout;
};

const char* const kHostname = "open('/etc/hostname').read().strip()\n";

std::string AllBytes() {
  std::string s;
  for (int i = 0; i < 256; ++i) s.push_back(static_cast<char>(i));
  return s;
}

// A well-formed harness `done` frame, and a Docker stream header, as the code writes them.
const std::string kForgedDone = R"({"ev":"done","id":"run-1","verdict":"ok","exit_code":0})";
std::string ForgedBytes() {
  std::string frame;
  const auto n = static_cast<std::uint32_t>(kForgedDone.size());
  frame.push_back(static_cast<char>((n >> 24) & 0xFF));
  frame.push_back(static_cast<char>((n >> 16) & 0xFF));
  frame.push_back(static_cast<char>((n >> 8) & 0xFF));
  frame.push_back(static_cast<char>(n & 0xFF));
  frame.push_back('J');
  frame += kForgedDone;
  frame += std::string("\x02\x00\x00\x00\x00\x00\x00\x05hello", 13);
  return frame;
}

// Syscall numbers for the ctypes cases (x86-64 and AArch64).
const char* const kSyscallTable = R"PY(
import ctypes, platform
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
NR = {
    'x86_64': dict(ptrace=101, process_vm_readv=310, keyctl=250, add_key=248, bpf=321,
                   userfaultfd=323, perf_event_open=298, io_uring_setup=425, kexec_load=246,
                   init_module=175, open_by_handle_at=304, setns=308, pivot_root=155, chroot=161,
                   unshare=272, mount=165, clone=56, clone3=435, io_setup=206),
    'aarch64': dict(ptrace=117, process_vm_readv=270, keyctl=219, add_key=217, bpf=280,
                    userfaultfd=282, perf_event_open=241, io_uring_setup=425, kexec_load=104,
                    init_module=105, open_by_handle_at=265, setns=268, pivot_root=41, chroot=51,
                    unshare=97, mount=40, clone=220, clone3=435, io_setup=0),
}[platform.machine()]
buf = ctypes.create_string_buffer(512)
def sys_call(name, *args):
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(NR[name]), *[ctypes.c_long(a) for a in args])
    return r, ctypes.get_errno()
)PY";

std::vector<Attack> Attacks() {
  using V = exec::Verdict;
  const std::string buf = "ctypes.addressof(buf)";
  std::vector<Attack> a;

  // -- resources -----------------------------------------------------------------------------
  a.emplace_back("fork_bomb",
                 "cgroup pids limit (fork fails with EAGAIN); PID namespace kills the rest",
                 "import os\nwhile True:\n    os.fork()\n", V::kError);
  a.back().Exception("BlockingIOError", "Resource temporarily unavailable").SameContainerAfter();
  a.emplace_back("thread_bomb", "cgroup pids limit / RLIMIT_NPROC (threads are tasks)",
                 "import threading, time\n"
                 "while True:\n"
                 "    threading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n",
                 V::kError);
  a.back().Exception("RuntimeError", "can't start new thread");
  a.emplace_back("infinite_loop", "harness wall-clock deadline", "while True:\n    pass\n",
                 V::kTimeout);
  a.back().Timeout(2).Signal(9);
  a.emplace_back("sleep_forever", "harness wall-clock deadline", "import time\ntime.sleep(10**6)\n",
                 V::kTimeout);
  a.back().Timeout(2).Signal(9);
  a.emplace_back(
      "output_flood_100mb", "harness output limit (1 MiB), then kill",
      "import sys\nchunk = 'x' * (1 << 20)\nfor _ in range(100):\n    sys.stdout.write(chunk)\n",
      V::kOutputLimit);
  a.back().Truncated().Signal(9);
  a.emplace_back("memory_bomb", "cgroup memory limit (the run is the OOM killer's first choice)",
                 "b = bytearray(4 << 30)\nprint('unreachable')\n", V::kMemory);
  a.back().Stdout("").Signal(9).SameContainerAfter();
  a.emplace_back("huge_file", "RLIMIT_FSIZE (Python ignores SIGXFSZ: write fails with EFBIG)",
                 "with open('/tmp/big.bin', 'wb') as f:\n"
                 "    for _ in range(16):\n"
                 "        f.write(bytes(1 << 20))\n",
                 V::kError);
  a.back().Exception("OSError", "[Errno 27] File too large");
  a.emplace_back("fill_tmpfs", "tmpfs size of the run's /tmp",
                 "for i in range(64):\n"
                 "    with open('/tmp/fill%d' % i, 'wb') as f:\n"
                 "        f.write(bytes(4 << 20))\n",
                 V::kError);
  a.back().Exception("OSError", "[Errno 28] No space left on device");

  // -- network and the engine --------------------------------------------------------------
  a.emplace_back("connect_internet", "docker network none (no route)",
                 "import socket\nsocket.create_connection(('1.1.1.1', 53), timeout=5)\n",
                 V::kError);
  a.back().Exception("OSError", "Network is unreachable");
  a.emplace_back("only_loopback", "docker network none (the namespace holds only lo)",
                 "lines = open('/proc/net/dev').read().splitlines()[2:]\n"
                 "print(sorted(l.split(':')[0].strip() for l in lines))\n",
                 V::kOk);
  a.back().Stdout("['lo']\n");
  a.emplace_back(
      "raw_socket", "capabilities dropped (no CAP_NET_RAW)",
      "import socket\nsocket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)\n",
      V::kError);
  a.back().Exception("PermissionError", "Operation not permitted");
  a.emplace_back(
      "connect_docker_socket", "docker (the socket is never mounted)",
      "import socket\ns = socket.socket(socket.AF_UNIX)\ns.connect('/var/run/docker.sock')\n",
      V::kError);
  a.back().Exception("FileNotFoundError");
  a.emplace_back(
      "find_engine_sockets", "docker (no engine socket anywhere)",
      "import os\n"
      "paths = ['/var/run/docker.sock', '/run/docker.sock', '/run/containerd/containerd.sock',\n"
      "         '/var/run/docker/containerd/containerd.sock', '/run/podman/podman.sock']\n"
      "print([p for p in paths if os.path.exists(p)])\n",
      V::kOk);
  a.back().Stdout("[]\n");

  // -- the filesystem ------------------------------------------------------------------------
  a.emplace_back("write_root", "docker read-only root", "open('/pwned', 'w')\n", V::kError);
  a.back().Exception("OSError", "[Errno 30] Read-only file system");
  a.emplace_back("write_etc", "docker read-only root", "open('/etc/pwned', 'w')\n", V::kError);
  a.back().Exception("OSError", "[Errno 30] Read-only file system");
  a.emplace_back("write_usr", "docker read-only root", "open('/usr/lib/pwned.py', 'w')\n",
                 V::kError);
  a.back().Exception("OSError", "[Errno 30] Read-only file system");
  a.emplace_back("write_proc_sys", "docker read-only /proc/sys",
                 "open('/proc/sys/kernel/core_pattern', 'w').write('|/tmp/x')\n", V::kError);
  a.back().Exception("OSError", "[Errno 30] Read-only file system");
  a.emplace_back("write_sys_cgroup", "docker read-only /sys (cgroup limits out of reach)",
                 "open('/sys/fs/cgroup/memory/memory.limit_in_bytes', 'w').write('-1')\n",
                 V::kError);
  a.back().Exception("OSError", "[Errno 30] Read-only file system");

  // -- privileges and the kernel -------------------------------------------------------------
  a.emplace_back("setuid_root",
                 "user namespace: only uid 10001 is mapped (EINVAL); no capabilities",
                 "import os\nos.setuid(0)\n", V::kError);
  a.back().Exception("OSError", "[Errno 22] Invalid argument");
  a.emplace_back(
      "self_status", "capabilities dropped, no-new-privileges, two seccomp filters",
      "st = dict(l.split(':', 1) for l in open('/proc/self/status') if ':' in l)\n"
      "for k in ('Uid', 'CapEff', 'CapPrm', 'CapBnd', 'CapAmb', 'NoNewPrivs', 'Seccomp',\n"
      "          'Seccomp_filters'):\n"
      "    print(k, ' '.join(st[k].split()))\n",
      V::kOk);
  a.back().Stdout(
      "Uid 10001 10001 10001 10001\nCapEff 0000000000000000\nCapPrm 0000000000000000\n"
      "CapBnd 0000000000000000\nCapAmb 0000000000000000\nNoNewPrivs 1\nSeccomp 2\n"
      "Seccomp_filters 2\n");
  a.emplace_back(
      "denied_syscalls",
      "run seccomp (and the container profile for all but unshare/mount); clone3 ENOSYS",
      std::string(kSyscallTable) +
          "print('ptrace', *sys_call('ptrace', 0, 0, 0, 0))\n"  // PTRACE_TRACEME
          "print('process_vm_readv', *sys_call('process_vm_readv', 1, " +
          buf + ", 1, " + buf +
          ", 1, 0))\n"
          "print('keyctl', *sys_call('keyctl', 0, -3, 0))\n"  // KEYCTL_GET_KEYRING_ID, session
          "print('add_key', *sys_call('add_key', 0, 0, 0, 0, -3))\n"
          "print('bpf', *sys_call('bpf', 0, " +
          buf +
          ", 72))\n"
          "print('userfaultfd', *sys_call('userfaultfd', 1))\n"  // UFFD_USER_MODE_ONLY
          "print('perf_event_open', *sys_call('perf_event_open', " +
          buf +
          ", 0, -1, -1, 0))\n"
          "print('io_uring_setup', *sys_call('io_uring_setup', 1, " +
          buf +
          "))\n"
          "print('kexec_load', *sys_call('kexec_load', 0, 0, 0, 0))\n"
          "print('init_module', *sys_call('init_module', 0, 0, 0))\n"
          "print('open_by_handle_at', *sys_call('open_by_handle_at', -100, " +
          buf +
          ", 0))\n"
          "print('setns', *sys_call('setns', -1, 0))\n"
          "print('pivot_root', *sys_call('pivot_root', 0, 0))\n"
          "print('chroot', *sys_call('chroot', 0))\n"
          "print('unshare_user', *sys_call('unshare', 0x10000000))\n"
          "print('unshare_net', *sys_call('unshare', 0x40000000))\n"
          "print('mount', *sys_call('mount', 0, 0, 0, 0, 0))\n"
          "print('clone_newuser', *sys_call('clone', 0x10000000 | 17, 0, 0, 0, 0))\n"
          "print('clone3', *sys_call('clone3', " +
          buf + ", 88))\n",
      V::kOk);
  a.back().Stdout(
      "ptrace -1 1\nprocess_vm_readv -1 1\nkeyctl -1 1\nadd_key -1 1\nbpf -1 1\nuserfaultfd -1 1\n"
      "perf_event_open -1 1\nio_uring_setup -1 1\nkexec_load -1 1\ninit_module -1 1\n"
      "open_by_handle_at -1 1\nsetns -1 1\npivot_root -1 1\nchroot -1 1\nunshare_user -1 1\n"
      "unshare_net -1 1\nmount -1 1\nclone_newuser -1 1\nclone3 -1 38\n");
  a.emplace_back("libc_unshare_and_mount",
                 "run seccomp (the container profile allows both for the harness)",
                 "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
                 "print(libc.unshare(0x10000000), ctypes.get_errno())\n"
                 "print(libc.mount(b'none', b'/tmp', b'tmpfs', 0, None), ctypes.get_errno())\n",
                 V::kOk);
  a.back().Stdout("-1 1\n-1 1\n");
  // Denied by the container profile only (the run filter allows them): proves that runc really
  // applied policies/seccomp-container.json to the server-created container.
  a.emplace_back(
      "container_profile_applied",
      "container seccomp (Linux AIO, netlink sockets); the container's init carries it",
      std::string(kSyscallTable) +
          "ctx = ctypes.c_ulong(0)\n"
          "print('io_setup', *sys_call('io_setup', 1, ctypes.addressof(ctx)))\n"
          "import socket\n"
          "try:\n"
          "    socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)\n"
          "    print('netlink opened')\n"
          "except OSError as e:\n"
          "    print('netlink', e.errno)\n"
          "st = dict(l.split(':', 1) for l in open('/proc/1/status') if ':' in l)\n"
          "print('init', st['Seccomp'].strip(), st['NoNewPrivs'].strip(), st['CapEff'].strip())\n",
      V::kOk);
  a.back().Stdout("io_setup -1 1\nnetlink 1\ninit 2 1 0000000000000000\n");

  // -- other processes (the zygote included) -------------------------------------------------
  a.emplace_back("ptrace_attach_everyone", "container and run seccomp (ptrace denied)",
                 "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\nerrs = set()\n"
                 "for p in os.listdir('/proc'):\n"
                 "    if p.isdigit():\n"
                 "        ctypes.set_errno(0)\n"
                 "        libc.ptrace(ctypes.c_long(16), ctypes.c_long(int(p)), None, None)\n"
                 "        errs.add(ctypes.get_errno())\n"
                 "print(sorted(errs))\n",
                 V::kOk);
  a.back().Stdout("[1]\n");
  a.emplace_back(
      "read_other_processes",
      "zygote, its forks and the run's init are non-dumpable; docker-init belongs to "
      "the container's user namespace: no byte of environ, maps or mem",
      "import os\nme = os.readlink('/proc/self')\n"
      "def grab(p):\n"
      "    got = []\n"
      "    for f in ('environ', 'maps'):\n"
      "        try:\n"
      "            with open('/proc/%s/%s' % (p, f), 'rb') as fh:\n"
      "                if fh.read(1):\n"
      "                    got.append(f)\n"
      "        except OSError:\n"
      "            pass\n"
      "    try:\n"
      "        with open('/proc/%s/mem' % p, 'rb') as fh:\n"
      "            got.append('mem-open')\n"
      "            fh.seek(int(open('/proc/%s/maps' % p).readline().split('-')[0], 16))\n"
      "            if fh.read(1):\n"
      "                got.append('mem')\n"
      "    except (OSError, ValueError):\n"
      "        pass\n"
      "    return got\n"
      "readable, live = [], 0\n"
      "for p in os.listdir('/proc'):\n"
      "    if not p.isdigit() or p == me:\n"
      "        continue\n"
      "    try:\n"
      "        st = open('/proc/%s/status' % p).read()\n"
      "    except OSError:\n"
      "        continue\n"
      "    if 'VmRSS' not in st:\n"
      "        continue  # a zombie (an earlier run's process being reaped): no memory\n"
      "    live += 1\n"
      "    readable += [(p, f) for f in grab(p)]\n"
      "print('readable', readable, 'others', live >= 4)\n",
      V::kOk);
  a.back().Stdout("readable [] others True\n");
  a.emplace_back(
      "kill_every_pid",
      "PID namespace: pids resolve in the run's namespace, its init drops the signals",
      std::string(
          "import os, signal\nme = os.getpid()\n"
          "for p in [int(d) for d in os.listdir('/proc') if d.isdigit()] + list(range(1, 100)):\n"
          "    if p != me:\n"
          "        try:\n"
          "            os.kill(p, signal.SIGKILL)\n"
          "        except OSError:\n"
          "            pass\n"
          "try:\n"
          "    os.kill(-1, signal.SIGKILL)\n"
          "except OSError:\n"
          "    pass\n"
          "print('survived')\n"),
      V::kOk);
  a.back().Stdout("survived\n").SameContainerAfter();
  a.emplace_back(
      "kill_minus_one_from_shell",
      "PID namespace: `kill -9 -1` reaches only the run's own processes (the run itself)",
      "import subprocess\nsubprocess.run(['sh', '-c', 'kill -9 -1'])\nprint('unreachable')\n",
      V::kSignal);
  a.back().Signal(9).Stdout("").SameContainerAfter();
  a.emplace_back(
      "setns_into_the_forkers_namespaces",
      "run seccomp (setns, unshare); the forker, its parent and the run's init are non-dumpable "
      "(no /proc/PID/ns of theirs opens); docker-init is in another user namespace. The run is "
      "PID 2 three PID namespaces deep (the container's, the forker's, its own): the direct tree",
      "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
      "me = os.readlink('/proc/self')\nopened, results = [], set()\n"
      "def attempt(fd):\n"
      "    for t in (0, 0x20000000, 0x10000000, 0x00020000):\n"  // any, PID, user, mount
      "        ctypes.set_errno(0)\n"
      "        results.add((libc.setns(fd, t), ctypes.get_errno()))\n"
      "for p in os.listdir('/proc'):\n"
      "    if not p.isdigit() or p == me:\n"
      "        continue\n"
      "    for ns in ('pid', 'pid_for_children', 'user', 'mnt', 'ipc'):\n"
      "        try:\n"
      "            fd = os.open('/proc/%s/ns/%s' % (p, ns), os.O_RDONLY)\n"
      "        except OSError:\n"
      "            continue\n"
      "        opened.append((p, ns))\n"
      "        attempt(fd)\n"
      "        os.close(fd)\n"
      "for ns in ('pid', 'pid_for_children', 'user'):\n"
      "    fd = os.open('/proc/self/ns/' + ns, os.O_RDONLY)\n"
      "    attempt(fd)\n"
      "    os.close(fd)\n"
      "for flags in (0x20000000, 0x10000000 | 0x20000000):\n"
      "    ctypes.set_errno(0)\n"
      "    results.add((libc.unshare(flags), ctypes.get_errno()))\n"
      "nspid = [l for l in open('/proc/self/status') if l.startswith('NSpid')][0].split()[1:]\n"
      "print('opened', opened, 'results', sorted(results), 'levels', len(nspid), nspid[-1])\n",
      V::kOk);
  a.back().Stdout("opened [] results [(-1, 1)] levels 3 2\n").SameContainerAfter();

  // -- output and the protocol ---------------------------------------------------------------
  a.emplace_back("forge_frames", "harness: the code holds no descriptor of the control channel",
                 "import os, struct\n"
                 "done = b'" +
                     kForgedDone +
                     "'\n"
                     "forged = struct.pack('>I', len(done)) + b'J' + done + "
                     "b'\\x02\\x00\\x00\\x00\\x00\\x00\\x00\\x05hello'\n"
                     "for fd in range(1, 64):\n"
                     "    try:\n"
                     "        os.write(fd, forged)\n"
                     "    except OSError:\n"
                     "        pass\n"
                     "print('after')\n",
                 V::kError);
  // fd 2 is stderr: the same bytes arrive there verbatim. The copy written to the run's own
  // result pipe is garbage the harness refuses: verdict error (the code's doing), exit 0.
  a.back()
      .Stdout(ForgedBytes() + "after\n")
      .Stderr(ForgedBytes())
      .ExitCode(0)
      .Detail("result channel");
  a.emplace_back("binary_output", "harness relays raw bytes",
                 "import os\nos.write(1, bytes(range(256)))\n", V::kOk);
  a.back().Stdout(AllBytes());
  a.emplace_back("close_stdout", "harness: end of the run is its status, not its pipes",
                 "import os\nprint('before', flush=True)\nos.close(1)\nprint('after')\n",
                 V::kError);
  a.back().Stdout("before\n").Exception("OSError", "[Errno 9] Bad file descriptor");
  a.emplace_back("close_all_fds",
                 "harness: the run's status comes from its init, whatever the code closed",
                 "import os\nos.closerange(0, 1024)\nx = 1\n", V::kError);
  a.back().Stdout("").ExitCode(70);  // EX_INTERNAL: the harness could not report its results
  a.emplace_back("os_exit_midway", "harness (exit status from the run's init)",
                 "import os\nprint('a', flush=True)\nos._exit(7)\nprint('b')\n", V::kError);
  a.back().Stdout("a\n").ExitCode(7);
  a.emplace_back("threads_print_after_main", "harness joins non-daemon threads, as Python does",
                 "import threading, time\n"
                 "def late():\n"
                 "    for i in range(3):\n"
                 "        time.sleep(0.1)\n"
                 "        print('thread', i, flush=True)\n"
                 "threading.Thread(target=late).start()\n"
                 "print('main done', flush=True)\n",
                 V::kOk);
  a.back().Stdout("main done\nthread 0\nthread 1\nthread 2\n");
  a.emplace_back("daemon_thread_prints_forever", "harness: the run ends with its process",
                 "import sys, threading, time\n"
                 "def tick():\n"
                 "    while True:\n"
                 "        sys.stdout.write('tick\\n')\n"
                 "        time.sleep(0.01)\n"
                 "threading.Thread(target=tick, daemon=True).start()\n"
                 "time.sleep(0.3)\n",
                 V::kOk);
  a.back().StdoutStarts("tick\n");
  a.emplace_back("child_outlives_code",
                 "PID namespace: the run's init exits, the kernel kills the rest",
                 "import os, subprocess, time\n"
                 "subprocess.Popen(['sleep', '1000'])\n"
                 "if os.fork() == 0:\n"
                 "    os.setsid()\n"
                 "    if os.fork() == 0:\n"
                 "        time.sleep(1000)\n"
                 "    os._exit(0)\n"
                 "print('parent done')\n",
                 V::kOk);
  a.back().Stdout("parent done\n");

  // -- what one run leaves for the next ----------------------------------------------------
  a.emplace_back(
      "leftovers",
      "namespaces: private /tmp, work dir, /dev/shm, /dev/mqueue, IPC, PID; a fresh fork of the "
      "zygote per run (environment, modules)",
      std::string("import builtins, ctypes, os, subprocess, sys, threading, time, numpy\n"
                  "open('/tmp/left_tmp', 'w').write('x')\n"
                  "open('/dev/shm/left_shm', 'w').write('x')\n"
                  "open('left_work.txt', 'w').write('x')\n"
                  "os.close(os.open('/dev/mqueue/left_mq', os.O_CREAT | os.O_RDWR, 0o600))\n"
                  "libc = ctypes.CDLL(None, use_errno=True)\n"
                  "assert libc.shmget(0x5EC, 4096, 0o1600) >= 0, ctypes.get_errno()\n"
                  "os.environ['LEFT_ENV'] = '1'\n"
                  "numpy.sum = lambda *a, **k: 'patched'\n"
                  "builtins.LEFT_BUILTIN = 1\n"
                  "sys.modules['left_module'] = sys\n"
                  "subprocess.Popen(['sleep', '1000'], start_new_session=True)\n"
                  "threading.Thread(target=time.sleep, args=(1000,), daemon=True).start()\n") +
          kHostname,
      V::kOk);
  a.back().Stdout("").Then(
      std::string(
          "import builtins, ctypes, os, sys, numpy\n"
          "libc = ctypes.CDLL(None, use_errno=True)\n"
          "def sleepers():\n"
          "    n = 0\n"
          "    for p in os.listdir('/proc'):\n"
          "        try:\n"
          "            n += p.isdigit() and open('/proc/%s/cmdline' % p, "
          "'rb').read().startswith(b'sleep')\n"
          "        except OSError:\n"
          "            pass\n"
          "    return n\n"
          "print([os.path.exists(p) for p in ('/tmp/left_tmp', '/dev/shm/left_shm', "
          "'left_work.txt',\n"
          "                                   '/dev/mqueue/left_mq')])\n"
          "print(libc.shmget(0x5EC, 0, 0), ctypes.get_errno())\n"
          "print('LEFT_ENV' in os.environ, numpy.sum([1, 2]), hasattr(builtins, 'LEFT_BUILTIN'),\n"
          "      'left_module' in sys.modules)\n"
          "print(sleepers(), __import__('threading').active_count())\n") +
          kHostname,
      "[False, False, False, False]\n-1 2\nFalse 3 False False\n0 1\n");

  // -- signals to the run's own process group -------------------------------------------
  // U leads its own session: kill(0) and killpg(getpgrp()) reach the run, never I, F or Z.
  a.emplace_back(
      "kill_own_group_sigkill", "harness: the run process leads its own session and process group",
      "import os, signal\nprint('x', flush=True)\nos.kill(0, signal.SIGKILL)\n", V::kSignal);
  a.back().Signal(9).Stdout("x\n").SameContainerAfter();
  a.emplace_back("kill_own_group_sigstop",
                 "harness: own process group; the wall-clock deadline ends the stopped run",
                 "import os, signal\nos.kill(0, signal.SIGSTOP)\nprint('unreachable')\n",
                 V::kTimeout);
  a.back().Timeout(2).Signal(9).Stdout("").SameContainerAfter();
  a.emplace_back(
      "killpg_own_group_sigterm", "harness: own process group",
      "import os, signal\nos.killpg(os.getpgrp(), signal.SIGTERM)\nprint('unreachable')\n",
      V::kSignal);
  a.back().Signal(15).Stdout("").SameContainerAfter();

  // -- forged result records: claims of the run, checked ------------------------------------
  const std::string forge =
      "import json, os, struct\n"
      "def forge(rec):\n"
      "    data = json.dumps(rec).encode()\n"
      "    for fd in range(3, 64):\n"
      "        try:\n"
      "            os.write(fd, struct.pack('>I', len(data)) + b'J' + data)\n"
      "        except OSError:\n"
      "            pass\n"
      "def file(path):\n"
      "    forge({'t': 'file', 'path': path, 'mime_type': 'text/plain', 'offset': 0,\n"
      "           'last': True, 'data_b64': 'eA=='})\n";
  a.emplace_back("forged_file_escaping_paths",
                 "harness and server: result paths relative, normalized, inside the work dir",
                 forge +
                     "for p in ('../../etc/forged', '/etc/passwd', 'a/../../x', './x', 'a//b',\n"
                     "          'nul\\x00byte', 'new\\nline', 'x' * 1100):\n"
                     "    file(p)\nopen('real.txt', 'w').write('r')\n",
                 V::kOk);
  a.back().Files({"real.txt"}, true).Stdout("").SameContainerAfter();
  a.emplace_back("forged_file_pieces_lie",
                 "harness and server: a file's pieces come in order and end with the last",
                 forge +
                     "def piece(path, offset, last, data='eA=='):\n"
                     "    forge({'t': 'file', 'path': path, 'mime_type': 'x', 'offset': offset,\n"
                     "           'last': last, 'data_b64': data})\n"
                     "piece('gap', 0, False); piece('gap', 5, True)\n"  // a hole
                     "piece('late', 10**12, True)\n"                    // no start
                     "piece('neg', -1, True)\n"
                     "piece('bad64', 0, True, '!!!!')\n"
                     "piece('swap', 0, False); piece('other', 1, True)\n"
                     "piece('open', 0, False)\n",  // never ends
                 V::kOk);
  a.back().Files({}, true).Stdout("");
  a.emplace_back("forged_file_count", "harness: files_out.max_count (32 here)",
                 forge + "for i in range(200):\n    file('f%03d' % i)\n", V::kOk);
  a.back().Files(
      [] {
        std::vector<std::string> v;
        v.reserve(32);
        for (int i = 0; i < 32; ++i) {
          v.push_back("f0" + std::string(i < 10 ? "0" : "") + std::to_string(i));
        }
        return v;
      }(),
      true);
  a.emplace_back(
      "forged_internal_record",
      "harness: a record of the run is a claim about itself (at most its own error); "
      "the server keeps the container",
      forge + "forge({'t': 'internal', 'message': 'pwned: attacker text'})\nprint('ok')\n",
      V::kError);
  a.back()
      .Stdout("ok\n")
      .ExitCode(0)
      .Detail("reported a failure after the code started")
      .DetailLacks("pwned")
      .SameContainerAfter();
  a.emplace_back("forged_result_flood", "harness: result bytes bounded; the run's own error",
                 "import os\nbig = b'\\xff' * (64 << 20)\n"
                 "for _ in range(32):\n"  // 2 GiB: past the pool's result budget (1.4 GiB)
                 "    for fd in range(3, 64):\n"
                 "        try:\n"
                 "            os.write(fd, big)\n"
                 "        except OSError:\n"
                 "            pass\n",
                 V::kError);
  a.back()
      .Timeout(60)
      .Signal(9)
      .Detail("more result data than its limits allow")
      .SameContainerAfter();

  // -- bounded results -------------------------------------------------------------------------
  a.emplace_back("million_frame_traceback",
                 "harness and server: first and last frames kept, a marker for the rest",
                 "import sys\nsys.setrecursionlimit(10**6)\n"
                 "def f(n):\n    return f(n + 1)\nf(0)\n",
                 V::kError);
  a.back()
      .Timeout(120)
      .Exception("RecursionError", "maximum recursion depth")
      .BoundedTraceback()
      .SameContainerAfter();

  // -- file collection survives any tree the code can build ----------------------------------
  a.emplace_back("deep_tree", "harness: the walk is bounded in depth (32) and entries",
                 "import os\nopen('top.txt', 'w').write('t')\n"
                 "for _ in range(1000):\n    os.mkdir('d')\n    os.chdir('d')\n"
                 "open('deep.txt', 'w').write('deep')\n",
                 V::kOk);
  a.back().Files({"top.txt"}, true).Stdout("");
  a.emplace_back(
      "many_files", "harness: the walk looks at 10000 entries at most",
      "import os\nos.mkdir('m')\n"
      "for i in range(30000):\n    os.close(os.open('m/%05d' % i, os.O_CREAT | os.O_WRONLY))\n"
      "open('a.txt', 'w').write('a')\n",
      V::kOk);
  a.back().Timeout(60).FileCount(32, true);
  a.emplace_back("odd_names", "harness: names that are no valid result path are skipped, marked",
                 "open(b'bad\\xff.txt', 'w').write('b')\nopen('new\\nline.txt', 'w').write('n')\n"
                 "open('tab\\there', 'w').write('t')\nopen('ok.txt', 'w').write('ok')\n",
                 V::kOk);
  a.back().Files({"ok.txt"}, true).Stdout("");
  a.emplace_back("links_fifos_sockets",
                 "harness: symlinks not followed (loops), FIFOs never opened, sockets skipped",
                 "import os, socket\nos.symlink('loop', 'loop')\nos.symlink('.', 'self')\n"
                 "os.mkdir('d')\nos.symlink('..', 'd/up')\nos.symlink('/etc/passwd', 'passwd')\n"
                 "os.mkfifo('fifo')\ns = socket.socket(socket.AF_UNIX)\ns.bind('sock')\n"
                 "open('d/a.txt', 'w').write('a')\n",
                 V::kOk);
  a.back().Files({"d/a.txt"}, false).Stdout("");
  a.emplace_back("sparse_file", "harness: a sparse file is read only up to its bounds",
                 "with open('sparse.bin', 'wb') as f:\n    f.truncate(" +
                     std::to_string(kFsizeBytes) + ")\nopen('small.txt', 'w').write('s')\n",
                 V::kOk);
  a.back().Files({"small.txt", "sparse.bin"}, false).Stdout("");
  a.emplace_back("files_changing_while_read",
                 "harness: a file growing or replaced while collected is read within bounds",
                 "import os, threading\n"
                 "def churn():\n"
                 "    i = 0\n"
                 "    while True:\n"
                 "        with open('grow.txt', 'a') as f:\n"
                 "            f.write('x' * 1000)\n"
                 "        try:\n"
                 "            os.unlink('swap')\n"
                 "        except OSError:\n"
                 "            pass\n"
                 "        if i % 2:\n"
                 "            os.mkfifo('swap')\n"
                 "        else:\n"
                 "            open('swap', 'w').write('s')\n"
                 "        i += 1\n"
                 "threading.Thread(target=churn, daemon=True).start()\n"
                 "import time\ntime.sleep(0.2)\n",
                 V::kOk);
  a.back().Stdout("");
  return a;
}

struct Param {
  config::PoolMode mode;
  std::size_t index;
};

class AttackTest : public ::testing::TestWithParam<Param> {
 protected:
  static void SetUpTestSuite() {
    services_ = new sandbox::testing::SharedServices("attack", [](config::PoolConfig& pool) {
      pool.limits.fsize_bytes = kFsizeBytes;
      pool.limits.tmpfs_bytes = kTmpfsBytes;
      if (pool.mode == config::PoolMode::kFresh) {
        pool.min_idle = 2;  // every run uses a container up: keep the next ones coming
        pool.max_total = 3;
      } else {
        // One container: the check after an attack must run where the attack ran (the pool
        // lends whichever idle container is prepared first, so with two it may not).
        pool.min_idle = 1;
        pool.max_total = 1;
      }
    });
  }
  static void TearDownTestSuite() {
    services_->Finish();
    delete services_;
    services_ = nullptr;
  }
  service::SandboxService* service() { return services_->Get(GetParam().mode); }
  static sandbox::testing::SharedServices* services_;
};

sandbox::testing::SharedServices* AttackTest::services_ = nullptr;

const std::vector<Attack>& AllAttacks() {
  static const std::vector<Attack> attacks = Attacks();
  return attacks;
}

TEST_P(AttackTest, Run) {
  const Attack& attack = AllAttacks()[GetParam().index];
  const bool recycle = GetParam().mode == config::PoolMode::kRecycle;
  SCOPED_TRACE(attack.name + " (stopped by: " + attack.layer + ")");
  std::optional<std::string> host_before;
  if (recycle && attack.same_container_after) {
    auto before = RunCode(service(), kHostname);
    ASSERT_TRUE(before.value.has_value()) << Describe(before);
    host_before = before.value;
  }
  exec::LimitOverrides limits;
  if (attack.timeout_s) limits.timeout_s = *attack.timeout_s;
  const auto begin = std::chrono::steady_clock::now();
  auto r = RunCode(service(), attack.code, limits);
  const auto elapsed = std::chrono::steady_clock::now() - begin;

  EXPECT_EQ(r.verdict, attack.verdict) << Describe(r);
  // Only against hangs (not a timing check; loaded machines are slow): five minutes past the
  // run's own limit, so a run the server never ends fails this case instead of the binary.
  EXPECT_LT(elapsed, std::chrono::seconds(300) +
                         std::chrono::duration<double>(attack.timeout_s.value_or(20)))
      << "the attack was not stopped";
  if (attack.stdout_exact) {
    EXPECT_EQ(r.stdout_text, *attack.stdout_exact) << Describe(r);
  }
  if (attack.stderr_exact) {
    EXPECT_EQ(r.stderr_text, *attack.stderr_exact) << Describe(r);
  }
  if (attack.detail_part) {
    EXPECT_THAT(r.detail, HasSubstr(*attack.detail_part)) << Describe(r);
  }
  if (attack.stdout_prefix) {
    EXPECT_THAT(r.stdout_text, StartsWith(*attack.stdout_prefix)) << Describe(r);
  }
  if (attack.exception_type) {
    ASSERT_TRUE(r.traceback.has_value()) << Describe(r);
    EXPECT_EQ(r.traceback->type, *attack.exception_type) << Describe(r);
    if (attack.exception_message) {
      EXPECT_THAT(r.traceback->message, HasSubstr(*attack.exception_message));
    }
  }
  if (attack.exit_code) {
    EXPECT_EQ(r.exit_code, *attack.exit_code) << Describe(r);
  }
  if (attack.signal) {
    ASSERT_TRUE(r.signal.has_value()) << Describe(r);
    EXPECT_EQ(*r.signal, *attack.signal);
  } else {
    EXPECT_FALSE(r.signal.has_value()) << Describe(r);
  }
  EXPECT_EQ(r.output_truncated, attack.output_truncated) << Describe(r);
  if (attack.file_paths) {
    std::vector<std::string> paths;
    for (const auto& f : r.files) paths.push_back(f.path);
    EXPECT_EQ(paths, *attack.file_paths) << Describe(r);
    EXPECT_EQ(r.files_truncated, attack.files_truncated) << Describe(r);
  }
  if (attack.file_count) {
    EXPECT_EQ(r.files.size(), *attack.file_count) << Describe(r);
    EXPECT_EQ(r.files_truncated, attack.files_truncated) << Describe(r);
  }
  if (attack.detail_lacks) {
    EXPECT_THAT(r.detail, ::testing::Not(HasSubstr(*attack.detail_lacks))) << Describe(r);
  }
  if (attack.bounded_traceback) {
    ASSERT_TRUE(r.traceback.has_value()) << Describe(r);
    EXPECT_EQ(r.traceback->frames.size(), 100U);
    int markers = 0;
    for (const auto& f : r.traceback->frames) {
      markers += f.function.find("frames omitted ...]") != std::string::npos ? 1 : 0;
    }
    EXPECT_EQ(markers, 1) << "no single omitted-frames marker";
    EXPECT_LT(r.stderr_text.size(), 64U << 10);
    EXPECT_THAT(r.stderr_text, HasSubstr("frames omitted ...]"));
  }
  if (attack.output_truncated) {
    EXPECT_THAT(r.stdout_text,
                ::testing::EndsWith("\n[output truncated: limit of 1048576 bytes reached]\n"));
  }

  if (attack.next_code) {
    auto next = RunCode(service(), *attack.next_code);
    EXPECT_EQ(next.verdict, exec::Verdict::kOk) << Describe(next);
    EXPECT_EQ(next.stdout_text, *attack.next_stdout) << Describe(next);
    ASSERT_TRUE(r.value.has_value() && next.value.has_value()) << Describe(r) << Describe(next);
    if (recycle) {
      EXPECT_EQ(*r.value, *next.value) << "the check ran in another container: it proves nothing";
    } else {
      EXPECT_NE(*r.value, *next.value) << "fresh mode reused a container";
    }
  }

  // Whatever the attack did, the service serves the next run (the sandbox or its replacement).
  // In fresh mode every run gets a new container anyway, so the next attack shows it: only the
  // last one runs the check (each fresh run waits for a container start on this small machine).
  if (!recycle && GetParam().index + 1 != AllAttacks().size()) return;
  auto after = RunCode(service(), std::string("print('alive')\n") + kHostname);
  EXPECT_EQ(after.verdict, exec::Verdict::kOk) << Describe(after);
  EXPECT_EQ(after.stdout_text, "alive\n") << Describe(after);
  if (host_before) {
    ASSERT_TRUE(after.value.has_value()) << Describe(after);
    EXPECT_EQ(*host_before, *after.value) << "the sandbox did not survive the attack";
  }
}

std::vector<Param> AllParams() {
  std::vector<Param> params;
  for (auto mode : {config::PoolMode::kRecycle, config::PoolMode::kFresh}) {
    for (std::size_t i = 0; i < AllAttacks().size(); ++i) params.push_back({mode, i});
  }
  return params;
}

INSTANTIATE_TEST_SUITE_P(Attacks, AttackTest, ::testing::ValuesIn(AllParams()),
                         [](const ::testing::TestParamInfo<Param>& param_info) {
                           return std::string(config::PoolModeName(param_info.param.mode)) + "_" +
                                  AllAttacks()[param_info.param.index].name;
                         });

// -- no run sees another run's data (Secrets: tests/support/secret_scan.h) -----------------

class CrossRunTest : public AttackTest {};

TEST_P(CrossRunTest, NoRunSeesAnotherRunsData) {
  const sandbox::testing::Secrets secrets("run");
  auto a = RunCode(service(), secrets.ProducerCode(), {}, secrets.InputFiles());
  ASSERT_EQ(a.verdict, exec::Verdict::kOk) << Describe(a);
  ASSERT_EQ(a.stdout_text, secrets.Out() + "\n");
  ASSERT_EQ(a.value, "'" + secrets.Value() + "'");
  ASSERT_EQ(a.files.size(), 1U) << Describe(a);
  EXPECT_EQ(a.files[0].data, secrets.Ret());
  exec::LimitOverrides limits;
  limits.timeout_s = 120;  // reading some 500 MB of address space on a busy machine
  auto b = RunCode(service(), secrets.ScannerCode(), limits);
  EXPECT_EQ(b.verdict, exec::Verdict::kOk) << Describe(b);
  EXPECT_EQ(b.stdout_text, sandbox::testing::kNothingFound) << Describe(b);
}

INSTANTIATE_TEST_SUITE_P(BothModes, CrossRunTest,
                         ::testing::Values(Param{config::PoolMode::kRecycle, 0},
                                           Param{config::PoolMode::kFresh, 0}),
                         [](const ::testing::TestParamInfo<Param>& param_info) {
                           return std::string(config::PoolModeName(param_info.param.mode));
                         });

// The containers the server creates, as the engine sees them: no Docker socket, uid 10001,
// read-only root, no network, no capabilities, no-new-privileges, the project's seccomp
// profile, an init, private IPC, memory without swap, a pids limit.
class ContainerConfigTest : public AttackTest {};

TEST_P(ContainerConfigTest, PooledContainersAreLockedDown) {
  const auto mode = GetParam().mode;
  auto* svc = service();
  ASSERT_NE(svc, nullptr);
  // Wait until the pool holds a running container of this suite's instance.
  std::string id;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (id.empty() && std::chrono::steady_clock::now() < deadline) {
    docker::ListOptions list;
    list.filters = {{"label",
                     {std::string(runner::kManagedLabel) + "=true",
                      std::string(runner::kInstanceLabel) + "=" + services_->Instance(mode)}}};
    auto containers = Engine::Get().client().ListContainers(list);
    ASSERT_TRUE(containers.ok()) << containers.error().ToString();
    for (const auto& c : *containers) {
      if (c.state == "running") id = c.id;
    }
    if (id.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ASSERT_FALSE(id.empty()) << "no running container in the pool";
  auto info = Engine::Get().client().InspectContainer(id);
  ASSERT_TRUE(info.ok()) << info.error().ToString();
  const nlohmann::json& raw = info->raw;
  const nlohmann::json& hc = raw.at("HostConfig");

  EXPECT_EQ(raw.at("Config").at("User"), std::string(runner::kSandboxUser));
  EXPECT_EQ(info->labels.at(std::string(runner::kModeLabel)), config::PoolModeName(mode));
  // Never the Docker socket (nor any other bind mount or volume).
  EXPECT_EQ(raw.dump().find("docker.sock"), std::string::npos);
  EXPECT_TRUE(hc.at("Binds").is_null() || hc.at("Binds").empty()) << hc.at("Binds");
  EXPECT_TRUE(raw.at("Mounts").empty()) << raw.at("Mounts");
  EXPECT_TRUE(!hc.contains("Mounts") || hc.at("Mounts").is_null() || hc.at("Mounts").empty());
  EXPECT_TRUE(hc.at("Devices").is_null() || hc.at("Devices").empty());
  EXPECT_EQ(hc.at("Privileged"), false);
  EXPECT_EQ(hc.at("ReadonlyRootfs"), true);
  EXPECT_EQ(hc.at("NetworkMode"), "none");
  EXPECT_EQ(hc.at("IpcMode"), "private");
  EXPECT_EQ(hc.at("PidMode"), "");
  EXPECT_EQ(hc.at("UsernsMode"), "");
  EXPECT_EQ(hc.at("Init"), true);
  EXPECT_EQ(hc.at("CapDrop"), nlohmann::json::array({"ALL"}));
  EXPECT_TRUE(hc.at("CapAdd").is_null() || hc.at("CapAdd").empty());
  const auto& opts = hc.at("SecurityOpt");
  EXPECT_NE(std::find(opts.begin(), opts.end(), "no-new-privileges:true"), opts.end()) << opts;
  EXPECT_NE(std::find(opts.begin(), opts.end(), "seccomp=" + Engine::Get().container_profile()),
            opts.end())
      << "the container does not carry policies/seccomp-container.json";
  EXPECT_GT(hc.at("Memory").get<std::int64_t>(), 0);
  EXPECT_EQ(hc.at("MemorySwap"), hc.at("Memory"));
  EXPECT_GT(hc.at("PidsLimit").get<std::int64_t>(), 0);
  EXPECT_THAT(hc.at("Tmpfs").at("/tmp").get<std::string>(), HasSubstr("nosuid"));
}

INSTANTIATE_TEST_SUITE_P(BothModes, ContainerConfigTest,
                         ::testing::Values(Param{config::PoolMode::kRecycle, 0},
                                           Param{config::PoolMode::kFresh, 0}),
                         [](const ::testing::TestParamInfo<Param>& param_info) {
                           return std::string(config::PoolModeName(param_info.param.mode));
                         });

}  // namespace
}  // namespace sandbox::attack
