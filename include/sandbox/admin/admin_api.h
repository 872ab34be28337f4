// The admin API: live tuning of the pools over HTTP, behind admin tokens.
//
//   GET   /admin/pools                every pool's settings and state
//   GET   /admin/pools/{name}         one pool's
//   PATCH /admin/pools/{name}         change min_idle, max_total, max_concurrent_starts, limits,
//                                     autoscale (PoolTuner::Patch); answers the pool after it
//   POST  /admin/pools/{name}/drain   replace every sandbox of the pool (202, the progress)
//   GET   /admin/pools/{name}/drain   the latest drain's progress
//   GET   /admin/engines              every engine: up, down or draining, and its pools
//   POST  /admin/engines/{name}/drain    no new sandboxes there, its idle ones retired
//   POST  /admin/engines/{name}/undrain  takes it back (also DELETE .../drain)
//
// Authentication is the RequestGuard's (admin tokens only; a run token gets 401, and without
// admin tokens the routes answer 404); the handlers take the admin principal's name for the
// change log from `principal`. Every refusal is a JSON body {"error": {"code", "message"}}.
// Thread-safety: handlers run on any HTTP worker; the tuner serialises changes.
#pragma once

#include <httplib.h>

#include <functional>
#include <string>
#include <string_view>

#include "sandbox/admin/pool_tuner.h"
#include "sandbox/service/engine_control.h"

namespace sandbox::admin {

struct AdminApiOptions {
  // The admin principal of a request from its Authorization header ("" when none);
  // http::RequestGuard::AdminPrincipal.
  std::function<std::string(std::string_view authorization)> principal;
  std::size_t max_body_bytes = std::size_t{64} * 1024;  // a PATCH body is a handful of fields
  // The engines' routes; null: they answer 404.
  service::EngineControl* engines = nullptr;
};

class AdminApi {
 public:
  // `tuner` must outlive the server the routes are registered on.
  AdminApi(PoolTuner& tuner, AdminApiOptions options);
  void Register(httplib::Server& server);

 private:
  PoolTuner& tuner_;
  AdminApiOptions options_;
};

// The HTTP status of a tuner's refusal: kInvalidArgument 400, kNotFound 404, kConflict 409,
// anything else 500.
int HttpStatusOf(const Error& error);

}  // namespace sandbox::admin
