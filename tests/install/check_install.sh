#!/bin/sh
# Installs the build tree into a scratch prefix, builds tests/install/consumer
# against it with find_package(pocket) and checks its output against
# the first 20 tokens of llama2.c run.c's greedy text for stories260K
# (tests/data/stories260K-golden.txt).
# Usage: check_install.sh BUILD_DIR SOURCE_DIR MODEL [EMULATOR...]
# A cross build passes its emulator command, and its toolchain reaches the
# consumer through BUILD_DIR/install-test-cache.cmake (tests.cmake).
set -eu
build=$1 src=$2 model=$3
shift 3
work="$build/install-test"
rm -rf "$work"
cmake --install "$build" --prefix "$work/prefix" >/dev/null
cmake -C "$build/install-test-cache.cmake" -S "$src/tests/install/consumer" -B "$work/consumer" \
  -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/consumer" >/dev/null
out=$("$@" "$work/consumer/consumer" "$model")
case "$out" in
  ", there was a little girl named Lily. She loved to play outsid") echo "install test: OK" ;;
  *) echo "install test: unexpected output: $out" >&2; exit 1 ;;
esac
