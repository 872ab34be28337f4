#!/usr/bin/env python3
"""CPU per one-shot run of the harness alone (no server), A/B: one container per packed harness
(tests/harness/drive.py's container and dev seccomp filter, recycle mode, namespaces on), runs
of the same code alternated between them one by one, each waiting for its container's next
`ready`, so load from elsewhere hits every harness alike. Per harness and run: the container's
CPU (cgroup v1 cpuacct.usage, whole container: zygote, forker, every run process and their
teardown), its page faults (memory.stat pgfault), U's cpu_ms and duration_ms.

    cmake -DPACKAGE_DIR=src/harness/sandbox_harness -DLOADER=src/harness/loader.py \\
          -DOUTPUT=/tmp/new.py -P cmake/pack_harness.cmake      # likewise /tmp/old.py from main
    python3 bench/harness_ab.py /tmp/old.py /tmp/new.py [--n 150] [--code 'print(1)']

Needs the Docker engine with cgroup v1 (cgroup v2: read cpu.stat and memory.stat of the
container's cgroup instead) and the image sandbox-mcp-python:latest.
"""
import argparse
import os
import subprocess
import sys
import types

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "harness"))
import drive  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("harness", nargs="+", help="packed harness files (cmake/pack_harness.cmake)")
    ap.add_argument("--n", type=int, default=150, help="measured runs per harness")
    ap.add_argument("--code", default="print(1)")
    a = ap.parse_args()
    sessions = []
    try:
        for i, h in enumerate(a.harness):
            name = "harness-ab-%d-%d" % (os.getpid(), i)
            opts = types.SimpleNamespace(
                container_seccomp=drive.POLICY, image=drive.IMAGE, harness=h, mode="recycle",
                isolate=True, no_run_seccomp=False, config="{}",
                docker_arg=["--name", name, "--memory", "1g", "--memory-swap", "1g",
                            "--pids-limit", "256"])
            sessions.append((h, name, drive.Session(opts)))
        cgroup = {}
        for _, name, s in sessions:
            s.wait_event("ready", 300)
            cgroup[name] = subprocess.check_output(
                ["docker", "inspect", "-f", "{{.Id}}", name]).decode().strip()

        def sample(name):
            cid = cgroup[name]
            with open("/sys/fs/cgroup/cpuacct/docker/%s/cpuacct.usage" % cid) as f:
                cpu_ms = int(f.read()) / 1e6
            with open("/sys/fs/cgroup/memory/docker/%s/memory.stat" % cid) as f:
                faults = int(dict(line.split() for line in f)["pgfault"])
            return cpu_ms, faults

        for _ in range(20):  # warm-up
            for _, _, s in sessions:
                s.run(a.code)
                s.wait_event("ready")
        acc = {name: [0.0, 0, 0, []] for _, name, _ in sessions}
        with open("/proc/loadavg") as f:
            load0 = f.read().split()[0]
        for i in range(a.n):
            for _, name, s in (sessions if i % 2 == 0 else sessions[::-1]):
                c0 = sample(name)
                r = s.run(a.code)
                if r.verdict != "ok":
                    raise RuntimeError("%s: %s" % (name, r.done))
                s.wait_event("ready")
                c1 = sample(name)
                x = acc[name]
                x[0] += c1[0] - c0[0]
                x[1] += c1[1] - c0[1]
                x[2] += r.done.get("cpu_ms") or 0
                x[3].append(r.done["duration_ms"])
        for h, name, _ in sessions:
            x = acc[name]
            print("%-28s container CPU %.1f ms/run, %d page faults/run, U cpu_ms %.1f, "
                  "duration_ms p50 %d" % (os.path.basename(h), x[0] / a.n, x[1] / a.n,
                                           x[2] / a.n, sorted(x[3])[a.n // 2]))
        with open("/proc/loadavg") as f:
            print("n=%d per harness, interleaved; load average at start %s, at end %s"
                  % (a.n, load0, f.read().split()[0]))
    finally:
        for _, _, s in sessions:
            s.close()


if __name__ == "__main__":
    main()
