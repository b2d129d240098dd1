#!/usr/bin/env bash
# Builds build/Pocket.xcframework, the binary target Package.swift uses on
# Apple platforms (module CPocket: include/pocket/pocket.h over one static
# library holding the engine and its dependencies), for:
#
#   ios-arm64                    iPhone and iPad
#   ios-arm64_x86_64-simulator   the iOS simulator on Apple silicon and Intel Macs
#   macos-arm64_x86_64           macOS
#
# Usage:
#   POCKET_APPLE_DEPS=/path/to/deps.cmake tools/build-xcframework.sh [OUT.xcframework]
#
# What it needs (it checks each and says what is missing):
#   macOS with Xcode      xcodebuild, xcrun and libtool (Xcode's command line tools).
#   cmake 3.24 or later   with the Xcode or Ninja generator.
#   POCKET_APPLE_DEPS     a CMake file that defines, from sources you vendor, the targets Pocket's
#                         build links (hwy::hwy, hwy::hwy_contrib, nlohmann_json::nlohmann_json,
#                         Eigen3::Eigen, PkgConfig::PCRE2, PkgConfig::UTF8PROC), as static
#                         libraries: Apple platforms have no Debian packages to find.
#                         tools/android-deps.example.cmake is a starting point for either platform.
#
# Optional:
#   POCKET_APPLE_BUILD    the build folder, default build-apple (one subfolder per slice).
#   POCKET_IOS_VERSION    the minimum iOS version, default 15.0 (Package.swift's platforms).
#   POCKET_MACOS_VERSION  the minimum macOS version, default 12.0.
#
# Not run here: the machines this project is developed and tested on run Linux and have no
# Xcode. What can be checked here is: the Swift package builds and passes its tests on Linux
# against libpocket.so (ctest -L swift), and the library builds for 64-bit Arm (tools/ci-aarch64.sh).
set -euo pipefail
caller=$PWD
cd "$(dirname "$0")/.."
root=$PWD

out=${1:-$root/build/Pocket.xcframework}
case $out in /*) ;; *) out=$caller/$out ;; esac
build=${POCKET_APPLE_BUILD:-$root/build-apple}
ios_version=${POCKET_IOS_VERSION:-15.0}
macos_version=${POCKET_MACOS_VERSION:-12.0}
deps=${POCKET_APPLE_DEPS:-}

missing=()
if [ "$(uname -s)" != Darwin ]; then
  missing+=("this is $(uname -s): an XCFramework is built on macOS with Xcode (xcodebuild is not available elsewhere)")
fi
for tool in xcodebuild xcrun libtool cmake; do
  command -v "$tool" >/dev/null || missing+=("$tool is not on the PATH (install Xcode and its command line tools, and CMake 3.24 or later)")
done
if [ -z "$deps" ]; then
  missing+=("POCKET_APPLE_DEPS is not set: a CMake file defining Pocket's dependency targets from vendored sources (see tools/android-deps.example.cmake)")
elif [ ! -f "$deps" ]; then
  missing+=("POCKET_APPLE_DEPS=$deps does not exist")
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "build-xcframework.sh cannot build Pocket.xcframework:" >&2
  for m in "${missing[@]}"; do echo "  - $m" >&2; done
  echo "See the comment at the top of tools/build-xcframework.sh and docs/apps.md (iOS and macOS)." >&2
  exit 1
fi

jobs=$(sysctl -n hw.ncpu 2>/dev/null || echo 4)

# slice NAME SYSTEM SDK ARCHS MIN_VERSION: configures and builds one slice, then merges its
# static libraries (Pocket's modules and the vendored dependencies) into NAME/libpocket.a.
slice() {
  local name=$1 system=$2 sdk=$3 archs=$4 min=$5 dir=$build/$1
  echo "=== $name: configuring $dir"
  # Only the library: no tests, benchmarks, command line or shared library (the XCFramework
  # links statically into the app); the build's defaults choose the backends (Metal on Apple).
  cmake -S "$root" -B "$dir" -G Ninja \
    -DCMAKE_SYSTEM_NAME="$system" -DCMAKE_OSX_SYSROOT="$sdk" \
    -DCMAKE_OSX_ARCHITECTURES="$archs" -DCMAKE_OSX_DEPLOYMENT_TARGET="$min" \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_PROJECT_pocket_INCLUDE="$deps" \
    -DPOCKET_USE_SYSTEM_DEPS=OFF -DPOCKET_WITH_SENTENCEPIECE=OFF \
    -DPOCKET_BUILD_TESTS=OFF -DPOCKET_BUILD_BENCH=OFF -DPOCKET_BUILD_TOOLS=OFF \
    -DPOCKET_SHARED=OFF -DPOCKET_JAVA=OFF
  echo "=== $name: building"
  cmake --build "$dir" --target pocket_api -j "$jobs"
  local libs
  libs=$(find "$dir" -name '*.a' -not -name libpocket.a | sort)
  # shellcheck disable=SC2086  # one word per library
  libtool -static -o "$dir/libpocket.a" $libs
}

slice ios-arm64 iOS iphoneos arm64 "$ios_version"
slice ios-simulator iOS iphonesimulator "arm64;x86_64" "$ios_version"
slice macos Darwin macosx "arm64;x86_64" "$macos_version"

# The headers every slice shares, as the module Package.swift imports.
headers=$build/headers
rm -rf "$headers"
mkdir -p "$headers"
cp "$root/include/pocket/pocket.h" "$headers/"
cat >"$headers/module.modulemap" <<'EOF'
module CPocket {
  header "pocket.h"
  link "c++"
  export *
}
EOF

rm -rf "$out"
xcodebuild -create-xcframework \
  -library "$build/ios-arm64/libpocket.a" -headers "$headers" \
  -library "$build/ios-simulator/libpocket.a" -headers "$headers" \
  -library "$build/macos/libpocket.a" -headers "$headers" \
  -output "$out"
echo "=== wrote $out"
