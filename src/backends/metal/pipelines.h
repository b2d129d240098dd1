// The Metal backend's compute pipelines: one per kernel of the shared GPU
// list (backends/gpu/kernels.h), named as its function in the Metal
// library (library_source.h) is.
#pragma once

#include "backends/gpu/kernels.h"

namespace pocket::metal {

using Pipeline = gpu::Kernel;

}  // namespace pocket::metal
