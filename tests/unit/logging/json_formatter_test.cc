#include "sandbox/logging/json_formatter.h"

#include <gtest/gtest.h>
#include <spdlog/logger.h>
#include <spdlog/sinks/ostream_sink.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace sandbox::logging {
namespace {

std::vector<nlohmann::json> Lines(const std::string& text) {
  std::vector<nlohmann::json> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
  return out;
}

TEST(JsonFormatterTest, OneObjectPerLineWithEscapedMessage) {
  std::ostringstream out;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
  spdlog::logger logger("sandbox-mcp", sink);
  logger.set_formatter(std::make_unique<JsonFormatter>());
  logger.info("pool '{}': started", "default");
  // A message holding a newline, quotes and a forged field stays one line with one msg.
  logger.warn("run said {}", "\"x\"\n{\"level\":\"critical\"}");
  logger.error(std::string("bad \xff utf-8"));
  auto lines = Lines(out.str());
  ASSERT_EQ(lines.size(), 3U) << out.str();
  EXPECT_EQ(lines[0]["level"], "info");
  EXPECT_EQ(lines[0]["logger"], "sandbox-mcp");
  EXPECT_EQ(lines[0]["msg"], "pool 'default': started");
  const std::string time = lines[0]["time"];
  ASSERT_EQ(time.size(), 24U) << time;  // 2026-12-04T01:02:03.456Z
  EXPECT_EQ(time[10], 'T');
  EXPECT_EQ(time.back(), 'Z');
  EXPECT_TRUE(lines[0]["thread"].is_number_unsigned());
  EXPECT_EQ(lines[1]["level"], "warning");
  EXPECT_EQ(lines[1]["msg"], "run said \"x\"\n{\"level\":\"critical\"}");
  EXPECT_EQ(lines[2]["msg"], "bad \xef\xbf\xbd utf-8");
}

}  // namespace
}  // namespace sandbox::logging
