// ThreadPool: every task (ParallelFor) and every unit (ParallelRanges) runs
// exactly once, on a valid thread index, for any thread count and size,
// repeatedly; ranges are claimed and walked in order; a slow thread's share
// is handed over in part; nested calls run inline.
#include "backends/cpu/thread_pool.h"

#include "backends/cpu/core_plan.h"

#ifdef __linux__
#include <pthread.h>
#include <sched.h>
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "testing/limited_child.h"
#include "util/log.h"

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

// Each thread claims tasks of any one range in ascending order (its own
// range first, then the unclaimed rest of the others), so the tasks one
// thread runs ascend within every range.
TEST(ThreadPoolTest, RangesAreClaimedInOrder) {
  const size_t threads = 3, tasks = 30;
  ThreadPool pool(ThreadPoolOptions{threads, false});
  for (int round = 0; round < 200; ++round) {
    std::vector<std::vector<size_t>> ran(threads);
    pool.ParallelFor(tasks, [&](size_t task, size_t thread) { ran[thread].push_back(task); });
    size_t total = 0;
    for (const std::vector<size_t>& seq : ran) {
      total += seq.size();
      for (size_t i = 1; i < seq.size(); ++i) {
        const size_t range = seq[i] * threads / tasks, prev_range = seq[i - 1] * threads / tasks;
        if (range == prev_range) ASSERT_LT(seq[i - 1], seq[i]);
      }
    }
    ASSERT_EQ(total, tasks);
  }
}

// Claim words count up to 2^20 - 1 tasks; a larger job runs as several, and
// every task still runs once.
TEST(ThreadPoolTest, JobsLargerThanAClaimWordRunEveryTaskOnce) {
  ThreadPool pool(ThreadPoolOptions{2, false});
  const size_t tasks = (size_t{1} << 20) + 37;
  std::vector<uint8_t> hits(tasks, 0);
  pool.ParallelFor(tasks, [&](size_t task, size_t) { ++hits[task]; });
  size_t wrong = 0;
  for (uint8_t h : hits) wrong += h != 1;
  EXPECT_EQ(wrong, 0u);
}

// Back-to-back jobs of one or two tasks: a worker still finishing its claim
// loop for job g must not run a task of job g + 1 under g's function.
TEST(ThreadPoolTest, ShortJobsInARowKeepTheirOwnFunction) {
  ThreadPool pool(ThreadPoolOptions{3, false});
  std::atomic<int> wrong{0};
  for (int round = 0; round < 20000; ++round) {
    const size_t tasks = 1 + round % 3;
    std::vector<int> seen(tasks, -1);
    pool.ParallelFor(tasks, [&](size_t task, size_t) {
      if (seen[task] != -1) wrong.fetch_add(1);
      seen[task] = round;
    });
    for (int r : seen) {
      if (r != round) wrong.fetch_add(1);
    }
  }
  EXPECT_EQ(wrong.load(), 0);
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

TEST(ThreadPoolTest, ConcurrentCallersEachRunEveryTaskOnce) {
  ThreadPool pool(ThreadPoolOptions{3, false});
  std::atomic<bool> wrong{false};
  const auto caller = [&] {
    for (int round = 0; round < 300; ++round) {
      std::vector<std::atomic<int>> hits(11);
      pool.ParallelFor(11, [&](size_t task, size_t thread) {
        hits[task].fetch_add(1);
        if (thread >= 3) wrong = true;
      });
      for (const std::atomic<int>& h : hits) {
        if (h.load() != 1) wrong = true;
      }
    }
  };
  std::thread other(caller);
  caller();
  other.join();
  EXPECT_FALSE(wrong.load());
}

TEST(ThreadPoolTest, DefaultUsesThePlannedCoresAndSurvivesIdleSleep) {
  ThreadPool pool(ThreadPoolOptions{0, true});
  EXPECT_EQ(pool.NumThreads(), ThisProcessCorePlan().default_threads);
  std::atomic<int> total{0};
  for (int round = 0; round < 3; ++round) {
    // Long enough between calls that workers go to sleep and must be woken.
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    pool.ParallelFor(8, [&](size_t, size_t) { total.fetch_add(1); });
  }
  EXPECT_EQ(total.load(), 24);
}

// Waits until done() holds, for at most 10 s: only a pool that never does
// what done() waits for gets there, however slow or loaded the machine (the
// assertion after the wait then fails instead of the test hanging).
template <typename Done>
void WaitAtMostTenSeconds(const Done& done) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!done() && std::chrono::steady_clock::now() < until) std::this_thread::yield();
}

// A job posted while the workers sleep wakes them: the caller, from its
// second task on (the pool looks for sleepers again after the caller's
// first), waits for a worker to run one. A missed wake-up leaves every task
// to the caller.
TEST(ThreadPoolTest, JobAfterIdleSleepWakesTheWorkers) {
  ThreadPool pool(ThreadPoolOptions{2, false});
  for (int round = 0; round < 3; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // past the spin time
    std::atomic<int> by_worker{0};
    int by_caller = 0;
    pool.ParallelFor(40, [&](size_t, size_t thread) {
      if (thread != 0) {
        by_worker.fetch_add(1);
      } else if (++by_caller == 2) {
        WaitAtMostTenSeconds([&] { return by_worker.load() > 0; });
      }
    });
    EXPECT_GT(by_worker.load(), 0) << "round " << round;
  }
}

// Runs pool.ParallelRanges(units, piece) with `work` called in every piece
// and checks each unit is run exactly once, in non-empty pieces of at most
// `piece` units on valid thread indices. Returns the units each thread ran.
template <typename Work>
std::vector<size_t> CheckRanges(ThreadPool& pool, size_t units, size_t piece, const Work& work) {
  std::vector<std::atomic<int>> hits(units);
  std::vector<std::atomic<size_t>> by_thread(pool.NumThreads());
  std::atomic<bool> bad_piece{false};
  pool.ParallelRanges(units, piece, [&](size_t begin, size_t end, size_t thread) {
    if (begin >= end || end - begin > piece || end > units || thread >= pool.NumThreads()) {
      bad_piece = true;
      return;
    }
    for (size_t u = begin; u < end; ++u) hits[u].fetch_add(1);
    by_thread[thread].fetch_add(end - begin);
    work(begin, end, thread);
  });
  EXPECT_FALSE(bad_piece.load()) << "units " << units << " piece " << piece;
  size_t wrong = 0;
  for (const std::atomic<int>& h : hits) wrong += h.load() != 1;
  EXPECT_EQ(wrong, 0u) << "units " << units << " piece " << piece;
  std::vector<size_t> ran;
  for (const std::atomic<size_t>& n : by_thread) ran.push_back(n.load());
  return ran;
}

// Every unit once for any thread count (20: more than the calls that keep
// their state on the stack), unit count and piece size, with pieces that
// take uneven time so that threads take parts of each other's shares.
TEST(ThreadPoolTest, RangesRunEveryUnitExactlyOnce) {
  for (size_t threads : {1, 2, 3, 4, 20}) {
    ThreadPool pool(ThreadPoolOptions{threads, false});
    std::mt19937 rng(static_cast<unsigned>(threads));
    for (int round = 0; round < 200; ++round) {
      const size_t units = rng() % 300, piece = 1 + rng() % 9;
      CheckRanges(pool, units, piece, [&](size_t begin, size_t, size_t thread) {
        // Thread 0, and some pieces, slow: the others run out first.
        const int spins = (thread == 0 ? 2000 : 0) + (begin % 7 == 0 ? 1000 : 0);
        for (volatile int i = 0; i < spins; i = i + 1) {
        }
      });
    }
  }
}

// A thread that stops in the middle of its share (descheduled, on a busy
// phone) holds up only the piece it has started: the caller, whose share
// runs out, takes the back half of what the worker has left, again and
// again, without waiting for it. The halving leaves a last unit to its
// owner, so the worker, stopped in its first one-unit piece until 62 of the
// 64 units are done, runs at most 2; without the hand-over it runs its whole
// share. (A worker that starts late finds its share taken whole.)
TEST(ThreadPoolTest, RangesHandOverTheShareOfAStoppedThread) {
  ThreadPool pool(ThreadPoolOptions{2, false});
  for (int round = 0; round < 3; ++round) {
    std::atomic<size_t> done{0};
    std::atomic<bool> stopped{false};
    const std::vector<size_t> ran = CheckRanges(pool, 64, 1, [&](size_t, size_t, size_t thread) {
      if (thread == 1 && !stopped.exchange(true)) {
        WaitAtMostTenSeconds([&] { return done.load() >= 62; });
      }
      done.fetch_add(1);
    });
    EXPECT_LE(ran[1], 2u) << "round " << round << " caller ran " << ran[0];
  }
}

// Each thread walks a share in order: the pieces a thread runs follow each
// other without gaps, except where it starts on another part (a share
// nobody had started, or the back half of another thread's). A pool that
// dealt pieces out one by one would jump at nearly every piece.
TEST(ThreadPoolTest, RangesWalkEachShareInOrder) {
  ThreadPool pool(ThreadPoolOptions{3, false});
  for (int round = 0; round < 100; ++round) {
    std::vector<std::vector<std::pair<size_t, size_t>>> pieces(3);
    CheckRanges(pool, 90, 4, [&](size_t begin, size_t end, size_t thread) {
      pieces[thread].emplace_back(begin, end);
    });
    for (const auto& seq : pieces) {
      size_t jumps = 0;
      for (size_t i = 1; i < seq.size(); ++i) jumps += seq[i].first != seq[i - 1].second;
      // Its own share, then at most a few parts of others' (each handover
      // halves what is left, 30 units a share, 4 a piece).
      EXPECT_LE(jumps, 8u);
    }
  }
}

TEST(ThreadPoolTest, NestedRangesRunInline) {
  ThreadPool pool(ThreadPoolOptions{3, false});
  std::atomic<int> total{0};
  pool.ParallelFor(3, [&](size_t, size_t outer_thread) {
    pool.ParallelRanges(50, 3, [&](size_t begin, size_t end, size_t inner_thread) {
      EXPECT_EQ(inner_thread, outer_thread);
      total.fetch_add(static_cast<int>(end - begin));
    });
  });
  EXPECT_EQ(total.load(), 150);
}

TEST(ThreadPoolTest, ConcurrentCallersEachRunEveryUnitOnce) {
  ThreadPool pool(ThreadPoolOptions{3, false});
  const auto caller = [&] {
    for (int round = 0; round < 200; ++round)
      CheckRanges(pool, 100, 3, [](size_t, size_t, size_t) {});
  };
  std::thread other(caller);
  caller();
  other.join();
}

// Positions past 32 bits, and pieces larger than the range: the pieces
// still cover it once.
TEST(ThreadPoolTest, RangesBeyond32BitsCoverEveryUnit) {
  ThreadPool pool(ThreadPoolOptions{2, false});
  CheckRanges(pool, 10, ~size_t{0}, [](size_t, size_t, size_t) {});
  CheckRanges(pool, 10, size_t{1} << 32, [](size_t, size_t, size_t) {});
  const size_t units = (size_t{1} << 32) + 5, piece = size_t{1} << 30;
  std::mutex mutex;
  std::vector<std::pair<size_t, size_t>> pieces;
  pool.ParallelRanges(units, piece, [&](size_t begin, size_t end, size_t) {
    std::lock_guard<std::mutex> lock(mutex);
    pieces.emplace_back(begin, end);
  });
  std::sort(pieces.begin(), pieces.end());
  size_t next = 0;
  for (const auto& p : pieces) {
    EXPECT_EQ(p.first, next);
    EXPECT_LE(p.second - p.first, piece);
    next = p.second;
  }
  EXPECT_EQ(next, units);
}

#ifdef __linux__
// pin_threads: worker 1 runs alone on the second CPU of the process's core
// plan, one the process may use.
TEST(ThreadPoolTest, PinnedWorkerRunsOnItsCore) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  ASSERT_EQ(sched_getaffinity(0, sizeof(allowed), &allowed), 0);
  const std::vector<int> order = ThisProcessCorePlan().order;
  ASSERT_FALSE(order.empty());
  const int cpu = order[1 % order.size()];
  ASSERT_TRUE(CPU_ISSET(cpu, &allowed));
  ThreadPool pool(ThreadPoolOptions{2, true});
  std::atomic<bool> seen{false};
  cpu_set_t worker;
  CPU_ZERO(&worker);
  // Tasks that take a while, so the worker claims some of them.
  for (int attempt = 0; attempt < 200 && !seen.load(); ++attempt) {
    pool.ParallelFor(8, [&](size_t, size_t thread) {
      if (thread == 1 && !seen.exchange(true)) {
        ASSERT_EQ(pthread_getaffinity_np(pthread_self(), sizeof(worker), &worker), 0);
      }
      std::this_thread::sleep_for(std::chrono::microseconds(500));
    });
  }
  ASSERT_TRUE(seen.load()) << "the worker never ran a task";
  EXPECT_EQ(CPU_COUNT(&worker), 1);
  EXPECT_TRUE(CPU_ISSET(cpu, &worker));
}
#endif

// Where the system refuses a thread (here a limit of 16 processes and
// threads for the user, as on a phone or in a container), the pool runs on
// the threads it got, says so through the log callback, and still runs
// every task; creating workers never aborts the process.
TEST(ThreadPoolTest, RefusedThreadsFallBackToTheThreadsCreated) {
  testing::ChildLimits limits;
  limits.nproc = 16;
  const testing::ChildResult r = testing::RunLimitedChild(limits, [](int out_fd) {
    std::string log;
    SetLogCallback([&log](LogLevel, const std::string& message) { log += message; });
    ThreadPool pool(ThreadPoolOptions{200, false});
    std::vector<std::atomic<int>> hits(1000);
    pool.ParallelFor(hits.size(), [&](size_t task, size_t) { hits[task].fetch_add(1); });
    const bool all_ran = std::all_of(hits.begin(), hits.end(), [](auto& h) { return h == 1; });
    const std::string report = std::to_string(pool.NumThreads()) + " threads; " + log;
    (void)!::write(out_fd, report.data(), report.size());
    return pool.NumThreads() >= 1 && pool.NumThreads() < 200 && all_ran ? 0 : 1;
  });
  if (r.exit_code == testing::kChildSetupFailed) {
    GTEST_SKIP() << "cannot lower RLIMIT_NPROC or drop to an unprivileged user here";
  }
  ASSERT_TRUE(r.exited) << "signal " << r.signal << ": " << r.output;
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("threads instead of 200: the system refused thread"), std::string::npos)
      << r.output;
}

}  // namespace
}  // namespace pocket::cpu
