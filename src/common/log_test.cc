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

}  // namespace
}  // namespace yb
