#!/usr/bin/env bash
# Builds everything and starts the server with the default configuration (127.0.0.1:8080).
# Extra arguments go to sandbox-mcp, e.g. scripts/run.sh --listen 127.0.0.1:9090
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/host.sh"
prepare_host
build_server "$SANDBOX_ROOT/build" -DSANDBOX_BUILD_TESTS=OFF
exec "$SANDBOX_ROOT/build/src/server/sandbox-mcp" "$@"
