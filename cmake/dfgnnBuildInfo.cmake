# Writes OUTPUT, a header of what the CLI's records say of the build that made them: the commit
# and whether the tree had uncommitted changes (`git describe --dirty`), the compiler and its
# flags and build type. Run at every build (the dfgnn_build_info target), not at configure time, so a record
# never names a commit the binary was not built from; the header is rewritten only when its text
# changes, so an unchanged tree recompiles nothing.
#   cmake -DSOURCE_DIR=... -DOUTPUT=... -DVERSION=... -DCOMPILER=... -DBUILD_TYPE=... -DFLAGS=... -DCUDA=... -P dfgnnBuildInfo.cmake
execute_process(COMMAND git describe --always --dirty --abbrev=12 WORKING_DIRECTORY ${SOURCE_DIR}
                OUTPUT_VARIABLE describe OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE status)
if(NOT status EQUAL 0 OR describe STREQUAL "")
  set(describe "unknown")  # a source tree outside git (an unpacked archive)
endif()
set(dirty 0)
if(describe MATCHES "^(.*)-dirty$")
  set(describe "${CMAKE_MATCH_1}")
  set(dirty 1)
endif()

# `text` as the body of a C string literal.
function(c_string text out)
  string(REPLACE "\\" "\\\\" text "${text}")
  string(REPLACE "\"" "\\\"" text "${text}")
  set(${out} "${text}" PARENT_SCOPE)
endfunction()
c_string("${COMPILER}" compiler)
c_string("${FLAGS}" flags)
c_string("${BUILD_TYPE}" build_type)
c_string("${CUDA}" cuda)

set(text "// Generated at build time by cmake/dfgnnBuildInfo.cmake; do not edit.
#pragma once
#define DFGNN_VERSION \"${VERSION}\"
#define DFGNN_GIT_COMMIT \"${describe}\"
#define DFGNN_GIT_DIRTY ${dirty}
#define DFGNN_BUILD_COMPILER \"${compiler}\"
#define DFGNN_BUILD_TYPE \"${build_type}\"
#define DFGNN_BUILD_FLAGS \"${flags}\"
#define DFGNN_BUILD_CUDA \"${cuda}\"
")
file(WRITE ${OUTPUT}.new "${text}")
configure_file(${OUTPUT}.new ${OUTPUT} COPYONLY)  # leaves OUTPUT untouched when equal
file(REMOVE ${OUTPUT}.new)
