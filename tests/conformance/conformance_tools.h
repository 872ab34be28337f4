// Fixture tools of the official MCP conformance suite (@modelcontextprotocol/conformance 0.1.13,
// the reference "everything" server's names): test_simple_text, test_image_content,
// test_audio_content, test_embedded_resource, test_multiple_content_types,
// test_tool_with_logging, test_tool_with_progress, test_error_handling and
// json_schema_2020_12_tool, and those of the 0.2 suite's 2026-07-28 scenarios. Test code: only
// the conformance test server (sandbox-mcp-conformance, conformance_main.cc) and the unit tests
// link them, never the product. Also the suite's fixture resources: test://static-text,
// test://static-binary and the template test://template/{id}/data (resources/subscribe is not
// offered: see the baseline).
// Thread-safety: the tools and the provider are stateless.
#pragma once

#include <memory>
#include <vector>

#include "sandbox/mcp/resource_provider.h"
#include "sandbox/mcp/tool.h"

namespace sandbox::mcp::testing {

std::vector<std::unique_ptr<Tool>> MakeConformanceTools();
std::unique_ptr<ResourceProvider> MakeConformanceResources();

}  // namespace sandbox::mcp::testing
