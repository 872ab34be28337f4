"""The server's requests: `run`, `session` and the file ops, checked before anything runs.
Structural errors are the server's (ProtocolError); bad files or paths are the request author's
(InputError, answered in the run's or the op's result)."""

import base64
import binascii

from .config import PATH_BOUNDS, dict_field, is_int, parse_limits
from .errors import InputError, ProtocolError

FILE_OPS = ("put_files", "list_files", "get_file", "delete_file")


def parse_run(msg, cfg):
    """A `run` message -> a run dict. Structural errors are a ProtocolError; the files are checked
    separately by validate_input_files (their errors belong to the run, not the protocol)."""
    rid = msg.get("id")
    if not isinstance(rid, str) or not rid or len(rid) > 256:
        raise ProtocolError("run.id must be a non-empty string of at most 256 characters")
    code = msg.get("code")
    if not isinstance(code, str):
        raise ProtocolError("run.code must be a string")
    argv = msg.get("argv", [])
    if argv is None:
        argv = []
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
        raise ProtocolError("run.argv must be a list of strings")
    files = msg.get("files", [])
    if files is None:
        files = []
    if not isinstance(files, list):
        raise ProtocolError("run.files must be a list")
    limits = parse_limits(dict_field(msg, "limits", "run", required=False), cfg["limits"], "run.limits")
    stdin = msg.get("stdin", "eof")
    if stdin not in ("eof", "interactive"):
        raise ProtocolError("run.stdin must be \"eof\" or \"interactive\"")
    if not cfg["interactive_input"]:
        stdin = "eof"  # no stdin channel in this container: EOF, as before protocol v4
    return {"id": rid, "code": code, "argv": argv, "files": files, "limits": limits,
            "stdin": stdin}


def validate_rel_path(path):
    """A request/result file path -> its normalized relative form; InputError if it could leave the
    work dir (absolute, `..`, NUL) or is empty or too long."""
    if not isinstance(path, str) or not path:
        raise InputError("file path must be a non-empty string")
    if "\x00" in path:
        raise InputError("file path %r contains a NUL byte" % path)
    if path.startswith("/"):
        raise InputError("file path %r is absolute; only paths relative to the work dir are allowed"
                         % path)
    max_path, max_name = PATH_BOUNDS["max_path_bytes"], PATH_BOUNDS["max_name_bytes"]
    if len(path.encode("utf-8", "surrogateescape")) > max_path:
        raise InputError("file path %r is longer than %d bytes" % (path[:64], max_path))
    parts = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            raise InputError("file path %r contains '..'" % path)
        if len(part.encode("utf-8", "surrogateescape")) > max_name:
            raise InputError("file path %r has a component longer than %d bytes"
                             % (path[:64], max_name))
        parts.append(part)
    if not parts:
        raise InputError("file path %r names no file" % path)
    return "/".join(parts)


def validate_input_files(files, max_count, max_total_bytes):
    """run.files -> [(normalized path, bytes)]; InputError on any bad entry."""
    if len(files) > max_count:
        raise InputError("%d input files exceed the limit of %d" % (len(files), max_count))
    out = []
    seen = set()
    total = 0
    for i, f in enumerate(files):
        if not isinstance(f, dict):
            raise InputError("files[%d] must be an object {path, content_b64}" % i)
        path = validate_rel_path(f.get("path"))
        b64 = f.get("content_b64", "")
        if not isinstance(b64, str):
            raise InputError("files[%d].content_b64 must be a string" % i)
        if len(b64) // 4 * 3 > max_total_bytes - total + 3:
            raise InputError("input files exceed the limit of %d bytes in total" % max_total_bytes)
        try:
            data = base64.b64decode(b64, validate=True)
        except (binascii.Error, ValueError):
            raise InputError("files[%d].content_b64 is not valid base64" % i)
        total += len(data)
        if total > max_total_bytes:
            raise InputError("input files exceed the limit of %d bytes in total" % max_total_bytes)
        if path in seen:
            raise InputError("file path %r is given twice" % path)
        for other in seen:
            if other.startswith(path + "/") or path.startswith(other + "/"):
                raise InputError("file paths %r and %r conflict (one is a directory of the other)"
                                 % (other, path))
        seen.add(path)
        out.append((path, data))
    return out


def parse_session_op(msg, cfg):
    """A `session` op -> (id or None, the session's limits). Limits are parsed like a run's (cpu_s
    is kept: it is not applied in session mode)."""
    rid = msg.get("id")
    if rid is not None and (not isinstance(rid, str) or len(rid) > 256):
        raise ProtocolError("session.id must be a string of at most 256 characters")
    limits = parse_limits(dict_field(msg, "limits", "session", required=False), cfg["limits"], "session.limits",
                          resolve=False)
    return rid, limits


def parse_op_id(msg):
    """A file op's id; a missing or bad id is a protocol error (there is nothing to reply to)."""
    rid = msg.get("id")
    if not isinstance(rid, str) or not rid or len(rid) > 256:
        raise ProtocolError("%s.id must be a non-empty string of at most 256 characters"
                            % msg.get("op"))
    return rid


def parse_file_op(msg, cfg):
    """A file op -> the request for U (paths normalized, files checked against files_in).
    InputError (answered with an error reply) for anything the request's author got wrong."""
    op = msg["op"]
    if op == "put_files":
        files = msg.get("files", [])
        if files is None:
            files = []
        if not isinstance(files, list):
            raise InputError("files must be a list of {path, content_b64}")
        checked = validate_input_files(files, cfg["files_in"]["max_count"],
                                       cfg["files_in"]["max_total_bytes"])
        return {"op": op, "files": [{"path": path, "content_b64": f["content_b64"]}
                                    for (path, _), f in zip(checked, files)],
                "sizes": [(path, len(data)) for path, data in checked]}
    if op == "list_files":
        return {"op": op, "max_entries": cfg["list_max_entries"]}
    path = validate_rel_path(msg.get("path"))
    if op == "delete_file":
        return {"op": op, "path": path}
    max_bytes = msg.get("max_bytes")
    if max_bytes is None:
        max_bytes = cfg["files_out"]["max_total_bytes"]
    if not is_int(max_bytes) or max_bytes < 0:
        raise InputError("max_bytes must be a non-negative integer")
    return {"op": op, "path": path, "max_bytes": max_bytes}
