// ObjectTable and its accessor on their own (object_table.h): what each named operation does to
// the shard, to the space it holds, and to the records its sink is given.
#include "master/object_table.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "common/clock.h"
#include "master/allocation_strategy.h"
#include "master/meta_sink.h"
#include "master/segment_manager.h"
#include "master/tenants.h"

namespace yb {
namespace {

// A table key of tenant 0 (two zero bytes, then the user's key).
std::string Key(const char* user_key) { return std::string(2, '\0') + user_key; }

class RecordingSink : public MetaSink {
 public:
  uint64_t Append(const pb::LogRecord& r) override {
    records.push_back(r);
    return records.size();
  }
  std::vector<pb::LogRecord> records;
};

class ObjectTableTest : public ::testing::Test {
 protected:
  ObjectTableTest() : segments_(MakeRandomStrategy(7), 64, &clock_), table_(segments_, tenants_, 4) {
    EXPECT_TRUE(segments_.Mount(ClientId{1, 1}, SegmentMount{10, "a", 0x100000, 1 << 20, "e:1"}).ok());
    EXPECT_TRUE(segments_.Mount(ClientId{2, 2}, SegmentMount{20, "b", 0x200000, 1 << 20, "e:2"}).ok());
    table_.SetSink(&sink_);
  }
  // A COMPLETE memory replica of `size` bytes on each of `count` segments.
  std::vector<StoredReplica> Replicas(uint64_t size, size_t count) {
    std::vector<StoredReplica> out;
    for (const Allocation& a : segments_.Allocate(0, size, count, {})) {
      out.emplace_back(a, ReplicaKind::kMemory, ReplicaStatus::kComplete);
    }
    EXPECT_EQ(out.size(), count);
    return out;
  }
  ObjectTable::Ref Publish(ObjectTable::Locked& s, const HashedKey& k, uint64_t size, size_t replicas) {
    ObjectMeta m;
    m.size = size;
    m.object_id = table_.NextObjectId();
    m.SetReplicas(Replicas(size, replicas));
    tenants_.Charge(0, size * replicas);
    return s.Publish(k, std::move(m));
  }
  // A Put of `size` bytes with one PROCESSING replica reserved for it.
  PendingPut Reserved(uint64_t size) {
    PendingPut put{ClientId{3, 3}, clock_.NowMs(), size, 0, 0, false, {}};
    for (const Allocation& a : segments_.Allocate(0, size, 1, {})) {
      put.replicas.emplace_back(a, ReplicaKind::kMemory, ReplicaStatus::kProcessing);
    }
    return put;
  }
  size_t Count(pb::LogRecord::ChangeCase c) const {
    size_t n = 0;
    for (const auto& r : sink_.records) n += r.change_case() == c;
    return n;
  }

  ManualClock clock_;
  TenantRegistry tenants_;
  SegmentManager segments_;
  ObjectTable table_;
  RecordingSink sink_;
};

TEST_F(ObjectTableTest, PublishFindAndRemoveAreRecordedAndFreeTheSpace) {
  const std::string key = Key("key");
  const HashedKey k(key);
  {
    auto s = table_.Lock(k);
    EXPECT_FALSE(s.Find(k));
    auto obj = Publish(s, k, 100, 2);
    ASSERT_TRUE(obj);
    EXPECT_EQ(obj->n_replicas, 2);
    EXPECT_TRUE(s.Find(k));
  }
  EXPECT_EQ(table_.object_count(), 1u);
  EXPECT_EQ(Count(pb::LogRecord::kObject), 1u);
  EXPECT_EQ(segments_.allocated(), 2 * 128u);  // aligned to 64: two ranges of 128
  {
    auto s = table_.Lock(k);
    s.Remove(s.Find(k), MissReason::kRemoved);
    EXPECT_FALSE(s.Find(k));
  }
  EXPECT_EQ(table_.object_count(), 0u);
  EXPECT_EQ(Count(pb::LogRecord::kObjectGone), 1u);
  EXPECT_EQ(segments_.allocated(), 0u);
}

TEST_F(ObjectTableTest, ARemovedObjectsBytesStayReservedUntilItsLastReaderEnds) {
  const std::string key = Key("read");
  const HashedKey k(key);
  uint64_t id = 0;
  {
    auto s = table_.Lock(k);
    auto obj = Publish(s, k, 100, 1);
    id = s.AddReadPin(obj, ClientId{5, 5});
    EXPECT_EQ(s.ClientReadPins(obj), 1u);
    s.Remove(obj, MissReason::kRemoved);
  }
  EXPECT_EQ(segments_.allocated(), 128u);  // a zombie holds the range for the reader
  {
    auto s = table_.Lock(k);
    EXPECT_FALSE(s.Unpin(ClientId{6, 6}, id, ObjectTable::Ref()));  // not that client's pin
    EXPECT_TRUE(s.Unpin(ClientId{5, 5}, id, ObjectTable::Ref()));
  }
  EXPECT_EQ(segments_.allocated(), 0u);
}

TEST_F(ObjectTableTest, DroppingReplicasKeepsTheRestAndTheLastOneTakesTheObject) {
  const std::string key = Key("drop");
  const HashedKey k(key);
  auto s = table_.Lock(k);
  auto obj = Publish(s, k, 100, 2);
  const SegmentRef first = obj->replica(0).segment();
  EXPECT_EQ(s.DropReplicasIf(obj, [&](const StoredReplica& r) { return r.segment() == first; }), 1u);
  obj = s.Find(k);
  ASSERT_TRUE(obj);
  EXPECT_EQ(obj->n_replicas, 1);
  EXPECT_NE(obj->replica(0).segment(), first);
  EXPECT_EQ(s.DropReplicasIf(obj, [](const StoredReplica&) { return true; }), 1u);
  EXPECT_FALSE(s.Find(k));
  EXPECT_EQ(segments_.allocated(), 0u);
}

TEST_F(ObjectTableTest, ARepairReplicaIsInvisibleToTheLogUntilComplete) {
  const std::string key = Key("repair");
  const HashedKey k(key);
  auto s = table_.Lock(k);
  auto obj = Publish(s, k, 100, 1);
  auto target = segments_.Allocate(0, 100, 1, {}, {segments_.IdOf(obj->replica(0).segment())});
  ASSERT_EQ(target.size(), 1u);
  const size_t objects_logged = Count(pb::LogRecord::kObject);
  s.AddRepairReplica(obj, target[0]);
  obj = s.Find(k);
  EXPECT_EQ(obj->n_replicas, 2);
  EXPECT_EQ(obj->CompleteMemoryReplicas(), 1u);
  pb::LogRecord dumped;
  s.Dump([&](const pb::LogRecord& r) { dumped = r; });
  EXPECT_EQ(dumped.object().replicas_size(), 1);  // a snapshot leaves the copy in progress out
  EXPECT_TRUE(s.CompleteReplica(obj, target[0]));
  obj = s.Find(k);
  EXPECT_EQ(obj->CompleteMemoryReplicas(), 2u);
  EXPECT_EQ(Count(pb::LogRecord::kObject), objects_logged + 1);
  EXPECT_EQ(sink_.records.back().object().replicas_size(), 2);
  EXPECT_FALSE(s.CompleteReplica(obj, Allocation{12345, target[0].segment, 0}));  // no such copy
}

TEST_F(ObjectTableTest, APutInProgressIsReservedThenPublishedAsOneRecord) {
  const std::string key = Key("put");
  const HashedKey k(key);
  auto s = table_.Lock(k);
  s.AddPending(k, Reserved(100));
  EXPECT_EQ(s.pending_count(), 1u);
  EXPECT_FALSE(s.Find(k));  // readers see nothing yet
  EXPECT_EQ(Count(pb::LogRecord::kPending), 1u);
  PendingPut taken = s.TakePending(k, /*to_publish=*/true);
  ObjectMeta m;
  m.size = taken.size;
  m.object_id = table_.NextObjectId();
  for (auto& r : taken.replicas) r.set_status(ReplicaStatus::kComplete);
  m.SetReplicas(taken.replicas);
  s.Publish(k, std::move(m), /*ends_put=*/true);
  EXPECT_EQ(s.pending_count(), 0u);
  EXPECT_EQ(Count(pb::LogRecord::kPublished), 1u);  // not pending_gone and object apart
  EXPECT_EQ(Count(pb::LogRecord::kPendingGone), 0u);
}

TEST_F(ObjectTableTest, ARevokedPutFreesItsSpace) {
  const std::string key = Key("revoked");
  const HashedKey k(key);
  auto s = table_.Lock(k);
  s.AddPending(k, Reserved(100));
  EXPECT_EQ(segments_.allocated(), 128u);
  EXPECT_TRUE(s.RevokePending(k));
  EXPECT_FALSE(s.RevokePending(k));
  EXPECT_EQ(segments_.allocated(), 0u);
  EXPECT_EQ(Count(pb::LogRecord::kPendingGone), 1u);
}

TEST_F(ObjectTableTest, TheRecencyListFollowsUseNotInsertion) {
  // Two keys of one shard, so that one recency list orders them.
  std::vector<std::string> keys{Key("k0")};
  const size_t shard = table_.ShardIndex(HashedKey(keys[0]));
  for (int i = 1; keys.size() < 2; ++i) {
    std::string other = Key(("k" + std::to_string(i)).c_str());
    if (table_.ShardIndex(HashedKey(other)) == shard) keys.push_back(other);
  }
  const HashedKey first(keys[0]), second(keys[1]);
  auto s = table_.LockShard(shard);
  Publish(s, first, 10, 1);
  Publish(s, second, 10, 1);
  s.Touch(s.Find(first));  // used after the second: the second is now the least recent
  std::vector<std::string> order;
  s.ForEachLeastRecent([&](const ObjectEntry& e) {
    order.emplace_back(e.first);
    return true;
  });
  EXPECT_EQ(order, (std::vector<std::string>{keys[1], keys[0]}));
}

}  // namespace
}  // namespace yb
