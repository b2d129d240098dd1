// A small persistent thread pool for the CPU kernels: n-1 worker threads plus
// the calling thread, which always takes part. ParallelFor gives thread t the
// contiguous range [t*n/T, (t+1)*n/T) of the tasks, so a kernel that splits
// rows into one task per thread gets contiguous row blocks and a predictable
// cache footprint; a thread that runs out of work then takes the unclaimed
// tasks of the other ranges, in order. So a worker that the OS has not
// scheduled yet (a busy phone, little cores, other processes) delays the call
// by nothing: the caller runs its tasks instead of waiting for it, and the
// call waits only for tasks already started. Workers spin briefly after each
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

  // The unclaimed part [next, end) of one thread's range of the current job.
  struct alignas(64) Range {
    std::atomic<size_t> next{0};
    size_t end = 0;
  };

  size_t num_threads_;
  std::vector<std::thread> workers_;

  // The current job; written by the caller before opening it (open_).
  TaskFn job_fn_ = nullptr;
  const void* job_ctx_ = nullptr;
  std::vector<Range> ranges_;  // one per thread

  std::atomic<uint64_t> generation_{0};  // bumped per job to wake workers
  std::atomic<bool> open_{false};        // workers may claim tasks
  std::atomic<size_t> done_{0};          // tasks finished in this job
  std::atomic<size_t> active_{0};        // workers inside the current job
  std::atomic<size_t> sleepers_{0};
  std::atomic<bool> stop_{false};
  std::mutex run_mutex_;  // one job at a time
  std::mutex sleep_mutex_;
  std::condition_variable wake_;
};

}  // namespace pocket::cpu
