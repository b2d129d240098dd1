// ThreadPool: every task runs exactly once, on a valid thread index, for any
// thread count and task count, repeatedly; nested calls run inline.
#include "backends/cpu/thread_pool.h"

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace pocket::cpu {
namespace {

TEST(ThreadPoolTest, EveryTaskRunsExactlyOnce) {
  for (size_t threads = 1; threads <= 4; ++threads) {
    ThreadPool pool(ThreadPoolOptions{threads, false});
    ASSERT_EQ(pool.NumThreads(), threads);
    for (int round = 0; round < 300; ++round) {
      const size_t tasks = static_cast<size_t>(round % 37);
      std::vector<std::atomic<int>> hits(tasks);
      std::atomic<bool> bad_thread{false};
      pool.ParallelFor(tasks, [&](size_t task, size_t thread) {
        hits[task].fetch_add(1);
        if (thread >= threads) bad_thread = true;
      });
      for (size_t t = 0; t < tasks; ++t) ASSERT_EQ(hits[t].load(), 1) << "task " << t;
      ASSERT_FALSE(bad_thread.load());
    }
  }
}

TEST(ThreadPoolTest, StaticContiguousPartition) {
  ThreadPool pool(ThreadPoolOptions{3, false});
  std::vector<size_t> owner(9);
  pool.ParallelFor(9, [&](size_t task, size_t thread) { owner[task] = thread; });
  EXPECT_EQ(owner, (std::vector<size_t>{0, 0, 0, 1, 1, 1, 2, 2, 2}));
}

TEST(ThreadPoolTest, ThreadIndexIsUniqueWithinACall) {
  ThreadPool pool(ThreadPoolOptions{4, false});
  std::vector<std::atomic<int>> active(4);
  std::atomic<bool> overlap{false};
  for (int round = 0; round < 100; ++round) {
    pool.ParallelFor(16, [&](size_t, size_t thread) {
      if (active[thread].fetch_add(1) != 0) overlap = true;
      active[thread].fetch_sub(1);
    });
  }
  EXPECT_FALSE(overlap.load());
}

TEST(ThreadPoolTest, NestedCallRunsInline) {
  ThreadPool pool(ThreadPoolOptions{3, false});
  std::atomic<int> total{0};
  pool.ParallelFor(3, [&](size_t, size_t outer_thread) {
    pool.ParallelFor(4, [&](size_t, size_t inner_thread) {
      EXPECT_EQ(inner_thread, outer_thread);
      total.fetch_add(1);
    });
  });
  EXPECT_EQ(total.load(), 12);
}

TEST(ThreadPoolTest, DefaultUsesAllCoresAndSurvivesIdleSleep) {
  ThreadPool pool(ThreadPoolOptions{0, true});
  EXPECT_GE(pool.NumThreads(), 1u);
  std::atomic<int> total{0};
  for (int round = 0; round < 3; ++round) {
    // Long enough between calls that workers go to sleep and must be woken.
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    pool.ParallelFor(8, [&](size_t, size_t) { total.fetch_add(1); });
  }
  EXPECT_EQ(total.load(), 24);
}

}  // namespace
}  // namespace pocket::cpu
