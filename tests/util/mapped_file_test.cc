#include "util/mapped_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace pocket {
namespace {

std::string Temp(const std::string& name) {
  return std::string(POCKET_BINARY_DIR) + "/mapped_file_test_" + name;
}

TEST(MappedFile, MapsContents) {
  const std::string path = Temp("hello");
  std::ofstream(path, std::ios::binary) << "hello pocket";
  StatusOr<std::unique_ptr<MappedFile>> m = MappedFile::Open(path);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ((*m)->size(), 12u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>((*m)->data()), (*m)->size()), "hello pocket");
  EXPECT_EQ((*m)->path(), path);
}

TEST(MappedFile, MissingFile) {
  const std::string path = Temp("does_not_exist");
  Status s = MappedFile::Open(path).status();
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "cannot open '" + path + "': No such file or directory");
}

TEST(MappedFile, Directory) {
  const std::string path = Temp("dir");
  ::mkdir(path.c_str(), 0755);
  Status s = MappedFile::Open(path).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "'" + path + "' is a directory; give the path of a file");
}

TEST(MappedFile, EmptyFile) {
  const std::string path = Temp("empty");
  std::ofstream(path, std::ios::binary | std::ios::trunc);
  Status s = MappedFile::Open(path).status();
  EXPECT_EQ(s.code(), StatusCode::kCorruptFile);
  EXPECT_EQ(s.message(), "'" + path + "' is empty (0 bytes)");
}

#ifdef __linux__
// Resident KiB of the mapping that starts at `start`, from /proc/self/smaps.
long MappingRssKib(const void* start) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool in_mapping = false;
  while (std::getline(smaps, line)) {
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2 && line.find(' ') > line.find('-')) {
      in_mapping = lo == reinterpret_cast<unsigned long>(start);
    } else if (in_mapping && line.rfind("Rss:", 0) == 0) {
      return std::stol(line.substr(4));
    }
  }
  return -1;
}
#endif

TEST(MappedFile, ReleaseDropsWholePagesAndKeepsContents) {
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const std::string path = Temp("release");
  std::string bytes(5 * page, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 7 + i / page);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  StatusOr<std::unique_ptr<MappedFile>> m = MappedFile::Open(path);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const MappedFile& f = **m;
  long sum = 0;
  for (size_t i = 0; i < f.size(); i += page) sum += f.data()[i];  // fault every page in
  EXPECT_GE(sum, 0);
#ifdef __linux__
  EXPECT_EQ(MappingRssKib(f.data()), static_cast<long>(5 * page / 1024));
#endif
  // [100, 100 + 3 pages) wholly covers pages 1 and 2 only.
  EXPECT_EQ(f.Release(100, 3 * page), 2 * page);
#ifdef __linux__
  EXPECT_EQ(MappingRssKib(f.data()), static_cast<long>(3 * page / 1024));
#endif
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(f.data()), f.size()), bytes);
  EXPECT_EQ(f.Release(f.size(), page), 0u);          // starts past the end
  EXPECT_EQ(f.Release(page + 1, page - 2), 0u);      // inside one page
  EXPECT_EQ(f.Release(4 * page, 100 * page), page);  // clipped to the file
  std::remove(path.c_str());
}

}  // namespace
}  // namespace pocket
