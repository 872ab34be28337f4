# Precompiled headers (SANDBOX_PCH): the standard and third-party headers that most
# translation units parse (nlohmann/json, cpp-httplib, spdlog and fmt; gtest and gmock in tests)
# are compiled once per build directory and reused by every target (docs/ci.md has the
# measurements). Project headers stay out: they change often and would rebuild everything.
#
# One PCH is only valid with the compile flags and macros it was built with (GCC's -Winvalid-pch,
# an error under SANDBOX_WERROR; clang refuses a macro that differs). So every target that reuses
# it compiles with the macros of all these libraries (sandbox_pch_flags), whether or not it uses
# them: cpp-httplib's feature macros in particular must match the .so (docs/development.md).
# sandbox_use_pch() is called by sandbox_add_library, sandbox_add_test and sandbox_add_fuzzer, so
# new modules and tests pick it up without a line of their own.

# Measured per translation unit (docs/ci.md): clang (the sanitizer build) 12-17 % less CPU, GCC
# none on the heavy test sources (its time goes into code generation, not parsing) and ~1 s more
# on small ones (loading a 200 MB .gch). So on by default with clang only.
if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  set(pch_default ON)
else()
  set(pch_default OFF)
endif()
option(SANDBOX_PCH "Precompile the heavy third-party headers (default: on with clang)" ${pch_default})

# ccache caches compiles that use a PCH only when told the PCH's defines and timestamps may be
# ignored in its hash (the PCH's content is hashed instead).
if(SANDBOX_PCH AND SANDBOX_CCACHE AND CMAKE_CXX_COMPILER_LAUNCHER STREQUAL SANDBOX_CCACHE)
  set(CMAKE_CXX_COMPILER_LAUNCHER ${CMAKE_COMMAND} -E env
    CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
    ${SANDBOX_CCACHE})
endif()

add_library(sandbox_pch_flags INTERFACE)
if(SANDBOX_PCH)
  foreach(dep spdlog::spdlog fmt::fmt nlohmann_json::nlohmann_json PkgConfig::HTTPLIB)
    if(TARGET ${dep})
      target_compile_definitions(sandbox_pch_flags INTERFACE
        $<TARGET_PROPERTY:${dep},INTERFACE_COMPILE_DEFINITIONS>)
      target_compile_options(sandbox_pch_flags INTERFACE
        $<TARGET_PROPERTY:${dep},INTERFACE_COMPILE_OPTIONS>)
      target_include_directories(sandbox_pch_flags SYSTEM INTERFACE
        $<TARGET_PROPERTY:${dep},INTERFACE_INCLUDE_DIRECTORIES>)
    endif()
  endforeach()

  set(SANDBOX_PCH_HEADERS
    <algorithm> <array> <atomic> <chrono> <condition_variable> <cstddef> <cstdint> <deque>
    <filesystem> <fstream> <functional> <map> <memory> <mutex> <optional> <set> <sstream>
    <string> <string_view> <thread> <utility> <variant> <vector>
    <httplib.h> <nlohmann/json.hpp> <spdlog/spdlog.h>)
  # One empty translation unit per PCH: the target exists only to own the .gch/.pch.
  set(pch_source ${CMAKE_BINARY_DIR}/sandbox_pch_empty.cc)
  file(CONFIGURE OUTPUT ${pch_source} CONTENT "// Owner of the precompiled headers.\n")
  add_library(sandbox_pch OBJECT ${pch_source})
  target_link_libraries(sandbox_pch PRIVATE sandbox_pch_flags sandbox_warnings)
  target_precompile_headers(sandbox_pch PRIVATE ${SANDBOX_PCH_HEADERS})
endif()

# sandbox_use_pch(target [TEST]): reuse the product PCH, or with TEST the one that adds gtest
# and gmock (made on first use, so builds without tests never compile it).
function(sandbox_use_pch target)
  target_link_libraries(${target} PRIVATE sandbox_pch_flags)
  if(NOT SANDBOX_PCH)
    return()
  endif()
  if(ARGN STREQUAL TEST)
    if(NOT TARGET sandbox_test_pch)
      add_library(sandbox_test_pch OBJECT ${CMAKE_BINARY_DIR}/sandbox_pch_empty.cc)
      target_link_libraries(sandbox_test_pch PRIVATE sandbox_pch_flags sandbox_warnings
        GTest::gtest GTest::gmock)
      target_precompile_headers(sandbox_test_pch PRIVATE ${SANDBOX_PCH_HEADERS}
        <gmock/gmock.h> <gtest/gtest.h>)
    endif()
    target_precompile_headers(${target} REUSE_FROM sandbox_test_pch)
  else()
    target_precompile_headers(${target} REUSE_FROM sandbox_pch)
  endif()
endfunction()
