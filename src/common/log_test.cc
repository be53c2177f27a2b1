#include "common/log.h"

#include <gtest/gtest.h>

#include <vector>

namespace yb {
namespace {

TEST(LogOccurrenceTest, TheFirstSecondFourthAndEighthOccurrencesAreLogged) {
  std::vector<uint64_t> logged;
  for (uint64_t n = 0; n <= 20; ++n) {
    if (LogOccurrence(n)) logged.push_back(n);
  }
  EXPECT_EQ(logged, (std::vector<uint64_t>{1, 2, 4, 8, 16}));
  EXPECT_TRUE(LogOccurrence(uint64_t{1} << 63));
  EXPECT_FALSE(LogOccurrence(~uint64_t{0}));
}

TEST(LogBudgetTest, AtMostABurstPerIntervalThenTheCountOfWhatWasHeldBack) {
  LogBudget budget(2, 1000);
  uint64_t held = 99;
  EXPECT_TRUE(budget.Allow(5000, &held));
  EXPECT_EQ(held, 0u);
  EXPECT_TRUE(budget.Allow(5100, &held));
  EXPECT_FALSE(budget.Allow(5200, &held));
  EXPECT_FALSE(budget.Allow(5999, &held));
  EXPECT_TRUE(budget.Allow(6000, &held));  // a new interval
  EXPECT_EQ(held, 2u);
  EXPECT_EQ(LogBudget::HeldBack(held), " (2 more like it not logged)");
  EXPECT_TRUE(budget.Allow(6001, &held));
  EXPECT_EQ(held, 0u);
  EXPECT_EQ(LogBudget::HeldBack(held), "");
  EXPECT_FALSE(budget.Allow(6002, &held));
  EXPECT_TRUE(budget.Allow(60000, &held));  // long after: the first of a new interval
  EXPECT_EQ(held, 1u);
}

}  // namespace
}  // namespace yb
