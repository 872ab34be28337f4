"""A shim for host-side tools that still `import harness` from src/harness (the server's
config test, tests/unit/runner/harness_config_test.cc): the harness itself is the
sandbox_harness package beside this file, and never includes this file."""

from sandbox_harness.config import apply_config, parse_config  # noqa: F401
from sandbox_harness.errors import ProtocolError  # noqa: F401
