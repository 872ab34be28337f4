#include "execute.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>

#include "sandbox/core/base64.h"
#include "sandbox/core/json.h"
#include "sandbox/http/sse_channel.h"

namespace sandbox::api {
namespace {

using json = nlohmann::json;

ApiError Refuse(std::string field, std::string message, int status = 400) {
  ApiError error;
  error.status = status;
  error.field = std::move(field);
  error.message = std::move(message);
  return error;
}

std::string TypeName(const json& value) { return value.type_name(); }

// A positive number of seconds into `out`.
std::optional<ApiError> ReadTimeout(const json& value, std::optional<double>& out) {
  if (!value.is_number()) {
    return Refuse("timeout_s", "timeout_s: expected a number, got " + TypeName(value));
  }
  const double timeout = value.get<double>();
  if (!std::isfinite(timeout) || timeout <= 0) {
    return Refuse("timeout_s", "timeout_s: expected a positive number of seconds");
  }
  out = timeout;
  return std::nullopt;
}

// A positive integer number of bytes into `out` (an integral float such as 5e8 is accepted).
std::optional<ApiError> ReadBytes(const std::string& key, const json& value,
                                  std::optional<std::int64_t>& out) {
  auto integer = JsonInteger(value);
  if (!integer) {
    return Refuse(key, key + ": expected an integer number of bytes, got " + TypeName(value));
  }
  const std::int64_t bytes = *integer;
  if (bytes <= 0) return Refuse(key, key + ": expected a positive number of bytes");
  out = bytes;
  return std::nullopt;
}

}  // namespace

bool IsSessionIdSyntax(std::string_view id) {
  if (id.empty() || id.size() > 128) return false;
  for (char c : id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_';
    if (!ok) return false;
  }
  return true;
}

std::optional<ApiError> ParseSessionCreateRequest(const json& body,
                                                  exec::SessionCreateRequest& request) {
  request = exec::SessionCreateRequest{};
  if (body.is_null()) return std::nullopt;
  if (!body.is_object()) return Refuse("", "the body must be a JSON object, got " + TypeName(body));
  for (const auto& [key, value] : body.items()) {
    if (key == "pool") {
      if (!value.is_string())
        return Refuse("pool", "pool: expected a string, got " + TypeName(value));
      request.pool = value.get<std::string>();
    } else if (key == "timeout_s") {
      if (auto refused = ReadTimeout(value, request.limits.timeout_s)) return refused;
    } else if (key == "memory_bytes") {
      if (auto refused = ReadBytes(key, value, request.limits.memory_bytes)) return refused;
    } else if (key == "output_bytes") {
      if (auto refused = ReadBytes(key, value, request.limits.output_bytes)) return refused;
    } else if (key == "network") {
      auto network = exec::ParseNetworkRequest(value);
      if (!network.ok()) return Refuse("network", network.error().message());
      request.network = std::move(*network);
    } else {
      return Refuse(key, key +
                             ": unknown field (expected pool, timeout_s, memory_bytes, "
                             "output_bytes, network)");
    }
  }
  return std::nullopt;
}

std::optional<ApiError> ParseExecuteRequest(const json& body, std::size_t max_code_bytes,
                                            exec::RunRequest& request, std::string& session_id) {
  request = exec::RunRequest{};
  session_id.clear();
  if (!body.is_object()) return Refuse("", "the body must be a JSON object, got " + TypeName(body));
  for (const auto& [key, value] : body.items()) {
    if (key == "code") {
      if (!value.is_string())
        return Refuse("code", "code: expected a string, got " + TypeName(value));
      request.code = value.get<std::string>();
      if (request.code.size() > max_code_bytes) {
        return Refuse("code",
                      "code: " + std::to_string(request.code.size()) +
                          " bytes, more than the limit of " + std::to_string(max_code_bytes),
                      413);
      }
    } else if (key == "timeout_s") {
      if (auto refused = ReadTimeout(value, request.limits.timeout_s)) return refused;
    } else if (key == "memory_bytes") {
      if (auto refused = ReadBytes(key, value, request.limits.memory_bytes)) return refused;
    } else if (key == "output_bytes") {
      if (auto refused = ReadBytes(key, value, request.limits.output_bytes)) return refused;
    } else if (key == "pool") {
      if (!value.is_string())
        return Refuse("pool", "pool: expected a string, got " + TypeName(value));
      request.pool = value.get<std::string>();
    } else if (key == "network") {
      auto network = exec::ParseNetworkRequest(value);
      if (!network.ok()) return Refuse("network", network.error().message());
      request.network = std::move(*network);
    } else if (key == "files") {
      if (!value.is_array()) {
        return Refuse("files",
                      "files: expected an array of {path, content_base64}, got " + TypeName(value));
      }
      for (std::size_t i = 0; i < value.size(); ++i) {
        const json& file = value[i];
        const std::string where = "files[" + std::to_string(i) + "]";
        if (!file.is_object()) {
          return Refuse(
              where, where + ": expected an object {path, content_base64}, got " + TypeName(file));
        }
        for (const auto& [field, ignored] : file.items()) {
          if (field != "path" && field != "content_base64") {
            std::string name = where;
            name.append(".").append(field);
            return Refuse(name, name + ": unknown field (expected path, content_base64)");
          }
        }
        auto path = file.find("path");
        if (path == file.end() || !path->is_string()) {
          return Refuse(where + ".path", where + ".path: required, a string");
        }
        auto content = file.find("content_base64");
        if (content == file.end() || !content->is_string()) {
          return Refuse(where + ".content_base64",
                        where + ".content_base64: required, a base64 string");
        }
        auto bytes = Base64Decode(content->get<std::string>());
        if (!bytes.ok()) {
          return Refuse(where + ".content_base64",
                        where + ".content_base64: " + bytes.error().message());
        }
        request.files.push_back(exec::InputFile{path->get<std::string>(), std::move(*bytes)});
      }
    } else if (key == "session_id") {
      if (!value.is_string()) {
        return Refuse("session_id", "session_id: expected a string, got " + TypeName(value));
      }
      session_id = value.get<std::string>();
      if (!IsSessionIdSyntax(session_id)) {
        return Refuse("session_id",
                      "session_id: not a session id (expected the id POST /v1/sessions returned)");
      }
    } else {
      return Refuse(key, key +
                             ": unknown field (expected code, timeout_s, memory_bytes, "
                             "output_bytes, files, pool, network, session_id)");
    }
  }
  if (!body.contains("code")) return Refuse("code", "code: required (a string of Python source)");
  if (!session_id.empty() && request.limits.memory_bytes) {
    return Refuse("memory_bytes",
                  "memory_bytes: a session's memory limit is fixed when it is created; omit it "
                  "here, or create a session with the memory you need");
  }
  return std::nullopt;
}

json ErrorBody(const ApiError& error) {
  json body = {{"error", error.message}};
  body["field"] = error.field.empty() ? json(nullptr) : json(error.field);
  return body;
}

std::string SseEvent(std::string_view name, const json& data) {
  // Every string in `data` is valid UTF-8 already; replace guards against a slip.
  return http::FormatSseEvent(name, data.dump(-1, ' ', false, json::error_handler_t::replace));
}

}  // namespace sandbox::api
