# The Swift package (Package.swift at the root) built and tested by `swift
# test` against this build's libpocket.so: `ctest -L swift`. Where the build
# has no libpocket.so, or no Swift toolchain is on the PATH, the test is
# still registered and fails saying so (CI must not lose it silently).
# Sanitized and cross-compiled builds leave it out: Swift's runtime cannot
# load an ASan-instrumented library without preloading ASan's, and an
# aarch64 library cannot be loaded here.
if(NOT POCKET_SANITIZE AND NOT CMAKE_CROSSCOMPILING)
  find_program(POCKET_SWIFT swift)
  if(POCKET_SWIFT AND TARGET pocket_shared)
    add_test(NAME swift_package
      COMMAND ${POCKET_SWIFT} test --package-path ${CMAKE_SOURCE_DIR}
              --scratch-path ${CMAKE_BINARY_DIR}/swift)
    set_tests_properties(swift_package PROPERTIES
      ENVIRONMENT "POCKET_LIB_DIR=${CMAKE_BINARY_DIR};POCKET_TEST_MODEL=${POCKET_TEST_MODELS}/stories260K-f32.pocket;POCKET_CLI=$<TARGET_FILE:pocket_cli>"
      FIXTURES_REQUIRED test_models LABELS swift TIMEOUT 1800
      # The package's .build lock is one per scratch folder.
      RUN_SERIAL TRUE)
  else()
    add_test(NAME swift_package COMMAND sh -c
      "echo 'swift_package: needs swift on the PATH and libpocket.so (POCKET_SHARED=ON)'; exit 1")
    set_tests_properties(swift_package PROPERTIES LABELS swift)
  endif()
endif()
