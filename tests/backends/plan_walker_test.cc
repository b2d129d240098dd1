// The plan walker every backend shares, on a hand-built plan of one
// layer: which steps a run takes, their token rows and buffer rows, the
// Linear groups, which ops go through temp, and where the logits are.
#include "backends/plan_walker.h"

#include <vector>

#include <gtest/gtest.h>

namespace pocket {
namespace {

PlanStep Step(OpKind op, std::vector<int> in, int out, size_t width) {
  PlanStep s;
  s.op = op;
  for (size_t k = 0; k < in.size(); ++k) s.in[k] = in[k];
  s.out = out;
  s.width = width;
  s.in_width = width;
  return s;
}

// Slots: 0 x, 1 normed, 2 q, 3 k, 4 v, 5 final norm, 6 logits.
Plan OneLayer() {
  Plan p;
  p.steps = {
      Step(OpKind::kEmbed, {}, 0, 8),             // 0
      Step(OpKind::kRmsNorm, {0}, 1, 8),          // 1
      Step(OpKind::kLinear, {1}, 2, 8),           // 2  q
      Step(OpKind::kLinear, {1}, 3, 4),           // 3  k
      Step(OpKind::kLinear, {1}, 4, 4),           // 4  v
      Step(OpKind::kRope, {2}, 2, 8),             // 5  in place
      Step(OpKind::kAttention, {2, 3, 4}, 2, 8),  // 6  out aliases q
      Step(OpKind::kAdd, {0, 2}, 0, 8),           // 7  out aliases the first input
      Step(OpKind::kRmsNorm, {0}, 5, 8),          // 8  the row-wise tail
      Step(OpKind::kLinear, {5}, 6, 16),          // 9  logits
  };
  p.slot_width = {8, 8, 8, 4, 4, 8, 16};
  p.slot_tail_only = {false, false, false, false, false, true, true};
  p.logits_slot = 6;
  p.vocab = 16;
  p.row_wise_tail = 8;
  return p;
}

std::vector<WalkStep> Walk(const Plan& plan, size_t n, BackendOutput output, size_t group) {
  std::vector<WalkStep> steps;
  WalkOptions options;
  options.max_linear_group = group;
  EXPECT_TRUE(WalkPlan(plan, n, output, options, [&](const WalkStep& w) {
                steps.push_back(w);
                return Status::Ok();
              }).ok());
  return steps;
}

TEST(PlanWalkerTest, LastRowRunsTheTailOnOneRowAndGroupsLinears) {
  const Plan plan = OneLayer();
  const std::vector<WalkStep> w = Walk(plan, 5, BackendOutput::kLastRow, 4);
  ASSERT_EQ(w.size(), 8u);  // q, k and v run as one
  EXPECT_EQ(w[2].index, 2u);
  EXPECT_EQ(w[2].group, 3u);
  EXPECT_EQ(w[3].index, 5u);
  EXPECT_FALSE(w[3].copy_input);  // rope over its own slot
  EXPECT_TRUE(w[4].via_temp);     // attention writes over q
  EXPECT_FALSE(w[5].via_temp);    // add may write over its first input
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(w[i].r0, 0u);
    EXPECT_EQ(w[i].rows, 5u);
  }
  // The tail: token 4 alone, read from row 4 of x, written to row 0 of the
  // tail-only slots; the last step writes the logits.
  EXPECT_EQ(w[6].index, 8u);
  EXPECT_EQ(w[6].r0, 4u);
  EXPECT_EQ(w[6].rows, 1u);
  EXPECT_EQ(w[6].in_row[0], 4u);
  EXPECT_EQ(w[6].out_row[0], 0u);
  EXPECT_EQ(w[7].in_row[0], 0u);
  EXPECT_TRUE(w[7].writes_logits);
  EXPECT_FALSE(w[6].writes_logits);
  EXPECT_EQ(LogitsRow(plan, 5, BackendOutput::kLastRow), 0u);
  EXPECT_EQ(TailRows(5, BackendOutput::kLastRow), 1u);
}

TEST(PlanWalkerTest, UngroupedAllRowsAndNone) {
  const Plan plan = OneLayer();
  const std::vector<WalkStep> all = Walk(plan, 3, BackendOutput::kAllRows, 1);
  ASSERT_EQ(all.size(), 10u);  // every Linear on its own
  for (const WalkStep& w : all) {
    EXPECT_EQ(w.group, 1u);
    EXPECT_EQ(w.rows, 3u);
    EXPECT_EQ(w.out_row[0], 0u);
  }
  EXPECT_TRUE(all[9].writes_logits);
  EXPECT_EQ(SlotRows(plan, 6, 3, TailRows(3, BackendOutput::kAllRows)), 3u);
  // The widest step over its rows: the logits, 3 x 16.
  EXPECT_EQ(TempFloats(plan, 3, 3), 48u);
  EXPECT_EQ(TempFloats(plan, 3, 1), 24u);
  // No logits: the tail is skipped.
  const std::vector<WalkStep> none = Walk(plan, 3, BackendOutput::kNone, 4);
  ASSERT_EQ(none.size(), 6u);
  EXPECT_EQ(none.back().index, 7u);
}

TEST(PlanWalkerTest, OpsThatCannotOverwriteAnInputGoThroughTemp) {
  Plan plan = OneLayer();
  plan.steps[2] = Step(OpKind::kLinear, {1}, 1, 8);  // a Linear over its input
  plan.steps[7] = Step(OpKind::kAdd, {2, 0}, 0, 8);  // an add over its second input
  plan.steps[5] = Step(OpKind::kRope, {3}, 2, 8);    // rope from another slot
  const std::vector<WalkStep> w = Walk(plan, 2, BackendOutput::kAllRows, 4);
  EXPECT_TRUE(w[2].via_temp);
  EXPECT_EQ(w[2].group, 1u);  // through temp, so not grouped
  EXPECT_EQ(w[3].group, 2u);  // k and v still are
  EXPECT_TRUE(w[4].copy_input);
  EXPECT_TRUE(w[6].via_temp);
}

}  // namespace
}  // namespace pocket
