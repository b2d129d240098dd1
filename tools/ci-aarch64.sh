#!/usr/bin/env bash
# Cross-builds Pocket and its whole test suite for aarch64 and runs it under
# qemu (cmake/aarch64-linux-gnu.cmake makes ctest start every test binary,
# and the `pocket` CLI the tests call, under qemu-aarch64) as QEMU's "max"
# CPU with 128-bit vectors (SVE2, BF16 and I8MM, so the SVE targets, the
# BFDOT attention and the SMMLA prompts run too); the kernels' tests also as
# a Neoverse N1 (NEON with dotprod), a Cortex-A72 (NEON without it) and with
# 256- and 512-bit vectors. Then the CPU backend and its tests built with
# Clang, run on 128-bit "max". About 40 minutes on 2 cores from scratch. Runs as
# root on Debian 12 (installs the cross compiler, qemu-user, clang-14 and
# the arm64 packages it needs).
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

# arm64 libraries unpacked into a private sysroot (no arm64 install on the
# host: Debian's libsentencepiece-dev cannot be installed for both
# architectures). The marker records the list, so a sysroot unpacked for
# an older list is unpacked again.
pkgs="libhwy-dev libhwy1 libgtest-dev libpcre2-dev libpcre2-8-0 libutf8proc-dev libutf8proc2
  libsentencepiece-dev libsentencepiece0"
if [ "$(cat "$sysroot/.complete" 2>/dev/null)" != "$pkgs" ]; then
  dpkg --print-foreign-architectures | grep -qx arm64 || dpkg --add-architecture arm64
  apt-get update -qq
  debs=$build/debs
  rm -rf "$debs" "$sysroot"
  mkdir -p "$debs" "$sysroot"
  chmod 777 "$debs"  # apt downloads as the unprivileged _apt user
  # shellcheck disable=SC2046  # one word per package
  (cd "$debs" && apt-get download -qq $(printf '%s:arm64 ' $pkgs))
  for d in "$debs"/*.deb; do dpkg-deb -x "$d" "$sysroot"; done
  printf '%s' "$pkgs" >"$sysroot/.complete"
fi
# Header-only dependencies come from the host, and the NumPy of the
# Hugging Face reference test.
for p in nlohmann-json3-dev libeigen3-dev pkg-config cmake python3-numpy; do
  dpkg -s "$p" >/dev/null 2>&1 || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$p" >/dev/null
done

export POCKET_ARM64_SYSROOT=$sysroot
export QEMU_LD_PREFIX=/usr/aarch64-linux-gnu
# ctest in build DIR under qemu as CPU (each test binary and the CLI take
# QEMU_CPU from the environment), telling the tests whether it has dotprod,
# BF16 and I8MM (1 or 0); further arguments go to ctest.
suite() {  # DIR CPU DOTPROD BF16 I8MM [CTEST_ARGS...]
  local dir=$1 cpu=$2 dotprod=$3 bf16=$4 i8mm=$5
  shift 5
  echo "--- $(basename "$dir"): ctest $* on qemu -cpu $cpu (${SECONDS}s into this script)"
  # The kernel targets this CPU runs, and those compiled that it cannot
  # (where the CLI is built: the Clang build below has only the kernels'
  # tests, and its pocket-emulated script would start a missing binary).
  if [ -x "$dir/pocket" ]; then QEMU_CPU=$cpu "$dir/pocket-emulated" inspect --devices; fi
  POCKET_TEST_CPU_HAS_DOTPROD=$dotprod POCKET_TEST_CPU_HAS_BF16=$bf16 \
    POCKET_TEST_CPU_HAS_I8MM=$i8mm QEMU_CPU=$cpu ctest --test-dir "$dir" --output-on-failure -j2 \
    --output-junit "$dir/ctest-junit.xml" "$@"
  python3 tools/ci-skipped.py "$dir/ctest-junit.xml"
}

# One build of the whole project and suite: Highway's NEON target (ARMv8.0:
# the int16 q4 sums), SVE and SVE2, the NEON_DOTPROD int8 kernels (sdot),
# BF16 attention and I8MM prompts, each run only where the CPU reports it.
# The whole suite (tokenizers, file format, runtime, API, CLI, the golden
# generations and the Hugging Face reference) runs once on Arm, on QEMU's
# "max" with 128-bit vectors (SVE2 with BF16 and I8MM, as Armv9 phones:
# Cortex-A510/A710/X2 and later; Highway's SVE2_128 target, attention's
# BFDOT products and prefill's SMMLA Linear run too). The kernels' tests,
# which hold all of the dispatch and check every kernel against its scalar
# reference, also run on a Neoverse N1 (NEON with dotprod, a Cortex-A76:
# NEON_DOTPROD and NEON), a Cortex-A72 (ARMv8.0, no dotprod: an sdot reached
# there would fault), on "max" with 256-bit vectors (Neoverse V1: the
# SVE_256 target) and with its default 512 bits (SVE2), where qemu runs
# about ten times slower (docs/testing.md). POCKET_TEST_CPU_HAS_DOTPROD,
# POCKET_TEST_CPU_HAS_BF16 and POCKET_TEST_CPU_HAS_I8MM tell the tests what
# each CPU has.
dir=$build/base
cmake -S . -B "$dir" -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake \
  -DPOCKET_ARM64_SYSROOT="$sysroot" -DCMAKE_BUILD_TYPE=Release -DPOCKET_WITH_SENTENCEPIECE=ON \
  -DPOCKET_BUILD_BENCH=OFF >/dev/null
cmake --build "$dir" -j2
# The int8 default path's reference tests hold bounds measured on x86's
# kernels (docs/testing.md); under qemu they would take most of CI's time.
# Generation under grammars and speculative decoding are checked over many
# seeds and lengths: code above the kernels, whose kernels the other tests
# check on Arm; under qemu they would take half of the suite's time.
not_on_qemu='^(reference_(default_path|quality|gguf_logits)|GrammarGenerate\..*|SpeculativeTest\..*)$'
suite "$dir" neoverse-n1 1 0 0 -L '^backends$'
suite "$dir" cortex-a72 0 0 0 -L '^backends$'
# The Metal shim's harness is portable C++ that x86 runs (its kernels are
# the GPU's, not the CPU's).
suite "$dir" max,sve-default-vector-length=16 1 1 1 -E "$not_on_qemu" -LE '^metal_shim$'
suite "$dir" max,sve-default-vector-length=32 1 1 1 -L '^backends$'
suite "$dir" max 1 1 1 -L '^backends$'

# The CPU backend and its tests built with Clang (the Android NDK's
# compiler), whose arm_neon.h declares the bf16 types only in files built for
# BF16 (attention_bf16_arm.cc), on "max" with 128-bit vectors, where every
# Arm target, dotprod, BF16 and I8MM run.
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
  -DPOCKET_WITH_SENTENCEPIECE=OFF -DPOCKET_BUILD_BENCH=OFF >/dev/null
# The kernels' test binary and what it links (the CPU and reference
# backends), not the rest of the engine.
cmake --build "$dir" --target backends_tests -j2
# Only the kernels' tests are built here: -FA leaves out the CLI's fixture.
suite "$dir" max,sve-default-vector-length=16 1 1 1 -L '^backends$' -FA test_models
