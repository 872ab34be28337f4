"""A complete `config` message, shaped like the one the server sends (the harness has no
defaults: every field is required). The numbers are test inputs close to the server's defaults;
runner_unit_test checks that the server's own message is complete and accepted."""

import copy

CONFIG = {
    "op": "config",
    "mode": "recycle",
    "preload": ["numpy", "pandas", "matplotlib"],
    "warm_plot": True,
    "seccomp_bpf": None,
    "isolate": True,
    "interactive_input": False,
    "workdir": "/tmp/work",
    "tmpfs_size_bytes": 64 << 20,
    "image": {"max_figures": 10, "max_width_px": 2000, "max_height_px": 2000, "dpi": 100,
              "max_bytes": 4 << 20, "max_total_bytes": 16 << 20},
    "files_out": {"max_count": 20, "max_total_bytes": 8 << 20},
    "files_in": {"max_count": 50, "max_total_bytes": 16 << 20},
    "value_max_chars": 10000,
    "limits": {"timeout_s": 10.0, "output_bytes": 1 << 20, "cpu_s": 0, "nproc": 64,
               "nofile": 256, "fsize_bytes": 16 << 20, "memory_bytes": 0},
    "op_timeout_s": 10.0,
    "watchdog_s": 0,
    "list_max_entries": 1000,
    "paths": {"max_path_bytes": 1024, "max_name_bytes": 255},
    "walk": {"max_entries": 10000, "max_depth": 32},
    "input": {"max_asks": 1000, "max_prompt_chars": 4096, "max_line_bytes": 61440},
    "traceback": {"max_frames": 100, "max_message_bytes": 8192, "max_name_bytes": 512,
                  "max_total_bytes": 65536},
}


def merge(base, over):
    """`over` merged into `base` (nested objects field by field); returns base."""
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            merge(base[key], value)
        else:
            base[key] = value
    return base


def config(overrides=None):
    """CONFIG with `overrides` merged in (nested objects field by field)."""
    return merge(copy.deepcopy(CONFIG), overrides or {})


def leaf_paths(obj, prefix=()):
    """Every (key, ...) path to a field of `obj` that is not an object, and every object's."""
    for key, value in obj.items():
        if key == "op":
            continue
        yield prefix + (key,)
        if isinstance(value, dict):
            yield from leaf_paths(value, prefix + (key,))


def without(path):
    """CONFIG with the field at `path` removed."""
    cfg = copy.deepcopy(CONFIG)
    node = cfg
    for key in path[:-1]:
        node = node[key]
    del node[path[-1]]
    return cfg
