#include "graph/plan.h"

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <utility>

#include "util/json_util.h"

namespace pocket {

const char* OpKindName(OpKind op) {
  switch (op) {
    case OpKind::kEmbed:
      return "embed";
    case OpKind::kRmsNorm:
      return "rms_norm";
    case OpKind::kHeadRmsNorm:
      return "head_rms_norm";
    case OpKind::kLinear:
      return "linear";
    case OpKind::kRope:
      return "rope";
    case OpKind::kAttention:
      return "attention";
    case OpKind::kSwiglu:
      return "swiglu";
    case OpKind::kAdd:
      return "add";
  }
  return "?";
}

namespace {

// Nested repeats deeper than this are certainly a hostile file.
constexpr int kMaxRepeatDepth = 4;
// Bounds the expanded node count so a hostile repeat cannot exhaust memory.
constexpr size_t kMaxNodes = 1 << 20;
// A decoder has fewer nodes than twice its tensors (a layer: 15 to 17 nodes
// over 9 to 14 tensors), so a graph that expands to more than this many per
// tensor does not describe the file's weights.
constexpr size_t kMaxNodesPerTensor = 8;

struct OpSpec {
  const char* name;
  OpKind op;
  size_t min_in, max_in;
};
constexpr OpSpec kOps[] = {
    {"embed", OpKind::kEmbed, 2, 2},
    {"rms_norm", OpKind::kRmsNorm, 2, 2},
    {"head_rms_norm", OpKind::kHeadRmsNorm, 2, 2},
    {"linear", OpKind::kLinear, 2, 3},
    {"rope", OpKind::kRope, 1, 1},
    {"attention", OpKind::kAttention, 3, 3},
    {"swiglu", OpKind::kSwiglu, 2, 2},
    {"add", OpKind::kAdd, 2, 2},
};

void Substitute(Json* j, const std::vector<std::pair<std::string, std::string>>& subs) {
  if (j->is_string()) {
    std::string s = j->get_ref<const std::string&>();
    for (const auto& [pattern, value] : subs) {
      size_t at = 0;
      while ((at = s.find(pattern, at)) != std::string::npos) {
        s.replace(at, pattern.size(), value);
        at += value.size();
      }
    }
    *j = s;
  } else if (j->is_array() || j->is_object()) {
    for (auto& child : *j) Substitute(&child, subs);
  }
}

struct Repeat {
  int64_t count = 0;
  std::string var;
  const Json* body = nullptr;
};

// The fields of the repeat block `node`, whose first expanded node would be
// node `first`.
Status ReadRepeat(const Json& node, uint64_t first, int depth, Repeat* r) {
  const std::string where = StringPrintf("graph section: repeat block after node %llu",
                                         static_cast<unsigned long long>(first));
  if (depth >= kMaxRepeatDepth) {
    return Errorf(StatusCode::kCorruptFile, "%s: repeat blocks nested deeper than %d",
                  where.c_str(), kMaxRepeatDepth);
  }
  POCKET_RETURN_IF_ERROR(GetInt(node, "repeat", &r->count, where.c_str()));
  POCKET_RETURN_IF_ERROR(GetString(node, "var", &r->var, where.c_str()));
  r->body = FindMember(node, "nodes");
  if (r->count < 0 || r->count > static_cast<int64_t>(kMaxNodes) || r->body == nullptr) {
    return Errorf(StatusCode::kCorruptFile, "%s: needs 0 <= repeat <= %zu and a 'nodes' array",
                  where.c_str(), kMaxNodes);
  }
  return Status::Ok();
}

// What `nodes` expands to, counted without expanding them.
struct GraphSize {
  uint64_t nodes = 0;      // op nodes
  uint64_t attention = 0;  // of which attention nodes (one per layer)
  uint64_t work = 0;       // op nodes plus repeat iterations: what expanding costs
};

// Counts and checks the structure of `nodes` (the first would be expanded
// node `first`), refusing more than `limit` of work before any of it is done.
Status Measure(const Json& nodes, int depth, uint64_t first, uint64_t limit, GraphSize* size) {
  if (!nodes.is_array()) {
    return Errorf(StatusCode::kCorruptFile, "graph section: 'nodes' must be an array");
  }
  for (const Json& node : nodes) {
    const uint64_t at = first + size->nodes;
    if (!node.is_object()) {
      return Errorf(StatusCode::kCorruptFile, "graph section: node %llu is not an object",
                    static_cast<unsigned long long>(at));
    }
    if (FindMember(node, "repeat") == nullptr) {
      const Json* op = FindMember(node, "op");
      ++size->nodes;
      ++size->work;
      if (op != nullptr && op->is_string() && op->get_ref<const std::string&>() == "attention") {
        ++size->attention;
      }
    } else {
      Repeat r;
      POCKET_RETURN_IF_ERROR(ReadRepeat(node, at, depth, &r));
      GraphSize body;
      POCKET_RETURN_IF_ERROR(Measure(*r.body, depth + 1, at, limit, &body));
      // body.work <= limit and count <= kMaxNodes: no product overflows.
      const uint64_t count = static_cast<uint64_t>(r.count);
      size->nodes += count * body.nodes;
      size->attention += count * body.attention;
      size->work += count * (body.work + 1);
    }
    if (size->work > limit) {
      return Errorf(StatusCode::kCorruptFile,
                    "graph section: expands to more than %llu nodes (at most %zu per tensor of "
                    "the tensor directory, and %zu); the graph does not describe this file",
                    static_cast<unsigned long long>(limit), kMaxNodesPerTensor, kMaxNodes);
    }
  }
  return Status::Ok();
}

class Planner {
 public:
  Planner(const PocketFile& file, const ModelConfig& config) : file_(file), config_(config) {}

  // `nodes` passed Measure, which counted config_.n_layers attention nodes.
  StatusOr<Plan> Build(const Json& nodes) {
    plan_.kv_row.assign(static_cast<size_t>(config_.n_layers), 0);
    plan_.kv_head_dim.assign(plan_.kv_row.size(), 0);
    plan_.kv_rope.assign(plan_.kv_row.size(), KvRope());
    plan_.vocab = static_cast<size_t>(config_.vocab);
    std::vector<std::pair<std::string, std::string>> subs;
    POCKET_RETURN_IF_ERROR(Expand(nodes, &subs, 0));
    auto it = current_.find("logits");
    if (it == current_.end()) {
      return Errorf(StatusCode::kCorruptFile,
                    "graph section: no node writes the output value 'logits'");
    }
    if (it->second != plan_.vocab) {
      return Errorf(StatusCode::kCorruptFile,
                    "graph section: 'logits' has width %zu but the config's vocab is %zu",
                    it->second, plan_.vocab);
    }
    plan_.logits_slot = slots_["logits"];
    plan_.row_wise_tail = 0;
    for (size_t i = 0; i < plan_.steps.size(); ++i) {
      if (plan_.steps[i].op == OpKind::kAttention) plan_.row_wise_tail = i + 1;
    }
    plan_.slot_tail_only.assign(plan_.slot_width.size(), true);
    for (size_t i = 0; i < plan_.row_wise_tail; ++i) {
      plan_.slot_tail_only[static_cast<size_t>(plan_.steps[i].out)] = false;
    }
    return std::move(plan_);
  }

 private:
  Status Fail(StatusCode code, const char* fmt, ...) __attribute__((format(printf, 3, 4))) {
    va_list ap;
    va_start(ap, fmt);
    char buf[512];
    std::vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    return Status(code, StringPrintf("graph node %d (%s): %s", node_, op_name_.c_str(), buf));
  }

  // A value input: must already be written; returns its current width.
  Status Value(const std::string& name, int* slot, size_t* width) {
    auto it = current_.find(name);
    if (it == current_.end()) {
      return Fail(StatusCode::kCorruptFile,
                  "value '%s' is used before any node writes it (tensor names belong in the "
                  "weight position of an op)",
                  name.c_str());
    }
    *slot = slots_[name];
    *width = it->second;
    return Status::Ok();
  }

  Status Tensor(const std::string& name, const TensorInfo** out) {
    *out = file_.FindTensor(name);
    if (*out == nullptr) {
      return Fail(StatusCode::kCorruptFile, "tensor '%s' is not in the tensor directory",
                  name.c_str());
    }
    plan_.weight_ranges.emplace_back(file_.data_offset() + (*out)->offset, (*out)->nbytes);
    return Status::Ok();
  }

  Status Matrix(const std::string& name, WeightView* w) {
    const TensorInfo* t = nullptr;
    POCKET_RETURN_IF_ERROR(Tensor(name, &t));
    if (t->shape.size() != 2) {
      return Fail(StatusCode::kCorruptFile, "tensor '%s' must be 2-D, has %zu dims", name.c_str(),
                  t->shape.size());
    }
    w->data = file_.TensorData(*t);
    w->dtype = t->dtype;
    w->group = t->group;
    w->rows = t->shape[0];
    w->cols = t->shape[1];
    w->layout = t->layout;
    return Status::Ok();
  }

  Status Vector(const std::string& name, size_t expected, const char* role, const float** out) {
    const TensorInfo* t = nullptr;
    POCKET_RETURN_IF_ERROR(Tensor(name, &t));
    if (t->dtype != DType::kF32) {
      return Fail(StatusCode::kCorruptFile, "%s '%s' is %s; norm weights and biases must be f32",
                  role, name.c_str(), DTypeName(t->dtype));
    }
    if (t->elements() != expected) {
      return Fail(StatusCode::kCorruptFile, "%s '%s' has %llu values, expected %zu", role,
                  name.c_str(), static_cast<unsigned long long>(t->elements()), expected);
    }
    *out = reinterpret_cast<const float*>(file_.TensorData(*t));
    return Status::Ok();
  }

  Status Int(const Json& node, const char* key, int64_t def, bool required, int64_t* out) {
    const Json* v = FindMember(node, key);
    if (v == nullptr || v->is_null()) {
      if (required) return Fail(StatusCode::kCorruptFile, "missing attribute '%s'", key);
      *out = def;
      return Status::Ok();
    }
    if (v->is_number_integer()) {
      *out = v->get<int64_t>();
      return Status::Ok();
    }
    if (v->is_string()) {  // "{L}" after substitution
      const std::string& s = v->get_ref<const std::string&>();
      errno = 0;
      char* end = nullptr;
      const long long x = std::strtoll(s.c_str(), &end, 10);
      if (!s.empty() && errno == 0 && *end == '\0') {
        *out = x;
        return Status::Ok();
      }
    }
    return Fail(StatusCode::kCorruptFile, "attribute '%s' must be an integer", key);
  }

  // A float attribute (default: the config's value) that `error` accepts.
  Status Float(const Json& node, const char* key, double def, const char* (*error)(double),
               float* out) {
    double v = def;
    POCKET_RETURN_IF_ERROR(GetOptDouble(node, key, &v, where_.c_str()));
    if (const char* why = error(v)) {
      return Fail(StatusCode::kCorruptFile, "'%s' = %g %s", key, v, why);
    }
    *out = static_cast<float>(v);
    return Status::Ok();
  }

  Status HeadDim(const Json& node, size_t width, size_t* head_dim) {
    int64_t hd = 0;
    POCKET_RETURN_IF_ERROR(Int(node, "head_dim", config_.head_dim, false, &hd));
    if (hd <= 0 || width % static_cast<size_t>(hd) != 0) {
      return Fail(StatusCode::kCorruptFile, "head_dim %lld does not divide the input width %zu",
                  static_cast<long long>(hd), width);
    }
    *head_dim = static_cast<size_t>(hd);
    return Status::Ok();
  }

  void Write(const std::string& name, size_t width, PlanStep* step) {
    auto it = slots_.find(name);
    if (it == slots_.end()) {
      it = slots_.emplace(name, static_cast<int>(plan_.slot_names.size())).first;
      plan_.slot_names.push_back(name);
      plan_.slot_width.push_back(0);
    }
    plan_.slot_width[it->second] = std::max(plan_.slot_width[it->second], width);
    current_[name] = width;
    step->out = it->second;
    step->width = width;
  }

  // Plans the nodes one at a time as repeat blocks expand, with each block's
  // variable substituted, so no expanded copy of the graph is held.
  Status Expand(const Json& nodes, std::vector<std::pair<std::string, std::string>>* subs,
                int depth) {
    for (const Json& node : nodes) {
      if (FindMember(node, "repeat") == nullptr) {
        Json copy = node;
        Substitute(&copy, *subs);
        POCKET_RETURN_IF_ERROR(AddNode(static_cast<int>(plan_.steps.size()), copy));
        continue;
      }
      Repeat r;
      POCKET_RETURN_IF_ERROR(ReadRepeat(node, plan_.steps.size(), depth, &r));
      for (int64_t i = 0; i < r.count; ++i) {
        subs->emplace_back("{" + r.var + "}", std::to_string(i));
        Status s = Expand(*r.body, subs, depth + 1);
        subs->pop_back();
        POCKET_RETURN_IF_ERROR(s);
      }
    }
    return Status::Ok();
  }

  Status AddNode(int index, const Json& node) {
    node_ = index;
    op_name_ = "?";
    where_ = StringPrintf("graph node %d", index);
    POCKET_RETURN_IF_ERROR(GetString(node, "op", &op_name_, where_.c_str()));
    where_ = StringPrintf("graph node %d (%s)", index, op_name_.c_str());
    const OpSpec* spec = nullptr;
    for (const OpSpec& s : kOps) {
      if (op_name_ == s.name) spec = &s;
    }
    if (spec == nullptr) {
      return Fail(StatusCode::kUnsupported,
                  "unknown op; this build knows embed, rms_norm, head_rms_norm, linear, rope, "
                  "attention, swiglu, add (is the file newer than this library?)");
    }
    const Json* in = FindMember(node, "in");
    std::vector<std::string> names;
    if (in != nullptr && in->is_array()) {
      for (const Json& v : *in) {
        if (!v.is_string()) return Fail(StatusCode::kCorruptFile, "'in' must hold strings");
        names.push_back(v.get<std::string>());
      }
    } else {
      return Fail(StatusCode::kCorruptFile, "missing 'in' array");
    }
    if (names.size() < spec->min_in || names.size() > spec->max_in) {
      return Fail(StatusCode::kCorruptFile, "has %zu inputs, expected %zu%s", names.size(),
                  spec->min_in, spec->max_in != spec->min_in ? " or 3" : "");
    }
    std::string out;
    POCKET_RETURN_IF_ERROR(GetString(node, "out", &out, where_.c_str()));
    if (out == "tokens") {
      return Fail(StatusCode::kCorruptFile, "'tokens' is the graph input and cannot be written");
    }

    PlanStep step;
    step.op = spec->op;
    step.node = index;
    size_t width = 0;
    switch (spec->op) {
      case OpKind::kEmbed: {
        if (names[0] != "tokens") {
          return Fail(StatusCode::kCorruptFile, "first input must be 'tokens', got '%s'",
                      names[0].c_str());
        }
        POCKET_RETURN_IF_ERROR(Matrix(names[1], &step.weight));
        if (step.weight.rows != plan_.vocab) {
          return Fail(StatusCode::kCorruptFile, "table '%s' has %zu rows but vocab is %zu",
                      names[1].c_str(), step.weight.rows, plan_.vocab);
        }
        if (step.weight.cols != static_cast<size_t>(config_.hidden)) {
          return Fail(StatusCode::kCorruptFile,
                      "table '%s' has %zu columns but the config's hidden is %d", names[1].c_str(),
                      step.weight.cols, config_.hidden);
        }
        width = step.weight.cols;
        break;
      }
      case OpKind::kRmsNorm:
      case OpKind::kHeadRmsNorm: {
        POCKET_RETURN_IF_ERROR(Value(names[0], &step.in[0], &step.in_width));
        POCKET_RETURN_IF_ERROR(Float(node, "eps", config_.rms_eps, RmsEpsError, &step.eps));
        size_t norm_size = step.in_width;
        if (spec->op == OpKind::kHeadRmsNorm) {
          POCKET_RETURN_IF_ERROR(HeadDim(node, step.in_width, &step.head_dim));
          norm_size = step.head_dim;
        }
        POCKET_RETURN_IF_ERROR(Vector(names[1], norm_size, "norm weight", &step.norm));
        width = step.in_width;
        break;
      }
      case OpKind::kLinear: {
        POCKET_RETURN_IF_ERROR(Value(names[0], &step.in[0], &step.in_width));
        POCKET_RETURN_IF_ERROR(Matrix(names[1], &step.weight));
        if (step.weight.cols != step.in_width) {
          return Fail(StatusCode::kCorruptFile,
                      "weight '%s' has %zu columns but its input '%s' has width %zu",
                      names[1].c_str(), step.weight.cols, names[0].c_str(), step.in_width);
        }
        if (names.size() == 3) {
          POCKET_RETURN_IF_ERROR(Vector(names[2], step.weight.rows, "bias", &step.bias));
        }
        width = step.weight.rows;
        break;
      }
      case OpKind::kRope: {
        POCKET_RETURN_IF_ERROR(Value(names[0], &step.in[0], &step.in_width));
        POCKET_RETURN_IF_ERROR(HeadDim(node, step.in_width, &step.head_dim));
        if (step.head_dim % 2 != 0) {
          return Fail(StatusCode::kCorruptFile, "head_dim %zu must be even", step.head_dim);
        }
        POCKET_RETURN_IF_ERROR(
            Float(node, "theta", config_.rope_theta, RopeThetaError, &step.theta));
        std::string style = config_.rope_style == RopeStyle::kNeox ? "neox" : "interleaved";
        POCKET_RETURN_IF_ERROR(GetOptString(node, "style", &style, where_.c_str()));
        if (style == "neox") {
          step.style = RopeStyle::kNeox;
        } else if (style == "interleaved") {
          step.style = RopeStyle::kInterleaved;
        } else {
          return Fail(StatusCode::kUnsupported, "rope style '%s' (known: neox, interleaved)",
                      style.c_str());
        }
        width = step.in_width;
        break;
      }
      case OpKind::kAttention: {
        POCKET_RETURN_IF_ERROR(AddAttention(node, names, &step));
        width = step.in_width;
        break;
      }
      case OpKind::kSwiglu:
      case OpKind::kAdd: {
        size_t w1 = 0;
        POCKET_RETURN_IF_ERROR(Value(names[0], &step.in[0], &step.in_width));
        POCKET_RETURN_IF_ERROR(Value(names[1], &step.in[1], &w1));
        if (w1 != step.in_width) {
          return Fail(StatusCode::kCorruptFile,
                      "inputs '%s' (width %zu) and '%s' (width %zu) differ", names[0].c_str(),
                      step.in_width, names[1].c_str(), w1);
        }
        width = step.in_width;
        break;
      }
    }
    Write(out, width, &step);
    plan_.steps.push_back(step);
    return Status::Ok();
  }

  Status AddAttention(const Json& node, const std::vector<std::string>& names, PlanStep* step) {
    size_t wk = 0, wv = 0;
    POCKET_RETURN_IF_ERROR(Value(names[0], &step->in[0], &step->in_width));
    POCKET_RETURN_IF_ERROR(Value(names[1], &step->in[1], &wk));
    POCKET_RETURN_IF_ERROR(Value(names[2], &step->in[2], &wv));
    int64_t layer = 0, heads = 0, kv_heads = 0, hd = 0;
    POCKET_RETURN_IF_ERROR(Int(node, "layer", 0, true, &layer));
    POCKET_RETURN_IF_ERROR(Int(node, "n_heads", config_.n_heads, false, &heads));
    POCKET_RETURN_IF_ERROR(Int(node, "n_kv_heads", config_.n_kv_heads, false, &kv_heads));
    POCKET_RETURN_IF_ERROR(Int(node, "head_dim", config_.head_dim, false, &hd));
    if (layer < 0 || layer >= config_.n_layers) {
      return Fail(StatusCode::kCorruptFile, "layer %lld is out of range [0, %d)",
                  static_cast<long long>(layer), config_.n_layers);
    }
    if (heads <= 0 || kv_heads <= 0 || hd <= 0 || heads % kv_heads != 0) {
      return Fail(StatusCode::kCorruptFile,
                  "n_heads %lld, n_kv_heads %lld, head_dim %lld: all must be positive and "
                  "n_kv_heads must divide n_heads",
                  static_cast<long long>(heads), static_cast<long long>(kv_heads),
                  static_cast<long long>(hd));
    }
    size_t q_width = 0, kv_width = 0;
    if (__builtin_mul_overflow(heads, hd, &q_width) ||
        __builtin_mul_overflow(kv_heads, hd, &kv_width) || step->in_width != q_width ||
        wk != kv_width || wv != kv_width) {
      return Fail(StatusCode::kCorruptFile,
                  "q/k/v widths %zu/%zu/%zu do not match %lld heads, %lld kv heads of %lld",
                  step->in_width, wk, wv, static_cast<long long>(heads),
                  static_cast<long long>(kv_heads), static_cast<long long>(hd));
    }
    // The attention kernels are chosen for the config's heads at load.
    if (heads != config_.n_heads || kv_heads != config_.n_kv_heads || hd != config_.head_dim) {
      return Fail(StatusCode::kCorruptFile,
                  "%lld heads, %lld kv heads of %lld differ from the config's n_heads %d, "
                  "n_kv_heads %d, head_dim %d",
                  static_cast<long long>(heads), static_cast<long long>(kv_heads),
                  static_cast<long long>(hd), config_.n_heads, config_.n_kv_heads,
                  config_.head_dim);
    }
    size_t& row = plan_.kv_row[static_cast<size_t>(layer)];
    if (row != 0) {
      return Fail(StatusCode::kCorruptFile, "layer %lld's KV cache is already used by another node",
                  static_cast<long long>(layer));
    }
    row = kv_width;
    plan_.kv_head_dim[static_cast<size_t>(layer)] = static_cast<size_t>(hd);
    // The rope that last wrote K is the position encoding its cached rows
    // carry.
    for (auto it = plan_.steps.rbegin(); it != plan_.steps.rend(); ++it) {
      if (it->out != step->in[1]) continue;
      if (it->op == OpKind::kRope) {
        plan_.kv_rope[static_cast<size_t>(layer)] = {it->head_dim, it->theta, it->style};
      }
      break;
    }
    step->layer = static_cast<int>(layer);
    step->n_heads = static_cast<size_t>(heads);
    step->n_kv_heads = static_cast<size_t>(kv_heads);
    step->head_dim = static_cast<size_t>(hd);
    return Status::Ok();
  }

  const PocketFile& file_;
  const ModelConfig& config_;
  Plan plan_;
  std::map<std::string, int> slots_;
  std::map<std::string, size_t> current_;  // value name -> width as last written
  int node_ = 0;
  std::string op_name_;
  std::string where_;
};

}  // namespace

StatusOr<Plan> BuildPlan(std::string_view graph_json, const PocketFile& file,
                         const ModelConfig& config) {
  POCKET_ASSIGN_OR_RETURN(Json graph, ParseJson(graph_json, "graph section"));
  if (!graph.is_object()) {
    return Errorf(StatusCode::kCorruptFile, "graph section: must be a JSON object");
  }
  int64_t version = 1;
  POCKET_RETURN_IF_ERROR(GetOptInt(graph, "version", &version, "graph section"));
  if (version != 1) {
    return Errorf(StatusCode::kUnsupported,
                  "graph section: version %lld; this build reads version 1 (update Pocket)",
                  static_cast<long long>(version));
  }
  const Json* nodes = FindMember(graph, "nodes");
  if (nodes == nullptr) {
    return Errorf(StatusCode::kCorruptFile, "graph section: missing 'nodes'");
  }
  // Sized against what the file holds before anything is allocated from the
  // graph or the config: at most kMaxNodesPerTensor nodes per tensor, and one
  // attention node per layer the config declares.
  const uint64_t limit =
      std::min<uint64_t>(kMaxNodes, kMaxNodesPerTensor * uint64_t{file.tensors().size()});
  GraphSize size;
  POCKET_RETURN_IF_ERROR(Measure(*nodes, 0, 0, limit, &size));
  if (size.attention != static_cast<uint64_t>(config.n_layers)) {
    return Errorf(StatusCode::kCorruptFile,
                  "graph section: has %llu attention nodes but the config's n_layers is %d (one "
                  "attention node per layer)",
                  static_cast<unsigned long long>(size.attention), config.n_layers);
  }
  Planner planner(file, config);
  return planner.Build(*nodes);
}

}  // namespace pocket
