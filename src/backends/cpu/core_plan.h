// Which CPU cores the compute threads use by default, and the order in
// which pinned workers take them.
//
// Phones mix core types: a Pixel 6 has two Cortex-X1, two A76 and four A55,
// a Snapdragon 8 Gen 2 one X3, four A715/A710 and three A510. The kernels
// give each thread an equal share of a Linear's rows, so a thread on a
// little core (a third of a big core's speed or less) finishes its share
// last and every step waits for it, while its stream takes memory bandwidth
// the big cores would use. Laptops and desktops have SMT: a core's second
// hardware thread shares the load ports and caches that the first already
// keeps busy. So by default a pool runs one thread per physical core of the
// fast group, and pinned workers take those cores fastest first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace pocket::cpu {

// One logical CPU as the OS describes it.
struct CpuCore {
  int cpu = 0;  // the number affinity masks use
  // Relative speed: the scheduler's cpu_capacity (1024 for the fastest core
  // type, smaller in proportion for slower ones), else the maximum clock in
  // kHz; 0 where neither is known.
  int64_t speed = 0;
  // The lowest-numbered CPU of the physical core (SMT siblings share it);
  // the CPU itself where unknown.
  int physical = 0;
};

// Reads what Linux (and Android) publish under sysfs_root (normally
// /sys/devices/system/cpu) about each CPU of `cpus`: cpuN/cpu_capacity,
// cpuN/cpufreq/cpuinfo_max_freq and cpuN/topology/thread_siblings_list.
// Missing or malformed files leave the defaults above; nothing fails.
std::vector<CpuCore> ReadCpuCores(const std::string& sysfs_root, const std::vector<int>& cpus);

struct CorePlan {
  // Every CPU given to PlanCores, in the order workers are pinned to them:
  // the fast group's physical cores, then the slow group's, then the
  // remaining SMT siblings; fastest first within each, then by number.
  std::vector<int> order;
  // Threads a pool runs by default: the fast group's physical cores.
  size_t default_threads = 1;
};

// The fast group is every core above the largest step down in speed
// between adjacent core types, where that step leaves the slower type under
// kSlowGroupRatio of the faster one's speed. A Pixel 6 steps from X1 to A76
// (0.49) and from A76 to A55 (0.32): its fast group is the two X1 and the
// two A76. Where any CPU's speed is unknown, or no step is that large
// (identical cores; favoured cores a turbo bin above the rest), every core
// is in the fast group. The ratio is set for clocks, the fallback of
// kernels without capacities, which understate the gap: a Snapdragon 845's
// A55 run at 0.63 of its A75's clock and about a third of their speed.
constexpr double kSlowGroupRatio = 0.7;
CorePlan PlanCores(const std::vector<CpuCore>& cores);

// The plan for this process now: on Linux and Android, the CPUs its
// affinity mask allows (a background app's cpuset may hold only little
// cores) as sysfs describes them; on Apple platforms, the performance
// cores' count (hw.perflevel0.physicalcpu), which the OS schedules on;
// elsewhere every hardware thread.
CorePlan ThisProcessCorePlan();

}  // namespace pocket::cpu
