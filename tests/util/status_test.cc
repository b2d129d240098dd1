#include "util/status.h"

#include <gtest/gtest.h>

#include <memory>

namespace pocket {
namespace {

TEST(Status, OkAndErrors) {
  EXPECT_TRUE(Status::Ok().ok());
  EXPECT_EQ(Status::Ok().ToString(), "OK");
  Status s = Errorf(StatusCode::kCorruptFile, "tensor '%s' at byte %d", "w", 42);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kCorruptFile);
  EXPECT_EQ(s.message(), "tensor 'w' at byte 42");
  EXPECT_EQ(s.ToString(), "CorruptFile: tensor 'w' at byte 42");
  EXPECT_STREQ(StatusCodeName(StatusCode::kBudgetExceeded), "BudgetExceeded");
  EXPECT_EQ(StringPrintf("%05.1f|%s", 2.25, "x"), "002.2|x");
}

StatusOr<int> Half(int x) {
  if (x % 2) return Errorf(StatusCode::kInvalidArgument, "%d is odd", x);
  return x / 2;
}

StatusOr<int> Quarter(int x) {
  POCKET_ASSIGN_OR_RETURN(int h, Half(x));
  POCKET_ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}

Status CheckQuarter(int x) {
  POCKET_RETURN_IF_ERROR(Quarter(x).status());
  return Status::Ok();
}

TEST(Status, StatusOrPropagates) {
  StatusOr<int> q = Quarter(12);
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(*q, 3);
  StatusOr<int> bad = Quarter(6);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "3 is odd");
  EXPECT_EQ(CheckQuarter(10).message(), "5 is odd");
  EXPECT_TRUE(CheckQuarter(8).ok());
  StatusOr<std::unique_ptr<int>> p = std::make_unique<int>(4);
  ASSERT_TRUE(p.ok());
  std::unique_ptr<int> moved = std::move(p).value();
  EXPECT_EQ(*moved, 4);
}

}  // namespace
}  // namespace pocket
