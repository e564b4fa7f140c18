# Checks that every test of a GoogleTest binary runs in exactly one CTest entry (the suites of
# tests/CMakeLists.txt): lists the binary's tests under each entry's filter and fails naming a
# test that two entries run, or one that none does.
#   cmake -DTESTS=<binary> -DENTRIES="Name=filter|Name=filter|..." -P suites.cmake

# The tests a filter selects, as Suite.Name (gtest --gtest_list_tests: "Suite." lines, then the
# suite's tests indented by two spaces; either may end in a "  # GetParam() = ..." comment).
function(listed filter out)
  execute_process(COMMAND ${TESTS} --gtest_list_tests --gtest_filter=${filter} OUTPUT_VARIABLE text
                  RESULT_VARIABLE status)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "${TESTS} --gtest_list_tests failed (${status})")
  endif()
  string(REGEX REPLACE "  #[^\n]*" "" text "${text}")
  string(REPLACE "\n" ";" lines "${text}")
  set(names "")
  foreach(line IN LISTS lines)
    if(line MATCHES "^  (.+)$")
      list(APPEND names "${suite}${CMAKE_MATCH_1}")
    elseif(line MATCHES "^([^ ].*\\.)$")
      set(suite "${CMAKE_MATCH_1}")
    endif()
  endforeach()
  set(${out} "${names}" PARENT_SCOPE)
endfunction()

listed("*" all)
string(REPLACE "|" ";" entries "${ENTRIES}")
set(seen "")
foreach(entry IN LISTS entries)
  string(REGEX MATCH "^([^=]+)=(.*)$" _ "${entry}")
  set(name "${CMAKE_MATCH_1}")
  listed("${CMAKE_MATCH_2}" names)
  foreach(test IN LISTS names)
    if(DEFINED "entry_of_${test}")
      message(FATAL_ERROR "${test} runs in two CTest entries: ${entry_of_${test}} and ${name}")
    endif()
    set("entry_of_${test}" "${name}")
  endforeach()
endforeach()
foreach(test IN LISTS all)
  if(NOT DEFINED "entry_of_${test}")
    message(FATAL_ERROR "${test} runs in no CTest entry")
  endif()
endforeach()
list(LENGTH all count)
message(STATUS "${count} tests, each in one CTest entry")
