#include "metal/harness/shim_encoder.h"

#include <cstring>
#include <fstream>
#include <sstream>

#include "metal/harness/grid.h"
#include "metal/harness/kernels.h"
#include "metal/harness/signature.h"

namespace pocket::metal::harness {
namespace {

// The value Metal passes for a thread-position attribute: three components
// for the vector ones, else one.
std::array<uint32_t, 3> PositionOf(const ThreadPositions& p, ParamRole role) {
  auto vec = [](const uint32_t* v) { return std::array<uint32_t, 3>{v[0], v[1], v[2]}; };
  auto one = [](uint32_t v) { return std::array<uint32_t, 3>{v, 0, 0}; };
  switch (role) {
    case ParamRole::kThreadPositionInGrid:
      return vec(p.grid);
    case ParamRole::kThreadPositionInThreadgroup:
      return vec(p.in_group);
    case ParamRole::kThreadgroupPositionInGrid:
      return vec(p.group);
    case ParamRole::kThreadsPerThreadgroup:
      return vec(p.threads_per_group);
    case ParamRole::kThreadgroupsPerGrid:
      return vec(p.groups);
    case ParamRole::kThreadIndexInThreadgroup:
      return one(p.index_in_group);
    case ParamRole::kThreadIndexInSimdgroup:
      return one(p.lane);
    case ParamRole::kSimdgroupIndexInThreadgroup:
      return one(p.simd_group);
    case ParamRole::kSimdgroupsPerThreadgroup:
      return one(p.simd_groups);
    case ParamRole::kThreadsPerSimdgroup:
      return one(p.simd_width);
    case ParamRole::kBuffer:
      break;
  }
  return one(0);
}

bool IsVectorRole(ParamRole role) {
  return role == ParamRole::kThreadPositionInGrid ||
         role == ParamRole::kThreadPositionInThreadgroup ||
         role == ParamRole::kThreadgroupPositionInGrid ||
         role == ParamRole::kThreadsPerThreadgroup || role == ParamRole::kThreadgroupsPerGrid;
}

}  // namespace

ShimEncoder::ShimEncoder() {
  std::ifstream in(POCKET_METAL_PREPROCESSED);
  std::ostringstream text;
  text << in.rdbuf();
  text_ = text.str();
}

size_t ShimEncoder::threads_per_group() const { return kLibraryThreadsPerGroup; }

void ShimEncoder::SetPipeline(Pipeline pipeline) {
  pipeline_ = pipeline;
  has_pipeline_ = true;
  bindings_.clear();  // every dispatch below binds what it reads
}

void ShimEncoder::SetBuffer(uint32_t slot, const Buffer& buffer, size_t offset) {
  Binding& b = bindings_[slot];
  b.buffer = &buffer;
  b.offset = offset;
  b.bytes.clear();
}

void ShimEncoder::SetBytes(uint32_t slot, const void* data, size_t size) {
  Binding& b = bindings_[slot];
  b.buffer = nullptr;
  b.bytes.assign(static_cast<const uint8_t*>(data), static_cast<const uint8_t*>(data) + size);
}

Status ShimEncoder::Dispatch(size_t groups0, size_t groups1, size_t threads_per_group) {
  if (!has_pipeline_) return Errorf(StatusCode::kInternal, "dispatch without a pipeline");
  const char* name = gpu::KernelName(pipeline_);
  const KernelFunction* fn = FindKernelFunction(name);
  if (fn == nullptr) {
    return Errorf(StatusCode::kNotFound, "the Metal library has no kernel function %s", name);
  }
  std::vector<KernelParam> params;
  std::string error;
  if (!ParseKernelParams(text_, name, &params, &error)) {
    return Errorf(StatusCode::kInternal, "%s", error.c_str());
  }
  if (params.size() != fn->params.size()) {
    return Errorf(StatusCode::kInternal, "%s: %zu parameters in the source, %zu compiled", name,
                  params.size(), fn->params.size());
  }
  // The arguments every thread shares: buffers and scalars by slot.
  std::vector<void*> shared(params.size(), nullptr);
  std::vector<bool> slot_used;
  for (size_t i = 0; i < params.size(); ++i) {
    if (params[i].role != ParamRole::kBuffer) {
      // uint for every attribute; uint2 or uint3 for the vector ones.
      const size_t size = fn->params[i].size;
      if (fn->params[i].kind != ParamKind::kValue ||
          !(size == 4 || (IsVectorRole(params[i].role) && (size == 8 || size == 12)))) {
        return Errorf(StatusCode::kInternal, "%s: thread position %s has an unsupported type", name,
                      params[i].name.c_str());
      }
      continue;
    }
    const uint32_t slot = params[i].slot;
    auto it = bindings_.find(slot);
    if (it == bindings_.end()) {
      return Errorf(StatusCode::kInvalidArgument, "%s: nothing bound at slot %u (parameter %s)",
                    name, slot, params[i].name.c_str());
    }
    if (slot_used.size() <= slot) slot_used.resize(slot + 1);
    slot_used[slot] = true;
    Binding& b = it->second;
    if (fn->params[i].kind == ParamKind::kPointer) {
      if (b.buffer == nullptr) {
        return Errorf(StatusCode::kInvalidArgument,
                      "%s: slot %u (%s) is a buffer but was bound with setBytes", name, slot,
                      params[i].name.c_str());
      }
      shared[i] = b.buffer->contents + b.offset;
    } else {
      if (b.buffer != nullptr || b.bytes.size() != fn->params[i].size) {
        return Errorf(StatusCode::kInvalidArgument,
                      "%s: slot %u (%s) takes %zu bytes of setBytes, got %s", name, slot,
                      params[i].name.c_str(), fn->params[i].size,
                      b.buffer != nullptr ? "a buffer" : std::to_string(b.bytes.size()).c_str());
      }
      shared[i] = b.bytes.data();
    }
  }
  for (const auto& [slot, binding] : bindings_) {
    if (slot >= slot_used.size() || !slot_used[slot]) {
      return Errorf(StatusCode::kInvalidArgument, "%s: slot %u is bound but not a parameter", name,
                    slot);
    }
  }

  const size_t groups[3] = {groups0, groups1, 1};
  RunGrid(name, groups, threads_per_group, simd_width(), [&](const ThreadPositions& p) {
    std::vector<void*> args = shared;
    std::vector<std::array<uint32_t, 3>> positions(params.size());
    for (size_t i = 0; i < params.size(); ++i) {
      if (params[i].role == ParamRole::kBuffer) continue;
      positions[i] = PositionOf(p, params[i].role);
      args[i] = positions[i].data();
    }
    fn->invoke(args.data());
  });
  ++dispatches_[static_cast<size_t>(pipeline_)];
  return Status::Ok();
}

Status ShimEncoder::Copy(const Buffer& src, size_t src_offset, const Buffer& dst, size_t dst_offset,
                         size_t bytes) {
  if (src_offset + bytes > src.bytes || dst_offset + bytes > dst.bytes) {
    return Errorf(StatusCode::kInvalidArgument, "copy of %zu bytes outside its buffers", bytes);
  }
  // A blit's ranges may not overlap in the same buffer.
  if (src.contents == dst.contents && src_offset < dst_offset + bytes &&
      dst_offset < src_offset + bytes) {
    return Errorf(StatusCode::kInvalidArgument, "copy between overlapping ranges");
  }
  if (bytes > 0) std::memcpy(dst.contents + dst_offset, src.contents + src_offset, bytes);
  return Status::Ok();
}

StatusOr<const Buffer*> ShimEncoder::Upload(const void* data, size_t bytes, size_t* offset) {
  Buffer* b = NewBuffer(bytes);
  if (bytes > 0) std::memcpy(b->contents, data, bytes);
  *offset = 0;
  return b;
}

StatusOr<const Buffer*> ShimEncoder::Scratch(ScratchId id, size_t bytes) {
  Buffer*& s = scratch_[static_cast<size_t>(id)];
  if (s == nullptr || s->bytes < bytes) s = NewBuffer(bytes);
  return s;
}

Buffer* ShimEncoder::NewBuffer(size_t bytes) {
  storage_.push_back(std::make_unique<uint8_t[]>(bytes));  // zeroed
  Buffer b;
  b.contents = storage_.back().get();
  b.handle = b.contents;
  b.bytes = bytes;
  buffers_.push_back(b);
  return &buffers_.back();
}

Buffer* ShimEncoder::NewFloats(const std::vector<float>& values) {
  Buffer* b = NewBuffer(values.size() * sizeof(float));
  if (!values.empty()) std::memcpy(b->contents, values.data(), b->bytes);
  return b;
}

Buffer* ShimEncoder::NewBytes(const std::vector<uint8_t>& bytes) {
  Buffer* b = NewBuffer(bytes.size());
  if (!bytes.empty()) std::memcpy(b->contents, bytes.data(), bytes.size());
  return b;
}

std::vector<float> ShimEncoder::Floats(const Buffer& buffer, size_t offset, size_t count) {
  std::vector<float> v(count);
  if (count > 0) std::memcpy(v.data(), buffer.contents + offset * sizeof(float), count * 4);
  return v;
}

}  // namespace pocket::metal::harness
