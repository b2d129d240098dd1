# An example of the file tools/build-android-aar.sh takes as POCKET_ANDROID_DEPS: it defines,
# from sources you vendor, the targets Pocket's build links (cmake/PocketDependencies.cmake),
# since an NDK build has no system packages to find. The script includes it at the end of
# Pocket's project() call (CMAKE_PROJECT_pocket_INCLUDE), once per ABI.
#
# Copy it, point POCKET_VENDOR at your checkouts, and check each library's CMake options and
# target names against the version you vendor: they change between releases. This file has not
# been run: the machines Pocket is developed on have no NDK (docs/apps.md).
#
#   $POCKET_VENDOR/highway     Highway 1.0.3 (the version Pocket is tested with)
#   $POCKET_VENDOR/json        nlohmann/json 3.10 or later
#   $POCKET_VENDOR/eigen       Eigen 3.3 or later (headers only)
#   $POCKET_VENDOR/pcre2       PCRE2 10.42 or later
#   $POCKET_VENDOR/utf8proc    utf8proc 2.8 or later
#   $POCKET_VENDOR/sentencepiece  only with POCKET_ANDROID_SENTENCEPIECE=ON
if(NOT DEFINED POCKET_VENDOR)
  set(POCKET_VENDOR "${CMAKE_CURRENT_LIST_DIR}/../third_party")
endif()
# Static libraries only, position-independent: they end up inside libpocket_jni.so.
set(BUILD_SHARED_LIBS OFF CACHE BOOL "" FORCE)
set(CMAKE_POSITION_INDEPENDENT_CODE ON)

set(HWY_ENABLE_TESTS OFF CACHE BOOL "" FORCE)
set(HWY_ENABLE_EXAMPLES OFF CACHE BOOL "" FORCE)
set(HWY_ENABLE_INSTALL OFF CACHE BOOL "" FORCE)
set(HWY_ENABLE_CONTRIB ON CACHE BOOL "" FORCE)
add_subdirectory(${POCKET_VENDOR}/highway ${CMAKE_BINARY_DIR}/vendor/highway EXCLUDE_FROM_ALL)
add_library(hwy::hwy ALIAS hwy)
add_library(hwy::hwy_contrib ALIAS hwy_contrib)

set(JSON_BuildTests OFF CACHE BOOL "" FORCE)
set(JSON_Install OFF CACHE BOOL "" FORCE)
# Defines nlohmann_json::nlohmann_json itself.
add_subdirectory(${POCKET_VENDOR}/json ${CMAKE_BINARY_DIR}/vendor/json EXCLUDE_FROM_ALL)

add_library(pocket_vendor_eigen INTERFACE)
target_include_directories(pocket_vendor_eigen INTERFACE ${POCKET_VENDOR}/eigen)
add_library(Eigen3::Eigen ALIAS pocket_vendor_eigen)

set(PCRE2_BUILD_PCRE2_8 ON CACHE BOOL "" FORCE)
set(PCRE2_BUILD_PCRE2GREP OFF CACHE BOOL "" FORCE)
set(PCRE2_BUILD_TESTS OFF CACHE BOOL "" FORCE)
set(PCRE2_SUPPORT_JIT ON CACHE BOOL "" FORCE)
add_subdirectory(${POCKET_VENDOR}/pcre2 ${CMAKE_BINARY_DIR}/vendor/pcre2 EXCLUDE_FROM_ALL)
# pcre2.h is generated into PCRE2's build folder.
target_include_directories(pcre2-8-static INTERFACE ${CMAKE_BINARY_DIR}/vendor/pcre2)
add_library(PkgConfig::PCRE2 ALIAS pcre2-8-static)

set(UTF8PROC_INSTALL OFF CACHE BOOL "" FORCE)
add_subdirectory(${POCKET_VENDOR}/utf8proc ${CMAKE_BINARY_DIR}/vendor/utf8proc EXCLUDE_FROM_ALL)
add_library(PkgConfig::UTF8PROC ALIAS utf8proc)

if(POCKET_WITH_SENTENCEPIECE)
  set(SPM_ENABLE_SHARED OFF CACHE BOOL "" FORCE)
  add_subdirectory(${POCKET_VENDOR}/sentencepiece ${CMAKE_BINARY_DIR}/vendor/sentencepiece
                   EXCLUDE_FROM_ALL)
  target_include_directories(sentencepiece-static INTERFACE ${POCKET_VENDOR}/sentencepiece/src)
  add_library(sentencepiece ALIAS sentencepiece-static)
endif()
