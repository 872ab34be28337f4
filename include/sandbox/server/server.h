// The sandbox-mcp server as a library (sandbox_server): RunServer reads the command line and the
// environment, builds every component from the validated configuration, serves until a signal
// and returns the process's exit code. The product's main() (src/server/sandbox_mcp_main.cc)
// runs it as it is; the conformance test server (tests/conformance) adds the conformance suites'
// fixture tools through Extensions, so the product binary holds no test code.
// Thread-safety: RunServer is called once per process, from main(), before any other thread.
#pragma once

#include <functional>

#include "sandbox/mcp/resource_provider.h"
#include "sandbox/mcp/tool_registry.h"

namespace sandbox::server {

// What a test build adds to the product's server. The default adds nothing.
struct Extensions {
  // Called once while the MCP server is built, after the product's tools and resources are
  // registered. Empty: nothing is added.
  std::function<void(mcp::ToolRegistry& tools, mcp::ResourceRegistry& resources)> add_to_mcp;
};

// Runs the server for `argv` (see --help): 0 after --help, --version or a clean shutdown, 2 for a
// bad command line, 1 for a failed start.
int RunServer(int argc, char** argv, const Extensions& extensions = {});

}  // namespace sandbox::server
