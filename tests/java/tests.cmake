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
            -Ddev.pocket.cli=$<TARGET_FILE:pocket_cli>
            -cp ${_pocket_jar}:${_pocket_tests_jar}
            dev.pocket.tests.PocketTests ${POCKET_TEST_MODELS}/stories260K-f32.pocket)
  set_tests_properties(java_api PROPERTIES FIXTURES_REQUIRED test_models LABELS java TIMEOUT 300)

  # The same API from Kotlin, where a Kotlin compiler is installed (Debian's
  # `kotlin` package; not installed by tools/setup.sh, so CI machines without
  # it build and run only the Java tests). Kotlin 1.3's AutoCloseable.use is in
  # kotlin-stdlib-jdk7, beside the compiler's jars.
  find_program(POCKET_KOTLINC kotlinc)
  if(POCKET_KOTLINC)
    get_filename_component(_kotlinc_real ${POCKET_KOTLINC} REALPATH)
    get_filename_component(_kotlin_home ${_kotlinc_real} DIRECTORY)
    find_file(POCKET_KOTLIN_STDLIB_JDK7 kotlin-stdlib-jdk7.jar
              PATHS ${_kotlin_home}/../lib /usr/share/java NO_DEFAULT_PATH)
  endif()
  if(POCKET_KOTLINC AND POCKET_KOTLIN_STDLIB_JDK7)
    set(_kotlin_source ${CMAKE_CURRENT_SOURCE_DIR}/java/kotlin/KotlinUsage.kt)
    set(_kotlin_jar ${CMAKE_CURRENT_BINARY_DIR}/pocket-kotlin-usage.jar)
    add_custom_command(OUTPUT ${_kotlin_jar}
      COMMAND ${POCKET_KOTLINC} -nowarn -cp ${_pocket_jar}:${POCKET_KOTLIN_STDLIB_JDK7}
              ${_kotlin_source} -include-runtime -d ${_kotlin_jar}
      DEPENDS ${_kotlin_source} pocket_java
      COMMENT "Compiling tests/java/kotlin/KotlinUsage.kt" VERBATIM)
    add_custom_target(pocket_kotlin_usage ALL DEPENDS ${_kotlin_jar})
    add_test(NAME java_kotlin_usage
      COMMAND sh -c "${_jni_check}" ${CMAKE_CURRENT_BINARY_DIR}/java_kotlin_usage.log
              ${Java_JAVA_EXECUTABLE} -Xcheck:jni
              -Ddev.pocket.library=$<TARGET_FILE:pocket_jni>
              -cp ${_pocket_jar}:${POCKET_KOTLIN_STDLIB_JDK7}:${_kotlin_jar}
              KotlinUsageKt ${POCKET_TEST_MODELS}/stories260K-f32.pocket)
    set_tests_properties(java_kotlin_usage PROPERTIES FIXTURES_REQUIRED test_models LABELS java
                         TIMEOUT 300)
  endif()
endif()
