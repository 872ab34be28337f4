"""The run's resource limits (kernel.py); its ctypes calls are exercised by test_isolation
(the sleeper init) and end to end by test_zygote*."""

import os
import resource
import unittest

import harness_config
from sandbox_harness import config, kernel, messages


class RlimitTest(unittest.TestCase):
    def test_memory_limit(self):
        cfg = config.parse_config(harness_config.config())
        self.assertEqual(cfg["limits"]["memory_bytes"], 0)
        run = messages.parse_run({"op": "run", "id": "a", "code": ""}, cfg)
        self.assertEqual(run["limits"]["memory_bytes"], 0)
        cfg = config.parse_config(harness_config.config({"limits": {"memory_bytes": 512 << 20}}))
        run = messages.parse_run({"op": "run", "id": "a", "code": ""}, cfg)
        self.assertEqual(run["limits"]["memory_bytes"], 512 << 20)
        # RLIMIT_DATA only for a budget narrowed below the pool's (the cgroup covers the rest).
        self.assertIsNone(kernel.narrowed_memory(run["limits"], cfg["limits"]))
        run = messages.parse_run({"op": "run", "id": "a", "code": "", "limits": {"memory_bytes": 64 << 20}},
                          cfg)
        self.assertEqual(kernel.narrowed_memory(run["limits"], cfg["limits"]), 64 << 20)
        self.assertEqual(kernel.narrowed_memory({"memory_bytes": 5}, {"memory_bytes": 0}), 5)
        self.assertIsNone(kernel.narrowed_memory({"memory_bytes": 0}, {"memory_bytes": 0}))
        self.assertIsNone(kernel.narrowed_memory({"memory_bytes": 9}, {"memory_bytes": 8}))

    def test_vm_data(self):
        status = "Name:\tpython\nVmPeak:\t  504424 kB\nVmData:\t  343612 kB\nVmStk:\t 548 kB\n"
        self.assertEqual(kernel.parse_vm_data(status), 343612 * 1024)
        self.assertIsNone(kernel.parse_vm_data("Name: x\n"))
        self.assertEqual(kernel.data_rlimit(100, 50), (150, 150 + kernel.DATA_HEADROOM))

    def test_set_rlimit_never_raises_the_hard_limit(self):
        _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if hard == resource.RLIM_INFINITY:
            self.skipTest("no finite hard limit to keep")
        pid = os.fork()
        if pid == 0:  # in a child: the limits change for good
            code = 1
            try:
                kernel._set_rlimit(resource, resource.RLIMIT_NOFILE, hard + 100)
                code = 0 if resource.getrlimit(resource.RLIMIT_NOFILE) == (hard, hard) else 2
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        self.assertEqual(status, 0)


class ForkBareTest(unittest.TestCase):
    """Kernel.fork_bare: a libc fork without CPython's at-fork hooks (the run's intermediate)."""

    def test_child_runs_python_and_skips_the_hooks(self):
        ran = []
        os.register_at_fork(after_in_child=lambda: ran.append("hook"))
        r, w = os.pipe()
        pid = kernel.Kernel().fork_bare()
        if pid == 0:
            try:
                os.close(r)
                os.write(w, ("%d %d" % (os.getppid(), len(ran))).encode())
            finally:
                os._exit(7)
        os.close(w)
        data = os.read(r, 64)
        os.close(r)
        _, status = os.waitpid(pid, 0)
        self.assertEqual(data, ("%d 0" % os.getpid()).encode())  # ran Python, no hook ran
        self.assertTrue(os.WIFEXITED(status))
        self.assertEqual(os.WEXITSTATUS(status), 7)


class SeccompProgramTest(unittest.TestCase):
    def test_built_once_per_filter(self):
        k = kernel.Kernel()
        bpf = b"\x06\x00\x00\x00\x00\x00\xff\x7f"  # ret ALLOW
        first = k.seccomp_program(bpf)
        self.assertEqual(k.seccomp_program(bpf), first)  # the zygote's, reused by each run
        other = bytes(bytearray(bpf))
        self.assertIsNot(other, bpf)
        self.assertNotEqual(k.seccomp_program(other), 0)  # another filter: built anew
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the filter loads (ALLOW: the child still runs)
            try:
                k.install_seccomp(other)
                os.write(w, b"ok")
            finally:
                os._exit(0)
        os.close(w)
        self.assertEqual(os.read(r, 8), b"ok")
        os.close(r)
        os.waitpid(pid, 0)
