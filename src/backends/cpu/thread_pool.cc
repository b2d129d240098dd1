#include "backends/cpu/thread_pool.h"

#include <chrono>

#if defined(__linux__)
#include <pthread.h>
#include <sched.h>
#endif

namespace pocket::cpu {
namespace {

// How long an idle thread polls before sleeping. Consecutive ops of one
// decode step are microseconds apart, so this keeps workers hot between
// them, while a session that stops generating costs no CPU after 100 us.
constexpr auto kSpinTime = std::chrono::microseconds(100);

// Set while a thread runs a task, so a nested ParallelFor on the same pool
// runs inline instead of waiting for workers that are busy running it.
thread_local const ThreadPool* t_pool = nullptr;
thread_local size_t t_thread = 0;

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
  asm volatile("yield");
#endif
}

// Polls `done` until it returns true or kSpinTime passes; true if done.
template <typename Pred>
bool SpinUntil(const Pred& done) {
  const auto deadline = std::chrono::steady_clock::now() + kSpinTime;
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (done()) return true;
      CpuRelax();
    }
    if (std::chrono::steady_clock::now() > deadline) return false;
  }
}

void PinToCore(std::thread& thread, size_t core) {
#if defined(__linux__)
  const size_t cores = std::thread::hardware_concurrency();
  if (cores == 0) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(core % cores, &set);
  // Failure (a restricted cpuset) only loses the pinning, never correctness.
  (void)pthread_setaffinity_np(thread.native_handle(), sizeof(set), &set);
#else
  (void)thread;
  (void)core;
#endif
}

}  // namespace

ThreadPool::ThreadPool(const ThreadPoolOptions& options) {
  size_t n = options.num_threads;
  if (n == 0) n = std::thread::hardware_concurrency();
  num_threads_ = n == 0 ? 1 : n;
  workers_.reserve(num_threads_ - 1);
  for (size_t t = 1; t < num_threads_; ++t) {
    workers_.emplace_back([this, t] { WorkerLoop(t); });
    if (options.pin_threads) PinToCore(workers_.back(), t);
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(sleep_mutex_);
    stop_.store(true);
  }
  wake_.notify_all();
  for (std::thread& w : workers_) w.join();
}

void ThreadPool::RunShare(size_t thread) {
  const size_t begin = job_tasks_ * thread / num_threads_;
  const size_t end = job_tasks_ * (thread + 1) / num_threads_;
  t_pool = this;
  t_thread = thread;
  for (size_t task = begin; task < end; ++task) job_fn_(job_ctx_, task, thread);
  t_pool = nullptr;
}

void ThreadPool::Run(size_t num_tasks, TaskFn fn, const void* ctx) {
  if (num_tasks == 0) return;
  if (t_pool == this) {  // nested: this thread already holds a share
    for (size_t task = 0; task < num_tasks; ++task) fn(ctx, task, t_thread);
    return;
  }
  std::lock_guard<std::mutex> run_lock(run_mutex_);
  job_fn_ = fn;
  job_ctx_ = ctx;
  job_tasks_ = num_tasks;
  if (num_threads_ == 1 || num_tasks == 1) {
    // One task (or one thread): run it here, with no wake-up or hand-off.
    t_pool = this;
    t_thread = 0;
    for (size_t task = 0; task < num_tasks; ++task) fn(ctx, task, 0);
    t_pool = nullptr;
    return;
  }
  pending_.store(num_threads_ - 1);
  generation_.fetch_add(1);
  if (sleepers_.load() > 0) {
    std::lock_guard<std::mutex> lock(sleep_mutex_);
    wake_.notify_all();
  }
  RunShare(0);
  const auto all_done = [this] { return pending_.load(std::memory_order_acquire) == 0; };
  while (!SpinUntil(all_done)) std::this_thread::yield();
}

void ThreadPool::WorkerLoop(size_t thread) {
  uint64_t seen = 0;
  for (;;) {
    const auto has_work = [&] { return generation_.load() != seen || stop_.load(); };
    if (!SpinUntil(has_work)) {
      std::unique_lock<std::mutex> lock(sleep_mutex_);
      sleepers_.fetch_add(1);
      wake_.wait(lock, has_work);
      sleepers_.fetch_sub(1);
    }
    if (stop_.load()) return;
    seen = generation_.load();
    RunShare(thread);
    pending_.fetch_sub(1, std::memory_order_release);
  }
}

}  // namespace pocket::cpu
