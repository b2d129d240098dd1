#!/usr/bin/env bash
# Sets up a Debian 12 machine for Pocket and builds it:
#   1. installs the Debian packages Pocket needs (as root; otherwise prints
#      the apt-get command to run),
#   2. configures and builds into build/ (Release),
#   3. converts the bundled model to build/stories260K.pocket.
# Usage: tools/setup.sh [extra cmake -D options]
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(build-essential cmake pkg-config git
          libhwy-dev libsentencepiece-dev libeigen3-dev nlohmann-json3-dev
          libpcre2-dev libutf8proc-dev libgtest-dev libgmock-dev libbenchmark-dev
          ocl-icd-opencl-dev opencl-headers pocl-opencl-icd
          python3 python3-numpy openjdk-17-jdk-headless)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ]; then
    echo "setup: installing ${missing[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "setup: missing Debian packages. Run as root:" >&2
    echo "  apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
fi

jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build build -j "$jobs"

if [ ! -f build/stories260K.pocket ] || [ models/stories260K/stories260K.bin -nt build/stories260K.pocket ] \
   || [ build/pocket -nt build/stories260K.pocket ]; then
  build/pocket convert models/stories260K/stories260K.bin \
    --tokenizer models/stories260K/tok512.model --quant f32 -o build/stories260K.pocket
fi
echo "setup: done. The CLI is build/pocket; the demo model is build/stories260K.pocket." >&2
