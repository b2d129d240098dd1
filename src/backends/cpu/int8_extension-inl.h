// The int8 kernels (the Linear's, and attention's over a q8 cache) for an
// extension of a Highway target (kernel_target.h), included once by
// int8_dotprod.cc and int8_avx_vnni.cc after <hwy/highway.h> (whose static
// target is the base one, compiled with the extension). Everything the
// kernels define lands in pocket::cpu::POCKET_INT8_EXTENSION_NS
// (int8_extension.h), not in the base namespace: linear_int8.cc and
// attention.cc define the same functions there without the extension, and
// the linker must not take one for the other.
// Highway's ops are internal to each file (static inline), so they are used
// from the base namespace as they are.

#include "backends/cpu/int8_extension.h"

#undef HWY_NAMESPACE
#define HWY_NAMESPACE POCKET_INT8_EXTENSION_NS
namespace hwy::POCKET_INT8_EXTENSION_NS {
using namespace hwy::POCKET_INT8_EXTENSION_BASE_NS;  // NOLINT(build/namespaces)
}  // namespace hwy::POCKET_INT8_EXTENSION_NS

#include "backends/cpu/linear_int8_kernels-inl.h"
#include "kernels/cpu/attention_int8-inl.h"
