"""Session mode's file operations in the run process (put, list, get, delete), on the work dir
by absolute path (the cell may have chdir'ed) and never through a symlink."""

import base64
import errno
import mimetypes
import os
import stat

from .osutil import write_all
from .workdir import walk_regular_files


class FileOpError(Exception):
    """A file operation failed for a reason the user should read (the reply's error)."""


def _resolve(workdir, rel, create=False):
    """The absolute path of `rel` (already validated) under workdir. Parent directories must be
    real directories: a symlink among them is refused, so an operation never leaves the work dir
    through one. create: missing parents are made (and the work dir itself, if the code removed
    it)."""
    if create:
        os.makedirs(workdir, mode=0o700, exist_ok=True)
    parts = rel.split("/")
    cur = workdir
    for i, part in enumerate(parts[:-1]):
        cur = os.path.join(cur, part)
        try:
            st = os.lstat(cur)
        except FileNotFoundError:
            if not create:
                raise FileOpError("no such file: %s" % rel)
            os.mkdir(cur, 0o755)
            continue
        if stat.S_ISLNK(st.st_mode):
            raise FileOpError(("cannot write %s: %s is a symbolic link" if create else
                               "not a regular file: %s (%s is a symbolic link)")
                              % (rel, "/".join(parts[:i + 1])))
        if not stat.S_ISDIR(st.st_mode):
            if create:
                raise FileOpError("cannot write %s: %s is not a directory"
                                  % (rel, "/".join(parts[:i + 1])))
            raise FileOpError("no such file: %s" % rel)
    return os.path.join(cur, parts[-1])


def _fs_size(path, default):
    """The size of the file system holding `path` (with isolate=false that is the container's
    /tmp, not the configured tmpfs size)."""
    try:
        st = os.statvfs(path)
        return st.f_blocks * st.f_frsize
    except OSError:
        return default


def _os_error_message(e, rel, workdir, tmpfs_bytes, fsize_bytes=None):
    if e.errno in (errno.ENOSPC, errno.EDQUOT):
        return "no space left in the session's file system (%d bytes)" % _fs_size(workdir,
                                                                                   tmpfs_bytes)
    if e.errno == errno.EFBIG:
        if fsize_bytes:
            return "cannot write %s: it is more than the limit of %d bytes per file" % (rel,
                                                                                     fsize_bytes)
        return "cannot write %s: it is more than the file size limit" % rel
    return "cannot write %s: %s" % (rel, e.strerror or e)


def put_files(workdir, files, tmpfs_bytes, fsize_bytes=None):
    """Writes [(rel, bytes)] under workdir, replacing existing files (a symlink is replaced, not
    followed). FileOpError on failure; a file that did not fit is removed, earlier ones stay."""
    for rel, data in files:
        try:
            path = _resolve(workdir, rel, create=True)
            try:
                st = os.lstat(path)
            except FileNotFoundError:
                st = None
            if st is not None and stat.S_ISDIR(st.st_mode):
                raise FileOpError("cannot write %s: it is a directory" % rel)
            if st is not None:
                os.unlink(path)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
            try:
                write_all(fd, data)
            except OSError:
                os.close(fd)
                fd = None
                try:
                    os.unlink(path)  # a partial file would only hold the space that is lacking
                except OSError:
                    pass
                raise
            finally:
                if fd is not None:
                    os.close(fd)
        except OSError as e:
            raise FileOpError(_os_error_message(e, rel, workdir, tmpfs_bytes, fsize_bytes))


def list_files(workdir, max_entries):
    """The work dir's regular files, sorted by path: ({path, size, mime_type, mtime}, truncated)."""
    found, truncated = walk_regular_files(workdir)
    out = [{"path": rel, "size": st.st_size,
            "mime_type": mimetypes.guess_type(rel)[0] or "application/octet-stream",
            "mtime": st.st_mtime_ns / 1e9} for rel, st in found[:max_entries]]
    return out, truncated or len(found) > max_entries


def get_file(workdir, rel, max_bytes):
    path = _resolve(workdir, rel)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        raise FileOpError("no such file: %s" % rel)
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.ENXIO, errno.EISDIR):
            raise FileOpError("not a regular file: %s" % rel)
        raise FileOpError("cannot read %s: %s" % (rel, e.strerror or e))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise FileOpError("not a regular file: %s" % rel)
        if st.st_size > max_bytes:
            raise FileOpError("%s is %d bytes, more than the limit of %d bytes"
                              % (rel, st.st_size, max_bytes))
        chunks, total = [], 0
        while total <= max_bytes:
            chunk = os.read(fd, min(max_bytes + 1 - total, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    finally:
        os.close(fd)
    if total > max_bytes:  # it grew meanwhile (a thread of the cell is writing it)
        raise FileOpError("%s is more than the limit of %d bytes (it grew while being read)"
                          % (rel, max_bytes))
    data = b"".join(chunks)
    return {"path": rel, "size": len(data),
            "mime_type": mimetypes.guess_type(rel)[0] or "application/octet-stream",
            "data_b64": base64.b64encode(data).decode("ascii")}


def delete_file(workdir, rel):
    path = _resolve(workdir, rel)
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        raise FileOpError("no such file: %s" % rel)
    if not stat.S_ISREG(st.st_mode):
        raise FileOpError("not a regular file: %s" % rel)
    try:
        os.unlink(path)
    except OSError as e:
        raise FileOpError("cannot delete %s: %s" % (rel, e.strerror or e))
    return {"path": rel}
