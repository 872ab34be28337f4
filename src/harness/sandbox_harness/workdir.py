"""The work dir as the run process sees it: the request's files written in, and the files the
run leaves collected and sent out in pieces. Nothing here follows a symlink or opens anything
but a regular file or a directory (the code may have built any tree)."""

import base64
import hashlib
import mimetypes
import os
import stat

from .checks import result_path_error
from .config import WALK_BOUNDS
from .osutil import write_all

# A returned file travels in pieces of this many bytes (a multiple of 3: whole base64 quanta),
# from the run process through the zygote to the server, so no side holds a whole file.
FILE_PIECE = 3 << 18


def plan_files_out(candidates, max_count, max_total_bytes):
    """candidates: [(path, size, unchanged_input)] in order. Returns (paths to send, truncated).
    Unchanged input files are skipped silently; files that do not fit are skipped and set
    truncated (later, smaller files may still fit)."""
    chosen = []
    total = 0
    truncated = False
    for path, size, unchanged in candidates:
        if unchanged:
            continue
        if len(chosen) >= max_count or total + size > max_total_bytes:
            truncated = True
            continue
        chosen.append(path)
        total += size
    return chosen, truncated


def write_inputs(files):
    """Writes the request's files under the cwd; returns {path: sha256}."""
    hashes = {}
    for path, data in files:
        parent = os.path.dirname(path)
        if parent:
            os.makedirs(parent, mode=0o755, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        try:
            write_all(fd, data)
        finally:
            os.close(fd)
        hashes[path] = hashlib.sha256(data).hexdigest()
    return hashes


def _sha256_file(path, limit):
    """SHA-256 of the regular file at path (None if it is not one), read in chunks."""
    fd = open_regular(path)
    if fd is None:
        return None
    h = hashlib.sha256()
    try:
        while True:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            h.update(chunk)
    finally:
        os.close(fd)
    return h.hexdigest()


def collect_files(workdir, input_hashes, files_cfg, sender):
    """Sends the files the run left in the work dir; returns files_truncated."""
    candidates = []
    found, walk_truncated = walk_regular_files(workdir)
    for rel, st in found:
        unchanged = False
        if rel in input_hashes:
            try:
                unchanged = _sha256_file(os.path.join(workdir, rel), st.st_size) == input_hashes[rel]
            except OSError:
                pass
        candidates.append((rel, st.st_size, unchanged))
    return send_files(workdir, candidates, files_cfg, sender) or walk_truncated


def send_files(workdir, candidates, files_cfg, sender):
    """candidates: [(path, size, unchanged)] in path order. Sends the chosen ones as `file`
    records; returns files_truncated (also when a chosen file is no longer a regular file)."""
    chosen, truncated = plan_files_out(candidates, files_cfg["max_count"],
                                       files_cfg["max_total_bytes"])
    sizes = {path: size for path, size, _ in candidates}
    for rel in chosen:
        mime = mimetypes.guess_type(rel)[0] or "application/octet-stream"
        if not send_file_pieces(os.path.join(workdir, rel), rel, sizes[rel], mime, sender):
            truncated = True
    return truncated


def send_file_pieces(full, rel, max_bytes, mime, sender):
    """Sends at most max_bytes of the regular file at `full` as `file` records of FILE_PIECE
    bytes each, the last one marked: collecting a file costs the run's memory one piece, not
    the file's size several times over (file, base64, JSON). False when it is not a regular file
    any more (nothing is sent then). A file growing while read stops at max_bytes; one
    shrinking gives fewer bytes."""
    fd = open_regular(full)
    if fd is None:
        return False
    try:
        offset, piece = 0, b""
        while True:
            # One piece ahead, so the record that ends the file says so.
            nxt = os.read(fd, min(FILE_PIECE, max_bytes - offset - len(piece))) \
                if offset + len(piece) < max_bytes else b""
            if offset > 0 or piece:
                last = not nxt
                sender.send({"t": "file", "path": rel, "mime_type": mime, "offset": offset,
                             "last": last, "data_b64": base64.b64encode(piece).decode("ascii")})
                offset += len(piece)
                if last:
                    return True
            elif not nxt:  # an empty file: one record
                sender.send({"t": "file", "path": rel, "mime_type": mime, "offset": 0,
                             "last": True, "data_b64": ""})
                return True
            piece = nxt
    except OSError:
        return False
    finally:
        os.close(fd)


def walk_regular_files(workdir, max_entries=None, max_depth=None):
    """([(relative path, lstat)] of the regular files under workdir sorted by path, truncated).
    Symlinks are neither followed nor listed, nor are FIFOs, sockets or devices (nothing is
    opened but directories, relative to their parent's descriptor: no path length limit, no
    symlink swapped in). Bounded: at most max_entries entries looked at and max_depth levels;
    a name that is not a valid result path (result_path_error: not UTF-8, control characters,
    too long) is skipped. Each bound or skip sets truncated. The bounds default to the
    config's (WALK_BOUNDS)."""
    if max_entries is None:
        max_entries = WALK_BOUNDS["max_entries"]
    if max_depth is None:
        max_depth = WALK_BOUNDS["max_depth"]
    out = []
    state = {"seen": 0, "truncated": False}
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    try:
        top = os.open(workdir, flags)
    except OSError:
        return out, False

    def visit(dfd, prefix, depth):
        try:
            with os.scandir(dfd) as it:
                entries = []
                for entry in it:
                    state["seen"] += 1
                    if state["seen"] > max_entries:
                        state["truncated"] = True
                        break
                    entries.append(entry)
        except OSError:
            state["truncated"] = True
            return
        entries.sort(key=lambda e: e.name)
        for entry in entries:
            rel = prefix + entry.name
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
                is_reg = not is_dir and entry.is_file(follow_symlinks=False)
            except OSError:
                continue
            if not (is_dir or is_reg):
                continue  # symlinks and special files: skipped by definition
            if result_path_error(rel) is not None:
                state["truncated"] = True
                continue
            if is_reg:
                try:
                    out.append((rel, entry.stat(follow_symlinks=False)))
                except OSError:
                    pass
                continue
            if depth + 1 >= max_depth or state["seen"] > max_entries:
                state["truncated"] = True
                continue
            try:
                sub = os.open(entry.name, flags, dir_fd=dfd)
            except OSError:
                state["truncated"] = True  # e.g. out of descriptors, or unreadable
                continue
            try:
                visit(sub, rel + "/", depth + 1)
            finally:
                os.close(sub)

    try:
        visit(top, "", 0)
    finally:
        os.close(top)
    out.sort(key=lambda e: e[0])
    return out, state["truncated"]


def open_regular(path):
    """A read descriptor of the regular file at path, or None: never follows a symlink at the
    end, never blocks (a FIFO swapped in after the walk), and checks the type once open."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            os.set_blocking(fd, True)
            return fd
    except OSError:
        pass
    os.close(fd)
    return None


def read_regular(path, max_bytes):
    """At most max_bytes of the regular file at path (a file growing while read stops there;
    one shrinking gives fewer), or None when it is not a regular file any more."""
    fd = open_regular(path)
    if fd is None:
        return None
    try:
        chunks, left = [], max_bytes
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def snapshot_files(workdir):
    """{path: (size, mtime_ns, inode)} of the work dir's regular files, in path order."""
    return {rel: (st.st_size, st.st_mtime_ns, st.st_ino)
            for rel, st in walk_regular_files(workdir)[0]}


def changed_files(before, after):
    """Session cells report the regular files that are new or changed: `before` and `after` map
    a relative path to (size, mtime_ns, inode). Returns the changed paths in `after`'s order."""
    return [path for path, sig in after.items() if before.get(path) != sig]
