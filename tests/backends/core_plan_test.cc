// Core plans: which cores a pool uses by default and the order pinned
// workers take them, from sysfs trees laid out as real devices publish them
// (the core types and their counts are the devices'; the expected plans
// follow from them, not from the code).
#include "backends/cpu/core_plan.h"

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "testing/temp_dir.h"

#ifdef __linux__
#include <sched.h>
#endif

namespace pocket::cpu {
namespace {

// A fake /sys/devices/system/cpu: for each CPU, the files given (relative
// to cpuN/, e.g. "cpu_capacity"); CPUs with no entry get no directory.
class FakeSysfs {
 public:
  FakeSysfs() : root_(pocket::testing::MakeTempDir("core_plan")) {}
  ~FakeSysfs() { std::system(("rm -rf '" + root_ + "'").c_str()); }

  void Set(int cpu, const std::string& file, const std::string& text) {
    std::string dir = root_ + "/cpu" + std::to_string(cpu);
    ::mkdir(dir.c_str(), 0755);
    for (size_t slash = file.find('/'); slash != std::string::npos;
         slash = file.find('/', slash + 1)) {
      ::mkdir((dir + "/" + file.substr(0, slash)).c_str(), 0755);
    }
    std::ofstream(dir + "/" + file) << text;
  }
  // One CPU per physical core, with this capacity.
  void Capacities(const std::vector<int>& capacity) {
    for (int cpu = 0; cpu < static_cast<int>(capacity.size()); ++cpu) {
      Set(cpu, "cpu_capacity", std::to_string(capacity[cpu]) + "\n");
      Set(cpu, "topology/thread_siblings_list", std::to_string(cpu) + "\n");
    }
  }
  const std::string& root() const { return root_; }
  CorePlan Plan(const std::vector<int>& cpus) const { return PlanCores(ReadCpuCores(root_, cpus)); }

 private:
  std::string root_;
};

std::vector<int> Range(int n) {
  std::vector<int> cpus;
  for (int cpu = 0; cpu < n; ++cpu) cpus.push_back(cpu);
  return cpus;
}

// Pixel 6 (Tensor G1): cpu0-3 Cortex-A55, cpu4-5 A76, cpu6-7 X1. The
// kernel's capacities: dmips/MHz 250, 620, 1024 scaled by 1.8, 2.25 and
// 2.8 GHz.
TEST(CorePlanTest, PhoneWithThreeCoreTypesLeavesOutTheLittleCores) {
  FakeSysfs sys;
  sys.Capacities({160, 160, 160, 160, 498, 498, 1024, 1024});
  const CorePlan plan = sys.Plan(Range(8));
  EXPECT_EQ(plan.default_threads, 4u);
  EXPECT_EQ(plan.order, (std::vector<int>{6, 7, 4, 5, 0, 1, 2, 3}));
}

// Snapdragon 8 Gen 2: cpu0-2 Cortex-A510, cpu3-6 A715/A710, cpu7 X3.
TEST(CorePlanTest, PhoneWithOnePrimeCoreUsesThePrimeAndTheBigCores) {
  FakeSysfs sys;
  sys.Capacities({325, 325, 325, 871, 871, 871, 871, 1024});
  const CorePlan plan = sys.Plan(Range(8));
  EXPECT_EQ(plan.default_threads, 5u);
  EXPECT_EQ(plan.order, (std::vector<int>{7, 3, 4, 5, 6, 0, 1, 2}));
}

// Older kernels publish no cpu_capacity: the maximum clocks decide
// (Snapdragon 845: four A75 at 2.8 GHz, four A55 at 1.77).
TEST(CorePlanTest, ClocksDecideWhereCapacitiesAreMissing) {
  FakeSysfs sys;
  for (int cpu = 0; cpu < 8; ++cpu) {
    sys.Set(cpu, "cpufreq/cpuinfo_max_freq", cpu < 4 ? "1766400\n" : "2803200\n");
  }
  const CorePlan plan = sys.Plan(Range(8));
  EXPECT_EQ(plan.default_threads, 4u);
  EXPECT_EQ(plan.order, (std::vector<int>{4, 5, 6, 7, 0, 1, 2, 3}));
}

// A laptop with 4 cores of 2 hardware threads, numbered as Linux numbers
// them on x86: cpu N and N + 4 share a core.
TEST(CorePlanTest, SmtSiblingsComeLastAndAreNotCounted) {
  FakeSysfs sys;
  for (int cpu = 0; cpu < 8; ++cpu) {
    sys.Set(cpu, "cpufreq/cpuinfo_max_freq", "4200000\n");
    sys.Set(cpu, "topology/thread_siblings_list",
            std::to_string(cpu % 4) + "," + std::to_string(cpu % 4 + 4) + "\n");
  }
  const CorePlan plan = sys.Plan(Range(8));
  EXPECT_EQ(plan.default_threads, 4u);
  EXPECT_EQ(plan.order, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
}

// Range syntax, as some kernels write it ("0-1" for two siblings).
TEST(CorePlanTest, SiblingListsInRangeSyntax) {
  FakeSysfs sys;
  for (int cpu = 0; cpu < 4; ++cpu) {
    sys.Set(cpu, "topology/thread_siblings_list", cpu < 2 ? "0-1\n" : "2-3\n");
  }
  const CorePlan plan = sys.Plan(Range(4));
  EXPECT_EQ(plan.default_threads, 2u);
  EXPECT_EQ(plan.order, (std::vector<int>{0, 2, 1, 3}));
}

// Favoured cores one turbo bin above the rest are one group, fastest first.
TEST(CorePlanTest, NearlyEqualClocksAreOneGroup) {
  FakeSysfs sys;
  for (int cpu = 0; cpu < 8; ++cpu) {
    sys.Set(cpu, "cpufreq/cpuinfo_max_freq", cpu == 2 || cpu == 5 ? "5000000\n" : "4800000\n");
  }
  const CorePlan plan = sys.Plan(Range(8));
  EXPECT_EQ(plan.default_threads, 8u);
  EXPECT_EQ(plan.order, (std::vector<int>{2, 5, 0, 1, 3, 4, 6, 7}));
}

// A virtual machine that publishes nothing: every CPU, in order.
TEST(CorePlanTest, NothingPublishedMeansEveryCpu) {
  FakeSysfs sys;
  const CorePlan plan = sys.Plan(Range(3));
  EXPECT_EQ(plan.default_threads, 3u);
  EXPECT_EQ(plan.order, (std::vector<int>{0, 1, 2}));
}

// Speeds known for some CPUs only cannot be compared: one group.
TEST(CorePlanTest, OneUnknownSpeedMakesOneGroup) {
  FakeSysfs sys;
  sys.Capacities({160, 160, 1024, 1024});
  sys.Set(3, "cpu_capacity", "");
  const CorePlan plan = sys.Plan(Range(4));
  EXPECT_EQ(plan.default_threads, 4u);
  EXPECT_EQ(plan.order, (std::vector<int>{2, 0, 1, 3}));
}

// Malformed files (a truncated write, a kernel's odd format) are unknowns.
TEST(CorePlanTest, MalformedFilesAreUnknowns) {
  FakeSysfs sys;
  const std::vector<std::string> bad = {"abc",   "-5",  "1e3", "99999999999999999999",
                                        "12 34", "0x10"};
  for (int cpu = 0; cpu < static_cast<int>(bad.size()); ++cpu) {
    sys.Set(cpu, "cpu_capacity", bad[cpu]);
    sys.Set(cpu, "topology/thread_siblings_list", bad[cpu] + ",-");
  }
  const std::vector<CpuCore> cores = ReadCpuCores("/nonexistent", Range(2));
  ASSERT_EQ(cores.size(), 2u);
  EXPECT_EQ(cores[1].speed, 0);
  EXPECT_EQ(cores[1].physical, 1);
  const CorePlan plan = sys.Plan(Range(6));
  EXPECT_EQ(plan.default_threads, 6u);
  EXPECT_EQ(plan.order, Range(6));
  for (const char* list : {"1-0", "3-", "-2", "1,,2", "0,x", " "}) {
    FakeSysfs one;
    one.Set(1, "topology/thread_siblings_list", list);
    EXPECT_EQ(ReadCpuCores(one.root(), {1})[0].physical, 1) << list;
  }
}

// The process's affinity decides: an Android app in the background cpuset
// may run on the little cores only, and then they are its fast group.
TEST(CorePlanTest, OnlyTheAllowedCpusArePlanned) {
  FakeSysfs sys;
  sys.Capacities({160, 160, 160, 160, 498, 498, 1024, 1024});
  CorePlan plan = sys.Plan({0, 1, 2, 3});
  EXPECT_EQ(plan.default_threads, 4u);
  EXPECT_EQ(plan.order, (std::vector<int>{0, 1, 2, 3}));
  plan = sys.Plan({1, 2, 7});
  EXPECT_EQ(plan.default_threads, 1u);
  EXPECT_EQ(plan.order, (std::vector<int>{7, 1, 2}));
}

TEST(CorePlanTest, EmptyPlanStillRunsOneThread) {
  const CorePlan plan = PlanCores({});
  EXPECT_EQ(plan.default_threads, 1u);
  EXPECT_TRUE(plan.order.empty());
}

#ifdef __linux__
// This process's plan covers exactly the CPUs its affinity mask allows.
TEST(CorePlanTest, ThisProcessPlansItsAllowedCpus) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  ASSERT_EQ(sched_getaffinity(0, sizeof(allowed), &allowed), 0);
  const CorePlan plan = ThisProcessCorePlan();
  ASSERT_EQ(plan.order.size(), static_cast<size_t>(CPU_COUNT(&allowed)));
  for (const int cpu : plan.order) EXPECT_TRUE(CPU_ISSET(cpu, &allowed)) << cpu;
  EXPECT_GE(plan.default_threads, 1u);
  EXPECT_LE(plan.default_threads, plan.order.size());
}
#endif

}  // namespace
}  // namespace pocket::cpu
