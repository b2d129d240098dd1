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
  ranges_ = std::vector<Range>(num_threads_);
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

// Claims tasks from the thread's own range first, then from the others'.
void ThreadPool::RunShare(size_t thread) {
  t_pool = this;
  t_thread = thread;
  for (size_t k = 0; k < num_threads_; ++k) {
    Range& range = ranges_[(thread + k) % num_threads_];
    for (;;) {
      const size_t task = range.next.fetch_add(1, std::memory_order_relaxed);
      if (task >= range.end) break;
      job_fn_(job_ctx_, task, thread);
      done_.fetch_add(1, std::memory_order_release);
    }
  }
  t_pool = nullptr;
}

void ThreadPool::Run(size_t num_tasks, TaskFn fn, const void* ctx) {
  if (num_tasks == 0) return;
  if (t_pool == this) {  // nested: this thread already holds a share
    for (size_t task = 0; task < num_tasks; ++task) fn(ctx, task, t_thread);
    return;
  }
  // Busy with another thread's job (two sessions computing at once): run
  // this one on the calling thread rather than wait for the pool.
  std::unique_lock<std::mutex> run_lock(run_mutex_, std::try_to_lock);
  if (!run_lock.owns_lock() || num_threads_ == 1 || num_tasks == 1) {
    // One task (or one thread): run it here, with no wake-up or hand-off.
    t_pool = this;
    t_thread = 0;
    for (size_t task = 0; task < num_tasks; ++task) fn(ctx, task, 0);
    t_pool = nullptr;
    return;
  }
  job_fn_ = fn;
  job_ctx_ = ctx;
  for (size_t t = 0; t < num_threads_; ++t) {
    ranges_[t].next.store(num_tasks * t / num_threads_, std::memory_order_relaxed);
    ranges_[t].end = num_tasks * (t + 1) / num_threads_;
  }
  done_.store(0, std::memory_order_relaxed);
  open_.store(true);
  generation_.fetch_add(1);
  if (sleepers_.load() > 0) {
    std::lock_guard<std::mutex> lock(sleep_mutex_);
    wake_.notify_all();
  }
  RunShare(0);
  const auto all_done = [&] { return done_.load(std::memory_order_acquire) == num_tasks; };
  while (!SpinUntil(all_done)) std::this_thread::yield();
  // A worker that joins after this sees the job closed and touches nothing;
  // one that joined before is waited for (it can only be finding no tasks).
  open_.store(false);
  const auto none_active = [this] { return active_.load() == 0; };
  while (!SpinUntil(none_active)) std::this_thread::yield();
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
    // Sequentially consistent with the caller's open_.store(false) followed
    // by its read of active_: either the caller waits for this worker, or the
    // worker sees the job closed.
    active_.fetch_add(1);
    if (open_.load()) RunShare(thread);
    active_.fetch_sub(1);
  }
}

}  // namespace pocket::cpu
