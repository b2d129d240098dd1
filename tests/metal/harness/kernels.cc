// The Metal library compiled as C++: the shim first, then the library
// source (the same text the host embeds) inside a namespace of its own.
// After the shim, `kernel`, `device`, `constant`, `thread` and
// `threadgroup` are macros; this file uses none of them as names.
#include "metal/harness/kernels.h"

#include <cstring>
#include <utility>

#include <metal_stdlib>

namespace pocket_metal_library {
#include "pocket_kernels.metal"
}  // namespace pocket_metal_library

namespace pocket::metal::harness {
namespace {

template <typename T>
struct Param {  // a thread position, by value
  static T From(void* arg) {
    T value;
    std::memcpy(&value, arg, sizeof(T));
    return value;
  }
  static ParamType Type() { return {ParamKind::kValue, sizeof(T)}; }
};

template <typename T>
struct Param<T*> {
  static T* From(void* arg) { return static_cast<T*>(arg); }
  static ParamType Type() { return {ParamKind::kPointer, sizeof(T)}; }
};

template <typename T>
struct Param<const T&> {
  static const T& From(void* arg) { return *static_cast<const T*>(arg); }
  static ParamType Type() { return {ParamKind::kReference, sizeof(T)}; }
};

template <typename... P, size_t... I>
void CallWith(void (*fn)(P...), void* const* args, std::index_sequence<I...>) {
  fn(Param<P>::From(args[I])...);
}

template <typename... P>
void Call(void (*fn)(P...), void* const* args) {
  CallWith(fn, args, std::index_sequence_for<P...>());
}

template <auto Fn>
void Invoke(void* const* args) {
  Call(Fn, args);
}

template <typename... P>
std::vector<ParamType> Types(void (*)(P...)) {
  return {Param<P>::Type()...};
}

}  // namespace

const std::vector<KernelFunction>& KernelFunctions() {
#define POCKET_METAL_KERNEL(name) \
  KernelFunction{#name, &Invoke<&pocket_metal_library::name>, Types(&pocket_metal_library::name)},
  static const std::vector<KernelFunction>* functions = new std::vector<KernelFunction>{
#include "metal_kernel_names.inc"
  };
#undef POCKET_METAL_KERNEL
  return *functions;
}

const KernelFunction* FindKernelFunction(const std::string& name) {
  for (const KernelFunction& f : KernelFunctions()) {
    if (name == f.name) return &f;
  }
  return nullptr;
}

const size_t kLibraryThreadsPerGroup = POCKET_WG;

}  // namespace pocket::metal::harness
