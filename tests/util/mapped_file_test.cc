#include "util/mapped_file.h"

#include <sys/stat.h>

#include <gtest/gtest.h>

#include <fstream>

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
  EXPECT_EQ(s.message(), "'" + path + "' is a directory, not a file");
}

TEST(MappedFile, EmptyFile) {
  const std::string path = Temp("empty");
  std::ofstream(path, std::ios::binary | std::ios::trunc);
  Status s = MappedFile::Open(path).status();
  EXPECT_EQ(s.code(), StatusCode::kCorruptFile);
  EXPECT_EQ(s.message(), "'" + path + "' is empty (0 bytes)");
}

}  // namespace
}  // namespace pocket
