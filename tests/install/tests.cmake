# find_package(pocket) from an installed copy, as another project uses it.
# Not under sanitizers: the consumer is built without them.
if(NOT POCKET_SANITIZE)
  add_test(NAME install_find_package
    COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/install/check_install.sh ${CMAKE_BINARY_DIR}
            ${CMAKE_SOURCE_DIR} ${POCKET_TEST_MODELS}/stories260K-f32.pocket)
  set_tests_properties(install_find_package PROPERTIES FIXTURES_REQUIRED test_models
                       RUN_SERIAL TRUE)
endif()
