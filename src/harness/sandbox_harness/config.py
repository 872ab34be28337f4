"""The `config` message: every bound the harness uses, all of them the server's."""

import base64
import binascii
import json
import os

from .errors import ProtocolError

MODES = ("recycle", "fresh", "session")

# Every bound below comes from the server, which owns them (include/sandbox/runner/
# result_checks.h, config.h) and checks requests against the same numbers before a run: the
# harness has no defaults of its own, so a missing field is a protocol error, never a second
# opinion. Only the bounds of the work dir's paths and walk live at module level, set once from
# the config by apply_config (they are needed deep in helpers that U and the zygote share).
PATH_BOUNDS = {"max_path_bytes": None, "max_name_bytes": None}
WALK_BOUNDS = {"max_entries": None, "max_depth": None}

REQUIRED = object()


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _get(obj, key, default, where):
    v = obj.get(key, default)
    if v is REQUIRED:
        raise ProtocolError("%s.%s is required (the server sends every limit)" % (where, key))
    return v


def int_field(obj, key, minimum=1, where="config", default=REQUIRED):
    v = _get(obj, key, default, where)
    if not is_int(v) or v < minimum:
        raise ProtocolError("%s.%s must be an integer >= %d" % (where, key, minimum))
    return v


def num_field(obj, key, where, default=REQUIRED):
    v = _get(obj, key, default, where)
    if not is_num(v) or not v > 0 or v != v or v == float("inf"):
        raise ProtocolError("%s.%s must be a positive number" % (where, key))
    return v


def dict_field(obj, key, where, required=True):
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
    out["timeout_s"] = float(num_field(obj, "timeout_s", where, d.get("timeout_s", REQUIRED)))
    for key in ("output_bytes", "nproc", "nofile", "fsize_bytes"):
        out[key] = int_field(obj, key, 1, where, d.get(key, REQUIRED))
    for key in ("cpu_s", "memory_bytes"):
        out[key] = int_field(obj, key, 0, where, d.get(key, REQUIRED))
    if out["cpu_s"] == 0 and resolve:
        out["cpu_s"] = int(-(-out["timeout_s"] // 1)) + 1
    return out


def _bounds(msg, key, fields):
    """A required object of required integers (name -> minimum)."""
    d = dict_field(msg, key, "config")
    return {name: int_field(d, name, minimum, "config." + key) for name, minimum in fields}


MAX_STDIN_LINE_BYTES = 60 << 10  # a frame of it fits a 64 KiB pipe: writing never blocks


def parse_config(msg):
    """The `config` message -> the config dict. Every field is required (the server owns every
    value); unknown fields are ignored; wrong types are a ProtocolError."""
    if msg.get("op") != "config":
        raise ProtocolError("the first message must be {\"op\":\"config\"}, got %r" % msg.get("op"))
    cfg = {}
    mode = _get(msg, "mode", REQUIRED, "config")
    if mode not in MODES:
        raise ProtocolError("config.mode must be \"recycle\", \"fresh\" or \"session\"")
    cfg["mode"] = mode
    preload = _get(msg, "preload", REQUIRED, "config")
    if not isinstance(preload, list) or not all(isinstance(m, str) and m for m in preload):
        raise ProtocolError("config.preload must be a list of module names")
    cfg["preload"] = preload
    warm = _get(msg, "warm_plot", REQUIRED, "config")
    if not isinstance(warm, bool):
        raise ProtocolError("config.warm_plot must be a boolean")
    cfg["warm_plot"] = warm
    cfg["seccomp_bpf"] = parse_bpf(_get(msg, "seccomp_bpf", REQUIRED, "config"))
    isolate = _get(msg, "isolate", REQUIRED, "config")
    if isolate not in (True, False, "auto"):
        raise ProtocolError("config.isolate must be true, false or \"auto\"")
    cfg["isolate"] = isolate
    interactive = _get(msg, "interactive_input", REQUIRED, "config")
    if not isinstance(interactive, bool):
        raise ProtocolError("config.interactive_input must be a boolean")
    cfg["interactive_input"] = interactive  # runs get a stdin channel to Z (stdin_bridge)
    workdir = _get(msg, "workdir", REQUIRED, "config")
    if (not isinstance(workdir, str) or not workdir.startswith("/")
            or os.path.normpath(workdir) != workdir or workdir in ("/", "/tmp")
            or "\x00" in workdir):
        raise ProtocolError("config.workdir must be a normalized absolute path other than / and /tmp")
    cfg["workdir"] = workdir
    cfg["tmpfs_size_bytes"] = int_field(msg, "tmpfs_size_bytes", 1 << 20)
    image = dict_field(msg, "image", "config")
    cfg["image"] = {
        "max_figures": int_field(image, "max_figures", 0, "config.image"),
        "max_width_px": int_field(image, "max_width_px", 1, "config.image"),
        "max_height_px": int_field(image, "max_height_px", 1, "config.image"),
        "dpi": float(num_field(image, "dpi", "config.image")),
        "max_bytes": int_field(image, "max_bytes", 1024, "config.image"),
        "max_total_bytes": int_field(image, "max_total_bytes", 1024, "config.image"),
    }
    for key in ("files_out", "files_in"):
        cfg[key] = _bounds(msg, key, (("max_count", 0), ("max_total_bytes", 0)))
    cfg["value_max_chars"] = int_field(msg, "value_max_chars", 16)
    cfg["limits"] = parse_limits(dict_field(msg, "limits", "config"), None, "config.limits",
                                 resolve=False)
    cfg["op_timeout_s"] = float(num_field(msg, "op_timeout_s", "config"))
    cfg["watchdog_s"] = parse_watchdog(msg, "config")
    cfg["list_max_entries"] = int_field(msg, "list_max_entries", 1)
    cfg["paths"] = _bounds(msg, "paths", (("max_path_bytes", 16), ("max_name_bytes", 8)))
    cfg["walk"] = _bounds(msg, "walk", (("max_entries", 1), ("max_depth", 1)))
    cfg["input"] = _bounds(msg, "input", (("max_asks", 0), ("max_prompt_chars", 0),
                                          ("max_line_bytes", 1)))
    if cfg["input"]["max_line_bytes"] > MAX_STDIN_LINE_BYTES:
        raise ProtocolError("config.input.max_line_bytes must be at most %d (an answer must fit "
                            "the stdin channel's pipe)" % MAX_STDIN_LINE_BYTES)
    cfg["traceback"] = _bounds(msg, "traceback", (("max_frames", 2), ("max_message_bytes", 64),
                                                  ("max_name_bytes", 16),
                                                  ("max_total_bytes", 1024)))
    return cfg


def parse_watchdog(msg, where, default=REQUIRED):
    """watchdog_s: session mode, exit after this long idle without a message from the server
    (0: never). The server's stream may close without stdin closing (sessions that outlive a
    server restart), so this is what bounds a container no server comes back to."""
    value = _get(msg, "watchdog_s", default, where)
    if not is_num(value) or not value >= 0 or value == float("inf"):
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
