"""The forker F: the only process that forks run children once requests arrive.

Every run's processes are forked from F, never from Z: Z receives the requests and relays
output and result records, and its freed heap keeps those bytes, so a child of Z could read
earlier runs' code, files and output in its own (copied) memory. F is forked right after the
preload, before any request, and never receives request data: its commands are one byte (and
a kill names a run's init by its pid).

F serves one of two trees, named in its first message (the hello): "direct" (F in a user and
PID namespace of its own forks each run's G and U straight into a fresh PID namespace,
forker_ns.py) or "intermediate" (F forks an intermediate I per run, isolation.py; also the
tree of isolate=false, without namespaces)."""

import array
import json
import os
import select
import signal
import socket

from .errors import FatalError
from .forker_ns import DirectTrees, enter_forker_namespaces
from .forker_sweep import (FORKER_REAP_WAIT_S, forker_cleanup, kill_all_but, reap_nohang,
                           reap_within)
from .isolation import ChildSpec, handled_signals, intermediate
from .kernel import PR_SET_PDEATHSIG
from .osutil import flush_stdio, log
from .pip_site import for_run as pip_site_for_run
from .run_process import EX_INTERNAL
from .wire import encode_json

FORKER_PREPARE_ISOLATED = b"i"  # create the pipes, fork I with namespaces
FORKER_PREPARE_PROCESS = b"p"  # isolate=false: clean up after the last run first, then fork I
FORKER_SWEEP = b"k"  # isolate=false: kill every process but PID 1, Z and F
FORKER_CLEANUP = b"c"  # isolate=false: sweep and clean /tmp, /dev/shm, /dev/mqueue, the work dir
FORKER_PREPARE_DIRECT = b"d"  # the direct tree: create the pipes, G and U in a new PID namespace
FORKER_KILL = b"x"  # the direct tree: b"x<G's pid>", kill that run's tree (no answer)
TREE_DIRECT = "direct"
TREE_INTERMEDIATE = "intermediate"
FORKER_PIPES = 5  # req_w, out_r, err_r, res_r, st_r: the parent ends passed to Z
# ... and in_w, the run's stdin channel, when the config has interactive_input
FORKER_REPLY_MAX = 4096


def send_fds(sock, data, fds):
    """sendmsg with SCM_RIGHTS (socket.send_fds is Python >= 3.9; the harness supports 3.8)."""
    anc = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds).tobytes())] if fds else []
    sock.sendmsg([data], anc)


def recv_fds(sock, max_data, max_fds):
    """One message and the descriptors passed with it (close-on-exec: MSG_CMSG_CLOEXEC)."""
    data, anc, flags, _ = sock.recvmsg(max_data, socket.CMSG_SPACE(max_fds * 4),
                                       getattr(socket, "MSG_CMSG_CLOEXEC", 0))
    fds = array.array("i")
    for level, kind, payload in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[:len(payload) - len(payload) % fds.itemsize])
    if flags & getattr(socket, "MSG_CTRUNC", 0):
        for fd in fds:
            os.close(fd)
        raise OSError("the forker's message lost descriptors (MSG_CTRUNC)")
    return data, list(fds)


class ForkerState:
    """What F needs of the zygote's start-up state (config, kernel, matplotlib seed)."""

    def __init__(self, **kw):
        self.__dict__.update(kw)


def _run_pipes(fs):
    """One run's pipes: (the child's ends by ChildSpec field, the parent's ends in the order Z
    takes them). The stdin channel exists only for pools with interactive input."""
    req_r, req_w = os.pipe()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    res_r, res_w = os.pipe()
    st_r, st_w = os.pipe()
    in_r, in_w = os.pipe() if fs.cfg["interactive_input"] else (None, None)
    child = {"req_r": req_r, "out_w": out_w, "err_w": err_w, "res_w": res_w, "st_w": st_w,
             "in_r": in_r}
    return child, [req_w, out_r, err_r, res_r, st_r] + ([in_w] if in_w is not None else [])


def _pip_site(fs, isolate):
    """The run's pip_site plan: only where the run's /tmp is its own (pip_site.for_run)."""
    return pip_site_for_run(getattr(fs, "pip_site", None), isolate,
                            getattr(fs, "in_container", False), getattr(fs, "tmp_keep", ()))


def _forker_spawn(fs, isolate, children):
    """Creates the run child I with its pipes; returns (I's pid, the parent ends)."""
    child, parent = _run_pipes(fs)
    spec = ChildSpec(cfg=fs.cfg, kernel=fs.kernel, isolate=isolate, parent_pid=os.getpid(),
                     mpl_seed=fs.mpl_seed, init_signals=getattr(fs, "init_signals", None),
                     pip_site=_pip_site(fs, isolate), **child)
    # I runs harness code only, on one thread: CPython's at-fork work is not needed there (the
    # run process U, forked by I, gets it from os.fork).
    pid = fs.kernel.fork_bare()
    if pid == 0:
        try:
            os.close(fs.sock_fd)
            intermediate(spec)
        finally:
            os._exit(EX_INTERNAL)
    children.add(pid)
    for fd in spec.child_fds() + [spec.st_w]:
        os.close(fd)
    return pid, parent


def _forker_spawn_direct(fs, trees):
    """The direct tree: the pipes, then G and U in a fresh PID namespace (DirectTrees.spawn).
    Returns (G's pid, the parent ends); F keeps the status pipe's write end."""
    child, parent = _run_pipes(fs)
    spec = ChildSpec(cfg=fs.cfg, kernel=fs.kernel, isolate=True, parent_pid=None,
                     mpl_seed=fs.mpl_seed, init_signals=fs.init_signals,
                     pip_site=_pip_site(fs, True), **child)
    spec.forker_fds = [fs.sock_fd, spec.st_w] + parent + trees.own_fds()
    try:
        gpid = trees.spawn(spec)  # the tree owns st_w from G's creation on (spec.st_w None)
    except BaseException:  # noqa: B902
        for fd in parent + ([spec.st_w] if spec.st_w is not None else []):
            os.close(fd)
        raise
    finally:
        for fd in spec.child_fds():
            os.close(fd)
    return gpid, parent


def _forker_main(sock, fs, trees=None):
    """F: serves Z's one-byte commands until Z closes the socket (or dies: PDEATHSIG). trees:
    the direct tree's DirectTrees (F is then PID 1 of its namespace), else None."""
    if trees is None:
        fs.kernel.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != fs.zygote_pid:
            os._exit(0)
        fs.init_signals = handled_signals()
    fs.sock_fd = sock.fileno()
    sock.send(encode_json({"tree": TREE_DIRECT if trees is not None else TREE_INTERMEDIATE}))
    children = set()
    while True:
        if trees is not None:
            r, _, _ = select.select([sock, trees.wake_r], [], [])
            trees.drain_wake()
            trees.reap()
        else:
            r, _, _ = select.select([sock], [], [], 0.5 if children else None)
            reap_nohang(children)
        if sock not in r:
            continue
        try:
            cmd = sock.recv(64)
        except OSError:
            break
        if not cmd:
            break
        if trees is not None and cmd[:1] == FORKER_KILL:
            try:
                trees.kill(int(cmd[1:]))
            except ValueError:
                log("forker: a kill without a pid: %r" % cmd)
            continue
        try:
            if trees is not None and cmd == FORKER_PREPARE_DIRECT:
                # The last run's tree is killed by now; its dying processes would count against
                # the next run's pids and memory limits, so the next run starts once they are gone.
                trees.wait_gone(FORKER_REAP_WAIT_S)
                gpid, fds = _forker_spawn_direct(fs, trees)
                _send_prepared(sock, {"pid": None, "gpid": gpid}, fds)
            elif trees is None and cmd in (FORKER_PREPARE_ISOLATED, FORKER_PREPARE_PROCESS):
                reap_within(children, FORKER_REAP_WAIT_S)  # as above
                if cmd == FORKER_PREPARE_PROCESS:
                    forker_cleanup(fs, children)
                pid, fds = _forker_spawn(fs, cmd == FORKER_PREPARE_ISOLATED, children)
                _send_prepared(sock, {"pid": pid}, fds)
            elif trees is None and cmd == FORKER_SWEEP:
                if fs.in_container:
                    kill_all_but({1, fs.zygote_pid, os.getpid()}, children=children)
                sock.send(encode_json({"ok": True}))
            elif trees is None and cmd == FORKER_CLEANUP:
                forker_cleanup(fs, children)
                sock.send(encode_json({"ok": True}))
            else:
                sock.send(encode_json({"error": "unknown forker command %r" % cmd}))
        except Exception as e:  # reported to Z, which decides (fatal)
            try:
                sock.send(encode_json({"error": "%s: %s" % (type(e).__name__, e)}))
            except OSError:
                break
    # Z is gone or exiting: wait for the children (their address spaces' teardown), then exit.
    if trees is not None:
        trees.kill_all()
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            break
    os._exit(0)


def _send_prepared(sock, reply, fds):
    try:
        send_fds(sock, encode_json(reply), fds)
    finally:
        for fd in fds:
            os.close(fd)


def _forker_direct(sock, fs):
    """F0, forked by Z: the forker's namespaces, then F (PID 1 in them) serves Z; F0 waits for
    it. Where the namespaces cannot be made, the hello is an error (Z then starts the
    intermediate tree's forker instead)."""
    k = fs.kernel
    k.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != fs.zygote_pid:
        os._exit(0)
    fs.init_signals = handled_signals()
    try:
        enter_forker_namespaces(k)
        # F runs harness code on one thread, like I: forked through libc alone (F0 already ran
        # CPython's at-fork hooks; running them again would only copy another ~1.4 MB of pages)
        pid = k.fork_bare()
    except OSError as e:
        sock.send(encode_json({"error": "the forker's namespaces: %s" % e}))
        os._exit(0)
    if pid == 0:  # F: its parent F0 is outside its PID namespace (getppid() is 0); F0 dies
        k.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # with Z, and F, PID 1, takes the runs along
        try:
            trees = DirectTrees(k, fs.init_signals)
        except OSError as e:
            sock.send(encode_json({"error": "the forker's PID namespace: %s" % e}))
            os._exit(0)
        _forker_main(sock, fs, trees)
    sock.close()
    k.drop_capabilities()  # F0 only waits
    while True:
        try:
            os.waitpid(pid, 0)
            break
        except ChildProcessError:
            break
    os._exit(0)


class Forker:
    """Z's end of F."""

    def __init__(self, sock, pid):
        self.sock = sock
        self.pid = pid
        self.tree = None  # TREE_DIRECT or TREE_INTERMEDIATE, from F's hello

    @classmethod
    def start(cls, fs, close_in_child, direct=False):
        """Forks F (direct: F0, which makes F in the forker's namespaces) and reads its hello.
        Raises FatalError when F cannot serve (direct: the namespaces are unavailable)."""
        zsock, fsock = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        flush_stdio()
        pid = os.fork()
        if pid == 0:
            try:
                zsock.close()
                for fd in close_in_child:
                    os.close(fd)
                if direct:
                    _forker_direct(fsock, fs)
                _forker_main(fsock, fs)
            finally:
                os._exit(EX_INTERNAL)
        fsock.close()
        forker = cls(zsock, pid)
        try:
            hello, _ = forker._command(None)
        except FatalError:
            forker.close()
            raise
        forker.tree = hello.get("tree")
        return forker

    def _command(self, cmd, nfds=0):
        """Sends cmd (None: nothing, F's hello is read) and returns F's answer and descriptors."""
        try:
            if cmd is not None:
                self.sock.send(cmd)
            data, fds = recv_fds(self.sock, FORKER_REPLY_MAX, nfds)
        except OSError as e:
            raise FatalError("the forker does not answer: %s" % e)
        if not data:
            raise FatalError("the forker exited")
        try:
            reply = json.loads(data.decode("utf-8"))
        except ValueError:
            reply = {"error": "invalid answer"}
        if "error" in reply or len(fds) != nfds:
            for fd in fds:
                os.close(fd)
            raise FatalError("the forker failed: %s" % reply.get("error", "wrong descriptors"))
        return reply, fds

    def prepare(self, isolate, stdin):
        """A new run child: (I's pid or None, G's pid or None, [req_w, out_r, err_r, res_r, st_r]
        plus in_w if stdin). The direct tree has no I; G's pid is F's name for the tree."""
        if self.tree == TREE_DIRECT:
            cmd = FORKER_PREPARE_DIRECT
        else:
            cmd = FORKER_PREPARE_ISOLATED if isolate else FORKER_PREPARE_PROCESS
        reply, fds = self._command(cmd, FORKER_PIPES + (1 if stdin else 0))
        ipid, gpid = reply.get("pid"), reply.get("gpid")
        return (int(ipid) if ipid is not None else None, int(gpid) if gpid is not None else None,
                fds)

    def kill(self, gpid):
        """The direct tree: F kills the tree whose init is gpid (a pid of F's namespace). No
        answer. When F is gone, so is its PID namespace with every run in it."""
        try:
            self.sock.send(FORKER_KILL + b"%d" % gpid)
        except OSError as e:
            log("the forker did not take a kill: %s" % e)

    def sweep(self):
        self._command(FORKER_SWEEP)

    def cleanup(self):
        self._command(FORKER_CLEANUP)

    def close(self):
        """F reaps its children and exits when the socket closes; wait for it."""
        self.sock.close()
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass
