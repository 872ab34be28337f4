"""The run trees with namespaces, end to end through the whole harness as a host process: the
direct tree (the forker in its own user and PID namespaces forks G and U into a fresh PID
namespace per run), and its fallbacks (the intermediate tree, then isolate "auto"'s plain
processes) when the kernel refuses a step. Needs user namespaces on the host: skipped without."""

import json
import os
import signal
import time
import unittest

from harness_testing import Zygote, deny_filter, seccomp_preexec, user_namespaces_work
from sandbox_harness import forker

CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWUSER = 0x00020000, 0x08000000, 0x10000000

# What a run sees of its own process and namespaces, as one JSON line.
PROBE = """
import json, os
st = dict(l.split(':\\t', 1) for l in open('/proc/self/status').read().splitlines() if ':\\t' in l)
print(json.dumps({
    "pid": os.getpid(), "ppid": os.getppid(), "nspid": st["NSpid"].split(),
    "cap_eff": st["CapEff"], "cap_bnd": st["CapBnd"], "nnp": st["NoNewPrivs"],
    "user_ns": os.readlink("/proc/self/ns/user"), "pid_ns": os.readlink("/proc/self/ns/pid"),
    "ipc_ns": os.readlink("/proc/self/ns/ipc"), "mnt_ns": os.readlink("/proc/self/ns/mnt"),
    "uid_map": open("/proc/self/uid_map").read().split(),
    "tmp": sorted(os.listdir("/tmp")), "shm": sorted(os.listdir("/dev/shm")),
}))
"""


def _probe(z, code=""):
    out, err, ev = z.run(code + PROBE)
    z.frames("ready")
    if ev[-1]["verdict"] != "ok":
        raise AssertionError("probe run failed: %r %r" % (ev[-1], err[-2000:]))
    return json.loads(out.decode().splitlines()[-1])


def _ns(path):
    return os.readlink(path)


@unittest.skipUnless(user_namespaces_work(), "no user namespaces on this host")
class DirectTreeTest(unittest.TestCase):
    """The direct tree: U is PID 2 of a fresh PID namespace, in a user, mount and IPC namespace
    of its own made per run, without capabilities; G is PID 1; F reaps and reports both."""

    def test_ready_names_the_tree_and_runs_are_isolated(self):
        z = Zygote(self, isolate=True)
        ready = z.frames("ready")[-1][1]
        self.assertEqual((ready["isolation"], ready["run_tree"], ready["errors"]),
                         ("namespaces", "direct", []))
        # Run 1 leaves a file in /tmp and /dev/shm and a SysV shared memory segment.
        first = _probe(z, "import ctypes\nopen('/tmp/left', 'w').close()\n"
                          "open('/dev/shm/left', 'w').close()\n"
                          "libc = ctypes.CDLL(None, use_errno=True)\n"
                          "assert libc.shmget(4242, 4096, 0o1600) >= 0\n")
        second = _probe(z, "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
                           "assert libc.shmget(4242, 0, 0) == -1 and ctypes.get_errno() == 2\n")
        for run in (first, second):
            # PID 2 under a PID 1 (G); the parent (F) is outside the namespace; three levels:
            # the host's (or container's), the forker's, the run's
            self.assertEqual((run["pid"], run["ppid"], len(run["nspid"]), run["nspid"][-1]),
                             (2, 0, 3, "2"), run)
            self.assertEqual((int(run["cap_eff"], 16), int(run["cap_bnd"], 16), run["nnp"]),
                             (0, 0, "1"), run)
            uid = str(os.getuid())
            self.assertEqual(run["uid_map"], [uid, uid, "1"])
            for ns in ("user", "pid", "ipc", "mnt"):  # not the test's (the host's)
                self.assertNotEqual(run[ns + "_ns"], _ns("/proc/self/ns/" + ns), ns)
        # Fresh per run: nothing of run 1 is left in run 2 (nor its IPC segment: asserted in it)
        self.assertNotIn("left", second["tmp"])
        self.assertNotIn("left", second["shm"])
        self.assertEqual(second["tmp"], [name for name in first["tmp"] if name != "left"])

    def test_leftover_processes_die_with_the_run(self):
        z = Zygote(self, isolate=True)
        z.frames("ready")
        # /proc is the host's procfs: the run's pids are not its names; /proc/thread-self's
        # children file gives the sleeper's pid in the host's namespace.
        out, _, ev = z.run("import subprocess\n"
                           "p = subprocess.Popen(['sleep', '50'], start_new_session=True)\n"
                           "print(open('/proc/thread-self/children').read())")
        self.assertEqual(ev[-1]["verdict"], "ok", ev[-1])
        host_pid = int(out.split()[0])  # the sleeper's pid in the test's namespace
        z.frames("ready")
        deadline = time.monotonic() + 5
        while os.path.exists("/proc/%d" % host_pid) and time.monotonic() < deadline:
            time.sleep(0.02)
        self.assertFalse(os.path.exists("/proc/%d" % host_pid), "the run's process survived it")

    def test_each_run_sees_only_its_own_pid_namespace(self):
        # kill(pid, 0) names pids of the caller's namespace: G (1) and U (2) only, in every
        # run (a reused namespace would number on), none of an earlier run's processes
        z = Zygote(self, isolate=True)
        z.frames("ready")
        code = ("import os, subprocess\n"
                "subprocess.Popen(['sleep', '50'], start_new_session=True)\n"
                "def alive(p):\n"
                "    try:\n"
                "        os.kill(p, 0)\n"
                "        return True\n"
                "    except ProcessLookupError:\n"
                "        return False\n"
                "print([p for p in range(1, 2000) if alive(p)])")
        for _ in range(3):
            out, _, ev = z.run(code)
            self.assertEqual((out, ev[-1]["verdict"]), (b"[1, 2, 3]\n", "ok"), ev[-1])
            z.frames("ready")

    def test_verdicts_kills_and_statuses(self):
        z = Zygote(self, isolate=True)
        z.frames("ready")
        t0 = time.monotonic()
        _, _, ev = z.run("while True: pass", limits={"timeout_s": 0.5})
        self.assertEqual(ev[-1]["verdict"], "timeout")
        self.assertLess(time.monotonic() - t0, 5)
        z.frames("ready")
        _, _, ev = z.run("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)")
        self.assertEqual((ev[-1]["verdict"], ev[-1]["signal"]), ("signal", 11))
        z.frames("ready")
        _, _, ev = z.run("import os\nos._exit(3)")
        self.assertEqual((ev[-1]["verdict"], ev[-1]["exit_code"]), ("error", 3))
        self.assertIsInstance(ev[-1]["cpu_ms"], int)  # U's rusage, from F's wait4
        z.frames("ready")
        # PID 1 (G) ignores the run's signals; a fork bomb's orphans are reaped (nproc)
        out, _, ev = z.run("import os, signal, time\n"
                           "for i in range(40):\n"
                           "    pid = os.fork()\n"
                           "    if pid == 0:\n"
                           "        if os.fork() == 0:\n"
                           "            os._exit(0)\n"
                           "        os._exit(0)\n"
                           "    os.waitpid(pid, 0)\n"
                           "for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGSTOP, signal.SIGKILL):\n"
                           "    os.kill(1, sig)\n"
                           "time.sleep(0.1)\n"
                           "print('alive', os.getpid())", limits={"nproc": 16, "timeout_s": 60})
        self.assertEqual((ev[-1]["verdict"], out), ("ok", b"alive 2\n"), ev[-1])
        z.frames("ready")
        z.send({"op": "run", "id": "c", "code": "import os\nos.fork()\nimport time\ntime.sleep(30)"})
        z.frames("started")
        z.send({"op": "cancel", "id": "c"})
        self.assertEqual(z.frames("done")[-1][1]["verdict"], "cancelled")
        z.frames("ready")
        out, _, ev = z.run("print('next')")
        self.assertEqual((out, ev[-1]["verdict"]), (b"next\n", "ok"))
        z.send({"op": "exit"})
        self.assertEqual(z.proc.wait(20), 0)

    def test_forker_holds_nothing_of_past_runs(self):
        # F keeps a run's status pipe until G is reaped, and G's stack: after many runs it holds
        # the same descriptors and children as after one (the prepared run's G and U), one thread
        z = Zygote(self, isolate=True)
        z.frames("ready")

        def children(pid):
            with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
                return [int(x) for x in f.read().split()]

        f0 = children(z.proc.pid)
        self.assertEqual(len(f0), 1, f0)
        f = children(f0[0])
        self.assertEqual(len(f), 1, f)
        fpid = f[0]

        def state():
            return (len(os.listdir("/proc/%d/fd" % fpid)), len(children(fpid)),
                    os.listdir("/proc/%d/task" % fpid))

        def settled():
            # F lets go of a run's pipe once its G is reaped, which a loaded machine may delay:
            # the state once it has not changed for a second.
            last, since = state(), time.monotonic()
            while time.monotonic() < since + 20:
                time.sleep(0.1)
                now = state()
                if now != last:
                    last, since = now, time.monotonic()
                elif time.monotonic() - since >= 1.0:
                    break
            return last

        z.run("print(1)")
        z.frames("ready")
        after_one = settled()
        for i in range(8):
            z.run("import os\nif os.fork() == 0:\n    import time\n    time.sleep(30)\nprint(%d)" % i)
            z.frames("ready")
        # The same once the last runs' G are reaped (a leak never gets there).
        deadline = time.monotonic() + 20
        while state() != after_one and time.monotonic() < deadline:
            time.sleep(0.1)
        self.assertEqual(state(), after_one)
        self.assertEqual((after_one[1], after_one[2]), (2, [str(fpid)]))

    def test_session_mode(self):
        z = Zygote(self, isolate=True, mode="session")
        self.assertEqual(z.frames("ready")[-1][1]["run_tree"], "direct")
        _, _, ev = z.run("x = 41")
        self.assertEqual(ev[-1]["verdict"], "ok", ev[-1])
        z.frames("ready")
        out, _, ev = z.run("print(x + 1)")
        self.assertEqual(out, b"42\n")
        z.frames("ready")
        _, _, ev = z.run("import os\nos._exit(5)")
        self.assertTrue(ev[-1]["session_reset"], ev[-1])
        z.frames("ready")
        out, _, ev = z.run("print('x' in dir())")
        self.assertEqual((out, ev[-1]["verdict"]), (b"False\n", "ok"))

    def test_fresh_mode(self):
        z = Zygote(self, isolate=True, mode="fresh")
        z.frames("ready")
        out, _, ev = z.run("print('once')")
        self.assertEqual((out, ev[-1]["verdict"]), (b"once\n", "ok"))
        self.assertEqual(z.proc.wait(20), 0)


@unittest.skipUnless(user_namespaces_work(), "no user namespaces on this host")
class FallbackTest(unittest.TestCase):
    """Where the kernel (or a seccomp profile) refuses the direct tree, the zygote falls back
    to the intermediate tree at start-up; where namespaces are refused altogether, isolate
    "auto" falls back to plain processes and isolate true is fatal."""

    def test_setns_refused_gives_the_intermediate_tree(self):
        z = Zygote(self, isolate=True, preexec=seccomp_preexec(deny_filter("setns")))
        ready = z.frames("ready")[-1][1]
        self.assertEqual((ready["isolation"], ready["run_tree"], ready["errors"]),
                         ("namespaces", "intermediate", []))
        run = _probe(z)
        self.assertEqual((run["pid"], run["ppid"], len(run["nspid"])), (2, 0, 2), run)
        self.assertEqual(int(run["cap_eff"], 16), 0)
        _, _, ev = z.run("while True: pass", limits={"timeout_s": 0.5})
        self.assertEqual(ev[-1]["verdict"], "timeout")
        z.frames("ready")
        z.send({"op": "exit"})
        self.assertEqual(z.proc.wait(20), 0)
        self.assertIn(b"direct run tree is unavailable", z.proc.stderr.read())

    def test_run_process_set_up_refused_gives_the_intermediate_tree(self):
        # F's own namespaces work, but U's unshare(user|mount|ipc) is refused: the first
        # prepare fails, before any request, and the zygote starts an intermediate forker.
        bpf = deny_filter("unshare", CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWIPC)
        z = Zygote(self, isolate=True, preexec=seccomp_preexec(bpf))
        ready = z.frames("ready")[-1][1]
        self.assertEqual((ready["isolation"], ready["run_tree"]), ("namespaces", "intermediate"))
        run = _probe(z)
        self.assertEqual((run["pid"], len(run["nspid"])), (2, 2), run)

    def test_no_namespaces_auto_and_true(self):
        deny = seccomp_preexec(deny_filter("unshare"))
        z = Zygote(self, isolate="auto", preexec=deny)
        ready = z.frames("ready")[-1][1]
        self.assertEqual((ready["isolation"], ready["run_tree"]), ("process", "process"))
        self.assertIn("per-run namespaces unavailable", ready["errors"][0])
        out, _, ev = z.run("print(1)")
        self.assertEqual((out, ev[-1]["verdict"]), (b"1\n", "ok"))
        z = Zygote(self, isolate=True, preexec=deny)
        self.assertIn("per-run isolation failed", z.frames("fatal")[-1][1]["message"])


class ForkerKillTest(unittest.TestCase):
    def test_kill_message(self):
        import socket
        a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.addCleanup(b.close)
        f = forker.Forker(a, 0)
        f.kill(4242)
        self.assertEqual(b.recv(64), b"x4242")
        a.close()
        f.kill(4243)  # F gone: logged, not raised (its PID namespace is gone with it)


if __name__ == "__main__":
    unittest.main()
