// TaskStdin: the stdin of a run_python task (tasks extension, 2026-07-28). When the code reads
// stdin (input(), sys.stdin.readline()), the task turns input_required with a form elicitation
// asking for one line (key "stdin-<n>", never reused); the client's tasks/update answer resumes
// the run: accept with content.line gives that line, decline or cancel give EOF (input() raises
// EOFError), as does the task's end. The run's wall-time limit keeps counting while it waits.
// Every other event goes to the wrapped observer. Only for clients that declared form
// elicitation (RequestMeta::HasFormElicitation); a task of any other client reads EOF.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "sandbox/exec/execution_service.h"
#include "sandbox/mcp/task_store.h"

namespace sandbox::mcp {

class TaskStdin final : public exec::RunObserver {
 public:
  TaskStdin(exec::RunObserver& inner, Task& task) : inner_(inner), task_(task) {}

  void OnStarted() override { inner_.OnStarted(); }
  void OnOutput(exec::Stream stream, std::string_view bytes) override {
    inner_.OnOutput(stream, bytes);
  }
  void OnImage(const exec::Image& image) override { inner_.OnImage(image); }
  void OnFile(const exec::OutputFile& file) override { inner_.OnFile(file); }
  bool AnswersInput() const override { return true; }
  void OnInputRequest(const exec::InputRequest& request, const exec::InputReply& reply) override;

 private:
  exec::RunObserver& inner_;
  Task& task_;
};

// The inputRequests entry for one ask: elicitation/create in form mode, one required string
// `line`; the message is the prompt input() printed, or says that the program waits for stdin.
nlohmann::json StdinElicitation(std::string_view prompt);
// The line an ElicitResult gives: content.line of an accepted answer; nullopt (EOF) for
// anything else (decline, cancel, a malformed or missing answer).
std::optional<std::string> LineOfAnswer(const nlohmann::json& answer);

}  // namespace sandbox::mcp
