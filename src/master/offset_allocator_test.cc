#include "master/offset_allocator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>

namespace yb {
namespace {

TEST(OffsetAllocatorTest, BinsRoundConsistently) {
  for (uint64_t s : {1ULL, 7ULL, 8ULL, 9ULL, 100ULL, 4096ULL, 4097ULL, 1ULL << 40, (1ULL << 40) + 1}) {
    uint32_t down = OffsetAllocator::BinRoundDown(s);
    uint32_t up = OffsetAllocator::BinRoundUp(s);
    EXPECT_LE(OffsetAllocator::BinLowerBound(down), s) << s;
    EXPECT_GE(OffsetAllocator::BinLowerBound(up), s) << s;
    EXPECT_LE(up - down, 1u) << s;
  }
  EXPECT_LT(OffsetAllocator::BinRoundUp(~0ULL), OffsetAllocator::kNumBins);
}

TEST(OffsetAllocatorTest, AllocatesAlignedAndFillsExactly) {
  OffsetAllocator a(1 << 20, 64);
  std::vector<OffsetAllocator::Allocation> allocs;
  for (int i = 0; i < 16; ++i) {
    auto r = a.Allocate(65536);
    ASSERT_TRUE(r.has_value()) << i;
    EXPECT_EQ(r->offset % 64, 0u);
    allocs.push_back(*r);
  }
  EXPECT_FALSE(a.Allocate(1).has_value());
  EXPECT_EQ(a.free_bytes(), 0u);
  for (auto& al : allocs) EXPECT_TRUE(a.Free(al.node));
  auto st = a.GetStats();
  EXPECT_EQ(st.free_bytes, 1u << 20);
  EXPECT_EQ(st.free_regions, 1u);  // everything merged back
  EXPECT_EQ(st.fragmentation, 0.0);
  EXPECT_TRUE(a.Allocate(1 << 20).has_value());
}

TEST(OffsetAllocatorTest, AHoleOfASizeBetweenBinsTakesThatSizeAgain) {
  // 8000 bytes lies between two bins' bounds (7168 and 8192): its hole sits in the lower bin.
  ASSERT_NE(OffsetAllocator::BinLowerBound(OffsetAllocator::BinRoundDown(8000)), 8000u);
  OffsetAllocator a(8 * 8000, 64);
  std::vector<OffsetAllocator::Allocation> allocs;
  for (int i = 0; i < 8; ++i) allocs.push_back(a.Allocate(8000).value());
  EXPECT_FALSE(a.Allocate(8000).has_value());
  ASSERT_TRUE(a.Free(allocs[3].node));
  ASSERT_TRUE(a.Free(allocs[6].node));
  auto again = a.Allocate(8000);
  ASSERT_TRUE(again.has_value());
  EXPECT_TRUE(again->offset == allocs[3].offset || again->offset == allocs[6].offset) << again->offset;
  auto other = a.Allocate(7900);  // smaller, in the same bin: the other hole (7936 aligned, 64 bytes over)
  ASSERT_TRUE(other.has_value());
  EXPECT_EQ(a.free_bytes(), 64u);
  EXPECT_FALSE(a.Allocate(8000).has_value());
}

TEST(OffsetAllocatorTest, RoundsToAlignment) {
  OffsetAllocator a(4096, 64);
  auto r = a.Allocate(1);
  ASSERT_TRUE(r);
  EXPECT_EQ(a.AllocationSize(r->node), 64u);
  auto r2 = a.Allocate(65);
  ASSERT_TRUE(r2);
  EXPECT_EQ(r2->offset % 64, 0u);
  EXPECT_EQ(a.AllocationSize(r2->node), 128u);
}

TEST(OffsetAllocatorTest, RejectsZeroOversizeAndDoubleFree) {
  OffsetAllocator a(4096, 64);
  EXPECT_FALSE(a.Allocate(0));
  EXPECT_FALSE(a.Allocate(8192));
  auto r = a.Allocate(100);
  ASSERT_TRUE(r);
  EXPECT_TRUE(a.Free(r->node));
  EXPECT_FALSE(a.Free(r->node));
  EXPECT_FALSE(a.Free(12345));
  EXPECT_EQ(a.free_bytes(), 4096u);
}

TEST(OffsetAllocatorTest, FragmentationIsReported) {
  OffsetAllocator a(64 * 10, 64);
  std::vector<uint32_t> nodes;
  for (int i = 0; i < 10; ++i) nodes.push_back(a.Allocate(64)->node);
  for (int i = 0; i < 10; i += 2) a.Free(nodes[i]);  // five holes of 64 bytes
  auto st = a.GetStats();
  EXPECT_EQ(st.free_regions, 5u);
  EXPECT_EQ(st.largest_free_region, 64u);
  EXPECT_DOUBLE_EQ(st.fragmentation, 0.8);
  EXPECT_FALSE(a.Allocate(128));  // no contiguous 128 bytes
}

// Random allocate/free against a model: ranges never overlap and everything is accounted for.
TEST(OffsetAllocatorTest, RandomizedNoOverlapAgainstModel) {
  const uint64_t cap = 1 << 24;
  OffsetAllocator a(cap, 64);
  std::mt19937_64 rng(42);
  std::map<uint64_t, std::pair<uint64_t, uint32_t>> live;  // offset -> (size, node)
  for (int step = 0; step < 20000; ++step) {
    bool do_alloc = live.empty() || (rng() % 3 != 0);
    if (do_alloc) {  // NOLINT
      uint64_t size = 1 + rng() % 100000;
      auto r = a.Allocate(size);
      if (!r) {
        continue;
      }
      uint64_t sz = a.AllocationSize(r->node);
      ASSERT_GE(sz, size);
      ASSERT_LE(r->offset + sz, cap);
      auto it = live.lower_bound(r->offset);
      if (it != live.end()) {
        ASSERT_LE(r->offset + sz, it->first);
      }
      if (it != live.begin()) {
        auto p = std::prev(it);
        ASSERT_LE(p->first + p->second.first, r->offset);
      }
      live[r->offset] = {sz, r->node};
    } else {
      auto it = live.begin();
      std::advance(it, rng() % live.size());
      ASSERT_TRUE(a.Free(it->second.second));
      live.erase(it);
    }
    uint64_t used = 0;
    if (step % 1000 == 0) {
      for (auto& [o, v] : live) used += v.first;
      ASSERT_EQ(a.free_bytes(), cap - used);
    }
  }
  for (auto& [o, v] : live) ASSERT_TRUE(a.Free(v.second));
  EXPECT_EQ(a.GetStats().free_regions, 1u);
}

// A master rebuilding a segment's allocator after a restart: the same ranges allocated, the same
// free space, and allocation and release go on as on the original.
TEST(OffsetAllocatorTest, RestoreRebuildsTheLiveRanges) {
  OffsetAllocator a(1 << 20, 64);
  std::mt19937_64 rng(7);
  std::map<uint64_t, std::pair<uint64_t, uint32_t>> live;  // offset -> (size, node)
  for (int i = 0; i < 2000; ++i) {
    if (live.size() < 50 || rng() % 3 != 0) {
      uint64_t sz = 1 + rng() % 5000;
      if (auto r = a.Allocate(sz)) live[r->offset] = {sz, r->node};
    } else {
      auto it = live.begin();
      std::advance(it, rng() % live.size());
      ASSERT_TRUE(a.Free(it->second.second));
      live.erase(it);
    }
  }
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (auto& [o, v] : live) ranges.emplace_back(o, v.first);
  std::reverse(ranges.begin(), ranges.end());  // any order
  OffsetAllocator b(1 << 20, 64);
  auto nodes = b.Restore(ranges);
  ASSERT_TRUE(nodes.has_value());
  ASSERT_EQ(nodes->size(), ranges.size());
  auto sa = a.GetStats(), sb = b.GetStats();
  EXPECT_EQ(sb.free_bytes, sa.free_bytes);
  EXPECT_EQ(sb.allocations, sa.allocations);
  EXPECT_EQ(sb.free_regions, sa.free_regions);
  EXPECT_EQ(sb.largest_free_region, sa.largest_free_region);
  for (size_t i = 0; i < ranges.size(); ++i) {
    EXPECT_EQ(b.AllocationSize((*nodes)[i]), (ranges[i].second + 63) / 64 * 64);
  }
  auto more = b.Allocate(4096);  // lands in free space, never on a restored range
  ASSERT_TRUE(more.has_value());
  for (auto& [o, sz] : ranges) {
    EXPECT_TRUE(more->offset + 4096 <= o || more->offset >= o + sz) << more->offset << " overlaps " << o;
  }
  ASSERT_TRUE(b.Free(more->node));
  for (uint32_t n : *nodes) ASSERT_TRUE(b.Free(n));
  EXPECT_EQ(b.GetStats().free_regions, 1u);
  EXPECT_EQ(b.free_bytes(), b.capacity());
}

TEST(OffsetAllocatorTest, RestoreRefusesOverlapsAndRangesOutside) {
  OffsetAllocator a(1 << 16, 64);
  EXPECT_FALSE(a.Restore({{0, 128}, {64, 64}}).has_value());  // overlap
  EXPECT_FALSE(a.Restore({{1 << 16, 64}}).has_value());       // outside
  EXPECT_FALSE(a.Restore({{32, 64}}).has_value());            // misaligned
  EXPECT_TRUE(a.Restore({}).has_value());
  EXPECT_EQ(a.free_bytes(), a.capacity());
  ASSERT_TRUE(a.Allocate(64).has_value());
  EXPECT_FALSE(a.Restore({{0, 64}}).has_value());  // not fresh
}

}  // namespace
}  // namespace yb
