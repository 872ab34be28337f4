// Base64 (RFC 4648 section 4: standard alphabet, '=' padding) for bytes that travel in JSON: the
// per-run BPF program and files in the harness protocol, images and files in MCP results.
// Thread-safety: stateless; safe from any thread.
#pragma once

#include <string>
#include <string_view>

#include "sandbox/core/result.h"

namespace sandbox {

// Encodes any bytes; the output length is 4 * ceil(size / 3).
std::string Base64Encode(std::string_view bytes);

// Strict decoding: the length must be a multiple of 4, only the standard alphabet, padding only
// at the end, and no stray bits in the last symbol (so every byte string has exactly one
// encoding). No whitespace is skipped. kInvalidArgument otherwise, naming the offset.
Result<std::string> Base64Decode(std::string_view text);

}  // namespace sandbox
