"""Small OS helpers every process of the harness uses: its log, whole reads and writes,
descriptors, trees, and the standard streams."""

import io
import os
import stat
import sys


def log(message):
    """Harness diagnostics: the container's stderr, never the frame channel."""
    try:
        os.write(2, ("harness[%d]: %s\n" % (os.getpid(), message)).encode("utf-8", "replace"))
    except OSError:
        pass


def write_all(fd, data):
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def read_all(fd):
    chunks = []
    while True:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def write_file(path, text):
    fd = os.open(path, os.O_WRONLY)
    try:
        write_all(fd, text.encode())
    finally:
        os.close(fd)


def close_fds_except(keep):
    try:
        fds = [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:
        fds = list(range(1024))
    for fd in fds:
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


def remove_tree_contents(path, keep=()):
    """Deletes everything in `path` except the names in `keep`, fixing permissions on the way."""
    try:
        names = os.listdir(path)
    except OSError:
        return
    for name in names:
        if name in keep:
            continue
        full = os.path.join(path, name)
        try:
            st = os.lstat(full)
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode):
            try:
                os.chmod(full, 0o700)
            except OSError:
                pass
            remove_tree_contents(full)
            try:
                os.rmdir(full)
            except OSError:
                pass
        else:
            try:
                os.unlink(full)
            except OSError:
                pass


def fresh_stdio():
    sys.stdin = sys.__stdin__ = io.TextIOWrapper(
        io.BufferedReader(io.FileIO(0, "r", closefd=False)), encoding="utf-8",
        errors="surrogateescape")
    sys.stdout = sys.__stdout__ = io.TextIOWrapper(
        io.FileIO(1, "w", closefd=False), encoding="utf-8", errors="surrogateescape",
        write_through=True)
    sys.stderr = sys.__stderr__ = io.TextIOWrapper(
        io.FileIO(2, "w", closefd=False), encoding="utf-8", errors="backslashreplace",
        write_through=True)


def flush_stdio():
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:  # noqa: B902 - the user may have replaced or closed them
            pass
