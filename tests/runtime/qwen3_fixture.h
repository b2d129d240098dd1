// Shared by the memory tests: a tiny synthetic Qwen3 (the tiny-qwen3 preset
// with head_dim 64, so KV rows have the shape of pocket-0.3b's, and a long
// context), with the bundled Qwen3 tokenizer and chat template, f32 weights
// unless asked otherwise. Written once per test process into a temp file.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "convert/synth.h"
#include "runtime/model.h"

namespace pocket::testing_qwen3 {

inline std::string Write(const std::string& name, int32_t context, DType weights = DType::kF32) {
  const std::string path = std::string(POCKET_BINARY_DIR) + "/runtime_test_" + name + "_" +
                           std::to_string(getpid()) + ".pocket";
  SynthOptions options{"tiny-qwen3", 3,
                       std::string(POCKET_TEST_DATA) + "/qwen3-tokenizer/tokenizer.json"};
  auto model = SynthesizeModel(options);
  EXPECT_TRUE(model.ok()) << model.status().ToString();
  if (!model.ok()) return "";
  ModelConfig& c = model->config;
  c.n_heads = 2;
  c.n_kv_heads = 1;
  c.head_dim = 64;
  c.context = context;
  // The preset's tensors have the old shapes: synthesize the new ones.
  model->tensors.clear();
  const std::vector<TensorSpec> specs = ExpectedTensors(c);
  for (size_t index = 0; index < specs.size(); ++index) {
    uint64_t n = 1;
    for (uint64_t d : specs[index].shape) n *= d;
    const bool norm = specs[index].name.find("norm") != std::string::npos;
    model->tensors.push_back(
        {specs[index].name, specs[index].shape, [index, n, norm]() -> StatusOr<std::vector<float>> {
           std::vector<float> v(n);
           for (uint64_t i = 0; i < n; ++i) {
             v[i] = SynthValue(3, index, i, 0.5) + (norm ? 1.0f : 0.0f);
           }
           return v;
         }});
  }
  QuantOptions q;
  q.weights = weights;
  q.embeddings = weights;
  auto stats = WritePocketModel(*model, q, path, nullptr);
  EXPECT_TRUE(stats.ok()) << stats.status().ToString();
  static std::vector<std::string> to_remove;
  if (to_remove.empty()) {
    std::atexit([] {
      for (const std::string& p : to_remove) std::remove(p.c_str());
    });
  }
  to_remove.push_back(path);
  return path;
}

// Null when synthesis or loading failed (the failure is reported).
inline const Model* Qwen3Model() {
  static std::unique_ptr<Model> model = [] {
    auto m = Model::Load(Write("qwen3_h64", 40960), ModelOptions());
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    return m.ok() ? std::move(m).value() : nullptr;
  }();
  return model.get();
}

}  // namespace pocket::testing_qwen3
