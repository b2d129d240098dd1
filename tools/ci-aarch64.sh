#!/usr/bin/env bash
# Cross-builds the CPU backend and its tests for aarch64 and runs them under
# qemu as a Neoverse N1 (NEON with dotprod), a Cortex-A72 (NEON without it)
# and QEMU's "max" CPU (adds SVE/SVE2 and BF16, so the SVE targets and the
# BFDOT attention run too). Builds only pocket_cpu and backends_tests; the
# engine's other modules need nothing beyond what configure checks for. Then
# the same build with Clang, run on "max". About 20 minutes on 2 cores from
# scratch. Runs as root on Debian 12 (installs the cross compiler, qemu-user,
# clang-14 and the arm64 packages it needs).
#
#   tools/ci-aarch64.sh [BUILD_DIR]      (default build-arm64)
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(realpath -m "${1:-build-arm64}")
sysroot=$build/sysroot

if ! command -v aarch64-linux-gnu-g++ >/dev/null || ! command -v qemu-aarch64 >/dev/null; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq g++-aarch64-linux-gnu qemu-user >/dev/null
fi
if ! command -v clang++-14 >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clang-14 >/dev/null
fi

# arm64 libraries unpacked into a private sysroot (no arm64 install on the host).
if [ ! -f "$sysroot/.complete" ]; then
  dpkg --print-foreign-architectures | grep -qx arm64 || dpkg --add-architecture arm64
  apt-get update -qq
  debs=$build/debs
  mkdir -p "$debs" "$sysroot"
  chmod 777 "$debs"  # apt downloads as the unprivileged _apt user
  (cd "$debs" && apt-get download -qq libhwy-dev:arm64 libhwy1:arm64 libgtest-dev:arm64 \
     libpcre2-dev:arm64 libpcre2-8-0:arm64 libutf8proc-dev:arm64 libutf8proc2:arm64)
  for d in "$debs"/*.deb; do dpkg-deb -x "$d" "$sysroot"; done
  touch "$sysroot/.complete"
fi
# Header-only dependencies come from the host.
for p in nlohmann-json3-dev libeigen3-dev pkg-config cmake; do
  dpkg -s "$p" >/dev/null 2>&1 || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$p" >/dev/null
done

export POCKET_ARM64_SYSROOT=$sysroot
export QEMU_LD_PREFIX=/usr/aarch64-linux-gnu
# One build: Highway's NEON target (ARMv8.0: the vmull/vpadal int8 path),
# SVE and SVE2, and the NEON_DOTPROD int8 kernels (sdot) that run where the
# CPU reports dotprod. Three emulated CPUs: Neoverse N1 (NEON with dotprod:
# the tests run NEON_DOTPROD and NEON), Cortex-A72 (ARMv8.0, no dotprod: an
# sdot reached there would fault) and QEMU's "max" (adds SVE, SVE2, BF16
# and I8MM, so attention's BFDOT products and prefill's SMMLA Linear run
# too). "max" runs again with 128-bit and 256-bit SVE vectors, the lengths
# of Armv9 phones (Cortex-A510/A710/X2 and later) and of Neoverse V1: there
# Highway adds the SVE2_128 and SVE_256 targets, which qemu's default (512
# bits) never reaches. POCKET_TEST_CPU_HAS_DOTPROD, POCKET_TEST_CPU_HAS_BF16
# and POCKET_TEST_CPU_HAS_I8MM tell the tests what each one has.
dir=$build/base
cmake -S . -B "$dir" -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake \
  -DPOCKET_ARM64_SYSROOT="$sysroot" -DCMAKE_BUILD_TYPE=Release \
  -DPOCKET_WITH_SENTENCEPIECE=OFF -DPOCKET_OPENCL=OFF -DPOCKET_BUILD_BENCH=OFF >/dev/null
cmake --build "$dir" --target pocket_cpu -j2
make -C "$dir" backends_tests/fast -j2  # /fast: not the CLI the test target also lists
# CPU:dotprod:bf16:i8mm
for cpu_has in neoverse-n1:1:0:0 cortex-a72:0:0:0 max:1:1:1 \
  max,sve-default-vector-length=16:1:1:1 max,sve-default-vector-length=32:1:1:1; do
  IFS=: read -r cpu dotprod bf16 i8mm <<<"$cpu_has"
  echo "--- backends_tests on qemu -cpu $cpu"
  POCKET_TEST_CPU_HAS_DOTPROD=$dotprod POCKET_TEST_CPU_HAS_BF16=$bf16 \
    POCKET_TEST_CPU_HAS_I8MM=$i8mm QEMU_CPU=$cpu \
    qemu-aarch64 -L /usr/aarch64-linux-gnu \
    -E LD_LIBRARY_PATH="$sysroot/usr/lib/aarch64-linux-gnu" "$dir/tests/backends_tests" \
    --gtest_brief=1
done

# The same with Clang (the Android NDK's compiler), whose arm_neon.h declares
# the bf16 types only in files built for BF16 (attention_bf16_arm.cc), on
# "max", where every Arm target, dotprod, BF16 and I8MM run.
dir=$build/clang
cat >"$build/clang.cmake" <<TOOLCHAIN
include($PWD/cmake/aarch64-linux-gnu.cmake)
set(CMAKE_C_COMPILER clang-14)
set(CMAKE_CXX_COMPILER clang++-14)
set(CMAKE_C_COMPILER_TARGET aarch64-linux-gnu)
set(CMAKE_CXX_COMPILER_TARGET aarch64-linux-gnu)
TOOLCHAIN
cmake -S . -B "$dir" -DCMAKE_TOOLCHAIN_FILE="$build/clang.cmake" \
  -DPOCKET_ARM64_SYSROOT="$sysroot" -DCMAKE_BUILD_TYPE=Release \
  -DPOCKET_WITH_SENTENCEPIECE=OFF -DPOCKET_OPENCL=OFF -DPOCKET_BUILD_BENCH=OFF >/dev/null
cmake --build "$dir" --target pocket_cpu -j2
make -C "$dir" backends_tests/fast -j2
echo "--- backends_tests (Clang build) on qemu -cpu max"
POCKET_TEST_CPU_HAS_DOTPROD=1 POCKET_TEST_CPU_HAS_BF16=1 POCKET_TEST_CPU_HAS_I8MM=1 QEMU_CPU=max \
  qemu-aarch64 -L /usr/aarch64-linux-gnu \
  -E LD_LIBRARY_PATH="$sysroot/usr/lib/aarch64-linux-gnu" "$dir/tests/backends_tests" \
  --gtest_brief=1
