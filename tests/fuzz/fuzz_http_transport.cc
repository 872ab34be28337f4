// The MCP HTTP transports as the server wires them (transport/, on http/): Streamable HTTP at /mcp
// and legacy HTTP+SSE at /sse and /messages behind the RequestGuard (two bearer tokens, so sessions
// of one principal are probed with the other's), over the dispatcher with the fake services. No
// socket: each request's bytes go through httplib's request parsing, the guard and the handlers in
// memory (http_harness.h), SSE responses included; a GET /sse stream stays open on a thread of
// its own while later requests post to its session, and is closed (as a client leaving) at
// the end.
// Each input is a sequence of requests, each built from fuzzer choices: method, path, which of
// Accept, Content-Type, Mcp-Session-Id (the live session's id or fuzzed bytes),
// MCP-Protocol-Version, Origin, Host and Authorization are sent with good or fuzzed values, and
// the body (fuzzed bytes, or an initialize). Some requests are raw fuzzed bytes instead. Others
// speak protocol 2026-07-28 (MakeModernPost): MCP-Protocol-Version, Mcp-Method and Mcp-Name
// exact, padded, base64-wrapped (=?base64?...?=), absent or fuzzed, and a body built from
// choices (method, name, id, _meta good or broken) or fuzzed.
// Properties (besides: no crash, no exception escaping a handler):
//   - every answer is well-formed HTTP; no 500;
//   - every refusal (4xx, 503) of a route of these transports, or of the guard, carries a
//     JSON-RPC error body with a non-empty message; 202 has an empty body;
//   - a successful initialize returns an Mcp-Session-Id of 64 lower-case hex digits;
//   - a JSON answer is a JSON-RPC response (or array of them); an SSE answer is a sequence of
//     `message` events, each a JSON-RPC message, ending with the response;
//   - a session is never reachable with the other principal's token, and not after DELETE;
//   - a legacy stream begins with its endpoint event, and carries only `message` events then;
//   - 2026-07-28: no Mcp-Session-Id is minted; -32020 only when a header disagrees with the
//     body, and a missing Mcp-Method is always -32020 with 400; every answer to a request
//     echoes its id, and every result says its resultType.
#include <fuzzer/FuzzedDataProvider.h>
#include <httplib.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "fuzz/fuzz_check.h"
#include "fuzz/fuzz_dispatcher.h"
#include "fuzz/http_harness.h"
#include "sandbox/core/base64.h"
#include "sandbox/core/json.h"
#include "sandbox/http/request_guard.h"
#include "sandbox/http/server_setup.h"
#include "sandbox/jsonrpc/json_rpc.h"
#include "sandbox/transport/legacy_sse_transport.h"
#include "sandbox/transport/streamable_http_transport.h"

namespace {

using nlohmann::json;
using sandbox::fuzz::BuildRequest;
using sandbox::fuzz::HeaderLine;
using sandbox::fuzz::HttpAnswer;
using sandbox::fuzz::InMemoryServer;
using sandbox::fuzz::MemoryStream;
namespace mcp = sandbox::mcp;
namespace http = sandbox::http;
namespace jsonrpc = sandbox::jsonrpc;
namespace transport = sandbox::transport;

constexpr const char* kTokens[] = {"token-alice", "token-bob"};
constexpr const char* kVersions[] = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};

bool IsLowerHex(const std::string& s) {
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return !s.empty();
}

void CheckRpcMessage(const json& m) {
  FUZZ_CHECK(m.is_object() && m.value("jsonrpc", json()) == "2.0", "a JSON-RPC message");
  if (m.contains("method")) return;  // a notification
  FUZZ_CHECK(m.contains("result") != m.contains("error"), "one of result and error");
  if (m.contains("error")) {
    FUZZ_CHECK(m["error"].is_object() && m["error"].value("message", std::string()) != "",
               "an error says what was wrong");
  }
}

void CheckRpcBody(const std::string& body) {
  auto parsed = sandbox::ParseJson(body);
  FUZZ_CHECK(parsed.ok(), "a JSON body");
  if (parsed->is_array()) {
    for (const auto& m : *parsed) CheckRpcMessage(m);
  } else {
    CheckRpcMessage(*parsed);
  }
}

void CheckRefusal(const HttpAnswer& a) {
  FUZZ_CHECK(a.Header("content-type") == "application/json", "a refusal is JSON");
  auto parsed = sandbox::ParseJson(a.body);
  FUZZ_CHECK(parsed.ok() && parsed->is_object() && parsed->contains("error"),
             "a refusal carries a JSON-RPC error");
  FUZZ_CHECK((*parsed)["error"].value("message", std::string()) != "", "and says why");
}

// ---- protocol 2026-07-28 ----

constexpr const char* kModern = "2026-07-28";
constexpr const char* kModernMethods[] = {"server/discover",
                                          "tools/list",
                                          "tools/call",
                                          "tools/call",
                                          "resources/list",
                                          "resources/read",
                                          "resources/templates/list",
                                          "tasks/get",
                                          "initialize",
                                          "ping",
                                          "notifications/cancelled",
                                          "prompts/get"};
constexpr const char* kToolNames[] = {"run_python", "sandbox_info", "session_list",
                                      "session_create", "no_such_tool"};

// A 2026-07-28 request as one step sends it: the headers MCP-Protocol-Version, Mcp-Method and
// Mcp-Name (each exact, padded or base64-wrapped, absent, or fuzzed bytes, also inside the
// =?base64?...?= wrapper) and a body built from choices (method, name, id, _meta good or
// broken in one way) or fuzzed bytes.
struct ModernPost {
  std::string headers;
  std::string body;
  json id;                             // the request's id (null: none, or a fuzzed body)
  bool built = false;                  // the body is a message built here, not fuzzed bytes
  bool version_header_modern = false;  // MCP-Protocol-Version names 2026-07-28 (maybe padded)
  bool headers_agree = false;          // every header sent says what the body says
  bool method_header_absent = false;
  bool odd_headers = false;  // a header value of fuzzed or unsafe bytes (httplib may refuse it)
};

// Whether `value` travels unchanged as a plain header value (printable ASCII, no space at an
// end): otherwise only its base64 form says the same as the body.
bool HeaderSafe(const std::string& value) {
  if (value.empty() || value.front() == ' ' || value.back() == ' ') return false;
  if (value.starts_with("=?base64?") && value.ends_with("?=")) return false;  // read as wrapped
  for (char c : value) {
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
}

ModernPost MakeModernPost(FuzzedDataProvider& fdp) {
  ModernPost r;
  const auto c = fdp.ConsumeIntegral<std::uint16_t>();
  std::string method;
  std::string name_member;
  std::string name;
  std::optional<std::string> meta_version;
  const bool fuzzed_wrapped = (c & 8192) != 0;
  auto fuzzed_value = [&] {
    std::string v = fdp.ConsumeRandomLengthString(40);
    return fuzzed_wrapped ? "=?base64?" + v + "?=" : v;
  };
  if ((c & 1) == 0) {
    r.built = true;
    method = fdp.PickValueInArray(kModernMethods);
    json message = {{"jsonrpc", "2.0"}, {"method", method}};
    if ((c & 2) == 0) {
      const int n = fdp.ConsumeIntegral<std::uint8_t>();
      r.id = (c & 4) != 0 ? json("r" + std::to_string(n)) : json(n);
      message["id"] = r.id;
    }
    json params = json::object();
    if (method == "tools/call" || method == "prompts/get") {
      name_member = "name";
      const int pick = fdp.ConsumeIntegralInRange(0, 5);
      params["name"] = pick < 5 ? std::string(kToolNames[pick]) : fdp.ConsumeRandomLengthString(20);
      params["arguments"] = {
          {"code", (c & 16384) != 0 ? fdp.ConsumeRandomLengthString(64) : std::string("print(1)")}};
    } else if (method == "resources/read") {
      name_member = "uri";
      params["uri"] = "sandbox://sessions/" + fdp.ConsumeRandomLengthString(40);
    } else if (method == "tasks/get") {
      name_member = "taskId";
      params["taskId"] = fdp.ConsumeRandomLengthString(20);
    } else if (method == "notifications/cancelled") {
      params["requestId"] = 1;
    }
    const int meta_choice = (c >> 3) & 3;
    if (meta_choice != 3) {
      json meta = {{"io.modelcontextprotocol/protocolVersion", kModern}};
      if (meta_choice == 1) meta["io.modelcontextprotocol/protocolVersion"] = fuzzed_value();
      if (meta_choice != 2) {
        json capabilities = json::object();
        if ((c & 64) != 0) {
          capabilities = {{"sampling", json::object()},
                          {"extensions", {{"io.modelcontextprotocol/tasks", json::object()}}}};
        }
        meta["io.modelcontextprotocol/clientCapabilities"] = capabilities;
      }
      if ((c & 32) != 0) meta["io.modelcontextprotocol/logLevel"] = "debug";
      params["_meta"] = meta;
    }
    message["params"] = params;
    r.body = sandbox::jsonrpc::DumpJson(message);
    // What the server reads back (invalid UTF-8 in fuzzed strings is replaced on the way).
    const json sent = json::parse(r.body);
    if (!name_member.empty()) name = sent["params"][name_member].get<std::string>();
    const json& meta = sent["params"].value("_meta", json());
    if (meta.is_object() && meta.contains("io.modelcontextprotocol/protocolVersion")) {
      meta_version = meta["io.modelcontextprotocol/protocolVersion"].get<std::string>();
    }
  }

  const int version_choice = (c >> 7) & 3;
  bool agree = true;
  if (version_choice == 0 || version_choice == 1) {
    r.headers += HeaderLine("MCP-Protocol-Version",
                            version_choice == 0 ? std::string(kModern) : " 2026-07-28\t");
    r.version_header_modern = true;
    agree = !meta_version || *meta_version == kModern;
  } else {
    // Absent, a body of this era still needs it (-32020); fuzzed, it names another version.
    if (version_choice == 3) {
      r.headers += HeaderLine("MCP-Protocol-Version", fdp.ConsumeRandomLengthString(20));
    }
    agree = false;
  }
  // Mcp-Method and Mcp-Name: 0 plain, 1 base64-wrapped, 2 absent, 3 fuzzed.
  auto standard_header = [&](const char* header, int choice, const std::string& value) {
    if (choice == 0) {
      r.headers += HeaderLine(header, value);
      const bool safe = HeaderSafe(value);
      if (!safe) r.odd_headers = true;
      return safe;
    }
    if (choice == 1) {
      r.headers += HeaderLine(header, "=?base64?" + sandbox::Base64Encode(value) + "?=");
      return true;
    }
    if (choice == 3) {
      r.headers += HeaderLine(header, fuzzed_value());
      r.odd_headers = true;
    }
    return false;
  };
  const int method_choice = (c >> 9) & 3;
  r.method_header_absent = method_choice == 2;
  agree = standard_header("Mcp-Method", method_choice, method) && agree;
  const int name_choice = (c >> 11) & 3;
  if (!name_member.empty()) {
    agree = standard_header("Mcp-Name", name_choice, name) && agree;
  } else if (name_choice == 3) {
    r.headers += HeaderLine("Mcp-Name", fuzzed_value());  // ignored: the method names nothing
    r.odd_headers = true;
  }
  r.headers_agree = r.built && agree;
  if (!r.built) r.body = fdp.ConsumeRandomLengthString(1024);
  return r;
}

// The properties of a 2026-07-28 answer. `reaches`: the request passes the guard and the
// transport's Accept, Content-Type and era checks, so its own handling decides the answer.
void CheckModernAnswer(const ModernPost& sent, bool with_session, bool reaches,
                       const HttpAnswer& a) {
  if (sent.version_header_modern && !with_session) {
    FUZZ_CHECK(a.Header("mcp-session-id").empty(), "2026-07-28 mints no transport session");
  }
  std::optional<json> last;  // the JSON-RPC message that answers the request
  if (a.Header("content-type") == "application/json") {
    auto parsed = sandbox::ParseJson(a.body);
    if (parsed.ok() && parsed->is_object()) last = *parsed;
  } else if (a.Header("content-type") == "text/event-stream") {
    auto events = sandbox::fuzz::ParseSse(a.body);
    if (events && !events->empty()) {
      auto parsed = sandbox::ParseJson(events->back().data);
      if (parsed.ok() && parsed->is_object()) last = *parsed;
    }
  }
  const bool mismatch =
      last && last->contains("error") && (*last)["error"].is_object() &&
      (*last)["error"].value("code", 0) == sandbox::jsonrpc::rpc_code::kHeaderMismatch;
  if (mismatch) FUZZ_CHECK(!sent.headers_agree, "-32020 only when a header disagrees");
  if (!reaches || !sent.built) return;
  if (sent.method_header_absent) {
    FUZZ_CHECK(a.status == 400 && mismatch, "Mcp-Method is required: 400, -32020");
  }
  if (!last || sent.id.is_null()) return;
  FUZZ_CHECK((*last)["id"] == sent.id, "every answer echoes the request's id");
  if (last->contains("result") && (*last)["result"].is_object()) {
    FUZZ_CHECK((*last)["result"].value("resultType", json()).is_string(),
               "a 2026-07-28 result says its resultType");
  }
}

// A legacy SSE stream held open on its own thread.
struct LegacyStream {
  std::unique_ptr<MemoryStream> stream;
  std::thread thread;
  std::string session_id;
};

class Conversation {
 public:
  Conversation() {
    http::GuardOptions guard_options;
    guard_options.tokens = {{"alice", kTokens[0]}, {"bob", kTokens[1]}};
    guard_ = std::make_unique<http::RequestGuard>(guard_options);
    http::ConfigureHttpServer(server_, http::HttpServerOptions{}, *guard_);

    transport::HttpTransportOptions http;
    http.principal = guard_->Resolver();
    http.sse.poll = std::chrono::milliseconds(5);
    transport::StreamableHttpOptions streamable;
    streamable.http = http;
    streamable_ = std::make_unique<transport::StreamableHttpTransport>(dispatcher_, streamable,
                                                                       mcp::testing::NullLogger());
    streamable_->Register(server_);
    transport::LegacySseOptions legacy;
    legacy.http = http;
    legacy_ = std::make_unique<transport::LegacySseTransport>(dispatcher_, legacy,
                                                              mcp::testing::NullLogger());
    legacy_->Register(server_);
  }

  ~Conversation() {
    for (auto& s : streams_) {
      s.stream->Close();
      s.thread.join();
      CheckLegacyStream(s.stream->output());
    }
    legacy_->Shutdown();
    streamable_->Shutdown();
  }
  Conversation(const Conversation&) = delete;
  Conversation& operator=(const Conversation&) = delete;

  void Step(FuzzedDataProvider& fdp) {
    if (fdp.ConsumeIntegralInRange(0, 15) == 0) {  // raw bytes through httplib's parser
      // httplib answers nothing when the bytes end before a request line.
      const std::string raw_answer = server_.Serve(fdp.ConsumeRandomLengthString(512));
      if (raw_answer.empty()) return;
      auto answer = sandbox::fuzz::ParseHttpAnswer(raw_answer);
      FUZZ_CHECK(answer.has_value(), "well-formed HTTP");
      FUZZ_CHECK(answer->status != 500, "no 500");
      return;
    }
    static constexpr const char* kMethods[] = {"POST", "POST",  "POST",    "GET", "DELETE",
                                               "PUT",  "PATCH", "OPTIONS", "HEAD"};
    const std::string method = fdp.PickValueInArray(kMethods);
    const int path_choice = fdp.ConsumeIntegralInRange(0, 7);
    std::string target;
    switch (path_choice) {
      case 0:
      case 1:
      case 2:
        target = "/mcp";
        break;
      case 3:
        target = "/sse";
        break;
      case 4:
        target = "/messages?sessionId=" +
                 (streams_.empty() ? std::string("none") : streams_.back().session_id);
        break;
      case 5:
        target = "/messages?sessionId=" + fdp.ConsumeRandomLengthString(40);
        break;
      case 6:
        target = "/messages";
        break;
      default:
        target = fdp.ConsumeRandomLengthString(40);
        break;
    }
    const auto flags = fdp.ConsumeIntegral<std::uint16_t>();
    std::string headers;
    auto value = [&](bool good, const std::string& good_value) {
      return good ? good_value : fdp.ConsumeRandomLengthString(40);
    };
    // Host: good unless bit 0; Origin only with bit 1 (then bit 2 says good).
    headers += HeaderLine("Host", value((flags & 1) == 0, "127.0.0.1:8080"));
    if ((flags & 2) != 0)
      headers += HeaderLine("Origin", value((flags & 4) == 0, "http://localhost:6274"));
    // Authorization: absent, alice, bob or fuzzed.
    const int auth_choice = (flags >> 3) & 3;
    std::string authorization;
    if (auth_choice == 1 || auth_choice == 2) {
      authorization = std::string("Bearer ") + kTokens[auth_choice - 1];
    } else if (auth_choice == 3) {
      authorization = fdp.ConsumeRandomLengthString(40);
    }
    if (auth_choice != 0) headers += HeaderLine("Authorization", authorization);
    const std::string principal = guard_->Principal(authorization);
    if ((flags & 32) == 0) {
      headers +=
          HeaderLine("Accept", value((flags & 64) == 0, "application/json, text/event-stream"));
    }
    if ((flags & 128) == 0)
      headers += HeaderLine("Content-Type", value((flags & 256) == 0, "application/json"));
    const bool with_session = (flags & 512) == 0;
    if (with_session) {
      headers += HeaderLine("Mcp-Session-Id",
                            value((flags & 1024) == 0, session_id_.empty() ? "none" : session_id_));
    }
    // Bit 14: a request of protocol 2026-07-28 with its standard headers (ModernPost).
    const bool modern = (flags & 16384) != 0;
    ModernPost sent;
    if (modern) {
      sent = MakeModernPost(fdp);
      headers += sent.headers;
    } else if ((flags & 2048) != 0) {
      headers += HeaderLine("MCP-Protocol-Version",
                            (flags & 4096) != 0 ? fdp.ConsumeRandomLengthString(20)
                                                : std::string(fdp.PickValueInArray(kVersions)));
    }
    std::string body;
    const bool initialize = !modern && (flags & 8192) != 0;
    if (modern) {
      body = sent.body;
    } else if (initialize) {
      const std::string version = fdp.PickValueInArray(kVersions);
      const int id = fdp.ConsumeIntegral<std::uint8_t>();
      body = jsonrpc::DumpJson(mcp::testing::InitializeRequest(version, id));
    } else {
      body = fdp.ConsumeRandomLengthString(2048);
    }

    if (method == "GET" && path_choice == 3) {
      OpenLegacyStream(BuildRequest(method, target, headers, body));
      return;
    }
    const std::string raw = BuildRequest(method, target, headers, body);
    const std::string raw_answer = server_.Serve(raw);
    if (std::getenv("FUZZ_DEBUG") != nullptr) {
      std::fprintf(stderr, "---- request\n%s\n---- answer\n%s\n", raw.c_str(), raw_answer.c_str());
    }
    auto answer = sandbox::fuzz::ParseHttpAnswer(raw_answer);
    FUZZ_CHECK(answer.has_value(), "well-formed HTTP");
    FUZZ_CHECK(answer->status != 500, "no 500");
    FUZZ_CHECK(answer->complete || method == "HEAD", "a whole body");
    if (method == "DELETE" && target == "/mcp" && with_session && (flags & 1024) == 0 &&
        answer->status == 200) {
      session_id_.clear();  // this step ended the live session itself
    }
    // Routes of these transports (HEAD is routed to GET, without a body).
    const bool routed = (target == "/mcp" && method != "OPTIONS" && method != "HEAD") ||
                        (target == "/sse" && method == "GET") ||
                        (path_choice >= 4 && path_choice <= 6 && method == "POST");
    // httplib's own 400 for a request it could not parse has no body.
    const bool httplib_refusal = answer->status == 400 && answer->body.empty();
    if (answer->status == 202) {
      FUZZ_CHECK(answer->body.empty() || path_choice >= 4, "202 is empty (legacy: Accepted)");
    }
    // A HEAD answer has no body, whatever its status.
    if (method != "HEAD" && (answer->status == 401 || answer->status == 403 ||
                             (routed && answer->status >= 400 && !httplib_refusal))) {
      CheckRefusal(*answer);
    }
    if (modern && target == "/mcp" && method == "POST") {
      // Every header good, and the guard, Accept and Content-Type too: the stateless branch
      // answers this request itself (no Mcp-Session-Id sent, so the era is the header's).
      const bool reaches = sent.version_header_modern && !sent.odd_headers && !with_session &&
                           (flags & 1) == 0 && ((flags & 2) == 0 || (flags & 4) == 0) &&
                           (auth_choice == 1 || auth_choice == 2) && (flags & 96) == 0 &&
                           (flags & 384) == 0;
      CheckModernAnswer(sent, with_session, reaches, *answer);
    }
    if (target != "/mcp" || answer->status != 200 || method != "POST") return;

    // A successful POST /mcp.
    const std::string type = answer->Header("content-type");
    if (type == "text/event-stream") {
      auto events = sandbox::fuzz::ParseSse(answer->body);
      FUZZ_CHECK(events && !events->empty(), "an SSE answer holds events");
      for (const auto& e : *events) {
        if (e.event.empty()) continue;
        FUZZ_CHECK(e.event == "message", "only message events");
        auto m = sandbox::ParseJson(e.data);
        FUZZ_CHECK(m.ok(), "each event is JSON");
        CheckRpcMessage(*m);
      }
      auto last = sandbox::ParseJson(events->back().data);
      FUZZ_CHECK(last.ok() && !last->contains("method"), "the stream ends with the response");
    } else {
      FUZZ_CHECK(type == "application/json", "JSON otherwise");
      CheckRpcBody(answer->body);
    }
    const std::string sid = answer->Header("mcp-session-id");
    if (!sid.empty()) {
      FUZZ_CHECK(sid.size() == 64 && IsLowerHex(sid), "a 256-bit hex session id");
      FUZZ_CHECK(initialize || body.find("initialize") != std::string::npos, "only initialize");
      session_id_ = sid;
      session_principal_ = principal;
    } else if (with_session && (flags & 1024) == 0 && !session_id_.empty()) {
      // Answered on the live session: with its owner's token only.
      FUZZ_CHECK(principal == session_principal_, "a session answers its own principal only");
    }
  }

  void Delete(FuzzedDataProvider& fdp) {
    if (session_id_.empty()) return;
    const std::string authorization =
        std::string("Bearer ") + kTokens[fdp.ConsumeIntegralInRange(0, 1)];
    const std::string principal = guard_->Principal(authorization);
    std::string headers = HeaderLine("Host", "localhost") +
                          HeaderLine("Authorization", authorization) +
                          HeaderLine("Mcp-Session-Id", session_id_);
    auto answer =
        sandbox::fuzz::ParseHttpAnswer(server_.Serve(BuildRequest("DELETE", "/mcp", headers, "")));
    FUZZ_CHECK(answer.has_value(), "well-formed HTTP");
    if (principal != session_principal_) {
      FUZZ_CHECK(answer->status == 404, "another principal cannot end a session");
      return;
    }
    FUZZ_CHECK(answer->status == 200, "the owner ends it");
    std::string ping = R"({"jsonrpc":"2.0","id":1,"method":"ping"})";
    headers += HeaderLine("Accept", "application/json, text/event-stream") +
               HeaderLine("Content-Type", "application/json");
    auto after =
        sandbox::fuzz::ParseHttpAnswer(server_.Serve(BuildRequest("POST", "/mcp", headers, ping)));
    FUZZ_CHECK(after && after->status == 404, "an ended session is unknown");
    session_id_.clear();
  }

 private:
  void OpenLegacyStream(std::string raw) {
    if (streams_.size() >= 2) return;
    LegacyStream s;
    s.stream = std::make_unique<MemoryStream>(std::move(raw));
    MemoryStream* stream = s.stream.get();
    s.thread = std::thread([this, stream] { server_.Serve(*stream); });
    // The endpoint event, or a refusal (the guard, too many streams), arrives promptly.
    std::string out = stream->WaitFor("sessionId=", std::chrono::seconds(10));
    const auto at = out.find("sessionId=");
    if (at != std::string::npos) {
      const auto end = out.find('\n', at);
      s.session_id =
          out.substr(at + 10, end == std::string::npos ? std::string::npos : end - at - 10);
      FUZZ_CHECK(s.session_id.size() == 64 && IsLowerHex(s.session_id), "a 256-bit hex id");
      streams_.push_back(std::move(s));
      return;
    }
    stream->Close();
    s.thread.join();
    auto answer = sandbox::fuzz::ParseHttpAnswer(stream->output());
    FUZZ_CHECK(answer && answer->status >= 400 && answer->status != 500, "a refused stream");
    CheckRefusal(*answer);
  }

  static void CheckLegacyStream(const std::string& raw) {
    auto answer = sandbox::fuzz::ParseHttpAnswer(raw);
    FUZZ_CHECK(answer && answer->status == 200, "the stream's head");
    // Cut at the last complete event: the client left at an arbitrary moment.
    std::string body = answer->body;
    body.erase(body.rfind("\n\n") == std::string::npos ? 0 : body.rfind("\n\n") + 2);
    auto events = sandbox::fuzz::ParseSse(body);
    FUZZ_CHECK(events && !events->empty() && (*events)[0].event == "endpoint",
               "a legacy stream begins with its endpoint");
    for (std::size_t i = 1; i < events->size(); ++i) {
      const auto& e = (*events)[i];
      if (e.event.empty()) continue;
      FUZZ_CHECK(e.event == "message", "then only messages");
      auto m = sandbox::ParseJson(e.data);
      FUZZ_CHECK(m.ok(), "each event is JSON");
      if (m->is_array()) {
        for (const auto& member : *m) CheckRpcMessage(member);
      } else {
        CheckRpcMessage(*m);
      }
    }
  }

  sandbox::testing::FakeService service_;
  sandbox::testing::FakeSessionService sessions_;
  mcp::Dispatcher dispatcher_ = sandbox::fuzz::MakeFuzzDispatcher(service_, sessions_);
  std::unique_ptr<http::RequestGuard> guard_;
  InMemoryServer server_;
  std::unique_ptr<transport::StreamableHttpTransport> streamable_;
  std::unique_ptr<transport::LegacySseTransport> legacy_;
  std::vector<LegacyStream> streams_;
  std::string session_id_;
  std::string session_principal_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider fdp(data, size);
  Conversation conversation;
  const int steps = fdp.ConsumeIntegralInRange(1, 8);
  for (int i = 0; i < steps && fdp.remaining_bytes() > 0; ++i) {
    if (fdp.ConsumeIntegralInRange(0, 9) == 0) {
      conversation.Delete(fdp);
    } else {
      conversation.Step(fdp);
    }
  }
  return 0;
}
