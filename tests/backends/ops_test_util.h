// Shared helpers of the CPU backend tests: the loop over every compiled
// Highway target, random data, and a quantizer for building weights that is
// independent of src/quant (so a bug there cannot hide one here).
#pragma once

#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "backends/cpu/kernel_target.h"
#include "backends/cpu/ops.h"
#include "quant/rows16.h"
#include "util/fp16.h"

namespace pocket::cpu::testing {

// Whether the CPU has a feature, from a source other than the code under
// test: on ARM, tools/ci-aarch64.sh names what each emulated CPU has in the
// environment variable `env` (1 or 0), since qemu shows the host's
// /proc/cpuinfo; elsewhere `flag` among /proc/cpuinfo's flags (x86 Linux).
// Unknown where neither says.
inline std::optional<bool> CpuHasFeature(const char* flag, const char* env) {
#if HWY_ARCH_ARM
  (void)flag;
  const char* value = std::getenv(env);
  if (value == nullptr) return std::nullopt;
  return std::string(value) == "1";
#else
  (void)env;
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line);
    std::string word;
    while (words >> word) {
      if (word == flag) return true;
    }
    return false;
  }
  return std::nullopt;
#endif
}

// Runs body() once per target compiled in and supported by this CPU, with
// dispatch forced to that target; checks dispatch really switched. Where the
// CPU has this build's int8 extension (kernel_target.h), its base target
// runs twice: as the extension (NEON_DOTPROD, AVX2_VNNI), then without it.
// Where a target would use the matrix extension's prefill kernels (Arm's
// I8MM, x86's AMX), it runs with them, then without.
template <typename Body>
void ForEachTarget(const Body& body) {
  const std::vector<int64_t> targets = RunnableKernelTargets();
  ASSERT_FALSE(targets.empty());
  for (int64_t target : targets) {
    hwy::SetSupportedTargetsForTest(target);
    const bool both = target == Int8ExtensionBase() && Int8ExtensionAvailable();
    for (const bool extended : {true, false}) {
      if (!extended && !both) continue;
      AllowInt8Extension(extended);
      const char* name = both && extended ? Int8ExtensionName() : hwy::TargetName(target);
      SCOPED_TRACE(name);
      EXPECT_STREQ(KernelTargetName(), name);
      AllowMatrixExtension(true);
      const bool matrix_ext = MatrixExtensionChosen();
      body();
      if (matrix_ext) {
        SCOPED_TRACE(std::string("without ") + MatrixExtensionName());
        AllowMatrixExtension(false);
        body();
        AllowMatrixExtension(true);
      }
    }
  }
  hwy::SetSupportedTargetsForTest(0);
  LiftKernelTargetRestriction();  // the best target again, as at start-up
}

inline std::vector<float> RandomFloats(size_t count, std::mt19937& rng, float lo = -1.0f,
                                       float hi = 1.0f) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(count);
  for (float& f : v) f = dist(rng);
  return v;
}

inline void PutU16(std::vector<uint8_t>& bytes, size_t offset, uint16_t value) {
  std::memcpy(bytes.data() + offset, &value, 2);
}

// Encodes w[rows, cols] in the layout of format/dtype.h.
inline std::vector<uint8_t> EncodeWeights(const std::vector<float>& w, size_t rows, size_t cols,
                                          DType dtype, uint32_t group) {
  std::vector<uint8_t> bytes;
  switch (dtype) {
    case DType::kF32:
      bytes.resize(rows * cols * 4);
      std::memcpy(bytes.data(), w.data(), bytes.size());
      break;
    case DType::kF16:
    case DType::kBF16:
      bytes.resize(rows * cols * 2);
      for (size_t i = 0; i < rows * cols; ++i) {
        PutU16(bytes, 2 * i, dtype == DType::kF16 ? F32ToF16(w[i]) : F32ToBF16(w[i]));
      }
      break;
    case DType::kQ8: {
      const size_t groups = cols / kQ8Group;
      bytes.resize(rows * cols + rows * groups * 2);
      for (size_t r = 0; r < rows; ++r) {
        for (size_t g = 0; g < groups; ++g) {
          const float* src = w.data() + r * cols + g * kQ8Group;
          float amax = 0.0f;
          for (size_t j = 0; j < kQ8Group; ++j) amax = std::max(amax, std::fabs(src[j]));
          const uint16_t scale_h = F32ToF16(amax / 127.0f);
          const float scale = F16ToF32(scale_h);
          PutU16(bytes, rows * cols + (r * groups + g) * 2, scale_h);
          for (size_t j = 0; j < kQ8Group; ++j) {
            const float q = scale > 0 ? std::round(src[j] / scale) : 0.0f;
            const int8_t code = static_cast<int8_t>(std::clamp(q, -127.0f, 127.0f));
            bytes[r * cols + g * kQ8Group + j] = static_cast<uint8_t>(code);
          }
        }
      }
      break;
    }
    case DType::kQ4: {
      const size_t groups = cols / group;
      const size_t code_bytes = rows * cols / 2;
      bytes.assign(code_bytes + 2 * rows * groups * 2, 0);
      for (size_t r = 0; r < rows; ++r) {
        for (size_t g = 0; g < groups; ++g) {
          const float* src = w.data() + r * cols + g * group;
          const float lo = *std::min_element(src, src + group);
          const float hi = *std::max_element(src, src + group);
          const uint16_t scale_h = F32ToF16((hi - lo) / 15.0f);
          const uint16_t min_h = F32ToF16(lo);
          const float scale = F16ToF32(scale_h);
          const float min = F16ToF32(min_h);
          PutU16(bytes, code_bytes + (r * groups + g) * 2, scale_h);
          PutU16(bytes, code_bytes + rows * groups * 2 + (r * groups + g) * 2, min_h);
          for (size_t j = 0; j < group; ++j) {
            const float q = scale > 0 ? std::round((src[j] - min) / scale) : 0.0f;
            const uint8_t code = static_cast<uint8_t>(std::clamp(q, 0.0f, 15.0f));
            uint8_t& b = bytes[r * cols / 2 + g * group / 2 + j % (group / 2)];
            b |= j < group / 2 ? code : static_cast<uint8_t>(code << 4);
          }
        }
      }
      break;
    }
  }
  return bytes;
}

struct TestWeight {
  std::vector<uint8_t> bytes;
  WeightView view;
};

// w[rows, cols] encoded as dtype; layout kRows16 (q4 or q8, rows % 16 == 0) packs
// the planar bytes as the converter does.
inline TestWeight EncodedWeight(const std::vector<float>& w, size_t rows, size_t cols, DType dtype,
                                uint32_t group, TensorLayout layout = TensorLayout::kRowMajor) {
  TestWeight t;
  t.bytes = EncodeWeights(w, rows, cols, dtype, group);
  if (layout == TensorLayout::kRows16) {
    t.bytes = dtype == DType::kQ8 ? PackQ8Rows16(t.bytes.data(), rows, cols)
                                  : PackQ4Rows16(t.bytes.data(), rows, cols, group);
  }
  t.view.layout = layout;
  t.view.data = t.bytes.data();
  t.view.dtype = dtype;
  t.view.group = group;
  t.view.rows = rows;
  t.view.cols = cols;
  return t;
}

inline TestWeight RandomWeight(size_t rows, size_t cols, DType dtype, uint32_t group,
                               std::mt19937& rng, TensorLayout layout = TensorLayout::kRowMajor) {
  return EncodedWeight(RandomFloats(rows * cols, rng), rows, cols, dtype, group, layout);
}

}  // namespace pocket::cpu::testing
