"""The intermediate tree's forker's housekeeping: reaping its run children (bounded, before
the next run), and with isolate=false what the last run left (processes, /tmp, /dev/shm, message
queues, the work dir)."""

import os
import signal
import time

from .osutil import remove_tree_contents


def proc_state(pid):
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            text = f.read()
        return text[text.rindex(b")") + 2:][:1]
    except (OSError, ValueError):
        return b""


def kill_all_but(spare, rounds=100, children=None):
    """SIGKILL to every process this one may signal except `spare` (kill(-1) would also spare
    only the caller and PID 1: with docker-init as PID 1 it would kill the zygote). Repeated until
    a scan finds no live process left (bounded: a fork loop cannot outrun SIGKILL for long)."""
    for _ in range(rounds):
        live = 0
        try:
            names = os.listdir("/proc")
        except OSError:
            return
        for name in names:
            if not name.isdigit() or int(name) in spare:
                continue
            pid = int(name)
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                continue
            if proc_state(pid) not in (b"Z", b"X", b""):
                live += 1
        reap_nohang(children)
        if not live:
            return
        time.sleep(0.005)


def reap_nohang(children=None):
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        if children is not None:
            children.discard(pid)


# How long F waits for the last run's processes to go before preparing the next run anyway.
FORKER_REAP_WAIT_S = 2.0


def reap_within(children, seconds):
    """Reaps `children` until none is left or `seconds` have passed."""
    deadline = time.monotonic() + seconds
    reap_nohang(children)
    while children and time.monotonic() < deadline:
        time.sleep(0.002)
        reap_nohang(children)


def forker_cleanup(fs, children=None):
    """isolate=false: what the last run left (processes, /tmp, /dev/shm, queues, work dir)."""
    if fs.in_container:
        kill_all_but({1, fs.zygote_pid, os.getpid()}, children=children)
        remove_tree_contents("/tmp", keep=fs.tmp_keep)
        remove_tree_contents("/dev/shm")
        remove_tree_contents("/dev/mqueue")  # unlinking a queue's file is mq_unlink
    else:  # a developer's host (tests): never touch a shared /tmp, only the work dir
        remove_tree_contents(fs.cfg["workdir"])
    os.makedirs(fs.cfg["workdir"], mode=0o700, exist_ok=True)
