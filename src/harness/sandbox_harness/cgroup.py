"""The container's cgroup as the harness reads it: memory use for `ready` and `pong`, and the
OOM counters that tell a run killed for memory from one killed otherwise. cgroup v1 and v2."""

import os


def read_memory_usage(root="/sys/fs/cgroup"):
    """The container cgroup's current memory usage in bytes (v1 memory.usage_in_bytes, v2
    memory.current), or None."""
    for rel in (("memory", "memory.usage_in_bytes"), ("memory.current",)):
        try:
            with open(os.path.join(root, *rel)) as f:
                return int(f.read().strip())
        except (OSError, ValueError):
            continue
    return None


def read_cgroup_baseline(root="/sys/fs/cgroup"):
    """What the harness itself holds of the container's cgroup, for `ready`: {"memory_bytes":
    the working set (usage minus inactive page cache, as `docker stats` counts it), "pids":
    tasks}, each None when unreadable. The server narrows the container to this plus the run's
    limits, so the limits are the run's own (the harness's processes and the prepared run
    process are counted here)."""
    out = {"memory_bytes": None, "pids": None}
    usage = read_memory_usage(root)
    if usage is not None:
        inactive = 0
        for rel, key in ((("memory", "memory.stat"), "total_inactive_file"),
                         (("memory.stat",), "inactive_file")):
            try:
                with open(os.path.join(root, *rel)) as f:
                    inactive = parse_counters(f.read()).get(key, 0)
                break
            except OSError:
                continue
        out["memory_bytes"] = max(usage - inactive, 0)
    for rel in (("pids", "pids.current"), ("pids.current",)):
        try:
            with open(os.path.join(root, *rel)) as f:
                out["pids"] = int(f.read().strip())
            break
        except (OSError, ValueError):
            continue
    return out


def parse_counters(text):
    """'key value' lines (memory.oom_control, memory.events) -> {key: int}."""
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2:
            try:
                out[parts[0]] = int(parts[1])
            except ValueError:
                pass
    return out


def read_memory_counters(root="/sys/fs/cgroup"):
    """The container cgroup's OOM-kill count and limit-hit count; None where not visible.
    cgroup v1: memory/memory.oom_control `oom_kill`, memory/memory.failcnt.
    cgroup v2: memory.events `oom_kill` and `max`."""

    def read(path):
        # os.open/os.read: a third of the system calls of open(), twice per run.
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return None
        try:
            return os.read(fd, 4096).decode("ascii", "replace")
        except OSError:
            return None
        finally:
            os.close(fd)

    v1 = read(os.path.join(root, "memory", "memory.oom_control"))
    if v1 is not None:
        fail = read(os.path.join(root, "memory", "memory.failcnt"))
        try:
            hits = int(fail) if fail is not None else None
        except ValueError:
            hits = None
        return {"oom_kill": parse_counters(v1).get("oom_kill"), "limit_hits": hits}
    v2 = read(os.path.join(root, "memory.events"))
    if v2 is not None:
        c = parse_counters(v2)
        return {"oom_kill": c.get("oom_kill"), "limit_hits": c.get("max")}
    return {"oom_kill": None, "limit_hits": None}


def counter_delta(before, after, key):
    a, b = before.get(key), after.get(key)
    if a is None or b is None:
        return 0
    return max(b - a, 0)
