// The Metal backend's pipeline table against the kernel functions of the
// sources, all derived from the sources rather than listed again here:
// every kernel function of the Metal library has a pipeline and every
// pipeline a kernel function; the harness compiled every one of them; and
// every kernel of the OpenCL program (the ops the OpenCL backend
// implements) has a Metal pipeline of the same name.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "backends/metal/library_source.h"
#include "backends/metal/pipelines.h"
#include "metal/harness/kernels.h"
#if POCKET_WITH_OPENCL
#include "backends/opencl/kernel_sources.h"
#endif

namespace pocket::metal {
namespace {

// Names of the kernel functions defined in `text`: `KERNEL void name(` in
// the shared bodies, `kernel void name(` in Metal's own files.
std::set<std::string> KernelNames(const std::string& text) {
  std::set<std::string> names;
  for (const std::string head : {"KERNEL void ", "kernel void "}) {
    for (size_t at = text.find(head); at != std::string::npos; at = text.find(head, at + 1)) {
      const size_t begin = at + head.size();
      const size_t end = text.find('(', begin);
      if (end == std::string::npos) break;
      const std::string name = text.substr(begin, end - begin);
      if (name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") == std::string::npos) {
        names.insert(name);
      }
    }
  }
  return names;
}

std::set<std::string> PipelineNames() {
  return std::set<std::string>(gpu::kKernelNames, gpu::kKernelNames + gpu::kNumKernels);
}

TEST(MetalPipelinesTest, OnePerKernelFunctionOfTheLibrary) {
  const std::set<std::string> kernels = KernelNames(kLibrarySource);
  EXPECT_GE(kernels.size(), 10u);  // the parse found the library's kernels
  EXPECT_EQ(PipelineNames(), kernels);
  EXPECT_EQ(PipelineNames().size(), gpu::kNumKernels) << "a name listed twice";
}

TEST(MetalPipelinesTest, TheHarnessRunsEveryPipeline) {
  std::set<std::string> compiled;
  for (const harness::KernelFunction& f : harness::KernelFunctions()) compiled.insert(f.name);
  EXPECT_EQ(compiled, PipelineNames());
}

#if POCKET_WITH_OPENCL
TEST(MetalPipelinesTest, EveryOpenClKernelHasOne) {
  std::string program;
  for (size_t i = 0; i < opencl::kNumKernelSources; ++i) program += opencl::kKernelSources[i].text;
  const std::set<std::string> opencl = KernelNames(program);
  EXPECT_GE(opencl.size(), 9u);
  for (const std::string& name : opencl) {
    EXPECT_EQ(PipelineNames().count(name), 1u)
        << "the OpenCL kernel " << name << " has no Metal pipeline";
  }
}
#endif

}  // namespace
}  // namespace pocket::metal
