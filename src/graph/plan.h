// The execution plan: the graph section (docs/graph.md) expanded, checked
// against the tensor directory and the config once at load, and flattened
// into steps whose weights are resolved to pointers into the mapped file and
// whose values are small slot numbers. Every backend runs it as is.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "format/model_config.h"
#include "format/reader.h"
#include "graph/kv_type.h"
#include "graph/weight_view.h"
#include "util/status.h"

namespace pocket {

enum class OpKind : uint8_t {
  kEmbed,
  kRmsNorm,
  kHeadRmsNorm,
  kLinear,
  kRope,
  kAttention,
  kSwiglu,
  kAdd,
};
// How many kinds there are (OpTimes has an entry for each): kAdd is the last.
constexpr size_t kOpKindCount = static_cast<size_t>(OpKind::kAdd) + 1;

const char* OpKindName(OpKind op);

// One op over [n_tokens, width] f32 values. Value inputs are slot numbers
// (-1 when unused); `out` is the slot written, `width` its width.
struct PlanStep {
  OpKind op = OpKind::kAdd;
  int node = 0;  // index in the expanded node list, for messages
  int in[3] = {-1, -1, -1};
  int out = -1;
  size_t width = 0;             // width of `out`
  size_t in_width = 0;          // width of in[0]
  WeightView weight;       // embed table, linear W
  const float* norm = nullptr;  // rms_norm / head_rms_norm weight (f32)
  const float* bias = nullptr;  // linear bias (f32) or null
  float eps = 1e-6f;
  size_t head_dim = 0;     // head_rms_norm, rope, attention
  float theta = 10000.0f;  // rope
  RopeStyle style = RopeStyle::kNeox;
  int layer = -1;         // attention
  size_t n_heads = 0;     // attention
  size_t n_kv_heads = 0;  // attention
};

struct Plan {
  std::vector<PlanStep> steps;
  std::vector<std::string> slot_names;
  std::vector<size_t> slot_width;  // the widest value each slot ever holds
  int logits_slot = -1;
  size_t vocab = 0;
  // Steps from here on are row-wise (no attention follows), so when only the
  // last token's logits are wanted they run on that row alone, and chunks
  // whose logits nobody reads skip them entirely.
  size_t row_wise_tail = 0;
  // KV row width (n_kv_heads * head_dim) of each layer; 0 for layers no
  // attention node uses.
  std::vector<size_t> kv_row;
  // Per layer: the head_dim of its attention (the q8 scale group) and the
  // rotary embedding its K rows carry (head_dim 0 when K is not written by a
  // rope op), for moving cached rows to new positions.
  std::vector<size_t> kv_head_dim;
  std::vector<KvRope> kv_rope;
  // Slots written only by the row-wise tail: when only the last row's
  // logits are wanted they hold that one row (the logits slot is vocab wide).
  std::vector<bool> slot_tail_only;
  // Byte ranges [offset, offset + size) of the mapped file that the steps
  // read (every tensor the graph names), for the memory budget.
  std::vector<std::pair<uint64_t, uint64_t>> weight_ranges;
};

// Parses and validates `graph_json` against the file and the config: its
// size (counted before it is expanded) against the tensor directory, its
// attention nodes against config.n_layers, and every node's inputs and
// attributes. Errors are CorruptFile (malformed or inconsistent graph,
// missing tensors, attributes out of range) or Unsupported (an op this
// build does not know) and name the node index, its op and the tensor,
// value or attribute.
StatusOr<Plan> BuildPlan(std::string_view graph_json, const PocketFile& file,
                         const ModelConfig& config);

}  // namespace pocket
