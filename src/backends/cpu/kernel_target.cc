#include "backends/cpu/kernel_target.h"

#include <atomic>
#include <cctype>
#include <cstdint>

#include <hwy/base.h>  // HWY_ARCH_*

#if HWY_ARCH_ARM_A64 && defined(__linux__)
#include <sys/auxv.h>
#elif HWY_ARCH_ARM_A64 && defined(__APPLE__)
#include <sys/sysctl.h>
#elif HWY_ARCH_X86 && defined(__GNUC__)
#include <cpuid.h>
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/backends/cpu/kernel_target.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace pocket::cpu::HWY_NAMESPACE {

// Compiled once per target; dispatch picks the same one as every kernel.
int64_t Target() { return HWY_TARGET; }

}  // namespace pocket::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace pocket::cpu {

HWY_EXPORT(Target);

namespace {

#if POCKET_NEON_DOTPROD_KERNELS
constexpr const char* kExtension = "NEON_DOTPROD";
constexpr int64_t kExtensionBase = HWY_NEON;
#elif POCKET_AVX2_VNNI_KERNELS
constexpr const char* kExtension = "AVX2_VNNI";
constexpr int64_t kExtensionBase = HWY_AVX2;
#else
constexpr const char* kExtension = nullptr;
constexpr int64_t kExtensionBase = 0;
#endif

std::atomic<bool> extension_allowed{true};
std::atomic<bool> matrix_allowed{true};
constexpr size_t kDefaultReadAhead = ~size_t{0};
std::atomic<size_t> read_ahead{kDefaultReadAhead};

// CPUID's vendor string is "GenuineIntel" (EBX, EDX, ECX).
bool CpuIsIntel() {
#if HWY_ARCH_X86 && defined(__GNUC__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(0, &eax, &ebx, &ecx, &edx) != 0 && ebx == 0x756e6547u && edx == 0x49656e69u &&
         ecx == 0x6c65746eu;
#else
  return false;
#endif
}

bool Allowed() { return extension_allowed.load(std::memory_order_relaxed); }

#if HWY_ARCH_X86
// CPUID leaf 7 subleaf 1, EAX bit 4: AVX-VNNI (the VEX-encoded VNNI dots).
bool CpuHasAvxVnni() {
#if defined(__GNUC__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) != 0 && (eax & (1u << 4)) != 0;
#else
  return false;
#endif
}
#endif

bool CpuHasExtension() {
#if POCKET_NEON_DOTPROD_KERNELS  // HWCAP_ASIMDDP, arm64 Linux ABI
  return ArmCpuReports(1, 20, "hw.optional.arm.FEAT_DotProd");
#elif POCKET_AVX2_VNNI_KERNELS
  // The OS saves the ymm registers wherever Highway chose AVX2, the only
  // target it extends.
  return CpuHasAvxVnni();
#else
  return false;
#endif
}

// Whether this build's code for `target` runs on this CPU beyond what
// Highway checks. Highway 1.0.3 compiles its AVX3_DL target with the
// AVX-VNNI feature besides AVX512_VNNI, and Clang then encodes the VNNI dots
// of 128- and 256-bit vectors with VEX (AVX-VNNI), which CPUs with
// AVX512_VNNI but not AVX-VNNI (Ice Lake, Zen 4) fault on; GCC keeps the
// EVEX encoding. A Clang build runs AVX3 there instead.
bool TargetRunsHere(int64_t target) {
#if HWY_ARCH_X86 && defined(__clang__)
  static const bool avx_vnni = CpuHasAvxVnni();
  return target != HWY_AVX3_DL || avx_vnni;
#else
  (void)target;
  return true;
#endif
}

#if POCKET_ARM_I8MM_KERNELS
constexpr const char* kMatrixExtension = "I8MM";
#elif POCKET_X86_AMX_KERNELS
constexpr const char* kMatrixExtension = "AMX";
#else
constexpr const char* kMatrixExtension = nullptr;
#endif

#if POCKET_X86_AMX_KERNELS && defined(__linux__)
// CPUID leaf 7's EDX, where the AMX features are (0 if the leaf is absent):
// bit 22 AMX-BF16, 24 AMX-TILE, 25 AMX-INT8.
unsigned CpuidLeaf7Edx() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) != 0 ? edx : 0;
}
#endif

bool CpuHasMatrixExtension() {
#if POCKET_ARM_I8MM_KERNELS  // HWCAP2_I8MM, arm64 Linux ABI
  return ArmCpuReports(2, 13, "hw.optional.arm.FEAT_I8MM");
#elif POCKET_X86_AMX_KERNELS && defined(__linux__)
  constexpr unsigned kAmxInt8 = 3u << 24;  // AMX-TILE and AMX-INT8
  if ((CpuidLeaf7Edx() & kAmxInt8) != kAmxInt8) return false;
  // Linux gives a process the 8 KiB tile state only when asked
  // (ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA); a kernel without AMX
  // support refuses.
  constexpr long kReqXcompPerm = 0x1023, kXtileData = 18;
  if (syscall(SYS_arch_prctl, kReqXcompPerm, kXtileData) != 0) return false;
  // And the OS saves it: XCR0 bits 17 and 18 (XTILECFG, XTILEDATA).
  unsigned xcr0_low = 0, xcr0_high = 0;
  __asm__("xgetbv" : "=a"(xcr0_low), "=d"(xcr0_high) : "c"(0));
  constexpr unsigned kTileState = 3u << 17;
  return (xcr0_low & kTileState) == kTileState;
#else
  return false;
#endif
}

bool SameName(const std::string& a, const char* b) {
  size_t i = 0;
  for (; i < a.size() && b[i] != '\0'; ++i) {
    if (std::toupper(static_cast<unsigned char>(a[i])) !=
        std::toupper(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return i == a.size() && b[i] == '\0';
}

}  // namespace

bool ArmCpuReports(int hwcap_word, int hwcap_bit, const char* apple_name) {
#if HWY_ARCH_ARM_A64 && defined(__linux__)  // Android too
  const unsigned long word = getauxval(hwcap_word == 2 ? AT_HWCAP2 : AT_HWCAP);
  (void)apple_name;
  return (word >> hwcap_bit & 1) != 0;
#elif HWY_ARCH_ARM_A64 && defined(__APPLE__)
  (void)hwcap_word;
  (void)hwcap_bit;
  int value = 0;
  size_t size = sizeof(value);
  return sysctlbyname(apple_name, &value, &size, nullptr, 0) == 0 && value != 0;
#else
  (void)hwcap_word;
  (void)hwcap_bit;
  (void)apple_name;
  return false;
#endif
}

const char* Int8ExtensionName() { return kExtension; }
int64_t Int8ExtensionBase() { return kExtensionBase; }

bool Int8ExtensionAvailable() {
  static const bool available = kExtension != nullptr && CpuHasExtension();
  return available;
}

bool Int8ExtensionChosen() {
  return kExtension != nullptr && Allowed() && Int8ExtensionAvailable() &&
         HWY_DYNAMIC_DISPATCH(Target)() == kExtensionBase;
}

bool DotprodDecodesForSve128() {
  return kExtensionBase == HWY_NEON && Allowed() && Int8ExtensionAvailable() &&
         HWY_DYNAMIC_DISPATCH(Target)() == HWY_SVE2_128;
}

void AllowInt8Extension(bool allow) { extension_allowed.store(allow, std::memory_order_relaxed); }

const char* MatrixExtensionName() { return kMatrixExtension; }

bool MatrixExtensionAvailable() {
  static const bool available = CpuHasMatrixExtension();
  return available;
}

bool MatrixExtensionChosen() {
  // Allowed first: a process that turned it off never asks for AMX's tiles.
  if (!matrix_allowed.load(std::memory_order_relaxed) || !MatrixExtensionAvailable()) return false;
  const int64_t target = HWY_DYNAMIC_DISPATCH(Target)();
#if HWY_ARCH_ARM_A64
  // NEON_DOTPROD (on Arm the extension is dotprod), or an SVE target.
  return Int8ExtensionChosen() || target == HWY_SVE || target == HWY_SVE2 ||
         target == HWY_SVE_256 || target == HWY_SVE2_128;
#elif HWY_ARCH_X86
  return target == HWY_AVX3_DL;
#else
  (void)target;
  return false;
#endif
}

void AllowMatrixExtension(bool allow) { matrix_allowed.store(allow, std::memory_order_relaxed); }

bool MatrixExtensionMultipliesBf16() {
#if POCKET_X86_AMX_KERNELS && defined(__linux__)
  // AMX-BF16; the tile state is the one AMX-INT8 asked for.
  static const bool bf16 = (CpuidLeaf7Edx() >> 22 & 1) != 0;
  return bf16 && MatrixExtensionChosen();
#else
  return false;
#endif
}

size_t DefaultDecodeReadAhead() {
  static const size_t bytes = CpuIsIntel() ? 3072 : 0;
  return bytes;
}

size_t DecodeReadAhead() {
  const size_t bytes = read_ahead.load(std::memory_order_relaxed);
  return bytes == kDefaultReadAhead ? DefaultDecodeReadAhead() : bytes;
}

void SetDecodeReadAhead(size_t bytes) { read_ahead.store(bytes, std::memory_order_relaxed); }

const char* KernelTargetName() {
  return Int8ExtensionChosen() ? kExtension : hwy::TargetName(HWY_DYNAMIC_DISPATCH(Target)());
}

namespace {

// The mask of hwy::DisableTargets in force: a restriction's, or every
// target better than the best one this CPU runs.
std::atomic<int64_t> disabled_targets{0};

void Disable(int64_t targets) {
  disabled_targets.store(targets, std::memory_order_relaxed);
  hwy::DisableTargets(targets);
}

// hwy::SupportedAndGeneratedTargets without moving dispatch. In Highway
// 1.0.3 each hwy::SupportedTargets() call chooses the dispatch target again
// from what the CPU has, ignoring DisableTargets: listing the targets after
// `--cpu-target avx2` sent the kernels back to AVX3_DL. And that choice
// passes over the targets specialized for one vector length: under qemu
// with 128-bit SVE2 vectors (Cortex-A510/A710/X2 and later phones) it
// listed SVE2_128 first and dispatched to SVE2, with 256-bit ones (Neoverse
// V1) SVE_256 and SVE2. DisableTargets chooses from the list.
std::vector<int64_t> ListTargets() {
  std::vector<int64_t> targets;
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    if (TargetRunsHere(target)) targets.push_back(target);
  }
  hwy::DisableTargets(disabled_targets.load(std::memory_order_relaxed));
  return targets;
}

}  // namespace

std::vector<std::string> KernelTargets() {
  std::vector<std::string> names;
  for (int64_t target : ListTargets()) {
    if (target == kExtensionBase && Int8ExtensionAvailable() && Allowed()) {
      names.push_back(kExtension);
    }
    names.push_back(hwy::TargetName(target));
  }
  return names;
}

std::string KernelTargetList(const char* separator) {
  std::string list;
  for (const std::string& name : KernelTargets()) list += (list.empty() ? "" : separator) + name;
  return list;
}

std::vector<std::string> KernelTargetsNotRunHere() {
  std::vector<std::string> names;
  if (kMatrixExtension != nullptr && !MatrixExtensionAvailable()) names.push_back(kMatrixExtension);
  if (kExtension != nullptr && !Int8ExtensionAvailable()) names.push_back(kExtension);
  uint64_t run_here = 0;
  for (int64_t target : ListTargets()) run_here |= static_cast<uint64_t>(target);
  const uint64_t compiled = static_cast<uint64_t>(HWY_TARGETS);
  for (uint64_t bit = 1; bit != 0 && bit <= compiled; bit <<= 1) {
    if ((compiled & bit) != 0 && (run_here & bit) == 0) {
      names.push_back(hwy::TargetName(static_cast<int64_t>(bit)));
    }
  }
  return names;
}

bool RestrictKernelTargets(const std::string& name) {
  for (int64_t target : ListTargets()) {
    const bool extended = target == kExtensionBase && Int8ExtensionAvailable() && Allowed() &&
                          SameName(name, kExtension);
    if (!extended && !SameName(name, hwy::TargetName(target))) continue;
    Disable(target - 1);  // better targets have the lower bits
    // The base target's own name means without the extension.
    if (target == kExtensionBase) AllowInt8Extension(extended);
    AllowMatrixExtension(target != HWY_NEON);
    return true;
  }
  return false;
}

std::vector<int64_t> RunnableKernelTargets() { return ListTargets(); }

void LiftKernelTargetRestriction() {
  hwy::DisableTargets(0);  // so the list holds every target this CPU runs
  disabled_targets.store(0, std::memory_order_relaxed);
  const std::vector<int64_t> targets = ListTargets();
  Disable(targets.empty() ? 0 : targets.front() - 1);  // the best one (ListTargets)
  AllowInt8Extension(true);
  AllowMatrixExtension(true);
}

namespace {
// Every kernel dispatches to the best target from the first call on.
[[maybe_unused]] const bool kBestTargetChosen = (LiftKernelTargetRestriction(), true);
}  // namespace

}  // namespace pocket::cpu
#endif  // HWY_ONCE
