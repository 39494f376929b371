# qualifySweep.cmake: qualify_add_sweep() for users of the installed
# qualify (find_package(qualify) includes it; docs/enable.md "CMake").
#
#   qualify_add_sweep(NAME SUITE <file.yaml> PLUGIN <target> [ARGS ...])
#
# registers the CTest test NAME that runs the installed `qualify run` over
# SUITE with the user's kernel plugin (a MODULE or SHARED library target)
# and writes the reports into ${CMAKE_CURRENT_BINARY_DIR}/qualify-NAME.
# qualify exits 1 on a numerical failure (FAILED, CRASHED, TIMEOUT; more
# with ARGS --fail-on marginal) and 2 on bad input, so both fail the test;
# 3 when no pair ran (every one UNSUPPORTED: no device, no tuple), which
# CTest reports as skipped, never passed.
function(qualify_add_sweep NAME)
  cmake_parse_arguments(PARSE_ARGV 1 QAS "" "SUITE;PLUGIN" "ARGS")
  if(NOT QAS_SUITE)
    message(FATAL_ERROR "qualify_add_sweep(${NAME}): SUITE <file> is required")
  endif()
  if(NOT QAS_PLUGIN)
    message(FATAL_ERROR "qualify_add_sweep(${NAME}): PLUGIN <target> is required")
  endif()
  if(NOT TARGET ${QAS_PLUGIN})
    message(FATAL_ERROR "qualify_add_sweep(${NAME}): PLUGIN '${QAS_PLUGIN}' is not a target")
  endif()
  if(QAS_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "qualify_add_sweep(${NAME}): unknown arguments ${QAS_UNPARSED_ARGUMENTS}")
  endif()
  get_filename_component(_suite "${QAS_SUITE}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  add_test(NAME ${NAME}
    COMMAND "${qualify_EXECUTABLE}" run "${_suite}" --plugin $<TARGET_FILE:${QAS_PLUGIN}>
            -q -o "${CMAKE_CURRENT_BINARY_DIR}/qualify-${NAME}" ${QAS_ARGS})
  set_tests_properties(${NAME} PROPERTIES SKIP_RETURN_CODE 3)
endfunction()
