"""The harness payload exactly as the server embeds it: src/harness/loader.py and the
sandbox_harness package packed by cmake/pack_harness.cmake (CMake: $SANDBOX_CMAKE or `cmake`).
Shared by the unit tests and tests/harness/drive.py."""

import os
import subprocess
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
PACKAGE_DIR = os.path.join(ROOT, "src", "harness", "sandbox_harness")
BOOT = ("import sys;b=sys.stdin.buffer;n=int(b.readline());"
        "exec(compile(b.read(n),'<harness>','exec'))")  # src/runner/sandbox_spec.cc's bootstrap

_cache = {}


def pack():
    """The payload's bytes (packed once per process)."""
    if "payload" not in _cache:
        with tempfile.TemporaryDirectory(prefix="harness-payload-") as d:
            out = os.path.join(d, "payload.py")
            subprocess.run([os.environ.get("SANDBOX_CMAKE", "cmake"), "-DPACKAGE_DIR=" + PACKAGE_DIR,
                            "-DLOADER=" + os.path.join(ROOT, "src", "harness", "loader.py"),
                            "-DOUTPUT=" + out, "-P",
                            os.path.join(ROOT, "cmake", "pack_harness.cmake")], check=True)
            with open(out, "rb") as f:
                _cache["payload"] = f.read()
    return _cache["payload"]
