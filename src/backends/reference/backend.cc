// The reference backend: the plan run with the scalar reference ops
// (ops.h), on one thread, in f32 maths, with a paged KV cache in host
// memory (backends/kv_pages.h's layout). It is the debugging oracle: on any
// model its greedy ids are the CPU backend's with --quant-math f32.
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "backends/kv_pages.h"
#include "backends/plan_walker.h"
#include "backends/reference/ops.h"
#include "backends/registry.h"
#include "util/fp16.h"

namespace pocket {
namespace {

constexpr size_t kDefaultPageTokens = 64;

class ReferenceSession final : public BackendSession {
 public:
  ReferenceSession(const Plan* plan, const BackendSessionOptions& options)
      : plan_(*plan),
        type_(options.kv_type),
        page_tokens_(options.kv_page_tokens == 0 ? kDefaultPageTokens : options.kv_page_tokens),
        max_pages_((options.max_tokens + page_tokens_ - 1) / page_tokens_),
        layers_(plan->kv_row.size()) {
    for (size_t l = 0; l < layers_.size(); ++l) {
      layers_[l].row = plan_.kv_row[l];
      layers_[l].head_dim = plan_.kv_head_dim[l];
      layers_[l].page_bytes = KvRowBytes(type_, layers_[l].row, layers_[l].head_dim) * page_tokens_;
      if (layers_[l].row != 0) page_bytes_ += 2 * layers_[l].page_bytes;
    }
  }

  Status Run(const int32_t* tokens, size_t n, size_t n_past, BackendOutput output,
             float* logits) override {
    POCKET_RETURN_IF_ERROR(Reserve(n_past + n));
    EnsureRows(n, output);
    positions_.resize(n);
    for (size_t i = 0; i < n; ++i) positions_[i] = static_cast<int32_t>(n_past + i);
    bool written = false;
    WalkOptions walk;
    walk.times = times_;
    POCKET_RETURN_IF_ERROR(WalkPlan(plan_, n, output, walk, [&](const WalkStep& w) {
      const PlanStep& s = *w.step;
      const auto value = [&](int k, size_t width) {
        return slots_[static_cast<size_t>(s.in[k])].data() + w.in_row[k] * width;
      };
      float* dst = slots_[static_cast<size_t>(s.out)].data() + w.out_row[0] * s.width;
      if (w.writes_logits && logits != nullptr) {
        dst = logits;
        written = true;
      }
      float* out = w.via_temp ? temp_.data() : dst;
      if (w.copy_input) std::memcpy(dst, value(0, s.in_width), w.rows * s.width * sizeof(float));
      switch (s.op) {
        case OpKind::kEmbed:
          reference::Embed(s.weight, tokens + w.r0, w.rows, out);
          break;
        case OpKind::kRmsNorm:
          reference::RmsNorm(value(0, s.in_width), s.norm, w.rows, s.in_width, s.eps, out);
          break;
        case OpKind::kHeadRmsNorm:
          reference::HeadRmsNorm(dst, s.norm, w.rows, s.width / s.head_dim, s.head_dim, s.eps);
          break;
        case OpKind::kRope:
          reference::Rope(dst, w.rows, s.width / s.head_dim, s.head_dim, positions_.data() + w.r0,
                          s.theta, s.style);
          break;
        case OpKind::kLinear:
          reference::Linear(value(0, s.in_width), w.rows, s.weight, s.bias, out);
          break;
        case OpKind::kAttention: {
          const size_t kv_width = s.n_kv_heads * s.head_dim;
          const KvView view = View(static_cast<size_t>(s.layer));
          reference::KvAppend(view, n_past, value(1, kv_width), value(2, kv_width), n);
          reference::Attention(value(0, s.in_width), n, n_past, view, s.n_heads, s.n_kv_heads,
                               s.head_dim, out);
          break;
        }
        case OpKind::kSwiglu:
          reference::Swiglu(value(0, s.in_width), value(1, s.in_width), w.rows * s.width, out);
          break;
        case OpKind::kAdd:
          reference::Add(value(0, s.in_width), value(1, s.in_width), w.rows * s.width, out);
          break;
      }
      if (out != dst) std::memcpy(dst, out, w.rows * s.width * sizeof(float));
      return Status::Ok();
    }));
    if (written || output == BackendOutput::kNone) return Status::Ok();
    const size_t count = output == BackendOutput::kAllRows ? n * plan_.vocab : plan_.vocab;
    std::memcpy(logits,
                slots_[static_cast<size_t>(plan_.logits_slot)].data() +
                    LogitsRow(plan_, n, output) * plan_.vocab,
                count * sizeof(float));
    return Status::Ok();
  }

  Status Reserve(size_t n_tokens) override {
    const size_t need = (n_tokens + page_tokens_ - 1) / page_tokens_;
    if (need > max_pages_) {
      return Errorf(StatusCode::kOutOfRange, "KV cache: %zu positions exceed the context of %zu",
                    n_tokens, max_pages_ * page_tokens_);
    }
    for (Layer& layer : layers_) {
      if (layer.row == 0) continue;
      while (layer.k.size() < need) {
        layer.k.push_back(std::make_unique<uint8_t[]>(layer.page_bytes));
        layer.v.push_back(std::make_unique<uint8_t[]>(layer.page_bytes));
        layer.k_ptrs.push_back(layer.k.back().get());
        layer.v_ptrs.push_back(layer.v.back().get());
      }
    }
    pages_ = std::max(pages_, need);
    return Status::Ok();
  }

  void Truncate(size_t n_tokens) override {
    const size_t keep = (n_tokens + page_tokens_ - 1) / page_tokens_;
    if (keep >= pages_) return;
    for (Layer& layer : layers_) {
      if (layer.row == 0) continue;
      layer.k.resize(keep);
      layer.v.resize(keep);
      layer.k_ptrs.resize(keep);
      layer.v_ptrs.resize(keep);
    }
    pages_ = keep;
  }

  void Clear() override { Truncate(0); }

  Status Drop(size_t begin, size_t count, size_t n_tokens) override {
    if (count == 0 || begin + count > n_tokens) return Status::Ok();
    for (size_t l = 0; l < layers_.size(); ++l) {
      if (layers_[l].row == 0) continue;
      reference::KvShift(View(l), begin, begin + count, n_tokens - begin - count,
                         l < plan_.kv_rope.size() ? plan_.kv_rope[l] : KvRope());
    }
    Truncate(n_tokens - count);
    return Status::Ok();
  }

  Status ExportRows(size_t n_tokens, const ByteSink& sink) const override {
    std::vector<uint8_t> bytes;
    for (size_t l = 0; l < layers_.size(); ++l) {
      if (layers_[l].row == 0) continue;
      const KvView view = View(l);
      bytes.resize(KvRowBytes(type_, view.row_stride, view.head_dim));
      for (void* const* pages : {view.k_pages, view.v_pages}) {
        for (size_t t = 0; t < n_tokens; ++t) {
          reference::KvReadRow(view, pages, t, bytes.data());
          sink(bytes.data(), bytes.size());
        }
      }
    }
    return Status::Ok();
  }

  Status ValidateRows(size_t n_tokens, const uint8_t* data, size_t size) const override {
    const size_t expected = n_tokens * KvStateRowBytes(plan_, type_);
    if (size != expected) {
      return Errorf(StatusCode::kCorruptFile,
                    "KV data of %zu bytes does not hold %zu positions (%zu bytes expected)", size,
                    n_tokens, expected);
    }
    for (size_t l = 0; l < layers_.size(); ++l) {
      const Layer& layer = layers_[l];
      if (layer.row == 0) continue;
      const size_t row_bytes = KvRowBytes(type_, layer.row, layer.head_dim);
      for (size_t i = 0; i < 2 * n_tokens; ++i, data += row_bytes) {
        if (!RowFinite(data, layer.row, layer.head_dim)) {
          return Errorf(StatusCode::kCorruptFile,
                        "KV data: layer %zu %s row of position %zu holds a value that is not "
                        "finite",
                        l, i < n_tokens ? "K" : "V", i % n_tokens);
        }
      }
    }
    return Status::Ok();
  }

  Status ImportRows(size_t n_tokens, const uint8_t* data) override {
    for (size_t l = 0; l < layers_.size(); ++l) {
      if (layers_[l].row == 0) continue;
      const KvView view = View(l);
      const size_t row_bytes = KvRowBytes(type_, view.row_stride, view.head_dim);
      for (void* const* pages : {view.k_pages, view.v_pages}) {
        for (size_t t = 0; t < n_tokens; ++t, data += row_bytes) {
          reference::KvWriteRow(view, pages, t, data);
        }
      }
    }
    return Status::Ok();
  }

  size_t kv_bytes() const override { return pages_ * page_bytes_; }
  size_t KvBytesFor(size_t n_tokens) const override {
    return (n_tokens + page_tokens_ - 1) / page_tokens_ * page_bytes_;
  }
  size_t kv_page_tokens() const override { return page_tokens_; }
  size_t kv_page_bytes() const override { return page_bytes_; }
  size_t kv_commit_slack() const override { return 0; }

  size_t scratch_bytes() const override {
    size_t floats = temp_.capacity();
    for (const std::vector<float>& s : slots_) floats += s.capacity();
    return floats * sizeof(float) + positions_.capacity() * sizeof(int32_t);
  }
  size_t ScratchBytesFor(size_t n, BackendOutput output) const override {
    return SlotAndTempFloats(plan_, n, output) * sizeof(float) + n * sizeof(int32_t);
  }
  void ReleaseScratch() override {
    slots_ = std::vector<std::vector<float>>();
    temp_ = std::vector<float>();
    positions_ = std::vector<int32_t>();
    rows_ = tail_rows_ = 0;
  }
  void set_op_times(OpTimes* times) override { times_ = times; }

 private:
  struct Layer {
    size_t row = 0;
    size_t head_dim = 0;
    size_t page_bytes = 0;  // one K (or V) page
    std::vector<std::unique_ptr<uint8_t[]>> k, v;
    std::vector<void*> k_ptrs, v_ptrs;
  };

  KvView View(size_t layer) const {
    const Layer& l = layers_[layer];
    KvView view;
    view.type = type_;
    view.k_pages = l.k_ptrs.data();
    view.v_pages = l.v_ptrs.data();
    view.page_tokens = page_tokens_;
    view.row_stride = l.row;
    view.head_dim = l.head_dim;
    return view;
  }

  // Whether a serialized row of `row` values (graph/kv_type.h) holds only
  // finite values: q8 codes are, so there its scales decide.
  bool RowFinite(const uint8_t* data, size_t row, size_t head_dim) const {
    const auto half = [&](size_t i) {
      uint16_t h;
      std::memcpy(&h, data + 2 * i, 2);
      return h;
    };
    switch (type_) {
      case KvType::kF32:
        for (size_t i = 0; i < row; ++i) {
          float f;
          std::memcpy(&f, data + 4 * i, 4);
          if (!std::isfinite(f)) return false;
        }
        return true;
      case KvType::kF16:
      case KvType::kBf16:
        for (size_t i = 0; i < row; ++i) {
          const float f = type_ == KvType::kF16 ? F16ToF32(half(i)) : BF16ToF32(half(i));
          if (!std::isfinite(f)) return false;
        }
        return true;
      case KvType::kQ8: {
        const size_t scales = (KvRowBytes(type_, row, head_dim) - row) / 2;
        data += row;
        for (size_t i = 0; i < scales; ++i) {
          if (!std::isfinite(F16ToF32(half(i)))) return false;
        }
        return true;
      }
    }
    return false;
  }

  void EnsureRows(size_t n, BackendOutput output) {
    const size_t tail_rows = std::max(tail_rows_, TailRows(n, output));
    n = std::max(n, rows_);
    if (n == rows_ && tail_rows == tail_rows_) return;
    slots_.resize(plan_.slot_width.size());
    for (size_t s = 0; s < slots_.size(); ++s) {
      slots_[s].resize(SlotRows(plan_, s, n, tail_rows) * plan_.slot_width[s]);
    }
    temp_.resize(TempFloats(plan_, n, tail_rows));
    rows_ = n;
    tail_rows_ = tail_rows;
  }

  const Plan& plan_;
  KvType type_;
  size_t page_tokens_;
  size_t max_pages_;
  std::vector<Layer> layers_;
  size_t pages_ = 0;
  size_t page_bytes_ = 0;  // one page of every layer, K and V
  size_t rows_ = 0, tail_rows_ = 0;
  std::vector<std::vector<float>> slots_;
  std::vector<float> temp_;
  std::vector<int32_t> positions_;
  OpTimes* times_ = nullptr;
};

class ReferenceBackend final : public Backend {
 public:
  explicit ReferenceBackend(const Plan* plan) : plan_(plan) {}
  const char* name() const override { return "reference"; }
  BackendCapabilities capabilities() const override {
    BackendCapabilities c;
    c.kv_types = KvTypeBit(KvType::kF32) | KvTypeBit(KvType::kF16) | KvTypeBit(KvType::kBf16) |
                 KvTypeBit(KvType::kQ8);
    c.sliding_window = true;
    c.state_rows = true;
    c.op_times = true;
    return c;
  }
  KvType default_kv_type() const override { return KvType::kF32; }
  int threads() const override { return 1; }
  std::unique_ptr<BackendSession> NewSession(const BackendSessionOptions& options) const override {
    return std::make_unique<ReferenceSession>(plan_, options);
  }

 private:
  const Plan* plan_;
};

StatusOr<std::unique_ptr<Backend>> CreateReferenceBackend(const BackendContext& context) {
  return std::unique_ptr<Backend>(new ReferenceBackend(context.plan));
}

std::string DescribeReferenceDevices() {
  return "reference   the scalar reference ops on one thread, f32 maths (slow: for checking "
         "results)\n";
}

}  // namespace

BackendEntry ReferenceBackendEntry() {
  return {"reference", &CreateReferenceBackend, &DescribeReferenceDevices};
}

}  // namespace pocket
