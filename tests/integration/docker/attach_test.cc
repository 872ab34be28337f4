// Attach against the real engine: stdin hijack with separate stdout/stderr, output-only attach
// delivering output while the container runs, and waking a blocked reader.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "docker_test_env.h"

namespace sandbox::docker::testing {
namespace {

using namespace std::chrono_literals;

class AttachTest : public DockerTest {};

ContainerSpec StdinPythonSpec() {
  ContainerSpec spec = TestSpec({"python3", "-u", "-c", "import sys; exec(sys.stdin.read())"});
  spec.open_stdin = spec.attach_stdin = spec.stdin_once = true;
  spec.attach_stdout = spec.attach_stderr = true;
  // The sandbox's real posture: stdin attach must work with a read-only root filesystem.
  spec.host_config.readonly_rootfs = true;
  spec.host_config.tmpfs = {{"/tmp", "rw,nosuid,size=16m"}};
  spec.host_config.cap_drop = {"ALL"};
  return spec;
}

TEST_F(AttachTest, ProgramOverStdinWithSeparateStdoutAndStderr) {
  auto guard = Create(StdinPythonSpec());
  ASSERT_TRUE(guard);
  AttachOptions options;
  options.attach_stdin = true;
  auto stream = client().Attach(guard->id(), options);  // before start: nothing is lost
  ASSERT_TRUE(stream.ok()) << stream.error().ToString();
  ASSERT_TRUE(client().StartContainer(guard->id()).ok());

  // Larger than one exec argument may be (131071 bytes), to show stdin has no such cap, and with
  // output big enough to span many frames.
  std::string program = "# " + std::string(200'000, 'x') + "\n";
  program +=
      "import sys\n"
      "print('hello from stdout')\n"
      "print('hello from stderr', file=sys.stderr)\n"
      "sys.stdout.write('y' * 300000 + '\\n')\n"
      "sys.exit(3)\n";
  Status written = (*stream)->Write(program, DeadlineAfter(30s));
  ASSERT_TRUE(written.ok()) << written.error().ToString();
  ASSERT_TRUE((*stream)->CloseStdin().ok());
  EXPECT_FALSE((*stream)->Write("more", DeadlineAfter(1s)).ok());  // stdin is closed

  auto out = (*stream)->ReadAll(DeadlineAfter(60s));
  ASSERT_TRUE(out.ok()) << out.error().ToString();
  EXPECT_FALSE(out->truncated);
  EXPECT_EQ(out->stdout_data, "hello from stdout\n" + std::string(300'000, 'y') + "\n");
  EXPECT_EQ(out->stderr_data, "hello from stderr\n");

  auto waited =
      client().WaitContainer(guard->id(), WaitCondition::kNotRunning, CallOptions::Within(60s));
  ASSERT_TRUE(waited.ok()) << waited.error().ToString();
  EXPECT_EQ(waited->exit_code, 3);
}

TEST_F(AttachTest, ConcurrentWriterAndReaderThreadsEchoMegabytes) {
  // An echo of 4 MiB cannot complete without reading while writing (pipe buffers fill up), so this
  // exercises the one-reader-plus-one-writer contract.
  ContainerSpec spec =
      TestSpec({"python3", "-u", "-c",
                "import sys\nfor line in sys.stdin.buffer: sys.stdout.buffer.write(line)\n"});
  spec.open_stdin = spec.attach_stdin = spec.stdin_once = true;
  auto guard = Create(spec);
  ASSERT_TRUE(guard);
  AttachOptions options;
  options.attach_stdin = true;
  auto stream = client().Attach(guard->id(), options);
  ASSERT_TRUE(stream.ok()) << stream.error().ToString();
  ASSERT_TRUE(client().StartContainer(guard->id()).ok());

  std::string input;
  for (int i = 0; input.size() < (4u << 20); ++i) input += "line " + std::to_string(i) + "\n";
  AttachedStream* raw = stream->get();
  Status write_status;
  std::thread writer([&] {
    for (std::size_t off = 0; off < input.size(); off += 64 * 1024) {
      write_status = raw->Write(std::string_view(input).substr(off, 64 * 1024), DeadlineAfter(60s));
      if (!write_status.ok()) return;
    }
    write_status = raw->CloseStdin();
  });
  auto out = raw->ReadAll(DeadlineAfter(120s), 64u << 20);
  writer.join();
  ASSERT_TRUE(write_status.ok()) << write_status.error().ToString();
  ASSERT_TRUE(out.ok()) << out.error().ToString();
  EXPECT_EQ(out->stdout_data.size(), input.size());
  EXPECT_TRUE(out->stdout_data == input);
  EXPECT_EQ(out->stderr_data, "");
  auto waited =
      client().WaitContainer(guard->id(), WaitCondition::kNotRunning, CallOptions::Within(60s));
  ASSERT_TRUE(waited.ok());
  EXPECT_EQ(waited->exit_code, 0);
}

TEST_F(AttachTest, OutputOnlyStreamsWhileTheContainerRuns) {
  auto guard = Create(TestSpec(
      {"python3", "-u", "-c",
       "import sys, time\nprint('first')\nprint('warn', file=sys.stderr)\ntime.sleep(600)\n"}));
  ASSERT_TRUE(guard);
  auto stream = client().Attach(guard->id(), AttachOptions{});
  ASSERT_TRUE(stream.ok()) << stream.error().ToString();
  EXPECT_FALSE((*stream)->Write("x", DeadlineAfter(1s)).ok());  // no stdin on this stream
  ASSERT_TRUE(client().StartContainer(guard->id()).ok());

  std::string out, err;
  Deadline deadline = DeadlineAfter(60s);
  while (out != "first\n" || err != "warn\n") {
    auto chunk = (*stream)->Read(deadline);
    ASSERT_TRUE(chunk.ok()) << chunk.error().ToString();
    ASSERT_TRUE(chunk->has_value()) << "stream ended early; out=" << out << " err=" << err;
    ((*chunk)->stream == StreamKind::kStdout ? out : err) += (*chunk)->data;
  }
  auto info = client().InspectContainer(guard->id());
  ASSERT_TRUE(info.ok());
  EXPECT_TRUE(info->state.running);  // the output arrived while the container still ran

  // Nothing more comes: a short deadline times out and leaves the stream usable.
  auto idle = (*stream)->Read(DeadlineAfter(200ms));
  ASSERT_FALSE(idle.ok());
  EXPECT_EQ(idle.error().code(), ErrorCode::kTimeout);

  ASSERT_TRUE(client().KillContainer(guard->id()).ok());
  auto end = (*stream)->Read(DeadlineAfter(30s));
  ASSERT_TRUE(end.ok()) << end.error().ToString();
  EXPECT_FALSE(end->has_value());  // end of stream once the container is gone
  auto waited =
      client().WaitContainer(guard->id(), WaitCondition::kNotRunning, CallOptions::Within(60s));
  ASSERT_TRUE(waited.ok());
  EXPECT_EQ(waited->exit_code, 137);
}

TEST_F(AttachTest, CloseWakesABlockedReaderFromAnotherThread) {
  auto guard = Create(TestSpec({"sleep", "600"}));
  ASSERT_TRUE(guard);
  AttachOptions options;
  options.attach_stdin = false;
  auto stream = client().Attach(guard->id(), options);
  ASSERT_TRUE(stream.ok()) << stream.error().ToString();
  ASSERT_TRUE(client().StartContainer(guard->id()).ok());
  AttachedStream* raw = stream->get();
  std::thread closer([raw] {
    std::this_thread::sleep_for(200ms);
    raw->Close();
  });
  auto start = Clock::now();
  auto chunk = raw->Read(DeadlineAfter(60s));
  auto took = Clock::now() - start;
  closer.join();
  ASSERT_FALSE(chunk.ok());
  EXPECT_EQ(chunk.error().code(), ErrorCode::kCancelled);
  EXPECT_LT(took, 5s);
}

TEST_F(AttachTest, AttachToMissingContainerIsNotFound) {
  auto stream = client().Attach("sandbox-mcp-no-such-container", AttachOptions{});
  ASSERT_FALSE(stream.ok());
  EXPECT_EQ(stream.error().code(), ErrorCode::kNotFound) << stream.error().ToString();
  EXPECT_EQ(stream.error().http_status(), 404);
}

}  // namespace
}  // namespace sandbox::docker::testing
