// Load errors from a bad graph or config: files are rebuilt from the
// converted stories260K model with one change each, and the message must
// name the node, its op and the offending tensor or value, or the config's
// field.
#include <string>

#include <gtest/gtest.h>

#include "backends/registry.h"

#include "format/writer.h"
#include "runtime/model.h"
#include "testing/run_cli.h"
#include "tests/runtime/stories_fixture.h"
#include "util/fp16.h"

namespace pocket {
namespace {

// Nodes before the repeat block, and per layer inside it.
constexpr int kLayers = 5;

class PlanErrorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto file = PocketFile::Open(testing_stories::StoriesPath());
    ASSERT_TRUE(file.ok()) << file.status().ToString();
    file_ = std::move(file).value();
    auto graph = ParseJson(file_->graph_json(), "graph");
    ASSERT_TRUE(graph.ok());
    graph_ = *graph;
    auto config = ParseJson(file_->config_json(), "config");
    ASSERT_TRUE(config.ok());
    config_ = *config;
    out_ = std::string(POCKET_BINARY_DIR) + "/plan_errors_" + std::to_string(getpid()) + ".pocket";
  }
  void TearDown() override { std::remove(out_.c_str()); }

  Json& Layer(int i) { return graph_["nodes"][1]["nodes"][i]; }
  int LayerSize() { return static_cast<int>(graph_["nodes"][1]["nodes"].size()); }
  // Index in the expanded node list of the final rms_norm.
  int FinalNorm() { return 1 + kLayers * LayerSize(); }

  // Writes the model with config_ and graph_ and loads it; returns the load
  // status.
  Status Load(bool f16_output_norm = false) {
    PocketWriter w;
    w.SetConfigJson(DumpJson(config_));
    w.SetTokenizerBlob(std::string(file_->tokenizer_blob()));
    w.SetGraphJson(DumpJson(graph_));
    for (const TensorInfo& t : file_->tensors()) {
      const uint8_t* data = file_->TensorData(t);
      std::vector<uint8_t> bytes(data, data + t.nbytes);
      TensorInfo info = t;
      if (f16_output_norm && t.name == "output_norm.weight") {
        const float* f = reinterpret_cast<const float*>(data);
        bytes.assign(t.elements() * 2, 0);
        for (size_t i = 0; i < t.elements(); ++i) {
          const uint16_t h = F32ToF16(f[i]);
          bytes[2 * i] = static_cast<uint8_t>(h & 0xff);
          bytes[2 * i + 1] = static_cast<uint8_t>(h >> 8);
        }
        info.dtype = DType::kF16;
        info.nbytes = bytes.size();
      }
      Status s = w.AddTensor(info, std::move(bytes));
      if (!s.ok()) return s;
    }
    Status s = w.Finish(out_);
    if (!s.ok()) return s;
    auto model = Model::Load(out_, ModelOptions());
    return model.status();
  }

  std::unique_ptr<PocketFile> file_;
  Json config_;
  Json graph_;
  std::string out_;
};

int IndexOf(Json& nodes, const std::string& op) {
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i]["op"] == op) return static_cast<int>(i);
  }
  return -1;
}

TEST_F(PlanErrorsTest, UnmodifiedGraphLoads) { EXPECT_TRUE(Load().ok()); }

TEST_F(PlanErrorsTest, UnknownOp) {
  graph_["nodes"][3]["op"] = "gelu";
  const Status s = Load();
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_NE(
      s.message().find("graph node " + std::to_string(FinalNorm() + 1) + " (gelu): unknown op"),
      std::string::npos)
      << s.message();
}

TEST_F(PlanErrorsTest, MissingTensor) {
  graph_["nodes"][2]["in"][1] = "output_norm.weightX";
  const Status s = Load();
  EXPECT_EQ(s.code(), StatusCode::kCorruptFile);
  EXPECT_NE(s.message().find("graph node " + std::to_string(FinalNorm()) +
                             " (rms_norm): tensor 'output_norm.weightX' is not in the tensor "
                             "directory"),
            std::string::npos)
      << s.message();
}

TEST_F(PlanErrorsTest, LinearShapeMismatch) {
  // ffn_down is [64, 172]: its 172 columns cannot take the 64-wide h.
  graph_["nodes"][3]["in"][1] = "blk.0.ffn_down.weight";
  const Status s = Load();
  EXPECT_EQ(s.code(), StatusCode::kCorruptFile);
  EXPECT_NE(s.message().find("(linear): weight 'blk.0.ffn_down.weight' has 172 columns but its "
                             "input 'h' has width 64"),
            std::string::npos)
      << s.message();
}

TEST_F(PlanErrorsTest, NormWeightMustBeF32) {
  const Status s = Load(/*f16_output_norm=*/true);
  EXPECT_EQ(s.code(), StatusCode::kCorruptFile);
  EXPECT_NE(s.message().find("norm weight 'output_norm.weight' is f16; norm weights and biases "
                             "must be f32"),
            std::string::npos)
      << s.message();
}

TEST_F(PlanErrorsTest, NormWeightSize) {
  // ffn_norm of layer 0 has 64 values; rms_norm over the 172-wide g needs 172.
  const int down = IndexOf(graph_["nodes"][1]["nodes"], "swiglu");
  ASSERT_GE(down, 0);
  Json norm = {{"op", "rms_norm"}, {"in", {"g", "blk.{L}.ffn_norm.weight"}}, {"out", "g"}};
  graph_["nodes"][1]["nodes"].insert(graph_["nodes"][1]["nodes"].begin() + down + 1, norm);
  const Status s = Load();
  EXPECT_NE(s.message().find("graph node " + std::to_string(1 + down + 1) +
                             " (rms_norm): norm weight 'blk.0.ffn_norm.weight' has 64 values, "
                             "expected 172"),
            std::string::npos)
      << s.message();
}

TEST_F(PlanErrorsTest, HeadDimMustDivideWidth) {
  const int rope = IndexOf(graph_["nodes"][1]["nodes"], "rope");
  ASSERT_GE(rope, 0);
  Layer(rope)["head_dim"] = 7;
  const Status s = Load();
  EXPECT_NE(s.message().find("graph node " + std::to_string(1 + rope) +
                             " (rope): head_dim 7 does not divide the input width 64"),
            std::string::npos)
      << s.message();
}

TEST_F(PlanErrorsTest, AttentionHeadsInconsistent) {
  const int attn = IndexOf(graph_["nodes"][1]["nodes"], "attention");
  ASSERT_GE(attn, 0);
  Layer(attn)["n_heads"] = 4;
  const Status s = Load();
  EXPECT_NE(s.message().find("(attention): q/k/v widths 64/32/32 do not match 4 heads, 4 kv "
                             "heads of 8"),
            std::string::npos)
      << s.message();
}

TEST_F(PlanErrorsTest, LayerOutOfRange) {
  const int attn = IndexOf(graph_["nodes"][1]["nodes"], "attention");
  ASSERT_GE(attn, 0);
  Layer(attn)["layer"] = 9;
  const Status s = Load();
  EXPECT_NE(s.message().find("graph node " + std::to_string(1 + attn) +
                             " (attention): layer 9 is out of range [0, 5)"),
            std::string::npos)
      << s.message();
}

TEST_F(PlanErrorsTest, ValueUsedBeforeWritten) {
  graph_["nodes"][3]["in"][0] = "hidden";
  const Status s = Load();
  EXPECT_NE(s.message().find("(linear): value 'hidden' is used before any node writes it"),
            std::string::npos)
      << s.message();
}

TEST_F(PlanErrorsTest, WrongInputCount) {
  graph_["nodes"][2]["in"].push_back("x");
  const Status s = Load();
  EXPECT_NE(s.message().find("graph node " + std::to_string(FinalNorm()) +
                             " (rms_norm): has 3 inputs, expected 2"),
            std::string::npos)
      << s.message();
}

TEST_F(PlanErrorsTest, MissingLogits) {
  graph_["nodes"][3]["out"] = "scores";
  const Status s = Load();
  EXPECT_NE(s.message().find("no node writes the output value 'logits'"), std::string::npos)
      << s.message();
}

TEST_F(PlanErrorsTest, ConfigLayerCountMustMatchTheGraph) {
  // Checked before the planner sizes its per-layer tables from the config:
  // a billion layers would otherwise take gigabytes.
  config_["n_layers"] = 1000000000;
  const Status s = Load();
  EXPECT_EQ(s.code(), StatusCode::kCorruptFile);
  EXPECT_NE(s.message().find("graph section: has 5 attention nodes but the config's n_layers is "
                             "1000000000"),
            std::string::npos)
      << s.message();
}

TEST_F(PlanErrorsTest, ConfigHiddenMustMatchTheEmbeddings) {
  config_["hidden"] = 65;
  const Status s = Load();
  EXPECT_NE(s.message().find("graph node 0 (embed): table 'token_embd.weight' has 64 columns but "
                             "the config's hidden is 65"),
            std::string::npos)
      << s.message();
}

TEST_F(PlanErrorsTest, RepeatBeyondTheTensorsIsRefusedBeforeExpanding) {
  graph_["nodes"][1]["repeat"] = 1 << 20;
  const Status s = Load();
  EXPECT_EQ(s.code(), StatusCode::kCorruptFile);
  EXPECT_NE(s.message().find("graph section: expands to more than"), std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("per tensor of the tensor directory"), std::string::npos)
      << s.message();
}

TEST_F(PlanErrorsTest, RmsNormEpsOutOfRange) {
  for (double eps : {-1.0, 0.0, 1.0, 1e-60}) {
    Layer(0)["eps"] = eps;
    const Status s = Load();
    EXPECT_EQ(s.code(), StatusCode::kCorruptFile) << eps;
    EXPECT_NE(s.message().find("graph node 1 (rms_norm): 'eps' = " + StringPrintf("%g", eps) +
                               " must be in (0, 1)"),
              std::string::npos)
        << s.message();
  }
}

TEST_F(PlanErrorsTest, RopeThetaOutOfRange) {
  const int rope = IndexOf(graph_["nodes"][1]["nodes"], "rope");
  ASSERT_GE(rope, 0);
  for (double theta : {-5.0, 0.5, 1e300}) {
    Layer(rope)["theta"] = theta;
    const Status s = Load();
    EXPECT_EQ(s.code(), StatusCode::kCorruptFile) << theta;
    EXPECT_NE(s.message().find("graph node " + std::to_string(1 + rope) + " (rope): 'theta' = " +
                               StringPrintf("%g", theta) + " must be above 1"),
              std::string::npos)
        << s.message();
  }
}

TEST_F(PlanErrorsTest, AttentionHeadsMustMatchTheConfig) {
  // Consistent widths (8 heads of 8 = 4 heads of 16), but the kernels are
  // chosen for the config's 8-wide heads.
  const int attn = IndexOf(graph_["nodes"][1]["nodes"], "attention");
  ASSERT_GE(attn, 0);
  Layer(attn)["n_heads"] = 4;
  Layer(attn)["n_kv_heads"] = 2;
  Layer(attn)["head_dim"] = 16;
  const Status s = Load();
  EXPECT_NE(s.message().find("(attention): 4 heads, 2 kv heads of 16 differ from the config's "
                             "n_heads 8, n_kv_heads 4, head_dim 8"),
            std::string::npos)
      << s.message();
}

TEST_F(PlanErrorsTest, AttentionHeadCountsThatOverflow) {
  const int attn = IndexOf(graph_["nodes"][1]["nodes"], "attention");
  ASSERT_GE(attn, 0);
  Layer(attn)["n_heads"] = int64_t{1} << 62;
  Layer(attn)["n_kv_heads"] = 1;
  Layer(attn)["head_dim"] = 8;
  const Status s = Load();
  EXPECT_NE(s.message().find("(attention): q/k/v widths 64/32/32 do not match"), std::string::npos)
      << s.message();
}

// Generation defaults the sampler would refuse are refused at load, naming
// the config's field rather than a flag the user never passed.
TEST_F(PlanErrorsTest, BadGenerationDefaultsNameTheField) {
  const struct {
    const char* key;
    double value;
    const char* rule;
  } cases[] = {
      {"max_new_tokens", -1, "must be in [0, 2^30]"},
      {"temperature", -1, "must be finite and >= 0"},
      {"top_p", 2, "must be in (0, 1]"},
      {"top_k", -3, "must be >= 0"},
      {"min_p", 1.5, "must be in [0, 1]"},
      {"repeat_penalty", 0, "must be finite and > 0"},
  };
  for (const auto& c : cases) {
    config_ = *ParseJson(file_->config_json(), "config");
    if (std::string(c.key) == "max_new_tokens" || std::string(c.key) == "top_k") {
      config_["generation"][c.key] = static_cast<int64_t>(c.value);
    } else {
      config_["generation"][c.key] = c.value;
    }
    const Status s = Load();
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << c.key;
    EXPECT_NE(s.message().find(
                  StringPrintf("model config 'generation': '%s' = %g %s", c.key, c.value, c.rule)),
              std::string::npos)
        << s.message();
  }
}

TEST_F(PlanErrorsTest, BadGenerationDefaultIsALoadErrorNotAUsageError) {
  config_["generation"]["temperature"] = -1;
  ASSERT_FALSE(Load().ok());
  const testing::CliOutput o = testing::RunCli("run -m '" + out_ + "' -p hi", "", true);
  EXPECT_EQ(o.exit_code, 1) << o.out;
  EXPECT_NE(o.out.find("model config 'generation': 'temperature' = -1"), std::string::npos)
      << o.out;
  EXPECT_EQ(o.out.find("--temp"), std::string::npos) << o.out;
}

TEST_F(PlanErrorsTest, GenerationFloatBeyondF32) {
  config_["generation"]["temperature"] = 1e300;
  const Status s = Load();
  EXPECT_NE(s.message().find("'temperature' = 1e+300 is not a finite 32-bit float"),
            std::string::npos)
      << s.message();
}

TEST(ModelLoadTest, UnknownBackend) {
  ModelOptions options;
  options.backend = "vulkan";
  auto model = Model::Load(testing_stories::StoriesPath(), options);
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(
      model.status().message(),
      "backend 'vulkan' is not built into this library; available: " + RegisteredBackendNames());
}

}  // namespace
}  // namespace pocket
