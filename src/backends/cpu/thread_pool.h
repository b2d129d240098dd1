// A small persistent thread pool for the CPU kernels: n-1 worker threads plus
// the calling thread, which always takes part. ParallelFor gives thread t the
// contiguous range [t*n/T, (t+1)*n/T) of the tasks, so a kernel that splits
// rows into one task per thread gets contiguous row blocks and a predictable
// cache footprint; a thread that runs out of work then takes the unclaimed
// tasks of the other ranges, in order. So a worker that the OS has not
// scheduled yet (a busy phone, little cores, other processes) delays the call
// by nothing: the caller runs its tasks instead of waiting for it, and the
// call waits only for tasks already started. The caller claims its first
// task before it posts the job and starts on it at once, while the post
// reaches the workers. Workers spin briefly after each
// job (decode issues hundreds of short jobs per token, so waking from a
// futex every time would dominate) and then sleep on a condition variable.
// Claims and completions carry the job's tag, so nothing is reset between
// jobs and a worker that wakes late for a finished job finds nothing to run.
#pragma once

#include <pthread.h>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "util/cache_line_vector.h"  // kCacheLineBytes

namespace pocket::cpu {

// The most threads a pool runs, far above the cores of any phone or laptop;
// the options that set the count (ModelOptions::threads, -t) refuse more.
constexpr size_t kMaxThreads = 1024;

struct ThreadPoolOptions {
  // Total threads including the caller; 0 = ThisProcessCorePlan()'s
  // default, one per physical core of the fast group (core_plan.h). At most
  // kMaxThreads. Where the system refuses a thread (a process or container
  // thread limit), the pool runs on the threads it got and says so through
  // the log callback (util/log.h); NumThreads() tells how many.
  size_t num_threads = 0;
  // Pin worker i to the plan's i-th CPU (order[i % size]; Linux and
  // Android only). The caller, thread 0, is left where the OS puts it, so
  // the fastest core stays free for it.
  bool pin_threads = false;
};

class ThreadPool {
 public:
  explicit ThreadPool(const ThreadPoolOptions& options = ThreadPoolOptions());
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  size_t NumThreads() const { return num_threads_; }

  // Calls fn(task, thread) for every task in [0, num_tasks) exactly once and
  // returns when all calls have returned. `thread` is in [0, NumThreads()),
  // 0 being the caller, and identifies a thread uniquely during the call (use
  // it to index per-thread scratch). A ParallelFor issued from inside a task,
  // or while another thread's ParallelFor is running, runs on the calling
  // thread alone rather than deadlocking or oversubscribing.
  template <typename Fn>
  void ParallelFor(size_t num_tasks, const Fn& fn) {
    Run(num_tasks, &Trampoline<Fn>, &fn);
  }

  // Calls fn(begin, end, thread) on pieces of [0, units), each at most
  // `piece` units, that together cover it exactly once, and returns when all
  // calls have returned. Thread t starts on the share [t units / T,
  // (t + 1) units / T) and walks it in order, so each thread reads one
  // sequential stream (decode's weight rows). A thread whose share runs out
  // takes the back half of what the thread with the most left has not
  // claimed yet, so the threads end within about a piece of each other;
  // ParallelFor's tasks end up to a task apart (on 2 threads, decode's
  // gate/up Linear ended 6 us apart in 88).
  template <typename Fn>
  void ParallelRanges(size_t units, size_t piece, const Fn& fn) {
    RunRanges(units, piece, &RangeTrampoline<Fn>, &fn);
  }

 private:
  using TaskFn = void (*)(const void* ctx, size_t task, size_t thread);
  template <typename Fn>
  static void Trampoline(const void* ctx, size_t task, size_t thread) {
    (*static_cast<const Fn*>(ctx))(task, thread);
  }
  using RangeFn = void (*)(const void* ctx, size_t begin, size_t end, size_t thread);
  template <typename Fn>
  static void RangeTrampoline(const void* ctx, size_t begin, size_t end, size_t thread) {
    (*static_cast<const Fn*>(ctx))(begin, end, thread);
  }

  void Run(size_t num_tasks, TaskFn fn, const void* ctx);
  void RunRanges(size_t units, size_t piece, RangeFn fn, const void* ctx);
  // Runs the job tagged `tag` (num_tasks tasks from task base): posts it,
  // takes the caller's share and waits until every task has finished.
  void RunJob(uint64_t tag, size_t base, size_t num_tasks);
  // The first task of thread t's range of a job of num_tasks tasks (t =
  // NumThreads(): the end of the last range).
  size_t RangeBegin(size_t num_tasks, size_t t) const { return num_tasks * t / num_threads_; }
  // Runs task `task` of job `tag` on `thread` and counts it in the thread's
  // completion word, which then holds ++*finished.
  void RunTask(size_t thread, uint64_t tag, size_t task, size_t* finished);
  // Claims and runs unclaimed tasks of job `tag`, the thread's own range
  // first, counting them in the thread's completion word after the
  // `finished` it has already run.
  void RunShare(size_t thread, uint64_t tag, size_t num_tasks, size_t finished);
  void WorkerLoop(size_t thread);
  // What worker `thread` starts from: pthread_create passes one pointer.
  struct WorkerStart {
    ThreadPool* pool;
    size_t thread;
  };
  static void* WorkerMain(void* start);

  // What one thread writes: claims on its range of the current job (others
  // write here only to take what it left) and how many tasks it finished.
  // Each word has a cache line of its own, so a handoff between two cores
  // moves only the lines that the job needs (cross-core transfers, not the
  // work, are the cost of a decode step's short jobs), and a worker's claim
  // does not wait for the line the caller polls for its completions.
  struct Slot {
    // Pack(tag, next unclaimed task of the range)
    alignas(kCacheLineBytes) std::atomic<uint64_t> claim{0};
    // Pack(tag, tasks this thread finished)
    alignas(kCacheLineBytes) std::atomic<uint64_t> done{0};
  };

  size_t num_threads_;
  // Created with pthread_create, which reports a refused thread, where
  // std::thread would throw (and, built without exceptions, abort).
  std::vector<pthread_t> workers_;
  std::vector<WorkerStart> starts_;  // one per thread; [0] unused
  std::vector<Slot> slots_;  // one per thread

  // The current job, written by the caller only. Idle workers poll `word`
  // and `stop` and nothing else, alone on their line, so posting a job
  // takes that line from them once (with fn, ctx and base on it, stored one
  // after another while the workers read it, a 2-thread job of 8 x 2 us took
  // 9.25 us instead of 8.93). fn, ctx and base are read after a task is
  // claimed, when the job is known not to have ended.
  struct Job {
    alignas(kCacheLineBytes) std::atomic<uint64_t> word{0};  // Pack(tag, number of tasks)
    std::atomic<bool> stop{false};
    alignas(kCacheLineBytes) TaskFn fn = nullptr;
    const void* ctx = nullptr;
    size_t base = 0;  // task index of claim 0 (jobs over kMaxTasks are split)
  };
  Job job_;
  uint64_t last_tag_ = 0;  // the caller's, under run_mutex_

  std::atomic<size_t> sleepers_{0};
  std::mutex run_mutex_;  // one job at a time
  std::mutex sleep_mutex_;
  std::condition_variable wake_;
};

}  // namespace pocket::cpu
