#include "sandbox/admin/admin_api.h"

#include <nlohmann/json.hpp>
#include <utility>

#include "sandbox/core/json.h"
#include "sandbox/http/http_helpers.h"

namespace sandbox::admin {
namespace {

using http::SendJson;
using nlohmann::json;

void SendError(httplib::Response& res, const Error& error) {
  SendJson(
      res, HttpStatusOf(error),
      json{{"error",
            {{"code", std::string(ErrorCodeName(error.code()))}, {"message", error.message()}}}});
}

void Send(httplib::Response& res, const Result<json>& result, int ok_status = 200) {
  if (result.ok()) {
    SendJson(res, ok_status, *result);
  } else {
    SendError(res, result.error());
  }
}

}  // namespace

int HttpStatusOf(const Error& error) {
  switch (error.code()) {
    case ErrorCode::kInvalidArgument:
      return 400;
    case ErrorCode::kNotFound:
      return 404;
    case ErrorCode::kConflict:
      return 409;
    case ErrorCode::kLimit:
      return 413;
    default:
      return 500;
  }
}

AdminApi::AdminApi(PoolTuner& tuner, AdminApiOptions options)
    : tuner_(tuner), options_(std::move(options)) {}

void AdminApi::Register(httplib::Server& server) {
  // The guard let only admin-token requests through; the principal names who changed what.
  auto who = [this](const httplib::Request& req, httplib::Response& res) -> std::string {
    std::string name =
        options_.principal ? options_.principal(req.get_header_value("Authorization")) : "";
    if (name.empty()) {
      SendJson(res, 401,
               json{{"error",
                     {{"code", "unauthenticated"},
                      {"message", "the admin API needs Authorization: Bearer <admin token>"}}}});
    }
    return name;
  };
  server.Get("/admin/pools", [this, who](const httplib::Request& req, httplib::Response& res) {
    if (who(req, res).empty()) return;
    SendJson(res, 200, tuner_.List());
  });
  server.Get(R"(/admin/pools/([^/]+))",
             [this, who](const httplib::Request& req, httplib::Response& res) {
               if (who(req, res).empty()) return;
               Send(res, tuner_.Describe(req.matches[1]));
             });
  server.Patch(
      R"(/admin/pools/([^/]+))", [this, who](const httplib::Request& req, httplib::Response& res) {
        const std::string principal = who(req, res);
        if (principal.empty()) return;
        if (req.body.size() > options_.max_body_bytes) {
          SendError(res, Error(ErrorCode::kLimit, "the body is larger than " +
                                                      std::to_string(options_.max_body_bytes) +
                                                      " bytes"));
          return;
        }
        auto body = ParseJson(req.body);
        if (!body.ok()) {
          SendError(res, Error(ErrorCode::kInvalidArgument,
                               "the body is not JSON: " + body.error().message()));
          return;
        }
        Send(res, tuner_.Patch(req.matches[1], *body, principal));
      });
  server.Post(R"(/admin/pools/([^/]+)/drain)",
              [this, who](const httplib::Request& req, httplib::Response& res) {
                const std::string principal = who(req, res);
                if (principal.empty()) return;
                Send(res, tuner_.Drain(req.matches[1], principal), 202);
              });
  server.Get(R"(/admin/pools/([^/]+)/drain)",
             [this, who](const httplib::Request& req, httplib::Response& res) {
               if (who(req, res).empty()) return;
               Send(res, tuner_.DrainStatus(req.matches[1]));
             });
  if (options_.engines == nullptr) return;
  server.Get("/admin/engines", [this, who](const httplib::Request& req, httplib::Response& res) {
    if (who(req, res).empty()) return;
    SendJson(res, 200, json{{"engines", options_.engines->Engines()}});
  });
  auto drain = [this, who](bool on) {
    return [this, who, on](const httplib::Request& req, httplib::Response& res) {
      const std::string principal = who(req, res);
      if (principal.empty()) return;
      Send(res, options_.engines->DrainEngine(req.matches[1], on));
    };
  };
  server.Post(R"(/admin/engines/([^/]+)/drain)", drain(true));
  server.Post(R"(/admin/engines/([^/]+)/undrain)", drain(false));
  server.Delete(R"(/admin/engines/([^/]+)/drain)", drain(false));
}

}  // namespace sandbox::admin
