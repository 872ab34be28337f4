// sandbox-mcp-conformance: the product's server (sandbox_server) with the official conformance
// suites' fixture tools and resources added. Test code, built with the tests only; the e2e
// conformance tests (tests/e2e/conformance*.test.mjs) start it. Never serve models with it:
// its tools are visible to them.
#include <utility>

#include "conformance/conformance_tools.h"
#include "sandbox/server/server.h"

int main(int argc, char** argv) {
  sandbox::server::Extensions extensions;
  extensions.add_to_mcp = [](sandbox::mcp::ToolRegistry& tools,
                             sandbox::mcp::ResourceRegistry& resources) {
    for (auto& tool : sandbox::mcp::testing::MakeConformanceTools()) tools.Add(std::move(tool));
    resources.Add(sandbox::mcp::testing::MakeConformanceResources());
  };
  return sandbox::server::RunServer(argc, argv, extensions);
}
