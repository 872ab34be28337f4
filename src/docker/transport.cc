#include "sandbox/docker/transport.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <mutex>
#include <nlohmann/json.hpp>
#include <vector>

#include "docker/curl_util.h"
#include "sandbox/core/json.h"

namespace sandbox::docker {

using internal::CurlEasyPtr;
using internal::CurlSlistPtr;

namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n'))
    s.remove_suffix(1);
  return s;
}

// Adds "Name: value" to `headers`; a status line ("HTTP/1.1 100 Continue") starts a new head.
void AddHeaderLine(std::string_view line, std::map<std::string, std::string>& headers) {
  line = Trim(line);
  if (line.rfind("HTTP/", 0) == 0) {
    headers.clear();
    return;
  }
  auto colon = line.find(':');
  if (colon == std::string_view::npos) return;
  headers[Lower(Trim(line.substr(0, colon)))] = std::string(Trim(line.substr(colon + 1)));
}

struct Exchange {
  HttpResponse* response = nullptr;
  std::size_t max_bytes = 0;
  bool over_limit = false;
};

size_t WriteBody(char* data, size_t size, size_t count, void* user) {
  auto* ex = static_cast<Exchange*>(user);
  std::size_t n = size * count;
  if (ex->response->body.size() + n > ex->max_bytes) {
    ex->over_limit = true;
    return 0;  // makes libcurl fail with CURLE_WRITE_ERROR
  }
  ex->response->body.append(data, n);
  return n;
}

size_t WriteHeader(char* data, size_t size, size_t count, void* user) {
  auto* ex = static_cast<Exchange*>(user);
  AddHeaderLine(std::string_view(data, size * count), ex->response->headers);
  return size * count;
}

}  // namespace

// ---- CurlGlobal ----

CurlGlobal::CurlGlobal() : ok_(curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK) {}

CurlGlobal::~CurlGlobal() {
  if (ok_) curl_global_cleanup();
}

// ---- options and endpoint ----

Result<TransportOptions> TransportOptionsFromEnv(const EnvLookup& getenv) {
  TransportOptions options;
  auto host = getenv("DOCKER_HOST");
  if (host && !host->empty()) options.host = *host;
  auto verify = getenv("DOCKER_TLS_VERIFY");
  auto cert_path = getenv("DOCKER_CERT_PATH");
  bool want_verify = verify && !verify->empty();
  bool want_tls = want_verify || (cert_path && !cert_path->empty());
  if (want_tls && options.host.rfind("tcp://", 0) == 0) {
    std::string dir;
    if (cert_path && !cert_path->empty()) {
      dir = *cert_path;
    } else {
      auto home = getenv("HOME");
      if (!home || home->empty()) {
        return Error(ErrorCode::kInvalidArgument,
                     "DOCKER_TLS_VERIFY is set but neither DOCKER_CERT_PATH nor HOME is");
      }
      dir = *home + "/.docker";
    }
    options.tls = TlsOptions{dir + "/ca.pem", dir + "/cert.pem", dir + "/key.pem", want_verify};
  }
  return options;
}

Result<TransportOptions> TransportOptionsFromEnv() {
  return TransportOptionsFromEnv([](const char* name) -> std::optional<std::string> {
    const char* v = std::getenv(name);  // NOLINT(concurrency-mt-unsafe): read at start-up
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  });
}

Result<Endpoint> ParseEndpoint(const TransportOptions& options) {
  std::string_view host = options.host;
  Endpoint e;
  if (host.rfind("unix://", 0) == 0 || host.rfind('/', 0) == 0) {
    if (host.rfind("unix://", 0) == 0) host.remove_prefix(7);
    if (host.empty() || host.front() != '/') {
      return Error(ErrorCode::kInvalidArgument,
                   "Docker host '" + options.host + "': a Unix socket needs an absolute path");
    }
    if (options.tls) {
      return Error(ErrorCode::kInvalidArgument, "TLS options are for tcp:// Docker hosts only");
    }
    e.socket_path = std::string(host);
    e.base_url = "http://docker";  // only the Host header; the socket decides where it goes
    e.display = "unix://" + e.socket_path;
    return e;
  }
  if (host.rfind("tcp://", 0) == 0) {
    host.remove_prefix(6);
    while (!host.empty() && host.back() == '/') host.remove_suffix(1);
    auto colon = host.rfind(':');
    if (host.empty() || colon == std::string_view::npos || colon + 1 == host.size() ||
        host.find('/') != std::string_view::npos) {
      return Error(ErrorCode::kInvalidArgument,
                   "Docker host '" + options.host + "': want tcp://HOST:PORT");
    }
    e.base_url = (options.tls ? "https://" : "http://") + std::string(host);
    e.display = options.host;
    return e;
  }
  return Error(ErrorCode::kUnsupported,
               "Docker host '" + options.host + "': only unix:// and tcp:// are supported");
}

namespace internal {

long TimeoutMs(Deadline deadline) {
  return std::max<long>(1, static_cast<long>(Remaining(deadline).count()));
}

Status ConfigureHandle(CURL* h, const Endpoint& endpoint, const TransportOptions& options,
                       std::string_view target, Deadline deadline) {
  std::string url = endpoint.base_url + std::string(target);
  CURLcode rc = curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  if (rc == CURLE_OK && !endpoint.socket_path.empty()) {
    rc = curl_easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, endpoint.socket_path.c_str());
  }
  if (rc != CURLE_OK) {
    return Error(ErrorCode::kInternal, std::string("libcurl setup: ") + curl_easy_strerror(rc));
  }
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);  // deadlines must not use SIGALRM in a threaded server
  curl_easy_setopt(h, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_1_1));
  long connect_ms =
      std::min(static_cast<long>(options.connect_timeout.count()), TimeoutMs(deadline));
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, std::max(1L, connect_ms));
  if (endpoint.socket_path.empty()) curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
  if (options.tls) {
    const TlsOptions& tls = *options.tls;
    if (!tls.ca_file.empty()) curl_easy_setopt(h, CURLOPT_CAINFO, tls.ca_file.c_str());
    if (!tls.cert_file.empty()) curl_easy_setopt(h, CURLOPT_SSLCERT, tls.cert_file.c_str());
    if (!tls.key_file.empty()) curl_easy_setopt(h, CURLOPT_SSLKEY, tls.key_file.c_str());
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, tls.verify ? 1L : 0L);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, tls.verify ? 2L : 0L);
  }
  return OkStatus();
}

Error CurlError(CURLcode code, const char* errbuf, std::string_view what,
                const Endpoint& endpoint) {
  std::string detail = (errbuf != nullptr && errbuf[0] != '\0') ? errbuf : curl_easy_strerror(code);
  std::string message = std::string(what) + ": " + detail;
  switch (code) {
    case CURLE_OPERATION_TIMEDOUT:
      return Error(ErrorCode::kTimeout, std::string(what) + ": deadline exceeded (" + detail + ")");
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
      return Error(ErrorCode::kUnavailable,
                   "cannot reach the Docker engine at " + endpoint.display + ": " + message);
    default:
      return Error(ErrorCode::kProtocol, message);
  }
}

}  // namespace internal

// ---- pure helpers ----

std::string HttpResponse::Header(std::string_view name) const {
  auto it = headers.find(Lower(name));
  return it == headers.end() ? std::string() : it->second;
}

Error ErrorFromResponse(long status, std::string_view body, std::string_view what) {
  std::string message;
  auto j = ParseJson(body);
  if (j.ok() && j->is_object() && j->contains("message") && (*j)["message"].is_string()) {
    message = (*j)["message"].get<std::string>();
  } else {
    message = std::string(Trim(body.substr(0, 1024)));
  }
  if (message.empty()) message = "HTTP status " + std::to_string(status);
  ErrorCode code = status == 404   ? ErrorCode::kNotFound
                   : status == 409 ? ErrorCode::kConflict
                                   : ErrorCode::kEngine;
  std::string full = what.empty() ? message : std::string(what) + ": " + message;
  return Error(code, std::move(full), static_cast<int>(status));
}

Result<std::optional<ResponseHead>> ParseResponseHead(std::string_view buffer) {
  auto end = buffer.find("\r\n\r\n");
  if (end == std::string_view::npos) {
    if (buffer.size() >= 5 && buffer.substr(0, 5) != "HTTP/") {
      return Error(ErrorCode::kProtocol, "Docker engine answered something that is not HTTP");
    }
    return std::optional<ResponseHead>();
  }
  ResponseHead head;
  head.length = end + 4;
  std::string_view text = buffer.substr(0, end);
  auto line_end = text.find("\r\n");
  std::string_view status_line = text.substr(0, line_end);
  // "HTTP/1.1 101 UPGRADED"
  auto sp = status_line.find(' ');
  if (status_line.rfind("HTTP/1.", 0) != 0 || sp == std::string_view::npos ||
      status_line.size() < sp + 4) {
    return Error(ErrorCode::kProtocol,
                 "malformed HTTP status line from Docker engine: " + std::string(status_line));
  }
  int status = 0;
  for (char c : status_line.substr(sp + 1, 3)) {
    if (c < '0' || c > '9') {
      return Error(ErrorCode::kProtocol,
                   "malformed HTTP status line from Docker engine: " + std::string(status_line));
    }
    status = status * 10 + (c - '0');
  }
  head.status = status;
  while (line_end != std::string_view::npos) {
    text.remove_prefix(line_end + 2);
    line_end = text.find("\r\n");
    AddHeaderLine(text.substr(0, line_end), head.headers);
  }
  return std::optional<ResponseHead>(std::move(head));
}

// ---- Transport ----

struct Transport::Pool {
  std::mutex mu;
  std::vector<CurlEasyPtr> idle;
};

Transport::Transport(TransportOptions options, Endpoint endpoint)
    : options_(std::move(options)),
      endpoint_(std::move(endpoint)),
      pool_(std::make_unique<Pool>()) {}

Transport::~Transport() = default;

Result<std::unique_ptr<Transport>> Transport::Create(const CurlGlobal& curl,
                                                     TransportOptions options) {
  if (!curl.ok()) return Error(ErrorCode::kInternal, "curl_global_init failed");
  auto endpoint = ParseEndpoint(options);
  if (!endpoint.ok()) return endpoint.error();
  return std::unique_ptr<Transport>(new Transport(std::move(options), std::move(*endpoint)));
}

Result<HttpResponse> Transport::Perform(const HttpRequest& request) const {
  std::string what = request.method + " " + request.target;
  if (Clock::now() >= request.deadline) {
    return Error(ErrorCode::kTimeout, what + ": deadline passed before the call started");
  }
  CurlEasyPtr handle;
  {
    std::lock_guard<std::mutex> lock(pool_->mu);
    if (!pool_->idle.empty()) {
      handle = std::move(pool_->idle.back());
      pool_->idle.pop_back();
    }
  }
  if (handle) {
    curl_easy_reset(handle.get());  // keeps the connection cache, drops every option
  } else {
    handle.reset(curl_easy_init());
    if (!handle) return Error(ErrorCode::kInternal, "curl_easy_init failed");
  }
  CURL* h = handle.get();
  SANDBOX_RETURN_IF_ERROR(
      internal::ConfigureHandle(h, endpoint_, options_, request.target, request.deadline));
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, internal::TimeoutMs(request.deadline));

  HttpResponse response;
  Exchange ex{&response, request.max_response_bytes};
  char errbuf[CURL_ERROR_SIZE] = {};
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, &WriteBody);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &ex);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, &WriteHeader);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &ex);

  curl_slist* raw_headers = curl_slist_append(nullptr, "Expect:");  // no 100-continue round trip
  if (!request.content_type.empty()) {
    raw_headers = curl_slist_append(raw_headers, ("Content-Type: " + request.content_type).c_str());
  }
  CurlSlistPtr headers(raw_headers);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers.get());

  if (request.method == "HEAD") {
    curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
  } else if (request.method == "POST" || request.method == "PUT") {
    curl_easy_setopt(h, CURLOPT_POST, 1L);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, request.body.data());
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
    if (request.method == "PUT") curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "PUT");
  } else if (request.method != "GET") {
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  }

  spdlog::debug("docker: {}", what);
  CURLcode rc = curl_easy_perform(h);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, nullptr);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, nullptr);
  if (rc != CURLE_OK) {
    if (ex.over_limit) {
      return Error(ErrorCode::kLimit, what + ": answer larger than " +
                                          std::to_string(request.max_response_bytes) + " bytes");
    }
    return internal::CurlError(rc, errbuf, what, endpoint_);  // the handle is dropped, not pooled
  }
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &response.status);
  {
    std::lock_guard<std::mutex> lock(pool_->mu);
    if (pool_->idle.size() < options_.max_idle_handles) pool_->idle.push_back(std::move(handle));
  }
  return response;
}

}  // namespace sandbox::docker
