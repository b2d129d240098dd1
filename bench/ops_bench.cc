// CPU op micro-benchmarks at the MNN-Pocket-0.3B shapes: q4 g64 and q8 GEMV
// (decode, reported as GB/s of weight bytes streamed), prefill Linear with 64
// tokens (GFLOP/s), each with f32 and int8 activations (QuantMath) and in
// both the planar and the rows16 layout, decode attention over 512 cached positions
// (from cache and from DRAM) and prefill attention, greedy sampling's argmax
// over a vocabulary, and the cost of one empty ParallelFor (decode issues
// ~140 per token). --cpu-target=NAME (e.g. avx2, sse4) runs every kernel for
// that older target, as `pocket --cpu-target` does. --no-matrix-ext runs the
// prefill cases without the matrix unit (Arm's SMMLA on a CPU with I8MM,
// x86's AMX tiles): the dot-product GEMM of the same target, as `pocket
// --no-matrix-ext` does.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/kernel_target.h"
#include "backends/cpu/ops.h"
#include "backends/cpu/thread_pool.h"
#include "quant/rows16.h"
#include "util/cache_line_vector.h"
#include "util/fp16.h"

namespace pocket::cpu {
namespace {

constexpr uint32_t kGroup = 64;

// A q4 g64 [rows, cols] weight with random codes and plausible scales.
std::vector<uint8_t> RandomQ4(size_t rows, size_t cols) {
  const size_t groups = rows * cols / kGroup;
  std::vector<uint8_t> bytes(rows * cols / 2 + 4 * groups);
  std::mt19937 rng(7);
  for (size_t i = 0; i < rows * cols / 2; ++i) bytes[i] = static_cast<uint8_t>(rng());
  uint16_t* halves = reinterpret_cast<uint16_t*>(bytes.data() + rows * cols / 2);
  for (size_t g = 0; g < groups; ++g) {
    halves[g] = F32ToF16(0.01f);
    halves[groups + g] = F32ToF16(-0.08f);
  }
  return bytes;
}

// A q8 [rows, cols] weight (group 32) with random codes in [-127, 127].
std::vector<uint8_t> RandomQ8(size_t rows, size_t cols) {
  const size_t groups = rows * cols / kQ8Group;
  std::vector<uint8_t> bytes(rows * cols + 2 * groups);
  std::mt19937 rng(7);
  for (size_t i = 0; i < rows * cols; ++i) bytes[i] = static_cast<uint8_t>(rng() % 255 + 129);
  uint16_t* halves = reinterpret_cast<uint16_t*>(bytes.data() + rows * cols);
  for (size_t g = 0; g < groups; ++g) halves[g] = F32ToF16(0.001f);
  return bytes;
}

std::vector<float> RandomActivations(size_t count) {
  std::mt19937 rng(8);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(count);
  for (float& f : v) f = dist(rng);
  return v;
}

// args: rows (out), cols (in), threads, tokens, int8 (QuantMath::kInt8 if 1),
// rows16 (the layout the converter writes if 1, planar if 0); q8 weights
// (group 32) for the GemvQ8 / PrefillQ8 cases, else q4 g64.
void RunLinear(benchmark::State& state, DType dtype) {
  const size_t rows = state.range(0), cols = state.range(1), n = state.range(3);
  ThreadPool pool(ThreadPoolOptions{static_cast<size_t>(state.range(2)), false});
  const bool rows16 = state.range(5) != 0;
  const QuantMath math = state.range(4) ? QuantMath::kInt8 : QuantMath::kF32;
  const bool q8 = dtype == DType::kQ8;
  std::vector<uint8_t> weight = q8 ? RandomQ8(rows, cols) : RandomQ4(rows, cols);
  if (rows16) {
    weight = q8 ? PackQ8Rows16(weight.data(), rows, cols)
                : PackQ4Rows16(weight.data(), rows, cols, kGroup);
  }
  const WeightView w{
      weight.data(), dtype, q8 ? kQ8Group : kGroup,
      rows,          cols,  rows16 ? TensorLayout::kRows16 : TensorLayout::kRowMajor};
  const std::vector<float> x = RandomActivations(n * cols);
  std::vector<float> out(n * rows);
  for (auto _ : state) {
    Linear(x.data(), n, w, nullptr, out.data(), &pool, math);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetLabel(KernelTargetName());
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * weight.size()));
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * n * rows * cols * 1e-9,
                                                 benchmark::Counter::kIsIterationInvariantRate);
}

void GemvShapes(benchmark::internal::Benchmark* b) {
  for (int rows16 : {0, 1}) {
    for (int int8 : {0, 1}) {
      for (int threads : {1, 2}) {
        for (auto [in, out] :
             {std::pair{896, 896}, {896, 128}, {896, 2560}, {2560, 896}, {896, 65536}}) {
          b->Args({out, in, threads, 1, int8, rows16});
        }
      }
    }
  }
}

void PrefillShapes(benchmark::internal::Benchmark* b) {
  for (int rows16 : {0, 1}) {
    for (int int8 : {0, 1}) {
      for (int threads : {1, 2}) {
        for (auto [in, out] : {std::pair{896, 896}, {896, 2560}, {2560, 896}}) {
          b->Args({out, in, threads, 64, int8, rows16});
        }
      }
    }
  }
}

// Speculation's verify step: the tokens of one step over b positions (1 is
// the decode GEMV it is compared with), on pocket-0.3b's shapes and the
// output head, 2 threads, int8, rows16.
void VerifyShapes(benchmark::internal::Benchmark* b) {
  for (auto [in, out] : {std::pair{896, 2560}, {2560, 896}, {896, 65536}}) {
    for (int n : {1, 2, 4, 8, 16}) b->Args({out, in, 2, n, 1, 1});
  }
}

void RunQ4(benchmark::State& state) { RunLinear(state, DType::kQ4); }
void RunQ8(benchmark::State& state) { RunLinear(state, DType::kQ8); }

BENCHMARK(RunQ4)
    ->Name("GemvQ4G64")
    ->ArgNames({"rows", "cols", "threads", "n", "int8", "rows16"})
    ->Apply(GemvShapes)
    ->UseRealTime();
BENCHMARK(RunQ4)
    ->Name("PrefillQ4G64")
    ->ArgNames({"rows", "cols", "threads", "n", "int8", "rows16"})
    ->Apply(PrefillShapes)
    ->UseRealTime();
BENCHMARK(RunQ4)
    ->Name("VerifyQ4G64")
    ->ArgNames({"rows", "cols", "threads", "n", "int8", "rows16"})
    ->Apply(VerifyShapes)
    ->UseRealTime();
BENCHMARK(RunQ8)
    ->Name("GemvQ8")
    ->ArgNames({"rows", "cols", "threads", "n", "int8", "rows16"})
    ->Apply(GemvShapes)
    ->UseRealTime();
BENCHMARK(RunQ8)
    ->Name("PrefillQ8")
    ->ArgNames({"rows", "cols", "threads", "n", "int8", "rows16"})
    ->Apply(PrefillShapes)
    ->UseRealTime();

// Attention of one layer's chunk of n tokens whose last one sits at
// position ctx - 1: 14 query heads over kv_heads kv heads of 64 (n 1: a
// decode step; n 64: the last prefill chunk of a ctx-token prompt). One kv
// head with 2 threads shows the split of a head's positions across threads.
// bf16 1: AttentionMath::kBf16 (the int8 maths' attention: int8 products
// for a q8 cache, bf16 for the others where the CPU has AVX512_BF16, else
// f32; the label says which). kv: the cache's element
// type, 0 f16 (--kv f16), 1 q8, 2 bf16.
//
// AttentionDecodeColdKv is the decode case with the KV cache out of the
// caches, as in a model, where 170 MB of weights stream through them between
// one token's visit to a layer and the next: before each timed step the
// pool's threads write a 64 MiB buffer (untimed), and what the step then
// adds over the warm case is its wait for DRAM.
void AttentionCase(benchmark::State& state, bool cold_kv) {
  const size_t ctx = state.range(0), n = state.range(2), kv_heads = state.range(3);
  const AttentionMath math = state.range(4) ? AttentionMath::kBf16 : AttentionMath::kF32;
  const size_t heads = 14, head_dim = 64;
  constexpr KvType kTypes[] = {KvType::kF16, KvType::kQ8, KvType::kBf16};
  const KvType type = kTypes[state.range(5)];
  const size_t page_tokens = 64, kv_dim = kv_heads * head_dim;
  ThreadPool pool(ThreadPoolOptions{static_cast<size_t>(state.range(1)), false});
  const size_t pages = (ctx + page_tokens - 1) / page_tokens;
  std::vector<std::vector<uint8_t>> storage(
      2 * pages, std::vector<uint8_t>(page_tokens * KvRowBytes(type, kv_dim, head_dim)));
  std::vector<void*> k_pages, v_pages;
  for (size_t p = 0; p < pages; ++p) {
    k_pages.push_back(storage[p].data());
    v_pages.push_back(storage[pages + p].data());
  }
  const KvView kv{type, k_pages.data(), v_pages.data(), page_tokens, kv_dim, head_dim};
  const std::vector<float> k = RandomActivations(ctx * kv_dim);
  KvAppend(kv, 0, k.data(), k.data(), ctx);
  const std::vector<float> q = RandomActivations(n * heads * head_dim);
  // On a cache line, as the executor's buffers are: the kv heads' tasks
  // write neighbouring rows.
  CacheLineBuffer<float> out;
  if (!out.Reset(n * heads * head_dim)) {
    state.SkipWithError("out of memory");
    return;
  }
  std::vector<uint8_t> evict(cold_kv ? size_t{64} << 20 : 0);
  const size_t tasks = pool.NumThreads(), share = evict.size() / tasks;
  for (auto _ : state) {
    if (cold_kv) {
      state.PauseTiming();
      pool.ParallelFor(tasks, [&](size_t task, size_t) {
        for (size_t i = task * share; i < (task + 1) * share; i += 64) ++evict[i];
      });
      benchmark::DoNotOptimize(evict.data());
      state.ResumeTiming();
    }
    Attention(q.data(), n, ctx - n, kv, heads, kv_heads, head_dim, out.data(), &pool, math);
    benchmark::DoNotOptimize(out.data());
  }
  const AttentionMath used = AttentionMathFor(kv, head_dim, math);
  const char* products = used == AttentionMath::kBf16   ? " bf16"
                         : used == AttentionMath::kInt8 ? " int8"
                                                        : "";
  state.SetLabel(std::string(KernelTargetName()) + products + " kv " + KvTypeName(type));
  // Multiply-adds of q.k and of the weighted V sum over the causal spans.
  const double spans = static_cast<double>(n) * (ctx - n) + n * (n + 1) / 2.0;
  state.counters["GFLOP/s"] = benchmark::Counter(spans * heads * head_dim * 2 * 2 * 1e-9,
                                                 benchmark::Counter::kIsIterationInvariantRate);
}
void RunAttention(benchmark::State& state) { AttentionCase(state, false); }
void RunAttentionColdKv(benchmark::State& state) { AttentionCase(state, true); }

BENCHMARK(RunAttention)
    ->Name("AttentionDecode")
    ->ArgNames({"ctx", "threads", "n", "kv_heads", "bf16", "kv"})
    ->ArgsProduct({{512}, {1, 2}, {1}, {2}, {0, 1}, {0, 1, 2}})
    ->ArgsProduct({{1024}, {1, 2}, {1}, {1}, {0, 1}, {0}})
    ->UseRealTime();
// Each iteration also pays about 3 ms of untimed eviction: a fixed count
// keeps a run short.
BENCHMARK(RunAttentionColdKv)
    ->Name("AttentionDecodeColdKv")
    ->ArgNames({"ctx", "threads", "n", "kv_heads", "bf16", "kv"})
    ->ArgsProduct({{512}, {1, 2}, {1}, {2}, {0, 1}, {0, 1, 2}})
    ->Iterations(300)
    ->UseRealTime();
BENCHMARK(RunAttention)
    ->Name("AttentionPrefill")
    ->ArgNames({"ctx", "threads", "n", "kv_heads", "bf16", "kv"})
    ->ArgsProduct({{512}, {1, 2}, {64}, {2}, {0, 1}, {0, 1, 2}})
    ->UseRealTime();

// Greedy sampling's pick over pocket-0.3b's 65,536 logits, which lie in L2
// after the logits are written (GB/s of logits scanned).
void ArgmaxLogits(benchmark::State& state) {
  const std::vector<float> logits = RandomActivations(static_cast<size_t>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(Argmax(logits.data(), logits.size()));
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(logits.size() * sizeof(float)));
  state.SetLabel(KernelTargetName());
}
BENCHMARK(ArgmaxLogits)->ArgNames({"vocab"})->Arg(65536);

// One ParallelFor of empty tasks: the fixed cost (wake-up, hand-off, join)
// every threaded op pays.
void ParallelForOverhead(benchmark::State& state) {
  ThreadPool pool(ThreadPoolOptions{static_cast<size_t>(state.range(0)), false});
  const size_t tasks = pool.NumThreads();
  for (auto _ : state) {
    pool.ParallelFor(tasks, [](size_t task, size_t) { benchmark::DoNotOptimize(task); });
  }
}
BENCHMARK(ParallelForOverhead)->ArgNames({"threads"})->Arg(2)->UseRealTime();

// Eight tasks that each spin for work_ns / 4 on 2 threads: ideally work_ns
// in all, so the rest is what a hand-off and join cost when the worker has
// to take part. (ParallelForOverhead's empty tasks are mostly run by the
// caller alone before the worker wakes.)
void ParallelForBusy(benchmark::State& state) {
  ThreadPool pool(ThreadPoolOptions{2, false});
  const auto spin = std::chrono::nanoseconds(state.range(0) / 4);
  for (auto _ : state) {
    pool.ParallelFor(8, [&](size_t task, size_t) {
      const auto end = std::chrono::steady_clock::now() + spin;
      while (std::chrono::steady_clock::now() < end) benchmark::DoNotOptimize(task);
    });
  }
}
BENCHMARK(ParallelForBusy)->ArgNames({"work_ns"})->Arg(1000)->Arg(4000)->UseRealTime();

}  // namespace
}  // namespace pocket::cpu

// Google Benchmark's main, after taking --cpu-target=NAME and --no-matrix-ext out
// of the flags.
int main(int argc, char** argv) {
  std::vector<char*> args;
  bool matrix_ext = true;
  for (int i = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    const std::string flag = "--cpu-target=";
    if (arg == "--no-matrix-ext") {
      matrix_ext = false;
      continue;
    }
    if (arg.rfind(flag, 0) != 0) {
      args.push_back(argv[i]);
      continue;
    }
    if (!pocket::cpu::RestrictKernelTargets(arg.substr(flag.size()))) {
      std::fprintf(stderr, "ops_bench: %s is not available here; targets: %s\n", arg.c_str(),
                   pocket::cpu::KernelTargetList(" ").c_str());
      return 2;
    }
  }
  if (!matrix_ext) pocket::cpu::AllowMatrixExtension(false);
  int count = static_cast<int>(args.size());
  benchmark::Initialize(&count, args.data());
  if (benchmark::ReportUnrecognizedArguments(count, args.data())) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
