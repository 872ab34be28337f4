#include "sandbox/http/http_helpers.h"

#include <httplib.h>

#include <algorithm>
#include <memory>
#include <utility>

namespace sandbox::http {

std::string MediaType(std::string_view value) {
  return Lower(Trim(value.substr(0, value.find(';'))));
}

bool Accepts(std::string_view accept, std::string_view type) {
  std::string_view major = type.substr(0, type.find('/'));
  while (!accept.empty()) {
    auto comma = accept.find(',');
    std::string range = MediaType(accept.substr(0, comma));
    if (range == type || range == "*/*" || range == std::string(major) + "/*") return true;
    if (comma == std::string_view::npos) break;
    accept.remove_prefix(comma + 1);
  }
  return false;
}

bool Lists(std::string_view accept, std::string_view type) {
  while (!accept.empty()) {
    const auto comma = accept.find(',');
    std::string_view range = accept.substr(0, comma);
    const auto semi = range.find(';');
    if (MediaType(range.substr(0, semi)) == type) {
      bool refused = false;
      if (semi != std::string_view::npos) {
        const std::string params = Lower(range.substr(semi));
        const auto q = params.find("q=");
        if (q != std::string::npos) {
          const std::string_view rest = params;
          const std::string value(Trim(rest.substr(q + 2)));
          refused =
              value.rfind('0', 0) == 0 && value.find_first_of("123456789") == std::string::npos;
        }
      }
      if (!refused) return true;
    }
    if (comma == std::string_view::npos) break;
    accept.remove_prefix(comma + 1);
  }
  return false;
}

bool IsJsonBody(const httplib::Request& req) {
  if (!req.has_header("Content-Type")) return true;
  const std::string type = MediaType(req.get_header_value("Content-Type"));
  return type == "application/json" || (type.rfind("application/", 0) == 0 && type.size() > 5 &&
                                        type.compare(type.size() - 5, 5, "+json") == 0);
}

void SendJson(httplib::Response& res, int status, const nlohmann::json& body) {
  res.status = status;
  res.set_content(body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                  "application/json");
}

void SendJsonHeld(httplib::Response& res, int status, nlohmann::json body,
                  ByteBudget::Reservation held) {
  struct Answer {
    std::string text;
    ByteBudget::Reservation held;
  };
  auto answer = std::make_shared<Answer>();
  answer->text = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  body = nullptr;  // only the text is left to hold
  answer->held = std::move(held);
  const auto size = static_cast<std::int64_t>(answer->text.size());
  if (answer->held.bytes() > size) answer->held.Shrink(answer->held.bytes() - size);
  res.status = status;
  res.set_content_provider(
      answer->text.size(), "application/json",
      [answer](std::size_t offset, std::size_t length, httplib::DataSink& sink) {
        const std::size_t n = std::min(length, answer->text.size() - offset);
        return sink.write(answer->text.data() + offset, n);
      },
      [answer](bool /*success*/) {
        // The provider (and its copy of `answer`) may live on in the response; the text and
        // its bytes go now.
        std::string().swap(answer->text);
        answer->held.Release();
      });
}

}  // namespace sandbox::http
