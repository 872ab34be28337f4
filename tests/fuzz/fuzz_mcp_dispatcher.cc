// JSON-RPC / MCP message handling end to end through mcp::Dispatcher (the layer every transport
// hands its messages to), with the server's tool and resource set over the fake execution and
// session services of the unit tests. Each input is one client conversation: the first byte
// picks the protocol version of the initialize the target sends first; the rest is
// newline-delimited messages (as on stdio), each handed to HandleText, so single messages,
// batches (2025-03-26) and malformed text are all reached.
// Properties (besides: nothing throws out of the dispatcher, nothing crashes):
//   - every answer is a well-formed JSON-RPC response: "jsonrpc": "2.0", an id that is a
//     string, a number or null, exactly one of result and error, an error with an integer code
//     and a non-empty message; what goes out on the Outbound is a notification;
//   - a valid request gets exactly one answer, carrying its id unchanged; a valid notification
//     or client response gets none; text that is not JSON gets -32700 with a null id;
//   - a batch gets an array of at most as many answers as it has members, or one error;
//   - every answer serializes to valid UTF-8 JSON;
//   - 2026-07-28: every result carries a string resultType.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "fuzz/fuzz_check.h"
#include "fuzz/fuzz_dispatcher.h"
#include "sandbox/core/json.h"
#include "sandbox/core/utf8.h"
#include "sandbox/jsonrpc/json_rpc.h"
#include "sandbox/mcp/protocol_version.h"

namespace {

using nlohmann::json;
namespace jsonrpc = sandbox::jsonrpc;
namespace mcp = sandbox::mcp;

bool IsId(const json& id) { return id.is_string() || id.is_number(); }

void CheckResponse(const json& r) {
  FUZZ_CHECK(r.is_object(), "a response is an object");
  FUZZ_CHECK(r.value("jsonrpc", json()) == "2.0", "jsonrpc 2.0");
  FUZZ_CHECK(r.contains("id") && (IsId(r["id"]) || r["id"].is_null()), "an id or null");
  FUZZ_CHECK(r.contains("result") != r.contains("error"), "exactly one of result and error");
  if (r.contains("error")) {
    const json& e = r["error"];
    FUZZ_CHECK(e.is_object() && e.contains("code") && e["code"].is_number_integer(), "code");
    FUZZ_CHECK(e.contains("message") && e["message"].is_string() &&
                   !e["message"].get<std::string>().empty(),
               "an error says what was wrong");
  }
  const std::string text = jsonrpc::DumpJson(r);
  FUZZ_CHECK(sandbox::IsValidUtf8(text), "serializes to valid UTF-8");
}

// What ParseMessage would make of a member, judged independently: a valid request (its id in
// `id`), a valid notification or response (no answer), or something else (an error answer).
enum class Kind { kRequest, kSilent, kInvalid };
Kind Classify(const json& m, json& id) {
  if (!m.is_object() || m.value("jsonrpc", json()) != "2.0") return Kind::kInvalid;
  const bool has_id = m.contains("id");
  if (has_id && !IsId(m["id"])) return Kind::kInvalid;
  auto method = m.find("method");
  if (method == m.end()) {
    return has_id && (m.contains("result") != m.contains("error")) ? Kind::kSilent : Kind::kInvalid;
  }
  if (!method->is_string()) return Kind::kInvalid;
  if (auto p = m.find("params"); p != m.end() && !p->is_object() && !p->is_array()) {
    return Kind::kInvalid;
  }
  if (!has_id) return Kind::kSilent;
  id = m["id"];
  return Kind::kRequest;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const auto versions = mcp::SupportedProtocolVersions();
  const bool modern = data[0] % (versions.size() + 1) == versions.size();
  const std::string version(versions[data[0] % versions.size()]);
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): libFuzzer hands bytes
  std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);

  sandbox::testing::FakeService service;
  sandbox::testing::FakeSessionService sessions;
  mcp::TaskStore tasks(mcp::TaskOptions{}, mcp::testing::NullLogger());
  mcp::Dispatcher dispatcher = sandbox::fuzz::MakeFuzzDispatcher(service, sessions, &tasks);
  mcp::Session session("fuzz");
  mcp::testing::RecordingOutbound out;
  if (modern) {
    while (!rest.empty()) {
      const std::size_t newline = rest.find('\n');
      const std::string_view line = rest.substr(0, newline);
      rest.remove_prefix(newline == std::string_view::npos ? rest.size() : newline + 1);
      auto parsed = sandbox::ParseJson(line);
      if (!parsed.ok()) continue;  // the transports answer unparseable text themselves
      auto answer = dispatcher.HandleModern(session, *parsed, out);
      json id;
      switch (Classify(*parsed, id)) {
        case Kind::kRequest:
          FUZZ_CHECK(answer.has_value(), "a request is answered");
          CheckResponse(*answer);
          FUZZ_CHECK((*answer)["id"] == id, "the answer carries the request's id");
          if (answer->contains("result")) {
            FUZZ_CHECK((*answer)["result"].value("resultType", json()).is_string(),
                       "2026-07-28 results carry resultType");
          }
          break;
        case Kind::kSilent:
          FUZZ_CHECK(!answer.has_value(), "notifications and responses get no answer");
          break;
        case Kind::kInvalid:
          FUZZ_CHECK(answer.has_value() && answer->contains("error"),
                     "an invalid message gets an error");
          CheckResponse(*answer);
          break;
      }
    }
    tasks.Shutdown();  // before the tools the task runs use go away
    return 0;
  }
  auto init = dispatcher.Handle(session, mcp::testing::InitializeRequest(version), out);
  FUZZ_CHECK(init && init->contains("result"), "initialize succeeds");

  while (!rest.empty()) {
    const std::size_t newline = rest.find('\n');
    const std::string_view line = rest.substr(0, newline);
    rest.remove_prefix(newline == std::string_view::npos ? rest.size() : newline + 1);

    auto answer = dispatcher.HandleText(session, line, out);
    auto parsed = sandbox::ParseJson(line);
    if (!parsed.ok()) {
      FUZZ_CHECK(answer && (*answer)["error"]["code"] == jsonrpc::rpc_code::kParseError &&
                     (*answer)["id"].is_null(),
                 "unparseable text gets -32700 with a null id");
      CheckResponse(*answer);
      continue;
    }
    if (parsed->is_array()) {
      if (!answer) continue;  // only notifications and responses
      if (answer->is_object()) {
        CheckResponse(*answer);  // the batch refused as a whole
        continue;
      }
      FUZZ_CHECK(answer->is_array() && !answer->empty(), "an array of answers");
      FUZZ_CHECK(answer->size() <= parsed->size(), "no more answers than members");
      std::size_t requests = 0;
      for (const auto& member : *parsed) {
        json id;
        if (Classify(member, id) == Kind::kRequest) ++requests;
      }
      FUZZ_CHECK(answer->size() >= requests, "every request of a batch is answered");
      for (const auto& r : *answer) CheckResponse(r);
      continue;
    }
    json id;
    switch (Classify(*parsed, id)) {
      case Kind::kRequest:
        FUZZ_CHECK(answer.has_value(), "a request is answered");
        CheckResponse(*answer);
        FUZZ_CHECK((*answer)["id"] == id, "the answer carries the request's id");
        break;
      case Kind::kSilent:
        FUZZ_CHECK(!answer.has_value(), "notifications and responses get no answer");
        break;
      case Kind::kInvalid:
        FUZZ_CHECK(answer.has_value(), "an invalid message gets an error");
        CheckResponse(*answer);
        FUZZ_CHECK(answer->contains("error"), "an error");
        break;
    }
  }
  tasks.Shutdown();
  for (const auto& n : out.messages()) {
    FUZZ_CHECK(n.is_object() && n.value("jsonrpc", json()) == "2.0" && n.contains("method") &&
                   !n.contains("id"),
               "the outbound carries notifications only");
  }
  return 0;
}
