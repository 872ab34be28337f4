// The harness protocol's encoding and decoding (harness_protocol.h): requests carry the
// schema's names and fields; events decode leniently (a member missing or of another type reads
// as absent, never as an error), a frame that is no JSON object or names no known event is an
// event of its own kind; replies' results are read and checked again.
#include "runner/harness_protocol.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <variant>

#include "sandbox/runner/harness_frames.h"
#include "sandbox/runner/harness_wire.h"

namespace sandbox::runner {
namespace {

using nlohmann::json;

std::set<std::string> Keys(const json& object) {
  std::set<std::string> out;
  for (const auto& item : object.items()) out.insert(item.key());
  return out;
}

template <typename Names>
std::set<std::string> WithOp(const Names& fields) {
  std::set<std::string> out(fields.begin(), fields.end());
  out.insert(std::string(wire::kOp));
  return out;
}

TEST(HarnessRequestTest, RunHasTheSchemasFields) {
  RunLimits limits;
  limits.timeout_s = 2.5;
  const json run = RunRequest("run-1", "print(1)", {{"a.txt", "hi"}}, limits, true);
  EXPECT_EQ(run[wire::kOp], "run");
  EXPECT_EQ(run["id"], "run-1");
  EXPECT_EQ(run["code"], "print(1)");
  EXPECT_EQ(run["files"], json::parse(R"([{"path":"a.txt","content_b64":"aGk="}])"));
  EXPECT_EQ(run["stdin"], "interactive");
  EXPECT_EQ(run["limits"]["timeout_s"], 2.5);
  EXPECT_EQ(Keys(run["limits"]),
            std::set<std::string>(wire::limits::kFields.begin(), wire::limits::kFields.end()));
  // Every field but argv (the server never sends one).
  std::set<std::string> expected = WithOp(wire::op::run::kFields);
  expected.erase("argv");
  EXPECT_EQ(Keys(run), expected);
  EXPECT_EQ(RunRequest("r", "", {}, limits, false)["stdin"], "eof");
}

TEST(HarnessRequestTest, OpsCarryTheirIds) {
  EXPECT_EQ(CancelRequest("run-2"), json::parse(R"({"op":"cancel","id":"run-2"})"));
  EXPECT_EQ(InputReplyRequest("run-2", 3, std::nullopt),
            json::parse(R"({"op":"input_reply","id":"run-2","seq":3,"line":null})"));
  EXPECT_EQ(InputReplyRequest("run-2", 4, "yes")["line"], "yes");
  EXPECT_EQ(PingRequest(), json::parse(R"({"op":"ping"})"));
  EXPECT_EQ(ResumeRequest("op-1"), json::parse(R"({"op":"resume","id":"op-1"})"));
  EXPECT_EQ(ListFilesRequest("op-2"), json::parse(R"({"op":"list_files","id":"op-2"})"));
  EXPECT_EQ(GetFileRequest("op-3", "a/b", 10),
            json::parse(R"({"op":"get_file","id":"op-3","path":"a/b","max_bytes":10})"));
  EXPECT_EQ(DeleteFileRequest("op-4", "a"),
            json::parse(R"({"op":"delete_file","id":"op-4","path":"a"})"));
  EXPECT_EQ(PutFilesRequest("op-5", {{"x", "1"}}), json::parse(R"({"op":"put_files","id":"op-5",
                            "files":[{"path":"x","content_b64":"MQ=="}]})"));
  EXPECT_EQ(RequestName(PutFilesRequest("op-5", {})), "put_files");
}

TEST(HarnessRequestTest, SessionCarriesItsTermsWhenGiven) {
  RunLimits limits;
  json plain = SessionRequest("op-1", limits, SessionTerms{});
  EXPECT_EQ(Keys(plain), (std::set<std::string>{"op", "id", "limits"}));
  SessionTerms terms;
  terms.record = {{"v", 1}};
  terms.watchdog = std::chrono::seconds(30);
  json full = SessionRequest("op-1", limits, terms);
  EXPECT_EQ(full["record"], terms.record);
  EXPECT_EQ(full["watchdog_s"], 30.0);
  EXPECT_EQ(Keys(full), WithOp(wire::op::session::kFields));
}

TEST(HarnessRequestTest, EncodedAsOneJsonFrameOfValidUtf8) {
  const std::string frame = EncodeRequest(RunRequest("r", "print('\xff')", {}, RunLimits{}, false));
  FrameDecoder decoder;
  ASSERT_TRUE(decoder.Feed(frame).ok());
  Frame out;
  ASSERT_TRUE(decoder.Next(out));
  EXPECT_EQ(out.kind, FrameKind::kJson);
  EXPECT_EQ(json::parse(out.payload)["code"], "print('\xEF\xBF\xBD')");
}

TEST(HarnessEventTest, DecodesEveryEvent) {
  auto ready = DecodeEvent(R"({"ev":"ready","protocol":4,"python":"3.11.2"})");
  ASSERT_TRUE(std::holds_alternative<ReadyEvent>(ready));
  EXPECT_EQ(std::get<ReadyEvent>(ready).message["python"], "3.11.2");

  auto done = DecodeEvent(
      R"({"ev":"done","id":"run-1","verdict":"error","exit_code":1,"signal":null,
          "duration_ms":12,"value":"42","traceback":{"type":"E","message":"m","frames":[]},
          "output_truncated":true,"files_truncated":false,"images_truncated":true,
          "detail":"exit status 1","session_reset":false})");
  ASSERT_TRUE(std::holds_alternative<DoneEvent>(done));
  const auto& d = std::get<DoneEvent>(done);
  EXPECT_EQ(d.id, "run-1");
  EXPECT_EQ(d.verdict, "error");
  EXPECT_EQ(d.exit_code, 1);
  EXPECT_FALSE(d.signal);
  EXPECT_EQ(d.duration_ms, 12);
  EXPECT_EQ(d.value, "42");
  ASSERT_TRUE(d.traceback);
  EXPECT_EQ((*d.traceback)["type"], "E");
  EXPECT_TRUE(d.output_truncated);
  EXPECT_FALSE(d.files_truncated);
  EXPECT_TRUE(d.images_truncated);
  EXPECT_EQ(d.detail, "exit status 1");

  auto file = DecodeEvent(
      R"({"ev":"file","id":"r","path":"a","offset":0,"last":true,"mime_type":"text/plain",
          "data_b64":"aGk="})");
  ASSERT_TRUE(std::holds_alternative<FileEvent>(file));
  EXPECT_EQ(std::get<FileEvent>(file).offset, 0);
  EXPECT_TRUE(std::get<FileEvent>(file).last);

  auto image = DecodeEvent(R"({"ev":"image","id":"r","width":3,"height":4,"data_b64":"UE5H"})");
  ASSERT_TRUE(std::holds_alternative<ImageEvent>(image));
  EXPECT_EQ(std::get<ImageEvent>(image).height, 4);

  auto ask = DecodeEvent(R"({"ev":"input_request","id":"r","seq":2,"prompt":"name? "})");
  ASSERT_TRUE(std::holds_alternative<InputRequestEvent>(ask));
  EXPECT_EQ(std::get<InputRequestEvent>(ask).seq, 2);

  auto reply = DecodeEvent(R"({"ev":"reply","id":"op-1","ok":true,"result":{"path":"a"}})");
  ASSERT_TRUE(std::holds_alternative<ReplyEvent>(reply));
  EXPECT_TRUE(std::get<ReplyEvent>(reply).ok);
  EXPECT_EQ(std::get<ReplyEvent>(reply).result["path"], "a");

  EXPECT_EQ(std::get<PongEvent>(DecodeEvent(R"({"ev":"pong","memory_bytes":5})")).memory_bytes, 5);
  EXPECT_EQ(std::get<StartedEvent>(DecodeEvent(R"({"ev":"started","id":"r"})")).id, "r");
  EXPECT_EQ(
      std::get<SessionResetEvent>(DecodeEvent(R"({"ev":"session_reset","reason":"x"})")).reason,
      "x");
  EXPECT_EQ(std::get<FatalEvent>(DecodeEvent(R"({"ev":"fatal","message":"m"})")).message, "m");
}

TEST(HarnessEventTest, AMemberOfAnotherTypeReadsAsAbsent) {
  auto done = DecodeEvent(
      R"({"ev":"done","id":5,"verdict":1,"exit_code":"1","duration_ms":1.5,"value":42,
          "traceback":"x","output_truncated":"yes","detail":null})");
  const auto& d = std::get<DoneEvent>(done);
  EXPECT_EQ(d.id, "");
  EXPECT_EQ(d.verdict, "");
  EXPECT_FALSE(d.exit_code);
  EXPECT_FALSE(d.duration_ms);  // not an integer
  EXPECT_FALSE(d.value);
  EXPECT_FALSE(d.traceback);
  EXPECT_FALSE(d.output_truncated);
  EXPECT_EQ(d.detail, "");
  auto reply = std::get<ReplyEvent>(DecodeEvent(R"({"ev":"reply","id":"op-1","ok":"true"})"));
  EXPECT_FALSE(reply.ok);
  EXPECT_EQ(reply.result, json::object());
  auto image = std::get<ImageEvent>(DecodeEvent(R"({"ev":"image","width":"3"})"));
  EXPECT_EQ(image.width, 0);
}

TEST(HarnessEventTest, WhatIsNoEventIsSaidSo) {
  EXPECT_FALSE(std::get<InvalidMessage>(DecodeEvent("{not json")).parsed);
  EXPECT_TRUE(std::get<InvalidMessage>(DecodeEvent("[1, 2]")).parsed);
  EXPECT_EQ(EventName(DecodeEvent("[1, 2]")), "");
  auto other = DecodeEvent(R"({"ev":"something_new","id":"r"})");
  ASSERT_TRUE(std::holds_alternative<OtherEvent>(other));
  EXPECT_EQ(EventName(other), "something_new");
  EXPECT_EQ(EventName(DecodeEvent(R"({"ev":"fatal"})")), "fatal");
  // Nesting-bounded like every JSON from outside.
  EXPECT_FALSE(
      std::get<InvalidMessage>(DecodeEvent(std::string(100000, '[') + std::string(100000, ']')))
          .parsed);
}

TEST(HarnessReplyTest, ResultsAreRead) {
  auto resume = DecodeResume(json::parse(R"({"record":{"v":1},"idle_s":2.5,"protocol":4})"));
  EXPECT_EQ(resume.record, json::parse(R"({"v":1})"));
  EXPECT_EQ(resume.idle_s, 2.5);
  EXPECT_EQ(resume.protocol, 4);
  EXPECT_EQ(DecodeResume(json::array()).protocol, 0);

  auto put = DecodePutFiles(json::parse(R"({"files":[{"path":"a","size":2},7]})"));
  ASSERT_EQ(put.size(), 1u);
  EXPECT_EQ(put[0].size, 2);
  EXPECT_EQ(put[0].mime_type, "application/octet-stream");

  // Checked again: an entry whose path is no valid result path is dropped and marks the list.
  auto list = DecodeListFiles(json::parse(
      R"({"files":[{"path":"ok.txt","size":1,"mime_type":"text/plain","mtime":1.5},
                   {"path":"../x","size":1}],"truncated":false})"));
  ASSERT_EQ(list.files.size(), 1u);
  EXPECT_EQ(list.files[0].mtime_unix_s, 1.5);
  EXPECT_TRUE(list.truncated);

  auto got = DecodeGetFile(json::parse(R"({"size":2,"mime_type":"text/plain","data_b64":"aGk="})"),
                           "asked.txt");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->path, "asked.txt");
  EXPECT_EQ(got->data, "hi");
  EXPECT_EQ(got->size, 2);
  EXPECT_EQ(DecodeGetFile(json::parse(R"({"data_b64":"!!"})"), "a").error().code(),
            ErrorCode::kProtocol);
}

TEST(HarnessReplyTest, RefusalsBecomeErrorCodes) {
  auto refused = [](std::string error) {
    ReplyEvent reply;
    reply.error = std::move(error);
    return ReplyError(reply);
  };
  EXPECT_EQ(refused("no such file: a").code(), ErrorCode::kNotFound);
  EXPECT_EQ(refused("a is 9 bytes, more than the limit of 1 bytes").code(), ErrorCode::kLimit);
  EXPECT_EQ(refused("no space left in the session's file system (1 bytes)").code(),
            ErrorCode::kLimit);
  EXPECT_EQ(refused("the file operation timed out; the session was restarted").code(),
            ErrorCode::kUnavailable);
  EXPECT_EQ(refused("file path '../x' contains '..'").code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(refused("").message(), "the sandbox refused the request");
}

}  // namespace
}  // namespace sandbox::runner
