"""The protocol's schema, protocol.json beside this module (docs/harness-protocol.md): the
version, the frame kinds, the requests and events with their fields, the verdicts. The server's
constants are generated from the same file at build time (cmake/gen_protocol.cmake), so the two
sides cannot disagree on a name; tests/unit/harness/test_protocol.py checks the messages the
harness builds against it."""

import json
import os
import types


def _load():
    # Read through this module's loader: Python's file loader in a source tree (the unit tests),
    # the payload's own loader in the container (loader.py: the file is packed with the modules).
    path = os.path.join(os.path.dirname(__file__), "protocol.json")
    return json.loads(__spec__.loader.get_data(path).decode("utf-8"))


SCHEMA = _load()
VERSION = SCHEMA["version"]
FRAMES = {kind: mark.encode("ascii") for kind, mark in SCHEMA["frames"].items()}
REQUESTS = SCHEMA["requests"]
EVENTS = SCHEMA["events"]
VERDICTS = tuple(v["name"] for v in SCHEMA["verdicts"])
# VERDICT.output_limit == "output_limit": a verdict the schema lacks fails where it is named.
VERDICT = types.SimpleNamespace(**{name: name for name in VERDICTS})
