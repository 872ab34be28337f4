// Internal libcurl plumbing shared by transport.cc, attach.cc and events.cc: RAII owners for curl
// handles and the one place that points an easy handle at the engine.
// Thread-safety: a handle is used by one thread at a time.
#pragma once

#include <curl/curl.h>

#include <memory>
#include <string>
#include <string_view>

#include "sandbox/core/result.h"
#include "sandbox/docker/deadline.h"
#include "sandbox/docker/transport.h"

namespace sandbox::docker::internal {

struct CurlEasyDeleter {
  void operator()(CURL* handle) const { curl_easy_cleanup(handle); }
};
using CurlEasyPtr = std::unique_ptr<CURL, CurlEasyDeleter>;

struct CurlMultiDeleter {
  void operator()(CURLM* handle) const { curl_multi_cleanup(handle); }
};
using CurlMultiPtr = std::unique_ptr<CURLM, CurlMultiDeleter>;

struct CurlSlistDeleter {
  void operator()(curl_slist* list) const { curl_slist_free_all(list); }
};
using CurlSlistPtr = std::unique_ptr<curl_slist, CurlSlistDeleter>;

// Points `handle` at endpoint + target (URL, Unix socket, TLS files), sets NOSIGNAL, HTTP/1.1 and
// a connect timeout of min(options.connect_timeout, time left until `deadline`).
Status ConfigureHandle(CURL* handle, const Endpoint& endpoint, const TransportOptions& options,
                       std::string_view target, Deadline deadline);

// The error for a failed libcurl call: kTimeout, kUnavailable (cannot reach the engine) or
// kProtocol. `what` names the call.
Error CurlError(CURLcode code, const char* errbuf, std::string_view what, const Endpoint& endpoint);

// Milliseconds left until `deadline` as a long, at least 1 (libcurl treats 0 as "no timeout").
long TimeoutMs(Deadline deadline);

}  // namespace sandbox::docker::internal
