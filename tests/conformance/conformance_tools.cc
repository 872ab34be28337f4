#include "conformance/conformance_tools.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <optional>
#include <thread>

#include "sandbox/core/base64.h"
#include "sandbox/mcp/task_store.h"

namespace sandbox::mcp::testing {
namespace {

using json = nlohmann::json;

// A 1x1 PNG.
constexpr std::string_view kPng =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg"
    "==";

// A WAV file: 8 kHz, mono, 16-bit, four silent samples.
std::string TinyWav() {
  std::string wav;
  auto u32 = [&](std::uint32_t v) {
    for (int i = 0; i < 4; ++i) wav.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
  };
  auto u16 = [&](std::uint16_t v) {
    wav.push_back(static_cast<char>(v & 0xFF));
    wav.push_back(static_cast<char>(v >> 8));
  };
  const std::uint32_t data_bytes = 8;
  wav += "RIFF";
  u32(36 + data_bytes);
  wav += "WAVEfmt ";
  u32(16);
  u16(1);
  u16(1);
  u32(8000);
  u32(16000);
  u16(2);
  u16(16);
  wav += "data";
  u32(data_bytes);
  wav.append(data_bytes, '\0');
  return wav;
}

json Text(std::string text) { return {{"type", "text"}, {"text", std::move(text)}}; }

class FixtureTool final : public Tool {
 public:
  using Body = std::function<json(ToolContext&)>;
  FixtureTool(std::string name, std::string description, Body body,
              json input_schema = {{"type", "object"}, {"properties", json::object()}},
              json required = json::object())
      : name_(std::move(name)),
        description_(std::move(description)),
        body_(std::move(body)),
        input_schema_(std::move(input_schema)),
        required_(std::move(required)) {}
  std::string name() const override { return name_; }
  json Definition() const override {
    return {{"name", name_}, {"description", description_}, {"inputSchema", input_schema_}};
  }
  Result<json> Call(const json& /*arguments*/, ToolContext& context) override {
    return body_(context);
  }
  json RequiredClientCapabilities() const override { return required_; }

 private:
  std::string name_;
  std::string description_;
  Body body_;
  json input_schema_;
  json required_;
};

void Sleep50ms() { std::this_thread::sleep_for(std::chrono::milliseconds(50)); }

// ---- multi round-trip (2026-07-28 InputRequiredResult) ----

json Elicit(std::string message, json properties, json required) {
  return {{"method", "elicitation/create"},
          {"params",
           {{"message", std::move(message)},
            {"requestedSchema",
             {{"type", "object"},
              {"properties", std::move(properties)},
              {"required", std::move(required)}}}}}};
}

json Sample(std::string text, int max_tokens) {
  return {{"method", "sampling/createMessage"},
          {"params",
           {{"messages", {{{"role", "user"}, {"content", {{"type", "text"}, {"text", text}}}}}},
            {"maxTokens", max_tokens}}}};
}

json ListRoots() { return {{"method", "roots/list"}, {"params", json::object()}}; }

json InputRequired(json requests, const std::string& state = "") {
  json result = {{"resultType", "input_required"}, {"inputRequests", std::move(requests)}};
  if (!state.empty()) result["requestState"] = state;
  return result;
}

// The client's answer for `key`, or nullptr.
const json* Answer(const ToolContext& ctx, const std::string& key) {
  auto it = ctx.input_responses.find(key);
  return it == ctx.input_responses.end() || !it->is_object() ? nullptr : &*it;
}

// The accepted elicitation's field, or "".
std::string Field(const json* answer, const std::string& field) {
  if (answer == nullptr || answer->value("action", "") != "accept") return "";
  auto content = answer->find("content");
  if (content == answer->end() || !content->is_object()) return "";
  auto value = content->find(field);
  if (value == content->end()) return "";
  return value->is_string() ? value->get<std::string>() : value->dump();
}

json AskName() { return Elicit("What is your name?", {{"name", {{"type", "string"}}}}, {"name"}); }

json Confirm(std::string message) {
  return Elicit(std::move(message), {{"ok", {{"type", "boolean"}}}}, {"ok"});
}

// A fixture of the tasks extension's scenarios: how it may run (task support), what it must
// answer before a task exists (Prepare), and its body.
class TaskFixture final : public Tool {
 public:
  using Body = std::function<Result<json>(const json&, ToolContext&)>;
  using Early = std::function<std::optional<json>(const json&, ToolContext&)>;
  TaskFixture(std::string name, std::string description, TaskSupport support, json schema,
              Body body, Early early = nullptr)
      : name_(std::move(name)),
        description_(std::move(description)),
        support_(support),
        schema_(std::move(schema)),
        body_(std::move(body)),
        early_(std::move(early)) {}
  std::string name() const override { return name_; }
  json Definition() const override {
    return {{"name", name_}, {"description", description_}, {"inputSchema", schema_}};
  }
  TaskSupport task_support() const override { return support_; }
  Result<std::optional<json>> Prepare(const json& arguments, ToolContext& context) override {
    if (!early_) return std::optional<json>();
    return early_(arguments, context);
  }
  Result<json> Call(const json& arguments, ToolContext& context) override {
    if (early_) {
      if (auto answer = early_(arguments, context)) return *answer;
    }
    return body_(arguments, context);
  }

 private:
  std::string name_;
  std::string description_;
  TaskSupport support_;
  json schema_;
  Body body_;
  Early early_;
};

// Sleeps up to `seconds`, in short steps so a cancel ends it at once.
void SleepUnlessCancelled(double seconds, const exec::CancelToken& cancel) {
  const auto until = std::chrono::steady_clock::now() +
                     std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1000));
  while (!cancel.IsCancelled() && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

json Schema(json properties, json required = json::array()) {
  return {
      {"type", "object"}, {"properties", std::move(properties)}, {"required", std::move(required)}};
}

class FixtureResources final : public ResourceProvider {
 public:
  Result<ResourcePage> List(const std::string& /*principal*/, const std::string& cursor) override {
    if (!cursor.empty()) return Error(ErrorCode::kInvalidArgument, "cursor: unknown cursor");
    ResourcePage page;
    page.resources = {{{"uri", kText},
                       {"name", "static-text"},
                       {"description", "Conformance fixture: a static text resource"},
                       {"mimeType", "text/plain"}},
                      {{"uri", kBinary},
                       {"name", "static-binary"},
                       {"description", "Conformance fixture: a static binary resource (PNG)"},
                       {"mimeType", "image/png"}}};
    return page;
  }
  std::vector<json> Templates() const override {
    return {{{"uriTemplate", "test://template/{id}/data"},
             {"name", "template-data"},
             {"description", "Conformance fixture: data for an id"},
             {"mimeType", "application/json"}}};
  }
  bool Owns(std::string_view uri) const override { return uri.starts_with("test://"); }
  Result<json> Read(const std::string& /*principal*/, const std::string& uri) override {
    if (uri == kText) {
      return json::array({{{"uri", uri},
                           {"mimeType", "text/plain"},
                           {"text", "This is the content of the static text resource."}}});
    }
    if (uri == kBinary) {
      return json::array({{{"uri", uri}, {"mimeType", "image/png"}, {"blob", kPng}}});
    }
    constexpr std::string_view kPrefix = "test://template/";
    constexpr std::string_view kSuffix = "/data";
    std::string_view rest = uri;
    if (rest.starts_with(kPrefix) && rest.ends_with(kSuffix) &&
        rest.size() > kPrefix.size() + kSuffix.size()) {
      rest.remove_prefix(kPrefix.size());
      rest.remove_suffix(kSuffix.size());
      if (rest.find('/') == std::string_view::npos) {
        const std::string id(rest);
        json data = {{"id", id}, {"templateTest", true}, {"data", "Data for ID: " + id}};
        return json::array(
            {{{"uri", uri}, {"mimeType", "application/json"}, {"text", data.dump()}}});
      }
    }
    return Error(ErrorCode::kNotFound, "no fixture resource has this URI");
  }

 private:
  static constexpr const char* kText = "test://static-text";
  static constexpr const char* kBinary = "test://static-binary";
};

}  // namespace

std::vector<std::unique_ptr<Tool>> MakeConformanceTools() {
  std::vector<std::unique_ptr<Tool>> tools;
  const json no_arguments = {{"type", "object"}, {"properties", json::object()}};
  auto add = [&](std::string name, std::string description, FixtureTool::Body body,
                 json schema = {{"type", "object"}, {"properties", json::object()}},
                 json required = json::object()) {
    tools.push_back(std::make_unique<FixtureTool>(std::move(name), std::move(description),
                                                  std::move(body), std::move(schema),
                                                  std::move(required)));
  };
  add("test_simple_text", "Conformance fixture: returns simple text", [](ToolContext&) {
    return json{{"content", {Text("This is a simple text response for testing.")}}};
  });
  add("test_image_content", "Conformance fixture: returns an image", [](ToolContext&) {
    return json{{"content", {{{"type", "image"}, {"data", kPng}, {"mimeType", "image/png"}}}}};
  });
  add("test_audio_content", "Conformance fixture: returns audio", [](ToolContext&) {
    return json{
        {"content",
         {{{"type", "audio"}, {"data", Base64Encode(TinyWav())}, {"mimeType", "audio/wav"}}}}};
  });
  add("test_embedded_resource", "Conformance fixture: returns an embedded resource",
      [](ToolContext&) {
        return json{{"content",
                     {{{"type", "resource"},
                       {"resource",
                        {{"uri", "test://embedded-resource"},
                         {"mimeType", "text/plain"},
                         {"text", "This is an embedded resource content."}}}}}}};
      });
  add("test_multiple_content_types", "Conformance fixture: returns text, image and resource",
      [](ToolContext&) {
        return json{{"content",
                     {Text("Multiple content types test:"),
                      {{"type", "image"}, {"data", kPng}, {"mimeType", "image/png"}},
                      {{"type", "resource"},
                       {"resource",
                        {{"uri", "test://mixed-content-resource"},
                         {"mimeType", "application/json"},
                         {"text", R"({"test":"data","value":123})"}}}}}}};
      });
  add("test_tool_with_logging", "Conformance fixture: sends three log messages",
      [](ToolContext& ctx) {
        ctx.notifier.Log(LogLevel::kInfo, "conformance", "Tool execution started");
        Sleep50ms();
        ctx.notifier.Log(LogLevel::kInfo, "conformance", "Tool processing data");
        Sleep50ms();
        ctx.notifier.Log(LogLevel::kInfo, "conformance", "Tool execution completed");
        return json{{"content", {Text("Tool with logging executed successfully")}}};
      });
  add("test_tool_with_progress", "Conformance fixture: reports progress 0, 50, 100 of 100",
      [](ToolContext& ctx) {
        ctx.notifier.ProgressValue(0, 100, "");
        Sleep50ms();
        ctx.notifier.ProgressValue(50, 100, "");
        Sleep50ms();
        ctx.notifier.ProgressValue(100, 100, "");
        return json{{"content", {Text("Tool with progress executed successfully")}}};
      });
  // 2026-07-28 fixtures (server-stateless): a tool that needs sampling, refused with -32021
  // unless the request declares it; logs that leave only when the request names a level; a
  // streamed answer that carries no request of the server's own.
  add(
      "test_missing_capability", "Conformance fixture: requires the sampling capability",
      [](ToolContext&) {
        return json{{"content", {Text("sampling was declared")}}};
      },
      no_arguments, json{{"sampling", json::object()}});
  add("test_logging_tool", "Conformance fixture: logs at info, only when the request asks",
      [](ToolContext& ctx) {
        ctx.notifier.Log(LogLevel::kInfo, "conformance", "logging tool started");
        Sleep50ms();
        ctx.notifier.Log(LogLevel::kInfo, "conformance", "logging tool finished");
        return json{{"content", {Text("Logging tool executed")}}};
      });
  add("test_streaming_elicitation",
      "Conformance fixture: a streamed answer with progress and no server requests",
      [](ToolContext& ctx) {
        ctx.notifier.ProgressValue(0, 1, "started");
        Sleep50ms();
        ctx.notifier.ProgressValue(1, 1, "done");
        return json{{"content", {Text("Streaming tool executed")}}};
      });
  add("test_input_required_result_elicitation",
      "Conformance fixture: asks the client for a name (elicitation), then greets",
      [](ToolContext& ctx) {
        const json* answer = Answer(ctx, "user_name");
        if (answer == nullptr) return InputRequired({{"user_name", AskName()}});
        return json{{"content", {Text("Hello, " + Field(answer, "name") + "!")}}};
      });
  add("test_input_required_result_sampling",
      "Conformance fixture: asks the client's model a question (sampling)", [](ToolContext& ctx) {
        const json* answer = Answer(ctx, "capital_question");
        if (answer == nullptr) {
          return InputRequired(
              {{"capital_question", Sample("What is the capital of France?", 100)}});
        }
        std::string text = answer->contains("content") && (*answer)["content"].is_object()
                               ? (*answer)["content"].value("text", "")
                               : "";
        return json{{"content", {Text("The model said: " + text)}}};
      });
  add("test_input_required_result_list_roots", "Conformance fixture: asks for the client's roots",
      [](ToolContext& ctx) {
        const json* answer = Answer(ctx, "client_roots");
        if (answer == nullptr) return InputRequired({{"client_roots", ListRoots()}});
        std::string uris;
        if (answer->contains("roots") && (*answer)["roots"].is_array()) {
          for (const auto& root : (*answer)["roots"]) {
            if (root.is_object()) uris += (uris.empty() ? "" : ", ") + root.value("uri", "");
          }
        }
        return json{{"content", {Text("Roots: " + uris)}}};
      });
  add("test_input_required_result_request_state",
      "Conformance fixture: round-trips a requestState and checks it", [](ToolContext& ctx) {
        if (Answer(ctx, "confirm") == nullptr || ctx.request_state != "confirm-round") {
          return InputRequired({{"confirm", Confirm("Please confirm")}}, "confirm-round");
        }
        return json{{"content", {Text("state-ok: the requestState came back intact")}}};
      });
  add("test_input_required_result_multiple_inputs",
      "Conformance fixture: asks for a name, a greeting and the roots at once",
      [](ToolContext& ctx) {
        json wanted = {{"user_name", AskName()},
                       {"greeting", Sample("Generate a greeting", 50)},
                       {"client_roots", ListRoots()}};
        json missing = json::object();
        for (const auto& [key, request] : wanted.items()) {
          if (Answer(ctx, key) == nullptr) missing[key] = request;
        }
        if (!missing.empty() || ctx.request_state != "multiple-inputs") {
          return InputRequired(missing.empty() ? wanted : missing, "multiple-inputs");
        }
        return json{{"content", {Text("All three answers arrived")}}};
      });
  add("test_input_required_result_multi_round",
      "Conformance fixture: two rounds of questions, the state changing between them",
      [](ToolContext& ctx) {
        if (ctx.request_state == "round-1" && Answer(ctx, "step1") != nullptr) {
          return InputRequired({{"step2", Elicit("Step 2: What is your favorite color?",
                                                 {{"color", {{"type", "string"}}}}, {"color"})}},
                               "round-2:" + Field(Answer(ctx, "step1"), "name"));
        }
        if (ctx.request_state.starts_with("round-2:") && Answer(ctx, "step2") != nullptr) {
          return json{{"content",
                       {Text(ctx.request_state.substr(8) + " likes " +
                             Field(Answer(ctx, "step2"), "color"))}}};
        }
        return InputRequired({{"step1", Elicit("Step 1: What is your name?",
                                               {{"name", {{"type", "string"}}}}, {"name"})}},
                             "round-1");
      });
  add("test_input_required_result_tampered_state",
      "Conformance fixture: a sealed requestState; an altered one is refused",
      [](ToolContext& ctx) {
        if (ctx.request_state != "tamper-check" || Answer(ctx, "confirm") == nullptr) {
          return InputRequired({{"confirm", Confirm("Confirm to continue")}}, "tamper-check");
        }
        return json{{"content", {Text("state verified")}}};
      });
  add("test_input_required_result_capabilities",
      "Conformance fixture: asks only for what the request's capabilities allow",
      [](ToolContext& ctx) {
        json requests = json::object();
        if (ctx.meta != nullptr && ctx.meta->HasCapability("elicitation")) {
          requests["user_name"] = AskName();
        }
        if (ctx.meta != nullptr && ctx.meta->HasCapability("sampling")) {
          requests["greeting"] = Sample("Generate a greeting", 50);
        }
        if (ctx.meta != nullptr && ctx.meta->HasCapability("roots")) {
          requests["client_roots"] = ListRoots();
        }
        if (requests.empty() || !ctx.input_responses.empty()) {
          return json{{"content", {Text("Nothing more to ask")}}};
        }
        return InputRequired(std::move(requests));
      });
  // The tasks extension's fixtures (tasks-* scenarios).
  auto add_task = [&](std::string name, std::string description, TaskSupport support, json schema,
                      TaskFixture::Body body, TaskFixture::Early early = nullptr) {
    tools.push_back(std::make_unique<TaskFixture>(std::move(name), std::move(description), support,
                                                  std::move(schema), std::move(body),
                                                  std::move(early)));
  };
  add_task("greet", "Conformance fixture (tasks): answers at once, never as a task",
           TaskSupport::kForbidden, Schema({{"name", {{"type", "string"}}}}),
           [](const json& args, ToolContext&) -> Result<json> {
             std::string name = args.contains("name") && args["name"].is_string()
                                    ? args["name"].get<std::string>()
                                    : "world";
             return json{{"content", {Text("Hello, " + name + "!")}}};
           });
  add_task(
      "slow_compute", "Conformance fixture (tasks): sleeps `seconds`, then answers",
      TaskSupport::kOptional, Schema({{"seconds", {{"type", "number"}}}}),
      [](const json& args, ToolContext& ctx) -> Result<json> {
        double seconds = args.contains("seconds") && args["seconds"].is_number()
                             ? args["seconds"].get<double>()
                             : 1.0;
        SleepUnlessCancelled(std::min(seconds, 600.0), ctx.cancel);
        return json{{"content",
                     {Text("Computed after " + args.value("seconds", json(1.0)).dump() + " s")}}};
      });
  add_task(
      "failing_job", "Conformance fixture (tasks): a task whose tool fails after ~1 s",
      TaskSupport::kRequired, Schema(json::object()),
      [](const json&, ToolContext& ctx) -> Result<json> {
        SleepUnlessCancelled(1.0, ctx.cancel);
        return json{{"isError", true}, {"content", {Text("the job failed, as it always does")}}};
      });
  add_task("protocol_error_job",
           "Conformance fixture (tasks): a task that ends in a protocol error",
           TaskSupport::kOptional, Schema(json::object()),
           [](const json&, ToolContext&) -> Result<json> {
             return Error(ErrorCode::kInternal, "protocol_error_job failed on purpose");
           });
  add_task(
      "confirm_delete", "Conformance fixture (tasks): asks the client to confirm, then answers",
      TaskSupport::kOptional, Schema({{"filename", {{"type", "string"}}}}),
      [](const json& args, ToolContext& ctx) -> Result<json> {
        const std::string file = args.value("filename", "the file");
        if (ctx.task == nullptr)
          return json{{"isError", true}, {"content", {Text("confirm_delete runs as a task")}}};
        json answers = ctx.task->AwaitInput(
            {{"confirm",
              Elicit("Delete " + file + "?", {{"confirm", {{"type", "boolean"}}}}, {"confirm"})}},
            std::chrono::minutes(5));
        const json* answer = answers.contains("confirm") ? &answers["confirm"] : nullptr;
        const bool yes = answer != nullptr && answer->value("action", "") == "accept";
        return json{{"content", {Text(yes ? "Deleted " + file : "Kept " + file)}}};
      });
  add_task("multi_input", "Conformance fixture (tasks): asks two questions at once",
           TaskSupport::kOptional, Schema(json::object()),
           [](const json&, ToolContext& ctx) -> Result<json> {
             if (ctx.task == nullptr)
               return json{{"isError", true}, {"content", {Text("multi_input runs as a task")}}};
             json answers = ctx.task->AwaitInput(
                 {{"first", Elicit("First?", {{"value", {{"type", "string"}}}}, {"value"})},
                  {"second", Elicit("Second?", {{"value", {{"type", "string"}}}}, {"value"})}},
                 std::chrono::minutes(5));
             return json{{"content", {Text(std::to_string(answers.size()) + " answers")}}};
           });
  add_task(
      "test_tool_with_task",
      "Conformance fixture (tasks): asks a name by multi round-trip, then runs as a task",
      TaskSupport::kRequired, Schema(json::object()),
      [](const json&, ToolContext& ctx) -> Result<json> {
        return json{
            {"content",
             {Text("Hello, " + Field(Answer(ctx, "user_name"), "name") + ", from a task")}}};
      },
      [](const json&, ToolContext& ctx) -> std::optional<json> {
        if (Answer(ctx, "user_name") == nullptr) return InputRequired({{"user_name", AskName()}});
        return std::nullopt;
      });
  add("test_error_handling", "Conformance fixture: always fails", [](ToolContext&) {
    return json{{"isError", true},
                {"content", {Text("This tool intentionally returns an error for testing")}}};
  });
  add(
      "json_schema_2020_12_tool", "Tool with JSON Schema 2020-12 features",
      [](ToolContext&) {
        return json{{"content", {Text("JSON Schema 2020-12 tool executed")}}};
      },
      // The suite's schema (SEP-1613 and SEP-2106): every keyword must survive tools/list.
      json::parse(R"J({"$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {"address": {"$anchor": "addressDef", "type": "object",
                              "properties": {"street": {"type": "string"},
                                             "city": {"type": "string"}}}},
        "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"},
                       "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                       "phone": {"type": "string"}, "email": {"type": "string"}},
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {"properties": {"contactMethod": {"const": "phone"}},
               "required": ["contactMethod"]},
        "then": {"required": ["phone"]},
        "else": {"required": ["email"]},
        "additionalProperties": false})J"));
  return tools;
}

std::unique_ptr<ResourceProvider> MakeConformanceResources() {
  return std::make_unique<FixtureResources>();
}

}  // namespace sandbox::mcp::testing
