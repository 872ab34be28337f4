// The policy table by source address and the control lines that change it (control.h,
// policy_table.h): a bad line names what is wrong and leaves the table as it was.
#include "egress/control.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "egress/event_sink.h"
#include "egress/policy_table.h"
#include "egress/socket_address.h"
#include "sandbox/core/unique_fd.h"

namespace sandbox::egress {
namespace {

config::IpAddress Ip(const char* text) { return *config::ParseIpAddress(text); }

constexpr char kSetData[] =
    R"({"op":"set","addr":"10.213.1.5","pool":"data","id":7,)"
    R"("policy":{"mode":"allowlist","allow":["pypi.org","*.pythonhosted.org:443"],)"
    R"("deny":["evil.pythonhosted.org"]}})";

TEST(ControlTest, SetPutsThePoolsPolicyUnderTheAddress) {
  PolicyTable table;
  TlsSettings tls;
  const auto answer = ApplyControlLine(table, tls, kSetData);
  EXPECT_EQ(answer["ev"], "applied") << answer.dump();
  EXPECT_EQ(answer["op"], "set");
  EXPECT_EQ(answer["pool"], "data");
  EXPECT_EQ(answer["id"], 7);
  auto entry = table.Find(Ip("10.213.1.5"));
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ(entry->pool, "data");
  EXPECT_EQ(entry->policy.mode, config::NetworkPolicy::Mode::kAllowlist);
  ASSERT_EQ(entry->policy.allow.size(), 2U);
  EXPECT_EQ(entry->policy.allow[1].text, "*.pythonhosted.org:443");
  ASSERT_EQ(entry->policy.deny.size(), 1U);
  EXPECT_TRUE(config::DecideName(entry->policy, "files.pythonhosted.org", 443).allowed);
  EXPECT_FALSE(config::DecideName(entry->policy, "evil.pythonhosted.org", 443).allowed);
  // The same address through its IPv4-mapped IPv6 spelling.
  EXPECT_NE(table.Find(Ip("::ffff:10.213.1.5")), nullptr);
  EXPECT_EQ(table.Find(Ip("10.213.1.6")), nullptr);
}

TEST(ControlTest, CountersAreAnsweredFromTheSourceWithTheId) {
  PolicyTable table;
  TlsSettings tls;
  const auto answer = ApplyControlLine(table, tls, R"({"op":"counters","id":"c1"})", [] {
    return nlohmann::json{{"accepted", 5}, {"open", 2}};
  });
  EXPECT_EQ(answer["ev"], "counters") << answer.dump();
  EXPECT_EQ(answer["id"], "c1");
  EXPECT_EQ(answer["accepted"], 5);
  EXPECT_EQ(answer["open"], 2);
  // Without a source (no proxy), and with a member it does not have: refused.
  EXPECT_EQ(ApplyControlLine(table, tls, R"({"op":"counters"})")["ev"], "error");
  const auto extra = ApplyControlLine(table, tls, R"({"op":"counters","x":1})",
                                      [] { return nlohmann::json::object(); });
  EXPECT_EQ(extra["ev"], "error") << extra.dump();
  EXPECT_EQ(table.size(), 0U);
}

TEST(ControlTest, ABadEntryIsNamedAndTheTableIsUnchanged) {
  PolicyTable table;
  TlsSettings tls;
  ASSERT_EQ(ApplyControlLine(table, tls, kSetData)["ev"], "applied");
  const auto answer =
      ApplyControlLine(table, tls,
                       R"({"op":"set","addr":"10.213.1.5","pool":"other","id":"x",)"
                       R"("policy":{"mode":"allowlist","allow":["pypi.org","127.0.0.1"]}})");
  EXPECT_EQ(answer["ev"], "error");
  EXPECT_EQ(answer["id"], "x");
  const std::string error = answer["error"];
  EXPECT_NE(error.find("policy.allow[1]"), std::string::npos) << error;
  EXPECT_NE(error.find("127.0.0.1"), std::string::npos) << error;
  EXPECT_EQ(table.Find(Ip("10.213.1.5"))->pool, "data");
}

TEST(ControlTest, RefusesMalformedLinesSayingWhy) {
  struct Case {
    const char* line;
    const char* says;
  };
  for (const Case& c : {
           Case{"not json", "invalid JSON"},
           Case{"[1]", "JSON object"},
           Case{R"({"op":"frobnicate"})", "unknown \"op\""},
           Case{R"({"op":"remove"})", "\"addr\""},
           Case{R"({"op":"remove","addr":"pypi.org"})", "not an IP address"},
           Case{R"({"op":"set","addr":"10.0.0.1","policy":{"mode":"allowlist"}})", "\"pool\""},
           Case{R"({"op":"set","addr":"10.0.0.1","pool":"p"})", "\"policy\""},
           Case{R"({"op":"set","addr":"10.0.0.1","pool":"p","policy":{"mode":"open"}})",
                "policy.mode"},
           Case{R"({"op":"set","addr":"10.0.0.1","pool":"p","policy":{"mode":"none","x":1}})",
                "unknown member"},
           Case{R"({"op":"set","addr":"10.0.0.1","pool":"p",)"
                R"("policy":{"mode":"allowlist","deny":"a"}})",
                "policy.deny"},
           Case{R"({"op":"set","addr":"10.0.0.1","pool":"p",)"
                R"("policy":{"mode":"allowlist","allow":[1]}})",
                "policy.allow[0]"},
       }) {
    auto op = ParseControlLine(c.line);
    ASSERT_FALSE(op.ok()) << c.line;
    EXPECT_NE(op.error().message().find(c.says), std::string::npos)
        << c.line << " -> " << op.error().message();
  }
}

TEST(ControlTest, ALineNestedTooDeepIsRefusedBeforeItIsParsed) {
  std::string deep = R"({"op":"clear","id":)";
  for (int i = 0; i < 10'000; ++i) deep += "[";
  PolicyTable table;
  TlsSettings tls;
  const auto answer = ApplyControlLine(table, tls, deep);
  EXPECT_EQ(answer["ev"], "error");
  const std::string error = answer["error"];
  EXPECT_NE(error.find("nested deeper than 8 levels"), std::string::npos) << error;
  // Within the limit, the same op applies.
  EXPECT_EQ(ApplyControlLine(table, tls, R"({"op":"clear","id":[[[[[[1]]]]]]})")["ev"], "applied");
}

TEST(ControlTest, AMalformedLineIsNeverQuotedInItsAnswer) {
  PolicyTable table;
  TlsSettings tls;
  for (const char* line : {R"({"op":"set","value":"Bearer sk-live-0123456789)",
                           R"({"op":"set","value":"Bearer sk-live-0123456789" x})",
                           "{\"value\":\"Bearer sk-live-0123456789\n\"}"}) {
    const auto answer = ApplyControlLine(table, tls, line);
    EXPECT_EQ(answer["ev"], "error");
    const std::string error = answer["error"];
    EXPECT_NE(error.find("invalid JSON"), std::string::npos) << error;
    EXPECT_EQ(answer.dump().find("0123456789"), std::string::npos) << answer.dump();
  }
}

TEST(ControlTest, RunControlSkipsALineLongerThanTheLimitAndGoesOn) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  std::mutex mutex;
  std::vector<std::string> lines;
  PolicyTable table;
  TlsSettings tls;
  {
    EventSink events([&](std::string_view line) {
      const std::lock_guard lock(mutex);
      lines.emplace_back(line);
      return true;
    });
    // One line of 3 MiB (one error, however many reads it takes), then a good one.
    const std::string input = R"({"op":"clear","pad":")" + std::string(3 * kMaxControlLine, 'x') +
                              "\"}\n" + kSetData + "\n";
    std::thread writer([&] {
      std::string_view rest = input;
      while (!rest.empty()) {
        const ssize_t n = ::write(fds[1], rest.data(), rest.size());
        if (n <= 0) break;
        rest.remove_prefix(static_cast<std::size_t>(n));
      }
      ::close(fds[1]);
    });
    RunControl(fds[0], table, tls, events);
    writer.join();
    ::close(fds[0]);
    events.Flush();
  }
  ASSERT_EQ(lines.size(), 2U);
  EXPECT_NE(lines[0].find("longer than 1 MiB"), std::string::npos) << lines[0].substr(0, 200);
  EXPECT_LT(lines[0].size(), 200U);
  EXPECT_NE(lines[1].find("\"applied\""), std::string::npos) << lines[1];
  EXPECT_EQ(table.size(), 1U);
}

// A listening loopback port, and one that refuses (bound, never listening).
struct ProbePorts {
  ProbePorts() {
    for (Fd* fd : {&listening, &closed}) {
      *fd = Fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
      const SocketAddress address = ToSocketAddress(Ip("127.0.0.1"), 0);
      EXPECT_EQ(::bind(fd->get(), address.sockaddr_ptr(), address.length), 0);
    }
    EXPECT_EQ(::listen(listening.get(), 4), 0);
  }
  Fd listening;
  Fd closed;
};

TEST(ControlTest, AProbeAnswersTheErrnoOfItsConnect) {
  const ProbePorts ports;
  PolicyTable table;
  TlsSettings tls;
  const auto open = ApplyControlLine(table, tls,
                                     R"({"op":"probe","addr":"127.0.0.1","id":"p1","port":)" +
                                         std::to_string(BoundPort(ports.listening.get())) + "}");
  EXPECT_EQ(open["ev"], "probe") << open.dump();
  EXPECT_EQ(open["id"], "p1");
  EXPECT_EQ(open["addr"], "127.0.0.1");
  EXPECT_EQ(open["errno"], 0);
  EXPECT_EQ(open["error"], "Success");
  const auto refused = ApplyControlLine(table, tls,
                                        R"({"op":"probe","addr":"127.0.0.1","port":)" +
                                            std::to_string(BoundPort(ports.closed.get())) + "}");
  EXPECT_EQ(refused["errno"], ECONNREFUSED) << refused.dump();
  EXPECT_EQ(refused["error"], "Connection refused");
  EXPECT_EQ(table.size(), 0U);

  for (const auto& [line, says] : std::vector<std::pair<std::string, std::string>>{
           {R"({"op":"probe","addr":"127.0.0.1"})", "\"port\" must be a port number"},
           {R"({"op":"probe","addr":"127.0.0.1","port":0})", "\"port\""},
           {R"({"op":"probe","addr":"127.0.0.1","port":"80"})", "\"port\""},
           {R"({"op":"probe","addr":"127.0.0.1","port":65536})", "\"port\""},
           {R"({"op":"probe","addr":"gateway","port":80})", "\"addr\""},
       }) {
    const auto answer = ApplyControlLine(table, tls, line);
    EXPECT_EQ(answer["ev"], "error") << line;
    EXPECT_NE(answer["error"].get<std::string>().find(says), std::string::npos) << answer.dump();
  }
}

TEST(ControlTest, RunControlAnswersAProbeWithoutHoldingUpTheLinesAfterIt) {
  const ProbePorts ports;
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  std::mutex mutex;
  std::vector<nlohmann::json> lines;
  PolicyTable table;
  TlsSettings tls;
  {
    EventSink events([&](std::string_view line) {
      const std::lock_guard lock(mutex);
      lines.push_back(nlohmann::json::parse(line));
      return true;
    });
    const std::string input = R"({"op":"probe","addr":"127.0.0.1","id":1,"port":)" +
                              std::to_string(BoundPort(ports.closed.get())) + "}\n" + kSetData +
                              "\n";
    ASSERT_EQ(::write(fds[1], input.data(), input.size()), static_cast<ssize_t>(input.size()));
    ::close(fds[1]);
    RunControl(fds[0], table, tls, events);  // returns once the probe is answered
    ::close(fds[0]);
    events.Flush();
  }
  ASSERT_EQ(lines.size(), 2U);
  const auto probe = lines[0]["ev"] == "probe" ? lines[0] : lines[1];
  EXPECT_EQ(probe["id"], 1) << probe.dump();
  EXPECT_EQ(probe["errno"], ECONNREFUSED);
  EXPECT_EQ(table.size(), 1U);
}

TEST(ControlTest, RemoveAndClear) {
  PolicyTable table;
  TlsSettings tls;
  ASSERT_EQ(ApplyControlLine(table, tls, kSetData)["ev"], "applied");
  ASSERT_EQ(ApplyControlLine(table, tls,
                             R"({"op":"set","addr":"10.213.1.6","pool":"p",)"
                             R"("policy":{"mode":"none"}})")["ev"],
            "applied");
  EXPECT_EQ(table.size(), 2U);
  auto removed = ApplyControlLine(table, tls, R"({"op":"remove","addr":"10.213.1.5"})");
  EXPECT_EQ(removed["found"], true);
  EXPECT_EQ(table.Find(Ip("10.213.1.5")), nullptr);
  EXPECT_EQ(ApplyControlLine(table, tls, R"({"op":"remove","addr":"10.213.1.5"})")["found"], false);
  EXPECT_EQ(ApplyControlLine(table, tls, R"({"op":"clear"})")["entries"], 0);
  EXPECT_EQ(table.size(), 0U);
}

TEST(ControlTest, RunControlAnswersEachLineUntilTheEnd) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  std::mutex mutex;
  std::vector<std::string> lines;
  PolicyTable table;
  TlsSettings tls;
  {
    EventSink events([&](std::string_view line) {
      const std::lock_guard lock(mutex);
      lines.emplace_back(line);
      return true;
    });
    const std::string input = std::string(kSetData) + "\n\n  \n" + "{bad\r\n" +
                              R"({"op":"remove","addr":"10.213.1.5"})" + "\n";
    ASSERT_EQ(::write(fds[1], input.data(), input.size()), static_cast<ssize_t>(input.size()));
    ::close(fds[1]);
    RunControl(fds[0], table, tls, events);
    ::close(fds[0]);
    events.Flush();
  }
  ASSERT_EQ(lines.size(), 3U);
  EXPECT_NE(lines[0].find("\"applied\""), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("\"error\""), std::string::npos) << lines[1];
  EXPECT_NE(lines[2].find("\"remove\""), std::string::npos) << lines[2];
  EXPECT_EQ(table.size(), 0U);
}

TEST(EventSinkTest, DropsWhatDoesNotFitAndSaysHowMany) {
  std::mutex mutex;
  std::condition_variable release;
  bool go = false;
  std::vector<std::string> lines;
  {
    EventSink events(
        [&](std::string_view line) {
          std::unique_lock lock(mutex);
          release.wait(lock, [&] { return go; });  // the writer is stuck until released
          lines.emplace_back(line);
          return true;
        },
        EventSinkOptions{2});
    for (int i = 0; i < 10; ++i) events.Emit({{"n", i}});
    // At most one line is with the writer and two are queued: the rest were dropped.
    EXPECT_GE(events.dropped(), 7U);
    {
      const std::lock_guard lock(mutex);
      go = true;
    }
    release.notify_all();
    events.Flush();
  }
  ASSERT_GE(lines.size(), 3U);
  EXPECT_NE(lines.back().find("\"dropped\""), std::string::npos) << lines.back();
}

}  // namespace
}  // namespace sandbox::egress
