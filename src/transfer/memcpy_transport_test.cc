#include "transfer/memcpy_transport.h"

#include <gtest/gtest.h>

#include <cstring>

namespace yb {
namespace {

TEST(MemcpyTransportTest, CopiesWithinBoundsAndRefusesOutside) {
  auto reg = std::make_shared<LocalSegmentRegistry>();
  auto region = MappedRegion::Map(8192);
  ASSERT_TRUE(region);
  reg->Add(7, LocalSegment{region, region->data() + 4096, 4096});  // the second half only
  std::memset(region->data(), 0xAB, 8192);
  MemcpyTransport t(reg);
  EXPECT_TRUE(t.Reaches(7));
  EXPECT_FALSE(t.Reaches(8));

  char in[16] = "hello, segment";
  char out[16] = {};
  using Op = TransferRequest::Op;
  auto st = t.Submit({{Op::kWrite, 7, 100, in, sizeof(in)}, {Op::kRead, 7, 100, out, sizeof(out)}});
  ASSERT_TRUE(st[0].ok());
  ASSERT_TRUE(st[1].ok());
  EXPECT_STREQ(out, "hello, segment");

  // Out of bounds, overflowing offsets, unknown segment and null buffers: refused, nothing touched.
  auto bad = t.Submit({{Op::kWrite, 7, 4090, in, 16},
                       {Op::kWrite, 7, ~0ULL - 4, in, 16},
                       {Op::kWrite, 8, 0, in, 16},
                       {Op::kWrite, 7, 0, nullptr, 16}});
  EXPECT_EQ(bad[0].code(), Code::kInvalidParams);
  EXPECT_EQ(bad[1].code(), Code::kInvalidParams);
  EXPECT_EQ(bad[2].code(), Code::kTransferFail);
  EXPECT_EQ(bad[3].code(), Code::kInvalidParams);
  for (int i = 0; i < 4096; ++i) ASSERT_EQ(region->data()[i], 0xAB) << i;  // first half untouched
  EXPECT_EQ(region->data()[4096 + 4090], 0xAB);
}

TEST(MemcpyTransportTest, RegionOutlivesRemovalWhileHeld) {
  auto reg = std::make_shared<LocalSegmentRegistry>();
  auto region = MappedRegion::Map(4096);
  reg->Add(1, LocalSegment{region, region->data(), 4096});
  LocalSegment held = reg->Find(1);
  region.reset();
  reg->Remove(1);
  held.base[0] = 1;  // still mapped: `held` keeps it alive
  EXPECT_EQ(held.base[0], 1);
  EXPECT_FALSE(reg->Find(1).base);
}

}  // namespace
}  // namespace yb
