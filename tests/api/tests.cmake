# The C ABI test is plain C, linked with the C++ library.
add_executable(c_api_test ${CMAKE_CURRENT_SOURCE_DIR}/api/c_api_test.c)
set_target_properties(c_api_test PROPERTIES C_STANDARD 99 LINKER_LANGUAGE CXX)
target_compile_options(c_api_test PRIVATE -Wall -Wextra -pedantic)
target_link_libraries(c_api_test PRIVATE pocket::pocket)
add_test(NAME c_api COMMAND c_api_test ${POCKET_TEST_MODELS}/stories260K-f32.pocket)
set_tests_properties(c_api PROPERTIES FIXTURES_REQUIRED test_models)
