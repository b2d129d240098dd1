// A small persistent thread pool for the CPU kernels: n-1 worker threads plus
// the calling thread, which always takes part. ParallelFor splits its tasks
// statically into contiguous ranges (thread t runs tasks [t*n/T, (t+1)*n/T)),
// so a kernel that splits rows into one task per thread gets contiguous row
// blocks and a predictable cache footprint. Workers spin briefly after each
// job (decode issues hundreds of short jobs per token, so waking from a
// futex every time would dominate) and then sleep on a condition variable.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace pocket::cpu {

struct ThreadPoolOptions {
  size_t num_threads = 0;    // total threads including the caller; 0 = all cores
  bool pin_threads = false;  // pin worker i to core i (Linux only)
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

 private:
  using TaskFn = void (*)(const void* ctx, size_t task, size_t thread);
  template <typename Fn>
  static void Trampoline(const void* ctx, size_t task, size_t thread) {
    (*static_cast<const Fn*>(ctx))(task, thread);
  }

  void Run(size_t num_tasks, TaskFn fn, const void* ctx);
  void RunShare(size_t thread);
  void WorkerLoop(size_t thread);

  size_t num_threads_;
  std::vector<std::thread> workers_;

  // The current job; written by the caller before bumping generation_.
  TaskFn job_fn_ = nullptr;
  const void* job_ctx_ = nullptr;
  size_t job_tasks_ = 0;

  std::atomic<uint64_t> generation_{0};
  std::atomic<size_t> pending_{0};  // workers that have not finished the job
  std::atomic<size_t> sleepers_{0};
  std::atomic<bool> stop_{false};
  std::mutex run_mutex_;  // one job at a time
  std::mutex sleep_mutex_;
  std::condition_variable wake_;
};

}  // namespace pocket::cpu
