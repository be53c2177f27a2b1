#include "master/segment_manager.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <set>

namespace yb {
namespace {

SegmentMount Desc(SegmentId id, const std::string& name, uint64_t size) { return {id, name, 0, size, "local"}; }

TEST(SegmentManagerTest, ReplicasLandOnDistinctSegmentNames) {
  SegmentManager m(MakeRandomStrategy(1), 64);
  ClientId c{1, 1};
  ASSERT_TRUE(m.Mount(c, Desc(1, "a", 1 << 20)).ok());
  ASSERT_TRUE(m.Mount(c, Desc(2, "a", 1 << 20)).ok());  // a second chunk of "a"
  ASSERT_TRUE(m.Mount(c, Desc(3, "b", 1 << 20)).ok());
  ASSERT_TRUE(m.Mount(c, Desc(4, "c", 1 << 20)).ok());
  for (int i = 0; i < 50; ++i) {
    auto allocs = m.Allocate(0, 1000, 3, {});
    ASSERT_EQ(allocs.size(), 3u);
    std::set<std::string> names;
    for (auto& a : allocs) {
      SegmentId id = m.IdOf(a.segment);
      names.insert(id == 1 || id == 2 ? "a" : id == 3 ? "b" : "c");
    }
    EXPECT_EQ(names.size(), 3u);
  }
  // Best effort: more replicas than names gives one per name.
  EXPECT_EQ(m.Allocate(0, 1000, 5, {}).size(), 3u);
}

// A tenant's client's segment takes that tenant's replicas only, even when preferred; and its
// restriction is in its log record, so a restarted master keeps it.
TEST(SegmentManagerTest, ATenantsSegmentTakesItsTenantsReplicasOnly) {
  SegmentManager m(MakeRandomStrategy(1), 64);
  ASSERT_TRUE(m.Mount(ClientId{1, 1}, Desc(1, "shared", 1 << 20)).ok());
  ASSERT_TRUE(m.Mount(ClientId{2, 2}, Desc(2, "team-a", 1 << 20), TenantIndex{3}).ok());
  for (int i = 0; i < 20; ++i) {
    auto other = m.Allocate(0, 1000, 2, {"team-a"});
    ASSERT_EQ(other.size(), 1u);
    EXPECT_EQ(m.IdOf(other[0].segment), 1u);
    auto mine = m.Allocate(3, 1000, 2, {});
    EXPECT_EQ(mine.size(), 2u);
  }
  bool recorded = false;
  for (const auto& r : m.Records()) {
    if (r.id() == 2) recorded = r.has_only_tenant() && r.only_tenant() == 3;
  }
  EXPECT_TRUE(recorded);
  SegmentManager restarted(MakeRandomStrategy(1), 64);
  ASSERT_TRUE(restarted.Restore(ClientId{2, 2}, Desc(2, "team-a", 1 << 20), {}, TenantIndex{3}).ok());
  ASSERT_TRUE(restarted.Mount(ClientId{2, 2}, Desc(2, "team-a", 1 << 20)).ok());  // its owner confirms it
  EXPECT_TRUE(restarted.Allocate(0, 1000, 1, {}).empty());
  EXPECT_EQ(restarted.Allocate(3, 1000, 1, {}).size(), 1u);
}

TEST(SegmentManagerTest, PreferredSegmentsComeFirst) {
  SegmentManager m(MakeRandomStrategy(1), 64);
  ClientId c{1, 1};
  for (SegmentId id = 1; id <= 4; ++id) ASSERT_TRUE(m.Mount(c, Desc(id, "n" + std::to_string(id), 1 << 20)).ok());
  for (int i = 0; i < 20; ++i) {
    auto allocs = m.Allocate(0, 100, 2, {"n3", "n1"});
    ASSERT_EQ(allocs.size(), 2u);
    EXPECT_EQ(m.IdOf(allocs[0].segment), 3u);
    EXPECT_EQ(m.IdOf(allocs[1].segment), 1u);
  }
}

SegmentMount Net(SegmentId id, const std::string& name, uint64_t size) { return {id, name, 0, size, name}; }

// A name is a fault domain: another process mounting under a name in use is refused, with whom it
// is in use by; its owner's further chunks are fine, and in one process (endpoint "local") names
// may repeat.
TEST(SegmentManagerTest, ANameInUseByAnotherClientIsRefused) {
  SegmentManager m(MakeRandomStrategy(1), 64);
  ClientId a{1, 1}, b{2, 2};
  ASSERT_TRUE(m.Mount(a, Net(1, "h:1", 1 << 20)).ok());
  ASSERT_TRUE(m.Mount(a, Net(2, "h:1", 1 << 20)).ok());
  Status st = m.Mount(b, Net(3, "h:1", 1 << 20));
  EXPECT_EQ(st.code(), Code::kSegmentAlreadyExists);
  EXPECT_NE(st.message().find("in use by client"), std::string::npos) << st.ToString();
  EXPECT_EQ(m.segment_count(), 2u);
  auto holder = m.NameHeldByOther(b, "h:1");
  ASSERT_TRUE(holder.has_value());
  EXPECT_EQ(holder->owner, a);
  EXPECT_EQ(holder->endpoint, "h:1");
  EXPECT_FALSE(m.NameHeldByOther(a, "h:1").has_value());
  ASSERT_TRUE(m.Mount(b, Net(3, "h:2", 1 << 20)).ok());
  ASSERT_TRUE(m.Mount(a, Desc(4, "x", 1 << 20)).ok());
  EXPECT_TRUE(m.Mount(b, Desc(5, "x", 1 << 20)).ok());
}

// Replicas go to distinct hosts while there are any, then to other processes of a host.
TEST(SegmentManagerTest, DistinctHostsAreFilledFirst) {
  SegmentManager m(MakeRandomStrategy(3), 64);
  ASSERT_TRUE(m.Mount(ClientId{1, 1}, Net(1, "h1:1", 1 << 20)).ok());
  ASSERT_TRUE(m.Mount(ClientId{2, 2}, Net(2, "h1:2", 1 << 20)).ok());
  ASSERT_TRUE(m.Mount(ClientId{3, 3}, Net(3, "h1:3", 1 << 20)).ok());
  ASSERT_TRUE(m.Mount(ClientId{4, 4}, Net(4, "h2:1", 1 << 20)).ok());
  for (int i = 0; i < 40; ++i) {
    auto two = m.Allocate(0, 100, 2, {});
    ASSERT_EQ(two.size(), 2u);
    std::set<SegmentId> ids{m.IdOf(two[0].segment), m.IdOf(two[1].segment)};
    EXPECT_EQ(ids.count(4), 1u) << "one replica on h2";
    auto three = m.Allocate(0, 100, 3, {});
    ASSERT_EQ(three.size(), 3u);  // then h1's processes, each once
    std::set<SegmentId> ids3{m.IdOf(three[0].segment), m.IdOf(three[1].segment), m.IdOf(three[2].segment)};
    EXPECT_EQ(ids3.size(), 3u);
    EXPECT_EQ(ids3.count(4), 1u);
  }
  // A preferred host names every process on it.
  auto pref = m.Allocate(0, 100, 1, {"h2"});
  ASSERT_EQ(pref.size(), 1u);
  EXPECT_EQ(m.IdOf(pref[0].segment), 4u);
}

// Zones: two labelled zones of two hosts each, and one host per zone running two daemons. Two
// replicas always span both zones; three take a second host in one of them; a repair's copy (the
// survivors given to avoid) goes to the other zone while it has room.
TEST(SegmentManagerTest, ReplicasSpanZonesFirstThenHosts) {
  SegmentManager m(MakeRandomStrategy(9), 64);
  auto zoned = [](SegmentId id, const std::string& endpoint, const std::string& zone) {
    SegmentMount d = Net(id, endpoint, 1 << 20);
    d.zone = zone;
    return d;
  };
  ASSERT_TRUE(m.Mount(ClientId{1, 1}, zoned(1, "a1:1", "rack-a")).ok());
  ASSERT_TRUE(m.Mount(ClientId{2, 2}, zoned(2, "a1:2", "rack-a")).ok());
  ASSERT_TRUE(m.Mount(ClientId{3, 3}, zoned(3, "a2:1", "rack-a")).ok());
  ASSERT_TRUE(m.Mount(ClientId{4, 4}, zoned(4, "b1:1", "rack-b")).ok());
  ASSERT_TRUE(m.Mount(ClientId{5, 5}, zoned(5, "b2:1", "rack-b")).ok());
  ASSERT_TRUE(m.Mount(ClientId{6, 6}, zoned(6, "b2:2", "rack-b")).ok());
  auto zone_of = [](SegmentId id) { return id <= 3 ? 'a' : 'b'; };
  auto host_of = [](SegmentId id) { return id <= 2 ? 1 : id == 3 ? 2 : id == 4 ? 3 : 4; };
  for (int i = 0; i < 60; ++i) {
    auto two = m.Allocate(0, 100, 2, {});
    ASSERT_EQ(two.size(), 2u);
    EXPECT_NE(zone_of(m.IdOf(two[0].segment)), zone_of(m.IdOf(two[1].segment)));
    auto three = m.Allocate(0, 100, 3, {});
    ASSERT_EQ(three.size(), 3u);
    std::set<char> zones;
    std::set<int> hosts;
    for (const auto& a : three) {
      zones.insert(zone_of(m.IdOf(a.segment)));
      hosts.insert(host_of(m.IdOf(a.segment)));
    }
    EXPECT_EQ(zones.size(), 2u);
    EXPECT_EQ(hosts.size(), 3u) << "three hosts before a host's second daemon";
    auto copy = m.Allocate(0, 100, 1, {}, {1});  // the survivor is on rack-a
    ASSERT_EQ(copy.size(), 1u);
    EXPECT_EQ(zone_of(m.IdOf(copy[0].segment)), 'b');
  }
  // A zone beats a host: with every daemon on one host, two replicas still span the zones.
  SegmentManager one(MakeRandomStrategy(10), 64);
  for (SegmentId id = 1; id <= 4; ++id) {
    ASSERT_TRUE(one.Mount(ClientId{id, id}, zoned(id, "h:" + std::to_string(id), id <= 2 ? "z1" : "z2")).ok());
  }
  for (int i = 0; i < 40; ++i) {
    auto two = one.Allocate(0, 100, 2, {});
    ASSERT_EQ(two.size(), 2u);
    EXPECT_NE(one.IdOf(two[0].segment) <= 2, one.IdOf(two[1].segment) <= 2);
  }
}

// Balance after a node joins: three segments half full and a new empty one. The default (random)
// order gives the new node its share of new objects, not all of them (no hot spot), and a segment
// without room is never chosen while others have it.
TEST(SegmentManagerTest, ANewEmptyNodeTakesItsShareAndAFullOneNone) {
  SegmentManager m(MakeRandomStrategy(5), 64);
  constexpr uint64_t kSeg = 4 << 20, kObj = 4096;
  for (SegmentId id = 1; id <= 3; ++id) {
    const std::string name = "old" + std::to_string(id) + ":1";
    ASSERT_TRUE(m.Mount(ClientId{id, id}, Net(id, name, kSeg)).ok());
    for (uint64_t b = 0; b < kSeg / 2; b += kObj) ASSERT_EQ(m.Allocate(0, kObj, 1, {name}).size(), 1u);
  }
  ASSERT_TRUE(m.Mount(ClientId{9, 9}, Net(9, "new:1", kSeg)).ok());
  ASSERT_TRUE(m.Mount(ClientId{8, 8}, Net(8, "full:1", kObj)).ok());  // room for one object
  ASSERT_EQ(m.Allocate(0, kObj, 1, {"full:1"}).size(), 1u);            // and now none
  std::map<SegmentId, int> got;
  const int kPuts = 800;
  for (int i = 0; i < kPuts; ++i) {
    auto a = m.Allocate(0, kObj, 1, {});
    ASSERT_EQ(a.size(), 1u);
    ++got[m.IdOf(a[0].segment)];
  }
  for (const auto& [id, n] : got) std::printf("segment %llu: %d\n", static_cast<unsigned long long>(id), n);
  EXPECT_EQ(got.count(8), 0u);  // the full one
  for (SegmentId id : {1, 2, 3, 9}) {  // a quarter each, give or take
    EXPECT_GT(got[id], kPuts / 4 - 80) << id;
    EXPECT_LT(got[id], kPuts / 4 + 80) << id;
  }
}

// A writer that could not reach a segment asks for others: that segment and its owner's other
// ones are avoided even when preferred; a segment of the same name mounted by another process (the
// node restarted) stays eligible.
TEST(SegmentManagerTest, AvoidedSegmentsAndTheirOwnersOthersAreNeverAllocatedOn) {
  SegmentManager m(MakeRandomStrategy(1), 64);
  ClientId dead{1, 1}, back{2, 2}, other{3, 3};
  ASSERT_TRUE(m.Mount(dead, Desc(1, "a", 1 << 20)).ok());
  ASSERT_TRUE(m.Mount(dead, Desc(2, "a", 1 << 20)).ok());
  ASSERT_TRUE(m.Mount(back, Desc(3, "a", 1 << 20)).ok());
  ASSERT_TRUE(m.Mount(other, Desc(4, "b", 1 << 20)).ok());
  for (int i = 0; i < 30; ++i) {
    auto allocs = m.Allocate(0, 100, 2, {"a"}, {1});
    ASSERT_EQ(allocs.size(), 2u);
    std::set<SegmentId> ids{m.IdOf(allocs[0].segment), m.IdOf(allocs[1].segment)};
    EXPECT_EQ(ids, (std::set<SegmentId>{3, 4}));
  }
  EXPECT_EQ(m.Allocate(0, 100, 1, {}, {1, 3, 4}).size(), 0u);
}

TEST(SegmentManagerTest, FreeRatioFirstPicksTheEmptiestSegment) {
  SegmentManager m(MakeFreeRatioFirstStrategy(), 64);
  ClientId c{1, 1};
  ASSERT_TRUE(m.Mount(c, Desc(1, "a", 1 << 20)).ok());
  ASSERT_TRUE(m.Mount(c, Desc(2, "b", 1 << 20)).ok());
  auto first = m.Allocate(0, 1 << 19, 1, {});  // half of one segment
  ASSERT_EQ(first.size(), 1u);
  for (int i = 0; i < 5; ++i) {
    auto a = m.Allocate(0, 1024, 1, {});
    ASSERT_EQ(a.size(), 1u);
    EXPECT_NE(a[0].segment, first[0].segment);
  }
}

TEST(SegmentManagerTest, MountRulesAndAccounting) {
  SegmentManager m(MakeRandomStrategy(1), 64);
  ClientId a{1, 1}, b{2, 2};
  EXPECT_EQ(m.Mount(a, Desc(1, "", 4096)).code(), Code::kInvalidParams);
  EXPECT_EQ(m.Mount(a, Desc(1, "x", 0)).code(), Code::kInvalidParams);
  ASSERT_TRUE(m.Mount(a, Desc(1, "x", 4096)).ok());
  EXPECT_TRUE(m.Mount(a, Desc(1, "x", 4096)).ok());  // same owner again: no-op
  EXPECT_EQ(m.Mount(b, Desc(1, "x", 4096)).code(), Code::kSegmentAlreadyExists);
  EXPECT_EQ(m.capacity(), 4096u);
  auto al = m.Allocate(0, 100, 1, {});
  ASSERT_EQ(al.size(), 1u);
  EXPECT_EQ(m.allocated(), 128u);
  EXPECT_EQ(m.Unmount(b, 1).code(), Code::kIllegalClient);
  EXPECT_EQ(m.Unmount(a, 99).code(), Code::kSegmentNotFound);
  EXPECT_EQ(m.IdOf(al[0].segment), 1u);
  ASSERT_TRUE(m.Unmount(a, 1).ok());
  EXPECT_EQ(m.IdOf(al[0].segment), 0u);  // stale reference
  EXPECT_EQ(m.capacity(), 0u);
  EXPECT_EQ(m.allocated(), 0u);
  m.Free(al[0]);  // after unmount: a no-op
  EXPECT_EQ(m.allocated(), 0u);
  // The slot is reused with a new generation: the stale reference frees nothing there.
  ASSERT_TRUE(m.Mount(a, Desc(2, "y", 4096)).ok());
  auto al2 = m.Allocate(0, 100, 1, {});
  ASSERT_EQ(al2.size(), 1u);
  Allocation stale = al2[0];
  stale.segment = al[0].segment;
  m.Free(stale);
  EXPECT_EQ(m.allocated(), 128u);
}

TEST(SegmentManagerTest, UnknownStrategyIsRefused) {
  EXPECT_EQ(MakeAllocationStrategy("fastest", 1).code(), Code::kInvalidParams);
  EXPECT_TRUE(MakeAllocationStrategy("free_ratio_first", 1).ok());
}

}  // namespace
}  // namespace yb
