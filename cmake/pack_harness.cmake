# cmake -DPACKAGE_DIR=dir -DLOADER=file -DOUTPUT=file -P pack_harness.cmake
# Packs the harness into the one Python source the server sends into each container: the loader
# (src/harness/loader.py), then `_boot({...}, {...})` with the source of every module in
# PACKAGE_DIR, then the text of every data file there (*.json: the protocol's schema), each as a
# raw string literal. CMake only, so that building the server needs no Python.
get_filename_component(PACKAGE_DIR "${PACKAGE_DIR}" ABSOLUTE)
file(GLOB modules RELATIVE "${PACKAGE_DIR}" "${PACKAGE_DIR}/*.py")
file(GLOB data_files RELATIVE "${PACKAGE_DIR}" "${PACKAGE_DIR}/*.json")
if(NOT modules)
  message(FATAL_ERROR "no modules in ${PACKAGE_DIR}")
endif()
list(SORT modules)
list(SORT data_files)

# Appends `"key": r'''<text of file>''',` to `payload`.
function(append_raw_string key file)
  file(READ "${PACKAGE_DIR}/${file}" text)
  # r'''...''' holds any text but its own delimiter, and must not end in a backslash or quote.
  string(FIND "${text}" "'''" delimiter)
  if(NOT delimiter EQUAL -1)
    message(FATAL_ERROR "${file} contains ''' (the packer quotes sources with it): use \"\"\"")
  endif()
  if(NOT text MATCHES "\n$")
    message(FATAL_ERROR "${file} does not end with a newline")
  endif()
  if(text MATCHES "\r")
    message(FATAL_ERROR "${file} contains a carriage return")
  endif()
  set(payload "${payload}\"${key}\": r'''${text}''',\n" PARENT_SCOPE)
endfunction()

file(READ "${LOADER}" payload)
string(APPEND payload "\n\n_boot({\n")
foreach(module IN LISTS modules)
  string(REGEX REPLACE "\\.py$" "" name "${module}")
  append_raw_string("${name}" "${module}")
endforeach()
string(APPEND payload "}, {\n")
foreach(data_file IN LISTS data_files)
  append_raw_string("${data_file}" "${data_file}")
endforeach()
string(APPEND payload "})\n")
file(WRITE "${OUTPUT}.tmp" "${payload}")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
