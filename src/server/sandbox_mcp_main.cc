// main() of the product binary, sandbox-mcp: the server as it ships (src/server/server.cc).
#include "sandbox/server/server.h"

int main(int argc, char** argv) { return sandbox::server::RunServer(argc, argv); }
