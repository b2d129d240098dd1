# Finds Pocket's dependencies. With POCKET_USE_SYSTEM_DEPS=OFF the caller
# provides the same targets (hwy::hwy, nlohmann_json::nlohmann_json,
# Eigen3::Eigen, PkgConfig::PCRE2, sentencepiece) itself, e.g. from vendored
# sources added with add_subdirectory() in a mobile build.
find_package(Threads REQUIRED)

if(POCKET_USE_SYSTEM_DEPS)
  find_package(hwy REQUIRED)
  find_package(nlohmann_json 3.10 REQUIRED)
  find_package(Eigen3 3.3 REQUIRED NO_MODULE)
  find_package(PkgConfig REQUIRED)
  pkg_check_modules(PCRE2 REQUIRED IMPORTED_TARGET libpcre2-8)
  if(POCKET_WITH_SENTENCEPIECE)
    pkg_check_modules(SPM REQUIRED IMPORTED_TARGET sentencepiece)
    set(POCKET_SPM_TARGET PkgConfig::SPM)
  endif()
else()
  foreach(t hwy::hwy hwy::hwy_contrib nlohmann_json::nlohmann_json Eigen3::Eigen PkgConfig::PCRE2)
    if(NOT TARGET ${t})
      message(FATAL_ERROR "POCKET_USE_SYSTEM_DEPS=OFF: define target ${t} before adding Pocket")
    endif()
  endforeach()
  if(POCKET_WITH_SENTENCEPIECE)
    if(NOT TARGET sentencepiece-static AND NOT TARGET sentencepiece)
      message(FATAL_ERROR "POCKET_USE_SYSTEM_DEPS=OFF: add sentencepiece or set POCKET_WITH_SENTENCEPIECE=OFF")
    endif()
    set(POCKET_SPM_TARGET sentencepiece)
  endif()
endif()
