# The Metal backend checked without an Apple GPU (docs/metal.md): the Metal
# library compiled as C++ against the project's Metal shim
# (tests/metal/shim), its entry points run by a CPU harness
# (tests/metal/harness) through the backend's own ops (src/backends/metal),
# each against the scalar reference ops. Label metal_shim.
set(POCKET_METAL_SHIM_DIR ${CMAKE_CURRENT_SOURCE_DIR}/metal/shim)
# How the harness compiles the library: POCKET_WG 64 in SIMD-groups of 32,
# with SIMD-group reductions and half, as the host compiles it for Apple GPUs.
set(POCKET_METAL_SHIM_DEFS POCKET_WG=64 POCKET_HAS_SUBGROUPS=1 POCKET_HAS_FP16=1)

# The library preprocessed as the harness compiles it: the harness reads
# each kernel's [[buffer(n)]] and thread-position attributes from it.
set(POCKET_METAL_PREPROCESSED ${POCKET_METAL_GENERATED}/pocket_kernels.ii)
list(TRANSFORM POCKET_METAL_SHIM_DEFS PREPEND -D OUTPUT_VARIABLE _pocket_metal_shim_flags)
add_custom_command(OUTPUT ${POCKET_METAL_PREPROCESSED}
  COMMAND ${CMAKE_CXX_COMPILER} -E -P -x c++ -std=c++17 -I${POCKET_METAL_SHIM_DIR}
          ${_pocket_metal_shim_flags} ${POCKET_METAL_SOURCE} -o ${POCKET_METAL_PREPROCESSED}
  DEPENDS ${POCKET_METAL_SOURCE} ${POCKET_METAL_SHIM_DIR}/metal_shim.h
          ${POCKET_METAL_SHIM_DIR}/runtime.h
  COMMENT "Preprocessing the Metal library for the shim harness" VERBATIM)
add_custom_target(metal_library_preprocessed DEPENDS ${POCKET_METAL_PREPROCESSED})
add_dependencies(metal_library_preprocessed metal_library_source)

file(GLOB _pocket_metal_tests CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/metal/*_test.cc)
file(GLOB _pocket_metal_harness CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/metal/harness/*.cc)
file(GLOB _pocket_metal_host CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/backends/metal/*.cc)
add_executable(metal_shim_tests ${_pocket_metal_tests} ${_pocket_metal_harness}
               ${_pocket_metal_host} ${POCKET_METAL_EMBEDDED})
add_dependencies(metal_shim_tests metal_library_preprocessed)
target_include_directories(metal_shim_tests PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}
                           ${POCKET_METAL_GENERATED})
target_link_libraries(metal_shim_tests PRIVATE pocket_cpu pocket_reference GTest::gtest GTest::gtest_main)
target_compile_options(metal_shim_tests PRIVATE ${POCKET_WARNINGS})
target_compile_definitions(metal_shim_tests PRIVATE
  POCKET_METAL_PREPROCESSED="${POCKET_METAL_PREPROCESSED}")
# The kernels themselves: C++ only through the shim, whose [[buffer(n)]]
# attributes no C++ compiler knows; their casts between byte buffers and
# typed pointers are what GPU code does.
if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  set(_pocket_metal_no_attr_warning -Wno-unknown-attributes)
else()
  set(_pocket_metal_no_attr_warning -Wno-attributes)
endif()
set_source_files_properties(${CMAKE_CURRENT_SOURCE_DIR}/metal/harness/kernels.cc PROPERTIES
  COMPILE_DEFINITIONS "${POCKET_METAL_SHIM_DEFS}"
  COMPILE_OPTIONS "-I${POCKET_METAL_SHIM_DIR};${_pocket_metal_no_attr_warning};-fno-strict-aliasing"
  OBJECT_DEPENDS "${POCKET_METAL_SOURCE};${POCKET_METAL_NAMES}")
if(TARGET pocket_opencl)  # the OpenCL program's kernels, for the pipeline-list test
  target_link_libraries(metal_shim_tests PRIVATE pocket_opencl)
  target_compile_definitions(metal_shim_tests PRIVATE POCKET_WITH_OPENCL=1)
endif()
gtest_discover_tests(metal_shim_tests DISCOVERY_TIMEOUT 60 PROPERTIES LABELS metal_shim)

# Every Metal kernel translation unit compiles as C++14 (the Metal Shading
# Language's base) against the shim with warnings as errors, apart from the
# attributes only Metal knows: as the host builds it (SIMD-group reductions,
# 64 threads), with the OpenCL 1.2 baseline's tree reductions, and with
# threadgroups of one SIMD-group.
find_program(POCKET_CLANGXX14 clang++-14)
if(POCKET_CLANGXX14)
  foreach(config "64;1" "64;0" "32;1")
    list(GET config 0 wg)
    list(GET config 1 sg)
    add_test(NAME metal_library_compiles_wg${wg}_subgroups${sg}
      COMMAND ${POCKET_CLANGXX14} -std=c++14 -fsyntax-only -Wall -Wextra -Wno-unused-parameter
              -Werror -Wno-unknown-attributes -x c++ -I${POCKET_METAL_SHIM_DIR} -DPOCKET_WG=${wg}
              -DPOCKET_HAS_SUBGROUPS=${sg} -DPOCKET_HAS_FP16=1 ${POCKET_METAL_SOURCE})
    set_tests_properties(metal_library_compiles_wg${wg}_subgroups${sg} PROPERTIES
      LABELS metal_shim)
  endforeach()
endif()

# The host's Objective-C++ (and the Mac tests' encoder) passes the
# compiler's syntax and ARC checks against the project's declarations of the
# Metal and Foundation API it calls (tests/metal/objc), so a typo or a
# selector of the wrong shape fails here too. The files are checked as one
# translation unit (-include each), which parses the shared headers once.
if(POCKET_CLANGXX14)
  file(GLOB _pocket_metal_mm CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/backends/metal/*.mm
       ${CMAKE_CURRENT_SOURCE_DIR}/metal/device/*.mm)
  list(TRANSFORM _pocket_metal_mm PREPEND "-include;" OUTPUT_VARIABLE _pocket_metal_mm_includes)
  add_test(NAME metal_host_syntax
    COMMAND ${POCKET_CLANGXX14} -std=c++17 -fsyntax-only -x objective-c++ -fobjc-arc
            -fobjc-runtime=macosx-11.0 -fblocks -Wall -Wextra -Wno-unused-parameter -Werror
            -I${CMAKE_CURRENT_SOURCE_DIR}/metal/objc -I${CMAKE_SOURCE_DIR}/src
            -I${CMAKE_SOURCE_DIR}/include -I${CMAKE_CURRENT_SOURCE_DIR}
            ${_pocket_metal_mm_includes} /dev/null)
  set_tests_properties(metal_host_syntax PROPERTIES LABELS metal_shim)
endif()

# On a Mac (POCKET_METAL): the same op tests on the GPU, through the host's
# CommandEncoder, and the whole-model acceptance tests. Label metal:
# `ctest -L metal`. They have not run yet (docs/metal.md).
if(POCKET_METAL)
  enable_language(OBJCXX)
  file(GLOB _pocket_metal_op_tests CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/metal/*_test.cc)
  list(FILTER _pocket_metal_op_tests EXCLUDE REGEX "pipelines_test\\.cc$")
  file(GLOB helpers CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/testing/*.cc)
  add_executable(metal_tests ${_pocket_metal_op_tests}
                 ${CMAKE_CURRENT_SOURCE_DIR}/metal/device/device_test_encoder.mm
                 ${CMAKE_CURRENT_SOURCE_DIR}/metal/device/model_test.cc ${helpers})
  target_include_directories(metal_tests PRIVATE ${CMAKE_CURRENT_SOURCE_DIR} ${CMAKE_SOURCE_DIR})
  target_compile_options(metal_tests PRIVATE $<$<COMPILE_LANGUAGE:OBJCXX>:-fobjc-arc>)
  target_compile_definitions(metal_tests PRIVATE POCKET_METAL_DEVICE_TESTS=1
    POCKET_TEST_DATA="${POCKET_TEST_DATA}" POCKET_MODELS_DIR="${POCKET_MODELS_DIR}"
    POCKET_BINARY_DIR="${CMAKE_BINARY_DIR}" POCKET_TEST_MODELS="${CMAKE_BINARY_DIR}/test-models")
  target_link_libraries(metal_tests PRIVATE pocket_metal pocket_reference pocket_cpu
                        pocket_runtime pocket_convert GTest::gtest GTest::gtest_main)
  gtest_discover_tests(metal_tests DISCOVERY_TIMEOUT 60
    PROPERTIES FIXTURES_REQUIRED test_models LABELS metal)
endif()
