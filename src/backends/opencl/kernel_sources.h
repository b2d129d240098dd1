// The kernel sources of kernels/opencl and kernels/gpu, embedded at build time by
// cmake/EmbedKernels.cmake (the generated opencl_kernels.cc defines these),
// in program order: the prelude first.
#pragma once

#include <cstddef>

namespace pocket::opencl {

struct KernelSource {
  const char* name;  // file name, e.g. "linear.cl"
  const char* text;
};

extern const KernelSource kKernelSources[];
extern const size_t kNumKernelSources;

}  // namespace pocket::opencl
