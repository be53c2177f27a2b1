#include "client/location_cache.h"

#include <gtest/gtest.h>

namespace yb {
namespace {

// An object of 100 bytes with a checksum, on segment 7, whose read grant expires at `expires_ms`
// of the test's wall clock.
ObjectInfo Info(int64_t expires_ms, bool checksum = true) {
  ObjectInfo info;
  info.size = 100;
  if (checksum) info.checksum = 42;
  GrantedReplica r;
  r.segment = 7;
  r.size = 100;
  r.grant.access = GrantAccess::kRead;
  r.grant.expires_ms = expires_ms;
  info.replicas.push_back(r);
  return info;
}

TEST(LocationCacheTest, EntriesLiveTheTtlAndNeverPastTheirGrant) {
  ManualClock clock, wall(1'000'000);
  LocationCache cache(10, 1000, clock, &wall);
  cache.Remember("k", Info(wall.NowMs() + 60'000));
  ASSERT_TRUE(cache.Find("k"));
  EXPECT_EQ(cache.hits(), 1u);
  clock.Advance(999);
  EXPECT_TRUE(cache.Find("k"));
  clock.Advance(1);
  EXPECT_FALSE(cache.Find("k"));  // the ttl
  EXPECT_EQ(cache.size(), 0u);
  // A grant that lapses within the ttl (and its margin) bounds the entry; one about to lapse is not kept.
  cache.Remember("g", Info(wall.NowMs() + 2'500));
  EXPECT_TRUE(cache.Find("g"));
  clock.Advance(500);
  EXPECT_FALSE(cache.Find("g"));
  cache.Remember("late", Info(wall.NowMs() + 1'000));
  EXPECT_FALSE(cache.Find("late"));
}

TEST(LocationCacheTest, OnlyVerifiableMemoryReplicasAreKept) {
  ManualClock clock, wall(1'000'000);
  LocationCache cache(10, 1000, clock, &wall);
  cache.Remember("plain", Info(wall.NowMs() + 60'000, /*checksum=*/false));
  EXPECT_FALSE(cache.Find("plain"));
  ObjectInfo disk = Info(wall.NowMs() + 60'000);
  disk.replicas[0].kind = ReplicaKind::kLocalDisk;
  cache.Remember("disk", disk);
  EXPECT_FALSE(cache.Find("disk"));
  ObjectInfo both = Info(wall.NowMs() + 60'000);
  both.replicas.insert(both.replicas.begin(), disk.replicas[0]);
  both.read_pin = 9;
  cache.Remember("both", both);
  auto got = cache.Find("both");
  ASSERT_TRUE(got);
  ASSERT_EQ(got->replicas.size(), 1u);
  EXPECT_EQ(got->replicas[0].kind, ReplicaKind::kMemory);
  EXPECT_EQ(got->read_pin, 0u);  // a cached read holds no pin
}

TEST(LocationCacheTest, BoundedLeastRecentlyUsedFirstAndDroppedOnStaleness) {
  ManualClock clock, wall(1'000'000);
  LocationCache cache(2, 1000, clock, &wall);
  cache.Remember("a", Info(wall.NowMs() + 60'000));
  cache.Remember("b", Info(wall.NowMs() + 60'000));
  ASSERT_TRUE(cache.Find("a"));  // b is now the least recently used
  cache.Remember("c", Info(wall.NowMs() + 60'000));
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_TRUE(cache.Find("a"));
  EXPECT_FALSE(cache.Find("b"));
  EXPECT_TRUE(cache.Find("c"));
  cache.NoteStale("c");
  EXPECT_FALSE(cache.Find("c"));
  EXPECT_EQ(cache.stale(), 1u);
  EXPECT_TRUE(cache.Find("a", /*read=*/false));
  const uint64_t hits = cache.hits();
  EXPECT_TRUE(cache.Find("a", /*read=*/false));
  EXPECT_EQ(cache.hits(), hits);
  // Off: nothing kept.
  LocationCache off(0, 1000, clock, &wall);
  off.Remember("a", Info(wall.NowMs() + 60'000));
  EXPECT_FALSE(off.enabled());
  EXPECT_FALSE(off.Find("a"));
}

}  // namespace
}  // namespace yb
