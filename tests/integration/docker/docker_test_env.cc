#include "docker_test_env.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace sandbox::docker::testing {
namespace {

// Registered before main by gtest's own mechanism; gtest owns and deletes it.
DockerEnvironment* const g_env =
    static_cast<DockerEnvironment*>(::testing::AddGlobalTestEnvironment(new DockerEnvironment));

}  // namespace

DockerEnvironment& Env() { return *g_env; }

std::string TestImage() {
  const char* image = std::getenv("SANDBOX_IMAGE");
  return image != nullptr && image[0] != '\0' ? image : "sandbox-mcp-python:latest";
}

ContainerSpec TestSpec(std::vector<std::string> cmd) {
  ContainerSpec spec;
  spec.image = TestImage();
  spec.cmd = std::move(cmd);
  spec.labels = {{kManagedLabel, "true"}, {kTestLabel, "true"}, {kRunLabel, Env().run_id()}};
  spec.host_config.network_mode = "none";
  return spec;
}

void DockerEnvironment::SetUp() {
  run_id_ = "docker-" + std::to_string(::getpid()) + "-" +
            std::to_string(std::chrono::system_clock::now().time_since_epoch().count());
  curl_ = std::make_unique<CurlGlobal>();
  auto options = TransportOptionsFromEnv();
  if (!options.ok()) {
    connect_error_ = options.error().ToString();
    ADD_FAILURE() << connect_error_;
    return;
  }
  ClientOptions client_options;
  client_options.transport = *options;
  auto client = Client::Connect(*curl_, client_options);
  if (!client.ok()) {
    connect_error_ = client.error().ToString();
    ADD_FAILURE() << "cannot connect to the Docker engine: " << connect_error_;
    return;
  }
  client_ = std::move(*client);
  RemoveTestContainers(/*stale_after_s=*/15 * 60);  // leftovers of an earlier crashed run
}

void DockerEnvironment::TearDown() {
  if (client_) {
    int removed = RemoveTestContainers();
    if (removed > 0) std::fprintf(stderr, "removed %d leftover test container(s)\n", removed);
  }
  client_.reset();
  curl_.reset();
}

int DockerEnvironment::RemoveTestContainers(std::int64_t stale_after_s) {
  ListOptions list;
  list.filters = {{"label", {std::string(kTestLabel) + "=true"}}};
  if (stale_after_s == 0) list.filters["label"].push_back(std::string(kRunLabel) + "=" + run_id_);
  auto found = client_->ListContainers(list);
  if (!found.ok()) {
    ADD_FAILURE() << "listing test containers: " << found.error().ToString();
    return 0;
  }
  int removed = 0;
  auto now = std::chrono::duration_cast<std::chrono::seconds>(
                 std::chrono::system_clock::now().time_since_epoch())
                 .count();
  for (const auto& c : *found) {
    if (stale_after_s > 0 && now - c.created < stale_after_s) continue;
    Status s = client_->RemoveContainer(c.id, RemoveOptions{true, true});
    if (s.ok()) {
      ++removed;
      std::fprintf(stderr, "removed leftover test container %s (%s, %s)\n", c.id.c_str(),
                   c.names.empty() ? "" : c.names[0].c_str(), c.status.c_str());
    }
  }
  return removed;
}

ContainerGuard::~ContainerGuard() {
  if (id_.empty() || Env().client() == nullptr) return;
  Status s = Env().client()->RemoveContainer(id_, RemoveOptions{true, true});
  if (!s.ok() && s.error().code() != ErrorCode::kNotFound) {
    ADD_FAILURE() << "removing container " << id_ << ": " << s.error().ToString();
  }
}

std::unique_ptr<ContainerGuard> DockerTest::Create(const ContainerSpec& spec) {
  auto created = client().CreateContainer(spec);
  EXPECT_TRUE(created.ok()) << created.error().ToString();
  if (!created.ok()) return nullptr;
  return std::make_unique<ContainerGuard>(created->id);
}

}  // namespace sandbox::docker::testing
