#!/usr/bin/env python3
"""The shipped binary holds no test code.

sandbox-mcp must not offer the conformance suites' fixtures: --help names no fixture switch,
--conformance-fixtures is refused as an unknown flag (exit 2), and the executable's bytes hold
none of the fixtures' tool names, descriptions or resource URIs. The conformance test server
(sandbox-mcp-conformance, tests/conformance) is searched the same way and must hold them: that
proves the search finds what it looks for. Neither binary starts a server (no Docker needed).

Usage: check_product_binary.py SANDBOX_MCP SANDBOX_MCP_CONFORMANCE
"""
import subprocess
import sys
from pathlib import Path

# Strings only the fixtures hold (tests/conformance/conformance_tools.cc).
FIXTURE_MARKERS = [b"test_simple_text", b"Conformance fixture", b"test://static-text"]


def main():
    product, test_server = Path(sys.argv[1]), Path(sys.argv[2])
    failures = []

    help_run = subprocess.run([product, "--help"], capture_output=True, text=True, timeout=60)
    if help_run.returncode != 0:
        failures.append(f"--help exited {help_run.returncode}: {help_run.stderr}")
    for word in ("conformance", "fixture"):
        if word in help_run.stdout.lower():
            failures.append(f"--help mentions {word!r}:\n{help_run.stdout}")

    flag_run = subprocess.run([product, "--conformance-fixtures"], capture_output=True, text=True,
                              timeout=60)
    if flag_run.returncode != 2 or "--conformance-fixtures" not in flag_run.stderr:
        failures.append("--conformance-fixtures was not refused as an unknown flag (exit "
                        f"{flag_run.returncode}): {flag_run.stderr.strip()}")

    product_bytes = product.read_bytes()
    test_bytes = test_server.read_bytes()
    for marker in FIXTURE_MARKERS:
        if marker in product_bytes:
            failures.append(f"{product.name} holds the fixture string {marker.decode()!r}")
        if marker not in test_bytes:
            failures.append(f"{test_server.name} lacks {marker.decode()!r}: the search proves "
                            "nothing (did the fixtures change?)")

    for failure in failures:
        print(f"check_product_binary: {failure}")
    if failures:
        return 1
    print(f"check_product_binary: {product.name} holds no conformance fixture "
          f"({len(FIXTURE_MARKERS)} markers, all present in {test_server.name})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
