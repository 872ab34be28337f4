// The server owns every value the harness uses (the harness has no defaults): the `config`
// message built by ConfigRequest must be accepted by the real harness, and the harness must
// read back the server's numbers. Runs the harness package's parse_config
// (src/harness/sandbox_harness/config.py) with python3.
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "runner/harness_protocol.h"
#include "sandbox/runner/harness_sandbox.h"
#include "sandbox/runner/harness_wire.h"
#include "sandbox/runner/result_checks.h"

namespace sandbox::runner {
namespace {

using nlohmann::json;

constexpr const char* kParseScript = R"PY(
import json, sys
sys.path.insert(0, sys.argv[1] + "/src/harness")
from sandbox_harness.config import parse_config
from sandbox_harness.errors import ProtocolError
try:
    cfg = parse_config(json.load(open(sys.argv[2])))
    cfg["seccomp_bpf"] = cfg["seccomp_bpf"] is not None
    print(json.dumps(cfg))
except ProtocolError as e:
    print(json.dumps({"error": str(e)}))
)PY";

// A temporary file holding `text`, removed with the object.
class TempFile {
 public:
  explicit TempFile(const std::string& text) {
    const int fd = mkstemp(path_.data());
    if (fd >= 0) close(fd);
    std::ofstream(path_.c_str()) << text;
  }
  ~TempFile() { std::remove(path_.c_str()); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const char* path() const { return path_.c_str(); }

 private:
  std::string path_ = "/tmp/harness-config-test-XXXXXX";
};

// The harness's parse_config applied to `config`: its result as JSON, or {"error": message}.
json ParseInHarness(const json& config) {
  const char* root = std::getenv("SANDBOX_SOURCE_DIR");
  if (root == nullptr) return json{{"error", "SANDBOX_SOURCE_DIR is not set"}};
  const TempFile script(kParseScript);
  const TempFile message(config.dump());
  const std::string cmd =
      std::string("python3 ") + script.path() + " '" + root + "' " + message.path() + " 2>&1";
  std::string out;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    std::array<char, 4096> buf{};
    while (std::fgets(buf.data(), buf.size(), p) != nullptr) out += buf.data();
    pclose(p);
  }
  auto parsed = json::parse(out, nullptr, false);
  if (parsed.is_discarded()) return json{{"error", "harness said: " + out}};
  return parsed;
}

SandboxSetup DefaultSetup() {
  SandboxSetup setup;
  setup.run_filter_bpf = std::string(8, '\0');  // one sock_filter entry
  return setup;
}

TEST(HarnessConfigTest, TheHarnessAcceptsTheServersConfig) {
  const SandboxSetup setup = DefaultSetup();
  const json cfg = ParseInHarness(ConfigRequest(setup));
  ASSERT_FALSE(cfg.contains("error")) << cfg.dump();
  EXPECT_EQ(cfg["files_in"]["max_count"], setup.input.max_files);
  EXPECT_EQ(cfg["files_in"]["max_total_bytes"], setup.input.max_total_bytes);
  EXPECT_EQ(cfg["files_out"]["max_count"], setup.output.max_files);
  EXPECT_EQ(cfg["image"]["max_figures"], setup.output.max_figures);
  EXPECT_EQ(cfg["image"]["max_bytes"], setup.output.max_figure_bytes);
  EXPECT_EQ(cfg["image"]["max_total_bytes"], setup.output.max_figures_bytes);
  EXPECT_EQ(cfg["value_max_chars"], kResultLimits.value_max_chars);
  EXPECT_EQ(cfg["list_max_entries"], kResultLimits.list_max_entries);
  EXPECT_EQ(cfg["paths"]["max_path_bytes"], kResultLimits.path_max_bytes);
  EXPECT_EQ(cfg["paths"]["max_name_bytes"], kResultLimits.name_max_bytes);
  EXPECT_EQ(cfg["walk"]["max_entries"], kResultLimits.walk_max_entries);
  EXPECT_EQ(cfg["traceback"]["max_frames"], kResultLimits.traceback_max_frames);
  EXPECT_EQ(cfg["input"]["max_asks"], kResultLimits.input_max_asks);
  EXPECT_EQ(cfg["input"]["max_prompt_chars"], kResultLimits.input_max_prompt_chars);
  EXPECT_EQ(cfg["input"]["max_line_bytes"], kResultLimits.input_max_line_bytes);
  EXPECT_EQ(cfg["interactive_input"], setup.pool.interactive_input);
  EXPECT_EQ(cfg["workdir"], setup.workdir);
  EXPECT_EQ(cfg["tmpfs_size_bytes"], setup.pool.limits.tmpfs_bytes);
  EXPECT_EQ(cfg["mode"], "recycle");
  EXPECT_TRUE(cfg["seccomp_bpf"].get<bool>());
}

// A session setup's watchdog reaches the harness (in seconds); other modes never get one.
TEST(HarnessConfigTest, TheWatchdogIsASessionsOnly) {
  SandboxSetup setup = DefaultSetup();
  setup.watchdog = std::chrono::milliseconds(2500);
  EXPECT_EQ(ConfigRequest(setup)["watchdog_s"].get<double>(), 0.0);
  setup.session = true;
  EXPECT_EQ(ConfigRequest(setup)["watchdog_s"].get<double>(), 2.5);
  EXPECT_FALSE(ParseInHarness(ConfigRequest(setup)).contains("error"));
}

// Each field the server sends is one the harness needs: without it the harness refuses the
// config (no default of its own could take its place and disagree).
TEST(HarnessConfigTest, EveryFieldIsRequiredByTheHarness) {
  const json flat = ConfigRequest(DefaultSetup()).flatten();
  for (const auto& item : flat.items()) {
    if (item.key() == "/op" || item.key().rfind("/preload/", 0) == 0) continue;
    json cut = flat;
    cut.erase(item.key());
    const json cfg = ParseInHarness(cut.unflatten());
    ASSERT_TRUE(cfg.contains("error")) << "accepted without " << item.key();
    const std::string field = item.key().substr(item.key().rfind('/') + 1);
    EXPECT_NE(cfg["error"].get<std::string>().find(field), std::string::npos)
        << item.key() << ": " << cfg["error"];
  }
}

// Every field of the schema's `config` is sent, nested ones too: the harness reads the same
// schema (protocol.json), and the test above shows it needs each of them.
TEST(HarnessConfigTest, SendsEveryFieldOfTheSchema) {
  namespace c = wire::op::config;
  const json cfg = ConfigRequest(DefaultSetup());
  auto keys = [](const json& object) {
    std::set<std::string> out;
    for (const auto& item : object.items()) out.insert(item.key());
    return out;
  };
  auto fields = [](const auto& names) { return std::set<std::string>(names.begin(), names.end()); };
  std::set<std::string> expected = fields(c::kFields);
  expected.insert(std::string(wire::kOp));
  EXPECT_EQ(keys(cfg), expected);
  EXPECT_EQ(cfg[wire::kOp], c::kName);
  EXPECT_EQ(keys(cfg[c::kImage]), fields(c::image::kFields));
  EXPECT_EQ(keys(cfg[c::kFilesOut]), fields(wire::count_bounds::kFields));
  EXPECT_EQ(keys(cfg[c::kFilesIn]), fields(wire::count_bounds::kFields));
  EXPECT_EQ(keys(cfg[c::kLimits]), fields(wire::limits::kFields));
  EXPECT_EQ(keys(cfg[c::kPaths]), fields(c::paths::kFields));
  EXPECT_EQ(keys(cfg[c::kWalk]), fields(c::walk::kFields));
  EXPECT_EQ(keys(cfg[c::kInput]), fields(c::input::kFields));
  EXPECT_EQ(keys(cfg[c::kTraceback]), fields(c::traceback::kFields));
}

TEST(MaxFrameBytesTest, FollowsTheFigureAndFileBounds) {
  SandboxSetup setup;
  setup.output.max_figure_bytes = 4 << 20;
  // A figure's base64 and the fields around it; 4 MiB at least (a `done`, a file listing).
  EXPECT_GE(MaxFrameBytes(setup), (4u << 20) / 3 * 4);
  EXPECT_LE(MaxFrameBytes(setup), (4u << 20) / 3 * 4 + (128u << 10));
  setup.output.max_figure_bytes = 1024;
  EXPECT_EQ(MaxFrameBytes(setup), 4u << 20);
  // A session also answers get_file with a whole file.
  setup.session = true;
  setup.session_file_bytes = 16 << 20;
  EXPECT_GE(MaxFrameBytes(setup), (16u << 20) / 3 * 4);
  // The harness is untrusted: a longer frame is refused from its header, before its payload.
  FrameDecoder decoder(MaxFrameBytes(setup));
  const std::uint32_t n = static_cast<std::uint32_t>(MaxFrameBytes(setup)) + 1;
  const std::string header = {static_cast<char>(n >> 24), static_cast<char>(n >> 16),
                              static_cast<char>(n >> 8), static_cast<char>(n), 'J'};
  EXPECT_FALSE(decoder.Feed(header).ok());
}

}  // namespace
}  // namespace sandbox::runner
