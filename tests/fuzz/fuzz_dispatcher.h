// The dispatcher of the MCP fuzz targets: the server's tool and resource set (as
// mcp::testing::MakeSessionDispatcher builds it) over the fake services, with a 1 ms output
// coalescing window so a run's relay does not hold each input for the default 200 ms.
#pragma once

#include <chrono>
#include <memory>
#include <utility>

#include "unit/mcp/test_util.h"

namespace sandbox::fuzz {

// `tasks`: the tasks extension's store (2026-07-28), nullptr for none.
inline mcp::Dispatcher MakeFuzzDispatcher(sandbox::testing::FakeService& service,
                                          testing::FakeSessionService& sessions,
                                          mcp::TaskStore* tasks = nullptr) {
  mcp::ToolRegistry tools;
  mcp::RunPythonOptions run_options;
  run_options.relay.coalesce = std::chrono::milliseconds(1);
  tools.Add(std::make_unique<mcp::RunPythonTool>(service, &sessions, run_options));
  tools.Add(std::make_unique<mcp::SandboxInfoTool>(service));
  for (auto& tool : mcp::MakeSessionTools(sessions, {})) tools.Add(std::move(tool));
  mcp::ResourceRegistry resources;
  // Two entries a page, so paging (cursors) is reached with few sessions.
  resources.Add(
      std::make_unique<mcp::SessionResourceProvider>(sessions, mcp::SessionResourceOptions{2}));
  return mcp::Dispatcher(mcp::ServerIdentity{}, std::move(tools), std::move(resources),
                         mcp::testing::NullLogger(), tasks);
}

}  // namespace sandbox::fuzz
