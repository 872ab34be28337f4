// Text of HTTP/1.x heads: the case and whitespace rules of header names and values.
// Thread-safety: stateless functions.
#pragma once

#include <string>
#include <string_view>

namespace sandbox::http {

// ASCII lower case (header names and media types are case-insensitive).
std::string Lower(std::string_view s);
// Without the spaces and tabs around it.
std::string_view Trim(std::string_view s);

}  // namespace sandbox::http
