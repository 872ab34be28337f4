// FUZZ_CHECK: a property of a fuzz target. A violation prints what failed and aborts, which
// libFuzzer reports as a crash and saves the input as an artifact.
#pragma once

#include <cstdio>
#include <cstdlib>

#define FUZZ_CHECK(cond, what)                                                                 \
  do {                                                                                         \
    if (!(cond)) {                                                                             \
      std::fprintf(stderr, "FUZZ_CHECK failed at %s:%d: %s (%s)\n", __FILE__, __LINE__, #cond, \
                   what);                                                                      \
      std::abort();                                                                            \
    }                                                                                          \
  } while (0)
