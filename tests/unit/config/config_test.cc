#include "sandbox/config/config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

namespace sandbox::config {
namespace {

using nlohmann::json;

Result<CommandLine> Parse(std::vector<const char*> args,
                          std::map<std::string, std::string> env = {}) {
  args.insert(args.begin(), "sandbox-mcp");
  return ParseCommandLine(static_cast<int>(args.size()), args.data(), env);
}

TEST(ConfigTest, DefaultsAreValidAndLoopback) {
  auto cl = Parse({});
  ASSERT_TRUE(cl.ok()) << cl.error().ToString();
  EXPECT_EQ(cl->config.server.listen_host, "127.0.0.1");
  EXPECT_EQ(cl->config.server.listen_port, 8080);
  EXPECT_TRUE(Validate(cl->config).ok());
  ASSERT_EQ(cl->config.pools.size(), 1u);
  EXPECT_EQ(cl->config.pools[0].mode, PoolMode::kRecycle);
  EXPECT_GT(cl->config.pools[0].max_limits.timeout_s, cl->config.pools[0].limits.timeout_s);
}

// A fresh container serves one run: under a backlog its preload only delays the queue, so fresh
// pools skip it by default while requests wait. A recycle pool may not (its lean container
// would serve all its runs without the preload).
TEST(ConfigTest, SkipPreloadWhenQueuedDefaultsByModeAndIsFreshOnly) {
  auto cfg = ApplyJson(Config{}, json::parse(R"({"pools": [
    {"name": "r", "mode": "recycle"}, {"name": "f", "mode": "fresh"},
    {"name": "g", "mode": "fresh", "skip_preload_when_queued": false}], "default_pool": "r"})"));
  ASSERT_TRUE(cfg.ok()) << cfg.error().ToString();
  EXPECT_FALSE(cfg->pools[0].skip_preload_when_queued);
  EXPECT_TRUE(cfg->pools[1].skip_preload_when_queued);
  EXPECT_FALSE(cfg->pools[2].skip_preload_when_queued);
  EXPECT_TRUE(Validate(*cfg).ok());

  auto recycle = ApplyJson(Config{}, json::parse(R"({"pools": [
    {"name": "r", "mode": "recycle", "skip_preload_when_queued": true}], "default_pool": "r"})"));
  ASSERT_TRUE(recycle.ok()) << recycle.error().ToString();
  auto status = Validate(*recycle);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().message().find("skip_preload_when_queued"), std::string::npos);
  EXPECT_NE(status.error().message().find("fresh pools only"), std::string::npos);
}

// Fresh pools start a used container's replacement after its run by default (the boot would
// otherwise compete with the run); recycle pools keep starting at lease time unless asked.
TEST(ConfigTest, RefillAfterRunDefaultsByMode) {
  auto cfg = ApplyJson(Config{}, json::parse(R"({"pools": [
    {"name": "r", "mode": "recycle"}, {"name": "f", "mode": "fresh"},
    {"name": "g", "mode": "fresh", "refill_after_run": false},
    {"name": "s", "mode": "recycle", "refill_after_run": true}], "default_pool": "r"})"));
  ASSERT_TRUE(cfg.ok()) << cfg.error().ToString();
  EXPECT_FALSE(cfg->pools[0].refill_after_run);
  EXPECT_TRUE(cfg->pools[1].refill_after_run);
  EXPECT_FALSE(cfg->pools[2].refill_after_run);
  EXPECT_TRUE(cfg->pools[3].refill_after_run);
  EXPECT_TRUE(Validate(*cfg).ok());
  auto wrong =
      ApplyJson(Config{}, json::parse(R"({"pools": [{"name": "r", "refill_after_run": 1}]})"));
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.error().message().find("refill_after_run"), std::string::npos);
}

// Package lists end up on a shell command line and in image labels: only names images/build.sh
// accepts pass, and a pool with packages must name an image of its own.
TEST(ConfigTest, PackagesAreCheckedNamesOnAnImageOfItsOwn) {
  auto valid = [](const char* pool) {
    auto cfg = ApplyJson(Config{}, json::parse(std::string(R"({"pools": [)") + pool + "]}"));
    if (!cfg.ok()) return cfg.error().ToString();
    Status status = Validate(*cfg);
    return status.ok() ? std::string("ok") : status.error().ToString();
  };
  EXPECT_EQ(valid(R"({"image": "t:ml", "packages": ["python3-sklearn", "libfoo2.1=1.2-3"],
                      "pip_packages": ["scikit-learn==1.5.2", "xgboost", "pandas[excel]>=2"]})"),
            "ok");
  EXPECT_NE(valid(R"({"image": "t:ml", "packages": ["python3-sklearn; rm -rf /"]})")
                .find("pools[0].packages[0]"),
            std::string::npos);
  EXPECT_NE(valid(R"({"image": "t:ml", "pip_packages": ["ok", "--index-url=http://x"]})")
                .find("pools[0].pip_packages[1]"),
            std::string::npos);
  EXPECT_NE(valid(R"({"packages": ["python3-sklearn"]})").find("pools[0].image"),
            std::string::npos);
  EXPECT_NE(valid(R"({"image": "t:ml", "packages": "python3-sklearn"})").find("packages"),
            std::string::npos);
}

TEST(ConfigTest, ListenBeyondLoopbackRequiresToken) {
  auto cl = Parse({"--listen", "0.0.0.0:9000"});
  ASSERT_TRUE(cl.ok());
  auto status = Validate(cl->config);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().message().find("SANDBOX_MCP_TOKEN"), std::string::npos);

  auto with_token =
      Parse({"--listen", "0.0.0.0:9000"}, {{"SANDBOX_MCP_TOKEN", "0123456789abcdef"}});
  ASSERT_TRUE(with_token.ok());
  EXPECT_EQ(with_token->config.server.listen_port, 9000);
  EXPECT_TRUE(Validate(with_token->config).ok());
}

TEST(ConfigTest, BadFlagsAreClearErrors) {
  auto unknown = Parse({"--frobnicate"});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message().find("--frobnicate"), std::string::npos);
  EXPECT_FALSE(Parse({"--listen"}).ok());
  EXPECT_FALSE(Parse({"--listen", "nohostport"}).ok());
  EXPECT_FALSE(Parse({"--listen", "127.0.0.1:99999"}).ok());
}

TEST(ConfigTest, JsonOverridesAndRejectsTypos) {
  auto cfg = ApplyJson(Config{}, json::parse(R"({
    "pools": [{"name": "fast", "mode": "fresh", "min_idle": 1, "limits": {"timeout_s": 5}}],
    "default_pool": "fast"})"));
  ASSERT_TRUE(cfg.ok()) << cfg.error().ToString();
  EXPECT_EQ(cfg->pools[0].mode, PoolMode::kFresh);
  EXPECT_DOUBLE_EQ(cfg->pools[0].limits.timeout_s, 5.0);
  EXPECT_TRUE(Validate(*cfg).ok());

  auto typo = ApplyJson(Config{}, json::parse(R"({"pools": [{"min_idel": 1}]})"));
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.error().message().find("pools[0].min_idel"), std::string::npos);

  auto wrong_type = ApplyJson(Config{}, json::parse(R"({"server": {"http_threads": "many"}})"));
  ASSERT_FALSE(wrong_type.ok());
  EXPECT_NE(wrong_type.error().message().find("server.http_threads"), std::string::npos);

  auto bad_mode = ApplyJson(Config{}, json::parse(R"({"pools": [{"mode": "warm"}]})"));
  ASSERT_FALSE(bad_mode.ok());
  EXPECT_NE(bad_mode.error().message().find("recycle"), std::string::npos);
}

TEST(ConfigTest, ValidateNamesTheField) {
  Config c;
  c.pools[0].min_idle = 10;
  c.pools[0].max_total = 2;
  auto s = Validate(c);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("pools[0].min_idle"), std::string::npos);

  Config over;
  over.pools[0].limits.timeout_s = over.pools[0].max_limits.timeout_s + 1;
  auto s2 = Validate(over);
  ASSERT_FALSE(s2.ok());
  EXPECT_NE(s2.error().message().find("max_limits.timeout_s"), std::string::npos);

  Config missing_default;
  missing_default.default_pool = "nope";
  EXPECT_FALSE(Validate(missing_default).ok());

  Config dup;
  dup.pools.push_back(dup.pools[0]);
  EXPECT_FALSE(Validate(dup).ok());
}

TEST(ConfigTest, MaxStreamsIsReadAndBounded) {
  auto cfg = ApplyJson(Config{}, json::parse(R"({"server": {"max_streams": 32}})"));
  ASSERT_TRUE(cfg.ok()) << cfg.error().ToString();
  EXPECT_EQ(cfg->server.max_streams, 32);
  EXPECT_TRUE(Validate(*cfg).ok());
  for (int bad : {0, 4097}) {
    Config c;
    c.server.max_streams = bad;
    auto s = Validate(c);
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_NE(s.error().message().find("server.max_streams"), std::string::npos);
  }
}

TEST(ConfigTest, PerPrincipalSharesDefaultToAFractionOfTheServersBounds) {
  Config c;
  // One principal ("local"): nobody to starve, the whole bound.
  EXPECT_EQ(PrincipalCount(c), 1);
  EXPECT_EQ(StreamsPerPrincipal(c), 256);
  EXPECT_EQ(McpSessionsPerPrincipal(c), 10000);
  c.server.token = "0123456789abcdef";
  EXPECT_EQ(StreamsPerPrincipal(c), 256);
  c.server.tokens = {{"alice", "alice-token-0123456789"}};
  EXPECT_EQ(PrincipalCount(c), 2);
  EXPECT_EQ(StreamsPerPrincipal(c), 128);  // half of max_streams 256
  EXPECT_EQ(McpSessionsPerPrincipal(c), 1000);
  c.server.max_streams = 1;
  EXPECT_EQ(StreamsPerPrincipal(c), 1);
  auto cfg = ApplyJson(Config{}, json::parse(R"({"server": {"tokens": {"a": "a-token-0123456789",
      "b": "b-token-0123456789"}, "max_mcp_sessions": 500, "mcp_session_idle_timeout_s": 60},
      "per_principal": {"max_streams": 8, "max_mcp_sessions": 50, "max_concurrent_runs": 2,
      "runs_per_minute": 120}})"));
  ASSERT_TRUE(cfg.ok()) << cfg.error().ToString();
  EXPECT_TRUE(Validate(*cfg).ok());
  EXPECT_EQ(StreamsPerPrincipal(*cfg), 8);
  EXPECT_EQ(McpSessionsPerPrincipal(*cfg), 50);
  EXPECT_EQ(cfg->per_principal.max_concurrent_runs, 2);
  EXPECT_EQ(cfg->per_principal.runs_per_minute, 120);
  EXPECT_EQ(cfg->server.mcp_session_idle_timeout, std::chrono::seconds(60));
  EXPECT_FALSE(ApplyJson(Config{}, json::parse(R"({"per_principal": {"max_runs": 1}})")).ok());
}

TEST(ConfigTest, PerPrincipalSharesCannotExceedTheServersBounds) {
  auto named = [](const Config& c, const std::string& field) {
    auto s = Validate(c);
    return !s.ok() && s.error().message().find(field) != std::string::npos;
  };
  Config c;
  c.per_principal.max_streams = c.server.max_streams + 1;
  EXPECT_TRUE(named(c, "per_principal.max_streams"));
  c = Config{};
  c.per_principal.max_mcp_sessions = c.server.max_mcp_sessions + 1;
  EXPECT_TRUE(named(c, "per_principal.max_mcp_sessions"));
  c = Config{};
  c.per_principal.max_concurrent_runs = -1;
  EXPECT_TRUE(named(c, "per_principal.max_concurrent_runs"));
  c = Config{};
  c.per_principal.runs_per_minute = -1;
  EXPECT_TRUE(named(c, "per_principal.runs_per_minute"));
  c = Config{};
  c.server.max_mcp_sessions = 0;
  EXPECT_TRUE(named(c, "server.max_mcp_sessions"));
}

TEST(ConfigTest, ADeeplyNestedConfigFileIsAClearError) {
  std::string path = ::testing::TempDir() + "/sandbox-config-deep.json";
  {
    std::ofstream out(path);
    out << "{\"server\": " << std::string(1000, '[') << std::string(1000, ']') << "}";
  }
  auto cl = Parse({"--config", path.c_str()});
  ASSERT_FALSE(cl.ok());
  EXPECT_NE(cl.error().message().find("deeper than 64 levels"), std::string::npos)
      << cl.error().message();
  std::remove(path.c_str());
}

TEST(ConfigTest, ConnectionGuardLimitsAreReadWithDocumentedDefaultsAndBounded) {
  const Config defaults;
  EXPECT_EQ(defaults.server.max_header_bytes, 32 * 1024);
  EXPECT_EQ(defaults.server.max_headers, 100);
  EXPECT_EQ(defaults.server.header_timeout.count(), 10);
  EXPECT_EQ(defaults.server.body_timeout.count(), 60);
  EXPECT_EQ(defaults.server.idle_timeout.count(), 30);
  EXPECT_EQ(defaults.server.max_connections, 2048);
  EXPECT_EQ(defaults.server.max_connections_per_ip, 512);
  EXPECT_TRUE(Validate(defaults).ok());

  auto cfg = ApplyJson(Config{}, json::parse(R"({"server": {"max_header_bytes": 16384,
      "max_headers": 50, "header_timeout_s": 5, "body_timeout_s": 20, "idle_timeout_s": 7,
      "max_connections": 100, "max_connections_per_ip": 10}})"));
  ASSERT_TRUE(cfg.ok()) << cfg.error().ToString();
  EXPECT_EQ(cfg->server.max_header_bytes, 16384);
  EXPECT_EQ(cfg->server.max_headers, 50);
  EXPECT_EQ(cfg->server.header_timeout.count(), 5);
  EXPECT_EQ(cfg->server.body_timeout.count(), 20);
  EXPECT_EQ(cfg->server.idle_timeout.count(), 7);
  EXPECT_EQ(cfg->server.max_connections, 100);
  EXPECT_EQ(cfg->server.max_connections_per_ip, 10);
  EXPECT_TRUE(Validate(*cfg).ok());

  struct Bad {
    const char* name;
    void (*set)(ServerConfig&);
  };
  const Bad bad[] = {
      {"server.max_header_bytes", [](ServerConfig& s) { s.max_header_bytes = 4096; }},
      {"server.max_headers", [](ServerConfig& s) { s.max_headers = 0; }},
      {"server.header_timeout_s",
       [](ServerConfig& s) { s.header_timeout = std::chrono::seconds(0); }},
      {"server.body_timeout_s", [](ServerConfig& s) { s.body_timeout = std::chrono::seconds(0); }},
      {"server.idle_timeout_s", [](ServerConfig& s) { s.idle_timeout = std::chrono::seconds(0); }},
      {"server.max_connections", [](ServerConfig& s) { s.max_connections = 0; }},
      {"server.max_connections_per_ip", [](ServerConfig& s) { s.max_connections_per_ip = 4096; }},
  };
  for (const auto& b : bad) {
    Config c;
    b.set(c.server);
    auto s = Validate(c);
    ASSERT_FALSE(s.ok()) << b.name;
    EXPECT_NE(s.error().message().find(b.name), std::string::npos) << s.error().message();
  }
}

// Replicas behind a balancer: a name their ids start with, and a shared requestState key file
// (its contents are checked when the server starts, not here).
TEST(ConfigTest, ReplicaNameAndRequestStateKeyFileAreReadAndTheNameChecked) {
  const Config defaults;
  EXPECT_EQ(defaults.server.replica, "");
  EXPECT_EQ(defaults.server.request_state_key_file, "");
  auto cfg = ApplyJson(Config{}, json::parse(R"({"server": {"replica": "r1",
      "request_state_key_file": "/etc/sandbox-mcp/request-state.key"}})"));
  ASSERT_TRUE(cfg.ok()) << cfg.error().ToString();
  EXPECT_EQ(cfg->server.replica, "r1");
  EXPECT_EQ(cfg->server.request_state_key_file, "/etc/sandbox-mcp/request-state.key");
  EXPECT_TRUE(Validate(*cfg).ok());
  for (const char* bad : {"R1", "r-1", "node00420", "r 1", "r/1"}) {
    Config c;
    c.server.replica = bad;
    auto s = Validate(c);
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_THAT(s.error().message(), ::testing::HasSubstr("server.replica"));
    EXPECT_THAT(s.error().message(), ::testing::HasSubstr(bad));
  }
}

TEST(ConfigTest, LogFormatTextByDefaultJsonOnRequest) {
  auto plain = Parse({});
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->config.log_format, "text");
  auto as_json = Parse({"--log-format", "json"});
  ASSERT_TRUE(as_json.ok()) << as_json.error().ToString();
  EXPECT_EQ(as_json->config.log_format, "json");
  EXPECT_TRUE(Validate(as_json->config).ok());
  auto bad = Parse({"--log-format", "xml"});
  ASSERT_TRUE(bad.ok());
  auto status = Validate(bad->config);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().message().find("log_format"), std::string::npos);
  EXPECT_FALSE(Parse({"--log-format"}).ok());
}

TEST(ConfigTest, ReadsConfigFileAndCommandLineWins) {
  std::string path = ::testing::TempDir() + "/sandbox-config-test.json";
  {
    std::ofstream out(path);
    out << R"({"server": {"listen": "127.0.0.1:7000"}, "log_level": "debug"})";
  }
  auto cl = Parse({"--config", path.c_str(), "--listen", "127.0.0.1:7001"});
  ASSERT_TRUE(cl.ok()) << cl.error().ToString();
  EXPECT_EQ(cl->config.server.listen_port, 7001);
  EXPECT_EQ(cl->config.log_level, "debug");
  std::remove(path.c_str());

  // --instance-id overrides the file, so a deployment can pin it whatever file is mounted.
  {
    std::ofstream out(path);
    out << R"({"instance_id": "from-file"})";
  }
  auto pinned = Parse({"--config", path.c_str(), "--instance-id", "compose"});
  ASSERT_TRUE(pinned.ok()) << pinned.error().ToString();
  EXPECT_EQ(pinned->config.instance_id, "compose");
  std::remove(path.c_str());
  EXPECT_FALSE(Parse({"--instance-id"}).ok());

  auto missing = Parse({"--config", "/nonexistent/sandbox.json"});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message().find("/nonexistent/sandbox.json"), std::string::npos);
}

// The files shipped for the compose deployment must stay loadable as the configuration grows.
TEST(ConfigTest, ShippedDeploymentConfigsAreValid) {
  const char* source_dir = std::getenv("SANDBOX_SOURCE_DIR");
  ASSERT_NE(source_dir, nullptr) << "SANDBOX_SOURCE_DIR is not set";
  for (const char* name : {"config.default.json", "config.example.json"}) {
    std::string path = std::string(source_dir) + "/deploy/" + name;
    // As compose.yaml runs it, with a token because it listens beyond loopback.
    auto cl =
        Parse({"--listen", "0.0.0.0:8080", "--instance-id", "compose", "--config", path.c_str()},
              {{"SANDBOX_MCP_TOKEN", "0123456789abcdef"}});
    ASSERT_TRUE(cl.ok()) << name << ": " << cl.error().ToString();
    auto valid = Validate(cl->config);
    EXPECT_TRUE(valid.ok()) << name << ": " << valid.error().ToString();
    EXPECT_EQ(cl->config.instance_id, "compose");
  }
}

TEST(ConfigTest, LoopbackDetection) {
  EXPECT_TRUE(IsLoopbackHost("127.0.0.1"));
  EXPECT_TRUE(IsLoopbackHost("127.1.2.3"));
  EXPECT_TRUE(IsLoopbackHost("localhost"));
  EXPECT_TRUE(IsLoopbackHost("::1"));
  EXPECT_TRUE(IsLoopbackHost("[::1]"));
  EXPECT_FALSE(IsLoopbackHost("0.0.0.0"));
  EXPECT_FALSE(IsLoopbackHost("10.0.0.1"));
  // A name that only starts like a loopback address resolves wherever its owner points it.
  EXPECT_FALSE(IsLoopbackHost("127.0.0.1.example.com"));
  EXPECT_FALSE(IsLoopbackHost("127.example.com"));
}

// docker.engines: several engines, each named; docker.host and tls_* stay the one-engine
// shorthand, and EffectiveEngines() is the list either way (docs/scale-out.md section 3).
TEST(EngineConfigTest, EnginesAreReadAndTheShorthandIsOneEngineNamedLocal) {
  const Config defaults;
  ASSERT_EQ(EffectiveEngines(defaults.docker).size(), 1u);
  const EngineConfig local = EffectiveEngines(defaults.docker).front();
  EXPECT_EQ(local.name, "local");
  EXPECT_EQ(local.host, "unix:///var/run/docker.sock");
  EXPECT_TRUE(local.tls_ca.empty());
  EXPECT_EQ(PoolEngineNames(defaults.pools[0], defaults.docker), std::vector<std::string>{"local"});

  auto tcp = ApplyJson(Config{}, json::parse(R"({"docker": {"host": "tcp://10.0.0.5:2376",
      "tls_ca": "/c/ca.pem", "tls_cert": "/c/cert.pem", "tls_key": "/c/key.pem"}})"));
  ASSERT_TRUE(tcp.ok()) << tcp.error().ToString();
  EXPECT_TRUE(Validate(*tcp).ok());
  const auto shorthand = EffectiveEngines(tcp->docker);
  ASSERT_EQ(shorthand.size(), 1u);
  EXPECT_EQ(shorthand[0].name, "local");
  EXPECT_EQ(shorthand[0].host, "tcp://10.0.0.5:2376");
  EXPECT_EQ(shorthand[0].tls_ca, "/c/ca.pem");
  EXPECT_EQ(shorthand[0].tls_cert, "/c/cert.pem");
  EXPECT_EQ(shorthand[0].tls_key, "/c/key.pem");

  auto cfg = ApplyJson(Config{}, json::parse(R"({"docker": {"engines": [
      {"name": "main", "host": "unix:///var/run/docker.sock"},
      {"name": "box-2", "host": "tcp://10.0.0.7:2376", "tls_ca": "/t/ca.pem",
       "tls_cert": "/t/cert.pem", "tls_key": "/t/key.pem"},
      {"name": "podman", "host": "unix:///run/podman.sock",
       "seccomp_profile_path": "/etc/sandbox/seccomp.json"}]},
    "pools": [{"name": "default"}, {"name": "gpu", "engines": ["box-2"], "min_idle": 0}]})"));
  ASSERT_TRUE(cfg.ok()) << cfg.error().ToString();
  EXPECT_TRUE(Validate(*cfg).ok()) << Validate(*cfg).error().ToString();
  const auto engines = EffectiveEngines(cfg->docker);
  ASSERT_EQ(engines.size(), 3u);
  EXPECT_EQ(engines[0].name, "main");
  EXPECT_EQ(engines[1].host, "tcp://10.0.0.7:2376");
  EXPECT_EQ(engines[1].tls_key, "/t/key.pem");
  EXPECT_EQ(engines[2].seccomp_profile_path, "/etc/sandbox/seccomp.json");
  EXPECT_EQ(PoolEngineNames(cfg->pools[0], cfg->docker),
            (std::vector<std::string>{"main", "box-2", "podman"}));
  EXPECT_EQ(PoolEngineNames(cfg->pools[1], cfg->docker), std::vector<std::string>{"box-2"});

  auto typo = ApplyJson(Config{}, json::parse(R"({"docker": {"engines": [{"nmae": "e1"}]}})"));
  ASSERT_FALSE(typo.ok());
  EXPECT_THAT(typo.error().message(), ::testing::HasSubstr("docker.engines[0].nmae"));
  auto not_a_list = ApplyJson(Config{}, json::parse(R"({"docker": {"engines": {"e1": {}}}})"));
  ASSERT_FALSE(not_a_list.ok());
  EXPECT_THAT(not_a_list.error().message(), ::testing::HasSubstr("docker.engines"));
}

// Two ways to say which engines there are is refused, even where the shorthand repeats its
// default: the file's reader sees the keys, Validate() the values.
TEST(EngineConfigTest, TheShorthandTogetherWithEnginesIsRefused) {
  for (const char* key : {"host", "tls_ca", "tls_cert", "tls_key"}) {
    json doc =
        json::parse(R"({"docker": {"engines": [{"name": "e1", "host": "unix:///run/e1.sock"}]}})");
    doc["docker"][key] = std::string(key) == "host" ? "unix:///var/run/docker.sock" : "/x.pem";
    auto both = ApplyJson(Config{}, doc);
    ASSERT_FALSE(both.ok()) << key;
    EXPECT_THAT(both.error().message(), ::testing::HasSubstr(std::string("docker.") + key));
    EXPECT_THAT(both.error().message(), ::testing::HasSubstr("docker.engines"));
  }
  // An empty list is the shorthand's own (the documented whole file shows both).
  auto empty = ApplyJson(Config{}, json::parse(R"({"docker": {"engines": [],
      "host": "unix:///run/other.sock"}})"));
  ASSERT_TRUE(empty.ok()) << empty.error().ToString();
  EXPECT_TRUE(Validate(*empty).ok());
  EXPECT_EQ(EffectiveEngines(empty->docker).front().host, "unix:///run/other.sock");

  EngineConfig e1;
  e1.name = "e1";
  e1.host = "unix:///run/e1.sock";
  Config host;
  host.docker.engines = {e1};
  host.docker.host = "unix:///run/other.sock";
  auto refused = Validate(host);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.error().message(), ::testing::HasSubstr("configuration docker.host"));
  EXPECT_THAT(refused.error().message(), ::testing::HasSubstr("docker.engines"));
  Config tls;
  tls.docker.engines = {e1};
  tls.docker.tls_ca = "/x.pem";
  refused = Validate(tls);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.error().message(), ::testing::HasSubstr("docker.tls_*"));
}

// Every refusal of an engine names its field.
TEST(EngineConfigTest, EachBadEngineIsRefusedNamingTheField) {
  auto engine = [](const std::string& name, const std::string& host) {
    EngineConfig e;
    e.name = name;
    e.host = host;
    return e;
  };
  auto with_tls = [](EngineConfig e) {
    e.tls_ca = "/t/ca.pem";
    e.tls_cert = "/t/cert.pem";
    e.tls_key = "/t/key.pem";
    return e;
  };
  struct Case {
    const char* field;  // expected in the message
    const char* what;   // expected in the message too
    std::vector<EngineConfig> engines;
  };
  const std::vector<Case> cases = {
      {"docker.engines[0].name", "1-32 characters", {engine("", "unix:///a")}},
      {"docker.engines[0].name", "1-32 characters", {engine("Box1", "unix:///a")}},
      {"docker.engines[0].name", "1-32 characters", {engine("box_1", "unix:///a")}},
      {"docker.engines[0].name",
       "1-32 characters",
       {engine("a123456789b123456789c123456789d12", "unix:///a")}},
      {"docker.engines[1].name",
       "duplicate engine \"e1\"",
       {engine("e1", "unix:///a"), engine("e1", "unix:///b")}},
      {"docker.engines[0].host", "unix:///path or tcp://host:port", {engine("e1", "")}},
      {"docker.engines[0].host",
       "unix:///path or tcp://host:port",
       {engine("e1", "http://10.0.0.5:2375")}},
      {"docker.engines[0].host", "beyond loopback", {engine("e1", "tcp://10.0.0.5:2375")}},
      {"docker.engines[0].host", "beyond loopback", {engine("e1", "tcp://box.example:2375")}},
      {"docker.engines[0].host", "beyond loopback", {engine("e1", "tcp://127.evil.example:2375")}},
      {"docker.engines[0].host", "beyond loopback", {engine("e1", "tcp://[fd00::5]:2375")}},
      {"docker.engines[0].tls_*", "together", {[&] {
         auto e = with_tls(engine("e1", "tcp://10.0.0.5:2376"));
         e.tls_key.clear();
         return e;
       }()}},
      {"docker.engines[0].tls_*", "together", {[&] {
         auto e = engine("e1", "tcp://127.0.0.1:2376");
         e.tls_ca = "/t/ca.pem";
         return e;
       }()}},
      {"docker.engines[0].tls_*", "tcp:// engines only", {with_tls(engine("e1", "unix:///a"))}},
      {"docker.engines[0].seccomp_profile_path", "absolute path", {[&] {
         auto e = engine("e1", "unix:///a");
         e.seccomp_profile_path = "seccomp.json";
         return e;
       }()}},
  };
  for (const auto& c : cases) {
    Config config;
    config.docker.engines = c.engines;
    auto refused = Validate(config);
    ASSERT_FALSE(refused.ok()) << c.field << " " << c.what;
    EXPECT_THAT(refused.error().message(),
                ::testing::HasSubstr(std::string("configuration ") + c.field + ":"));
    EXPECT_THAT(refused.error().message(), ::testing::HasSubstr(c.what));
  }

  // What is allowed: loopback tcp:// without TLS (the test engines of item 6 use TLS anyway),
  // any tcp:// with all three files, names at the bounds.
  Config fine;
  fine.docker.engines = {
      engine("a", "tcp://127.0.0.1:2375"), engine("b", "tcp://localhost:2375"),
      engine("c", "tcp://[::1]:2375"),
      with_tls(engine("a123456789b123456789c123456789d1", "tcp://10.0.0.5:2376")),
      engine("0-x", "unix:///run/x.sock")};
  EXPECT_TRUE(Validate(fine).ok()) << Validate(fine).error().ToString();
}

// The shorthand is checked as the engine it is, its refusals naming docker.host and tls_*.
TEST(EngineConfigTest, TheShorthandIsCheckedLikeAnEngine) {
  Config plain;
  plain.docker.host = "tcp://10.0.0.5:2375";
  auto refused = Validate(plain);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.error().message(), ::testing::HasSubstr("configuration docker.host:"));
  EXPECT_THAT(refused.error().message(), ::testing::HasSubstr("beyond loopback"));
  Config half;
  half.docker.host = "tcp://10.0.0.5:2376";
  half.docker.tls_ca = "/t/ca.pem";
  refused = Validate(half);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.error().message(), ::testing::HasSubstr("configuration docker.tls_*:"));
  Config scheme;
  scheme.docker.host = "/var/run/docker.sock";
  refused = Validate(scheme);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.error().message(), ::testing::HasSubstr("configuration docker.host:"));
  Config loopback;
  loopback.docker.host = "tcp://127.0.0.1:2375";
  EXPECT_TRUE(Validate(loopback).ok());
}

// pools[].engines names configured engines only, each once; empty means every engine.
TEST(EngineConfigTest, PoolEnginesNameConfiguredEnginesOnce) {
  EngineConfig e1;
  e1.name = "e1";
  e1.host = "unix:///run/e1.sock";
  EngineConfig e2 = e1;
  e2.name = "e2";
  Config c;
  c.docker.engines = {e1, e2};
  c.pools[0].engines = {"e2", "e1"};
  EXPECT_TRUE(Validate(c).ok());
  EXPECT_EQ(PoolEngineNames(c.pools[0], c.docker), (std::vector<std::string>{"e2", "e1"}));

  c.pools[0].engines = {"e1", "e3"};
  auto refused = Validate(c);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.error().message(),
              ::testing::HasSubstr("configuration pools[0].engines[1]:"));
  EXPECT_THAT(refused.error().message(), ::testing::HasSubstr("no engine named \"e3\""));
  EXPECT_THAT(refused.error().message(), ::testing::HasSubstr("configured: e1, e2"));

  c.pools[0].engines = {"e1", "e1"};
  refused = Validate(c);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.error().message(),
              ::testing::HasSubstr("configuration pools[0].engines[1]:"));
  EXPECT_THAT(refused.error().message(), ::testing::HasSubstr("listed twice"));

  // With the shorthand the one engine is "local".
  Config shorthand;
  shorthand.pools[0].engines = {"local"};
  EXPECT_TRUE(Validate(shorthand).ok());
  shorthand.pools[0].engines = {"e1"};
  refused = Validate(shorthand);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.error().message(), ::testing::HasSubstr("configured: local"));

  auto read = ApplyJson(Config{}, json::parse(R"({"pools": [{"engines": ["local"]}]})"));
  ASSERT_TRUE(read.ok()) << read.error().ToString();
  EXPECT_EQ(read->pools[0].engines, std::vector<std::string>{"local"});
  auto wrong = ApplyJson(Config{}, json::parse(R"({"pools": [{"engines": "local"}]})"));
  ASSERT_FALSE(wrong.ok());
  EXPECT_THAT(wrong.error().message(), ::testing::HasSubstr("pools[0].engines"));
}

TEST(ConfigTest, AdminTokensAreLongAndNeverRunTokens) {
  auto cfg = ApplyJson(Config{}, json::parse(R"({"server": {"token": "run-token-0123456789",
      "tokens": {"alice": "alice-token-0123456789"},
      "admin_tokens": {"ops": "admin-token-0123456789"}}})"));
  ASSERT_TRUE(cfg.ok()) << cfg.error().ToString();
  EXPECT_EQ(cfg->server.admin_tokens.at("ops"), "admin-token-0123456789");
  EXPECT_TRUE(Validate(*cfg).ok());

  Config short_token = *cfg;
  short_token.server.admin_tokens = {{"ops", "short"}};
  EXPECT_THAT(Validate(short_token).error().message(),
              ::testing::HasSubstr("server.admin_tokens.ops: must be at least 16 characters"));
  Config run_token = *cfg;
  run_token.server.admin_tokens = {{"ops", "run-token-0123456789"}};
  EXPECT_THAT(Validate(run_token).error().message(),
              ::testing::HasSubstr("server.admin_tokens.ops: equals server.token"));
  Config named_run_token = *cfg;
  named_run_token.server.admin_tokens = {{"ops", "alice-token-0123456789"}};
  EXPECT_THAT(Validate(named_run_token).error().message(),
              ::testing::HasSubstr("equals server.tokens.alice"));
}

TEST(ConfigTest, AutoscaleParsesWithDefaultsAndIsValidated) {
  auto cfg = ApplyJson(Config{}, json::parse(R"({"pools": [{"name": "default",
      "autoscale": {"enabled": true, "min_idle_ceiling": 6, "window_s": 30}}]})"));
  ASSERT_TRUE(cfg.ok()) << cfg.error().ToString();
  const auto& a = cfg->pools[0].autoscale;
  EXPECT_TRUE(a.enabled);
  EXPECT_EQ(a.min_idle_floor, 1);  // default
  EXPECT_EQ(a.min_idle_ceiling, 6);
  EXPECT_EQ(a.headroom, 1);  // default
  EXPECT_EQ(a.window, std::chrono::seconds(30));
  EXPECT_TRUE(Validate(*cfg).ok());
  EXPECT_FALSE(Config{}.pools[0].autoscale.enabled);  // off by default

  Config over = *cfg;
  over.pools[0].autoscale.min_idle_ceiling = 9;  // max_total 8
  EXPECT_THAT(Validate(over).error().message(),
              ::testing::HasSubstr("pools[0].autoscale.min_idle_ceiling"));
  Config floor = *cfg;
  floor.pools[0].autoscale.min_idle_floor = 7;
  EXPECT_THAT(Validate(floor).error().message(),
              ::testing::HasSubstr("pools[0].autoscale.min_idle_floor"));
  auto typo = ApplyJson(Config{}, json::parse(R"({"pools": [{"autoscale": {"window": 3}}]})"));
  ASSERT_FALSE(typo.ok());
  EXPECT_THAT(typo.error().message(), ::testing::HasSubstr("pools[0].autoscale.window"));
}

}  // namespace
}  // namespace sandbox::config

namespace sandbox::config {
namespace {

TEST(ConfigTest, RestartGraceDefaultsToFiveMinutesAndIsBounded) {
  Config c;
  EXPECT_EQ(c.sessions.restart_grace, std::chrono::seconds(300));
  auto cfg = ApplyJson(Config{}, nlohmann::json::parse(R"({"sessions": {"restart_grace_s": 0}})"));
  ASSERT_TRUE(cfg.ok()) << cfg.error().ToString();
  EXPECT_EQ(cfg->sessions.restart_grace, std::chrono::seconds(0));
  EXPECT_TRUE(Validate(*cfg).ok());
  c.sessions.restart_grace = std::chrono::seconds(-1);
  auto bad = Validate(c);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("sessions.restart_grace_s"), std::string::npos);
  c.sessions.restart_grace = std::chrono::hours(25);
  EXPECT_FALSE(Validate(c).ok());
}

TEST(ConfigTest, TasksSectionIsReadAndEachBoundChecked) {
  auto cfg = ApplyJson(Config{}, nlohmann::json::parse(R"J({"tasks": {"ttl_s": 600,
      "poll_interval_ms": 250, "max_running_per_principal": 2, "max_per_principal": 5,
      "max_running": 4, "live_output_bytes": 4096, "max_result_bytes_per_principal": 2097152,
      "max_result_bytes": 4194304}})J"));
  ASSERT_TRUE(cfg.ok()) << cfg.error().ToString();
  EXPECT_EQ(cfg->tasks.ttl, std::chrono::seconds(600));
  EXPECT_EQ(cfg->tasks.poll_interval, std::chrono::milliseconds(250));
  EXPECT_EQ(cfg->tasks.max_running_per_principal, 2);
  EXPECT_EQ(cfg->tasks.max_per_principal, 5);
  EXPECT_EQ(cfg->tasks.max_running, 4);
  EXPECT_EQ(cfg->tasks.live_output_bytes, 4096);
  EXPECT_EQ(cfg->tasks.max_result_bytes_per_principal, 2LL << 20);
  EXPECT_EQ(cfg->tasks.max_result_bytes, 4LL << 20);
  EXPECT_TRUE(Validate(*cfg).ok());
  EXPECT_EQ(Config{}.tasks, TasksConfig{});
  auto typo = ApplyJson(Config{}, nlohmann::json::parse(R"J({"tasks": {"ttl": 5}})J"));
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.error().message().find("tasks.ttl"), std::string::npos);
  const std::pair<const char*, std::function<void(TasksConfig&)>> bad[] = {
      {"tasks.ttl_s", [](TasksConfig& t) { t.ttl = std::chrono::seconds(0); }},
      {"tasks.poll_interval_ms", [](TasksConfig& t) { t.poll_interval = {}; }},
      {"tasks.max_running", [](TasksConfig& t) { t.max_running = 0; }},
      {"tasks.max_running_per_principal", [](TasksConfig& t) { t.max_running_per_principal = 65; }},
      {"tasks.max_per_principal", [](TasksConfig& t) { t.max_per_principal = 7; }},
      {"tasks.live_output_bytes", [](TasksConfig& t) { t.live_output_bytes = 10; }},
      {"tasks.max_result_bytes", [](TasksConfig& t) { t.max_result_bytes = 1000; }},
      {"tasks.max_result_bytes_per_principal",
       [](TasksConfig& t) { t.max_result_bytes_per_principal = t.max_result_bytes + 1; }},
      {"tasks.max_result_bytes_per_principal",
       [](TasksConfig& t) { t.max_result_bytes_per_principal = 1000; }}};
  for (const auto& [field, breaks] : bad) {
    Config c;
    breaks(c.tasks);
    auto refused = Validate(c);
    ASSERT_FALSE(refused.ok()) << field;
    EXPECT_NE(refused.error().message().find(field), std::string::npos)
        << refused.error().ToString();
  }
}

// Upper bounds (config/bounds.h): every value that costs threads, containers or descriptors has
// one, and a refusal names the key, the value and the bound.
TEST(ConfigBoundsTest, EachBoundedValueIsRefusedAboveItsBoundNamingKeyValueAndBound) {
  struct Over {
    std::string key;
    std::int64_t bound;
    void (*set)(Config&, std::int64_t);
  };
  const std::vector<Over> over = {
      {"server.http_threads", kMaxHttpThreads,
       [](Config& c, std::int64_t v) { c.server.http_threads = static_cast<int>(v); }},
      {"server.max_streams", kMaxStreams,
       [](Config& c, std::int64_t v) { c.server.max_streams = static_cast<int>(v); }},
      {"server.max_connections", kMaxConnections,
       [](Config& c, std::int64_t v) {
         c.server.max_connections = static_cast<int>(v);
         c.server.max_connections_per_ip = 1;
       }},
      {"server.max_mcp_sessions", kMaxMcpSessions,
       [](Config& c, std::int64_t v) { c.server.max_mcp_sessions = static_cast<int>(v); }},
      {"sessions.max_total", kMaxSessions,
       [](Config& c, std::int64_t v) { c.sessions.max_total = static_cast<int>(v); }},
      {"sessions.max_per_principal", kMaxSessions,
       [](Config& c, std::int64_t v) { c.sessions.max_per_principal = static_cast<int>(v); }},
      {"tasks.max_running", kMaxTasksRunning,
       [](Config& c, std::int64_t v) {
         c.tasks.max_running = static_cast<int>(v);
         c.tasks.max_running_per_principal = 1;
       }},
      {"tasks.max_per_principal", kMaxTasksPerPrincipal,
       [](Config& c, std::int64_t v) { c.tasks.max_per_principal = static_cast<int>(v); }},
      {"pools[0].max_total", kMaxPoolTotal,
       [](Config& c, std::int64_t v) { c.pools[0].max_total = static_cast<int>(v); }},
      {"pools[0].max_concurrent_starts", kMaxConcurrentStarts,
       [](Config& c, std::int64_t v) { c.pools[0].max_concurrent_starts = static_cast<int>(v); }},
      {"pools", kMaxPools,
       [](Config& c, std::int64_t v) {
         for (std::int64_t i = 1; i < v; ++i) {
           PoolConfig p;
           p.name = "p" + std::to_string(i);
           p.min_idle = 0;
           p.max_concurrent_starts = 1;
           c.pools.push_back(p);
         }
       }},
  };
  for (const auto& o : over) {
    Config at;
    o.set(at, o.bound);
    EXPECT_TRUE(Validate(at).ok()) << o.key << " at its bound: " << Validate(at).error().message();
    Config c;
    o.set(c, o.bound + 1);
    auto refused = Validate(c);
    ASSERT_FALSE(refused.ok()) << o.key;
    const std::string expected = "configuration " + o.key + ": " + std::to_string(o.bound + 1) +
                                 " is above its bound " + std::to_string(o.bound) + " (";
    EXPECT_EQ(refused.error().message().rfind(expected, 0), 0u) << refused.error().message();
  }
}

// Every value within its ceiling, together past the host's budget: refused, naming the total,
// each part and the host's limit; half the host's task limit is the budget.
TEST(ConfigBoundsTest, TheThreadCostMustFitHalfTheHostsTaskLimit) {
  Config c;
  const ThreadCost cost = ThreadCostOf(c);
  // The defaults: 64 HTTP threads and 2 per stream slot (256), 2 per running task (64), and the
  // default pool's run and session pools (2 + 2 starts each).
  EXPECT_EQ(cost.http, 64 + 2 * 256);
  EXPECT_EQ(cost.tasks, 2 * 64);
  EXPECT_EQ(cost.pools, 8);
  EXPECT_EQ(cost.total(), kBaseThreads + 64 + 512 + 128 + 8);
  EXPECT_TRUE(Validate(c, HostLimits{2 * cost.total(), "RLIMIT_NPROC"}).ok());
  auto refused = Validate(c, HostLimits{2 * cost.total() - 2, "RLIMIT_NPROC"});
  ASSERT_FALSE(refused.ok());
  const std::string& message = refused.error().message();
  EXPECT_NE(message.find("configuration threads: the server would run up to " +
                         std::to_string(cost.total())),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("thread budget " + std::to_string(cost.total() - 1)), std::string::npos)
      << message;
  EXPECT_NE(message.find("RLIMIT_NPROC"), std::string::npos) << message;
  // Without sessions the session pools cost nothing; in stdio mode no HTTP threads.
  c.sessions.enabled = false;
  EXPECT_EQ(ThreadCostOf(c).pools, 4);
  c.server.stdio = true;
  EXPECT_EQ(ThreadCostOf(c).http, 0);
  // An unknown host (0): the fixed ceiling; a large one: the ceiling too.
  EXPECT_EQ(ThreadBudget(HostLimits{}), kMaxServerThreads);
  EXPECT_EQ(ThreadBudget(HostLimits{4194304, "kernel.pid_max"}), kMaxServerThreads);
  EXPECT_EQ(ThreadBudget(HostLimits{1000, "RLIMIT_NPROC"}), 500);
}

// This host's limits are read: some task limit is always known on Linux (pid_max at least).
TEST(ConfigBoundsTest, ReadsThisHostsTaskLimit) {
  const HostLimits host = ReadHostLimits();
  EXPECT_GT(host.max_tasks, 0);
  EXPECT_FALSE(host.source.empty());
  EXPECT_LE(ThreadBudget(host), kMaxServerThreads);
}

TEST(ConfigTest, InteractiveInputIsAPoolBoolOffByDefault) {
  EXPECT_FALSE(PoolConfig{}.interactive_input);
  auto cfg = ApplyJson(Config{}, nlohmann::json::parse(
                                     R"J({"pools": [{"name": "p", "interactive_input": true}]})J"));
  ASSERT_TRUE(cfg.ok()) << cfg.error().ToString();
  EXPECT_TRUE(cfg->pools[0].interactive_input);
  auto wrong = ApplyJson(
      Config{},
      nlohmann::json::parse(R"J({"pools": [{"name": "p", "interactive_input": "yes"}]})J"));
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.error().message().find("pools[0].interactive_input"), std::string::npos);
}

}  // namespace
}  // namespace sandbox::config

namespace sandbox::config {
namespace {

TEST(MemoryConfigTest, InflightBytesDerivedFromTheMachineWithinBounds) {
  Config config;
  EXPECT_EQ(InflightBytes(config, 24LL << 30), 6LL << 30);
  EXPECT_EQ(InflightBytes(config, 0), 256LL << 20);          // unknown machine: the floor
  EXPECT_EQ(InflightBytes(config, 512LL << 30), 8LL << 30);  // the ceiling
  config.memory.inflight_bytes = 100LL << 20;
  EXPECT_EQ(InflightBytes(config, 24LL << 30), 100LL << 20);
}

TEST(MemoryConfigTest, InflightBytesIsValidated) {
  Config config;
  config.memory.inflight_bytes = 1LL << 20;
  auto status = Validate(config);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().message().find("memory.inflight_bytes"), std::string::npos);
  config.memory.inflight_bytes = 64LL << 20;
  EXPECT_TRUE(Validate(config).ok());
  auto doc = nlohmann::json::parse(
      R"({"memory": {"inflight_bytes": 134217728, "inflight_wait_ms": 100}})");
  auto applied = ApplyJson(Config{}, doc);
  ASSERT_TRUE(applied.ok());
  EXPECT_EQ(applied->memory.inflight_bytes, 128LL << 20);
  EXPECT_EQ(applied->memory.inflight_wait.count(), 100);
  EXPECT_FALSE(ApplyJson(Config{}, nlohmann::json::parse(R"({"memory": {"bogus": 1}})")).ok());
}

TEST(MemoryConfigTest, StreamQueueBytesIsReadAndBounded) {
  EXPECT_EQ(Config{}.memory.stream_queue_bytes, 4LL << 20);
  auto applied =
      ApplyJson(Config{}, nlohmann::json::parse(R"({"memory": {"stream_queue_bytes": 65536}})"));
  ASSERT_TRUE(applied.ok());
  EXPECT_EQ(applied->memory.stream_queue_bytes, 64LL << 10);
  EXPECT_TRUE(Validate(*applied).ok());
  for (std::int64_t bad : {std::int64_t{1000}, std::int64_t{512} << 20}) {
    Config config;
    config.memory.stream_queue_bytes = bad;
    auto status = Validate(config);
    ASSERT_FALSE(status.ok()) << bad;
    EXPECT_NE(status.error().message().find("memory.stream_queue_bytes"), std::string::npos);
  }
  Config over;  // more than the whole in-flight budget
  over.memory.inflight_bytes = 64LL << 20;
  over.memory.stream_queue_bytes = 128LL << 20;
  EXPECT_FALSE(Validate(over).ok());
}

TEST(OutputConfigTest, FigureByteBoundsAreReadAndValidated) {
  auto applied = ApplyJson(Config{}, nlohmann::json::parse(R"({"output": {"max_figure_bytes":
      1048576, "max_figures_bytes": 2097152}})"));
  ASSERT_TRUE(applied.ok());
  EXPECT_EQ(applied->output.max_figure_bytes, 1LL << 20);
  EXPECT_EQ(applied->output.max_figures_bytes, 2LL << 20);
  EXPECT_TRUE(Validate(*applied).ok());
  Config config;
  config.output.max_figures_bytes = config.output.max_figure_bytes - 1;  // below one figure
  auto status = Validate(config);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().message().find("output.max_figures_bytes"), std::string::npos);
  config = Config{};
  config.output.max_figure_bytes = 65LL << 20;  // past the upper bound
  status = Validate(config);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().message().find("output.max_figure_bytes"), std::string::npos);
}

}  // namespace
}  // namespace sandbox::config
