#include "sandbox/metrics/metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "sandbox/metrics/metered_services.h"
#include "support/fake_service.h"

namespace sandbox::metrics {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

exec::RunResult MakeResult(exec::Verdict verdict, std::string out) {
  exec::RunResult r;
  r.verdict = verdict;
  r.duration_ms = 40;
  r.stdout_text = std::move(out);
  r.pool = "default";
  r.images.resize(2);
  return r;
}

TEST(MetricsTest, RunsAreCountedByPoolModeKindAndVerdict) {
  Metrics m({"1.2.3"});
  m.RecordRun(RunKind::kOneShot, "default", "recycle", MakeResult(exec::Verdict::kOk, "hello"),
              std::chrono::milliseconds(50));
  m.RecordRun(RunKind::kOneShot, "default", "recycle", MakeResult(exec::Verdict::kOk, "x"),
              std::chrono::milliseconds(70));
  m.RecordRun(RunKind::kSession, "default/sessions", "fresh",
              MakeResult(exec::Verdict::kTimeout, ""), std::chrono::seconds(6));
  m.RecordRunError(RunKind::kOneShot, ErrorCode::kRateLimited);
  const std::string text = m.Render({});
  EXPECT_THAT(text, HasSubstr("# TYPE sandbox_runs_total counter"));
  EXPECT_THAT(
      text,
      HasSubstr(
          R"(sandbox_runs_total{kind="oneshot",mode="recycle",pool="default",verdict="ok"} 2)"));
  EXPECT_THAT(
      text,
      HasSubstr(
          R"(sandbox_runs_total{kind="session",mode="fresh",pool="default/sessions",verdict="timeout"} 1)"));
  EXPECT_THAT(text, HasSubstr(R"(sandbox_run_errors_total{code="rate_limited",kind="oneshot"} 1)"));
  EXPECT_THAT(text, HasSubstr("# TYPE sandbox_run_duration_seconds histogram"));
  EXPECT_THAT(
      text,
      HasSubstr(
          R"(sandbox_run_duration_seconds_count{kind="oneshot",mode="recycle",pool="default"} 2)"));
  // 50 ms and 70 ms: both at or below the 0.1 s bound.
  EXPECT_THAT(
      text,
      HasSubstr(
          R"(sandbox_run_duration_seconds_bucket{kind="oneshot",mode="recycle",pool="default",le="0.1"} 2)"));
  EXPECT_THAT(text,
              HasSubstr(R"(sandbox_run_output_bytes_total{pool="default",stream="stdout"} 6)"));
  EXPECT_THAT(text, HasSubstr(R"(sandbox_run_images_total{pool="default"} 4)"));
  EXPECT_THAT(text, HasSubstr(R"(sandbox_build_info{version="1.2.3"} 1)"));
}

TEST(MetricsTest, SnapshotStatesAreRendered) {
  Metrics m({"v"});
  Snapshot now;
  PoolSnapshot pool;
  pool.name = "default";
  pool.mode = "recycle";
  pool.idle = 3;
  pool.leased = 1;
  pool.waiting = 2;
  pool.created_total = 9;
  pool.start_failures_total = 1;
  now.pools.push_back(pool);
  now.sessions = SessionSnapshot{4, 10, 5, 1, 2};
  now.mcp_sessions = 7;
  now.streams_open = 2;
  now.stream_slots = 256;
  now.engines = {{"local", true}, {"e2", false}};
  now.excluded = {{"e2", "default"}};
  const std::string text = m.Render(now);
  EXPECT_THAT(text,
              HasSubstr(R"(sandbox_pool_sandboxes{mode="recycle",pool="default",state="idle"} 3)"));
  EXPECT_THAT(
      text, HasSubstr(R"(sandbox_pool_sandboxes{mode="recycle",pool="default",state="leased"} 1)"));
  EXPECT_THAT(text, HasSubstr(R"(sandbox_pool_waiting_requests{pool="default"} 2)"));
  EXPECT_THAT(
      text, HasSubstr(R"(sandbox_pool_container_starts_total{pool="default",result="failed"} 1)"));
  EXPECT_THAT(text, HasSubstr("sandbox_sessions 4"));
  EXPECT_THAT(text, HasSubstr("sandbox_sessions_created_total 10"));
  EXPECT_THAT(text, HasSubstr("sandbox_sessions_restored_total 2"));
  EXPECT_THAT(text, HasSubstr("sandbox_mcp_sessions 7"));
  EXPECT_THAT(text, HasSubstr("sandbox_http_streams 2"));
  EXPECT_THAT(text, HasSubstr(R"(sandbox_engine_up{engine="local"} 1)"));
  EXPECT_THAT(text, HasSubstr(R"(sandbox_engine_up{engine="e2"} 0)"));
  EXPECT_THAT(text, HasSubstr(R"(sandbox_engine_excluded{engine="e2",pool="default"} 1)"));
  EXPECT_THAT(text, HasSubstr("# TYPE process_resident_memory_bytes gauge"));
  EXPECT_THAT(text, HasSubstr("process_open_fds "));
}

TEST(MetricsTest, KeptTaskResultsAreRenderedOnlyWithATaskStore) {
  Metrics m({"v"});
  Snapshot now;
  EXPECT_THAT(m.Render(now), Not(HasSubstr("sandbox_task_result_bytes")));
  now.task_results = KeptResultsSnapshot{3 << 20, 512 << 20, 4};
  const std::string text = m.Render(now);
  EXPECT_THAT(text, HasSubstr("sandbox_task_result_bytes 3145728"));
  EXPECT_THAT(text, HasSubstr("sandbox_task_result_max_bytes 536870912"));
  EXPECT_THAT(text, HasSubstr("# TYPE sandbox_task_results_evicted_total counter"));
  EXPECT_THAT(text, HasSubstr("sandbox_task_results_evicted_total 4"));
}

TEST(MetricsTest, EngineCallsHttpRequestsStartsAndAcquires) {
  Metrics m({"v"});
  m.RecordEngineCall("local", "POST /containers/{id}/start", 204, std::chrono::milliseconds(3));
  m.RecordEngineCall("local", "GET /_ping", 0, std::chrono::seconds(2));
  m.RecordHttpRequest("/v1/execute", "POST", 200);
  m.RecordHttpRequest("other", "BREW", 404);
  m.RecordContainerStart("default", true, std::chrono::milliseconds(900));
  m.RecordAcquire("default", false, std::chrono::seconds(10));
  const std::string text = m.Render({});
  EXPECT_THAT(
      text,
      HasSubstr(
          R"(sandbox_engine_requests_total{engine="local",operation="POST /containers/{id}/start",status="204"} 1)"));
  EXPECT_THAT(
      text,
      HasSubstr(
          R"(sandbox_engine_requests_total{engine="local",operation="GET /_ping",status="0"} 1)"));
  EXPECT_THAT(
      text,
      HasSubstr(
          R"(sandbox_http_requests_total{method="POST",route="/v1/execute",status="200"} 1)"));
  // A made-up method does not become a label value of its own.
  EXPECT_THAT(
      text,
      HasSubstr(R"(sandbox_http_requests_total{method="other",route="other",status="404"} 1)"));
  EXPECT_THAT(text, Not(HasSubstr("BREW")));
  EXPECT_THAT(
      text,
      HasSubstr(
          R"(sandbox_pool_container_start_seconds_bucket{pool="default",result="ok",le="1"} 1)"));
  EXPECT_THAT(
      text,
      HasSubstr(R"(sandbox_pool_acquire_wait_seconds_count{pool="default",result="failed"} 1)"));
}

TEST(MetricsTest, RouteOfKeepsTheLabelSetBounded) {
  EXPECT_EQ(RouteOf("/admin/pools"), "/admin/pools");
  EXPECT_EQ(RouteOf("/admin/pools/default"), "/admin/pools/{name}");
  EXPECT_EQ(RouteOf("/admin/pools/default/drain"), "/admin/pools/{name}/drain");
  EXPECT_EQ(RouteOf("/admin/pools/default/other"), "other");
  EXPECT_EQ(RouteOf("/admin/pools//drain"), "other");
  EXPECT_EQ(RouteOf("/mcp"), "/mcp");
  EXPECT_EQ(RouteOf("/v1/execute"), "/v1/execute");
  EXPECT_EQ(RouteOf("/v1/sessions"), "/v1/sessions");
  EXPECT_EQ(RouteOf("/v1/sessions/abc123"), "/v1/sessions/{id}");
  EXPECT_EQ(RouteOf("/v1/sessions/abc123/files"), "/v1/sessions/{id}/files");
  EXPECT_EQ(RouteOf("/v1/sessions/abc123/files/dir/a.csv"), "/v1/sessions/{id}/files/{path}");
  EXPECT_EQ(RouteOf("/v1/sessions/"), "other");
  EXPECT_EQ(RouteOf("/wp-admin/setup.php"), "other");
  EXPECT_EQ(RouteOf("/metrics"), "/metrics");
}

TEST(MeteredRunsTest, RecordsResultsAndErrorsAndPassesThemOn) {
  Metrics m({"v"});
  sandbox::testing::FakeService inner;
  bool fail = false;
  inner.SetBehaviour([&fail](const exec::RunRequest&, exec::RunObserver&,
                             const exec::CancelToken&) -> Result<exec::RunResult> {
    if (fail) return Error(ErrorCode::kBusy, "no sandbox");
    return MakeResult(exec::Verdict::kError, "boom");
  });
  MeteredRuns runs(inner, m, {{"default", "fresh"}});
  exec::RunObserver observer;
  exec::CancelToken cancel;
  auto ok = runs.Run({}, observer, cancel);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->stdout_text, "boom");
  fail = true;
  auto busy = runs.Run({}, observer, cancel);
  ASSERT_FALSE(busy.ok());
  EXPECT_EQ(busy.error().code(), ErrorCode::kBusy);
  const std::string text = m.Render({});
  EXPECT_THAT(
      text,
      HasSubstr(
          R"(sandbox_runs_total{kind="oneshot",mode="fresh",pool="default",verdict="error"} 1)"));
  EXPECT_THAT(text, HasSubstr(R"(sandbox_run_errors_total{code="busy",kind="oneshot"} 1)"));
}

}  // namespace
}  // namespace sandbox::metrics
