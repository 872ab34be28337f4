// Images with extra packages, as a team would make and use one: images/build.sh --tag builds an
// image with scikit-learn from Debian's packages (offline: only the Debian mirror), again only
// when its inputs change; the server refuses a pool whose image is missing or was built with
// other packages, saying how to build it; and a real server fits a model in the image through
// MCP, its sandbox_info listing what the image adds.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "integration/server/server_process.h"
#include "sandbox/service/sandbox_service.h"
#include "support/engine_fixture.h"

namespace sandbox {
namespace {

using json = nlohmann::json;
using sandbox::testing::Engine;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

constexpr const char* kImage = "sandbox-mcp-python:test-sklearn";

struct Command {
  int status = -1;
  std::string output;
};

// Runs a shell command, returning its exit status and stdout+stderr.
Command Shell(const std::string& command) {
  Command out;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return out;
  std::array<char, 4096> buffer{};
  while (std::size_t n = std::fread(buffer.data(), 1, buffer.size(), pipe)) {
    out.output.append(buffer.data(), n);
  }
  const int status = ::pclose(pipe);
  out.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

std::string BuildScript() { return "bash '" + sandbox::testing::SourceDir() + "/images/build.sh'"; }

std::string ImageId(const std::string& image) {
  return Shell("docker image inspect --format '{{.Id}}' " + image).output;
}

class PackagesTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // Offline: the packages come from the Debian mirror, the sandbox image from the tree.
    built_ = Shell(BuildScript() + " --offline --tag " + kImage + " --packages python3-sklearn");
  }
  void SetUp() override { ASSERT_EQ(built_.status, 0) << built_.output; }

  static Result<std::unique_ptr<service::SandboxService>> Create(
      const std::function<void(config::PoolConfig&)>& tune) {
    config::Config config = sandbox::testing::SmallConfig(
        config::PoolMode::kRecycle, sandbox::testing::TestInstanceId("packages-refused"));
    tune(config.pools[0]);
    service::ServiceOptions options;
    options.container_seccomp_json = Engine::Get().container_profile();
    options.run_filter_bpf = Engine::Get().run_filter_bpf();
    return service::SandboxService::Create(config, Engine::Get().engine(), options,
                                           sandbox::testing::TestLogger("packages-test"));
  }

  static inline Command built_;
};

TEST_F(PackagesTest, TheImageCarriesItsPackagesAndIsBuiltOnlyWhenTheyChange) {
  auto image = Engine::Get().client().InspectImage(kImage);
  ASSERT_TRUE(image.ok()) << image.error().ToString();
  EXPECT_EQ(image->labels["io.sandbox-mcp.packages"], "python3-sklearn");
  EXPECT_EQ(image->labels["io.sandbox-mcp.pip-packages"], "");
  EXPECT_EQ(image->labels["io.sandbox-mcp.packages-hash"].size(), 16u);
  const std::string before = ImageId(kImage);
  // The same list spelled another way is the same image: nothing is rebuilt.
  Command again =
      Shell(BuildScript() + " --offline --tag " + kImage + " --packages 'python3-sklearn,'");
  ASSERT_EQ(again.status, 0) << again.output;
  EXPECT_THAT(again.output, HasSubstr(std::string(kImage) + " is up to date"));
  EXPECT_EQ(ImageId(kImage), before);
}

TEST_F(PackagesTest, TheScriptRefusesWhatItCannotBuild) {
  Command bad = Shell(BuildScript() + " --tag x:y --packages 'python3-sklearn;rm'");
  EXPECT_EQ(bad.status, 2);
  EXPECT_THAT(bad.output, HasSubstr("not a Debian package name"));
  Command untagged = Shell(BuildScript() + " --packages python3-sklearn");
  EXPECT_EQ(untagged.status, 2);
  EXPECT_THAT(untagged.output, HasSubstr("need --tag IMAGE"));
}

TEST_F(PackagesTest, APoolWhoseImageIsMissingIsRefusedWithTheCommandThatBuildsIt) {
  auto service = Create([](config::PoolConfig& pool) {
    pool.image = "sandbox-mcp-python:test-never-built";
    pool.packages = {"python3-seaborn", "python3-sklearn"};
    pool.pip_packages = {"tqdm"};
  });
  ASSERT_FALSE(service.ok());
  EXPECT_EQ(service.error().code(), ErrorCode::kNotFound);
  EXPECT_THAT(service.error().message(),
              HasSubstr("images/build.sh --tag 'sandbox-mcp-python:test-never-built' --packages "
                        "'python3-seaborn python3-sklearn' --pip 'tqdm'"));
}

TEST_F(PackagesTest, APoolWhoseImageHasOtherPackagesIsRefused) {
  auto service = Create([](config::PoolConfig& pool) {
    pool.image = kImage;
    pool.packages = {"python3-sklearn", "python3-seaborn"};
  });
  ASSERT_FALSE(service.ok());
  EXPECT_THAT(service.error().message(), HasSubstr("built with packages \"python3-sklearn\""));
  EXPECT_THAT(service.error().message(), HasSubstr("rebuild it with images/build.sh --tag"));
}

// The MCP session of one real server: initialize, then tools/call.
class McpClient {
 public:
  explicit McpClient(int port) : client_("127.0.0.1", port) {
    client_.set_read_timeout(180, 0);
    headers_ = {{"Accept", "application/json, text/event-stream"}};
    auto init = client_.Post("/mcp", headers_, R"({"jsonrpc":"2.0","id":1,"method":"initialize",
        "params":{"protocolVersion":"2025-11-25","capabilities":{},
        "clientInfo":{"name":"packages-test","version":"1"}}})",
                             "application/json");
    EXPECT_TRUE(init && init->status == 200);
    if (!init) return;
    headers_.emplace("Mcp-Session-Id", init->get_header_value("Mcp-Session-Id"));
    headers_.emplace("MCP-Protocol-Version", "2025-11-25");
    client_.Post("/mcp", headers_, R"({"jsonrpc":"2.0","method":"notifications/initialized"})",
                 "application/json");
  }
  // The JSON-RPC answer to tools/call `tool` (from a JSON body or the SSE stream's last event).
  json Call(const std::string& tool, const json& arguments) {
    json request = {{"jsonrpc", "2.0"},
                    {"id", ++id_},
                    {"method", "tools/call"},
                    {"params", {{"name", tool}, {"arguments", arguments}}}};
    auto res = client_.Post("/mcp", headers_, request.dump(), "application/json");
    EXPECT_TRUE(res && res->status == 200);
    if (!res) return json();
    if (res->get_header_value("Content-Type").rfind("text/event-stream", 0) != 0) {
      return json::parse(res->body, nullptr, false);
    }
    json answer;
    std::size_t at = 0;
    while ((at = res->body.find("data: ", at)) != std::string::npos) {
      const std::size_t end = res->body.find('\n', at);
      json event = json::parse(res->body.substr(at + 6, end - at - 6), nullptr, false);
      if (event.contains("id")) answer = event;
      at = end;
    }
    return answer;
  }

 private:
  httplib::Client client_;
  httplib::Headers headers_;
  int id_ = 1;
};

TEST_F(PackagesTest, AModelIsFittedInThePackagesImageThroughMcp) {
  const int port = sandbox::testing::FreePort();
  // Two pools: the sandbox image and the scikit-learn one, which a call picks with `pool`.
  sandbox::testing::ServerProcess server(sandbox::testing::TestInstanceId("packages"), port,
                                         std::string(R"("sessions": {"warm": 0}, "pools": [
        {"name": "default", "min_idle": 1, "max_total": 2},
        {"name": "ml", "min_idle": 1, "max_total": 2, "image": ")") +
                                             kImage + R"(", "packages": ["python3-sklearn"]}])");
  // Both pools warm, so no call waits for a container to start.
  ASSERT_TRUE(sandbox::testing::WaitFor(
      [&] {
        httplib::Client client("127.0.0.1", port);
        auto res = client.Get("/healthz");
        if (!res || res->status != 200) return false;
        json health = json::parse(res->body, nullptr, false);
        if (health.is_discarded() || !health["pools"].is_array()) return false;
        for (const auto& pool : health["pools"]) {
          if (pool.value("idle", 0) < 1) return false;
        }
        return health["pools"].size() == 2;
      },
      240s));
  McpClient mcp(port);
  json fit = mcp.Call("run_python", {{"pool", "ml"},
                                     {"code",
                                      "from sklearn.datasets import load_iris\n"
                                      "from sklearn.linear_model import LogisticRegression\n"
                                      "X, y = load_iris(return_X_y=True)\n"
                                      "model = LogisticRegression(max_iter=1000).fit(X, y)\n"
                                      "print('classes', list(model.classes_))\n"
                                      "round(model.score(X, y), 2) > 0.9\n"}});
  const json& result = fit["result"];
  ASSERT_EQ(result["structuredContent"]["verdict"], "ok") << fit.dump();
  EXPECT_EQ(result["structuredContent"]["stdout"], "classes [0, 1, 2]\n");
  EXPECT_EQ(result["structuredContent"]["value"], "True");
  // The default pool's image has no scikit-learn.
  json plain = mcp.Call("run_python", {{"code", "import sklearn"}});
  EXPECT_EQ(plain["result"]["structuredContent"]["verdict"], "error") << plain.dump();
  EXPECT_THAT(plain["result"]["structuredContent"].dump(), HasSubstr("No module named 'sklearn'"));

  json info = mcp.Call("sandbox_info", json::object())["result"];
  ASSERT_TRUE(info["structuredContent"]["pools"].is_array()) << info.dump();
  json ml;
  for (const auto& pool : info["structuredContent"]["pools"]) {
    if (pool["name"] == "ml") ml = pool;
  }
  EXPECT_EQ(ml["extra_packages"]["debian"], json::array({"python3-sklearn"}));
  bool listed = false;
  for (const auto& package : ml["packages"]) listed |= package["name"] == "scikit-learn";
  EXPECT_TRUE(listed) << ml.dump();
  EXPECT_THAT(info["content"][0]["text"].get<std::string>(),
              HasSubstr("installed beyond the default pool: "));
  EXPECT_THAT(info["content"][0]["text"].get<std::string>(), HasSubstr("scikit-learn "));
}

}  // namespace
}  // namespace sandbox
