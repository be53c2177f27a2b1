#include "transfer/memcpy_transport.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "common/temp_dir.h"
#include "transfer/transfer_engine.h"

namespace yb {
namespace {

TEST(ShmemHugePagesTest, ReadsTheBracketedModeAndKnowsWhichModesGiveHugePages) {
  TempDir dir;
  const std::string path = dir.path() + "/shmem_enabled";
  for (const auto& [text, want] :
       std::vector<std::pair<std::string, std::string>>{{"always within_size advise [never] deny force\n", "never"},
                                                        {"always within_size [advise] never deny force\n", "advise"},
                                                        {"[always] never\n", "always"},
                                                        {"never\n", ""}}) {
    std::ofstream(path) << text;
    EXPECT_EQ(ShmemHugePages(path), want) << text;
  }
  EXPECT_EQ(ShmemHugePages(dir.path() + "/absent"), "");
  for (const char* on : {"advise", "always", "within_size", "force"}) EXPECT_TRUE(ShmemHugePagesOn(on)) << on;
  for (const char* off : {"never", "deny", ""}) EXPECT_FALSE(ShmemHugePagesOn(off)) << off;
}

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

namespace yb {
namespace {

// The engine counts what each of its transports moved and times each batch it hands one; two
// transports of one kind are told apart.
TEST(TransferEngineTest, EachTransportsRequestsBytesFailuresAndBatchesAreCounted) {
  auto reg = std::make_shared<LocalSegmentRegistry>();
  auto region = MappedRegion::Map(8192);
  ASSERT_TRUE(region);
  reg->Add(7, LocalSegment{region, region->data(), 8192});
  auto other = std::make_shared<LocalSegmentRegistry>();
  TransferEngine engine;
  engine.AddTransport(std::make_shared<MemcpyTransport>(reg));
  engine.AddTransport(std::make_shared<MemcpyTransport>(other));
  char buf[100] = {};
  using Op = TransferRequest::Op;
  auto st = engine.Submit({{Op::kWrite, 7, 0, buf, 100}, {Op::kRead, 7, 0, buf, 50}, {Op::kRead, 7, 8190, buf, 10},
                           {Op::kRead, 9, 0, buf, 10}});  // the last reaches neither
  EXPECT_TRUE(st[0].ok() && st[1].ok());
  EXPECT_FALSE(st[2].ok());
  EXPECT_EQ(st[3].code(), Code::kTransferFail);
  auto uses = engine.uses();
  ASSERT_EQ(uses.size(), 2u);
  EXPECT_EQ(uses[0].kind, "memory");
  EXPECT_EQ(uses[1].kind, "memory-2");
  EXPECT_EQ(uses[0].requests, 3u);
  EXPECT_EQ(uses[0].bytes, 160u);
  EXPECT_EQ(uses[0].failures, 1u);
  ASSERT_TRUE(uses[0].durations);
  EXPECT_EQ(uses[0].durations->count(), 1u);  // one batch
  EXPECT_EQ(uses[1].requests, 0u);
  EXPECT_EQ(uses[1].durations->count(), 0u);
}

}  // namespace
}  // namespace yb
