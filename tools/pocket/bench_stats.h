// The median, min and max `pocket bench` reports for each measured figure.
#pragma once

#include <algorithm>
#include <vector>

#include "util/json_util.h"

namespace pocket::cli {

struct Stats {
  double median = 0, min = 0, max = 0;
};

inline Stats Summarize(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  Stats s;
  s.min = v.front();
  s.max = v.back();
  const size_t m = v.size() / 2;
  s.median = v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
  return s;
}

inline Json StatsJson(const Stats& s) {
  return Json{{"median", s.median}, {"min", s.min}, {"max", s.max}};
}

}  // namespace pocket::cli
