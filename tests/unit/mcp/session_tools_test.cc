// The session tools, run_python in a session, and the session files as MCP resources, through the
// real Dispatcher over a FakeSessionService: argument checks, the engine's refusals as tool
// results, principals kept apart, and the issue's "done" scenario (create, upload a CSV, load it,
// plot, download a file written in a third call).
#include <gtest/gtest.h>

#include "conformance/conformance_tools.h"
#include "mcp/session_uri.h"
#include "sandbox/core/base64.h"
#include "unit/mcp/test_util.h"

namespace sandbox::mcp {
namespace {

using json = nlohmann::json;
namespace rpc_code = jsonrpc::rpc_code;
using sandbox::testing::FakeService;
using sandbox::testing::FakeSessionService;
using testing::CallTool;
using testing::InitializeRequest;
using testing::Notification;
using testing::RecordingOutbound;
using testing::Request;

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

class SessionToolsTest : public ::testing::Test {
 protected:
  json Send(Session& session, const json& message) {
    auto response = dispatcher_.Handle(session, message, out_);
    return response ? *response : json();
  }
  json Send(const json& message) { return Send(alice_, message); }
  void Initialize(Session& session) {
    ASSERT_TRUE(Send(session, InitializeRequest()).contains("result"));
    Send(session, Notification("notifications/initialized"));
  }
  void SetUp() override {
    Initialize(alice_);
    Initialize(bob_);
  }
  // The result of a tools/call; fails the test on a JSON-RPC error.
  json Tool(const std::string& name, json arguments, Session* session = nullptr) {
    json response = Send(session ? *session : alice_, CallTool(++id_, name, std::move(arguments)));
    EXPECT_TRUE(response.contains("result")) << response;
    return response.value("result", json::object());
  }
  // The message of a JSON-RPC -32602 error.
  std::string InvalidParams(const std::string& name, json arguments) {
    json response = Send(CallTool(++id_, name, std::move(arguments)));
    EXPECT_EQ(response["error"]["code"], rpc_code::kInvalidParams) << response;
    return response["error"].value("message", "");
  }
  static std::string Text(const json& result) {
    return result["content"][0]["text"].get<std::string>();
  }
  std::string Create(Session* session = nullptr) {
    json result = Tool("session_create", json::object(), session);
    EXPECT_FALSE(result["isError"].get<bool>()) << result;
    return result["structuredContent"]["session_id"].get<std::string>();
  }

  FakeService service_;
  FakeSessionService sessions_;
  SessionToolOptions options_ = [] {
    SessionToolOptions o;
    o.idle_timeout = std::chrono::seconds(600);
    o.max_file_bytes = 1 << 20;
    return o;
  }();
  Dispatcher dispatcher_ = testing::MakeSessionDispatcher(service_, sessions_, 3, options_);
  Session alice_{"alice"};
  Session bob_{"bob"};
  RecordingOutbound out_;
  int id_ = 100;
};

TEST_F(SessionToolsTest, ToolsListTellsAModelHowToUseSessions) {
  json tools = Send(Request(1, "tools/list"))["result"]["tools"];
  std::vector<std::string> names;
  for (const auto& tool : tools) names.push_back(tool["name"]);
  EXPECT_EQ(names, (std::vector<std::string>{"run_python", "sandbox_info", "session_create",
                                             "session_list", "session_close", "session_upload_file",
                                             "session_list_files", "session_download_file"}));
  const json& run = tools[0];
  EXPECT_TRUE(run["inputSchema"]["properties"].contains("session_id"));
  const std::string run_text = run["description"];
  for (auto part : {"session_create", "session_id", "persist", "600 s", "session_close",
                    "restarts its session empty"}) {
    EXPECT_TRUE(Contains(run_text, part)) << part << " in " << run_text;
  }
  const std::string create_text = tools[2]["description"];
  for (auto part : {"run_python", "600 s", "session_close", "memory_bytes", "fixed"}) {
    EXPECT_TRUE(Contains(create_text, part)) << part << " in " << create_text;
  }
  for (const auto& tool : tools) {
    EXPECT_EQ(tool["inputSchema"]["additionalProperties"], false) << tool["name"];
    EXPECT_FALSE(tool["inputSchema"].contains("oneOf")) << tool["name"];
  }
}

TEST_F(SessionToolsTest, ResourcesCapabilityIsAnnounced) {
  Session fresh("carol");
  json init = Send(fresh, InitializeRequest());
  EXPECT_EQ(init["result"]["capabilities"]["resources"],
            json({{"subscribe", false}, {"listChanged", false}}));
}

TEST_F(SessionToolsTest, CreateReturnsTheIdAndLimits) {
  json result = Tool(
      "session_create",
      {{"timeout_s", 60}, {"memory_bytes", 268435456}, {"output_bytes", 65536}, {"pool", "big"}});
  ASSERT_FALSE(result["isError"].get<bool>()) << result;
  const json& s = result["structuredContent"];
  const std::string id = s["session_id"];
  EXPECT_EQ(id.size(), 32u);
  EXPECT_EQ(s["pool"], "big");
  EXPECT_EQ(s["memory_limit_bytes"], 268435456);
  EXPECT_EQ(s["timeout_s"], 60.0);
  EXPECT_EQ(s["output_bytes"], 65536);
  EXPECT_EQ(s["idle_timeout_s"], 600);
  EXPECT_EQ(s["expires_in_s"], 900.0);
  EXPECT_TRUE(s["memory_bytes"].is_number());
  const std::string text = Text(result);
  for (auto part : {id, std::string("session_id"), std::string("256.0 MiB"),
                    std::string("session_close"), std::string("10 min")}) {
    EXPECT_TRUE(Contains(text, part)) << part << " in " << text;
  }
  auto request = sessions_.last_create();
  ASSERT_TRUE(request);
  EXPECT_EQ(request->pool, "big");
  EXPECT_EQ(request->limits.timeout_s, 60);
  EXPECT_EQ(request->limits.memory_bytes, 268435456);
  EXPECT_EQ(request->limits.output_bytes, 65536);
  EXPECT_EQ(sessions_.calls().back(), "Create alice ");
}

TEST_F(SessionToolsTest, ArgumentsAreStrict) {
  EXPECT_TRUE(Contains(InvalidParams("session_create", {{"ttl", 5}}), "ttl: unknown argument"));
  EXPECT_TRUE(Contains(InvalidParams("session_create", {{"timeout_s", "5"}}), "timeout_s"));
  EXPECT_TRUE(Contains(InvalidParams("session_create", {{"memory_bytes", 1.5}}), "memory_bytes"));
  EXPECT_TRUE(Contains(InvalidParams("session_create", {{"memory_bytes", -1}}), "memory_bytes"));
  EXPECT_TRUE(Contains(InvalidParams("session_create", {{"pool", 3}}), "pool"));
  EXPECT_TRUE(Contains(InvalidParams("session_list", {{"all", true}}), "all: unknown argument"));
  EXPECT_TRUE(Contains(InvalidParams("session_close", json::object()), "session_id: required"));
  EXPECT_TRUE(Contains(InvalidParams("session_close", {{"session_id", 5}}), "session_id"));
  EXPECT_TRUE(Contains(InvalidParams("session_close", {{"session_id", "../etc"}}), "session_id"));
  EXPECT_TRUE(Contains(InvalidParams("session_list_files", {{"session_id", ""}}), "session_id"));
  EXPECT_TRUE(
      Contains(InvalidParams("session_download_file", {{"session_id", "abc"}}), "path: required"));
  EXPECT_TRUE(
      Contains(InvalidParams("session_upload_file", {{"session_id", "abc"}, {"path", "a.txt"}}),
               "content_text: required"));
  EXPECT_TRUE(Contains(InvalidParams("session_upload_file", {{"session_id", "abc"},
                                                             {"path", "a.txt"},
                                                             {"content_text", "x"},
                                                             {"content_base64", "eA=="}}),
                       "only one"));
  EXPECT_TRUE(
      Contains(InvalidParams("session_upload_file",
                             {{"session_id", "abc"}, {"path", "a"}, {"content_base64", "!"}}),
               "content_base64"));
  // The engine's invalid-input refusals are -32602 as well.
  EXPECT_TRUE(Contains(InvalidParams("session_create", {{"pool", "gpu"}}), "unknown pool"));
  EXPECT_EQ(sessions_.session_count(), 0u);
}

TEST_F(SessionToolsTest, LimitsAndBusyAreToolErrorsAModelCanActOn) {
  for (int i = 0; i < 4; ++i) Create();
  json refused = Tool("session_create", json::object());
  EXPECT_TRUE(refused["isError"].get<bool>());
  EXPECT_FALSE(refused.contains("structuredContent"));
  EXPECT_TRUE(Contains(Text(refused), "limit of 4"));
  EXPECT_TRUE(Contains(Text(refused), "session_close"));

  // Bob has his own quota.
  Create(&bob_);

  sessions_.FailNext(Error(ErrorCode::kBusy, "no session container within 10 s"));
  json busy = Tool("session_create", json::object(), &bob_);
  EXPECT_TRUE(busy["isError"].get<bool>());
  EXPECT_TRUE(Contains(Text(busy), "try again"));

  sessions_.FailNext(Error(ErrorCode::kUnavailable, "engine down"));
  EXPECT_TRUE(Contains(Text(Tool("session_list", json::object())), "unavailable"));
}

TEST_F(SessionToolsTest, ListShowsTheCallersSessionsOnly) {
  json empty = Tool("session_list", json::object());
  EXPECT_TRUE(Contains(Text(empty), "no sessions"));
  EXPECT_EQ(empty["structuredContent"]["sessions"], json::array());
  const std::string a1 = Create();
  const std::string a2 = Create();
  const std::string b1 = Create(&bob_);
  json list = Tool("session_list", json::object());
  const json& sessions = list["structuredContent"]["sessions"];
  ASSERT_EQ(sessions.size(), 2u);
  EXPECT_EQ(sessions[0]["session_id"], a1);
  EXPECT_EQ(sessions[1]["session_id"], a2);
  for (auto field : {"pool", "age_s", "idle_s", "expires_in_s", "memory_bytes", "runs", "restarts",
                     "busy", "memory_limit_bytes"}) {
    EXPECT_TRUE(sessions[0].contains(field)) << field;
  }
  EXPECT_EQ(list["structuredContent"]["max_sessions"], 4);
  const std::string text = Text(list);
  EXPECT_TRUE(Contains(text, a1));
  EXPECT_TRUE(Contains(text, "age 60 s"));
  EXPECT_TRUE(Contains(text, "75.0 MiB of 512.0 MiB"));
  EXPECT_FALSE(Contains(text, b1));
}

TEST_F(SessionToolsTest, AnotherPrincipalsSessionIsNotFound) {
  const std::string id = Create();
  for (const auto& [tool, args] : std::vector<std::pair<std::string, json>>{
           {"session_close", {{"session_id", id}}},
           {"session_list_files", {{"session_id", id}}},
           {"session_download_file", {{"session_id", id}, {"path", "a.txt"}}},
           {"session_upload_file", {{"session_id", id}, {"path", "a"}, {"content_text", "x"}}},
           {"run_python", {{"session_id", id}, {"code", "x"}}}}) {
    json result = Tool(tool, args, &bob_);
    EXPECT_TRUE(result["isError"].get<bool>()) << tool;
    EXPECT_TRUE(Contains(Text(result), "not found")) << tool << ": " << Text(result);
    EXPECT_TRUE(Contains(Text(result), "session_create")) << tool;
  }
  EXPECT_EQ(sessions_.session_count(), 1u);  // still there for alice
  EXPECT_FALSE(Tool("session_close", {{"session_id", id}})["isError"].get<bool>());
  EXPECT_EQ(sessions_.session_count(), 0u);
}

TEST_F(SessionToolsTest, RunPythonRoutesToTheSessionWithThePrincipal) {
  const std::string id = Create();
  json result = Tool("run_python", {{"code", "x = 1"},
                                    {"session_id", id},
                                    {"timeout_s", 5},
                                    {"output_bytes", 4096},
                                    {"files", {{{"path", "in.txt"}, {"content_base64", "aGk="}}}}});
  ASSERT_FALSE(result["isError"].get<bool>()) << result;
  EXPECT_TRUE(service_.requests().empty());  // not the one-shot engine
  auto runs = sessions_.runs();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].code, "x = 1");
  EXPECT_EQ(runs[0].limits.timeout_s, 5);
  EXPECT_EQ(runs[0].limits.output_bytes, 4096);
  EXPECT_EQ(runs[0].files[0].content, "hi");
  EXPECT_EQ(sessions_.calls().back(), "Run alice " + id);
  const json& s = result["structuredContent"];
  EXPECT_EQ(s["session_id"], id);
  EXPECT_EQ(s["session_reset"], false);
  EXPECT_FALSE(s.contains("session_notice"));
  EXPECT_EQ(s["stdout"], "ran in " + id + "\n");

  // Without session_id the one-shot engine runs it.
  EXPECT_FALSE(Tool("run_python", {{"code", "1"}})["structuredContent"].contains("session_id"));
  EXPECT_EQ(service_.requests().size(), 1u);
}

TEST_F(SessionToolsTest, MemoryBytesIsRefusedInASession) {
  const std::string id = Create();
  const std::string message =
      InvalidParams("run_python", {{"code", "1"}, {"session_id", id}, {"memory_bytes", 1 << 20}});
  EXPECT_TRUE(Contains(message, "memory_bytes"));
  EXPECT_TRUE(Contains(message, "fixed when it is created"));
  EXPECT_TRUE(sessions_.runs().empty());
  // One-shot runs may narrow it.
  EXPECT_FALSE(Tool("run_python", {{"code", "1"}, {"memory_bytes", 1 << 26}})["isError"]);
  EXPECT_EQ(service_.requests().back().limits.memory_bytes, 1 << 26);
}

TEST_F(SessionToolsTest, ARunKilledByALimitSaysTheSessionWasRestartedEmpty) {
  const std::string id = Create();
  sessions_.AddFile(id, "data.csv", "a,b\n1,2\n");
  sessions_.run_script = [](const std::string&, const exec::RunRequest&, exec::RunObserver&,
                            const exec::CancelToken&) -> Result<exec::RunResult> {
    exec::RunResult r;
    r.verdict = exec::Verdict::kTimeout;
    r.exit_code = -1;
    r.detail = "killed after 30 s; the session was restarted empty";
    r.session_reset = true;
    return r;
  };
  json result = Tool("run_python", {{"code", "while True: pass"}, {"session_id", id}});
  EXPECT_TRUE(result["isError"].get<bool>());
  const json& s = result["structuredContent"];
  EXPECT_EQ(s["verdict"], "timeout");
  EXPECT_EQ(s["session_reset"], true);
  const std::string text = Text(result);
  EXPECT_EQ(text.rfind("[SESSION RESTARTED EMPTY", 0), 0u) << text;
  EXPECT_TRUE(Contains(text, "restarted empty: no variables, no imports, no files"));
  EXPECT_TRUE(Contains(text, id));
  // The fake, like the engine, emptied it; the session itself lives on.
  EXPECT_TRUE(
      Tool("session_list_files", {{"session_id", id}})["structuredContent"]["files"].empty());
  EXPECT_EQ(Tool("session_list", json::object())["structuredContent"]["sessions"][0]["restarts"],
            1);

  // The next call, fine itself, carries the notice of a restart while idle.
  sessions_.run_script = [](const std::string&, const exec::RunRequest&, exec::RunObserver&,
                            const exec::CancelToken&) -> Result<exec::RunResult> {
    exec::RunResult r;
    r.verdict = exec::Verdict::kOk;
    r.exit_code = 0;
    r.session_notice = "the interpreter died while idle (killed by the memory limit)";
    return r;
  };
  json next = Tool("run_python", {{"code", "print(1)"}, {"session_id", id}});
  EXPECT_FALSE(next["isError"].get<bool>());
  EXPECT_EQ(next["structuredContent"]["session_reset"], false);
  EXPECT_EQ(next["structuredContent"]["session_notice"],
            "the interpreter died while idle (killed by the memory limit)");
  EXPECT_TRUE(Contains(Text(next), "[SESSION RESTARTED EMPTY before this call"));
  EXPECT_TRUE(Contains(Text(next), "killed by the memory limit"));
}

TEST_F(SessionToolsTest, RunPythonRefusalsInASession) {
  const std::string id = Create();
  sessions_.SetBusy(id, true);
  json busy = Tool("run_python", {{"code", "1"}, {"session_id", id}});
  EXPECT_TRUE(busy["isError"].get<bool>());
  EXPECT_EQ(busy["structuredContent"]["verdict"], "internal");
  EXPECT_EQ(busy["structuredContent"]["session_id"], id);
  EXPECT_TRUE(Contains(Text(busy), "one at a time"));
  sessions_.SetBusy(id, false);

  json missing = Tool("run_python", {{"code", "1"}, {"session_id", "ffffffffffffffff"}});
  EXPECT_TRUE(missing["isError"].get<bool>());
  EXPECT_TRUE(Contains(Text(missing), "session_list"));

  sessions_.FailNext(Error(ErrorCode::kInvalidArgument, "pool: the session runs in pool default"));
  EXPECT_TRUE(Contains(InvalidParams("run_python", {{"code", "1"}, {"session_id", id}}), "pool"));
}

TEST_F(SessionToolsTest, UploadListDownload) {
  const std::string id = Create();
  json up = Tool("session_upload_file",
                 {{"session_id", id}, {"path", "data/in.csv"}, {"content_text", "a,b\n1,2\n"}});
  ASSERT_FALSE(up["isError"].get<bool>()) << up;
  EXPECT_EQ(up["structuredContent"]["files"][0]["path"], "data/in.csv");
  EXPECT_EQ(up["structuredContent"]["files"][0]["size"], 8);
  EXPECT_EQ(up["structuredContent"]["files"][0]["uri"],
            "sandbox://sessions/" + id + "/files/data/in.csv");
  EXPECT_TRUE(Contains(Text(up), "open(\"data/in.csv\")"));
  const std::string png("\x89PNG\r\n\x1a\nrest", 12);
  EXPECT_FALSE(Tool("session_upload_file", {{"session_id", id},
                                            {"path", "plot.png"},
                                            {"content_base64", Base64Encode(png)}})["isError"]);

  json list = Tool("session_list_files", {{"session_id", id}});
  const json& files = list["structuredContent"]["files"];
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0]["path"], "data/in.csv");
  EXPECT_EQ(files[0]["mime_type"], "text/csv");
  EXPECT_EQ(files[1]["path"], "plot.png");
  EXPECT_EQ(list["structuredContent"]["truncated"], false);
  EXPECT_TRUE(Contains(Text(list), "plot.png (12 bytes, image/png)"));

  json text = Tool("session_download_file", {{"session_id", id}, {"path", "data/in.csv"}});
  ASSERT_FALSE(text["isError"].get<bool>());
  ASSERT_EQ(text["content"].size(), 2u);  // text, resource
  EXPECT_EQ(text["content"][1]["type"], "resource");
  EXPECT_EQ(text["content"][1]["resource"],
            json({{"uri", "sandbox://sessions/" + id + "/files/data/in.csv"},
                  {"mimeType", "text/csv"},
                  {"text", "a,b\n1,2\n"}}));
  EXPECT_EQ(text["structuredContent"]["size"], 8);

  json image = Tool("session_download_file", {{"session_id", id}, {"path", "plot.png"}});
  ASSERT_EQ(image["content"].size(), 3u);  // text, image, resource
  EXPECT_EQ(image["content"][1]["type"], "image");
  EXPECT_EQ(image["content"][1]["mimeType"], "image/png");
  EXPECT_EQ(*Base64Decode(image["content"][1]["data"].get<std::string>()), png);
  EXPECT_EQ(*Base64Decode(image["content"][2]["resource"]["blob"].get<std::string>()), png);
  EXPECT_FALSE(image["content"][2]["resource"].contains("text"));

  json missing = Tool("session_download_file", {{"session_id", id}, {"path", "nope.txt"}});
  EXPECT_TRUE(missing["isError"].get<bool>());
  EXPECT_TRUE(Contains(Text(missing), "session_list_files"));
}

TEST_F(SessionToolsTest, SizeLimitsAreClear) {
  const std::string id = Create();
  json big =
      Tool("session_upload_file", {{"session_id", id},
                                   {"path", "big.bin"},
                                   {"content_base64", Base64Encode(std::string(2 << 20, 'x'))}});
  EXPECT_TRUE(big["isError"].get<bool>());
  EXPECT_TRUE(Contains(Text(big), "2.0 MiB, above the limit of 1.0 MiB"));
  EXPECT_TRUE(sessions_.calls().back().rfind("Create", 0) == 0);  // never reached the engine

  sessions_.AddFile(id, "huge.csv", std::string((1 << 20) + 1, 'x'));
  json down = Tool("session_download_file", {{"session_id", id}, {"path", "huge.csv"}});
  EXPECT_TRUE(down["isError"].get<bool>());
  EXPECT_TRUE(Contains(Text(down), "above the download limit"));

  EXPECT_TRUE(
      Contains(InvalidParams("session_upload_file",
                             {{"session_id", id}, {"path", "/etc/x"}, {"content_text", "x"}}),
               "relative"));
}

TEST_F(SessionToolsTest, DoneScenarioCsvPandasPlotDownload) {
  // Through MCP: create a session, upload a CSV, load it with pandas in one call, plot a column
  // in the next, download a file written in a third. The fake plays the interpreter; what is
  // checked is that every step reaches the same session with the caller's principal and comes
  // back in the right shape.
  const std::string id = Create();
  ASSERT_FALSE(
      Tool("session_upload_file", {{"session_id", id},
                                   {"path", "sales.csv"},
                                   {"content_text", "month,total\n1,10\n2,30\n"}})["isError"]);
  int call = 0;
  sessions_.run_script = [&](const std::string& session, const exec::RunRequest& request,
                             exec::RunObserver&, const exec::CancelToken&) {
    EXPECT_EQ(session, id);
    exec::RunResult r;
    r.verdict = exec::Verdict::kOk;
    r.exit_code = 0;
    switch (++call) {
      case 1:
        EXPECT_NE(request.code.find("read_csv('sales.csv')"), std::string::npos);
        r.value = "   month  total\n0      1     10\n1      2     30";
        break;
      case 2:
        r.images.push_back(exec::Image{"image/png", 640, 480, "\x89PNG fake"});
        break;
      default:
        r.files.push_back(
            exec::OutputFile{"summary.json", 13, "application/json", R"({"total":40})"});
        break;
    }
    return Result<exec::RunResult>(r);
  };
  json load = Tool(
      "run_python",
      {{"session_id", id}, {"code", "import pandas as pd\ndf = pd.read_csv('sales.csv')\ndf"}});
  EXPECT_TRUE(Contains(Text(load), "month  total"));
  json plot = Tool("run_python", {{"session_id", id}, {"code", "df.plot(y='total'); plt.show()"}});
  EXPECT_EQ(plot["content"][1]["type"], "image");
  json write = Tool("run_python", {{"session_id", id},
                                   {"code",
                                    "import json\njson.dump({'total': int(df.total.sum())}, "
                                    "open('summary.json', 'w'))"}});
  // A session's output files are embedded under the session's URI (readable later too).
  EXPECT_EQ(write["content"][1]["resource"]["uri"],
            "sandbox://sessions/" + id + "/files/summary.json");
  json download = Tool("session_download_file", {{"session_id", id}, {"path", "summary.json"}});
  EXPECT_EQ(download["content"][1]["resource"]["text"], R"({"total":40})");
  for (const auto& c : sessions_.calls()) {
    EXPECT_NE(c.find(" alice "), std::string::npos) << c;
  }
}

TEST_F(SessionToolsTest, ResourcesListPagesThroughTheCallersFiles) {
  const std::string a = Create();
  const std::string b = Create();
  const std::string other = Create(&bob_);
  sessions_.AddFile(a, "x.txt", "x");
  sessions_.AddFile(a, "dir/a b.csv", "1,2");
  sessions_.AddFile(b, "y.png", "\x89PNG");
  sessions_.AddFile(b, "z.json", "{}");
  sessions_.AddFile(other, "secret.txt", "bob's");

  std::vector<json> all;
  std::string cursor;
  int pages = 0;
  do {
    json params = json::object();
    if (!cursor.empty()) params["cursor"] = cursor;
    json page = Send(Request(++id_, "resources/list", params))["result"];
    ASSERT_TRUE(page.contains("resources")) << page;
    for (const auto& r : page["resources"]) all.push_back(r);
    cursor = page.value("nextCursor", "");
    ++pages;
  } while (!cursor.empty() && pages < 10);
  EXPECT_EQ(pages, 2);  // page size 3
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all[0]["uri"], "sandbox://sessions/" + a + "/files/dir/a%20b.csv");
  EXPECT_EQ(all[0]["name"], "dir/a b.csv");
  EXPECT_EQ(all[0]["mimeType"], "text/csv");
  EXPECT_EQ(all[0]["size"], 3);
  EXPECT_EQ(all[0]["annotations"]["lastModified"], "2026-01-01T00:00:00Z");
  EXPECT_EQ(all[3]["uri"], "sandbox://sessions/" + b + "/files/z.json");
  for (const auto& r : all) EXPECT_FALSE(Contains(r["uri"], other));

  // A busy session is left out rather than waited for.
  sessions_.SetBusy(a, true);
  json busy = Send(Request(++id_, "resources/list"))["result"];
  EXPECT_EQ(busy["resources"].size(), 2u);

  json bad = Send(Request(++id_, "resources/list", {{"cursor", "nonsense"}}));
  EXPECT_EQ(bad["error"]["code"], rpc_code::kInvalidParams);
}

TEST_F(SessionToolsTest, ResourcesReadAndTemplates) {
  const std::string id = Create();
  sessions_.AddFile(id, "dir/a b.csv", "1,2\n");
  sessions_.AddFile(id, "raw.bin", std::string("\x00\x01", 2));
  json templates = Send(Request(1, "resources/templates/list"))["result"]["resourceTemplates"];
  ASSERT_EQ(templates.size(), 1u);
  EXPECT_EQ(templates[0]["uriTemplate"], "sandbox://sessions/{session_id}/files/{path}");

  const std::string uri = "sandbox://sessions/" + id + "/files/dir/a%20b.csv";
  json text = Send(Request(2, "resources/read", {{"uri", uri}}))["result"];
  EXPECT_EQ(text["contents"],
            json::array({{{"uri", uri}, {"mimeType", "text/csv"}, {"text", "1,2\n"}}}));
  // %2F for "/" reads the same file.
  json encoded = Send(Request(3, "resources/read",
                              {{"uri", "sandbox://sessions/" + id + "/files/dir%2Fa%20b.csv"}}));
  EXPECT_EQ(encoded["result"]["contents"][0]["text"], "1,2\n");
  json blob = Send(Request(4, "resources/read",
                           {{"uri", "sandbox://sessions/" + id + "/files/raw.bin"}}))["result"];
  EXPECT_EQ(*Base64Decode(blob["contents"][0]["blob"].get<std::string>()),
            std::string("\x00\x01", 2));

  for (const std::string& missing :
       {"sandbox://sessions/" + id + "/files/none.txt", std::string("sandbox://sessions/x/y"),
        std::string("sandbox://sessions/ffff/files/a.txt"), std::string("file:///etc/passwd"),
        "sandbox://sessions/" + id + "/files/bad%zz"}) {
    json error = Send(Request(5, "resources/read", {{"uri", missing}}));
    EXPECT_EQ(error["error"]["code"], rpc_code::kResourceNotFound) << missing;
    EXPECT_EQ(error["error"]["data"]["uri"], missing);
    EXPECT_TRUE(Contains(error["error"]["message"], "Resource not found")) << error;
  }
  sessions_.AddFile(id, "huge.bin", std::string((1 << 20) + 1, 'x'));
  json huge =
      Send(Request(8, "resources/read", {{"uri", "sandbox://sessions/" + id + "/files/huge.bin"}}));
  EXPECT_EQ(huge["error"]["code"], rpc_code::kInvalidParams);
  EXPECT_TRUE(Contains(huge["error"]["message"], "download limit"));
  // Another principal cannot read it.
  json foreign = Send(bob_, Request(6, "resources/read", {{"uri", uri}}));
  EXPECT_EQ(foreign["error"]["code"], rpc_code::kResourceNotFound);
  EXPECT_EQ(Send(Request(7, "resources/read", json::object()))["error"]["code"],
            rpc_code::kInvalidParams);
}

TEST(SessionUri, EncodeAndParse) {
  EXPECT_EQ(SessionFileUri("ab12", "out/résumé 1.txt"),
            "sandbox://sessions/ab12/files/out/r%C3%A9sum%C3%A9%201.txt");
  auto ref = ParseSessionFileUri("sandbox://sessions/ab12/files/out/r%C3%A9sum%C3%A9%201.txt");
  ASSERT_TRUE(ref);
  EXPECT_EQ(ref->session_id, "ab12");
  EXPECT_EQ(ref->path, "out/résumé 1.txt");
  EXPECT_EQ(ParseSessionFileUri("sandbox://sessions/ab12/files/a%2fb")->path, "a/b");
  for (auto bad : {"sandbox://sessions//files/a", "sandbox://sessions/ab12/files/",
                   "sandbox://sessions/ab12/file/a", "sandbox://sessions/a.b/files/x",
                   "sandbox://sessions/ab12/files/a%0", "sandbox://sessions/ab12/files/a%00b",
                   "sandbox://sessions/ab12/files/a?x=1", "sandbox://runs/ab12/files/a"}) {
    EXPECT_FALSE(ParseSessionFileUri(bad)) << bad;
  }
}

TEST(ResourceRegistryTest, PagesRunThroughEveryProvider) {
  FakeSessionService sessions;
  auto id = sessions.Create("local", {});
  ASSERT_TRUE(id.ok());
  for (int i = 0; i < 3; ++i) sessions.AddFile(id->id, "f" + std::to_string(i) + ".txt", "x");
  ResourceRegistry registry;
  registry.Add(testing::MakeConformanceResources());
  registry.Add(std::make_unique<SessionResourceProvider>(sessions, SessionResourceOptions{2}));
  std::vector<std::string> uris;
  std::string cursor;
  for (int page = 0; page < 10; ++page) {
    auto result = registry.List("local", cursor);
    ASSERT_TRUE(result.ok()) << result.error().message();
    for (const auto& r : (*result)["resources"]) uris.push_back(r["uri"]);
    cursor = result->value("nextCursor", "");
    if (cursor.empty()) break;
  }
  ASSERT_EQ(uris.size(), 5u);
  EXPECT_EQ(uris[0], "test://static-text");
  EXPECT_EQ(uris[1], "test://static-binary");
  EXPECT_EQ(uris[4], "sandbox://sessions/" + id->id + "/files/f2.txt");
  EXPECT_FALSE(registry.List("local", "7.").ok());
  EXPECT_FALSE(registry.List("local", "x").ok());
  EXPECT_EQ(registry.Templates()["resourceTemplates"].size(), 2u);
}

TEST(ConformanceResources, TheSuitesFixtures) {
  auto provider = testing::MakeConformanceResources();
  auto list = provider->List("local", "");
  ASSERT_TRUE(list.ok());
  for (const auto& r : list->resources) {
    EXPECT_TRUE(r.contains("uri") && r.contains("name")) << r;
  }
  auto text = provider->Read("local", "test://static-text");
  ASSERT_TRUE(text.ok());
  EXPECT_EQ((*text)[0]["text"], "This is the content of the static text resource.");
  EXPECT_EQ((*text)[0]["mimeType"], "text/plain");
  auto binary = provider->Read("local", "test://static-binary");
  ASSERT_TRUE(binary.ok());
  EXPECT_TRUE(Base64Decode((*binary)[0]["blob"].get<std::string>()).ok());
  auto templated = provider->Read("local", "test://template/123/data");
  ASSERT_TRUE(templated.ok());
  EXPECT_EQ((*templated)[0]["uri"], "test://template/123/data");
  EXPECT_EQ(json::parse((*templated)[0]["text"].get<std::string>())["id"], "123");
  EXPECT_EQ(provider->Read("local", "test://nope").error().code(), ErrorCode::kNotFound);
}

TEST(WithoutSessions, NoSessionToolsNoResources) {
  FakeService service;
  Dispatcher dispatcher = testing::MakeDispatcher(service);
  Session session;
  RecordingOutbound out;
  json init = *dispatcher.Handle(session, InitializeRequest(), out);
  EXPECT_FALSE(init["result"]["capabilities"].contains("resources"));
  json tools = (*dispatcher.Handle(session, Request(1, "tools/list"), out))["result"]["tools"];
  ASSERT_EQ(tools.size(), 2u);
  EXPECT_FALSE(tools[0]["inputSchema"]["properties"].contains("session_id"));
  EXPECT_TRUE(Contains(tools[0]["description"], "fresh interpreter"));
  EXPECT_EQ((*dispatcher.Handle(session, Request(2, "resources/list"), out))["error"]["code"],
            rpc_code::kMethodNotFound);
  EXPECT_EQ((*dispatcher.Handle(session, Request(3, "resources/read", {{"uri", "x"}}),
                                out))["error"]["code"],
            rpc_code::kMethodNotFound);
}

}  // namespace
}  // namespace sandbox::mcp
