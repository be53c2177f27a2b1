// KV events (kv_events.h): the message Mooncake's subscribers decode, the events a change of media
// makes, the bounded queue's gaps, and the object table telling of every change.
#include "master/kv_events.h"

#include <endian.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "master/allocation_strategy.h"
#include "master/segment_manager.h"
#include "master/tenants.h"

namespace yb {
namespace {

using nlohmann::json;

// The whole payload as a subscriber decodes it.
json Decode(const std::string& payload) {
  auto m = DecodeKvEventBatch(payload);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? *m : json();
}

class Recorder : public KvEventSender {
 public:
  bool Send(uint64_t seq, std::string_view payload) override {
    sent.emplace_back(seq, Decode(std::string(payload)));
    return ok;
  }
  std::vector<std::pair<uint64_t, json>> sent;
  bool ok = true;
};

// What a KvEvents sent, as (type, medium, key) per event, in order.
std::vector<std::string> Sent(const Recorder& r) {
  std::vector<std::string> out;
  for (const auto& [seq, batch] : r.sent) {
    for (const json& e : batch[1]) {
      out.push_back(e["event_type"].get<std::string>() + " " + e["medium"].get<std::string>() + " " +
                    e["object_key"].get<std::string>());
    }
  }
  return out;
}

std::string TableKey(const std::string& user_key) { return std::string(2, '\0') + user_key; }

TEST(KvEventsTest, BlockHashesAreDecimalOrHexNumbersOfSixtyFourBits) {
  EXPECT_EQ(BlockHashOfKey("42"), 42u);
  EXPECT_EQ(BlockHashOfKey("0x2a"), 42u);
  EXPECT_EQ(BlockHashOfKey("0X2A"), 42u);
  EXPECT_EQ(BlockHashOfKey("18446744073709551615"), UINT64_MAX);
  EXPECT_FALSE(BlockHashOfKey("18446744073709551616"));  // does not fit
  EXPECT_FALSE(BlockHashOfKey(""));
  EXPECT_FALSE(BlockHashOfKey("0x"));
  EXPECT_FALSE(BlockHashOfKey("-1"));
  EXPECT_FALSE(BlockHashOfKey("12ab"));
  EXPECT_FALSE(BlockHashOfKey("prefix/42"));
}

TEST(KvEventsTest, ABatchIsMooncakesMessage) {
  KvEventsConfig c;
  c.backend_id = "pool-a";
  std::vector<KvEvent> batch = {{true, false, "0x10", "default"}, {false, true, "layer/0", "t1"}};
  uint64_t encoded = 0, skipped = 0;
  json m = Decode(EncodeKvEventBatch(batch, 7, 1234, c, &encoded, &skipped));
  EXPECT_EQ(encoded, 2u);
  EXPECT_EQ(skipped, 1u);  // "layer/0" names no block hash
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[0], 1234);
  EXPECT_EQ(m[2], 0);  // the batch's dp_rank
  ASSERT_EQ(m[1].size(), 2u);
  const json& stored = m[1][0];
  EXPECT_EQ(stored["event_id"], 7);
  EXPECT_EQ(stored["timestamp"], 1234);
  EXPECT_EQ(stored["event_type"], "stored");
  EXPECT_EQ(stored["type"], "BlockStored");
  EXPECT_EQ(stored["medium"], "cpu");
  EXPECT_EQ(stored["tenant_id"], "default");
  EXPECT_EQ(stored["backend_id"], "pool-a");
  EXPECT_EQ(stored["object_key"], "0x10");
  EXPECT_EQ(stored["seq_hashes"], json::array({16}));
  EXPECT_EQ(stored["block_hashes"], json::array({16}));
  EXPECT_EQ(stored["base_block_idx"], 0);
  for (const char* nil : {"model_name", "block_size", "additional_salt", "lora_name", "group_id", "dp_rank",
                          "parent_hash", "token_ids", "parent_block_hash"}) {
    EXPECT_TRUE(stored[nil].is_null()) << nil;
  }
  EXPECT_EQ(stored.size(), 20u);
  const json& removed = m[1][1];
  EXPECT_EQ(removed["event_id"], 8);
  EXPECT_EQ(removed["event_type"], "removed");
  EXPECT_EQ(removed["type"], "BlockRemoved");
  EXPECT_EQ(removed["medium"], "disk");
  EXPECT_EQ(removed["tenant_id"], "t1");
  EXPECT_EQ(removed["seq_hashes"], json::array());
  EXPECT_TRUE(removed["base_block_idx"].is_null());
  EXPECT_FALSE(removed.contains("parent_hash"));
  EXPECT_EQ(removed.size(), 17u);
}

TEST(KvEventsTest, WithoutLegacyFieldsOrObjectKeysOnlyBlockHashesAreNamed) {
  KvEventsConfig c;
  c.emit_legacy_compat_fields = false;
  c.emit_object_key = false;
  std::vector<KvEvent> batch = {{true, false, "5", "default"}, {true, false, "not-a-hash", "default"}};
  uint64_t encoded = 0, skipped = 0;
  json m = Decode(EncodeKvEventBatch(batch, 0, 1, c, &encoded, &skipped));
  EXPECT_EQ(encoded, 1u);
  EXPECT_EQ(skipped, 1u);
  ASSERT_EQ(m[1].size(), 1u);
  EXPECT_FALSE(m[1][0].contains("type"));
  EXPECT_FALSE(m[1][0].contains("block_hashes"));
  EXPECT_FALSE(m[1][0].contains("object_key"));
  EXPECT_EQ(m[1][0]["seq_hashes"], json::array({5}));
  EXPECT_EQ(m[1][0].size(), 16u);
  // A batch of keys none of which names a block is not sent at all.
  EXPECT_EQ(EncodeKvEventBatch({batch[1]}, 0, 1, c, &encoded, &skipped), "");
  EXPECT_EQ(encoded, 0u);
}

TEST(KvEventsTest, EachMediumGainedIsStoredAndEachLostRemovedRemovalsFirst) {
  auto rec = std::make_unique<Recorder>();
  Recorder* r = rec.get();
  KvEvents ev({}, std::move(rec), [] { return int64_t{5}; });
  ev.Changed(TableKey("1"), "default", 0, kMediaMemory, 0);                          // a Put
  ev.Changed(TableKey("1"), "default", kMediaMemory, kMediaMemory | kMediaDisk, 0);  // offloaded
  ev.Changed(TableKey("1"), "default", kMediaMemory | kMediaDisk, kMediaDisk, 0);    // evicted
  ev.Changed(TableKey("2"), "default", kMediaDisk, kMediaMemory, 0);                 // replaced
  ev.Changed(TableKey("1"), "default", kMediaDisk, 0, 0);                            // removed
  EXPECT_FALSE(ev.PublishOnce());
  EXPECT_EQ(Sent(*r), (std::vector<std::string>{"stored cpu 1", "stored disk 1", "removed cpu 1", "removed disk 2",
                                                "stored cpu 2", "removed disk 1"}));
  ASSERT_EQ(r->sent.size(), 1u);
  EXPECT_EQ(r->sent[0].first, 0u);
  EXPECT_FALSE(ev.PublishOnce());  // nothing queued: nothing sent
  EXPECT_EQ(r->sent.size(), 1u);
  auto s = ev.stats();
  EXPECT_EQ(s.published_batches, 1u);
  EXPECT_EQ(s.published_events, 6u);
  EXPECT_EQ(s.dropped_events, 0u);
}

TEST(KvEventsTest, BatchesHoldSixtyFourEventsAndNumberOnwards) {
  auto rec = std::make_unique<Recorder>();
  Recorder* r = rec.get();
  KvEvents ev({}, std::move(rec), [] { return int64_t{5}; });
  for (int i = 0; i < 130; ++i) ev.Changed(TableKey(std::to_string(i)), "default", 0, kMediaMemory, 0);
  EXPECT_TRUE(ev.PublishOnce());
  EXPECT_TRUE(ev.PublishOnce());
  EXPECT_FALSE(ev.PublishOnce());
  ASSERT_EQ(r->sent.size(), 3u);
  EXPECT_EQ(r->sent[0].second[1].size(), 64u);
  EXPECT_EQ(r->sent[2].second[1].size(), 2u);
  for (uint64_t i = 0; i < 3; ++i) EXPECT_EQ(r->sent[i].first, i);
  EXPECT_EQ(r->sent[2].second[1][1]["event_id"], 129);
  EXPECT_EQ(r->sent[2].second[1][1]["object_key"], "129");
}

TEST(KvEventsTest, AFullQueueDropsTheOldestAndLeavesAGapInTheSequence) {
  auto rec = std::make_unique<Recorder>();
  Recorder* r = rec.get();
  KvEventsConfig c;
  c.queue_capacity = 2;
  KvEvents ev(c, std::move(rec), [] { return int64_t{5}; });
  for (int i = 0; i < 5; ++i) ev.Changed(TableKey(std::to_string(i)), "default", 0, kMediaMemory, 0);
  EXPECT_FALSE(ev.PublishOnce());
  ASSERT_EQ(r->sent.size(), 1u);
  EXPECT_EQ(r->sent[0].first, 3u);  // 0, 1 and 2 went with the events dropped
  EXPECT_EQ(Sent(*r), (std::vector<std::string>{"stored cpu 3", "stored cpu 4"}));
  EXPECT_EQ(ev.stats().dropped_events, 3u);
  r->ok = false;  // a send that fails counts its events as dropped, and its number is used
  ev.Changed(TableKey("5"), "default", 0, kMediaMemory, 0);
  EXPECT_FALSE(ev.PublishOnce());
  EXPECT_EQ(r->sent.back().first, 4u);
  EXPECT_EQ(ev.stats().dropped_events, 4u);
  EXPECT_EQ(ev.stats().published_events, 2u);
}

// Events carry their records' positions and wait until the log has released them; a snapshot's
// first event says "all cleared" with the position it is as of.
TEST(KvEventsTest, EventsCarryTheirLogPositionAndWaitUntilReleased) {
  auto rec = std::make_unique<Recorder>();
  Recorder* r = rec.get();
  KvEvents ev({}, std::move(rec), [] { return int64_t{5}; });
  uint64_t released = 0;
  ev.SetReleased([&] { return released; });
  ev.Changed(TableKey("1"), "default", 0, kMediaMemory, 7);
  ev.Changed(TableKey("2"), "default", 0, kMediaMemory, 9);
  EXPECT_FALSE(ev.PublishOnce());  // nothing released
  EXPECT_TRUE(r->sent.empty());
  released = 8;
  EXPECT_FALSE(ev.PublishOnce());
  ASSERT_EQ(r->sent.size(), 1u);
  ASSERT_EQ(r->sent[0].second[1].size(), 1u);
  EXPECT_EQ(r->sent[0].second[1][0]["log_position"], 7);
  EXPECT_EQ(ev.stats().last_position, 7u);
  EXPECT_EQ(ev.stats().queued, 1u);
  released = 9;
  EXPECT_FALSE(ev.PublishOnce());
  EXPECT_EQ(r->sent[1].second[1][0]["log_position"], 9);
  EXPECT_EQ(r->sent[1].first, 1u);  // message numbers stay consecutive

  KvEvent cleared;
  cleared.cleared = true;
  cleared.position = 12;
  uint64_t encoded = 0, skipped = 0;
  json m = Decode(EncodeKvEventBatch({cleared}, 0, 1, KvEventsConfig{}, &encoded, &skipped));
  EXPECT_EQ(skipped, 0u);
  ASSERT_EQ(m[1].size(), 1u);
  EXPECT_EQ(m[1][0]["type"], "AllBlocksCleared");
  EXPECT_EQ(m[1][0]["log_position"], 12);
}

std::string Bytes(std::initializer_list<uint8_t> b) { return std::string(b.begin(), b.end()); }

TEST(KvEventsTest, WhatIsNotAMessageIsRefusedWhenDecoded) {
  EXPECT_FALSE(DecodeKvEventBatch("").ok());
  EXPECT_FALSE(DecodeKvEventBatch(Bytes({0x93, 0x01})).ok());                    // an array of 3 cut short
  EXPECT_FALSE(DecodeKvEventBatch(Bytes({0x93, 0x01, 0x90, 0x00, 0x00})).ok());  // a byte left over
  EXPECT_FALSE(DecodeKvEventBatch(Bytes({0x92, 0x01, 0x90})).ok());              // two elements, not three
  EXPECT_FALSE(DecodeKvEventBatch(Bytes({0x93, 0x01, 0x91, 0x01, 0x00})).ok());  // an event that is not a map
  // A map that names its field twice ({"k": 1, "k": 2}).
  EXPECT_FALSE(DecodeKvEventBatch(Bytes({0x93, 0x01, 0x91, 0x82, 0xa1, 'k', 0x01, 0xa1, 'k', 0x02, 0x00})).ok());
  auto empty = DecodeKvEventBatch(Bytes({0x93, 0x01, 0x90, 0x00}));
  ASSERT_TRUE(empty.ok()) << empty.status().ToString();
  EXPECT_EQ(*empty, json::array({1, json::array(), 0}));
}

// What `yb events` prints is read in place, with the JSON decoder's answers and refusals.
TEST(KvEventsTest, EventsReadInPlaceMatchTheDecodedOnes) {
  KvEventsConfig c;
  std::vector<KvEvent> batch = {
      {true, false, "0x10", "default"}, {false, true, "layer/0", "t1"}, {true, true, "7", "t2"}};
  uint64_t encoded = 0, skipped = 0;
  const std::string payload = EncodeKvEventBatch(batch, 1, 99, c, &encoded, &skipped);
  const json decoded = Decode(payload);
  size_t i = 0;
  ASSERT_TRUE(ForEachKvEvent(payload, [&](const KvEventView& e) {
                for (const char* f : {"event_type", "medium", "object_key", "tenant_id", "type"}) {
                  EXPECT_EQ(e.Str(f), std::optional<std::string_view>(decoded[1][i][f].get<std::string>())) << f;
                }
                EXPECT_EQ(e.Str("event_id"), std::nullopt);  // a number, not a string
                EXPECT_EQ(e.Str("no_such_field"), std::nullopt);
                ++i;
                return true;
              }).ok());
  EXPECT_EQ(i, 3u);
  size_t seen = 0;
  ASSERT_TRUE(ForEachKvEvent(payload, [&](const KvEventView&) { return ++seen < 2; }).ok());
  EXPECT_EQ(seen, 2u);  // stopped when asked
  auto none = [](const KvEventView&) { return true; };
  EXPECT_FALSE(ForEachKvEvent("", none).ok());
  EXPECT_FALSE(ForEachKvEvent(Bytes({0x93, 0x01}), none).ok());
  EXPECT_FALSE(ForEachKvEvent(Bytes({0x93, 0x01, 0x90, 0x00, 0x00}), none).ok());
  EXPECT_FALSE(ForEachKvEvent(Bytes({0x92, 0x01, 0x90}), none).ok());
  EXPECT_FALSE(ForEachKvEvent(Bytes({0x93, 0x01, 0x91, 0x01, 0x00}), none).ok());
  EXPECT_FALSE(ForEachKvEvent(Bytes({0x93, 0xa1, 'x', 0x90, 0x00}), none).ok());  // a timestamp that is no number
  EXPECT_TRUE(ForEachKvEvent(Bytes({0x93, 0x01, 0x90, 0x00}), none).ok());
}

TEST(KvEventsTest, ASocketThatCannotBindSaysWhich) {
  auto s = BindKvEventSocket("tcp://256.1.1.1:1");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), Code::kInvalidParams);
  EXPECT_NE(s.status().message().find("tcp://256.1.1.1:1"), std::string::npos);
  EXPECT_FALSE(BindKvEventSocket("nonsense").ok());
}

// The object table tells its observer of each change of media, from every kind of change.
class TableEventsTest : public ::testing::Test {
 protected:
  TableEventsTest() : segments_(MakeRandomStrategy(7), 64, &clock_), table_(segments_, tenants_, 4) {
    EXPECT_TRUE(segments_.Mount(ClientId{1, 1}, SegmentMount{10, "a", 0x100000, 1 << 20, "e:1"}).ok());
    EXPECT_TRUE(segments_.Mount(ClientId{2, 2}, SegmentMount{20, "b", 0x200000, 1 << 20, "e:2"}).ok());
    auto rec = std::make_unique<Recorder>();
    rec_ = rec.get();
    events_ = std::make_unique<KvEvents>(KvEventsConfig{}, std::move(rec), [] { return int64_t{5}; });
    table_.SetMediaObserver(events_.get());
  }
  ObjectTable::Ref Publish(ObjectTable::Locked& s, const HashedKey& k, size_t replicas) {
    ObjectMeta m;
    m.size = 4096;
    m.object_id = table_.NextObjectId();
    std::vector<StoredReplica> r;
    for (const Allocation& a : segments_.Allocate(0, 4096, replicas, {})) {
      r.emplace_back(a, ReplicaKind::kMemory, ReplicaStatus::kComplete);
    }
    m.SetReplicas(r);
    tenants_.Charge(0, 4096 * replicas);
    return s.Publish(k, std::move(m));
  }
  std::vector<std::string> Drain() {
    while (events_->PublishOnce()) {
    }
    auto out = Sent(*rec_);
    rec_->sent.clear();
    return out;
  }
  ManualClock clock_;
  SegmentManager segments_;
  TenantRegistry tenants_;
  ObjectTable table_;
  Recorder* rec_ = nullptr;
  std::unique_ptr<KvEvents> events_;
};

TEST_F(TableEventsTest, PutsOffloadsEvictionsRemovalsAndNodeLossAreTold) {
  const std::string k1 = TableKey("11"), k2 = TableKey("22"), k3 = TableKey("33");
  {
    auto s = table_.Lock(HashedKey(k1));
    Publish(s, HashedKey(k1), 2);
  }
  EXPECT_EQ(Drain(), std::vector<std::string>{"stored cpu 11"});
  {
    auto s = table_.Lock(HashedKey(k1));
    s.AddDiskReplica(s.Find(HashedKey(k1)), segments_.RefOf(10, ClientId{1, 1}));  // offloaded
    s.DropMemoryReplicas(s.Find(HashedKey(k1)));                            // evicted from memory
  }
  EXPECT_EQ(Drain(), (std::vector<std::string>{"stored disk 11", "removed cpu 11"}));
  {
    auto s = table_.Lock(HashedKey(k1));
    s.Remove(s.Find(HashedKey(k1)), MissReason::kRemoved);
  }
  EXPECT_EQ(Drain(), std::vector<std::string>{"removed disk 11"});
  // A node lost: the object with a replica elsewhere changes nothing a router sees; the one whose
  // only replica was there is removed.
  {
    auto s = table_.Lock(HashedKey(k2));
    Publish(s, HashedKey(k2), 2);
  }
  {
    auto s = table_.Lock(HashedKey(k3));
    Publish(s, HashedKey(k3), 1);
  }
  Drain();
  const SegmentRef lost = segments_.RefOf(10, ClientId{1, 1});
  for (size_t i = 0; i < table_.shard_count(); ++i) table_.LockShard(i).DropSegment(lost, MissReason::kNodeLost);
  {
    auto s = table_.Lock(HashedKey(k3));
    if (s.Find(HashedKey(k3))) {  // its one replica was on the other segment
      EXPECT_EQ(Drain(), std::vector<std::string>{});
    } else {
      EXPECT_EQ(Drain(), std::vector<std::string>{"removed cpu 33"});
    }
  }
  ASSERT_TRUE(table_.Lock(HashedKey(k2)).Find(HashedKey(k2)));
}

TEST_F(TableEventsTest, ARepairThatBringsAnObjectBackIntoMemoryIsStored) {
  const std::string k = TableKey("44");
  const SegmentRef disk = segments_.RefOf(20, ClientId{2, 2});
  {
    auto s = table_.Lock(HashedKey(k));
    Publish(s, HashedKey(k), 1);
    s.AddDiskReplica(s.Find(HashedKey(k)), disk);
    s.DropMemoryReplicas(s.Find(HashedKey(k)));
  }
  EXPECT_EQ(Drain(), (std::vector<std::string>{"stored cpu 44", "stored disk 44", "removed cpu 44"}));
  auto a = segments_.Allocate(0, 4096, 1, {});
  ASSERT_EQ(a.size(), 1u);
  auto s = table_.Lock(HashedKey(k));
  s.AddRepairReplica(s.Find(HashedKey(k)), a[0]);
  EXPECT_EQ(Drain(), std::vector<std::string>{});  // a copy being made is not readable yet
  ASSERT_TRUE(s.CompleteReplica(s.Find(HashedKey(k)), a[0]));
  EXPECT_EQ(Drain(), std::vector<std::string>{"stored cpu 44"});
}

}  // namespace
}  // namespace yb
