#include "backends/cpu/thread_pool.h"

#include "backends/cpu/core_plan.h"

#include <pthread.h>
#if defined(__linux__)
#include <sched.h>
#endif

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>

#include "util/log.h"

namespace pocket::cpu {
namespace {

// How long an idle thread polls before sleeping. Consecutive ops of one
// decode step are microseconds apart, so this keeps workers hot between
// them, while a session that stops generating costs no CPU after 100 us.
constexpr auto kSpinTime = std::chrono::microseconds(100);

// Claim and completion words pack a job's tag with a task count. Tags
// count jobs from 1 and never wrap in practice (2^44 jobs: 5 years at
// 100,000 jobs a second); a job of more tasks than a count holds runs as
// several.
constexpr int kCountBits = 20;
constexpr size_t kMaxTasks = (size_t{1} << kCountBits) - 1;
inline uint64_t Pack(uint64_t tag, size_t count) { return tag << kCountBits | count; }
inline uint64_t TagOf(uint64_t word) { return word >> kCountBits; }
inline size_t CountOf(uint64_t word) { return static_cast<size_t>(word & kMaxTasks); }

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

void PinToCpu(pthread_t thread, int cpu) {
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  // Failure (the cpuset changed since the plan) only loses the pinning,
  // never correctness.
  (void)pthread_setaffinity_np(thread, sizeof(set), &set);
#else
  (void)thread;
  (void)cpu;
#endif
}

// ParallelRanges' state for one call, on the caller's stack, so concurrent
// and nested calls each have their own. Shares are the initial contiguous
// ranges, one per task, claimed by whichever thread gets there first (a
// worker the OS runs late leaves its whole share to the others). Each
// thread's slot holds what it has left, [pos, end), in one word: the owner
// claims a piece from the front and another thread takes the back half,
// each with a compare-and-swap on that word, so every unit goes to exactly
// one thread and nobody waits for the owner to answer (a handshake that
// needed the owner to look between pieces decoded 10% slower on 2 threads
// when another process shared a core: the thief waited out the owner's
// time off the CPU).
class RangeJob {
 public:
  using Fn = void (*)(const void* ctx, size_t begin, size_t end, size_t thread);

  struct alignas(kCacheLineBytes) Claim {
    std::atomic<uint32_t> taken{0};
  };
  struct alignas(kCacheLineBytes) Slot {
    std::atomic<uint64_t> range{0};  // Pack(pos, end)
  };

  RangeJob(size_t units, size_t piece, size_t shares, Claim* claims, Slot* slots, size_t threads,
           Fn fn, const void* ctx)
      : units_(static_cast<uint32_t>(units)),
        piece_(static_cast<uint32_t>(piece)),
        shares_(shares),
        claims_(claims),
        slots_(slots),
        threads_(threads),
        fn_(fn),
        ctx_(ctx) {}

  // Task `share` of the pool's job, on `thread`.
  void Run(size_t share, size_t thread) {
    if (TakeShare(share, thread)) RunSlot(thread);
    while (Refill(thread)) RunSlot(thread);
  }

 private:
  static uint64_t Pack(uint32_t pos, uint32_t end) { return uint64_t{pos} << 32 | end; }
  static uint32_t Pos(uint64_t range) { return static_cast<uint32_t>(range >> 32); }
  static uint32_t End(uint64_t range) { return static_cast<uint32_t>(range); }
  static uint32_t Left(uint64_t range) {
    return End(range) > Pos(range) ? End(range) - Pos(range) : 0;
  }

  // Moves share k into the thread's slot if no thread has taken it yet.
  bool TakeShare(size_t k, size_t thread) {
    if (claims_[k].taken.load(std::memory_order_relaxed) != 0 ||
        claims_[k].taken.exchange(1, std::memory_order_acq_rel) != 0) {
      return false;
    }
    const uint32_t begin = static_cast<uint32_t>(uint64_t{units_} * k / shares_);
    const uint32_t end = static_cast<uint32_t>(uint64_t{units_} * (k + 1) / shares_);
    slots_[thread].range.store(Pack(begin, end), std::memory_order_release);
    return true;
  }

  // Runs the slot's range a piece at a time, while other threads may take
  // its back end.
  void RunSlot(size_t thread) {
    std::atomic<uint64_t>& range = slots_[thread].range;
    uint64_t now = range.load(std::memory_order_relaxed);
    while (Left(now) > 0) {
      const uint32_t pos = Pos(now), end = End(now);
      const uint32_t next = end - pos > piece_ ? pos + piece_ : end;
      const uint64_t rest = Pack(next, end);
      if (!range.compare_exchange_weak(now, rest, std::memory_order_acq_rel,
                                       std::memory_order_relaxed)) {
        continue;  // a thread took the back end: `now` holds what is left
      }
      fn_(ctx_, pos, next, thread);
      now = rest;  // the next claim fails over to the current word if it moved
    }
  }

  // Finds the thread more work: a share nobody has taken, else the back half
  // of the slot with the most left (more than a piece: less is not worth
  // taking). False when there is none.
  bool Refill(size_t thread) {
    for (;;) {
      for (size_t k = 0; k < shares_; ++k) {
        if (TakeShare(k, thread)) return true;
      }
      size_t victim = threads_;
      uint64_t seen = 0;
      for (size_t t = 0; t < threads_; ++t) {
        if (t == thread) continue;
        const uint64_t range = slots_[t].range.load(std::memory_order_relaxed);
        if (Left(range) > std::max(piece_, Left(seen))) victim = t, seen = range;
      }
      if (victim == threads_) return false;
      const uint32_t mid = End(seen) - Left(seen) / 2;
      if (slots_[victim].range.compare_exchange_strong(seen, Pack(Pos(seen), mid),
                                                       std::memory_order_acq_rel)) {
        // Nobody takes from an empty slot, so this store races with nothing.
        slots_[thread].range.store(Pack(mid, End(seen)), std::memory_order_release);
        return true;
      }
      CpuRelax();  // the owner claimed a piece or another thread took part; look again
    }
  }

  const uint32_t units_, piece_;
  const size_t shares_;
  Claim* const claims_;
  Slot* const slots_;
  const size_t threads_;
  const Fn fn_;
  const void* const ctx_;
};

// Calls with up to this many threads keep their RangeJob state on the stack.
constexpr size_t kStackRangeThreads = 16;

}  // namespace

ThreadPool::ThreadPool(const ThreadPoolOptions& options) {
  CorePlan plan;
  if (options.num_threads == 0 || options.pin_threads) plan = ThisProcessCorePlan();
  const size_t wanted =
      std::min(options.num_threads != 0 ? options.num_threads : plan.default_threads, kMaxThreads);
  num_threads_ = wanted;
  slots_ = std::vector<Slot>(wanted);
  starts_ = std::vector<WorkerStart>(wanted);
  workers_.reserve(wanted - 1);
  for (size_t t = 1; t < wanted; ++t) {
    starts_[t] = WorkerStart{this, t};
    pthread_t thread;
    const int err = pthread_create(&thread, nullptr, &ThreadPool::WorkerMain, &starts_[t]);
    if (err != 0) {
      // Workers read the count only once a job is posted, after the
      // constructor returns, so those already started see the smaller one.
      num_threads_ = t;
      Log(LogLevel::kWarning,
          "computing on %zu threads instead of %zu: the system refused thread %zu (%s); a "
          "thread or memory limit of the process or container (ulimit -u, ulimit -v) may be "
          "reached",
          num_threads_, wanted, t + 1, std::strerror(err));
      break;
    }
    workers_.push_back(thread);
    if (options.pin_threads && !plan.order.empty()) {
      PinToCpu(thread, plan.order[t % plan.order.size()]);
    }
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(sleep_mutex_);
    job_.stop.store(true);
  }
  wake_.notify_all();
  for (pthread_t w : workers_) pthread_join(w, nullptr);
}

void* ThreadPool::WorkerMain(void* start) {
  const WorkerStart& s = *static_cast<const WorkerStart*>(start);
  s.pool->WorkerLoop(s.thread);
  return nullptr;
}

// Thread t's range of a job is [n t / T, n (t + 1) / T); its claim word
// holds the next unclaimed task once the job's first claim on it is made,
// and an older tag before that. A newer tag means the job has ended: the
// caller only posts a job once every task of the last one has finished,
// so a worker that wakes late stops there without running anything.
void ThreadPool::RunTask(size_t thread, uint64_t tag, size_t task, size_t* finished) {
  job_.fn(job_.ctx, job_.base + task, thread);
  slots_[thread].done.store(Pack(tag, ++*finished), std::memory_order_release);
}

void ThreadPool::RunShare(size_t thread, uint64_t tag, size_t num_tasks, size_t finished) {
  t_pool = this;
  t_thread = thread;
  // Runs range r's unclaimed tasks; false once the job has ended.
  const auto drain = [&](size_t r) {
    const size_t end = RangeBegin(num_tasks, r + 1);
    std::atomic<uint64_t>& claim = slots_[r].claim;
    uint64_t word = claim.load(std::memory_order_acquire);
    for (;;) {
      if (TagOf(word) > tag) return false;
      const size_t next = TagOf(word) == tag ? CountOf(word) : RangeBegin(num_tasks, r);
      if (next >= end) return true;
      const uint64_t claimed = Pack(tag, next + 1);
      if (!claim.compare_exchange_weak(word, claimed, std::memory_order_acq_rel,
                                       std::memory_order_acquire)) {
        continue;
      }
      // The claimed task keeps the job from ending, so fn, ctx and base
      // are still this job's.
      RunTask(thread, tag, next, &finished);
      word = claimed;
    }
  };
  for (size_t k = 0; k < num_threads_; ++k) {
    if (!drain((thread + k) % num_threads_)) break;
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
  job_.fn = fn;
  job_.ctx = ctx;
  for (size_t base = 0; base < num_tasks; base += kMaxTasks) {
    RunJob(++last_tag_, base, std::min(kMaxTasks, num_tasks - base));
  }
}

void ThreadPool::RunRanges(size_t units, size_t piece, RangeFn fn, const void* ctx) {
  if (units == 0) return;
  piece = std::clamp<size_t>(piece, 1, units);
  const size_t pieces = (units - 1) / piece + 1;
  if (units > UINT32_MAX) {  // beyond the slots' 32-bit positions
    const auto run_piece = [&](size_t p, size_t thread) {
      fn(ctx, p * piece, std::min(units, (p + 1) * piece), thread);
    };
    ParallelFor(pieces, run_piece);
    return;
  }
  const size_t shares = std::min(num_threads_, pieces);
  RangeJob::Claim stack_claims[kStackRangeThreads];
  RangeJob::Slot stack_slots[kStackRangeThreads];
  std::unique_ptr<RangeJob::Claim[]> heap_claims;
  std::unique_ptr<RangeJob::Slot[]> heap_slots;
  RangeJob::Claim* claims = stack_claims;
  RangeJob::Slot* slots = stack_slots;
  if (num_threads_ > kStackRangeThreads) {
    heap_claims.reset(new RangeJob::Claim[num_threads_]);
    heap_slots.reset(new RangeJob::Slot[num_threads_]);
    claims = heap_claims.get();
    slots = heap_slots.get();
  }
  RangeJob job(units, piece, shares, claims, slots, num_threads_, fn, ctx);
  ParallelFor(shares, [&job](size_t share, size_t thread) { job.Run(share, thread); });
}

void ThreadPool::RunJob(uint64_t tag, size_t base, size_t num_tasks) {
  job_.base = base;
  // The caller claims the first task of its range before posting, with a
  // plain store (no other thread can see the job yet), and runs it at once:
  // the post's stores then reach the workers while it works. Claimed with a
  // locked instruction after the post, the task started only once the
  // workers' copies of the job's lines had been taken back: 0.95 us after
  // the call on 2 threads, against 0.01 now.
  const bool first = RangeBegin(num_tasks, 1) > 0;  // range 0 is not empty
  if (first) slots_[0].claim.store(Pack(tag, 1), std::memory_order_relaxed);
  // Release: a worker that sees the tag sees fn, ctx, base and the claim.
  job_.word.store(Pack(tag, num_tasks), std::memory_order_release);
  const auto wake_sleepers = [&] {
    if (sleepers_.load(std::memory_order_relaxed) == 0) return;
    std::lock_guard<std::mutex> lock(sleep_mutex_);
    wake_.notify_all();
  };
  // Workers that have been asleep a while are woken before the first task
  // (the first job after a pause is often one long task per thread).
  wake_sleepers();
  size_t finished = 0;
  if (first) {
    t_pool = this;  // a nested ParallelFor in the task runs inline
    t_thread = 0;
    RunTask(0, tag, 0, &finished);
    t_pool = nullptr;
  }
  // With the worker's increment of sleepers_ before it checks for work
  // (both sequentially consistent): either this thread sees the sleeper and
  // wakes it, or the worker sees the job. After the first task the fence
  // finds the post's stores long done and costs nothing; a worker that fell
  // asleep just as the job was posted wakes one task later.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  wake_sleepers();
  RunShare(0, tag, num_tasks, finished);
  const auto all_done = [&] {
    size_t total = 0;
    for (size_t t = 0; t < num_threads_; ++t) {
      const uint64_t word = slots_[t].done.load(std::memory_order_acquire);
      if (TagOf(word) == tag) total += CountOf(word);
    }
    return total == num_tasks;
  };
  while (!SpinUntil(all_done)) std::this_thread::yield();
}

void ThreadPool::WorkerLoop(size_t thread) {
  uint64_t seen = 0;  // the tag of the last job this worker looked at
  uint64_t word = 0;
  const auto has_work = [&] {
    word = job_.word.load();
    return TagOf(word) != seen || job_.stop.load();
  };
  for (;;) {
    if (!SpinUntil(has_work)) {
      std::unique_lock<std::mutex> lock(sleep_mutex_);
      sleepers_.fetch_add(1);
      wake_.wait(lock, has_work);
      sleepers_.fetch_sub(1);
    }
    if (job_.stop.load()) return;
    seen = TagOf(word);
    RunShare(thread, seen, CountOf(word), 0);
  }
}

}  // namespace pocket::cpu
