// Which Highway target the CPU kernels dispatch to (for logs, benchmarks,
// and tests that check every target really ran), and a way to hold them to
// an older one.
//
// Two names are Pocket's own, for an int8 dot-product extension that
// Highway 1.0.3's targets do not assume: "NEON_DOTPROD" (NEON with ARMv8.2
// dotprod: sdot) and "AVX2_VNNI" (AVX2 with AVX-VNNI: the VEX vpdpbusd of
// x86 CPUs without AVX-512). The int8 Linear is built a second time with the
// extension (int8_dotprod.cc, int8_avx_vnni.cc), and where
// the CPU has it the extended name is listed right before its base target,
// which then names the kernels without the extension.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace pocket::cpu {

// e.g. "AVX3_DL", "AVX2_VNNI", "AVX2", "NEON_DOTPROD", "NEON", "EMU128".
const char* KernelTargetName();

// The targets the kernels can dispatch to now: compiled into this build,
// run by this CPU and not excluded by RestrictKernelTargets, best first,
// spelled as KernelTargetName. Unrestricted, the kernels dispatch to the
// first (also where Highway 1.0.3 alone would not: kernel_target.cc).
// Like RestrictKernelTargets, not to be called beside running kernels.
std::vector<std::string> KernelTargets();
// The same names in one string, `separator` between them (for messages).
std::string KernelTargetList(const char* separator);
// The Highway targets the kernels can dispatch to on this CPU (the bits
// of KernelTargets' names, without the extensions), best first: Highway's
// own list less any whose code this build cannot run here
// (kernel_target.cc: TargetRunsHere). Tests that force each target use it.
std::vector<int64_t> RunnableKernelTargets();
// What this build compiled that this CPU cannot run: Highway targets, the
// int8 extension and the matrix extension, best first (so a log shows which
// kernels a test run could not reach here).
std::vector<std::string> KernelTargetsNotRunHere();

// From now on every CPU kernel of the process dispatches to the target named
// `name` (any case), one of KernelTargets(), instead of the best one: what a
// CPU without the newer extensions would run, measured on this one. Returns
// false and changes nothing for any other name. Call it before kernels run
// (it is not safe beside running ones); LiftKernelTargetRestriction undoes it.
bool RestrictKernelTargets(const std::string& name);
void LiftKernelTargetRestriction();

// The int8 extension of this build ("NEON_DOTPROD", "AVX2_VNNI", or nullptr
// where none was built) and the Highway target it extends (HWY_NEON,
// HWY_AVX2; 0 if none).
const char* Int8ExtensionName();
int64_t Int8ExtensionBase();
// Whether this CPU runs the extension's kernels (whatever the restriction),
// and whether the kernels dispatch to them now: the base target is the one
// chosen and the extension is allowed.
bool Int8ExtensionAvailable();
bool Int8ExtensionChosen();
// Lets the base target's dispatch use them (the default) or not; tests run both.
void AllowInt8Extension(bool allow);
// Whether the int8 decode GEMV runs NEON_DOTPROD's kernels although the
// dispatched target is SVE2_128 (128-bit SVE2: Cortex-A510/A710/X2 and
// later). At that width NEON's kernel keeps every lane block's sums in
// registers and names its activation quads in `sdot`; SVE's takes the lane
// blocks in turn (an array cannot hold its sizeless vectors): 23 against 54
// instructions per 64-byte chunk of q4 codes. Target names do not change.
bool DotprodDecodesForSve128();

// The int8 matrix unit that the prompt's rows16 Linears use where the CPU has
// it ("the matrix extension"; target names do not change):
// - "I8MM": Arm's int8 matrix multiply (Armv8.6 FEAT_I8MM: SMMLA;
//   linear_i8mm_arm.cc), on every Arm target with int8 dot products,
//   NEON_DOTPROD and the SVE ones. RestrictKernelTargets to NEON or
//   NEON_DOTPROD, the targets of cores without I8MM, disallows it.
// - "AMX": x86's AMX-INT8 tiles (TDPBSUD; linear_amx_x86.cc), with AVX3_DL
//   kernels (every CPU with AMX has AVX3_DL). Linux only: the first call of
//   MatrixExtensionAvailable asks the kernel for the process's tile state
//   (arch_prctl ARCH_REQ_XCOMP_PERM), which makes each thread's signal
//   frames 8 KiB larger.
// Name: the build's extension (nullptr where it has none). Available: the
// build has its kernels and the CPU (and OS) grant it. Chosen: also the
// dispatched target is one it runs beside and it is allowed (the default;
// `--no-matrix-ext`, pocket_set_cpu_matrix_extension and tests turn it
// off; disallowed, it never asks for AMX's tiles). Outputs are the same bits
// either way.
const char* MatrixExtensionName();
bool MatrixExtensionAvailable();
bool MatrixExtensionChosen();
void AllowMatrixExtension(bool allow);

// Whether the chosen matrix extension multiplies bf16 too: x86's AMX-BF16
// (TDPBF16PS), which attention over a bf16 cache then uses for its products
// (attention_bf16-inl.h: AmxBf16Block). Allowed and disallowed with the
// rest of the extension; unlike the prompt's Linears its outputs differ
// from the vdpbf16ps kernel's in the order of their f32 sums.
bool MatrixExtensionMultipliesBf16();

// How far ahead of the weights it is reading decode's rows16 GEMV asks for
// their lines into L2, in bytes (0: it leaves them to the hardware
// prefetchers). On Intel x86 CPUs the default is 3072: on this project's
// Intel Xeon (AVX3_DL, AMX) the hardware prefetchers alone leave each
// thread's stream at about 12 GB/s where the read probe reads 16, and hints
// 3 KB ahead cut decode's Linear time by 10-12% on 1 thread and 17-18% on
// 2, in huge pages or mapped (2 KB and 4-6 KB gain less, L1 hints less,
// non-temporal ones take 1.5x the time; docs/performance.md, "What each
// optimisation does"). Elsewhere 0: on AMD's Zen 4 and Zen 5 hints
// 2-18 KB ahead measure no gain or a loss, and on Arm they are not
// measured. SetDecodeReadAhead overrides the
// default for the process (tests, experiments; ~size_t{0} restores it).
size_t DefaultDecodeReadAhead();
size_t DecodeReadAhead();
void SetDecodeReadAhead(size_t bytes);

// Whether a 64-bit Arm CPU reports a feature that Highway's targets do not
// check: on Linux and Android bit `hwcap_bit` of the auxiliary vector's
// AT_HWCAP (hwcap_word 1) or AT_HWCAP2 (2), on Apple platforms the sysctl
// `apple_name`. False elsewhere.
bool ArmCpuReports(int hwcap_word, int hwcap_bit, const char* apple_name);

}  // namespace pocket::cpu
