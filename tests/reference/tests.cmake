# The NumPy Hugging Face reference tests (docs/testing.md). Included from
# tests/CMakeLists.txt, so CMAKE_CURRENT_SOURCE_DIR is tests/.
#
# They need a Python 3 with numpy. Debian's /usr/bin/python3 is preferred
# (with python3-numpy) over whatever python3 comes first on PATH.
if(NOT TARGET pocket_cli)
  message(STATUS "reference_hf_logits: not registered (POCKET_BUILD_TOOLS is OFF)")
  return()
endif()

if(NOT Python3_EXECUTABLE AND EXISTS /usr/bin/python3)
  set(Python3_EXECUTABLE /usr/bin/python3 CACHE FILEPATH "Python 3 for the reference tests")
endif()
find_package(Python3 COMPONENTS Interpreter)

set(_pocket_ref_problem "")
if(NOT Python3_Interpreter_FOUND)
  set(_pocket_ref_problem "no Python 3 interpreter found (apt-get install python3 python3-numpy)")
else()
  execute_process(COMMAND ${Python3_EXECUTABLE} -c "import numpy"
                  RESULT_VARIABLE _pocket_numpy_rc OUTPUT_QUIET ERROR_QUIET)
  if(NOT _pocket_numpy_rc EQUAL 0)
    set(_pocket_ref_problem
        "${Python3_EXECUTABLE} cannot import numpy (apt-get install python3-numpy, or pass -DPython3_EXECUTABLE=a python with numpy)")
  endif()
endif()

if(_pocket_ref_problem STREQUAL "")
  add_test(NAME reference_hf_logits
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/reference/run_reference_tests.py
                   ${POCKET_CLI_COMMAND} ${CMAKE_BINARY_DIR}/reference-work)
  set_tests_properties(reference_hf_logits PROPERTIES
    TIMEOUT 1200 LABELS "reference"
    ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1")
  # GGUF files of the same tiny models, converted: logits within 1e-3 of the
  # reference on the GGUF's dequantized weights.
  add_test(NAME reference_gguf_logits
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/reference/gguf_reference.py
                   ${POCKET_CLI_COMMAND} ${CMAKE_BINARY_DIR}/reference-gguf-work)
  set_tests_properties(reference_gguf_logits PROPERTIES
    TIMEOUT 600 LABELS "reference"
    ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1")
  # The default q4/q8 configuration (int8 activations, each KV type, bf16 or
  # int8 attention as the CPU does it) against int8_reference.py, with the
  # mutation checks that show the comparison can fail (docs/testing.md).
  add_test(NAME reference_default_path
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/reference/run_default_path_tests.py
                   ${POCKET_CLI_COMMAND} ${CMAKE_BINARY_DIR}/reference-default-path-work)
  set_tests_properties(reference_default_path PROPERTIES
    TIMEOUT 1200 LABELS "reference"
    ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1")
  # stories260K's q8 and q4 against the unquantized model: KL, top-1 and
  # perplexity within the bounds measured in docs/testing.md.
  add_test(NAME reference_quality
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/reference/run_quality_tests.py
                   ${POCKET_CLI_COMMAND} ${CMAKE_BINARY_DIR}/reference-quality-work)
  set_tests_properties(reference_quality PROPERTIES
    TIMEOUT 600 LABELS "reference"
    ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1")
else()
  # Never skip silently: the test exists and fails with the reason.
  message(WARNING "reference_hf_logits will fail: ${_pocket_ref_problem}")
  add_test(NAME reference_hf_logits
           COMMAND ${CMAKE_COMMAND} -E echo "reference_hf_logits cannot run: ${_pocket_ref_problem}")
  set_tests_properties(reference_hf_logits PROPERTIES
    LABELS "reference" FAIL_REGULAR_EXPRESSION "cannot run")
  add_test(NAME reference_gguf_logits
           COMMAND ${CMAKE_COMMAND} -E echo "reference_gguf_logits cannot run: ${_pocket_ref_problem}")
  set_tests_properties(reference_gguf_logits PROPERTIES
    LABELS "reference" FAIL_REGULAR_EXPRESSION "cannot run")
  foreach(_name reference_default_path reference_quality)
    add_test(NAME ${_name}
             COMMAND ${CMAKE_COMMAND} -E echo "${_name} cannot run: ${_pocket_ref_problem}")
    set_tests_properties(${_name} PROPERTIES
      LABELS "reference" FAIL_REGULAR_EXPRESSION "cannot run")
  endforeach()
endif()
