// Text from a client or a sandbox on its way into a log line (docs/memory-budget.md, "Logs").
// Nothing a client or a run sends may end a line, start one, add a key=value to one, or make
// one unbounded: every such value passes LogQuoted/LogValue (or is a field of its own,
// core/log_context.h), and the log formatters escape control bytes in every message besides.
// Sessions are named in logs by SessionDigest only, never by their id (a bearer secret).
// Pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace sandbox {

// The default cap of one untrusted value in a log line, in input bytes.
inline constexpr std::size_t kLogValueMaxBytes = 256;
// The cap of one log message (the formatters cut it there): the bound of every line.
inline constexpr std::size_t kLogMessageMaxBytes = 16u << 10;

// `text` with every byte that could break or fake a line escaped: C0 controls and DEL as \n,
// \r, \t or \xNN, C1 controls and U+2028/U+2029 as \u{NNNN}, each byte of invalid UTF-8 as
// \xNN; with `quotes`, backslash and double quote as \\ and \" too. Cut at `max_bytes` of input
// (at a character boundary) with " [... N bytes omitted]". The result is valid UTF-8 and holds
// no control character.
std::string LogEscape(std::string_view text, std::size_t max_bytes = kLogValueMaxBytes,
                      bool quotes = true);

// LogEscape in double quotes: one token of a line, whatever `text` holds.
std::string LogQuoted(std::string_view text, std::size_t max_bytes = kLogValueMaxBytes);

// The value of a key=value: bare when it is a plain token (1 to max_bytes of
// [A-Za-z0-9._:/@+-]), LogQuoted otherwise, so it can never hold a space or a second `=`
// outside quotes.
std::string LogValue(std::string_view text, std::size_t max_bytes = kLogValueMaxBytes);

// How a session is named in logs: the first 16 hex digits of its id's SHA-256 (the session key
// its container's label holds), "-" for no session. Correlates a session's lines without
// logging the id, which alone opens the session.
std::string SessionDigest(std::string_view session_id);

// `text` with every occurrence of `session_id` replaced by "session#<digest>": for messages
// (errors meant for the session's owner) that name the session before they are logged.
std::string RedactSessionId(std::string_view text, std::string_view session_id);

}  // namespace sandbox
