#include "openapi.h"

#include <string>

#include "sandbox/api/http_api.h"
#include "sandbox/exec/run_result_json.h"
#include "sandbox/exec/session_json.h"

namespace sandbox::api {
namespace {

using json = nlohmann::json;

json Ref(const std::string& name) { return {{"$ref", "#/components/schemas/" + name}}; }

json JsonContent(const json& schema) { return {{"application/json", {{"schema", schema}}}}; }

json ErrorResponse(const std::string& description, const std::string& schema = "Error") {
  return {{"description", description}, {"content", JsonContent(Ref(schema))}};
}

json Schemas() {
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
          {"description",
           "the interpreter to run: picks the pool that answers to the path (a pool's "
           "`python`, its `executables`, /snekbin/python/<major.minor>/bin/python of its "
           "version, and for the default pool /snekbin/python/default/bin/python); empty or "
           "absent: the default pool"}}}}},
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
            {"required", {"path", "size", "content"}}}}}},
        {"engine",
         {{"type", "string"},
          {"description",
           "the engine (docker.engines name) that ran the code; only on a server of several "
           "engines"}}}}},
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
        {"memory_bytes",
         {{"type", "integer"},
          {"minimum", 1},
          {"description",
           "memory limit, at most the pool's; refused with session_id (fixed at "
           "session creation)"}}},
        {"output_bytes",
         {{"type", "integer"},
          {"minimum", 1},
          {"description", "stdout+stderr limit; at most the pool's maximum"}}},
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
        {"network", exec::NetworkRequestSchema()},
        {"session_id",
         {{"type", "string"},
          {"description",
           "run in this session (POST /v1/sessions): globals, imports and files persist from "
           "run to run"}}}}},
      {"required", {"code"}}};
  s["SessionCreateRequest"] = {
      {"type", "object"},
      {"additionalProperties", false},
      {"description", "Every field is optional; an empty body takes the pool's defaults."},
      {"properties",
       {{"pool",
         {{"type", "string"}, {"description", "a configured pool; default pool if omitted"}}},
        {"timeout_s",
         {{"type", "number"},
          {"exclusiveMinimum", 0},
          {"description", "default wall-time limit of each run"}}},
        {"memory_bytes",
         {{"type", "integer"},
          {"minimum", 1},
          {"description", "memory limit of the session, fixed for its lifetime"}}},
        {"output_bytes",
         {{"type", "integer"},
          {"minimum", 1},
          {"description", "default stdout+stderr limit of each run"}}},
        {"network", exec::NetworkRequestSchema()}}}};
  s["Session"] = exec::SessionInfoSchema();
  s["SessionList"] = {
      {"type", "object"},
      {"properties", {{"sessions", {{"type", "array"}, {"items", Ref("Session")}}}}},
      {"required", {"sessions"}}};
  s["SessionFile"] = exec::SessionFileSchema();
  s["SessionFileList"] = {
      {"type", "object"},
      {"properties",
       {{"session_id", {{"type", "string"}}},
        {"files", {{"type", "array"}, {"items", Ref("SessionFile")}}},
        {"truncated",
         {{"type", "boolean"}, {"description", "more files exist than were listed"}}}}},
      {"required", {"session_id", "files", "truncated"}}};
  // The run result's complete shape (exec::RunResultJson), its figures and files components of
  // their own: the SSE `image` and `file` events send them alone.
  s["Image"] = exec::RunImageSchema();
  s["File"] = exec::RunFileSchema();
  s["ExecuteResult"] = exec::RunResultSchema(exec::RunResultShape::kComplete);
  s["ExecuteResult"]["properties"]["images"]["items"] = Ref("Image");
  s["ExecuteResult"]["properties"]["files"]["items"] = Ref("File");
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
                            "limits out of range, memory_bytes with session_id, session_id "
                            "while sessions are disabled")},
      {"404", ErrorResponse("session_id names no session of this token")},
      {"401", {{"description", "a bearer token is configured and was not sent"}}},
      {"413", ErrorResponse("the body or the code is too large")},
      {"415", ErrorResponse("the body is not JSON")},
      {"500", ErrorResponse("the server failed")},
      {"503",
       {{"description",
         "every sandbox is busy or the session runs another call (Retry-After), the engine "
         "is down, or the server is shutting down"},
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
  const json unauthorized = {{"description", "a bearer token is configured and was not sent"}};
  const json busy = {
      {"description",
       "the session is running another call, or no container was free in time (Retry-After); "
       "or the engine is down"},
      {"headers", {{"Retry-After", {{"schema", {{"type", "integer"}}}}}}},
      {"content", JsonContent(Ref("Error"))}};
  const json disabled = ErrorResponse("sessions are disabled on this server");
  const json not_found = ErrorResponse(
      "no such session for this token (closed, idled out, past its lifetime, or another "
      "token's), or no such file");
  const json id_parameter = {{"name", "id"},
                             {"in", "path"},
                             {"required", true},
                             {"description", "the session_id from POST /v1/sessions"},
                             {"schema", {{"type", "string"}}}};
  const json path_parameter = {
      {"name", "path"},
      {"in", "path"},
      {"required", true},
      {"description",
       "the file's path relative to the session's working directory; may contain `/` "
       "(percent-encode other reserved characters)"},
      {"schema", {{"type", "string"}}}};
  paths["/v1/sessions"]["post"] = {
      {"summary", "Create a session: a sandbox of its own whose state persists between runs"},
      {"operationId", "createSession"},
      {"requestBody", {{"required", false}, {"content", JsonContent(Ref("SessionCreateRequest"))}}},
      {"responses",
       {{"201",
         {{"description", "created; Location names it"},
          {"headers", {{"Location", {{"schema", {{"type", "string"}}}}}}},
          {"content", JsonContent(Ref("Session"))}}},
        {"400", ErrorResponse("bad input: wrong types, unknown pool, limits out of range")},
        {"401", unauthorized},
        {"415", ErrorResponse("the body is not JSON")},
        {"429", ErrorResponse("the server's or this token's session limit is reached; close one")},
        {"501", disabled},
        {"503", busy}}}};
  paths["/v1/sessions"]["get"] = {
      {"summary", "This token's sessions, oldest first"},
      {"operationId", "listSessions"},
      {"responses",
       {{"200", {{"description", "the sessions"}, {"content", JsonContent(Ref("SessionList"))}}},
        {"401", unauthorized},
        {"501", disabled}}}};
  paths["/v1/sessions/{id}"]["parameters"] = json::array({id_parameter});
  paths["/v1/sessions/{id}"]["get"] = {
      {"summary", "One session: age, idle time, expiry, memory, runs, restarts"},
      {"operationId", "getSession"},
      {"responses",
       {{"200", {{"description", "the session"}, {"content", JsonContent(Ref("Session"))}}},
        {"401", unauthorized},
        {"404", not_found},
        {"501", disabled}}}};
  paths["/v1/sessions/{id}"]["delete"] = {
      {"summary", "Close a session: its container and files are destroyed"},
      {"operationId", "closeSession"},
      {"responses",
       {{"204", {{"description", "closed"}}},
        {"401", unauthorized},
        {"404", not_found},
        {"501", disabled}}}};
  paths["/v1/sessions/{id}/files"]["parameters"] = json::array({id_parameter});
  paths["/v1/sessions/{id}/files"]["get"] = {
      {"summary", "The files in a session's working directory"},
      {"operationId", "listSessionFiles"},
      {"responses",
       {{"200", {{"description", "the files"}, {"content", JsonContent(Ref("SessionFileList"))}}},
        {"401", unauthorized},
        {"404", not_found},
        {"501", disabled},
        {"503", busy}}}};
  paths["/v1/sessions/{id}/files/{path}"]["parameters"] =
      json::array({id_parameter, path_parameter});
  paths["/v1/sessions/{id}/files/{path}"]["put"] = {
      {"summary", "Write a file (the raw body) into the session's working directory"},
      {"operationId", "putSessionFile"},
      {"requestBody",
       {{"required", true},
        {"content",
         {{"application/octet-stream",
           {{"schema", {{"type", "string"}, {"format", "binary"}}}}}}}}},
      {"responses",
       {{"200", {{"description", "written"}, {"content", JsonContent(Ref("SessionFile"))}}},
        {"400", ErrorResponse("a bad path (absolute, .., too long)")},
        {"401", unauthorized},
        {"404", not_found},
        {"413", ErrorResponse("the file is above sessions.max_file_bytes (or the body above "
                              "server.max_body_bytes)")},
        {"501", disabled},
        {"503", busy}}}};
  paths["/v1/sessions/{id}/files/{path}"]["get"] = {
      {"summary", "Download a file: its raw bytes, Content-Type its MIME type"},
      {"operationId", "getSessionFile"},
      {"responses",
       {{"200",
         {{"description", "the file, sent as an attachment"},
          {"content", {{"*/*", {{"schema", {{"type", "string"}, {"format", "binary"}}}}}}}}},
        {"400", ErrorResponse("a bad path, or a directory")},
        {"401", unauthorized},
        {"404", not_found},
        {"413", ErrorResponse("the file is above the download limit")},
        {"501", disabled},
        {"503", busy}}}};
  paths["/v1/sessions/{id}/files/{path}"]["delete"] = {{"summary", "Delete a file"},
                                                       {"operationId", "deleteSessionFile"},
                                                       {"responses",
                                                        {{"204", {{"description", "deleted"}}},
                                                         {"400", ErrorResponse("a bad path")},
                                                         {"401", unauthorized},
                                                         {"404", not_found},
                                                         {"501", disabled},
                                                         {"503", busy}}}};
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
             "Snekbox-compatible /eval, a streaming /v1/execute and persistent sessions "
             "(/v1/sessions) with their files. Sessions belong to the bearer token that "
             "created them."}}},
          {"paths", paths},
          {"components",
           {{"schemas", Schemas()},
            {"securitySchemes", {{"bearer", {{"type", "http"}, {"scheme", "bearer"}}}}}}},
          {"security", {{{"bearer", json::array()}}}}};
}

}  // namespace sandbox::api
