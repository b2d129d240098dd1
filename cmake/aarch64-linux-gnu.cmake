# Cross-compiling Pocket for 64-bit ARM Linux with Debian's gcc cross
# toolchain (g++-aarch64-linux-gnu). Libraries for the target come from
# arm64 .debs unpacked into POCKET_ARM64_SYSROOT (tools/ci-aarch64.sh does
# this); header-only ones (nlohmann-json, Eigen) may come from the host.
# Test binaries run under qemu-aarch64, which CMake also uses to list the
# gtest cases at build time.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

if(NOT POCKET_ARM64_SYSROOT)
  set(POCKET_ARM64_SYSROOT "$ENV{POCKET_ARM64_SYSROOT}")
endif()
# try_compile re-reads this file; without this it would see no sysroot and
# point pkg-config (an environment setting, shared with the outer run) at the host.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES POCKET_ARM64_SYSROOT)
# The unpacked packages first, then the host for header-only packages.
set(CMAKE_FIND_ROOT_PATH ${POCKET_ARM64_SYSROOT} /)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
include_directories(SYSTEM ${POCKET_ARM64_SYSROOT}/usr/include)
link_directories(${POCKET_ARM64_SYSROOT}/usr/lib/aarch64-linux-gnu)

set(ENV{PKG_CONFIG_LIBDIR} "${POCKET_ARM64_SYSROOT}/usr/lib/aarch64-linux-gnu/pkgconfig")
set(ENV{PKG_CONFIG_SYSROOT_DIR} "${POCKET_ARM64_SYSROOT}")

set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L /usr/aarch64-linux-gnu
    -E LD_LIBRARY_PATH=${POCKET_ARM64_SYSROOT}/usr/lib/aarch64-linux-gnu)
