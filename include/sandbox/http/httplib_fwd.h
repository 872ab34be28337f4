// Forward declarations of the cpp-httplib types that headers name only by reference (a server to
// register routes on, a handler's request and response), so that <httplib.h> stays in .cc files.
#pragma once

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib
