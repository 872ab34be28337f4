// HTTP transport to the Docker engine over libcurl: where the engine is (Unix socket or TCP with
// TLS client certificates), the process-wide curl initialisation token, and plain request/response
// calls with a deadline. Streaming calls (attach, events) build on the same endpoint settings.
//
// Thread-safety: CurlGlobal must outlive every other object of this module and is created once,
// in main, before threads start. Transport is safe to share between threads: each call takes an
// easy handle from a mutex-guarded pool (or makes one) and uses it alone.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "sandbox/core/result.h"
#include "sandbox/docker/deadline.h"

namespace sandbox::docker {

// RAII for curl_global_init/curl_global_cleanup. Create one in main (not a singleton: it is passed
// by reference to Client::Connect as proof that libcurl is initialised) and keep it alive until
// every Client, stream and watcher is gone. Not thread-safe to construct or destroy.
class CurlGlobal {
 public:
  CurlGlobal();
  ~CurlGlobal();
  CurlGlobal(const CurlGlobal&) = delete;
  CurlGlobal& operator=(const CurlGlobal&) = delete;

  // False when curl_global_init failed; Client::Connect then fails with kInternal.
  bool ok() const { return ok_; }

 private:
  bool ok_;
};

struct TlsOptions {
  std::string ca_file;    // PEM CA bundle that signed the engine's certificate
  std::string cert_file;  // PEM client certificate
  std::string key_file;   // PEM client key
  bool verify = true;     // verify the engine's certificate and host name
};

struct TransportOptions {
  // "unix:///var/run/docker.sock" (default), "unix:///other.sock", a bare absolute path (Unix
  // socket) or "tcp://host:port".
  std::string host = "unix:///var/run/docker.sock";
  // For tcp:// only: speak HTTPS presenting these client certificates. Unset: plain HTTP.
  std::optional<TlsOptions> tls;
  // Upper bound for establishing a connection (still capped by each call's deadline).
  std::chrono::milliseconds connect_timeout{5000};
  // Easy handles (and so kept-alive connections) pooled for ordinary calls.
  std::size_t max_idle_handles = 8;
};

// Options from Docker's environment conventions: DOCKER_HOST (unix:// or tcp://; default the
// Unix socket), DOCKER_TLS_VERIFY (non-empty: TLS with verification), DOCKER_CERT_PATH (directory
// of ca.pem, cert.pem, key.pem; default $HOME/.docker; setting it alone enables TLS without
// verification, as the docker CLI does). `getenv` is injectable for tests.
using EnvLookup = std::function<std::optional<std::string>(const char* name)>;
Result<TransportOptions> TransportOptionsFromEnv(const EnvLookup& getenv);
Result<TransportOptions> TransportOptionsFromEnv();  // the process environment

// Where requests go, parsed from TransportOptions::host. Pure.
struct Endpoint {
  std::string socket_path;  // non-empty for a Unix socket
  std::string base_url;     // "http://docker" for a Unix socket, "https://host:port" for TLS
  std::string display;      // for error messages: "unix:///var/run/docker.sock"
};
Result<Endpoint> ParseEndpoint(const TransportOptions& options);

struct HttpRequest {
  std::string method = "GET";  // GET, POST, PUT, DELETE, HEAD
  std::string target;          // path and query, e.g. "/v1.41/containers/json?all=1"
  std::string body;
  std::string content_type;  // sent when non-empty
  Deadline deadline;
  std::size_t max_response_bytes =
      std::size_t{64} * 1024 * 1024;  // a larger body fails with kLimit
};

struct HttpResponse {
  long status = 0;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;

  // The value of header `name` (case-insensitive), or "".
  std::string Header(std::string_view name) const;
};

// The error for a non-2xx engine answer: kNotFound (404), kConflict (409), otherwise kEngine; all
// carry the status and Docker's own "message" from the JSON body (or the raw body when not JSON).
// `what` names the call, e.g. "create container". Pure.
Error ErrorFromResponse(long status, std::string_view body, std::string_view what);

// A parsed HTTP/1.1 response head, for hijacked connections where libcurl does not parse it.
struct ResponseHead {
  int status = 0;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::size_t length = 0;                      // bytes of the head including the blank line
};
// nullopt while `buffer` does not yet hold the whole head; kProtocol when it is not HTTP. Pure.
Result<std::optional<ResponseHead>> ParseResponseHead(std::string_view buffer);

class Transport {
 public:
  static Result<std::unique_ptr<Transport>> Create(const CurlGlobal& curl,
                                                   TransportOptions options);
  ~Transport();
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  // One request/response exchange bounded by request.deadline. Any HTTP status is a successful
  // exchange here; transport failures are kUnavailable (engine unreachable), kTimeout (deadline)
  // or kLimit (body too large).
  Result<HttpResponse> Perform(const HttpRequest& request) const;

  const TransportOptions& options() const { return options_; }
  const Endpoint& endpoint() const { return endpoint_; }

 private:
  struct Pool;
  Transport(TransportOptions options, Endpoint endpoint);

  TransportOptions options_;
  Endpoint endpoint_;
  std::unique_ptr<Pool> pool_;
};

}  // namespace sandbox::docker
