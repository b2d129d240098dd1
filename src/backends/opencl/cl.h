// The OpenCL C API at the 1.2 level Pocket targets (PoCL, Android and
// desktop drivers all provide it), and its error codes as Status.
#pragma once

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#if defined(__APPLE__)
#include <OpenCL/cl.h>
#else
#include <CL/cl.h>
#endif

#include "util/status.h"

namespace pocket::opencl {

// "CL_OUT_OF_RESOURCES" etc.; the number for codes it does not know.
std::string ClErrorName(cl_int err);

// Status for a failed call: "<what>: <CL error name>". Ok when err is
// CL_SUCCESS. Allocation failures map to BudgetExceeded (the device is out
// of memory, which the caller can act on), everything else to Internal.
Status ClStatus(cl_int err, const char* what);

}  // namespace pocket::opencl

namespace pocket::opencl {

// Owns one reference to an OpenCL object (program, kernel, queue, ...).
template <typename T, cl_int(CL_API_CALL* Release)(T)>
class ClHandle {
 public:
  ClHandle() = default;
  explicit ClHandle(T handle) : handle_(handle) {}
  ~ClHandle() { reset(); }
  ClHandle(ClHandle&& other) noexcept : handle_(other.handle_) { other.handle_ = nullptr; }
  ClHandle& operator=(ClHandle&& other) noexcept {
    if (this != &other) {
      reset();
      handle_ = other.handle_;
      other.handle_ = nullptr;
    }
    return *this;
  }
  ClHandle(const ClHandle&) = delete;
  ClHandle& operator=(const ClHandle&) = delete;

  T get() const { return handle_; }
  void reset() {
    if (handle_ != nullptr) Release(handle_);
    handle_ = nullptr;
  }

 private:
  T handle_ = nullptr;
};

using ContextHandle = ClHandle<cl_context, clReleaseContext>;
using QueueHandle = ClHandle<cl_command_queue, clReleaseCommandQueue>;
using ProgramHandle = ClHandle<cl_program, clReleaseProgram>;
using KernelHandle = ClHandle<cl_kernel, clReleaseKernel>;
using MemHandle = ClHandle<cl_mem, clReleaseMemObject>;

// A device buffer of bytes() bytes.
class Buffer {
 public:
  Buffer() = default;
  Buffer(cl_mem mem, size_t bytes) : mem_(mem), bytes_(bytes) {}
  cl_mem mem() const { return mem_.get(); }
  size_t bytes() const { return bytes_; }

 private:
  MemHandle mem_;
  size_t bytes_ = 0;
};

}  // namespace pocket::opencl
