#include "common/units.h"

#include <gtest/gtest.h>

namespace yb {
namespace {

TEST(UnitsTest, ParsesMooncakeSpellings) {
  EXPECT_EQ(*ParseSize("4 GB"), 4ULL << 30);
  EXPECT_EQ(*ParseSize("512MB"), 512ULL << 20);
  EXPECT_EQ(*ParseSize("16mb"), 16ULL << 20);
  EXPECT_EQ(*ParseSize("1024"), 1024ULL);
  EXPECT_EQ(*ParseSize("1.5 KiB"), 1536ULL);
}

TEST(UnitsTest, RejectsGarbage) {
  EXPECT_EQ(ParseSize("").code(), Code::kInvalidParams);
  EXPECT_EQ(ParseSize("GB").code(), Code::kInvalidParams);
  EXPECT_EQ(ParseSize("4 XB").code(), Code::kInvalidParams);
  EXPECT_EQ(ParseSize("4 GB x").code(), Code::kInvalidParams);
}

TEST(UnitsTest, FormatsBytes) {
  EXPECT_EQ(FormatBytes(100), "100 B");
  EXPECT_EQ(FormatBytes(1536), "1.50 KiB");
}

}  // namespace
}  // namespace yb
