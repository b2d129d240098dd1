// The Metal library's source, embedded at build time by
// cmake/MetalLibrarySource.cmake: kernels/metal/prelude.metal, the op bodies
// of kernels/gpu, then Metal's own entry points (kernels/metal/*.metal),
// each after a #line marker.
#pragma once

namespace pocket::metal {

extern const char kLibrarySource[];

}  // namespace pocket::metal
