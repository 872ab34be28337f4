#include "sandbox/logging/json_formatter.h"

#include <gtest/gtest.h>
#include <spdlog/logger.h>
#include <spdlog/sinks/ostream_sink.h>

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "sandbox/core/log_context.h"
#include "sandbox/core/log_safe.h"
#include "sandbox/logging/text_formatter.h"

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

// The lines written while a thread serves a request name it; the others do not.
TEST(JsonFormatterTest, LinesOfARequestCarryItsId) {
  std::ostringstream out;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
  spdlog::logger logger("sandbox-mcp", sink);
  logger.set_formatter(std::make_unique<JsonFormatter>());
  logger.info("before");
  {
    const ScopedRequestId scoped("req-42");
    logger.info("during");
    std::thread([&] { logger.info("another thread"); }).join();
  }
  logger.info("after");
  auto lines = Lines(out.str());
  ASSERT_EQ(lines.size(), 4U) << out.str();
  EXPECT_FALSE(lines[0].contains("request_id"));
  EXPECT_EQ(lines[1]["request_id"], "req-42");
  EXPECT_FALSE(lines[2].contains("request_id"));  // a thread of its own serves no request
  EXPECT_FALSE(lines[3].contains("request_id"));
}

TEST(TextFormatterTest, TheRequestIdFollowsTheLevel) {
  std::ostringstream out;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
  spdlog::logger logger("sandbox-mcp", sink);
  logger.set_formatter(MakeTextFormatter());
  logger.info("plain");
  {
    const ScopedRequestId outer("outer");
    {
      const ScopedRequestId inner("3f9c0a1b2c3d4e5f");
      logger.warn("pool '{}': busy", "default");
    }
    logger.info("restored");
  }
  std::istringstream in(out.str());
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 3U) << out.str();
  EXPECT_NE(lines[0].find("] [sandbox-mcp] [info] plain"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("] [sandbox-mcp] [warning] [req 3f9c0a1b2c3d4e5f] pool 'default': busy"),
            std::string::npos)
      << lines[1];
  EXPECT_NE(lines[2].find("[info] [req outer] restored"), std::string::npos) << lines[2];
  EXPECT_EQ(CurrentRequestId(), "");
}

// A structured line: in JSON each field is a key of its own, so a value holding " principal="
// stays inside its own key; the formatter's keys cannot be overwritten.
TEST(JsonFormatterTest, FieldsAreKeysOfTheirOwn) {
  std::ostringstream out;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
  spdlog::logger logger("audit", sink);
  logger.set_formatter(std::make_unique<JsonFormatter>());
  const LogFields fields = {{"principal", std::string("alice")},
                            {"pool", std::string("x principal=admin kind=session verdict=ok")},
                            {"exit_code", std::int64_t{3}},
                            {"level", std::string("forged")}};
  {
    const ScopedLogFields scoped(fields);
    logger.info("run");
  }
  logger.info("plain");
  auto lines = Lines(out.str());
  ASSERT_EQ(lines.size(), 2U) << out.str();
  EXPECT_EQ(lines[0]["msg"], "run");
  EXPECT_EQ(lines[0]["principal"], "alice");
  EXPECT_EQ(lines[0]["pool"], "x principal=admin kind=session verdict=ok");
  EXPECT_EQ(lines[0]["exit_code"], 3);
  EXPECT_EQ(lines[0]["level"], "info");
  EXPECT_FALSE(lines[1].contains("principal"));
}

TEST(JsonFormatterTest, AMessageIsCutAtTheBound) {
  std::ostringstream out;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
  spdlog::logger logger("sandbox-mcp", sink);
  logger.set_formatter(std::make_unique<JsonFormatter>());
  logger.info("{}", std::string(1 << 20, 'x'));
  auto lines = Lines(out.str());
  ASSERT_EQ(lines.size(), 1U);
  EXPECT_EQ(lines[0]["msg"].get<std::string>().size(), kLogMessageMaxBytes);
}

// Whatever a message holds (a client's pool name, a run's text), a text line stays one line:
// a forged audit line after a newline is escaped into the first.
TEST(TextFormatterTest, AMessageCannotStartALine) {
  std::ostringstream out;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
  spdlog::logger logger("sandbox-mcp", sink);
  logger.set_formatter(MakeTextFormatter());
  logger.warn("unknown pool {}",
              "x\n[2026-12-06 00:00:00.000] [audit] [info] run principal=root\r\x1b[2K");
  logger.info("{}", std::string(1 << 20, 'y'));
  std::istringstream in(out.str());
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 2U) << out.str();
  EXPECT_NE(lines[0].find("unknown pool x\\n[2026-12-06 00:00:00.000] [audit] [info] run "
                          "principal=root\\r\\x1b[2K"),
            std::string::npos)
      << lines[0];
  EXPECT_LT(lines[1].size(), kLogMessageMaxBytes + 200);
  EXPECT_NE(lines[1].find("bytes omitted]"), std::string::npos);
}

TEST(TextFormatterTest, FieldsFollowTheMessageQuotedWhereNeeded) {
  std::ostringstream out;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
  spdlog::logger logger("audit", sink);
  logger.set_formatter(MakeTextFormatter());
  const LogFields fields = {{"principal", std::string("alice")},
                            {"pool", std::string("x principal=admin\nkind=session")},
                            {"total_ms", std::int64_t{31}}};
  {
    const ScopedLogFields scoped(fields);
    logger.info("run");
  }
  const std::string text = out.str();
  ASSERT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << text;
  EXPECT_NE(text.find("] [audit] [info] run principal=alice pool=\"x principal=admin\\nkind="
                      "session\" total_ms=31\n"),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace sandbox::logging
