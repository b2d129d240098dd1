# The Java API's tests (tests/java/dev/pocket/tests), run on the JVM against
# libpocket_jni.so and pocket.jar from src/bindings. Not registered under the
# sanitizers: a JVM cannot load an ASan-instrumented library unless the ASan
# runtime is preloaded into the java process, whose own allocations ASan then
# reports. Not when cross-compiling either: the host's JVM cannot load a
# library for another machine (the Android AAR script builds those for
# packaging only).
if(TARGET pocket_jni AND TARGET pocket_java AND NOT POCKET_SANITIZE AND NOT CMAKE_CROSSCOMPILING)
  include(UseJava)
  file(GLOB _java_tests CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/java/dev/pocket/tests/*.java)
  set(CMAKE_JAVA_COMPILE_FLAGS --release 11 -Xlint:all -Werror)
  add_jar(pocket_java_tests SOURCES ${_java_tests} INCLUDE_JARS pocket_java
          OUTPUT_NAME pocket-tests)
  get_target_property(_pocket_jar pocket_java JAR_FILE)
  get_target_property(_pocket_tests_jar pocket_java_tests JAR_FILE)
  # -Xcheck:jni makes the JVM verify every JNI call the glue makes; it
  # reports some misuse (a call made with an exception pending, local
  # references overflowing a frame) as a warning and carries on, so the
  # wrapper fails the test on any such warning.
  set(_jni_check [=["$@" > "$0" 2>&1; rc=$?; cat "$0"
if grep -q -e "WARNING in native method" -e "JNI local refs" "$0"; then echo "-Xcheck:jni reported JNI misuse"; exit 1; fi
exit $rc]=])
  add_test(NAME java_api
    COMMAND sh -c "${_jni_check}" ${CMAKE_CURRENT_BINARY_DIR}/java_api.log
            ${Java_JAVA_EXECUTABLE} -Xcheck:jni
            -Ddev.pocket.library=$<TARGET_FILE:pocket_jni>
            -cp ${_pocket_jar}:${_pocket_tests_jar}
            dev.pocket.tests.PocketTests ${POCKET_TEST_MODELS}/stories260K-f32.pocket)
  set_tests_properties(java_api PROPERTIES FIXTURES_REQUIRED test_models LABELS java TIMEOUT 300)
endif()
