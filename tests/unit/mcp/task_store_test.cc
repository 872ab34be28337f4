// The tasks extension: the store (ids, ownership, limits, expiry with a fake clock, input waits
// with partial answers, cancel), and the dispatcher's task surface over a FakeService (a
// run_python task, its live output, tasks/get|update|cancel, gating and refusals).
#include "sandbox/mcp/task_store.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "conformance/conformance_tools.h"
#include "unit/mcp/test_util.h"

namespace sandbox::mcp {
namespace {

using json = nlohmann::json;
namespace rpc_code = jsonrpc::rpc_code;
using jsonrpc::DumpJson;
using sandbox::testing::FakeService;
using testing::NullLogger;

// Polls `done` for up to 30 s.
template <typename F>
bool Eventually(F done) {
  for (int i = 0; i < 3000; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

class TaskStoreTest : public ::testing::Test {
 protected:
  TaskOptions Options() {
    TaskOptions options;
    options.ttl = std::chrono::seconds(60);
    options.max_running_per_principal = 2;
    options.max_per_principal = 3;
    options.now = [this] { return now_; };
    return options;
  }
  std::chrono::system_clock::time_point now_ = std::chrono::system_clock::now();
};

TEST_F(TaskStoreTest, ATaskIsFoundBeforeStartReturnsAndOnlyByItsOwner) {
  TaskStore store(Options(), NullLogger());
  std::string seen_in_run;
  auto task = store.Start("alice", [&](Task& t) {
    seen_in_run = store.Find("alice", t.id()) ? "found" : "missing";
    t.Finish({{"content", json::array()}});
  });
  ASSERT_TRUE(task.ok());
  EXPECT_EQ((*task)->id().size(), 32u);
  EXPECT_NE(store.Find("alice", (*task)->id()), nullptr);
  EXPECT_EQ(store.Find("bob", (*task)->id()), nullptr);  // like an unknown id
  EXPECT_EQ(store.Find("alice", "0123"), nullptr);
  ASSERT_TRUE(Eventually([&] { return (*task)->terminal(); }));
  EXPECT_EQ(seen_in_run, "found");
  json detailed = (*task)->Detailed();
  EXPECT_EQ(detailed["status"], "completed");
  EXPECT_TRUE(detailed.contains("result"));
  EXPECT_EQ(detailed["ttlMs"], 60000);
  EXPECT_FALSE(detailed.contains("requestState"));
}

// Behind a balancer (server.replica), a task's id names its replica; a task id of another
// replica is unknown here, as any unknown id.
TEST_F(TaskStoreTest, AReplicasTaskIdsStartWithItsName) {
  TaskOptions options = Options();
  options.replica = "r2";
  TaskStore store(options, NullLogger());
  auto task = store.Start("alice", [](Task& t) { t.Finish(json::object()); });
  ASSERT_TRUE(task.ok());
  const std::string& id = (*task)->id();
  ASSERT_EQ(id.rfind("r2-", 0), 0u) << id;
  EXPECT_EQ(id.size(), 3u + 32u);  // the prefix, then 128 random bits in hex
  EXPECT_EQ(id.find_first_not_of("0123456789abcdef", 3), std::string::npos) << id;
  EXPECT_NE(store.Find("alice", id), nullptr);
  EXPECT_EQ(store.Find("alice", "r1-" + id.substr(3)), nullptr);
  ASSERT_TRUE(Eventually([&] { return (*task)->terminal(); }));
}

TEST_F(TaskStoreTest, LimitsPerPrincipalAndEvictionOfTheOldestFinished) {
  TaskStore store(Options(), NullLogger());
  exec::CancelToken release;
  auto blocking = [&](Task& t) {
    while (!release.IsCancelled() && !t.cancel().IsCancelled()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    t.Finish(json::object());
  };
  auto first = store.Start("alice", blocking);
  now_ += std::chrono::seconds(1);  // distinct creation times: "oldest" is well defined
  auto second = store.Start("alice", blocking);
  now_ += std::chrono::seconds(1);
  ASSERT_TRUE(first.ok() && second.ok());
  auto third = store.Start("alice", blocking);  // two running: refused, saying why
  ASSERT_FALSE(third.ok());
  EXPECT_EQ(third.error().code(), ErrorCode::kLimit);
  EXPECT_NE(third.error().message().find("tasks/cancel"), std::string::npos);
  EXPECT_TRUE(store.Start("bob", [](Task& t) { t.Finish(json::object()); }).ok());  // bob's own
  release.Cancel();
  ASSERT_TRUE(Eventually([&] { return (*first)->terminal() && (*second)->terminal(); }));
  auto quick = store.Start("alice", [](Task& t) { t.Finish(json::object()); });
  ASSERT_TRUE(quick.ok());
  ASSERT_TRUE(Eventually([&] { return (*quick)->terminal(); }));
  now_ += std::chrono::seconds(1);
  // Three kept (the most): the oldest finished one makes room for the next.
  auto fourth = store.Start("alice", [](Task& t) { t.Finish(json::object()); });
  ASSERT_TRUE(fourth.ok());
  EXPECT_EQ(store.Find("alice", (*first)->id()), nullptr);
  EXPECT_NE(store.Find("alice", (*quick)->id()), nullptr);
}

TEST_F(TaskStoreTest, FinishedTasksExpireAfterTheirTtlNotBefore) {
  TaskStore store(Options(), NullLogger());
  auto task = store.Start("alice", [](Task& t) { t.Finish(json::object()); });
  ASSERT_TRUE(task.ok());
  ASSERT_TRUE(Eventually([&] { return (*task)->terminal(); }));
  now_ += std::chrono::seconds(59);
  EXPECT_NE(store.Find("alice", (*task)->id()), nullptr);
  now_ += std::chrono::seconds(2);
  EXPECT_EQ(store.Find("alice", (*task)->id()), nullptr);
}

// A CallToolResult of one text block of `bytes` bytes.
json TextResult(std::size_t bytes) {
  return {{"content", json::array({{{"type", "text"}, {"text", std::string(bytes, 'x')}}})}};
}

TEST_F(TaskStoreTest, KeptResultsStayWithinTheirByteBoundsTheOldestEvictedFirst) {
  TaskOptions options = Options();
  options.max_per_principal = 100;
  options.max_result_bytes_per_principal = 3 << 20;
  options.max_result_bytes = 5 << 20;
  TaskStore store(options, NullLogger());
  const auto size = static_cast<std::int64_t>(DumpJson(TextResult(1 << 20)).size());
  // Runs one task of `principal` to its end and waits until the store has kept (or evicted)
  // its result: `kept` bytes kept in all, `evicted` evictions since the start.
  auto run = [&](const std::string& principal, std::size_t bytes, std::int64_t kept,
                 std::uint64_t evicted) {
    auto task = store.Start(principal, [bytes](Task& t) { t.Finish(TextResult(bytes)); });
    EXPECT_TRUE(task.ok());
    EXPECT_TRUE(Eventually([&] {
      const KeptResultStats now = store.kept_results();
      return now.bytes == kept && now.evicted_total == evicted;
    })) << principal
        << ": kept " << store.kept_results().bytes << ", evicted "
        << store.kept_results().evicted_total;
    EXPECT_LE(store.kept_results().bytes, options.max_result_bytes);
    now_ += std::chrono::seconds(1);
    return *task;
  };
  // Six finished tasks of one token: two fit its 3 MiB, the oldest go first.
  std::vector<std::shared_ptr<Task>> alice;
  for (std::int64_t i = 0; i < 6; ++i) {
    alice.push_back(run("alice", 1 << 20, std::min<std::int64_t>(i + 1, 2) * size,
                        static_cast<std::uint64_t>(std::max<std::int64_t>(i - 1, 0))));
  }
  for (std::size_t i = 0; i < 4; ++i) {
    json got = alice[i]->Detailed();
    EXPECT_EQ(got["status"], "failed") << i;
    EXPECT_FALSE(got.contains("result")) << i;
    const std::string message = got["error"]["message"];
    EXPECT_NE(message.find("is no longer kept"), std::string::npos) << message;
    EXPECT_NE(message.find("tasks.max_result_bytes_per_principal"), std::string::npos) << message;
    EXPECT_EQ(got["error"]["data"]["evicted"], true);
    EXPECT_NE(store.Find("alice", alice[i]->id()), nullptr);  // still listed, its answer clear
  }
  EXPECT_EQ(alice[4]->Detailed()["status"], "completed");
  EXPECT_EQ(alice[5]->Detailed()["status"], "completed");

  // Another token's results fit its own bound, until the server's: then anyone's oldest go.
  auto bob1 = run("bob", 1 << 20, 3 * size, 4);
  auto bob2 = run("bob", 1 << 20, 4 * size, 4);
  auto carol = run("carol", 1 << 20, 4 * size, 5);  // 5 x 1 MiB and more: over 5 MiB
  EXPECT_EQ(carol->Detailed()["status"], "completed");
  const std::string message = alice[4]->Detailed()["error"]["message"];
  EXPECT_NE(message.find("tasks.max_result_bytes)"), std::string::npos) << message;
  EXPECT_EQ(alice[5]->Detailed()["status"], "completed");

  // A result larger than a token's bound is not kept at all.
  auto big = run("dave", 4 << 20, 4 * size, 6);
  json got = big->Detailed();
  EXPECT_EQ(got["status"], "failed");
  EXPECT_NE(got["error"]["message"].get<std::string>().find("was not kept"), std::string::npos);

  // Expired tasks give their bytes back.
  now_ += std::chrono::seconds(120);
  EXPECT_EQ(store.Find("alice", alice[5]->id()), nullptr);
  EXPECT_EQ(store.kept_results().bytes, 0);
}

TEST_F(TaskStoreTest, InputWaitsForEveryKeyAndAcceptsPartialAnswers) {
  TaskStore store(Options(), NullLogger());
  json got;
  auto task = store.Start("alice", [&](Task& t) {
    got = t.AwaitInput(
        {{"a", {{"method", "elicitation/create"}}}, {"b", {{"method", "elicitation/create"}}}},
        std::chrono::seconds(30));
    t.Finish(json::object());
  });
  ASSERT_TRUE(task.ok());
  Task& t = **task;
  ASSERT_TRUE(Eventually([&] { return t.Detailed()["status"] == "input_required"; }));
  EXPECT_EQ(t.Detailed()["inputRequests"].size(), 2u);
  t.Answer({{"a", {{"action", "accept"}}}, {"zzz", {{"action", "accept"}}}});  // zzz: ignored
  json after_partial = t.Detailed();
  EXPECT_EQ(after_partial["status"], "input_required");
  EXPECT_EQ(after_partial["inputRequests"].size(), 1u);
  EXPECT_TRUE(after_partial["inputRequests"].contains("b"));
  t.Answer({{"b", {{"action", "decline"}}}});
  ASSERT_TRUE(Eventually([&] { return t.terminal(); }));
  EXPECT_EQ(got.size(), 2u);
  EXPECT_EQ(got["b"]["action"], "decline");
}

TEST_F(TaskStoreTest, CancelEndsAsCancelledAndIsIdempotentOnceFinished) {
  TaskStore store(Options(), NullLogger());
  auto task = store.Start("alice", [](Task& t) {
    while (!t.cancel().IsCancelled()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    t.Finish({{"content", json::array()}});  // the run still returns a result
  });
  ASSERT_TRUE(task.ok());
  (*task)->RequestCancel();
  ASSERT_TRUE(Eventually([&] { return (*task)->terminal(); }));
  EXPECT_EQ((*task)->Detailed()["status"], "cancelled");
  (*task)->RequestCancel();
  EXPECT_EQ((*task)->Detailed()["status"], "cancelled");
  auto done = store.Start("alice", [](Task& t) { t.Finish(json::object()); });
  ASSERT_TRUE(Eventually([&] { return (*done)->terminal(); }));
  (*done)->RequestCancel();  // a finished task stays as it is
  EXPECT_EQ((*done)->Detailed()["status"], "completed");
}

TEST_F(TaskStoreTest, ShutdownCancelsRunningTasksAndRefusesNewOnes) {
  TaskStore store(Options(), NullLogger());
  auto task = store.Start("alice", [](Task& t) {
    while (!t.cancel().IsCancelled()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    t.Finish(json::object());
  });
  ASSERT_TRUE(task.ok());
  store.Shutdown();
  EXPECT_TRUE((*task)->terminal());
  EXPECT_FALSE(store.Start("alice", [](Task& t) { t.Finish(json::object()); }).ok());
}

TEST_F(TaskStoreTest, AskInputCallsBackOnceWithTheAnswerOrNullAtTheEnd) {
  TaskStore store(Options(), NullLogger());
  std::mutex mu;
  std::vector<json> answers;
  auto record = [&](const json& answer) {
    std::lock_guard lock(mu);
    answers.push_back(answer);
  };
  std::atomic<bool> finish{false};
  auto task = store.Start("alice", [&](Task& t) {
    t.AskInput("stdin-1", {{"method", "elicitation/create"}}, record);
    t.AskInput("stdin-1", {{"method", "elicitation/create"}}, record);  // asked already: null
    while (!finish) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    t.AskInput("stdin-2", {{"method", "elicitation/create"}}, record);
    t.Finish(json::object());  // stdin-2 unanswered: null
  });
  ASSERT_TRUE(task.ok());
  Task& t = **task;
  ASSERT_TRUE(Eventually([&] {
    std::lock_guard lock(mu);
    return answers.size() == 1;
  }));
  EXPECT_TRUE(answers[0].is_null());
  json waiting = t.Detailed();
  EXPECT_EQ(waiting["status"], "input_required");
  EXPECT_TRUE(waiting["inputRequests"].contains("stdin-1"));
  t.Answer({{"stdin-1", {{"action", "accept"}, {"content", {{"line", "bob"}}}}}});
  {
    std::lock_guard lock(mu);
    ASSERT_EQ(answers.size(), 2u);  // called on the answering thread, before Answer returns
    EXPECT_EQ(answers[1]["content"]["line"], "bob");
  }
  EXPECT_EQ(t.Detailed()["status"], "working");
  t.Answer({{"stdin-1", {{"action", "accept"}}}});  // answered already: ignored
  finish = true;
  ASSERT_TRUE(Eventually([&] { return t.terminal(); }));
  std::lock_guard lock(mu);
  ASSERT_EQ(answers.size(), 3u);
  EXPECT_TRUE(answers[2].is_null());
  EXPECT_FALSE(t.Detailed().contains("inputRequests"));
}

// ---- through the dispatcher ----

json Meta(bool tasks, json capabilities = json::object()) {
  if (tasks) capabilities["extensions"] = {{"io.modelcontextprotocol/tasks", json::object()}};
  return {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
          {"io.modelcontextprotocol/clientCapabilities", std::move(capabilities)}};
}

json Modern(const json& id, const std::string& method, json params, bool tasks = true,
            json capabilities = json::object()) {
  params["_meta"] = Meta(tasks, std::move(capabilities));
  return testing::Request(id, method, std::move(params));
}

class DispatcherTasksTest : public ::testing::Test {
 protected:
  DispatcherTasksTest() {
    ToolRegistry tools;
    tools.Add(std::make_unique<RunPythonTool>(service_, RunPythonOptions{}));
    for (auto& tool : testing::MakeConformanceTools()) tools.Add(std::move(tool));
    dispatcher_ = std::make_unique<Dispatcher>(ServerIdentity{}, std::move(tools),
                                               ResourceRegistry{}, NullLogger(), &store_);
  }
  ~DispatcherTasksTest() override { store_.Shutdown(); }
  json Handle(const json& message, const std::string& principal = "alice") {
    Session calls(principal);
    NullOutbound out;
    auto response = dispatcher_->HandleModern(calls, message, out);
    return response ? *response : json();
  }
  json Get(const std::string& task_id, const std::string& principal = "alice") {
    return Handle(Modern(9, "tasks/get", {{"taskId", task_id}}), principal);
  }

  FakeService service_;
  TaskStore store_{TaskOptions{}, NullLogger()};
  std::unique_ptr<Dispatcher> dispatcher_;
};

TEST_F(DispatcherTasksTest, RunPythonBecomesATaskThatOutlivesItsRequest) {
  service_.SetBehaviour(service_.BlockUntilCancelled(std::chrono::seconds(2)));
  json created =
      Handle(Modern(1, "tools/call", {{"name", "run_python"}, {"arguments", {{"code", "x"}}}}));
  const json& task = created["result"];
  ASSERT_EQ(task["resultType"], "task") << created.dump();
  EXPECT_EQ(task["status"], "working");
  EXPECT_FALSE(task.contains("task"));  // flat, no wrapper
  // The request (and its Session) are gone; the run goes on and its output shows.
  ASSERT_TRUE(service_.WaitStarted());
  ASSERT_TRUE(Eventually([&] {
    return Get(task["taskId"])["result"]["_meta"]["dev.sandbox-mcp/output"]["text"] == "started\n";
  }));
  ASSERT_TRUE(Eventually([&] { return Get(task["taskId"])["result"]["status"] != "working"; }));
  json done = Get(task["taskId"])["result"];
  EXPECT_EQ(done["status"], "completed");
  EXPECT_EQ(done["resultType"], "complete");
  EXPECT_EQ(done["result"]["structuredContent"]["verdict"], "timeout");
  EXPECT_FALSE(done["result"].contains("_meta") &&
               done["result"]["_meta"].contains("io.modelcontextprotocol/related-task"));
  EXPECT_EQ(Get(task["taskId"], "bob")["error"]["code"], rpc_code::kInvalidParams);
}

TEST_F(DispatcherTasksTest, BadArgumentsAreRefusedBeforeATaskExists) {
  json response =
      Handle(Modern(1, "tools/call", {{"name", "run_python"}, {"arguments", json::object()}}));
  EXPECT_EQ(response["error"]["code"], rpc_code::kInvalidParams);
  EXPECT_EQ(store_.size(), 0u);
}

TEST_F(DispatcherTasksTest, WithoutTheExtensionRunsInlineAndTasksMethodsNeedIt) {
  json response = Handle(
      Modern(1, "tools/call", {{"name", "run_python"}, {"arguments", {{"code", "x"}}}}, false));
  EXPECT_EQ(response["result"]["resultType"], "complete");
  EXPECT_EQ(response["result"]["structuredContent"]["stdout"], "hello\n");
  for (const char* method : {"tasks/get", "tasks/update", "tasks/cancel"}) {
    json refused = Handle(Modern(2, method, {{"taskId", "x"}}, false));
    EXPECT_EQ(refused["error"]["code"], rpc_code::kMissingClientCapability) << method;
  }
  json required = Handle(Modern(3, "tools/call", {{"name", "failing_job"}}, false));
  EXPECT_EQ(required["error"]["code"], rpc_code::kMissingClientCapability);
  EXPECT_TRUE(required["error"]["data"]["requiredCapabilities"]["extensions"].contains(
      "io.modelcontextprotocol/tasks"));
}

TEST_F(DispatcherTasksTest, CancelAndErrorsEndInTheirStatuses) {
  json slow =
      Handle(Modern(1, "tools/call", {{"name", "slow_compute"}, {"arguments", {{"seconds", 30}}}}));
  const std::string id = slow["result"]["taskId"];
  json ack = Handle(Modern(2, "tasks/cancel", {{"taskId", id}}));
  EXPECT_EQ(ack["result"]["resultType"], "complete");
  ASSERT_TRUE(Eventually([&] { return Get(id)["result"]["status"] == "cancelled"; }));
  json failing = Handle(Modern(3, "tools/call", {{"name", "failing_job"}}));
  ASSERT_TRUE(Eventually(
      [&] { return Get(failing["result"]["taskId"])["result"]["status"] == "completed"; }));
  EXPECT_EQ(Get(failing["result"]["taskId"])["result"]["result"]["isError"], true);
  json protocol = Handle(Modern(4, "tools/call", {{"name", "protocol_error_job"}}));
  ASSERT_TRUE(Eventually(
      [&] { return Get(protocol["result"]["taskId"])["result"]["status"] == "failed"; }));
  json failed = Get(protocol["result"]["taskId"])["result"];
  EXPECT_EQ(failed["error"]["code"], rpc_code::kInternalError);
  EXPECT_FALSE(failed.contains("result"));
  EXPECT_EQ(Handle(Modern(5, "tasks/get", {{"taskId", "nope"}}))["error"]["code"],
            rpc_code::kInvalidParams);
}

TEST_F(DispatcherTasksTest, InputRequiredIsAnsweredWithTasksUpdate) {
  json created = Handle(Modern(
      1, "tools/call", {{"name", "confirm_delete"}, {"arguments", {{"filename", "a.txt"}}}}));
  const std::string id = created["result"]["taskId"];
  ASSERT_TRUE(Eventually([&] { return Get(id)["result"]["status"] == "input_required"; }));
  json waiting = Get(id)["result"];
  ASSERT_TRUE(waiting["inputRequests"].contains("confirm"));
  json ack =
      Handle(Modern(2, "tasks/update",
                    {{"taskId", id},
                     {"inputResponses",
                      {{"confirm", {{"action", "accept"}, {"content", {{"confirm", true}}}}}}}}));
  EXPECT_EQ(ack["result"]["resultType"], "complete");
  ASSERT_TRUE(Eventually([&] { return Get(id)["result"]["status"] == "completed"; }));
  EXPECT_EQ(Get(id)["result"]["result"]["content"][0]["text"], "Deleted a.txt");
}

// A run that reads stdin: it asks once and returns what it was given ("EOF" for none).
FakeService::Behaviour AskOnce() {
  return [](const exec::RunRequest&, exec::RunObserver& observer,
            const exec::CancelToken& cancel) -> Result<exec::RunResult> {
    exec::RunResult result;
    result.verdict = exec::Verdict::kOk;
    if (!observer.AnswersInput()) {
      result.stdout_text = "not asked";
      return result;
    }
    auto got = std::make_shared<std::pair<std::mutex, std::optional<std::optional<std::string>>>>();
    observer.OnInputRequest({1, "name? "}, [got](std::optional<std::string> line) {
      std::lock_guard lock(got->first);
      got->second = std::move(line);
    });
    for (int i = 0; i < 3000 && !cancel.IsCancelled(); ++i) {
      {
        std::lock_guard lock(got->first);
        if (got->second) {
          result.stdout_text = got->second->value_or("EOF");
          return result;
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    result.verdict = exec::Verdict::kCancelled;
    return result;
  };
}

TEST_F(DispatcherTasksTest, StdinOfATaskRunIsAFormTheClientAnswersWithTasksUpdate) {
  service_.SetBehaviour(AskOnce());
  const json forms = {{"elicitation", json::object()}};
  json created =
      Handle(Modern(1, "tools/call", {{"name", "run_python"}, {"arguments", {{"code", "input()"}}}},
                    true, forms));
  const std::string id = created["result"]["taskId"];
  ASSERT_TRUE(Eventually([&] { return Get(id)["result"]["status"] == "input_required"; }));
  json ask = Get(id)["result"]["inputRequests"]["stdin-1"];
  EXPECT_EQ(ask["method"], "elicitation/create");
  EXPECT_EQ(ask["params"]["mode"], "form");
  EXPECT_EQ(ask["params"]["message"], "name? ");
  EXPECT_EQ(ask["params"]["requestedSchema"]["required"], json::array({"line"}));
  Handle(Modern(
      2, "tasks/update",
      {{"taskId", id},
       {"inputResponses", {{"stdin-1", {{"action", "accept"}, {"content", {{"line", "bob"}}}}}}}}));
  ASSERT_TRUE(Eventually([&] { return Get(id)["result"]["status"] == "completed"; }));
  EXPECT_EQ(Get(id)["result"]["result"]["structuredContent"]["stdout"], "bob");

  // A declined form is EOF.
  created =
      Handle(Modern(3, "tools/call", {{"name", "run_python"}, {"arguments", {{"code", "input()"}}}},
                    true, forms));
  const std::string declined = created["result"]["taskId"];
  ASSERT_TRUE(Eventually([&] { return Get(declined)["result"]["status"] == "input_required"; }));
  Handle(
      Modern(4, "tasks/update",
             {{"taskId", declined}, {"inputResponses", {{"stdin-1", {{"action", "decline"}}}}}}));
  ASSERT_TRUE(Eventually([&] { return Get(declined)["result"]["status"] == "completed"; }));
  EXPECT_EQ(Get(declined)["result"]["result"]["structuredContent"]["stdout"], "EOF");
}

TEST_F(DispatcherTasksTest, StdinIsNotAskedOfClientsThatCannotAnswer) {
  service_.SetBehaviour(AskOnce());
  // No elicitation capability, or only URL mode: the run reads EOF without asking.
  for (const json& capabilities :
       {json::object(), json{{"elicitation", {{"url", json::object()}}}}}) {
    json created =
        Handle(Modern(1, "tools/call", {{"name", "run_python"}, {"arguments", {{"code", "x"}}}},
                      true, capabilities));
    const std::string id = created["result"]["taskId"];
    ASSERT_TRUE(Eventually([&] { return Get(id)["result"]["status"] == "completed"; }));
    EXPECT_EQ(Get(id)["result"]["result"]["structuredContent"]["stdout"], "not asked");
  }
  // Outside a task (the call answers in its request) nothing waits for a client either.
  json inline_call =
      Handle(Modern(2, "tools/call", {{"name", "run_python"}, {"arguments", {{"code", "x"}}}},
                    false, {{"elicitation", json::object()}}));
  EXPECT_EQ(inline_call["result"]["structuredContent"]["stdout"], "not asked");
}

TEST_F(DispatcherTasksTest, DiscoverAnnouncesTheExtensionAndToolsListTheirTaskSupport) {
  json discover = Handle(Modern(1, "server/discover", json::object()));
  EXPECT_TRUE(
      discover["result"]["capabilities"]["extensions"].contains("io.modelcontextprotocol/tasks"));
  json tools = Handle(Modern(2, "tools/list", json::object()))["result"]["tools"];
  std::map<std::string, json> by_name;
  for (const auto& t : tools) by_name[t["name"]] = t;
  EXPECT_EQ(by_name["run_python"]["execution"]["taskSupport"], "optional");
  EXPECT_EQ(by_name["failing_job"]["execution"]["taskSupport"], "required");
  EXPECT_FALSE(by_name["greet"].contains("execution"));
}

}  // namespace
}  // namespace sandbox::mcp
