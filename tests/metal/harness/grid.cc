#include "metal/harness/grid.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "metal/shim/runtime.h"

namespace pocket::metal::harness {
namespace {

// Long enough for a slow emulator or a sanitizer, short enough that a
// kernel whose threads miss a barrier fails instead of hanging CI.
constexpr auto kBarrierTimeout = std::chrono::seconds(30);

[[noreturn]] void Deadlock(const char* kernel, const char* what) {
  std::fprintf(stderr, "metal harness: kernel %s: a %s that not every live thread reached\n",
               kernel, what);
  std::abort();
}

// A reusable barrier over `count` threads; Drop() takes a thread that has
// returned from the kernel out of the count, as a GPU does. A waiter first
// yields a few times (a threadgroup has far more threads than the machine
// has cores, and most barriers open within a few time slices), then sleeps
// until the last thread arrives.
class Barrier {
 public:
  void Reset(size_t count) {
    std::lock_guard<std::mutex> lock(mutex_);
    expected_ = count;
    arrived_ = 0;
  }

  void Arrive(const char* kernel, const char* what) {
    uint64_t generation;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      generation = generation_.load(std::memory_order_relaxed);
      if (++arrived_ == expected_) {
        Release();
        return;
      }
    }
    for (int spins = 0; spins < kYields; ++spins) {
      if (generation_.load(std::memory_order_acquire) != generation) return;
      std::this_thread::yield();
    }
    std::unique_lock<std::mutex> lock(mutex_);
    if (!opened_.wait_for(lock, kBarrierTimeout, [&] {
          return generation_.load(std::memory_order_relaxed) != generation;
        })) {
      Deadlock(kernel, what);
    }
  }

  void Drop() {
    std::lock_guard<std::mutex> lock(mutex_);
    --expected_;
    if (arrived_ > 0 && arrived_ == expected_) Release();
  }

 private:
  static constexpr int kYields = 16;

  void Release() {  // under mutex_
    arrived_ = 0;
    generation_.fetch_add(1, std::memory_order_release);
    opened_.notify_all();
  }

  std::mutex mutex_;
  std::condition_variable opened_;
  size_t expected_ = 0;
  size_t arrived_ = 0;
  std::atomic<uint64_t> generation_{0};
};

// A SIMD-group's lanes exchange values through `values`: a lane writes its
// own and sets `present`, all meet, each reads every present lane, all meet
// again, then each clears its own flag. Lanes that returned are absent.
struct SimdGroup {
  Barrier barrier;
  std::vector<float> values;
  std::vector<char> present;
};

struct ThreadContext {
  const char* kernel = nullptr;
  Barrier* group_barrier = nullptr;
  SimdGroup* simd = nullptr;
  uint32_t lane = 0;
};

thread_local ThreadContext tls;

const ThreadContext& Current(const char* what) {
  if (tls.group_barrier == nullptr) {
    std::fprintf(stderr, "metal harness: %s called outside a kernel run by RunGrid\n", what);
    std::abort();
  }
  return tls;
}

// Every present lane's value, combined in lane order, for every lane.
template <typename Combine>
float SimdReduce(float x, const char* what, Combine combine) {
  const ThreadContext& t = Current(what);
  SimdGroup& s = *t.simd;
  s.values[t.lane] = x;
  s.present[t.lane] = 1;
  s.barrier.Arrive(t.kernel, what);
  bool first = true;
  float result = 0.0f;
  for (size_t lane = 0; lane < s.values.size(); ++lane) {
    if (!s.present[lane]) continue;
    result = first ? s.values[lane] : combine(result, s.values[lane]);
    first = false;
  }
  s.barrier.Arrive(t.kernel, what);
  s.present[t.lane] = 0;
  return result;
}

}  // namespace

void RunGrid(const char* kernel, const size_t groups[3], size_t threads_per_group,
             size_t simd_width, const std::function<void(const ThreadPositions&)>& body) {
  const size_t n_simd = (threads_per_group + simd_width - 1) / simd_width;
  auto simd_lanes = [&](size_t s) {
    return std::min(simd_width, threads_per_group - s * simd_width);
  };
  Barrier start, end, group_barrier;
  start.Reset(threads_per_group);
  end.Reset(threads_per_group);
  std::vector<std::unique_ptr<SimdGroup>> simds(n_simd);
  for (size_t s = 0; s < n_simd; ++s) {
    simds[s] = std::make_unique<SimdGroup>();
    simds[s]->values.assign(simd_width, 0.0f);
    simds[s]->present.assign(simd_width, 0);
  }
  auto reset_group = [&] {
    group_barrier.Reset(threads_per_group);
    for (size_t s = 0; s < n_simd; ++s) simds[s]->barrier.Reset(simd_lanes(s));
  };
  reset_group();

  auto worker = [&](uint32_t lid) {
    SimdGroup* simd = simds[lid / simd_width].get();
    tls = ThreadContext{kernel, &group_barrier, simd, static_cast<uint32_t>(lid % simd_width)};
    ThreadPositions p{};
    for (int d = 0; d < 3; ++d) p.groups[d] = static_cast<uint32_t>(groups[d]);
    p.threads_per_group[0] = static_cast<uint32_t>(threads_per_group);
    p.threads_per_group[1] = p.threads_per_group[2] = 1;
    p.in_group[0] = p.index_in_group = lid;
    p.lane = tls.lane;
    p.simd_group = static_cast<uint32_t>(lid / simd_width);
    p.simd_groups = static_cast<uint32_t>(n_simd);
    p.simd_width = static_cast<uint32_t>(simd_width);
    for (uint32_t gz = 0; gz < groups[2]; ++gz) {
      for (uint32_t gy = 0; gy < groups[1]; ++gy) {
        for (uint32_t gx = 0; gx < groups[0]; ++gx) {
          start.Arrive(kernel, "threadgroup start");
          p.group[0] = gx;
          p.group[1] = gy;
          p.group[2] = gz;
          p.grid[0] = gx * static_cast<uint32_t>(threads_per_group) + lid;
          p.grid[1] = gy;
          p.grid[2] = gz;
          body(p);
          group_barrier.Drop();
          simd->barrier.Drop();
          end.Arrive(kernel, "threadgroup end");
          // Every thread is past the group; the next start orders this
          // reset before any use.
          if (lid == 0) reset_group();
        }
      }
    }
    tls = ThreadContext{};
  };
  std::vector<std::thread> threads;
  threads.reserve(threads_per_group);
  for (size_t lid = 0; lid < threads_per_group; ++lid) {
    threads.emplace_back(worker, static_cast<uint32_t>(lid));
  }
  for (std::thread& t : threads) t.join();
}

}  // namespace pocket::metal::harness

namespace metal_shim {

using pocket::metal::harness::Current;

void ThreadgroupBarrier() {
  const auto& t = Current("threadgroup_barrier");
  t.group_barrier->Arrive(t.kernel, "threadgroup_barrier");
}

void SimdgroupBarrier() {
  const auto& t = Current("simdgroup_barrier");
  t.simd->barrier.Arrive(t.kernel, "simdgroup_barrier");
}

float SimdSum(float x) {
  return pocket::metal::harness::SimdReduce(x, "simd_sum", [](float a, float b) { return a + b; });
}

float SimdMax(float x) {
  return pocket::metal::harness::SimdReduce(x, "simd_max",
                                            [](float a, float b) { return b > a ? b : a; });
}

unsigned SimdLane() { return Current("a SIMD-group matrix store").lane; }

float SimdBroadcastFirst(float x) {
  return pocket::metal::harness::SimdReduce(x, "simd_broadcast_first",
                                            [](float a, float) { return a; });
}

}  // namespace metal_shim
