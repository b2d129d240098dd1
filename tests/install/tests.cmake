# find_package(pocket) from an installed copy, as another project uses it.
# Not under sanitizers: the consumer is built without them. A cross build's
# consumer is configured with the same toolchain (the initial cache below)
# and runs under the build's emulator.
if(NOT POCKET_SANITIZE)
  set(_consumer_cache "")
  foreach(_var CMAKE_TOOLCHAIN_FILE POCKET_ARM64_SYSROOT)
    if(${_var})
      # Absolute: the consumer is configured from another directory (a
      # toolchain given again on a later configure stays relative).
      file(REAL_PATH "${${_var}}" _path BASE_DIRECTORY ${CMAKE_SOURCE_DIR})
      string(APPEND _consumer_cache "set(${_var} \"${_path}\" CACHE STRING \"\")\n")
    endif()
  endforeach()
  file(WRITE ${CMAKE_BINARY_DIR}/install-test-cache.cmake "${_consumer_cache}")
  set(_emulator "")
  if(CMAKE_CROSSCOMPILING)
    set(_emulator ${CMAKE_CROSSCOMPILING_EMULATOR})
  endif()
  add_test(NAME install_find_package
    COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/install/check_install.sh ${CMAKE_BINARY_DIR}
            ${CMAKE_SOURCE_DIR} ${POCKET_TEST_MODELS}/stories260K-f32.pocket ${_emulator})
  set_tests_properties(install_find_package PROPERTIES FIXTURES_REQUIRED test_models
                       RUN_SERIAL TRUE)
endif()
