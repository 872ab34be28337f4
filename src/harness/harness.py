"""The in-container harness of sandbox-mcp: a zygote that runs untrusted Python cells.

The server starts a container with a tiny bootstrap (docs/harness-protocol.md, "Bootstrap") that
reads this file's source from stdin and exec()s it with ``__name__ == "__main__"``. From then on
the harness speaks length-prefixed frames on the container's stdin/stdout.

Process tree of one run (``isolate`` mode; see the protocol doc, "Isolation"):

    zygote (Z)          preloaded interpreter, non-dumpable, owns the control channel
     └─ intermediate (I)  unshare(user|mount|pid|ipc), maps, private tmpfs /tmp, caps dropped;
         │                reaps U and G and reports their status
         ├─ init (G)        PID 1 of the run's PID namespace: shares I's memory, sleeps in pause()
         └─ run (U)         PID 2: waits for the request, then rlimits, seccomp, user code

I, G and U are created AHEAD of the request; a request only has to cross a pipe. In ``session``
mode U stays alive across runs (one persistent ``__main__``) and also serves file operations.

Standard library and ctypes only; Python >= 3.8. Importing this module has no side effects (the
unit tests import it to test the pure parts); ``main()`` runs only as the bootstrap's payload or as
a script.
"""

import array
import ast
import base64
import binascii
import ctypes
import fcntl
import gc
import hashlib
import io
import json
import linecache
import mimetypes
import os
import re
import resource
import selectors
import signal
import socket
import stat
import struct
import sys
import termios
import threading
import time
import traceback
import types

PROTOCOL_VERSION = 3
HARNESS_FILE = (lambda: None).__code__.co_filename  # "<harness>" under the bootstrap
CELL_FILENAME = "<cell>"

KIND_JSON = b"J"
KIND_STDOUT = b"1"
KIND_STDERR = b"2"
MAX_INBOUND_FRAME = 256 << 20  # a server frame larger than this is a protocol error
OUTPUT_MARKER = "\n[output truncated: limit of {n} bytes reached]\n"
EX_INTERNAL = 70  # exit status of a run process that failed before or after the user's code
MODES = ("recycle", "fresh", "session")
FILE_OPS = ("put_files", "list_files", "get_file", "delete_file")
RESET_SUFFIX = "; the session was restarted empty (variables and files are lost)"

# ---------------------------------------------------------------------------------------------
# Frames


class ProtocolError(Exception):
    """The server broke the protocol: the harness sends `fatal` and exits non-zero."""


class InputError(Exception):
    """A request's data (files, paths) is unacceptable: the run ends with verdict `error`."""


def encode_frame(kind, payload):
    if len(kind) != 1:
        raise ValueError("frame kind must be one byte")
    if len(payload) > 0xFFFFFFFF:
        raise ValueError("frame payload too large")
    return struct.pack(">I", len(payload)) + kind + bytes(payload)


def _sanitize(obj):
    """Replaces lone surrogates (not encodable as UTF-8) by a visible escape, recursively."""
    if isinstance(obj, str):
        try:
            obj.encode("utf-8")
            return obj
        except UnicodeEncodeError:
            return obj.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(obj, dict):
        return {_sanitize(k): _sanitize(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_sanitize(v) for v in obj]
    return obj


def encode_json(obj):
    """One JSON object as UTF-8 bytes; always valid UTF-8 (lone surrogates are escaped)."""
    try:
        text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        return text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(_sanitize(obj), ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        return text.encode("utf-8")


def encode_json_frame(obj):
    return encode_frame(KIND_JSON, encode_json(obj))


class FrameDecoder:
    """Reassembles frames from bytes split at any position."""

    def __init__(self, max_payload=MAX_INBOUND_FRAME, kinds=(KIND_JSON, KIND_STDOUT, KIND_STDERR)):
        self._buf = bytearray()
        self.max_payload = max_payload  # may be changed between frames
        self._kinds = kinds

    def feed(self, data):
        self._buf += data

    def frames(self):
        """Pops every complete frame as (kind, payload); ProtocolError at a malformed one."""
        out, error = self.frames_before_error()
        if error is not None:
            raise error
        return out

    def frames_before_error(self):
        """Pops every complete frame up to a malformed one: (frames, ProtocolError or None).
        The frames that came before the bad bytes are kept (and the bad bytes stay buffered)."""
        out = []
        buf = self._buf
        while len(buf) >= 5:
            length = int.from_bytes(buf[:4], "big")
            kind = bytes(buf[4:5])
            if kind not in self._kinds:
                return out, ProtocolError("frame of unknown kind %r" % kind)
            if length > self.max_payload:
                return out, ProtocolError("frame of %d bytes exceeds the limit of %d"
                                          % (length, self.max_payload))
            if len(buf) < 5 + length:
                break
            out.append((kind, bytes(buf[5:5 + length])))
            del buf[:5 + length]
        return out, None

    @property
    def pending(self):
        return len(self._buf)


def decode_message(kind, payload):
    """A server frame -> its JSON object (a dict with a string "op")."""
    if kind != KIND_JSON:
        raise ProtocolError("the server may only send JSON frames, got kind %r" % kind)
    try:
        msg = json.loads(payload.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise ProtocolError("bad JSON in frame: %s" % e)
    if not isinstance(msg, dict) or not isinstance(msg.get("op"), str):
        raise ProtocolError("a message must be a JSON object with a string \"op\"")
    return msg


# ---------------------------------------------------------------------------------------------
# Configuration and requests

# Every bound below comes from the server, which owns them (include/sandbox/runner/
# result_checks.h, config.h) and checks requests against the same numbers before a run: the
# harness has no defaults of its own, so a missing field is a protocol error, never a second
# opinion. Only the bounds of the work dir's paths and walk live at module level, set once from
# the config by apply_config (they are needed deep in helpers that U and the zygote share).
PATH_BOUNDS = {"max_path_bytes": None, "max_name_bytes": None}
WALK_BOUNDS = {"max_entries": None, "max_depth": None}

_REQUIRED = object()


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _get(obj, key, default, where):
    v = obj.get(key, default)
    if v is _REQUIRED:
        raise ProtocolError("%s.%s is required (the server sends every limit)" % (where, key))
    return v


def _int_field(obj, key, minimum=1, where="config", default=_REQUIRED):
    v = _get(obj, key, default, where)
    if not _is_int(v) or v < minimum:
        raise ProtocolError("%s.%s must be an integer >= %d" % (where, key, minimum))
    return v


def _num_field(obj, key, where, default=_REQUIRED):
    v = _get(obj, key, default, where)
    if not _is_num(v) or not v > 0 or v != v or v == float("inf"):
        raise ProtocolError("%s.%s must be a positive number" % (where, key))
    return v


def _dict_field(obj, key, where, required=True):
    v = obj.get(key)
    if v is None and not required:
        return {}
    if not isinstance(v, dict):
        raise ProtocolError("%s.%s must be an object" % (where, key))
    return v


def parse_limits(obj, defaults, where, resolve=True):
    """A limits object. In the config every field is required (cpu_s 0 means "derived from
    timeout_s", memory_bytes 0 "the container's limit only"); a run's limits may leave fields
    out, which then come from the config's (`defaults`). cpu_s 0 is resolved for a run: the
    timeout rounded up, plus one second."""
    d = defaults or {}
    out = {}
    out["timeout_s"] = float(_num_field(obj, "timeout_s", where, d.get("timeout_s", _REQUIRED)))
    for key in ("output_bytes", "nproc", "nofile", "fsize_bytes"):
        out[key] = _int_field(obj, key, 1, where, d.get(key, _REQUIRED))
    for key in ("cpu_s", "memory_bytes"):
        out[key] = _int_field(obj, key, 0, where, d.get(key, _REQUIRED))
    if out["cpu_s"] == 0 and resolve:
        out["cpu_s"] = int(-(-out["timeout_s"] // 1)) + 1
    return out


def _bounds(msg, key, fields):
    """A required object of required integers (name -> minimum)."""
    d = _dict_field(msg, key, "config")
    return {name: _int_field(d, name, minimum, "config." + key) for name, minimum in fields}


def parse_config(msg):
    """The `config` message -> the config dict. Every field is required (the server owns every
    value); unknown fields are ignored; wrong types are a ProtocolError."""
    if msg.get("op") != "config":
        raise ProtocolError("the first message must be {\"op\":\"config\"}, got %r" % msg.get("op"))
    cfg = {}
    mode = _get(msg, "mode", _REQUIRED, "config")
    if mode not in MODES:
        raise ProtocolError("config.mode must be \"recycle\", \"fresh\" or \"session\"")
    cfg["mode"] = mode
    preload = _get(msg, "preload", _REQUIRED, "config")
    if not isinstance(preload, list) or not all(isinstance(m, str) and m for m in preload):
        raise ProtocolError("config.preload must be a list of module names")
    cfg["preload"] = preload
    warm = _get(msg, "warm_plot", _REQUIRED, "config")
    if not isinstance(warm, bool):
        raise ProtocolError("config.warm_plot must be a boolean")
    cfg["warm_plot"] = warm
    cfg["seccomp_bpf"] = parse_bpf(_get(msg, "seccomp_bpf", _REQUIRED, "config"))
    isolate = _get(msg, "isolate", _REQUIRED, "config")
    if isolate not in (True, False, "auto"):
        raise ProtocolError("config.isolate must be true, false or \"auto\"")
    cfg["isolate"] = isolate
    workdir = _get(msg, "workdir", _REQUIRED, "config")
    if (not isinstance(workdir, str) or not workdir.startswith("/")
            or os.path.normpath(workdir) != workdir or workdir in ("/", "/tmp")
            or "\x00" in workdir):
        raise ProtocolError("config.workdir must be a normalized absolute path other than / and /tmp")
    cfg["workdir"] = workdir
    cfg["tmpfs_size_bytes"] = _int_field(msg, "tmpfs_size_bytes", 1 << 20)
    image = _dict_field(msg, "image", "config")
    cfg["image"] = {
        "max_figures": _int_field(image, "max_figures", 0, "config.image"),
        "max_width_px": _int_field(image, "max_width_px", 1, "config.image"),
        "max_height_px": _int_field(image, "max_height_px", 1, "config.image"),
        "dpi": float(_num_field(image, "dpi", "config.image")),
    }
    for key in ("files_out", "files_in"):
        cfg[key] = _bounds(msg, key, (("max_count", 0), ("max_total_bytes", 0)))
    cfg["value_max_chars"] = _int_field(msg, "value_max_chars", 16)
    cfg["limits"] = parse_limits(_dict_field(msg, "limits", "config"), None, "config.limits",
                                 resolve=False)
    cfg["op_timeout_s"] = float(_num_field(msg, "op_timeout_s", "config"))
    cfg["watchdog_s"] = parse_watchdog(msg, "config")
    cfg["list_max_entries"] = _int_field(msg, "list_max_entries", 1)
    cfg["paths"] = _bounds(msg, "paths", (("max_path_bytes", 16), ("max_name_bytes", 8)))
    cfg["walk"] = _bounds(msg, "walk", (("max_entries", 1), ("max_depth", 1)))
    cfg["traceback"] = _bounds(msg, "traceback", (("max_frames", 2), ("max_message_bytes", 64),
                                                  ("max_name_bytes", 16),
                                                  ("max_total_bytes", 1024)))
    return cfg


def parse_watchdog(msg, where, default=_REQUIRED):
    """watchdog_s: session mode, exit after this long idle without a message from the server
    (0: never). The server's stream may close without stdin closing (sessions that outlive a
    server restart), so this is what bounds a container no server comes back to."""
    value = _get(msg, "watchdog_s", default, where)
    if not _is_num(value) or not value >= 0 or value == float("inf"):
        raise ProtocolError("%s.watchdog_s must be a number >= 0" % where)
    return float(value)


MAX_SESSION_RECORD = 4096  # bytes of the server's record in a `session` op, JSON-encoded


def parse_session_record(msg):
    """The server's opaque record of the session (returned by `resume`); None when absent."""
    record = msg.get("record")
    if record is None:
        return None
    if not isinstance(record, dict) or len(json.dumps(record)) > MAX_SESSION_RECORD:
        raise ProtocolError("session.record must be an object of at most %d bytes"
                            % MAX_SESSION_RECORD)
    return record


def apply_config(cfg):
    """Sets the module-level bounds from a parsed config (once, before anything runs)."""
    PATH_BOUNDS.update(cfg["paths"])
    WALK_BOUNDS.update(cfg["walk"])


def parse_bpf(value):
    """config.seccomp_bpf (base64 of struct sock_filter[]) -> raw bytes, or None."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ProtocolError("config.seccomp_bpf must be a base64 string or null")
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError) as e:
        raise ProtocolError("config.seccomp_bpf is not valid base64: %s" % e)
    if not raw or len(raw) % 8 != 0 or len(raw) // 8 > 4096:
        raise ProtocolError("config.seccomp_bpf must hold 1..4096 sock_filter entries (8 bytes each), "
                            "got %d bytes" % len(raw))
    return raw


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
    limits = parse_limits(_dict_field(msg, "limits", "run", required=False), cfg["limits"], "run.limits")
    return {"id": rid, "code": code, "argv": argv, "files": files, "limits": limits}


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


def result_path_error(path):
    """Why `path` is not a valid result path (a file record's, a listing's), or None. Valid: a
    relative, normalized path inside the work dir, valid UTF-8 without control characters, at
    most PATH_BOUNDS bytes, components non-empty, not `.` or `..`, each within its bound. U
    only sends such paths (it skips files with other names, setting files_truncated): anything
    else is forged."""
    if not isinstance(path, str) or not path:
        return "not a non-empty string"
    try:
        raw = path.encode("utf-8")
    except UnicodeEncodeError:
        return "not valid UTF-8"
    if len(raw) > PATH_BOUNDS["max_path_bytes"]:
        return "longer than %d bytes" % PATH_BOUNDS["max_path_bytes"]
    if any(c < 0x20 or c == 0x7F for c in raw):
        return "contains a control character"
    if path.startswith("/"):
        return "absolute"
    for part in path.split("/"):
        if part in ("", ".", ".."):
            return "not normalized (empty, '.' or '..' component)"
        if len(part.encode("utf-8")) > PATH_BOUNDS["max_name_bytes"]:
            return "has a component longer than %d bytes" % PATH_BOUNDS["max_name_bytes"]
    return None


def cut_text(text, max_bytes):
    """`text` cut to at most max_bytes of UTF-8 (at a character boundary), with a marker
    saying how much was cut; unchanged when it fits."""
    raw = text.encode("utf-8", "surrogatepass")
    if len(raw) <= max_bytes:
        return text
    marker = " [... %d bytes omitted]" % len(raw)
    keep = raw[:max(max_bytes - len(marker), 0)].decode("utf-8", "ignore")
    marker = " [... %d bytes omitted]" % (len(raw) - len(keep.encode("utf-8", "surrogatepass")))
    return keep + marker


_OMITTED_RE = re.compile(r"\[\.\.\. (\d{1,18}) frames omitted \.\.\.\]$")


def omitted_frame(n):
    """The frame that stands for the n frames a bounded traceback leaves out."""
    return {"file": "", "line": 0, "function": "[... %d frames omitted ...]" % n}


def bound_traceback(tb, limits):
    """A structured traceback (U's claim: checked) -> a bounded one, or None when it is not
    one: at most max_frames frames (the first and last halves, an omitted_frame between),
    type/file/function cut at max_name_bytes, message at max_message_bytes, and the whole at
    max_total_bytes (more frames from the middle are omitted until it fits)."""
    if not isinstance(tb, dict):
        return None
    names, msg_max = limits["max_name_bytes"], limits["max_message_bytes"]

    def text(v, n):
        return cut_text(v, n) if isinstance(v, str) else ""

    frames = tb.get("frames")
    frames = frames if isinstance(frames, list) else []
    real, omitted, marker_at = [], 0, None
    for f in frames:
        if not isinstance(f, dict):
            continue
        m = None
        if f.get("file") == "" and f.get("line") == 0 and isinstance(f.get("function"), str):
            m = _OMITTED_RE.match(f["function"])
        if m:  # a marker of an earlier bounding (U's own): its frames stay counted
            omitted += int(m.group(1))
            marker_at = len(real) if marker_at is None else marker_at
        else:
            real.append(f)
    head_n = limits["max_frames"] // 2
    tail_n = limits["max_frames"] - head_n - 1

    def clean(f):
        line = f.get("line")
        return {"file": text(f.get("file"), names), "line": line if _is_int(line) else 0,
                "function": text(f.get("function"), names)}

    def build(h, t):
        if h + t >= len(real):
            if marker_at is None:
                return [clean(f) for f in real]
            h, t = marker_at, len(real) - marker_at  # the marker stays where it was
        h, t = min(h, len(real)), min(t, max(len(real) - min(h, len(real)), 0))
        gap = len(real) - h - t
        return ([clean(f) for f in real[:h]] + [omitted_frame(gap + omitted)]
                + [clean(f) for f in real[len(real) - t:]])

    out = {"type": text(tb.get("type"), names), "message": text(tb.get("message"), msg_max)}
    h, t = head_n, tail_n
    while True:
        out["frames"] = build(h, t)
        size = len(encode_json(out))
        if size <= limits["max_total_bytes"] or h + t == 0:
            return out
        h, t = h // 2, t // 2


# ---------------------------------------------------------------------------------------------
# Session mode: the `session` op, file operations and the checks of U's answers


def parse_session_op(msg, cfg):
    """A `session` op -> (id or None, the session's limits). Limits are parsed like a run's (cpu_s
    is kept: it is not applied in session mode)."""
    rid = msg.get("id")
    if rid is not None and (not isinstance(rid, str) or len(rid) > 256):
        raise ProtocolError("session.id must be a string of at most 256 characters")
    limits = parse_limits(_dict_field(msg, "limits", "session", required=False), cfg["limits"], "session.limits",
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
    if not _is_int(max_bytes) or max_bytes < 0:
        raise InputError("max_bytes must be a non-negative integer")
    return {"op": op, "path": path, "max_bytes": max_bytes}


def reply_bound(req):
    """The largest reply record (payload bytes) U may send for a file op: a path is at most
    4096 bytes and JSON may escape a byte as 6 characters."""
    base = 64 << 10
    if req["op"] == "get_file":
        return base + (req["max_bytes"] + 2) // 3 * 4
    if req["op"] == "list_files":
        return base + req["max_entries"] * (6 * 4096 + 512)
    return base


def check_reply(req, rec):
    """U's reply to a file op (an untrusted claim) -> (ok, result or error message).
    ValueError when it is malformed. Results Z knows itself are built here, not taken from U."""
    if rec.get("ok") is not True:
        err = rec.get("error")
        if rec.get("ok") is not False or not isinstance(err, str):
            raise ValueError("a failed reply needs a string error")
        return False, err[:2000]
    res = rec.get("result")
    op = req["op"]
    if op == "put_files":
        return True, {"files": [{"path": path, "size": size} for path, size in req["sizes"]]}
    if op == "delete_file":
        return True, {"path": req["path"]}
    if not isinstance(res, dict):
        raise ValueError("the result must be an object")
    if op == "list_files":
        files, truncated = res.get("files"), res.get("truncated")
        if not isinstance(files, list) or not isinstance(truncated, bool):
            raise ValueError("list_files needs files (a list) and truncated (a boolean)")
        if len(files) > req["max_entries"]:
            raise ValueError("%d entries exceed the limit of %d" % (len(files), req["max_entries"]))
        out = []
        for f in files:
            if not isinstance(f, dict):
                raise ValueError("a file entry must be an object")
            path, size, mime, mtime = f.get("path"), f.get("size"), f.get("mime_type"), f.get("mtime")
            if not (isinstance(path, str) and path and _is_int(size) and size >= 0
                    and isinstance(mime, str) and _is_num(mtime) and mtime == mtime
                    and abs(mtime) != float("inf")):
                raise ValueError("a file entry needs path, size, mime_type and mtime")
            if result_path_error(path) is not None:
                truncated = True  # U lists only valid names: a forged entry, dropped and marked
                continue
            out.append({"path": path, "size": size, "mime_type": mime[:200], "mtime": mtime})
        return True, {"files": out, "truncated": truncated}
    # get_file
    path, size, mime, data = res.get("path"), res.get("size"), res.get("mime_type"), res.get("data_b64")
    if path != req["path"] or not (_is_int(size) and 0 <= size <= req["max_bytes"]
                                   and isinstance(mime, str) and isinstance(data, str)):
        raise ValueError("get_file needs the requested path, a size within max_bytes, "
                         "mime_type and data_b64")
    if len(data) != (size + 2) // 3 * 4:
        raise ValueError("data_b64 does not hold %d bytes" % size)
    try:
        if len(base64.b64decode(data, validate=True)) != size:
            raise ValueError("data_b64 does not hold %d bytes" % size)
    except binascii.Error:
        raise ValueError("data_b64 is not valid base64")
    return True, {"path": path, "size": size, "mime_type": mime[:200], "data_b64": data}


def changed_files(before, after):
    """Session cells report the regular files that are new or changed: `before` and `after` map
    a relative path to (size, mtime_ns, inode). Returns the changed paths in `after`'s order."""
    return [path for path, sig in after.items() if before.get(path) != sig]


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


# ---------------------------------------------------------------------------------------------
# Cells: final expression, tracebacks, SystemExit


def split_cell(source, filename=CELL_FILENAME):
    """Compiles a cell. If its last statement is an expression, it is compiled separately (eval
    mode) so its value can be shown, as in a notebook. Returns (body_code, expr_code_or_None);
    raises SyntaxError."""
    tree = ast.parse(source, filename, "exec")
    expr = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = tree.body.pop()
        expr = compile(ast.Expression(last.value), filename, "eval", dont_inherit=True)
    body = compile(tree, filename, "exec", dont_inherit=True)
    return body, expr


def register_source(source, filename=CELL_FILENAME):
    """Lets linecache (hence tracebacks) show the cell's lines."""
    lines = source.splitlines(True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    linecache.cache[filename] = (len(source), None, lines, filename)


def format_value(value, max_chars):
    """repr() of a cell's final value, bounded; None for None (nothing to show)."""
    if value is None:
        return None
    try:
        text = repr(value)
    except BaseException as e:  # noqa: B902 - a user's __repr__ may raise anything
        text = "<repr() failed: %s: %s>" % (type(e).__name__, _safe_str(e))
    if not isinstance(text, str):
        text = str(text)
    if len(text) > max_chars:
        text = text[:max_chars] + "... [%d more characters]" % (len(text) - max_chars)
    return text


def _safe_str(exc):
    try:
        return str(exc)
    except BaseException:  # noqa: B902
        return "<str() of the exception failed>"


def exception_type_name(exc_type):
    """The name Python's traceback printer uses: qualname, prefixed by the module unless it is
    builtins or __main__."""
    mod = getattr(exc_type, "__module__", None)
    name = getattr(exc_type, "__qualname__", None) or getattr(exc_type, "__name__", "?")
    if mod not in (None, "builtins", "__main__"):
        return "%s.%s" % (mod, name)
    return name


def user_frames(frames, drop_files=(HARNESS_FILE,)):
    """Removes the harness's own frames from a list of FrameSummary (or dicts with "file")."""
    out = []
    for f in frames:
        name = f["file"] if isinstance(f, dict) else f.filename
        if name not in drop_files:
            out.append(f)
    return out


def deep_traceback(exc, max_frames, drop_files=(HARNESS_FILE,)):
    """None when exc's traceback is short, else (first frames, number omitted, last frames) as
    FrameSummary lists: a RecursionError under sys.setrecursionlimit(10**6) has a million
    frames, and extracting them all (source lines included) takes seconds and hundreds of MB.
    Only the kept frames are extracted; the harness's frames (at the start) are dropped."""
    tb = exc.__traceback__
    n, node = 0, tb
    while node is not None:
        n += 1
        node = node.tb_next
    head_n = max_frames // 2
    tail_n = max_frames - head_n - 1
    window = head_n + 8  # the harness's frames come first
    if n <= window + tail_n:
        return None
    head_all = user_frames(traceback.extract_tb(tb, limit=window), drop_files)
    head = head_all[:head_n]
    node = tb
    for _ in range(n - tail_n):
        node = node.tb_next
    tail = user_frames(traceback.extract_tb(node), drop_files)
    return head, (len(head_all) - len(head)) + (n - window - tail_n), tail


def structured_traceback(exc, drop_files=(HARNESS_FILE,), max_frames=None):
    """An exception -> {type, message, frames:[{file, line, function}]}, harness frames removed;
    with max_frames, a longer one keeps its first and last frames and an omitted_frame."""
    deep = deep_traceback(exc, max_frames, drop_files) if max_frames else None
    if deep is None:
        frames = [{"file": f.filename, "line": f.lineno, "function": f.name}
                  for f in user_frames(traceback.extract_tb(exc.__traceback__), drop_files)]
    else:
        head, omitted, tail = deep
        frames = ([{"file": f.filename, "line": f.lineno, "function": f.name} for f in head]
                  + [omitted_frame(omitted)]
                  + [{"file": f.filename, "line": f.lineno, "function": f.name} for f in tail])
    return {"type": exception_type_name(type(exc)), "message": _safe_str(exc), "frames": frames}


def format_deep_exception(exc, deep):
    """The text of a traceback bounded by deep_traceback (its chained exceptions left out)."""
    head, omitted, tail = deep
    out = ["Traceback (most recent call last):\n"]
    out += traceback.StackSummary.from_list(head).format()
    out.append("  [... %d frames omitted ...]\n" % omitted)
    out += traceback.StackSummary.from_list(tail).format()
    out += traceback.format_exception_only(type(exc), exc)
    return "".join(out)


def _trim_te(te, drop_files, seen):
    if te is None or id(te) in seen:
        return
    seen.add(id(te))
    te.stack = traceback.StackSummary.from_list(user_frames(list(te.stack), drop_files))
    _trim_te(getattr(te, "__cause__", None), drop_files, seen)
    _trim_te(getattr(te, "__context__", None), drop_files, seen)
    for sub in getattr(te, "exceptions", None) or ():
        _trim_te(sub, drop_files, seen)


def format_exception_trimmed(exc, drop_files=(HARNESS_FILE,), sources=None, max_frames=None):
    """The text Python prints for an uncaught exception, without the harness's frames.
    `sources` (a CellSources, session mode) gives frames of earlier cells their own lines.
    With max_frames, a longer traceback is cut as by deep_traceback."""
    deep = deep_traceback(exc, max_frames, drop_files) if max_frames else None
    if deep is not None:
        return format_deep_exception(exc, deep)
    te = traceback.TracebackException(type(exc), exc, exc.__traceback__,
                                      lookup_lines=sources is None)
    if sources is not None:
        _lookup_cell_lines(te, exc, sources, set())
    _trim_te(te, drop_files, set())
    return "".join(te.format())


class CellSources:
    """Session mode: every cell is compiled as <cell>, so linecache only knows the latest one.
    This remembers which cell each code object came from, so that a traceback through a
    function defined in an earlier cell shows that cell's line, not the current cell's."""

    def __init__(self):
        self.cells = []
        self.by_code = {}  # id(code) -> (code, cell index); the code is kept so ids stay unique

    def add(self, source, codes):
        lines = source.splitlines(True)
        if lines and not lines[-1].endswith("\n"):
            lines[-1] += "\n"
        index = len(self.cells)
        self.cells.append((len(source), lines))
        todo = [c for c in codes if c is not None]
        while todo:
            code = todo.pop()
            self.by_code[id(code)] = (code, index)
            todo.extend(c for c in code.co_consts if isinstance(c, types.CodeType))

    def entry(self, code):
        """linecache's entry for the cell `code` was compiled in, or None."""
        found = self.by_code.get(id(code))
        if found is None or found[0] is not code:
            return None
        size, lines = self.cells[found[1]]
        return (size, None, lines, CELL_FILENAME)


def _lookup_cell_lines(te, exc, sources, seen):
    """Looks up every frame's source line now (FrameSummary caches it), with linecache's <cell>
    entry pointing at the cell the frame's code comes from."""
    if te is None or exc is None or id(te) in seen:
        return
    seen.add(id(te))
    stack = list(te.stack)
    frames = [f for f, _ in traceback.walk_tb(exc.__traceback__)]
    current = linecache.cache.get(CELL_FILENAME)
    try:
        for i, fs in enumerate(stack):
            entry = None
            if len(frames) == len(stack) and fs.filename == CELL_FILENAME:
                entry = sources.entry(frames[i].f_code)
            if entry is not None:
                linecache.cache[CELL_FILENAME] = entry
            elif current is not None:
                linecache.cache[CELL_FILENAME] = current
            fs.line  # noqa: B018 - looked up (and cached) while the right cell is registered
    finally:
        if current is not None:
            linecache.cache[CELL_FILENAME] = current
    _lookup_cell_lines(getattr(te, "__cause__", None), exc.__cause__, sources, seen)
    _lookup_cell_lines(getattr(te, "__context__", None), exc.__context__, sources, seen)
    for sub_te, sub in zip(getattr(te, "exceptions", None) or (),
                           getattr(exc, "exceptions", None) or ()):
        _lookup_cell_lines(sub_te, sub, sources, seen)


def compile_error_report(exc):
    """A cell that does not compile -> (stderr text, structured traceback) as Python shows it:
    no "Traceback" header and no frames (the compiler's frames are not the user's)."""
    text = "".join(traceback.format_exception_only(type(exc), exc))
    return text, {"type": exception_type_name(type(exc)), "message": _safe_str(exc), "frames": []}


def system_exit_status(exc):
    """SystemExit -> (exit status, text to print on stderr or None), as the interpreter does."""
    code = exc.code
    if code is None:
        return 0, None
    if _is_int(code) or isinstance(code, bool):
        return int(code) & 0xFF, None
    return 1, _safe_str(code)


# ---------------------------------------------------------------------------------------------
# Figures


def fit_dpi(width_in, height_in, dpi, max_width_px, max_height_px):
    """The dpi to render a figure at: the configured one, lowered so that the image fits."""
    eff = float(dpi)
    if width_in > 0:
        eff = min(eff, max_width_px / float(width_in))
    if height_in > 0:
        eff = min(eff, max_height_px / float(height_in))
    return max(eff, 1e-3)


def png_size(data):
    """(width, height) from a PNG's IHDR chunk, or None."""
    if len(data) < 24 or data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR":
        return None
    return struct.unpack(">II", data[16:24])


class FigureBudget:
    """Counts captured figures against image.max_figures."""

    def __init__(self, max_figures):
        self.max_figures = max_figures
        self.count = 0
        self.truncated = False

    def take(self):
        if self.count >= self.max_figures:
            self.truncated = True
            return False
        self.count += 1
        return True


# ---------------------------------------------------------------------------------------------
# Output and file budgets


def apply_output_limit(used, limit, data):
    """How much of `data` may still be relayed: (bytes to send, limit_reached)."""
    remaining = limit - used
    if len(data) <= remaining:
        return data, False
    return data[:max(remaining, 0)], True


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


# ---------------------------------------------------------------------------------------------
# Verdicts


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


def _signame(sig):
    try:
        return signal.Signals(sig).name
    except ValueError:
        return "signal %d" % sig


def decide_verdict(kill_reason=None, internal=None, ustatus=None, gstatus=None, oom_kills=0,
                   limit_hits=0, cpu_ms=None, limits=None, memory_error=False, corrupt=None,
                   claimed_failure=None):
    """The done event's verdict. Returns (verdict, exit_code, signal, detail).

    kill_reason: what the zygote killed the run for ("cancel", "output_limit", "timeout",
    "result_limit", "corrupt") or None; internal: a harness failure reported for the run; ustatus: the run
    process's raw wait status (from the PID-1 init), gstatus: the init's own raw wait status;
    oom_kills / limit_hits: growth of the cgroup's counters during the run; memory_error: the
    run process reported that the cell ended with an uncaught MemoryError (an allocation refused
    by RLIMIT_DATA, the per-run memory limit, or larger than the address space allows);
    corrupt: why the run's result channel could not be parsed (the code wrote to it);
    claimed_failure: the run process reported a failure after the user's code started (a claim
    of the run about itself: at most its own `error`, never `internal`)."""
    limits = limits or {}
    if kill_reason == "cancel":
        return "cancelled", None, signal.SIGKILL, "cancelled by request"
    if kill_reason == "output_limit":
        return ("output_limit", None, signal.SIGKILL,
                "output exceeded the limit of %d bytes" % limits.get("output_bytes", 0))
    if kill_reason == "timeout":
        return ("timeout", None, signal.SIGKILL,
                "wall-clock limit of %g s reached" % limits.get("timeout_s", 0))
    if kill_reason == "result_limit":  # the code can write to its own result pipe: its doing
        return "error", None, signal.SIGKILL, "the run sent more result data than its limits allow"
    if kill_reason == "corrupt":  # session mode: the result channel cannot be resynchronized
        return "error", None, signal.SIGKILL, corrupt or CORRUPT_RESULTS
    if kill_reason is not None:
        return "internal", None, None, "killed: %s" % kill_reason
    status = ustatus
    if status is None and gstatus is not None and os.WIFSIGNALED(gstatus):
        status = gstatus  # the run's init itself was killed (e.g. by the OOM killer)
    if status is None:
        if oom_kills > 0:
            return "memory", None, None, "out of memory: the OOM killer ended the run"
        return "internal", None, None, internal or "the run ended without reporting a status"
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if oom_kills > 0 or (sig == signal.SIGKILL and limit_hits > 0):
            return "memory", None, sig, "out of memory: the OOM killer ended the run"
        cpu_s = limits.get("cpu_s")
        if sig == signal.SIGXCPU or (sig == signal.SIGKILL and cpu_s and cpu_ms is not None
                                      and cpu_ms >= cpu_s * 1000):
            return "timeout", None, sig, "CPU-time limit of %d s reached" % cpu_s
        return "signal", None, sig, "killed by signal %d (%s)" % (sig, _signame(sig))
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
    if oom_kills > 0:
        return "memory", code, None, "out of memory: the OOM killer killed a process of the run"
    if internal:
        return "internal", code, None, internal
    if corrupt:
        return "error", code, None, corrupt
    if claimed_failure:
        return "error", code, None, claimed_failure
    if code != 0 and memory_error:
        budget = limits.get("memory_bytes")
        return ("memory", code, None, "out of memory: an allocation failed (MemoryError)"
                + (" under the run's memory limit of %d bytes" % budget if budget else ""))
    if code != 0:
        return "error", code, None, "exit status %s" % code
    return "ok", 0, None, ""


# ---------------------------------------------------------------------------------------------
# Kernel interfaces (ctypes)

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_SECCOMP = 22
PR_CAPBSET_READ = 23
PR_CAPBSET_DROP = 24
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
SECCOMP_MODE_FILTER = 2
CLONE_VM = 0x00000100
CLONE_FILES = 0x00000400
CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REC = 16384
MS_PRIVATE = 1 << 18
LINUX_CAPABILITY_VERSION_3 = 0x20080522


SLEEPER_STACK = 64 << 10  # plenty for glibc's pause()
_SLEEPER_STACKS = []


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


class Kernel:
    """The few system calls the standard library lacks, through libc."""

    def __init__(self):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong,
                               ctypes.c_ulong]
        libc.prctl.restype = ctypes.c_int
        libc.unshare.argtypes = [ctypes.c_int]
        libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong,
                               ctypes.c_char_p]
        libc.capset.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        libc.clone.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
        libc.clone.restype = ctypes.c_int
        self.libc = libc

    @staticmethod
    def _check(rc, what):
        if rc != 0:
            err = ctypes.get_errno()
            raise OSError(err, "%s: %s" % (what, os.strerror(err)))
        return rc

    def prctl(self, option, a2=0, a3=0, a4=0, a5=0, what="prctl"):
        return self._check(self.libc.prctl(option, a2, a3, a4, a5), what)

    def unshare(self, flags):
        self._check(self.libc.unshare(flags), "unshare")

    def mount(self, source, target, fstype, flags, data):
        enc = lambda s: s.encode() if s is not None else None  # noqa: E731
        self._check(self.libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)),
                    "mount %s" % target)

    def drop_capabilities(self):
        """Empties the bounding, ambient, effective, permitted and inheritable sets."""
        try:
            with open("/proc/sys/kernel/cap_last_cap") as f:
                last = int(f.read())
        except (OSError, ValueError):
            last = 63
        for cap in range(last + 1):
            if self.libc.prctl(PR_CAPBSET_READ, cap, 0, 0, 0) == 1:
                self.prctl(PR_CAPBSET_DROP, cap, what="PR_CAPBSET_DROP %d" % cap)
        self.libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)  # EINVAL on old kernels
        hdr = _CapHeader(LINUX_CAPABILITY_VERSION_3, 0)
        data = (_CapData * 2)()
        self._check(self.libc.capset(ctypes.byref(hdr), ctypes.byref(data)), "capset")

    def spawn_sleeper(self):
        """A child that shares this process's memory and descriptor table and does nothing but
        sleep in pause() (C code: it never runs Python, so sharing the interpreter's memory is
        safe). It is the run's init: copying the page tables of the preloaded address space
        for a Python init, and tearing them down again, cost a few ms of CPU per run. The
        caller sets its signal dispositions first (none may run a handler; SIGCHLD ignored,
        so the kernel reaps the orphans it inherits). Returns its pid."""
        stack = ctypes.create_string_buffer(SLEEPER_STACK)
        _SLEEPER_STACKS.append(stack)  # pause() sits on it until the child dies: never freed
        top = (ctypes.addressof(stack) + SLEEPER_STACK - 64) & ~15
        pid = self.libc.clone(ctypes.cast(self.libc.pause, ctypes.c_void_p), top,
                              CLONE_VM | CLONE_FILES | signal.SIGCHLD, None)
        if pid < 0:
            err = ctypes.get_errno()
            raise OSError(err, "clone: %s" % os.strerror(err))
        return pid

    def install_seccomp(self, bpf):
        buf = ctypes.create_string_buffer(bpf, len(bpf))
        prog = _SockFprog(len(bpf) // 8, ctypes.cast(buf, ctypes.c_void_p))
        self.prctl(PR_SET_NO_NEW_PRIVS, 1, what="PR_SET_NO_NEW_PRIVS")
        self.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(prog),
                   what="PR_SET_SECCOMP")


# ---------------------------------------------------------------------------------------------
# Small OS helpers


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


# ---------------------------------------------------------------------------------------------
# The run side: intermediate (I), init (G) and run process (U)


class ChildSpec:
    """What a forked child needs: config, pipe ends, and the isolation mode."""

    def __init__(self, **kw):
        self.__dict__.update(kw)


def _send_record(fd, obj):
    write_all(fd, encode_json_frame(obj))


def _intermediate(spec):
    """I: isolates (namespaces, mounts, caps), creates the init G and the run process U, reports
    G's pid and the fates of U and G."""
    st_w = spec.st_w
    try:
        k = spec.kernel
        k.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != spec.parent_pid:  # the forker died before the prctl
            os._exit(0)
        devnull = os.open("/dev/null", os.O_RDWR)
        os.dup2(devnull, 0)
        os.dup2(devnull, 1)
        close_fds_except({0, 1, 2, st_w, spec.req_r, spec.out_w, spec.err_w, spec.res_w})
        # The zygote is non-dumpable, so its fork's /proc/self files belong to root: become
        # dumpable while writing them (oom_score_adj, uid_map), non-dumpable again below.
        k.prctl(PR_SET_DUMPABLE, 1, what="PR_SET_DUMPABLE")
        write_file("/proc/self/oom_score_adj", "1000")
        if spec.isolate:
            _isolate(spec)
        k.drop_capabilities()
        k.prctl(PR_SET_NO_NEW_PRIVS, 1, what="PR_SET_NO_NEW_PRIVS")
        k.prctl(PR_SET_DUMPABLE, 0, what="PR_SET_DUMPABLE")
        if not spec.isolate:
            gpid = os.fork()
            if gpid == 0:
                _init(spec)
            _send_record(st_w, {"t": "pid", "pid": gpid})
            for fd in (spec.req_r, spec.out_w, spec.err_w, spec.res_w):
                os.close(fd)
            _, status = os.waitpid(gpid, 0)
            _send_record(st_w, {"t": "gstatus", "status": status})
            os._exit(0)
        # With a PID namespace: the first child is PID 1 (G, the sleeping init), the second
        # PID 2 (U, forked from I: one copy of the zygote's address space per run, not two).
        gpid = _spawn_init(k)
        _send_record(st_w, {"t": "pid", "pid": gpid})
        try:
            upid = os.fork()
        except BaseException:  # noqa: B902
            os.kill(gpid, signal.SIGKILL)
            raise
        if upid == 0:
            _run_process(spec)
        for fd in (spec.req_r, spec.out_w, spec.err_w, spec.res_w):
            os.close(fd)
        _reap_run(st_w, gpid, upid)
        os._exit(0)
    except BaseException as e:  # noqa: B902 - report anything, then die
        try:
            _send_record(st_w, {"t": "setup_error", "message": "%s: %s" % (type(e).__name__, e)})
        except BaseException:  # noqa: B902
            pass
        os._exit(1)


def _spawn_init(k):
    """G: PID 1 of the run's namespace, a sleeper (Kernel.spawn_sleeper). It inherits I's
    signal dispositions: no handler (the kernel drops every signal without one that a process
    of the namespace sends its init, so nothing in the run can stop it or make it run code)
    and SIGCHLD ignored (orphans of the run are reaped by the kernel). I's own are restored."""
    saved = {}
    for sig in signal.valid_signals():
        try:
            h = signal.getsignal(sig)
        except (OSError, ValueError):
            continue
        if sig == signal.SIGCHLD or callable(h):
            saved[sig] = h
            signal.signal(sig, signal.SIG_IGN if sig == signal.SIGCHLD else signal.SIG_DFL)
    try:
        return k.spawn_sleeper()
    finally:
        for sig, h in saved.items():
            signal.signal(sig, h if h is not None else signal.SIG_DFL)


def _reap_run(st_w, gpid, upid):
    """I, after forking G and U: reports U's status (with its rusage), ends the namespace when
    U has ended, and reports G's status."""
    left = {gpid, upid}
    while left:
        try:
            pid, status, usage = os.wait4(-1, 0)
        except ChildProcessError:
            break
        if pid == upid:
            rec = {"t": "ustatus", "status": status,
                   "cpu_ms": int((usage.ru_utime + usage.ru_stime) * 1000),
                   "max_rss_kb": int(usage.ru_maxrss)}
            _send_record(st_w, rec)
            # The run ends with U, but its namespace is ended by Z (it kills G), after `done`
            # when nothing of the run holds its pipes: killing G here would tear down U's
            # address space (kept by U's sleeper) while Z reports the run, on the same cores.
        elif pid == gpid:
            _send_record(st_w, {"t": "gstatus", "status": status})
        left.discard(pid)


def _isolate(spec):
    """Fresh user, mount, PID and IPC namespaces; a private tmpfs on /tmp (and the work dir)."""
    k = spec.kernel
    uid, gid = os.getuid(), os.getgid()
    k.unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC)
    write_file("/proc/self/setgroups", "deny")
    write_file("/proc/self/uid_map", "%d %d 1" % (uid, uid))
    write_file("/proc/self/gid_map", "%d %d 1" % (gid, gid))
    k.mount(None, "/", None, MS_REC | MS_PRIVATE, None)
    opts = "size=%d,mode=0700" % spec.cfg["tmpfs_size_bytes"]
    k.mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, opts)
    workdir = spec.cfg["workdir"]
    if not workdir.startswith("/tmp/"):
        k.mount("tmpfs", workdir, "tmpfs", MS_NOSUID | MS_NODEV, opts)
    # The container's /dev/shm (POSIX shared memory, multiprocessing) is one tmpfs for the whole
    # container, and /dev/mqueue shows the message queues of the container's IPC namespace (not
    # of the run's new one): cover both, or whatever one run leaves there the next one sees.
    if os.path.isdir("/dev/shm"):
        k.mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                "size=%d,mode=1777" % spec.cfg["tmpfs_size_bytes"])
    if os.path.isdir("/dev/mqueue"):
        k.mount("mqueue", "/dev/mqueue", "mqueue", MS_NOSUID | MS_NODEV | MS_NOEXEC, None)
    _seed_tmp(spec)


def _seed_tmp(spec):
    """Creates the work dir and restores the matplotlib config dir in a fresh /tmp."""
    os.makedirs(spec.cfg["workdir"], mode=0o700, exist_ok=True)
    if spec.mpl_seed:
        d, files = spec.mpl_seed
        os.makedirs(d, mode=0o700, exist_ok=True)
        for name, data in files.items():
            with open(os.path.join(d, name), "wb") as f:
                f.write(data)


def _init(spec):
    """G without namespaces (isolate=false): leads the run's process group, forks the run
    process U, reaps, reports U's status."""
    try:
        spec.kernel.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if not spec.isolate:
            os.setsid()
        upid = os.fork()
        if upid == 0:
            _run_process(spec)
        for fd in (spec.req_r, spec.out_w, spec.err_w, spec.res_w):
            os.close(fd)
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1,
                    signal.SIGUSR2):
            signal.signal(sig, signal.SIG_IGN)
        status, usage = None, None
        while True:
            try:
                pid, st, ru = os.wait4(-1, 0)
            except ChildProcessError:
                break
            if pid == upid:
                status, usage = st, ru
                break
        rec = {"t": "ustatus", "status": status}
        if usage is not None:
            rec["cpu_ms"] = int((usage.ru_utime + usage.ru_stime) * 1000)
            rec["max_rss_kb"] = int(usage.ru_maxrss)
        _send_record(spec.st_w, rec)
    finally:
        os._exit(0)


def _run_process(spec):
    """U: waits for the request, then runs it. Never returns."""
    code = EX_INTERNAL
    res_w = spec.res_w
    try:
        spec.kernel.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if spec.isolate:
            # Its own session and process group: I, F and Z share the container's group, and
            # kill(0) / killpg(getpgrp()) would reach them across the PID namespace. (Without
            # namespaces G made the session; U stays in G's group, which _kill_tree kills.)
            os.setsid()
        devnull = os.open("/dev/null", os.O_RDWR)
        os.dup2(devnull, 0)
        os.dup2(spec.out_w, 1)
        os.dup2(spec.err_w, 2)
        close_fds_except({0, 1, 2, spec.req_r, res_w})
        prepared = _prepare_run(spec)
        _send_record(res_w, {"t": "waiting"})
        if spec.cfg["mode"] == "session":
            code = _session_serve(spec, prepared)
        else:
            raw = read_all(spec.req_r)
            os.close(spec.req_r)
            if not raw:
                os._exit(0)  # the zygote discarded this prepared child
            code = _run_request(json.loads(raw.decode("utf-8")), spec, prepared)
    except BaseException as e:  # noqa: B902
        try:
            _send_record(res_w, {"t": "internal", "message": "%s: %s" % (type(e).__name__, e)})
        except BaseException:  # noqa: B902
            pass
    finally:
        # Closing the pipes first lets the zygote see EOF before this big address space is torn
        # down; the exit status still comes from the init.
        for fd in (1, 2, res_w):
            try:
                os.close(fd)
            except OSError:
                pass
        if spec.isolate:
            # A sleeper sharing this address space keeps it alive past our exit: the exit is then
            # quick, I reports our status at once, and the teardown of the address space (some
            # ms of CPU) happens when I ends the namespace, after `done` has gone out.
            try:
                spec.kernel.spawn_sleeper()
            except BaseException:  # noqa: B902 - e.g. RLIMIT_NPROC: then the exit is just slower
                pass
        os._exit(code)


def _set_rlimit(resource_mod, res, soft, hard=None):
    cur_soft, cur_hard = resource_mod.getrlimit(res)
    hard = soft if hard is None else hard
    if cur_hard != resource_mod.RLIM_INFINITY:
        hard = min(hard, cur_hard)
        soft = min(soft, hard)
    resource_mod.setrlimit(res, (soft, hard))


# RLIMIT_DATA's hard limit lies this far above the soft one: after the cell the harness raises
# the soft limit to it, so that a cell that used its whole budget still gets its traceback,
# figures and files reported (the cell itself may raise it too: 32 MiB more, within the
# container's memory limit, which stays the hard ceiling).
DATA_HEADROOM = 32 << 20


def parse_vm_data(status_text):
    """VmData of /proc/<pid>/status, in bytes, or None."""
    for line in status_text.splitlines():
        if line.startswith("VmData:"):
            parts = line.split()
            if len(parts) >= 2 and parts[1].isdigit():
                unit = parts[2].lower() if len(parts) > 2 else "kb"
                return int(parts[1]) * (1024 if unit == "kb" else 1)
    return None


def data_rlimit(base_bytes, budget_bytes):
    """(soft, hard) RLIMIT_DATA for a run: what the process already maps privately (inherited
    from the zygote: preloaded modules, mostly shared copy-on-write) plus the run's budget."""
    soft = base_bytes + budget_bytes
    return soft, soft + DATA_HEADROOM


def narrowed_memory(run_limits, config_limits):
    """The run's memory budget when the request narrowed it below the pool's (config.limits), or
    None: at the pool's own budget the container's cgroup limit is the only enforcement, because
    RLIMIT_DATA also counts untouched reservations (see _apply_rlimits)."""
    budget = run_limits.get("memory_bytes", 0)
    pool = config_limits.get("memory_bytes", 0)
    if budget > 0 and (pool <= 0 or budget < pool):
        return budget
    return None


def _vm_data():
    try:
        with open("/proc/self/status") as f:
            return parse_vm_data(f.read())
    except OSError:
        return None


def _apply_rlimits(limits, memory_budget=None, cpu=True):
    """Sets the run's rlimits; returns RLIMIT_DATA's (soft, hard) when the memory is narrowed.
    cpu=False (session mode): no RLIMIT_CPU, since a session's CPU time adds up over cells."""
    if cpu:
        _set_rlimit(resource, resource.RLIMIT_CPU, limits["cpu_s"], limits["cpu_s"] + 1)
    _set_rlimit(resource, resource.RLIMIT_NPROC, limits["nproc"])
    _set_rlimit(resource, resource.RLIMIT_NOFILE, limits["nofile"])
    _set_rlimit(resource, resource.RLIMIT_FSIZE, limits["fsize_bytes"])
    _set_rlimit(resource, resource.RLIMIT_CORE, 0)
    # Per-run memory narrowing. RLIMIT_DATA (Linux >= 4.7 counts every private writable mapping,
    # not only the heap) refuses allocations past the budget: Python raises MemoryError, which
    # the zygote reports as verdict `memory`. RLIMIT_AS is not used: it also counts PROT_NONE
    # reservations (malloc arenas) and shared libraries. RLIMIT_DATA still counts writable
    # mappings that are never touched (8 MiB per thread stack, ~64 MiB per OpenBLAS buffer, one
    # per thread calling BLAS at once): hence it is applied only to a narrowed budget.
    if memory_budget is not None:
        base = _vm_data()
        if base is not None:
            soft, hard = data_rlimit(base, memory_budget)
            _set_rlimit(resource, resource.RLIMIT_DATA, soft, hard)
            return resource.getrlimit(resource.RLIMIT_DATA)
    return None


def _relax_data_limit():
    """After the cell: the soft RLIMIT_DATA up to the hard one (see DATA_HEADROOM)."""
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
        if soft != hard:
            resource.setrlimit(resource.RLIMIT_DATA, (hard, hard))
    except (OSError, ValueError):
        pass


class _ResultSender:
    """Records to Z. Locked: in a session a thread of the user's may call plt.show() while the
    harness answers an op, and a record larger than PIPE_BUF is written in several parts."""

    def __init__(self, fd):
        self.fd = fd
        self.lock = threading.Lock()
        if hasattr(os, "register_at_fork"):  # a fork while another thread held it
            os.register_at_fork(after_in_child=self._new_lock)

    def _new_lock(self):
        self.lock = threading.Lock()

    def send(self, obj):
        data = encode_json_frame(obj)
        with self.lock:
            write_all(self.fd, data)


def _fresh_stdio():
    sys.stdin = sys.__stdin__ = io.TextIOWrapper(
        io.BufferedReader(io.FileIO(0, "r", closefd=False)), encoding="utf-8",
        errors="surrogateescape")
    sys.stdout = sys.__stdout__ = io.TextIOWrapper(
        io.FileIO(1, "w", closefd=False), encoding="utf-8", errors="surrogateescape",
        write_through=True)
    sys.stderr = sys.__stderr__ = io.TextIOWrapper(
        io.FileIO(2, "w", closefd=False), encoding="utf-8", errors="backslashreplace",
        write_through=True)


def _flush_stdio():
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:  # noqa: B902 - the user may have replaced or closed them
            pass


class _FigureCapture:
    """Turns open matplotlib figures into image records (plt.show() and the end of the cell)."""

    def __init__(self, sender, image_cfg):
        self.sender = sender
        self.cfg = image_cfg
        self.reset()

    def reset(self):
        """A new cell: a new budget (session mode runs several cells in one process)."""
        self.budget = FigureBudget(self.cfg["max_figures"])
        self.too_large = False

    @property
    def truncated(self):
        return self.budget.truncated or self.too_large

    def install(self):
        plt = sys.modules.get("matplotlib.pyplot")
        if plt is not None:
            self._patch(plt)
        else:
            sys.meta_path.insert(0, _PyplotImportHook(self._patch))

    def _patch(self, plt):
        capture = self

        def show(*args, **kwargs):
            """Sandbox: captures every open figure as a PNG image and closes it."""
            capture.capture_all()

        plt.show = show

    def capture_all(self):
        plt = sys.modules.get("matplotlib.pyplot")
        if plt is None:
            return
        for num in list(plt.get_fignums()):
            fig = plt.figure(num)
            try:
                if self.budget.take():
                    self._render(fig)
            except Exception as e:
                sys.stderr.write("[sandbox] figure %s could not be rendered: %s: %s\n"
                                 % (num, type(e).__name__, e))
            finally:
                plt.close(fig)

    def _render(self, fig):
        w_in, h_in = fig.get_size_inches()
        dpi = fit_dpi(w_in, h_in, self.cfg["dpi"], self.cfg["max_width_px"],
                      self.cfg["max_height_px"])
        buf = io.BytesIO()
        # zlib level 1, not PIL's default 6: ~10 ms less per figure, for a PNG ~25% larger.
        fig.savefig(buf, format="png", dpi=dpi, pil_kwargs={"compress_level": 1})
        data = buf.getvalue()
        size = png_size(data)
        if size is None or size[0] > self.cfg["max_width_px"] or size[1] > self.cfg["max_height_px"]:
            self.too_large = True
            return
        self.sender.send({"t": "image", "mime_type": "image/png", "width": size[0],
                          "height": size[1], "data_b64": base64.b64encode(data).decode("ascii")})


class _PyplotImportHook:
    """Patches matplotlib.pyplot.show when the cell imports pyplot (if it was not preloaded)."""

    def __init__(self, patch):
        self.patch = patch

    def find_spec(self, name, path=None, target=None):
        if name != "matplotlib.pyplot":
            return None
        import importlib.machinery
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        loader, patch = spec.loader, self.patch

        class Loader:
            def create_module(self, s):
                return loader.create_module(s)

            def exec_module(self, module):
                loader.exec_module(module)
                patch(module)

        spec.loader = Loader()
        return spec


def _write_inputs(files):
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


def _collect_files(workdir, input_hashes, files_cfg, sender):
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
    return _send_files(workdir, candidates, files_cfg, sender) or walk_truncated


def _send_files(workdir, candidates, files_cfg, sender):
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


def _run_cell(source, namespace, value_max_chars, on_end=None, sources=None, tb_limits=None):
    """Runs the cell. Returns (exit status, value repr or None, structured traceback or None,
    memory_error: the cell ended with an uncaught MemoryError). `on_end` is called as soon as
    the cell's code is over, before anything is reported. `sources`: session mode's CellSources."""
    on_end = on_end or (lambda: None)
    max_frames = tb_limits["max_frames"] if tb_limits else None
    register_source(source)
    try:
        body, expr = split_cell(source)
        if sources is not None:
            sources.add(source, (body, expr))
    except (SyntaxError, ValueError, OverflowError, MemoryError, RecursionError) as e:
        on_end()
        text, tb = compile_error_report(e)
        sys.stderr.write(text)
        return 1, None, tb, isinstance(e, MemoryError)
    try:
        exec(body, namespace)
        value = None
        if expr is not None:
            value = format_value(eval(expr, namespace), value_max_chars)
        on_end()
        return 0, value, None, False
    except SystemExit as e:
        on_end()
        status, text = system_exit_status(e)
        if text is not None:
            sys.stderr.write(text + "\n")
        return status, None, None, False
    except BaseException as e:  # noqa: B902 - exactly what the interpreter would report
        on_end()
        try:
            sys.stderr.write(format_exception_trimmed(e, sources=sources, max_frames=max_frames))
        except BaseException:  # noqa: B902
            pass
        tb = structured_traceback(e, max_frames=max_frames)
        if tb_limits is not None:
            tb = bound_traceback(tb, tb_limits)
        return 1, None, tb, isinstance(e, MemoryError)


def _keep_figures_open(atexit_mod):
    """pyplot registers Gcf.destroy_all with atexit: run there, it would close every figure
    still open before the harness captures them (the end of the run returns open figures)."""
    helpers = sys.modules.get("matplotlib._pylab_helpers")
    gcf = getattr(helpers, "Gcf", None)
    if gcf is not None and hasattr(gcf, "destroy_all"):
        atexit_mod.unregister(gcf.destroy_all)


def _interpreter_shutdown():
    """What the interpreter does after __main__: join non-daemon threads, run atexit (except
    matplotlib's closing of the figures, which are captured after this)."""
    try:
        import threading
        if hasattr(threading, "_shutdown"):
            threading._shutdown()
    except BaseException:  # noqa: B902
        pass
    import atexit
    try:
        _keep_figures_open(atexit)
    except BaseException:  # noqa: B902 - the code may have replaced matplotlib's modules
        pass
    try:
        atexit._run_exitfuncs()
    except BaseException:  # noqa: B902
        pass


def _prepare_run(spec):
    """U, before the request: everything that does not depend on it."""
    cfg = spec.cfg
    sender = _ResultSender(spec.res_w)
    os.chdir(cfg["workdir"])
    _fresh_stdio()
    sys.path.insert(0, cfg["workdir"])
    main_mod = types.ModuleType("__main__")
    main_mod.__dict__["__builtins__"] = __builtins__
    sys.modules["__main__"] = main_mod
    capture = _FigureCapture(sender, cfg["image"])
    capture.install()
    return sender, main_mod, capture


def _run_request(req, spec, prepared):
    """U, after the request arrived: files, limits, seccomp, the cell, figures, files out."""
    cfg = spec.cfg
    sender, main_mod, capture = prepared
    workdir = cfg["workdir"]
    files = [(validate_rel_path(f["path"]), base64.b64decode(f["content_b64"]))
             for f in req.get("files", [])]
    input_hashes = _write_inputs(files)
    sys.argv = [CELL_FILENAME] + list(req.get("argv", []))
    _apply_rlimits(req["limits"], narrowed_memory(req["limits"], cfg["limits"]))
    spec.kernel.prctl(PR_SET_NO_NEW_PRIVS, 1, what="PR_SET_NO_NEW_PRIVS")
    if cfg["seccomp_bpf"] is not None:
        spec.kernel.install_seccomp(cfg["seccomp_bpf"])
    # -- nothing but the user's code and the collection of its results after this point --
    sender.send({"t": "started"})
    run_pid = os.getpid()
    status, value, tb, memory_error = _run_cell(req["code"], main_mod.__dict__,
                                                cfg["value_max_chars"], on_end=_relax_data_limit,
                                                tb_limits=cfg["traceback"])
    _interpreter_shutdown()
    _flush_stdio()
    if os.getpid() != run_pid:
        os._exit(status)  # a process the cell forked reached the cell's end: it exits like Python
    try:
        capture.capture_all()
    except BaseException as e:  # noqa: B902
        sys.stderr.write("[sandbox] figures could not be captured: %s\n" % e)
    _flush_stdio()
    files_truncated = _collect_files(workdir, input_hashes, cfg["files_out"], sender)
    sender.send({"t": "result", "value": value, "traceback": tb, "memory_error": memory_error,
                 "files_truncated": files_truncated, "images_truncated": capture.truncated})
    return status


# ---------------------------------------------------------------------------------------------
# Session mode, in U: cells in one persistent __main__, and file operations


class FileOpError(Exception):
    """A file operation failed for a reason the user should read (the reply's error)."""


def _read_exact(fd, n):
    """n bytes from a blocking fd, or None at EOF."""
    chunks = []
    while n:
        chunk = os.read(fd, min(n, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def _read_request(fd):
    """U: the next request frame from Z (blocking), or None when Z closed the pipe."""
    head = _read_exact(fd, 5)
    if head is None:
        return None
    payload = _read_exact(fd, int.from_bytes(head[:4], "big"))
    if payload is None or head[4:5] != KIND_JSON:
        return None
    return json.loads(payload.decode("utf-8"))


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
    import errno
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
        import errno
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


class _SessionContext:
    def __init__(self):
        self.initialized = False
        self.data_limit = None  # RLIMIT_DATA (soft, hard) when the session's memory is narrowed
        self.fsize = None  # the session's RLIMIT_FSIZE, named in a put_files error
        self.sources = CellSources()


def _session_serve(spec, prepared):
    """U in session mode: serves requests until Z closes the request pipe. Limits and the
    seccomp filter are applied once, before the first request is handled."""
    cfg = spec.cfg
    sender = prepared[0]
    ctx = _SessionContext()
    while True:
        req = _read_request(spec.req_r)
        if req is None:
            return 0
        if not ctx.initialized:
            limits = req["session_limits"]
            ctx.data_limit = _apply_rlimits(limits, narrowed_memory(limits, cfg["limits"]),
                                            cpu=False)
            ctx.fsize = limits["fsize_bytes"]
            spec.kernel.prctl(PR_SET_NO_NEW_PRIVS, 1, what="PR_SET_NO_NEW_PRIVS")
            if cfg["seccomp_bpf"] is not None:
                spec.kernel.install_seccomp(cfg["seccomp_bpf"])
            _relax_data_limit()  # the narrowed budget is lowered again for each cell
            ctx.initialized = True
        if req["t"] == "run":
            _session_cell(req, spec, prepared, ctx)
        else:
            sender.send(_session_file_op(req, cfg, ctx))


def _session_file_op(req, cfg, ctx):
    """A file op's reply record. Harness code on absolute paths (the cell may have chdir'ed)."""
    workdir = cfg["workdir"]
    op = req["op"]
    reply = {"t": "reply", "seq": req["seq"], "id": req["id"]}
    try:
        if op == "put_files":
            put_files(workdir, [(f["path"], base64.b64decode(f["content_b64"])) for f in req["files"]],
                      cfg["tmpfs_size_bytes"], ctx.fsize)
            result = {}
        elif op == "list_files":
            files, truncated = list_files(workdir, req["max_entries"])
            result = {"files": files, "truncated": truncated}
        elif op == "get_file":
            result = get_file(workdir, req["path"], req["max_bytes"])
        elif op == "delete_file":
            result = delete_file(workdir, req["path"])
        else:
            raise FileOpError("unknown file operation %r" % op)
        reply.update(ok=True, result=result)
    except FileOpError as e:
        reply.update(ok=False, error=str(e))
    except OSError as e:
        reply.update(ok=False, error="%s failed: %s" % (op, e))
    return reply


def _session_cell(req, spec, prepared, ctx):
    """One cell in the session's persistent __main__. Ends with the `result` record ("cell
    finished"); threads are not joined and atexit does not run (the interpreter lives on)."""
    cfg = spec.cfg
    sender, main_mod, capture = prepared
    workdir = cfg["workdir"]
    seq = req["seq"]
    try:
        put_files(workdir, [(f["path"], base64.b64decode(f["content_b64"])) for f in req["files"]],
                  cfg["tmpfs_size_bytes"], ctx.fsize)
    except FileOpError as e:
        sender.send({"t": "result", "seq": seq, "input_error": str(e)})
        return
    before = snapshot_files(workdir)
    sys.argv = [CELL_FILENAME] + list(req.get("argv", []))
    capture.reset()
    if ctx.data_limit is not None:
        try:
            resource.setrlimit(resource.RLIMIT_DATA, ctx.data_limit)
        except (OSError, ValueError):
            pass  # the code lowered the hard limit itself
    usage0 = _self_usage()
    sender.send({"t": "started"})
    run_pid = os.getpid()
    status, value, tb, memory_error = _run_cell(req["code"], main_mod.__dict__,
                                                cfg["value_max_chars"], on_end=_relax_data_limit,
                                                sources=ctx.sources, tb_limits=cfg["traceback"])
    _flush_stdio()
    if os.getpid() != run_pid:
        os._exit(status)  # a process the cell forked reached the cell's end: it exits like Python
    try:
        capture.capture_all()
    except BaseException as e:  # noqa: B902
        sys.stderr.write("[sandbox] figures could not be captured: %s\n" % e)
    _flush_stdio()
    after, walk_truncated = walk_regular_files(workdir)
    changed = set(changed_files(before, {rel: (st.st_size, st.st_mtime_ns, st.st_ino)
                                         for rel, st in after}))
    files_truncated = _send_files(workdir, [(rel, st.st_size, rel not in changed)
                                            for rel, st in after], cfg["files_out"], sender)
    files_truncated = files_truncated or walk_truncated
    usage1 = _self_usage()
    sender.send({"t": "result", "seq": seq, "status": status, "value": value, "traceback": tb,
                 "memory_error": memory_error, "files_truncated": files_truncated,
                 "images_truncated": capture.truncated,
                 "cpu_ms": int((usage1[0] - usage0[0]) * 1000), "max_rss_kb": usage1[1]})


def _self_usage():
    """(CPU seconds, max RSS kB) of this process and its waited-for children."""
    a = resource.getrusage(resource.RUSAGE_SELF)
    b = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime,
            int(max(a.ru_maxrss, b.ru_maxrss)))


# ---------------------------------------------------------------------------------------------
# The zygote


class Channel:
    """The control channel: frames on the container's stdin/stdout, moved to close-on-exec fds
    so that fds 0 and 1 of the zygote (and of everything it forks) are /dev/null."""

    def __init__(self):
        pending = b""
        stdin = getattr(sys.stdin, "buffer", None)
        if stdin is not None:
            pending = _drain_buffered(stdin)
        _KEEP_ALIVE.extend([sys.stdin, sys.stdout, sys.__stdin__, sys.__stdout__])
        self.in_fd = os.dup(0)  # os.dup makes non-inheritable (O_CLOEXEC) descriptors
        self.out_fd = os.dup(1)
        devnull = os.open("/dev/null", os.O_RDWR)
        os.dup2(devnull, 0)
        os.dup2(devnull, 1)
        os.close(devnull)
        self.decoder = FrameDecoder()
        self.decoder.feed(pending)
        self.queue = []
        self.eof = False
        self._parse()

    def _parse(self):
        for kind, payload in self.decoder.frames():
            self.queue.append(decode_message(kind, payload))

    def on_readable(self):
        data = os.read(self.in_fd, 1 << 16)
        if not data:
            self.eof = True
            if self.decoder.pending:
                raise ProtocolError("the control stream ended inside a frame")
            return
        self.decoder.feed(data)
        self._parse()

    def next_message(self, timeout=None):
        """Blocks for the next message; None at EOF or after the timeout."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.queue and not self.eof:
            wait = None if deadline is None else max(deadline - time.monotonic(), 0)
            import select
            r, _, _ = select.select([self.in_fd], [], [], wait)
            if not r:
                return None
            self.on_readable()
        return self.queue.pop(0) if self.queue else None

    def send(self, obj):
        write_all(self.out_fd, encode_json_frame(obj))

    def send_output(self, kind, data):
        if data:
            write_all(self.out_fd, encode_frame(kind, data))


_KEEP_ALIVE = []  # stdio objects of fds the zygote re-points: never let GC close them


def _drain_buffered(reader):
    """Bytes the bootstrap's buffered reader already holds beyond the harness source."""
    out = []
    os.set_blocking(0, False)
    try:
        while True:
            try:
                chunk = reader.read1(1 << 16)
            except BlockingIOError:
                break
            if not chunk:
                break
            out.append(chunk)
    finally:
        os.set_blocking(0, True)
    return b"".join(out)


class Prepared:
    """A forked, isolated child waiting for its request."""

    def __init__(self, ipid, req_w, out_r, err_r, res_r, st_r):
        self.ipid = ipid
        self.gpid = None
        self.req_w, self.out_r, self.err_r, self.res_r, self.st_r = req_w, out_r, err_r, res_r, st_r
        self.st_decoder = FrameDecoder(max_payload=1 << 16, kinds=(KIND_JSON,))
        self.reaped = False
        # session mode (see Zygote._session_setup)
        self.started = False  # a request was sent: U applied its limits, state may exist
        self.cells = 0
        self.seq = 0  # request number, echoed in U's answers: a stale answer is never taken
        self.discarded = 0  # bytes read from U's pipes and dropped since the last request
        self.res_decoder = None
        self.open = {}  # fd -> tag of U's pipes not yet at EOF
        self.pending = bytearray()  # request bytes not yet written to req_w
        self.counters = None
        self.limits = None  # the session limits U was initialized with (at its first request)

    def fds(self):
        return [fd for fd in (self.req_w, self.out_r, self.err_r, self.res_r, self.st_r)
                if fd is not None]


class RunState:
    def __init__(self, rid, limits):
        self.rid = rid
        self.limits = limits
        self.kill_reason = None
        self.kill_time = None
        self.internal = None
        self.out_bytes = 0
        self.output_cut = False
        self.result_bytes = 0
        self.ustatus = None
        self.gstatus = None
        self.leftovers_killed = False
        self.cpu_ms = None
        self.max_rss_kb = None
        self.started = False
        self.result = {}
        self.images = 0
        self.images_truncated = False
        self.files = 0
        self.file_bytes = 0
        self.file_piece = None  # (path, bytes so far) of the file being relayed
        self.files_truncated = False
        self.corrupt = None
        self.claimed_failure = None  # U reported a failure after user code ran: an `error`
        self.code_ran_before = False


OUTPUT_CHUNK = 1 << 16
# A returned file travels in pieces of this many bytes (a multiple of 3: whole base64 quanta),
# from the run process through the zygote to the server, so no side holds a whole file.
FILE_PIECE = 3 << 18


def read_output(fd):
    """A read of a run's stdout or stderr pipe, plus whatever is already waiting behind it (no
    waiting for more): print() alone makes two writes, and each read becomes one frame."""
    data = os.read(fd, OUTPUT_CHUNK)
    while data and len(data) < OUTPUT_CHUNK:
        n = pipe_available(fd)
        if n <= 0:
            break
        more = os.read(fd, min(n, OUTPUT_CHUNK - len(data)))
        if not more:
            break
        data += more
    return data


def pipe_available(fd):
    """Bytes waiting in a pipe (FIONREAD), 0 if unknown."""
    buf = array.array("i", [0])
    try:
        fcntl.ioctl(fd, termios.FIONREAD, buf, True)
    except OSError:
        return 0
    return buf[0]


def death_reason(ustatus, gstatus, oom_kills):
    """Why the session's process ended outside a run (a session_reset's reason)."""
    if oom_kills > 0:
        return "out of memory: the OOM killer ended the session's process"
    status = ustatus if ustatus is not None else gstatus
    if status is None:
        return "the session's process ended"
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        return "the session's process was killed by signal %d (%s)" % (sig, _signame(sig))
    return "the session's process exited with status %d" % os.WEXITSTATUS(status)


# The cell can write to the result pipe of its own process (see "Trust" in the protocol doc):
# garbage there is the code's doing, not a failure of the harness or the server.
CORRUPT_RESULTS = ("the code wrote data that is not a result record to the harness's result "
                   "channel; the run's results may be incomplete")
# An `internal` record from U after the code started: the code may have written it (or broken
# the harness code in its own process); the message goes to the harness log only.
RUN_SIDE_FAILURE = ("the harness code in the run process reported a failure after the code "
                    "started; the run's results may be incomplete")


# ---------------------------------------------------------------------------------------------
# The forker F: the only process that forks run children once requests arrive
#
# Every run's processes are forked from F, never from Z: Z receives the requests and relays
# output and result records, and its freed heap keeps those bytes, so a child of Z could read
# earlier runs' code, files and output in its own (copied) memory. F is forked right after the
# preload, before any request, and never receives request data: its commands are one byte.

FORKER_PREPARE_ISOLATED = b"i"  # create the pipes, fork I with namespaces
FORKER_PREPARE_PROCESS = b"p"  # isolate=false: clean up after the last run first, then fork I
FORKER_SWEEP = b"k"  # isolate=false: kill every process but PID 1, Z and F
FORKER_CLEANUP = b"c"  # isolate=false: sweep and clean /tmp, /dev/shm, /dev/mqueue, the work dir
FORKER_PIPES = 5  # req_w, out_r, err_r, res_r, st_r: the parent ends passed to Z
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


def _proc_state(pid):
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
            if _proc_state(pid) not in (b"Z", b"X", b""):
                live += 1
        _reap_nohang(children)
        if not live:
            return
        time.sleep(0.005)


def _reap_nohang(children=None):
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


def _reap_within(children, seconds):
    """Reaps `children` until none is left or `seconds` have passed."""
    deadline = time.monotonic() + seconds
    _reap_nohang(children)
    while children and time.monotonic() < deadline:
        time.sleep(0.002)
        _reap_nohang(children)


class _ForkerState:
    """What F needs of the zygote's start-up state (config, kernel, matplotlib seed)."""

    def __init__(self, **kw):
        self.__dict__.update(kw)


def _forker_cleanup(fs, children=None):
    """isolate=false: what the last run left (processes, /tmp, /dev/shm, queues, work dir)."""
    if fs.in_container:
        kill_all_but({1, fs.zygote_pid, os.getpid()}, children=children)
        remove_tree_contents("/tmp", keep=fs.tmp_keep)
        remove_tree_contents("/dev/shm")
        remove_tree_contents("/dev/mqueue")  # unlinking a queue's file is mq_unlink
    else:  # a developer's host (tests): never touch a shared /tmp, only the work dir
        remove_tree_contents(fs.cfg["workdir"])
    os.makedirs(fs.cfg["workdir"], mode=0o700, exist_ok=True)


def _forker_spawn(fs, isolate, children):
    """Creates the run child I with its pipes; returns (I's pid, the parent ends)."""
    req_r, req_w = os.pipe()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    res_r, res_w = os.pipe()
    st_r, st_w = os.pipe()
    spec = ChildSpec(cfg=fs.cfg, kernel=fs.kernel, isolate=isolate, parent_pid=os.getpid(),
                     req_r=req_r, out_w=out_w, err_w=err_w, res_w=res_w, st_w=st_w,
                     mpl_seed=fs.mpl_seed)
    pid = os.fork()
    if pid == 0:
        try:
            os.close(fs.sock_fd)
            _intermediate(spec)
        finally:
            os._exit(EX_INTERNAL)
    children.add(pid)
    for fd in (req_r, out_w, err_w, res_w, st_w):
        os.close(fd)
    return pid, [req_w, out_r, err_r, res_r, st_r]


def _forker_main(sock, fs):
    """F: serves Z's one-byte commands until Z closes the socket (or dies: PDEATHSIG)."""
    import select
    fs.kernel.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != fs.zygote_pid:
        os._exit(0)
    fs.sock_fd = sock.fileno()
    children = set()
    while True:
        r, _, _ = select.select([sock], [], [], 0.5 if children else None)
        _reap_nohang(children)
        if not r:
            continue
        try:
            cmd = sock.recv(16)
        except OSError:
            break
        if not cmd:
            break
        try:
            if cmd in (FORKER_PREPARE_ISOLATED, FORKER_PREPARE_PROCESS):
                # The last run's tree is killed by now; its dying processes would count against
                # the next run's pids and memory limits, so the next run starts once they are gone.
                _reap_within(children, FORKER_REAP_WAIT_S)
                if cmd == FORKER_PREPARE_PROCESS:
                    _forker_cleanup(fs, children)
                pid, fds = _forker_spawn(fs, cmd == FORKER_PREPARE_ISOLATED, children)
                try:
                    send_fds(sock, encode_json({"pid": pid}), fds)
                finally:
                    for fd in fds:
                        os.close(fd)
            elif cmd == FORKER_SWEEP:
                if fs.in_container:
                    kill_all_but({1, fs.zygote_pid, os.getpid()}, children=children)
                sock.send(encode_json({"ok": True}))
            elif cmd == FORKER_CLEANUP:
                _forker_cleanup(fs, children)
                sock.send(encode_json({"ok": True}))
            else:
                sock.send(encode_json({"error": "unknown forker command %r" % cmd}))
        except Exception as e:  # reported to Z, which decides (fatal)
            try:
                sock.send(encode_json({"error": "%s: %s" % (type(e).__name__, e)}))
            except OSError:
                break
    # Z is gone or exiting: wait for the children (their address spaces' teardown), then exit.
    for pid in list(children):
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass
    os._exit(0)


class Forker:
    """Z's end of F."""

    def __init__(self, sock, pid):
        self.sock = sock
        self.pid = pid

    @classmethod
    def start(cls, fs, close_in_child):
        zsock, fsock = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        _flush_stdio()
        pid = os.fork()
        if pid == 0:
            try:
                zsock.close()
                for fd in close_in_child:
                    os.close(fd)
                _forker_main(fsock, fs)
            finally:
                os._exit(EX_INTERNAL)
        fsock.close()
        return cls(zsock, pid)

    def _command(self, cmd, nfds=0):
        try:
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

    def prepare(self, isolate):
        """A new run child: (I's pid, [req_w, out_r, err_r, res_r, st_r])."""
        cmd = FORKER_PREPARE_ISOLATED if isolate else FORKER_PREPARE_PROCESS
        reply, fds = self._command(cmd, FORKER_PIPES)
        return int(reply["pid"]), fds

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


class Zygote:
    def __init__(self, channel, cfg):
        self.chan = channel
        self.cfg = cfg
        self.kernel = Kernel()
        self.errors = []
        self.preloaded = []
        self.isolate = cfg["isolate"] is not False  # may turn False in "auto" mode
        self.run_count = 0
        self.prepared = None
        self.exit_requested = False
        self.pid = os.getpid()
        self.in_container = self.pid == 1 or os.getppid() == 1
        self.tmp_keep = set()
        self.mpl_seed = None
        self.forker = None  # F, from the end of the preload on
        self.session = cfg["mode"] == "session"
        self.session_limits = cfg["limits"]  # the latest `session` op's, for U's not started yet
        self.session_record = None  # the server's record of the session, for `resume`
        self.watchdog_s = cfg["watchdog_s"] if self.session else 0.0
        self.last_contact = time.monotonic()  # of the last message from the server

    # -- start-up ---------------------------------------------------------------------------

    def preload(self):
        os.environ.setdefault("MPLBACKEND", "Agg")
        import importlib
        for name in self.cfg["preload"]:
            try:
                importlib.import_module(name)
                if name == "matplotlib":
                    importlib.import_module("matplotlib.pyplot")
                self.preloaded.append(name)
            except (Exception, SystemExit) as e:
                self.errors.append("preload %s: %s: %s" % (name, type(e).__name__, e))
        if self.cfg["warm_plot"]:
            try:
                import matplotlib.pyplot as plt
                fig = plt.figure()
                ax = fig.add_subplot(1, 1, 1)
                ax.plot([0, 1], [0, 1], label="warm")
                ax.set_title("warm")
                ax.legend()
                fig.savefig(io.BytesIO(), format="png")
                plt.close(fig)
            except (Exception, SystemExit) as e:
                self.errors.append("warm_plot: %s: %s" % (type(e).__name__, e))
        mimetypes.init()
        self._snapshot_mpl_config()
        try:
            self.tmp_keep = set(os.listdir("/tmp"))
        except OSError:
            self.tmp_keep = set()
        # Everything preloaded goes to the collector's permanent generation: a full collection
        # in a run (any cell allocating some 10^5 objects triggers one) would otherwise write
        # to the header of every preloaded object and so copy most of the zygote's heap.
        gc.collect()
        gc.freeze()

    def _snapshot_mpl_config(self):
        """matplotlib's cache dir lives on /tmp (MPLCONFIGDIR): runs get a copy in their /tmp."""
        d = os.environ.get("MPLCONFIGDIR")
        if not d or not d.startswith("/tmp/") or not os.path.isdir(d):
            return
        files, total = {}, 0
        for name in os.listdir(d):
            full = os.path.join(d, name)
            if os.path.isfile(full) and not os.path.islink(full):
                total += os.path.getsize(full)
                if total > (8 << 20):
                    return
                with open(full, "rb") as f:
                    files[name] = f.read()
        self.mpl_seed = (d, files)

    # -- children ---------------------------------------------------------------------------

    def _start_forker(self):
        """Forks F (see "The forker"), before any request reached the zygote."""
        if any(m.get("op") != "ping" for m in self.chan.queue) or self.chan.decoder.pending:
            raise ProtocolError("a request arrived before the first ready (the server must wait "
                                "for it: nothing of a request may reach the forker's memory)")
        fs = _ForkerState(cfg=self.cfg, kernel=self.kernel, zygote_pid=self.pid,
                          mpl_seed=self.mpl_seed, tmp_keep=self.tmp_keep,
                          in_container=self.in_container, sock_fd=None)
        self.forker = Forker.start(fs, close_in_child=(self.chan.in_fd, self.chan.out_fd))

    def _spawn(self):
        ipid, (req_w, out_r, err_r, res_r, st_r) = self.forker.prepare(self.isolate)
        return Prepared(ipid, req_w, out_r, err_r, res_r, st_r)

    def _await_prepared(self, p, timeout=15.0):
        """Waits for I's `pid` record and U's `waiting` record; returns None or the error."""
        deadline = time.monotonic() + timeout
        import select
        waiting = False
        res_decoder = FrameDecoder(max_payload=1 << 16, kinds=(KIND_JSON,))
        while p.gpid is None or not waiting:
            wait = deadline - time.monotonic()
            if wait <= 0:
                return "the child did not finish its set-up within %g s" % timeout
            r, _, _ = select.select([p.st_r, p.res_r], [], [], wait)
            if p.st_r in r:
                data = os.read(p.st_r, 1 << 16)
                if not data:
                    return "the child exited during set-up"
                p.st_decoder.feed(data)
                for _, payload in p.st_decoder.frames():
                    rec = json.loads(payload.decode("utf-8"))
                    if rec.get("t") == "pid":
                        p.gpid = int(rec["pid"])
                    elif rec.get("t") == "setup_error":
                        return rec.get("message", "unknown set-up error")
                    elif rec.get("t") in ("gstatus", "ustatus"):
                        return "the child exited during set-up (status %s)" % rec.get("status")
            if p.res_r in r:
                data = os.read(p.res_r, 1 << 16)
                if not data:
                    return "the run process exited during set-up"
                res_decoder.feed(data)
                for _, payload in res_decoder.frames():
                    rec = json.loads(payload.decode("utf-8"))
                    if rec.get("t") == "waiting":
                        waiting = True
                    elif rec.get("t") == "internal":
                        return "run process: %s" % rec.get("message")
        return None

    def prepare(self):
        """Forks and isolates the next run's child. Sends `fatal` if that is impossible."""
        while True:
            p = self._spawn()
            err = self._await_prepared(p)
            if err is None:
                if self.session:
                    self._session_setup(p)
                self.prepared = p
                return
            self._discard(p)
            if self.isolate and self.cfg["isolate"] == "auto":
                self.errors.append("isolate: per-run namespaces unavailable (%s); runs use plain "
                                   "processes (isolate=false guarantees)" % err)
                log(self.errors[-1])
                self.isolate = False
                continue
            what = "per-run isolation failed" if self.isolate else "preparing a run failed"
            raise FatalError("%s: %s" % (what, err))

    def _discard(self, p):
        """Kills a prepared (or finished) child and closes its pipes."""
        if not p.reaped:
            self._kill_tree(p)
            try:
                os.kill(p.ipid, signal.SIGKILL)
            except OSError:
                pass
        for fd in p.fds():
            try:
                os.close(fd)
            except OSError:
                pass
        p.reaped = True  # by F (its child), without blocking: the exit's teardown is slow

    def _kill_tree(self, p):
        """SIGKILL to the run's init: with a PID namespace the kernel kills the whole tree."""
        if p.gpid:
            try:
                os.kill(p.gpid, signal.SIGKILL)
            except OSError:
                pass
        if not self.isolate:
            if p.gpid:
                try:
                    os.killpg(p.gpid, signal.SIGKILL)
                except OSError:
                    pass
            if self.in_container:
                self.forker.sweep()  # what escaped the group (F spares PID 1, Z and itself)

    def ready_event(self):
        ev = {"ev": "ready", "protocol": PROTOCOL_VERSION, "python": "%d.%d.%d" % sys.version_info[:3],
              "pid": self.pid, "preloaded": self.preloaded, "errors": list(self.errors),
              "isolation": "namespaces" if self.isolate else "process", "run_count": self.run_count,
              "mode": self.cfg["mode"], "cgroup": read_cgroup_baseline()}
        if self.session:
            ev.update(self._session_fields())
        return ev

    def _session_fields(self):
        p = self.prepared
        return {"cells": p.cells if p else 0, "session_started": bool(p and p.started)}

    def _pong(self, busy):
        ev = {"ev": "pong", "memory_bytes": read_memory_usage(), "busy": busy}
        if self.session:
            ev.update(self._session_fields())
        return ev

    # -- main loop --------------------------------------------------------------------------

    def serve(self):
        self.preload()
        self.kernel.prctl(PR_SET_DUMPABLE, 0, what="PR_SET_DUMPABLE")
        self._start_forker()
        self.prepare()
        self.chan.send(self.ready_event())
        self.last_contact = time.monotonic()  # the preload's seconds are not idle time
        import select
        while True:
            if not self.chan.queue:
                if self.chan.eof or self.exit_requested:
                    break
                if self.session:
                    watch = [self.chan.in_fd] + (list(self.prepared.open) if self.prepared else [])
                    wait = None
                    if self.watchdog_s > 0:
                        wait = self.last_contact + self.watchdog_s - time.monotonic()
                        if wait <= 0:
                            log("no message from a server for %.0f s: exiting" % self.watchdog_s)
                            break
                    r, _, _ = select.select(watch, [], [], wait)
                    self._session_idle(r)
                    if self.chan.in_fd in r:
                        self.chan.on_readable()
                        self.last_contact = time.monotonic()
                    continue
                watch = [self.chan.in_fd] + ([self.prepared.st_r] if self.prepared else [])
                r, _, _ = select.select(watch, [], [])
                if self.prepared and self.prepared.st_r in r:
                    # a prepared child must stay silent until its run: it died (e.g. OOM)
                    log("the prepared child died while idle; preparing another")
                    self._discard(self.prepared)
                    self.prepared = None
                    self.prepare()
                if self.chan.in_fd in r:
                    self.chan.on_readable()
                continue
            msg = self.chan.queue.pop(0)
            op = msg["op"]
            if op == "ping":
                self.chan.send(self._pong(False))
            elif op == "cancel":
                log("cancel for %r while idle: ignored" % msg.get("id"))
            elif op == "session":
                self.handle_session_op(msg)
            elif op == "resume":
                self.handle_resume_op(msg)
            elif op in FILE_OPS:
                self.handle_file_op(msg)
            elif op == "exit":
                break
            elif op == "run":
                self.handle_run(msg)
                if self.cfg["mode"] == "fresh" or self.exit_requested:
                    break
                if self.prepared is None:
                    self.prepare()
                self.chan.send(self.ready_event())
            elif op == "config":
                raise ProtocolError("config was already given")
            else:
                raise ProtocolError("unknown op %r" % op)
            self.last_contact = time.monotonic()  # a run or an op is contact until its end
        if self.prepared is not None:
            self._log_discarded(self.prepared)
            self._discard(self.prepared)
            self.prepared = None
        if not self.isolate and self.in_container:
            self.forker.cleanup()
        self.forker.close()

    def handle_run(self, msg):
        run = parse_run(msg, self.cfg)
        try:
            files = validate_input_files(run["files"], self.cfg["files_in"]["max_count"],
                                         self.cfg["files_in"]["max_total_bytes"])
        except InputError as e:
            self.chan.send(self._done_event(RunState(run["id"], run["limits"]), "error", None, None,
                                            "invalid input files: %s" % e, 0))
            return
        if self.prepared is None:
            self.prepare()
        if self.session:
            p = self.prepared
            reset = True
            try:
                reset = self._session_run(p, run, files)
            finally:
                self.run_count += 1
                if reset:
                    self._log_discarded(p)
                    self._discard(p)
                    self.prepared = None  # serve() prepares the next U and sends ready
            return
        p, self.prepared = self.prepared, None
        try:
            self._execute(p, run, files)
        finally:
            self._discard(p)
            self.run_count += 1

    def _execute(self, p, run, files):
        state = RunState(run["id"], run["limits"])
        limits = run["limits"]
        counters0 = read_memory_counters()
        t0 = time.monotonic()
        payload = encode_json({"code": run["code"], "argv": run["argv"], "limits": limits,
                               "files": [{"path": path, "content_b64": f["content_b64"]}
                                         for (path, _), f in zip(files, run["files"])]})
        sel = selectors.DefaultSelector()
        try:
            try:
                write_all(p.req_w, payload)
            except BrokenPipeError:
                state.internal = "the run process vanished before its request"
            os.close(p.req_w)
            p.req_w = None
            deadline = t0 + limits["timeout_s"]
            res_decoder = FrameDecoder(max_payload=self._max_result_record(), kinds=(KIND_JSON,))
            res_budget = self._result_budget()
            sel.register(p.out_r, selectors.EVENT_READ, "out")
            sel.register(p.err_r, selectors.EVENT_READ, "err")
            sel.register(p.res_r, selectors.EVENT_READ, "res")
            sel.register(p.st_r, selectors.EVENT_READ, "st")
            if not self.chan.eof:
                sel.register(self.chan.in_fd, selectors.EVENT_READ, "ctl")
            # messages that arrived with the run's frame
            self._handle_control(state, p, self.chan.queue)
            status_open = True
            status_closed_at = None
            pipes_open = 3
            while pipes_open or not (state.ustatus is not None or state.gstatus is not None
                                     or not status_open):
                now = time.monotonic()
                if state.kill_reason is None and now >= deadline:
                    self._kill(state, p, "timeout")
                if state.kill_time is not None and now - state.kill_time > 10:
                    raise FatalError("the run's processes did not die within 10 s of SIGKILL")
                if status_closed_at is not None and now - status_closed_at > 2:
                    log("run %r: pipes still open 2 s after its init ended; giving up on them"
                        % state.rid)
                    break
                timeout = max(deadline - now, 0) if state.kill_reason is None else 0.5
                if status_closed_at is not None:
                    timeout = 0.1
                for key, _ in sel.select(timeout):
                    tag = key.data
                    if tag == "ctl":
                        self.chan.on_readable()
                        if self.chan.eof:
                            sel.unregister(self.chan.in_fd)
                            self.exit_requested = True
                        self._handle_control(state, p, self.chan.queue)
                    elif tag in ("out", "err"):
                        data = read_output(key.fd)
                        if not data:
                            sel.unregister(key.fd)
                            pipes_open -= 1
                            continue
                        self._relay(state, p, KIND_STDOUT if tag == "out" else KIND_STDERR, data)
                    elif tag == "res":
                        data = os.read(key.fd, 1 << 16)
                        if not data:
                            sel.unregister(key.fd)
                            pipes_open -= 1
                            continue
                        state.result_bytes += len(data)
                        if state.result_bytes > res_budget:
                            sel.unregister(key.fd)
                            pipes_open -= 1
                            self._kill(state, p, "result_limit")
                            continue
                        if state.corrupt:
                            continue  # drained (so the run never blocks on it), not parsed
                        res_decoder.feed(data)
                        frames, error = res_decoder.frames_before_error()
                        for _, payload in frames:
                            self._on_result(state, payload)
                        if error is not None:
                            state.corrupt = CORRUPT_RESULTS
                    elif tag == "st":
                        data = os.read(key.fd, 1 << 16)
                        if not data:
                            sel.unregister(key.fd)
                            status_open = False
                            status_closed_at = time.monotonic()
                            continue
                        p.st_decoder.feed(data)
                        for _, payload in p.st_decoder.frames():
                            self._on_status(state, payload)
                        if state.ustatus is not None and not self.isolate:
                            self._kill_tree(p)  # the run ends with its main process
                if state.ustatus is not None and pipes_open and not state.leftovers_killed:
                    # U is gone but something of the run still holds its pipes: the init's
                    # death ends the namespace. (Else _discard kills it after `done`.)
                    state.leftovers_killed = True
                    self._kill_tree(p)
            end = time.monotonic()
        finally:
            sel.close()
        counters1 = read_memory_counters()
        verdict, exit_code, sig, detail = decide_verdict(
            kill_reason=state.kill_reason, internal=state.internal, ustatus=state.ustatus,
            gstatus=state.gstatus, oom_kills=counter_delta(counters0, counters1, "oom_kill"),
            corrupt=state.corrupt, claimed_failure=state.claimed_failure,
            limit_hits=counter_delta(counters0, counters1, "limit_hits"), cpu_ms=state.cpu_ms,
            limits=limits, memory_error=state.result.get("memory_error") is True)
        self.chan.send(self._done_event(state, verdict, exit_code, sig, detail,
                                        int((end - t0) * 1000)))

    # -- session mode -----------------------------------------------------------------------

    def _session_setup(self, p):
        """A prepared child becomes the session's U: its pipes stay open across requests."""
        p.res_decoder = FrameDecoder(max_payload=self._max_result_record(), kinds=(KIND_JSON,))
        p.open = {p.out_r: "out", p.err_r: "err", p.res_r: "res", p.st_r: "st"}
        os.set_blocking(p.req_w, False)  # Z never blocks on a U that does not read
        p.counters = read_memory_counters()

    def _log_discarded(self, p):
        if p.discarded:
            log("discarded %d bytes written between cells" % p.discarded)
            p.discarded = 0

    def handle_session_op(self, msg):
        if not self.session:
            raise ProtocolError("the session op needs session mode (config.mode \"session\")")
        rid, limits = parse_session_op(msg, self.cfg)
        record = parse_session_record(msg)
        watchdog = parse_watchdog(msg, "session", default=self.watchdog_s)
        self.session_limits = limits
        if record is not None:
            self.session_record = record
        self.watchdog_s = watchdog
        self.chan.send({"ev": "reply", "id": rid, "ok": True})

    def handle_resume_op(self, msg):
        """A server (re-)attached to this container: what it needs to serve the session again.
        idle_s is how long no server had spoken to the harness before this op."""
        if not self.session:
            raise ProtocolError("the resume op needs session mode (config.mode \"session\")")
        rid = parse_op_id(msg)
        result = {"record": self.session_record, "protocol": PROTOCOL_VERSION,
                  "idle_s": round(max(time.monotonic() - self.last_contact, 0.0), 3),
                  "watchdog_s": self.watchdog_s}
        result.update(self._session_fields())
        self.chan.send({"ev": "reply", "id": rid, "ok": True, "result": result})

    def _session_idle(self, readable):
        """Between requests: U's output is read and dropped (so that nothing of the session
        blocks on a full pipe), and the death of U or G resets the session."""
        p = self.prepared
        if p is None:
            return
        for fd in readable:
            tag = p.open.get(fd)
            if tag is None:
                continue
            data = os.read(fd, 1 << 16)
            if tag == "st":
                statuses = RunState(None, {})
                if data:
                    p.st_decoder.feed(data)
                    for _, payload in p.st_decoder.frames():
                        self._on_status(statuses, payload)
                else:
                    del p.open[fd]
                oom = counter_delta(p.counters or {}, read_memory_counters(), "oom_kill")
                self._session_reset(p, death_reason(statuses.ustatus, statuses.gstatus, oom))
                return
            if not data:
                del p.open[fd]
                continue
            p.discarded += len(data)
            if tag == "res":
                p.res_decoder.feed(data)
                _, error = p.res_decoder.frames_before_error()  # records now are nobody's: dropped
                if error is not None:
                    self._session_reset(p, "the code wrote data that is not a result record to "
                                           "the harness's result channel")
                    return

    def _session_reset(self, p, reason):
        """U (or G) is gone or unusable outside a run: kill what is left, tell the server, and
        prepare an empty session. A U that never got a request held nothing: replaced silently."""
        self._log_discarded(p)
        self._discard(p)
        self.prepared = None
        if not p.started:
            log("the prepared child died while idle; preparing another")
            self.prepare()
            return
        log("session reset: %s" % reason)
        self.chan.send({"ev": "session_reset", "reason": reason + RESET_SUFFIX})
        self.prepare()
        self.chan.send(self.ready_event())

    def _session_exchange(self, p, request, deadline, state, run):
        """Sends one request to the session's U and pumps U's pipes until U answers (the cell's
        `result` record or the op's `reply`, with this request's seq) or is gone. Returns the
        answer, or None when U was killed or died (`state` says how)."""
        p.seq += 1
        request["seq"] = p.seq
        request["session_limits"] = self.session_limits  # used by U at its first request only
        if not p.started:
            p.limits = self.session_limits
        p.started = True
        p.pending += encode_json_frame(request)
        answer = None
        gone_at = None
        writing = False
        order = {"res": 0, "out": 1, "err": 2, "st": 3, "req": 4, "ctl": 5}
        sel = selectors.DefaultSelector()
        try:
            for fd, tag in p.open.items():
                sel.register(fd, selectors.EVENT_READ, tag)
            if not self.chan.eof:
                sel.register(self.chan.in_fd, selectors.EVENT_READ, "ctl")
            self._session_control(state, p, run)  # messages that arrived with the request
            while answer is None:
                if p.pending and not writing:
                    sel.register(p.req_w, selectors.EVENT_WRITE, "req")
                    writing = True
                now = time.monotonic()
                if state.kill_reason is None and now >= deadline:
                    self._kill(state, p, "timeout")
                if state.kill_time is not None and now - state.kill_time > 10:
                    raise FatalError("the session's processes did not die within 10 s of SIGKILL")
                if (state.ustatus is not None or state.gstatus is not None
                        or p.st_r not in p.open):
                    if gone_at is None:  # U is gone: what is left of the session dies too
                        gone_at = now
                        self._kill_tree(p)
                    if not any(t in ("out", "err", "res") for t in p.open.values()):
                        break
                    if now - gone_at > 2:
                        log("session: pipes still open 2 s after its process ended; giving up")
                        break
                timeout = max(deadline - now, 0) if state.kill_reason is None else 0.5
                if gone_at is not None:
                    timeout = 0.1
                events = sorted(sel.select(timeout), key=lambda e: order[e[0].data])
                for key, _ in events:
                    tag = key.data
                    if tag == "req":
                        try:
                            n = os.write(p.req_w, p.pending[:1 << 16])
                            del p.pending[:n]
                        except BlockingIOError:
                            continue
                        except OSError:  # EPIPE: U is gone, its status follows
                            p.pending.clear()
                        if not p.pending:
                            sel.unregister(p.req_w)
                            writing = False
                    elif tag == "ctl":
                        self.chan.on_readable()
                        if self.chan.eof:
                            sel.unregister(self.chan.in_fd)
                            self.exit_requested = True
                        self._session_control(state, p, run)
                    else:
                        data = read_output(key.fd) if tag in ("out", "err") else \
                            os.read(key.fd, 1 << 16)
                        if not data:
                            sel.unregister(key.fd)
                            del p.open[key.fd]
                            continue
                        if tag == "res":
                            answer = self._session_records(state, p, data, request, run)
                            if answer is not None:
                                break  # what else is readable now belongs to the idle session
                        elif tag == "st":
                            p.st_decoder.feed(data)
                            for _, payload in p.st_decoder.frames():
                                self._on_status(state, payload)
                        elif run:
                            self._relay(state, p, KIND_STDOUT if tag == "out" else KIND_STDERR, data)
                        else:
                            p.discarded += len(data)
            if answer is not None and run:
                self._drain_output(state, p)
        finally:
            sel.close()
        p.counters = read_memory_counters()
        return answer

    def _session_control(self, state, p, run):
        """Control messages during a session request. During a file op, runs and other file ops
        wait in the queue (served after its reply); during a run they are protocol errors."""
        deferred = []
        while self.chan.queue:
            msg = self.chan.queue.pop(0)
            op = msg["op"]
            if op == "ping":
                self.chan.send(self._pong(True))
            elif op == "cancel":
                if run and msg.get("id") == state.rid:
                    self._kill(state, p, "cancel")
                else:
                    log("cancel for %r while %r is in progress: ignored" % (msg.get("id"), state.rid))
            elif op == "exit":
                self.exit_requested = True
            elif op == "session":
                self.handle_session_op(msg)
            elif op == "resume":
                self.handle_resume_op(msg)
            elif op == "run" or op in FILE_OPS:
                if run:
                    raise ProtocolError("%s %r arrived while run %r is in progress"
                                        % (op, msg.get("id"), state.rid))
                deferred.append(msg)
            elif op == "config":
                raise ProtocolError("config was already given")
            else:
                raise ProtocolError("unknown op %r" % op)
        self.chan.queue[:0] = deferred

    def _session_records(self, state, p, data, request, run):
        """Bytes from U's result pipe during a request -> the answer record, or None. Other
        records of a run are handled as in the other modes; during an op they are dropped."""
        if run:
            state.result_bytes += len(data)
            if state.result_bytes > self._result_budget():
                self._kill(state, p, "result_limit")
                return None
        p.res_decoder.feed(data)
        frames, error = p.res_decoder.frames_before_error()
        answer = None
        for _, payload in frames:
            if answer is not None:
                p.discarded += len(payload)  # a thread's record right behind the answer
                continue
            try:
                rec = json.loads(payload.decode("utf-8"))
            except ValueError:
                rec = None
            if not isinstance(rec, dict):
                error = error or ProtocolError("not a JSON object")
                break
            t = rec.get("t")
            if t in ("result", "reply") and rec.get("seq") == p.seq:
                if run and t == "result":
                    answer = state.result = rec
                elif not run and t == "reply" and rec.get("id") == request["id"]:
                    if len(payload) > reply_bound(request):
                        self._kill(state, p, "oversize")
                        return None
                    answer = rec
                continue
            if run and t not in ("result", "reply"):
                self._on_record(state, rec)
            else:
                p.discarded += len(payload)
        if error is not None and answer is None:
            # The stream cannot be trusted to be in sync any more: the session ends.
            state.corrupt = CORRUPT_RESULTS
            self._kill(state, p, "corrupt")
            return None
        return answer

    def _drain_output(self, state, p):
        """After the cell-finished record: relays what U wrote before it, which is already in
        the pipes (bytes written later belong to the time between cells)."""
        for fd, kind in ((p.out_r, KIND_STDOUT), (p.err_r, KIND_STDERR)):
            if fd not in p.open:
                continue
            n = pipe_available(fd)
            while n > 0 and not state.output_cut:
                data = os.read(fd, min(n, 1 << 16))
                if not data:
                    break
                n -= len(data)
                self._relay(state, p, kind, data)

    def _session_run(self, p, run, files):
        """A cell in the session's U. Returns True when U ended (the session must be reset)."""
        state = RunState(run["id"], run["limits"])
        state.code_ran_before = p.cells > 0  # U has run user code: none of its records is trusted
        limits = dict(run["limits"], cpu_s=0)  # no RLIMIT_CPU in a session
        self._log_discarded(p)
        counters0 = read_memory_counters()
        t0 = time.monotonic()
        req = {"t": "run", "code": run["code"], "argv": run["argv"],
               "files": [{"path": path, "content_b64": f["content_b64"]}
                         for (path, _), f in zip(files, run["files"])]}
        answer = self._session_exchange(p, req, t0 + limits["timeout_s"], state, run=True)
        limits["memory_bytes"] = narrowed_memory(p.limits, self.cfg["limits"]) or 0
        duration_ms = int((time.monotonic() - t0) * 1000)
        counters1 = read_memory_counters()
        oom = counter_delta(counters0, counters1, "oom_kill")
        alive = answer is not None and state.kill_reason is None
        if alive and "input_error" in answer:
            state.result = {}
            detail = "input files could not be written: %s" % str(answer["input_error"])[:2000]
            self.chan.send(self._done_event(state, "error", None, None, detail, duration_ms))
            return False
        p.cells += 1
        if alive:
            status = answer.get("status")
            if not _is_int(status) or not 0 <= status <= 255:
                status = 1
            cpu_ms, rss = answer.get("cpu_ms"), answer.get("max_rss_kb")
            state.cpu_ms = cpu_ms if _is_int(cpu_ms) and cpu_ms >= 0 else None
            state.max_rss_kb = rss if _is_int(rss) and rss >= 0 else None
            verdict, exit_code, sig, detail = decide_verdict(
                ustatus=status << 8, oom_kills=oom, limits=limits,
                memory_error=answer.get("memory_error") is True,
                claimed_failure=state.claimed_failure)
        else:
            verdict, exit_code, sig, detail = decide_verdict(
                kill_reason=state.kill_reason, internal=state.internal, ustatus=state.ustatus,
                gstatus=state.gstatus, oom_kills=oom, corrupt=state.corrupt,
                claimed_failure=state.claimed_failure,
                limit_hits=counter_delta(counters0, counters1, "limit_hits"), cpu_ms=state.cpu_ms,
                limits=limits, memory_error=state.result.get("memory_error") is True)
            detail += RESET_SUFFIX
        self.chan.send(self._done_event(state, verdict, exit_code, sig, detail, duration_ms,
                                        session_reset=not alive))
        return not alive

    def handle_file_op(self, msg):
        rid = parse_op_id(msg)
        if not self.session:
            self.chan.send({"ev": "reply", "id": rid, "ok": False,
                            "error": "file operations need session mode"})
            return
        try:
            req = parse_file_op(msg, self.cfg)
        except InputError as e:
            self.chan.send({"ev": "reply", "id": rid, "ok": False, "error": str(e)})
            return
        if self.prepared is None:
            self.prepare()
        p = self.prepared
        self._log_discarded(p)
        state = RunState(rid, {})
        req["id"] = rid
        ureq = {k: v for k, v in req.items() if k != "sizes"}
        ureq["t"] = "op"
        p.res_decoder.max_payload = max(reply_bound(req), self._max_result_record())
        t0 = time.monotonic()
        try:
            answer = self._session_exchange(p, ureq, t0 + self.cfg["op_timeout_s"], state,
                                            run=False)
        finally:
            p.res_decoder.max_payload = self._max_result_record()
        if answer is not None and state.kill_reason is None:
            try:
                ok, out = check_reply(req, answer)
            except ValueError as e:
                ok, out = False, "the session sent an invalid answer (%s)" % e
            reply = {"ev": "reply", "id": rid, "ok": ok}
            reply["result" if ok else "error"] = out
            self.chan.send(reply)
            return
        if state.kill_reason == "timeout":
            reason = "the file operation did not finish within %g s" % self.cfg["op_timeout_s"]
        elif state.kill_reason == "oversize":
            reason = "the session's answer exceeded %d bytes" % reply_bound(req)
        elif state.kill_reason == "corrupt":
            reason = "the code wrote data that is not a result record to the harness's result channel"
        else:
            reason = death_reason(state.ustatus, state.gstatus,
                                  counter_delta(p.counters or {}, read_memory_counters(), "oom_kill"))
        self.chan.send({"ev": "reply", "id": rid, "ok": False, "error": reason + RESET_SUFFIX})
        self._session_reset(p, reason)

    def _max_result_record(self):
        img = self.cfg["image"]
        per_image = img["max_width_px"] * img["max_height_px"] * 4 + (64 << 10)
        return max(per_image, FILE_PIECE) * 4 // 3 + (1 << 20) + self.cfg["value_max_chars"] * 8

    def _result_budget(self):
        img = self.cfg["image"]
        per_image = img["max_width_px"] * img["max_height_px"] * 4 + (64 << 10)
        files = self.cfg["files_out"]["max_total_bytes"] * 4 // 3 + files_overhead(self.cfg)
        return (1 << 20) + img["max_figures"] * per_image * 4 // 3 + files + \
            self.cfg["value_max_chars"] * 8

    def _handle_control(self, state, p, queue):
        while queue:
            msg = queue.pop(0)
            op = msg["op"]
            if op == "ping":
                self.chan.send(self._pong(True))
            elif op == "cancel":
                if msg.get("id") == state.rid:
                    self._kill(state, p, "cancel")
                else:
                    log("cancel for %r while %r runs: ignored" % (msg.get("id"), state.rid))
            elif op == "exit":
                self.exit_requested = True
            elif op in FILE_OPS:
                self.handle_file_op(msg)  # answered at once: not in session mode
            elif op == "session":
                self.handle_session_op(msg)  # a protocol error: not in session mode
            elif op == "run":
                raise ProtocolError("run %r arrived while run %r is in progress"
                                    % (msg.get("id"), state.rid))
            elif op == "config":
                raise ProtocolError("config was already given")
            else:
                raise ProtocolError("unknown op %r" % op)

    def _kill(self, state, p, reason):
        if state.kill_reason is None:
            state.kill_reason = reason
            state.kill_time = time.monotonic()
        self._kill_tree(p)

    def _relay(self, state, p, kind, data):
        if state.output_cut:
            return
        chunk, cut = apply_output_limit(state.out_bytes, state.limits["output_bytes"], data)
        self.chan.send_output(kind, chunk)
        state.out_bytes += len(chunk)
        if cut:
            state.output_cut = True
            marker = OUTPUT_MARKER.format(n=state.limits["output_bytes"]).encode()
            self.chan.send_output(KIND_STDOUT, marker)
            self._kill(state, p, "output_limit")

    def _on_status(self, state, payload):
        try:
            rec = json.loads(payload.decode("utf-8"))
        except ValueError:
            return
        t = rec.get("t")
        if t == "ustatus":
            state.ustatus = rec.get("status")
            state.cpu_ms = rec.get("cpu_ms")
            state.max_rss_kb = rec.get("max_rss_kb")
        elif t == "gstatus":
            state.gstatus = rec.get("status")
        elif t == "setup_error":
            state.internal = "set-up failed: %s" % rec.get("message")

    def _on_result(self, state, payload):
        """A record from the run process. It comes from the run's own process, so it is checked
        like untrusted data: only well-formed records within the configured bounds go out."""
        try:
            rec = json.loads(payload.decode("utf-8"))
        except ValueError:
            state.corrupt = CORRUPT_RESULTS
            return
        if isinstance(rec, dict):
            self._on_record(state, rec)

    def _on_record(self, state, rec):
        t = rec.get("t")
        rid = state.rid
        if t == "started" and not state.started:
            state.started = True
            self.chan.send({"ev": "started", "id": rid})
        elif t == "image":
            img = self.cfg["image"]
            w, h, data = rec.get("width"), rec.get("height"), rec.get("data_b64")
            if not (_is_int(w) and _is_int(h) and isinstance(data, str)
                    and 0 < w <= img["max_width_px"] and 0 < h <= img["max_height_px"]):
                return
            if state.images >= img["max_figures"]:
                state.images_truncated = True
                return
            state.images += 1
            self.chan.send({"ev": "image", "id": rid, "mime_type": "image/png", "width": w,
                            "height": h, "data_b64": data})
        elif t == "file":
            self._on_file_piece(state, rec)
        elif t == "result":
            state.result = rec
        elif t == "internal":
            message = ascii(rec.get("message"))[:2000]
            if state.started or state.code_ran_before:
                state.claimed_failure = RUN_SIDE_FAILURE
                log("run %r: the run process reported (after the code started, so unverified): %s"
                    % (rid, message))
            else:  # before the code: U is still the harness's alone
                state.internal = "harness error in the run: %s" % message

    def _on_file_piece(self, state, rec):
        """One piece of a returned file (send_file_pieces). Pieces of one file come in order,
        from offset 0 to the one marked last; a file failing a check from any piece on is
        dropped and marked (its later pieces too): the server keeps only files whose last
        piece arrived, so an incomplete one never passes on."""
        fo = self.cfg["files_out"]
        path, mime, data, offset, last = (rec.get("path"), rec.get("mime_type"),
                                          rec.get("data_b64"), rec.get("offset"), rec.get("last"))
        cur = state.file_piece  # (path, bytes so far) of the file being relayed, or None
        if not (isinstance(mime, str) and isinstance(data, str) and _is_int(offset)
                and isinstance(last, bool) and len(data) <= (FILE_PIECE + 2) // 3 * 4
                and len(data) % 4 == 0):
            state.files_truncated = True
            state.file_piece = None
            return
        if offset == 0:
            if cur is not None:  # the previous file never ended: the server drops it
                state.files_truncated = True
            bad = result_path_error(path)
            if bad is not None:
                state.files_truncated = True
                state.file_piece = None
                log("run %r: dropped a file record whose path is %s: %s"
                    % (state.rid, bad, ascii(path)[:300]))
                return
            if state.files >= fo["max_count"]:
                state.files_truncated = True
                state.file_piece = None
                return
            state.files += 1
            cur = (path, 0)
        elif cur is None or cur[0] != path or cur[1] != offset:
            state.files_truncated = True  # out of order, or of a file already dropped
            state.file_piece = None
            return
        n = len(data) // 4 * 3 - data[-2:].count("=")
        if state.file_bytes + n > fo["max_total_bytes"]:
            state.files_truncated = True
            state.file_piece = None
            return
        state.file_bytes += n
        state.file_piece = None if last else (path, offset + n)
        self.chan.send({"ev": "file", "id": state.rid, "path": path, "offset": offset,
                        "last": last, "mime_type": mime[:200], "data_b64": data})

    def _done_event(self, state, verdict, exit_code, sig, detail, duration_ms, session_reset=False):
        res = state.result
        value = res.get("value")
        if not isinstance(value, str):
            value = None
        elif len(value) > self.cfg["value_max_chars"] + 64:
            value = value[:self.cfg["value_max_chars"]]
        tb = bound_traceback(res.get("traceback"), self.cfg["traceback"])
        ev = {
            "ev": "done", "id": state.rid, "verdict": verdict, "exit_code": exit_code,
            "signal": int(sig) if sig is not None else None, "duration_ms": duration_ms,
            "value": value, "traceback": tb, "output_truncated": state.output_cut,
            "files_truncated": bool(res.get("files_truncated")) or state.files_truncated,
            "images_truncated": bool(res.get("images_truncated")) or state.images_truncated,
            "detail": detail, "cpu_ms": state.cpu_ms, "max_rss_kb": state.max_rss_kb,
            "session_reset": session_reset,
        }
        if self.session:
            ev["cells"] = self.prepared.cells if self.prepared else 0
        return ev


def files_overhead(cfg):
    """Bytes of the file records beyond their base64 data: one record per piece (each file
    has at least one)."""
    fo = cfg["files_out"]
    return (fo["max_count"] + fo["max_total_bytes"] // FILE_PIECE + 1) * 2048


class FatalError(Exception):
    """The harness cannot continue (not the server's fault)."""


def main():
    try:
        chan = Channel()
    except Exception as e:
        log("cannot set up the control channel: %s" % e)
        os._exit(3)
    code = 0
    try:
        msg = chan.next_message()
        if msg is None:
            log("the control stream ended before the config message")
            os._exit(0)
        cfg = parse_config(msg)
        apply_config(cfg)
        Zygote(chan, cfg).serve()
    except ProtocolError as e:
        log("protocol error: %s" % e)
        _send_fatal(chan, "protocol error: %s" % e)
        code = 2
    except FatalError as e:
        log("fatal: %s" % e)
        _send_fatal(chan, str(e))
        code = 3
    except BaseException as e:  # noqa: B902
        log("internal error:\n" + "".join(traceback.format_exception(type(e), e, e.__traceback__)))
        _send_fatal(chan, "internal error: %s: %s" % (type(e).__name__, e))
        code = 4
    _flush_stdio()
    os._exit(code)


def _send_fatal(chan, message):
    try:
        chan.send({"ev": "fatal", "message": message})
    except OSError:
        pass


if __name__ == "__main__":
    main()
