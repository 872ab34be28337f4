"""The wire protocol: length-prefixed frames (docs/harness-protocol.md, "Frames") on the
container's stdin/stdout, and on the pipes between the harness's own processes."""

import json
import os
import struct

from .errors import ProtocolError
from .osutil import write_all
from .protocol import FRAMES, VERSION

PROTOCOL_VERSION = VERSION  # ready.protocol (the schema's: 4 added interactive stdin)

KIND_JSON = FRAMES["json"]
KIND_STDOUT = FRAMES["stdout"]
KIND_STDERR = FRAMES["stderr"]
MAX_INBOUND_FRAME = 256 << 20  # a server frame larger than this is a protocol error


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


def send_record(fd, obj):
    """One JSON record to a pipe between the harness's processes (blocking)."""
    write_all(fd, encode_json_frame(obj))


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


def read_request(fd):
    """U: the next request frame from Z (blocking), or None when Z closed the pipe."""
    head = _read_exact(fd, 5)
    if head is None:
        return None
    payload = _read_exact(fd, int.from_bytes(head[:4], "big"))
    if payload is None or head[4:5] != KIND_JSON:
        return None
    return json.loads(payload.decode("utf-8"))
