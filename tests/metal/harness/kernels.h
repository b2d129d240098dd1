// The kernel functions of the Metal library, compiled as C++ against the
// Metal shim (kernels.cc includes the library source the host embeds), each
// with a type-erased entry point the harness calls once per thread.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace pocket::metal::harness {

enum class ParamKind {
  kPointer,    // device T* / threadgroup T*: bound with SetBuffer
  kReference,  // constant T&: bound with SetBytes
  kValue,      // uint, uint2, uint3: a thread position
};

struct ParamType {
  ParamKind kind;
  size_t size;  // of the value, the pointee or the referee
};

struct KernelFunction {
  const char* name;
  // args[i] points at parameter i's value: a buffer's bytes (kPointer), a
  // scalar's bytes (kReference) or a uint[3] (kValue).
  void (*invoke)(void* const* args);
  std::vector<ParamType> params;
};

// Every kernel function of the library, in source order.
const std::vector<KernelFunction>& KernelFunctions();
const KernelFunction* FindKernelFunction(const std::string& name);

// POCKET_WG, the threadgroup size the library is compiled with here.
extern const size_t kLibraryThreadsPerGroup;

}  // namespace pocket::metal::harness
