#include "backends/cpu/core_plan.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <set>
#include <thread>

#if defined(__linux__)
#include <sched.h>
#elif defined(__APPLE__)
#include <sys/sysctl.h>
#endif

namespace pocket::cpu {
namespace {

// The file's whole text without surrounding whitespace ("" if unreadable).
std::string ReadTrimmed(const std::string& path) {
  std::ifstream in(path);
  if (!in) return "";
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t begin = text.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos) return "";
  return text.substr(begin, text.find_last_not_of(" \t\r\n") + 1 - begin);
}

// The non-negative decimal integer spanning `text`, or -1.
int64_t ParseNumber(const std::string& text) {
  if (text.empty() || text.size() > 18 ||
      text.find_first_not_of("0123456789") != std::string::npos) {
    return -1;
  }
  return std::strtoll(text.c_str(), nullptr, 10);
}

// The smallest CPU of a sysfs CPU list ("0-3,8,10-11"), or -1 if malformed.
int FirstOfCpuList(const std::string& list) {
  constexpr int64_t kMaxCpu = 1 << 20;
  int64_t first = -1;
  size_t pos = 0;
  for (;;) {
    const size_t comma = std::min(list.find(',', pos), list.size());
    const std::string item = list.substr(pos, comma - pos);
    const size_t dash = item.find('-');
    const int64_t lo = ParseNumber(item.substr(0, dash));
    const int64_t hi = dash == std::string::npos ? lo : ParseNumber(item.substr(dash + 1));
    if (lo < 0 || hi < lo || hi > kMaxCpu) return -1;
    if (first < 0 || lo < first) first = lo;
    if (comma == list.size()) return static_cast<int>(first);
    pos = comma + 1;
  }
}

}  // namespace

std::vector<CpuCore> ReadCpuCores(const std::string& sysfs_root, const std::vector<int>& cpus) {
  std::vector<CpuCore> cores;
  cores.reserve(cpus.size());
  for (const int cpu : cpus) {
    const std::string dir = sysfs_root + "/cpu" + std::to_string(cpu);
    CpuCore core;
    core.cpu = cpu;
    core.speed = std::max<int64_t>(ParseNumber(ReadTrimmed(dir + "/cpu_capacity")), 0);
    if (core.speed == 0) {
      core.speed =
          std::max<int64_t>(ParseNumber(ReadTrimmed(dir + "/cpufreq/cpuinfo_max_freq")), 0);
    }
    const int first = FirstOfCpuList(ReadTrimmed(dir + "/topology/thread_siblings_list"));
    core.physical = first >= 0 ? first : cpu;
    cores.push_back(core);
  }
  return cores;
}

CorePlan PlanCores(const std::vector<CpuCore>& cores) {
  std::vector<CpuCore> sorted = cores;
  std::sort(sorted.begin(), sorted.end(), [](const CpuCore& a, const CpuCore& b) {
    return a.speed != b.speed ? a.speed > b.speed : a.cpu < b.cpu;
  });

  // The slowest speed of the fast group: the type above the largest step
  // down, if it is large enough; else every core's.
  int64_t fast_floor = 0;
  const bool all_known =
      std::all_of(sorted.begin(), sorted.end(), [](const CpuCore& c) { return c.speed > 0; });
  if (all_known) {
    double smallest_ratio = 1.0;
    for (size_t i = 1; i < sorted.size(); ++i) {
      if (sorted[i].speed == sorted[i - 1].speed) continue;
      const double ratio = static_cast<double>(sorted[i].speed) / sorted[i - 1].speed;
      if (ratio < smallest_ratio) {
        smallest_ratio = ratio;
        fast_floor = sorted[i - 1].speed;
      }
    }
    if (smallest_ratio >= kSlowGroupRatio) fast_floor = 0;
  }

  // One CPU per physical core, the fastest (then lowest-numbered) of those
  // the plan has; the others are SMT siblings.
  std::set<int> physical_seen;
  std::vector<int> fast, slow, siblings;
  for (const CpuCore& c : sorted) {
    if (!physical_seen.insert(c.physical).second) {
      siblings.push_back(c.cpu);
    } else if (c.speed >= fast_floor) {
      fast.push_back(c.cpu);
    } else {
      slow.push_back(c.cpu);
    }
  }
  CorePlan plan;
  plan.default_threads = std::max<size_t>(fast.size(), 1);
  plan.order = fast;
  plan.order.insert(plan.order.end(), slow.begin(), slow.end());
  plan.order.insert(plan.order.end(), siblings.begin(), siblings.end());
  return plan;
}

CorePlan ThisProcessCorePlan() {
  const int hardware_threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  std::vector<int> cpus;
#if defined(__linux__)
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof(allowed), &allowed) == 0) {
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (CPU_ISSET(cpu, &allowed)) cpus.push_back(cpu);
    }
  }
  if (!cpus.empty()) return PlanCores(ReadCpuCores("/sys/devices/system/cpu", cpus));
#endif
  for (int cpu = 0; cpu < hardware_threads; ++cpu) cpus.push_back(cpu);
  CorePlan plan;
  plan.order = cpus;
  plan.default_threads = cpus.size();
#if defined(__APPLE__)
  // Apple's OSes offer no pinning; the count is what they let an app ask
  // for. perflevel0 is the performance cores (macOS 12, iOS 15 and later).
  int count = 0;
  size_t size = sizeof(count);
  if (sysctlbyname("hw.perflevel0.physicalcpu", &count, &size, nullptr, 0) != 0 || count <= 0) {
    size = sizeof(count);
    if (sysctlbyname("hw.physicalcpu", &count, &size, nullptr, 0) != 0) count = 0;
  }
  if (count > 0 && count <= hardware_threads) plan.default_threads = static_cast<size_t>(count);
#endif
  return plan;
}

}  // namespace pocket::cpu
