"""The zygote's checks of what a run process claims (file paths, tracebacks, file-op replies):
U runs the user's code, so everything it sends is untrusted data, bounded here before it goes
out (docs/harness-protocol.md, "Trust")."""

import base64
import binascii
import re

from .config import PATH_BOUNDS, is_int, is_num
from .wire import encode_json


# A media type as the server passes it on (runner/result_checks.h, MimeTypeError): type/subtype
# of RFC 6838's restricted names, no parameters.
_MIME_NAME = r"[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}"
_MIME_TYPE = re.compile(r"%s/%s" % (_MIME_NAME, _MIME_NAME))


def checked_mime_type(mime):
    """`mime` when it is a plain type/subtype, application/octet-stream otherwise: the run's
    code can make mimetypes answer anything, CR, LF and NUL included."""
    if isinstance(mime, str) and _MIME_TYPE.fullmatch(mime):
        return mime
    return "application/octet-stream"


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
        return {"file": text(f.get("file"), names), "line": line if is_int(line) else 0,
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
            if not (isinstance(path, str) and path and is_int(size) and size >= 0
                    and isinstance(mime, str) and is_num(mtime) and mtime == mtime
                    and abs(mtime) != float("inf")):
                raise ValueError("a file entry needs path, size, mime_type and mtime")
            if result_path_error(path) is not None:
                truncated = True  # U lists only valid names: a forged entry, dropped and marked
                continue
            out.append({"path": path, "size": size, "mime_type": checked_mime_type(mime),
                        "mtime": mtime})
        return True, {"files": out, "truncated": truncated}
    # get_file
    path, size, mime, data = res.get("path"), res.get("size"), res.get("mime_type"), res.get("data_b64")
    if path != req["path"] or not (is_int(size) and 0 <= size <= req["max_bytes"]
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
    return True, {"path": path, "size": size, "mime_type": checked_mime_type(mime),
                  "data_b64": data}
