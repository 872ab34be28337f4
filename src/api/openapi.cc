#include "sandbox/api/openapi.h"

#include <string>

#include "sandbox/api/http_api.h"
#include "sandbox/exec/run_types.h"

namespace sandbox::api {
namespace {

using json = nlohmann::json;

json Ref(const std::string& name) { return {{"$ref", "#/components/schemas/" + name}}; }

json JsonContent(const json& schema) { return {{"application/json", {{"schema", schema}}}}; }

json ErrorResponse(const std::string& description, const std::string& schema = "Error") {
  return {{"description", description}, {"content", JsonContent(Ref(schema))}};
}

json Schemas(const ApiOptions& options) {
  json verdicts = json::array();
  for (auto v : {exec::Verdict::kOk, exec::Verdict::kError, exec::Verdict::kTimeout,
                 exec::Verdict::kMemory, exec::Verdict::kOutputLimit, exec::Verdict::kCancelled,
                 exec::Verdict::kSignal, exec::Verdict::kInternal}) {
    verdicts.push_back(exec::VerdictName(v));
  }
  json executables = json::array();
  for (const auto& path : options.python_executables) executables.push_back(path);
  json s;
  s["Error"] = {{"type", "object"},
                {"description", "Why a request was refused."},
                {"properties",
                 {{"error", {{"type", "string"}, {"description", "what is wrong"}}},
                  {"field",
                   {{"type", {"string", "null"}},
                    {"description", "the request field at fault, e.g. files[0].path"}}}}},
                {"required", {"error", "field"}}};
  s["SnekboxError"] = {
      {"type", "object"},
      {"description",
       "Snekbox's error body ({title, description}) plus this API's {error, field}."},
      {"properties",
       {{"title", {{"type", "string"}}},
        {"description", {{"type", "string"}}},
        {"error", {{"type", "string"}}},
        {"field", {{"type", {"string", "null"}}}}}},
      {"required", {"title", "description", "error", "field"}}};
  s["EvalRequest"] = {
      {"type", "object"},
      {"description",
       "Snekbox's request. With input, args defaults to [\"-c\"] and input is appended to it; "
       "the Python command line is then `python *args`. args == [\"-c\", CODE] runs CODE in the "
       "warm interpreter; any other command line runs as a subprocess of the interpreter inside "
       "the same sandbox. Unknown fields are ignored."},
      {"properties",
       {{"input", {{"type", "string"}, {"description", "Python code"}}},
        {"args", {{"type", "array"}, {"items", {{"type", "string"}}}}},
        {"files",
         {{"type", "array"},
          {"items",
           {{"type", "object"},
            {"properties",
             {{"path",
               {{"type", "string"},
                {"description", "relative; may not leave the working directory"}}},
              {"content", {{"type", "string"}, {"description", "base64"}}}}},
            {"required", {"path"}}}}}},
        {"executable_path",
         {{"type", "string"},
          {"enum", executables},
          {"description", "each allowed value names the sandbox's interpreter"}}}}},
      {"anyOf", {{{"required", {"input"}}}, {{"required", {"args"}}}}},
      {"examples",
       {{{"input", "print('Hello')"}},
        {{"args", {"-c", "print('Hello')"}}},
        {{"args", {"main.py"}}, {"files", {{{"path", "main.py"}, {"content", "SGVsbG8...="}}}}}}}};
  s["EvalResponse"] = {
      {"type", "object"},
      {"properties",
       {{"stdout",
         {{"type", "string"},
          {"description",
           "stdout and stderr merged in arrival order (invalid UTF-8 replaced by U+FFFD); the "
           "failure's reason when returncode is null"}}},
        {"returncode",
         {{"type", {"integer", "null"}},
          {"description",
           "exit status; 137 time or memory limit, 143 too much output, 128+N killed by signal "
           "N, 1 uncaught exception, null when the sandbox failed"}}},
        {"files",
         {{"type", "array"},
          {"description", "files the code wrote to its working directory"},
          {"items",
           {{"type", "object"},
            {"properties",
             {{"path", {{"type", "string"}}},
              {"size", {{"type", "integer"}}},
              {"content", {{"type", "string"}, {"description", "base64"}}}}},
            {"required", {"path", "size", "content"}}}}}}}},
      {"required", {"stdout", "returncode", "files"}},
      {"examples",
       {{{"stdout", "10000 loops, best of 5: 23.8 usec per loop"},
         {"returncode", 0},
         {"files", {{{"path", "output.png"}, {"size", 57344}, {"content", "eJzzSM3...="}}}}}}}};
  s["ExecuteRequest"] = {
      {"type", "object"},
      {"additionalProperties", false},
      {"properties",
       {{"code",
         {{"type", "string"},
          {"description", "Python 3 source; a final expression's repr() is returned as value"}}},
        {"timeout_s",
         {{"type", "number"},
          {"exclusiveMinimum", 0},
          {"description", "wall-time limit; at most the pool's maximum"}}},
        {"files",
         {{"type", "array"},
          {"items",
           {{"type", "object"},
            {"additionalProperties", false},
            {"properties",
             {{"path", {{"type", "string"}, {"description", "relative, no .."}}},
              {"content_base64", {{"type", "string"}}}}},
            {"required", {"path", "content_base64"}}}}}},
        {"pool",
         {{"type", "string"}, {"description", "a configured pool; default pool if omitted"}}},
        {"session_id",
         {{"type", "string"},
          {"description", "reserved: sessions are not available yet (any value is a 400)"}}}}},
      {"required", {"code"}}};
  json frame = {{"type", "object"},
                {"properties",
                 {{"file", {{"type", "string"}}},
                  {"line", {{"type", "integer"}}},
                  {"function", {{"type", "string"}}}}}};
  s["Image"] = {{"type", "object"},
                {"properties",
                 {{"mime_type", {{"type", "string"}}},
                  {"width", {{"type", "integer"}}},
                  {"height", {{"type", "integer"}}},
                  {"data_base64", {{"type", "string"}}}}},
                {"required", {"mime_type", "width", "height", "data_base64"}}};
  s["File"] = {{"type", "object"},
               {"properties",
                {{"path", {{"type", "string"}}},
                 {"size", {{"type", "integer"}}},
                 {"mime_type", {{"type", "string"}}},
                 {"content_base64", {{"type", "string"}}}}},
               {"required", {"path", "size", "mime_type", "content_base64"}}};
  s["ExecuteResult"] = {
      {"type", "object"},
      {"properties",
       {{"verdict", {{"type", "string"}, {"enum", verdicts}}},
        {"exit_code",
         {{"type", "integer"}, {"description", "-1 when the process did not exit by itself"}}},
        {"signal", {{"type", {"integer", "null"}}}},
        {"stdout", {{"type", "string"}}},
        {"stderr", {{"type", "string"}}},
        {"duration_ms", {{"type", "integer"}}},
        {"value", {{"type", {"string", "null"}}, {"description", "repr() of a final expression"}}},
        {"traceback",
         {{"type", {"object", "null"}},
          {"properties",
           {{"type", {{"type", "string"}}},
            {"message", {{"type", "string"}}},
            {"frames", {{"type", "array"}, {"items", frame}}}}}}},
        {"images", {{"type", "array"}, {"items", Ref("Image")}}},
        {"files", {{"type", "array"}, {"items", Ref("File")}}},
        {"output_truncated", {{"type", "boolean"}}},
        {"files_truncated", {{"type", "boolean"}}},
        {"detail", {{"type", "string"}, {"description", "why a run did not end ok"}}},
        {"pool", {{"type", "string"}}}}},
      {"required",
       {"verdict", "exit_code", "signal", "stdout", "stderr", "duration_ms", "value", "traceback",
        "images", "files", "output_truncated", "files_truncated", "detail", "pool"}}};
  s["StreamText"] = {
      {"type", "object"}, {"properties", {{"text", {{"type", "string"}}}}}, {"required", {"text"}}};
  s["StreamError"] = {{"type", "object"},
                      {"properties",
                       {{"error", {{"type", "string"}}},
                        {"field", {{"type", {"string", "null"}}}},
                        {"status", {{"type", "integer"}}}}},
                      {"required", {"error", "field", "status"}}};
  return s;
}

}  // namespace

json OpenApiDocument(const ApiOptions& options) {
  const std::string sse_description =
      "Server-Sent Events while the code runs. Each event's data is one line of JSON:\n"
      "- `stdout`, `stderr`: StreamText, output as it is written\n"
      "- `image`: Image, a matplotlib figure when shown\n"
      "- `file`: File, a file the code wrote (after the code ends)\n"
      "- `result`: ExecuteResult, last event of a run\n"
      "- `error`: StreamError, last event when the engine refused after the stream began\n"
      "Comments `: keepalive` are sent after 15 s of silence. Closing the connection cancels "
      "the run.";
  json execute_responses = {
      {"200",
       {{"description", "the run ended (any verdict)"},
        {"content",
         {{"application/json", {{"schema", Ref("ExecuteResult")}}},
          {"text/event-stream",
           {{"schema", {{"type", "string"}, {"description", sse_description}}},
            {"x-events",
             {{"stdout", Ref("StreamText")},
              {"stderr", Ref("StreamText")},
              {"image", Ref("Image")},
              {"file", Ref("File")},
              {"result", Ref("ExecuteResult")},
              {"error", Ref("StreamError")}}}}}}}}},
      {"400", ErrorResponse("bad input: wrong types, missing code, bad files, unknown pool, "
                            "limits out of range, session_id")},
      {"401", {{"description", "a bearer token is configured and was not sent"}}},
      {"413", ErrorResponse("the body or the code is too large")},
      {"415", ErrorResponse("the body is not JSON")},
      {"500", ErrorResponse("the server failed")},
      {"503",
       {{"description",
         "every sandbox is busy (Retry-After), the engine is down, or the server "
         "is shutting down"},
        {"headers", {{"Retry-After", {{"schema", {{"type", "integer"}}}}}}},
        {"content", JsonContent(Ref("Error"))}}}};
  json paths;
  paths["/eval"]["post"] = {
      {"summary", "Evaluate Python, compatible with Snekbox"},
      {"operationId", "eval"},
      {"requestBody", {{"required", true}, {"content", JsonContent(Ref("EvalRequest"))}}},
      {"responses",
       {{"200",
         {{"description", "the code was evaluated; not indicative that the code itself worked"},
          {"content", JsonContent(Ref("EvalResponse"))}}},
        {"400", ErrorResponse("the request is invalid", "SnekboxError")},
        {"401", {{"description", "a bearer token is configured and was not sent"}}},
        {"413", {{"description", "the body is too large"}}},
        {"415", ErrorResponse("the body is not JSON", "SnekboxError")},
        {"503", ErrorResponse("every sandbox is busy (Retry-After) or the server is shutting down",
                              "SnekboxError")}}}};
  paths["/v1/execute"]["post"] = {
      {"summary", "Run Python code: one JSON result, or Server-Sent Events while it runs"},
      {"operationId", "execute"},
      {"parameters",
       {{{"name", "Accept"},
         {"in", "header"},
         {"required", false},
         {"description", "text/event-stream for a stream; otherwise one JSON result"},
         {"schema", {{"type", "string"}}}}}},
      {"requestBody", {{"required", true}, {"content", JsonContent(Ref("ExecuteRequest"))}}},
      {"responses", execute_responses}};
  paths["/healthz"]["get"] = {
      {"summary", "Liveness: engine reachability and pool sizes (no authentication)"},
      {"operationId", "healthz"},
      {"security", json::array()},
      {"responses",
       {{"200",
         {{"description", "status ok or degraded"},
          {"content",
           JsonContent({{"type", "object"},
                        {"properties",
                         {{"status", {{"type", "string"}, {"enum", {"ok", "degraded"}}}},
                          {"engine", {{"type", "string"}}},
                          {"pools", {{"type", "array"}, {"items", {{"type", "object"}}}}}}}})}}}}}};
  paths["/openapi.json"]["get"] = {{"summary", "This document"},
                                   {"operationId", "openapi"},
                                   {"responses",
                                    {{"200",
                                      {{"description", "the OpenAPI 3.1 description"},
                                       {"content", JsonContent({{"type", "object"}})}}}}}};
  return {{"openapi", "3.1.0"},
          {"info",
           {{"title", "sandbox-mcp HTTP API"},
            {"version", options.version},
            {"description",
             "Plain HTTP access to the Python sandbox, next to MCP at /mcp: a "
             "Snekbox-compatible /eval and a streaming /v1/execute."}}},
          {"paths", paths},
          {"components",
           {{"schemas", Schemas(options)},
            {"securitySchemes", {{"bearer", {{"type", "http"}, {"scheme", "bearer"}}}}}}},
          {"security", {{{"bearer", json::array()}}}}};
}

}  // namespace sandbox::api
