# cmake -DSCHEMA=protocol.json -DPART=runner|exec -DOUTPUT=file.h -P gen_protocol.cmake
# Turns the harness protocol's schema (src/harness/sandbox_harness/protocol.json) into C++
# constants, so the server takes every name from the file the harness reads too:
#   PART runner: sandbox/runner/harness_wire.h, namespace sandbox::runner::wire: the protocol
#     version; per request (op::<name>) and event (ev::<name>) its name (kName), one constant
#     per field (k<Field>, k<Field><Value> for each value a field may take), kFields; a nested
#     object's fields in a namespace of its field's name, a named type's in wire::<type>.
#   PART exec: sandbox/exec/run_schema.h: the Verdict enum and kVerdictNames, and the run
#     result's fields (run_result::kFields) with their presence in each shape.
# CMake only, like the packer: building the server needs no Python.
cmake_minimum_required(VERSION 3.25)
file(READ "${SCHEMA}" schema)

# data_b64 -> DataB64
function(camel out name)
  if(NOT name MATCHES "^[a-z][a-z0-9_]*$")
    message(FATAL_ERROR "${SCHEMA}: '${name}' is not a lower_case name")
  endif()
  string(REPLACE "_" ";" parts "${name}")
  set(result "")
  foreach(part IN LISTS parts)
    string(SUBSTRING "${part}" 0 1 head)
    string(SUBSTRING "${part}" 1 -1 tail)
    string(TOUPPER "${head}" head)
    string(APPEND result "${head}${tail}")
  endforeach()
  set(${out} "${result}" PARENT_SCOPE)
endfunction()

# `text` as a C++ string literal.
function(literal out text)
  string(REPLACE "\\" "\\\\" text "${text}")
  string(REPLACE "\"" "\\\"" text "${text}")
  set(${out} "\"${text}\"" PARENT_SCOPE)
endfunction()

# The member `key` of the object at JSON path ARGN, "" when it has none.
function(get_or_empty out key)
  string(JSON value ERROR_VARIABLE missing GET "${schema}" ${ARGN} ${key})
  if(missing)
    set(value "")
  endif()
  set(${out} "${value}" PARENT_SCOPE)
endfunction()

# Appends to `code` the constants of the fields of the object at JSON path ARGN: k<Field> each,
# k<Field><Value> for its values, a namespace <field> for the fields of an inline object (or of
# an array's inline object items), then kFields.
function(emit_fields code)
  set(text "${${code}}")
  string(JSON count LENGTH "${schema}" ${ARGN})
  set(names "")
  if(count GREATER 0)
    math(EXPR last "${count} - 1")
    foreach(i RANGE ${last})
      string(JSON field MEMBER "${schema}" ${ARGN} ${i})
      if(field STREQUAL "name")
        message(FATAL_ERROR "${SCHEMA}: a field may not be called 'name' (kName is the message's)")
      endif()
      camel(constant "${field}")
      list(APPEND names "k${constant}")
      string(APPEND text "inline constexpr std::string_view k${constant} = \"${field}\";\n")
      string(JSON values_type ERROR_VARIABLE none TYPE "${schema}" ${ARGN} ${field} values)
      if(values_type STREQUAL "ARRAY")
        string(JSON n LENGTH "${schema}" ${ARGN} ${field} values)
        math(EXPR n_last "${n} - 1")
        foreach(v RANGE ${n_last})
          string(JSON value GET "${schema}" ${ARGN} ${field} values ${v})
          camel(value_constant "${value}")
          string(APPEND text
            "inline constexpr std::string_view k${constant}${value_constant} = \"${value}\";\n")
        endforeach()
      endif()
      set(nested "")
      string(JSON fields_type ERROR_VARIABLE none TYPE "${schema}" ${ARGN} ${field} fields)
      string(JSON items_type ERROR_VARIABLE none TYPE "${schema}" ${ARGN} ${field} items fields)
      if(fields_type STREQUAL "OBJECT")
        set(nested ${ARGN} ${field} fields)
      elseif(items_type STREQUAL "OBJECT")
        set(nested ${ARGN} ${field} items fields)
      endif()
      if(nested)
        set(inner "")
        emit_fields(inner ${nested})
        string(APPEND text "namespace ${field} {\n${inner}}  // namespace ${field}\n")
      endif()
    endforeach()
  endif()
  list(LENGTH names n_names)
  list(JOIN names ", " joined)
  string(APPEND text
    "inline constexpr std::array<std::string_view, ${n_names}> kFields = {${joined}};\n")
  set(${code} "${text}" PARENT_SCOPE)
endfunction()

# Appends a namespace per message of the object at JSON path ARGN (requests or events).
function(emit_messages code)
  set(text "${${code}}")
  string(JSON count LENGTH "${schema}" ${ARGN})
  math(EXPR last "${count} - 1")
  foreach(i RANGE ${last})
    string(JSON message MEMBER "${schema}" ${ARGN} ${i})
    camel(unused "${message}")
    set(inner "inline constexpr std::string_view kName = \"${message}\";\n")
    emit_fields(inner ${ARGN} ${message} fields)
    string(JSON result_type ERROR_VARIABLE none TYPE "${schema}" ${ARGN} ${message} result)
    if(result_type STREQUAL "OBJECT")
      set(result "")
      emit_fields(result ${ARGN} ${message} result)
      string(APPEND inner "// The `result` of its `reply`.\nnamespace result {\n${result}}  // namespace result\n")
    endif()
    string(APPEND text "namespace ${message} {\n${inner}}  // namespace ${message}\n")
  endforeach()
  set(${code} "${text}" PARENT_SCOPE)
endfunction()

get_filename_component(schema_name "${SCHEMA}" NAME)
set(head "// Generated from ${schema_name} by cmake/gen_protocol.cmake: edit the schema, not this.\n")
string(JSON version GET "${schema}" version)

if(PART STREQUAL "runner")
  set(body "")
  string(JSON count LENGTH "${schema}" types)
  math(EXPR last "${count} - 1")
  foreach(i RANGE ${last})
    string(JSON type MEMBER "${schema}" types ${i})
    set(inner "")
    emit_fields(inner types ${type})
    string(APPEND body "// The fields of every object of type ${type}.\n"
      "namespace ${type} {\n${inner}}  // namespace ${type}\n")
  endforeach()
  set(requests "")
  emit_messages(requests requests)
  set(events "")
  emit_messages(events events)
  foreach(kind json stdout stderr)
    string(JSON frame_${kind} GET "${schema}" frames ${kind})
  endforeach()
  string(CONCAT text "${head}"
    "// The harness protocol's names (docs/harness-protocol.md), for the encoding and decoding of\n"
    "// its messages (harness_protocol.h).\n"
    "#pragma once\n\n#include <array>\n#include <string_view>\n\n"
    "namespace sandbox::runner::wire {\n\n"
    "// ready.protocol: the version both sides speak.\n"
    "inline constexpr int kProtocolVersion = ${version};\n"
    "// The frame kinds: JSON, the run's stdout, its stderr.\n"
    "inline constexpr char kFrameJson = '${frame_json}';\n"
    "inline constexpr char kFrameStdout = '${frame_stdout}';\n"
    "inline constexpr char kFrameStderr = '${frame_stderr}';\n"
    "// The member that names a request, and the one that names an event.\n"
    "inline constexpr std::string_view kOp = \"op\";\n"
    "inline constexpr std::string_view kEv = \"ev\";\n\n"
    "${body}\n"
    "// Requests, server -> harness.\nnamespace op {\n${requests}}  // namespace op\n\n"
    "// Events, harness -> server.\nnamespace ev {\n${events}}  // namespace ev\n\n"
    "}  // namespace sandbox::runner::wire\n")
elseif(PART STREQUAL "exec")
  set(enumerators "")
  set(names "")
  string(JSON n_verdicts LENGTH "${schema}" verdicts)
  math(EXPR last "${n_verdicts} - 1")
  foreach(i RANGE ${last})
    string(JSON name GET "${schema}" verdicts ${i} name)
    string(JSON description GET "${schema}" verdicts ${i} description)
    camel(constant "${name}")
    string(APPEND enumerators "  k${constant},  // ${description}\n")
    list(APPEND names "\"${name}\"")
  endforeach()
  list(JOIN names ", " joined_names)

  set(fields "")
  string(JSON n_fields LENGTH "${schema}" run_result fields)
  math(EXPR last "${n_fields} - 1")
  foreach(i RANGE ${last})
    string(JSON name GET "${schema}" run_result fields ${i} name)
    camel(unused "${name}")
    string(JSON type GET "${schema}" run_result fields ${i} type)
    get_or_empty(values values run_result fields ${i})
    if(values STREQUAL "verdicts")
      set(verdicts true)
    elseif(values STREQUAL "")
      set(verdicts false)
    else()
      message(FATAL_ERROR "${SCHEMA}: run_result field ${name}: values must be \"verdicts\"")
    endif()
    get_or_empty(common description run_result fields ${i})
    set(row "{\"${name}\", \"${type}\", ${verdicts}")
    foreach(shape summary complete)
      get_or_empty(presence ${shape} run_result fields ${i})
      if(presence STREQUAL "")
        set(presence absent)
      endif()
      if(NOT presence MATCHES "^(absent|required|optional|nullable)$")
        message(FATAL_ERROR "${SCHEMA}: run_result field ${name}: ${shape} is '${presence}'")
      endif()
      camel(presence "${presence}")
      string(APPEND row ", Presence::k${presence}")
    endforeach()
    foreach(shape summary complete)
      get_or_empty(description ${shape}_description run_result fields ${i})
      if(description STREQUAL "")
        set(description "${common}")
      endif()
      literal(description "${description}")
      string(APPEND row ",\n     ${description}")
    endforeach()
    string(APPEND fields "    ${row}},\n")
  endforeach()

  string(CONCAT text "${head}"
    "// The verdicts and the run result's fields, for run_types.h and run_result_json.h.\n"
    "#pragma once\n\n#include <array>\n#include <string_view>\n\n"
    "namespace sandbox::exec {\n\n"
    "// How a run ended. Each is told apart reliably in both pool modes.\n"
    "enum class Verdict {\n${enumerators}};\n\n"
    "// Each verdict's name, by enumerator: the harness's `done.verdict` and every result's.\n"
    "inline constexpr std::array<std::string_view, ${n_verdicts}> kVerdictNames = {${joined_names}};\n\n"
    "namespace run_result {\n\n"
    "// A field's presence in one shape of the result (RunResultShape).\n"
    "enum class Presence : unsigned char {\n"
    "  kAbsent,    // not in this shape\n"
    "  kRequired,  // always there\n"
    "  kOptional,  // left out when absent, empty or false (summary)\n"
    "  kNullable,  // null when absent (complete)\n"
    "};\n\n"
    "struct Field {\n"
    "  std::string_view name;\n"
    "  std::string_view type;  // its JSON Schema type\n"
    "  bool verdict_values;    // one of kVerdictNames\n"
    "  Presence summary;\n"
    "  Presence complete;\n"
    "  std::string_view summary_description;  // \"\" for none\n"
    "  std::string_view complete_description;\n"
    "};\n\n")
  string(APPEND text
    "// In the schema's order.\n"
    "inline constexpr std::array<Field, ${n_fields}> kFields = {{\n${fields}}};\n\n"
    "}  // namespace run_result\n\n"
    "}  // namespace sandbox::exec\n")
else()
  message(FATAL_ERROR "PART must be runner or exec, not '${PART}'")
endif()

file(WRITE "${OUTPUT}.tmp" "${text}")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
