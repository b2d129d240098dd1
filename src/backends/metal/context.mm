#include "backends/metal/context.h"

#include "backends/metal/library_source.h"

namespace pocket::metal {
namespace {

std::string Describe(NSError* error) {
  return error != nil ? std::string(error.localizedDescription.UTF8String) : "no reason given";
}

}  // namespace

StatusOr<std::unique_ptr<Context>> Context::Create() {
  @autoreleasepool {
    std::unique_ptr<Context> ctx(new Context());
    ctx->device_ = MTLCreateSystemDefaultDevice();
    if (ctx->device_ == nil) {
      return Errorf(StatusCode::kNotFound, "this machine has no Metal device");
    }
    ctx->queue_ = [ctx->device_ newCommandQueue];
    // No fast math: the kernels must round as the CPU backend does (no
    // contraction of a*b+c, exact division and sqrt).
    MTLCompileOptions* options = [MTLCompileOptions new];
    options.fastMathEnabled = NO;
    NSString* keys[] = {@"POCKET_WG", @"POCKET_HAS_SUBGROUPS", @"POCKET_HAS_FP16"};
    NSObject* values[] = {[NSNumber numberWithUnsignedLong:kThreadsPerGroup],
                          [NSNumber numberWithInt:1], [NSNumber numberWithInt:1]};
    options.preprocessorMacros = [NSDictionary dictionaryWithObjects:values forKeys:keys count:3];
    NSError* error = nil;
    ctx->library_ =
        [ctx->device_ newLibraryWithSource:[NSString stringWithUTF8String:kLibrarySource]
                                   options:options
                                     error:&error];
    if (ctx->library_ == nil) {
      return Errorf(StatusCode::kUnsupported, "the Metal compiler rejected Pocket's kernels: %s",
                    Describe(error).c_str());
    }
    for (size_t i = 0; i < gpu::kNumKernels; ++i) {
      id<MTLFunction> fn =
          [ctx->library_ newFunctionWithName:[NSString stringWithUTF8String:gpu::kKernelNames[i]]];
      if (fn == nil) {
        return Errorf(StatusCode::kInternal, "the Metal library has no kernel %s",
                      gpu::kKernelNames[i]);
      }
      ctx->pipelines_[i] = [ctx->device_ newComputePipelineStateWithFunction:fn error:&error];
      if (ctx->pipelines_[i] == nil) {
        return Errorf(StatusCode::kUnsupported, "Metal pipeline %s: %s", gpu::kKernelNames[i],
                      Describe(error).c_str());
      }
      if (ctx->pipelines_[i].maxTotalThreadsPerThreadgroup < kThreadsPerGroup) {
        return Errorf(StatusCode::kUnsupported,
                      "Metal pipeline %s runs at most %zu threads per threadgroup, not %zu",
                      gpu::kKernelNames[i],
                      static_cast<size_t>(ctx->pipelines_[i].maxTotalThreadsPerThreadgroup),
                      kThreadsPerGroup);
      }
    }
    ctx->simd_width_ = ctx->pipelines_[0].threadExecutionWidth;
    return ctx;
  }
}

StatusOr<id<MTLBuffer>> Context::NewBuffer(size_t bytes) const {
  id<MTLBuffer> buffer = [device_ newBufferWithLength:(bytes > 0 ? bytes : 4)
                                              options:MTLResourceStorageModeShared];
  if (buffer == nil) {
    return Errorf(StatusCode::kBudgetExceeded, "the Metal device will not allocate %zu bytes",
                  bytes);
  }
  return buffer;
}

std::string DescribeDevices() {
  @autoreleasepool {
    id<MTLDevice> device = MTLCreateSystemDefaultDevice();
    if (device == nil) return "metal       no Metal device\n";
    auto context = Context::Create();
    const size_t simd = context.ok() ? (*context)->simd_width() : 0;
    return StringPrintf(
        "metal       %s (%.1f GiB recommended working set, %s memory, SIMD width %zu)\n",
        device.name.UTF8String,
        static_cast<double>(device.recommendedMaxWorkingSetSize) / (1024.0 * 1024.0 * 1024.0),
        device.hasUnifiedMemory ? "unified" : "discrete", simd);
  }
}

}  // namespace pocket::metal
