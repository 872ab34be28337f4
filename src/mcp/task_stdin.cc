#include "task_stdin.h"

#include <utility>

namespace sandbox::mcp {

using json = nlohmann::json;

json StdinElicitation(std::string_view prompt) {
  std::string message = prompt.empty() ? "The program is waiting for a line on stdin (input())."
                                       : std::string(prompt);
  return {{"method", "elicitation/create"},
          {"params",
           {{"mode", "form"},
            {"message", std::move(message)},
            {"requestedSchema",
             {{"type", "object"},
              {"properties",
               {{"line",
                 {{"type", "string"},
                  {"title", "stdin"},
                  {"description", "one line for the program's input(); decline to send EOF"}}}}},
              {"required", {"line"}}}}}}};
}

std::optional<std::string> LineOfAnswer(const json& answer) {
  if (!answer.is_object() || answer.value("action", "") != "accept") return std::nullopt;
  auto content = answer.find("content");
  if (content == answer.end() || !content->is_object()) return std::nullopt;
  auto line = content->find("line");
  if (line == content->end() || !line->is_string()) return std::nullopt;
  return line->get<std::string>();
}

void TaskStdin::OnInputRequest(const exec::InputRequest& request, const exec::InputReply& reply) {
  task_.AskInput("stdin-" + std::to_string(request.seq), StdinElicitation(request.prompt),
                 [reply](const json& answer) { reply(LineOfAnswer(answer)); });
}

}  // namespace sandbox::mcp
