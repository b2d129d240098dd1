// The namespaces of this build's int8 extension kernels (kernel_target.h)
// and of the Highway target they extend, where the build has one:
// int8_extension-inl.h defines the kernels there, linear_int8.cc and
// attention.cc declare and call them.
#pragma once

#if POCKET_NEON_DOTPROD_KERNELS
#define POCKET_INT8_EXTENSION_NS N_NEON_DOTPROD
#define POCKET_INT8_EXTENSION_BASE_NS N_NEON
#elif POCKET_AVX2_VNNI_KERNELS
#define POCKET_INT8_EXTENSION_NS N_AVX2_VNNI
#define POCKET_INT8_EXTENSION_BASE_NS N_AVX2
#endif
