#!/usr/bin/env bash
# Assembles pocket.aar, the Java API (dev.pocket) for Android apps:
#
#   classes.jar                      the dev.pocket classes (javac --release 11)
#   jni/<abi>/libpocket_jni.so       the JNI glue with the whole engine, per ABI
#   AndroidManifest.xml, proguard.txt (keeps what the JNI glue looks up by name), R.txt
#
# Usage:
#   ANDROID_NDK=/path/to/ndk POCKET_ANDROID_DEPS=/path/to/deps.cmake tools/build-android-aar.sh [OUT.aar]
#
# What it needs (it checks each and says what is missing):
#   ANDROID_NDK           an Android NDK (r23 or later; ANDROID_NDK_HOME is read too): the script
#                         uses its build/cmake/android.toolchain.cmake.
#   POCKET_ANDROID_DEPS   a CMake file that defines the targets Pocket's build links, from sources
#                         you provide (the NDK has no Debian packages to find):
#                           hwy::hwy, hwy::hwy_contrib        Highway 1.0.3 (what Pocket is tested with)
#                           nlohmann_json::nlohmann_json     nlohmann/json 3.10 or later
#                           Eigen3::Eigen                    Eigen 3.3 or later (headers only)
#                           PkgConfig::PCRE2                 PCRE2's 8-bit library
#                           PkgConfig::UTF8PROC              utf8proc
#                           sentencepiece                    only with POCKET_ANDROID_SENTENCEPIECE=ON
#                         It is included at the end of Pocket's project() call
#                         (CMAKE_PROJECT_pocket_INCLUDE), so it can add_subdirectory() the vendored
#                         sources and add ALIAS targets with these names.
#                         tools/android-deps.example.cmake is a starting point.
#   cmake 3.24 or later   (FindJNI finds the NDK's jni.h from 3.24 on), ninja or make
#   a JDK 11 or later     javac and jar on the PATH, or JAVA_HOME
#
# Optional:
#   POCKET_ANDROID_ABIS          default "arm64-v8a x86_64"; armeabi-v7a may be added, but no
#                                32-bit build of Pocket has ever been tried.
#   POCKET_ANDROID_API           minimum API level (ANDROID_PLATFORM), default 26.
#   POCKET_ANDROID_SENTENCEPIECE ON to support SentencePiece .model tokenizers (default OFF: the
#                                deps file must then also define the target `sentencepiece`).
#   POCKET_ANDROID_BUILD         the build folder, default build-android (one subfolder per ABI).
#
# Not run here: the machines this project is developed and tested on have no NDK and no Android
# device. What can be built here is built by the ordinary CMake build and tested on the JVM
# (ctest -L java: libpocket_jni.so for x86-64 Linux and pocket.jar); docs/apps.md says more.
set -euo pipefail
caller=$PWD
cd "$(dirname "$0")/.."
root=$PWD

out=${1:-$root/build-android/pocket.aar}
case $out in /*) ;; *) out=$caller/$out ;; esac
abis=${POCKET_ANDROID_ABIS:-arm64-v8a x86_64}
api=${POCKET_ANDROID_API:-26}
spm=${POCKET_ANDROID_SENTENCEPIECE:-OFF}
build=${POCKET_ANDROID_BUILD:-$root/build-android}
ndk=${ANDROID_NDK:-${ANDROID_NDK_HOME:-}}

missing=()
if [ -z "$ndk" ]; then
  missing+=("ANDROID_NDK is not set: point it at an Android NDK (r23 or later), e.g. \$ANDROID_HOME/ndk/<version>")
elif [ ! -f "$ndk/build/cmake/android.toolchain.cmake" ]; then
  missing+=("ANDROID_NDK=$ndk has no build/cmake/android.toolchain.cmake: is it an NDK's root folder?")
fi
deps=${POCKET_ANDROID_DEPS:-}
if [ -z "$deps" ]; then
  missing+=("POCKET_ANDROID_DEPS is not set: a CMake file defining hwy::hwy, hwy::hwy_contrib, nlohmann_json::nlohmann_json, Eigen3::Eigen, PkgConfig::PCRE2 and PkgConfig::UTF8PROC from vendored sources (see tools/android-deps.example.cmake)")
elif [ ! -f "$deps" ]; then
  missing+=("POCKET_ANDROID_DEPS=$deps does not exist")
fi
if ! command -v cmake >/dev/null; then
  missing+=("cmake is not on the PATH (3.24 or later)")
else
  cmake_version=$(cmake --version | sed -n 's/^cmake version \([0-9]*\.[0-9]*\).*/\1/p')
  if [ "$(printf '%s\n3.24\n' "$cmake_version" | sort -V | head -n1)" != "3.24" ]; then
    missing+=("cmake $cmake_version is too old: 3.24 or later finds the NDK's jni.h")
  fi
fi
jar=jar
javac=javac
if [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/jar" ]; then jar=$JAVA_HOME/bin/jar; fi
if [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/javac" ]; then javac=$JAVA_HOME/bin/javac; fi
if ! command -v "$jar" >/dev/null || ! command -v "$javac" >/dev/null; then
  missing+=("no JDK: javac and jar (JDK 11 or later) must be on the PATH or in \$JAVA_HOME/bin")
fi
for abi in $abis; do
  case $abi in
    arm64-v8a | x86_64 | armeabi-v7a | x86) ;;
    *) missing+=("POCKET_ANDROID_ABIS: unknown ABI '$abi' (arm64-v8a, armeabi-v7a, x86_64, x86)") ;;
  esac
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "build-android-aar.sh cannot build the AAR:" >&2
  for m in "${missing[@]}"; do echo "  - $m" >&2; done
  echo "See the comment at the top of tools/build-android-aar.sh and docs/apps.md (Android)." >&2
  exit 1
fi

generator=()
if command -v ninja >/dev/null; then generator=(-G Ninja); fi
jobs=$(nproc 2>/dev/null || echo 2)

for abi in $abis; do
  dir=$build/$abi
  echo "=== $abi: configuring $dir"
  # Only the library: no tests, benchmarks or command line (they need a device or an emulator
  # to run), no OpenCL (the NDK has no OpenCL loader to link; apps load the vendor's at run
  # time), no libpocket.so (the JNI library carries the engine itself). c++_static keeps the
  # AAR to one library per ABI, with no libc++_shared.so to clash with the app's.
  cmake -S "$root" -B "$dir" "${generator[@]}" \
    -DCMAKE_TOOLCHAIN_FILE="$ndk/build/cmake/android.toolchain.cmake" \
    -DANDROID_ABI="$abi" -DANDROID_PLATFORM="android-$api" -DANDROID_STL=c++_static \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PROJECT_pocket_INCLUDE="$deps" \
    -DPOCKET_USE_SYSTEM_DEPS=OFF -DPOCKET_WITH_SENTENCEPIECE="$spm" \
    -DPOCKET_BUILD_TESTS=OFF -DPOCKET_BUILD_BENCH=OFF -DPOCKET_BUILD_TOOLS=OFF \
    -DPOCKET_SHARED=OFF -DPOCKET_JAVA=ON
  if ! grep -qx 'POCKET_JAVA:BOOL=ON' "$dir/CMakeCache.txt"; then
    echo "$abi: CMake found no JDK or no jni.h (POCKET_JAVA is off); see $dir/CMakeCache.txt" >&2
    exit 1
  fi
  echo "=== $abi: building"
  cmake --build "$dir" --target pocket_jni pocket_java -j "$jobs"
done

stage=$build/aar
rm -rf "$stage"
mkdir -p "$stage"
first=${abis%% *}
# Every ABI's build compiles the same Java sources; the first one's jar is the AAR's classes.
cp "$build/$first/src/bindings/pocket.jar" "$stage/classes.jar"
for abi in $abis; do
  mkdir -p "$stage/jni/$abi"
  cp "$build/$abi/src/bindings/libpocket_jni.so" "$stage/jni/$abi/"
done
cat >"$stage/AndroidManifest.xml" <<EOF
<?xml version="1.0" encoding="utf-8"?>
<manifest xmlns:android="http://schemas.android.com/apk/res/android" package="dev.pocket">
    <uses-sdk android:minSdkVersion="$api" />
</manifest>
EOF
# Consumer rules for R8/ProGuard in the app's build: the JNI glue finds these classes, methods
# and native entry points by name (dev.pocket.Call.piece, PocketException.fromNative, ...), so
# they must keep their names.
cat >"$stage/proguard.txt" <<'EOF'
-keep class dev.pocket.** { *; }
EOF
: >"$stage/R.txt"
mkdir -p "$(dirname "$out")"
rm -f "$out"
(cd "$stage" && "$jar" --create --no-manifest --file "$out" .)
echo "=== wrote $out ($abis, minSdk $api)"
