// Scratch directories for tests that write files (converter outputs, fake
// sysfs trees), under the build tree.
#pragma once

#include <stdlib.h>
#include <sys/stat.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace pocket::testing {

// A fresh directory named after `tag` (mkdtemp's unique suffix appended).
inline std::string MakeTempDir(const std::string& tag) {
  const std::string root = std::string(POCKET_BINARY_DIR) + "/test_tmp";
  ::mkdir(root.c_str(), 0755);
  std::string templ = root + "/" + tag + std::string(6, 'X');  // mkdtemp's pattern
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  EXPECT_NE(::mkdtemp(buf.data()), nullptr);
  return std::string(buf.data());
}

}  // namespace pocket::testing
