// Puts into reservations (BatchPutCommit; docs/design.md, "Puts into reservations"): a client's
// Put in progress under a name of its own becomes a key's object in one call, as PutEnd would
// publish it; the key is checked as PutStart checks it; the reservation is only its owner's, and
// only while its holder takes new replicas; a reservation never evicts; a client that leaves loses its reservations;
// and a master built from the log sees the object and not the reservation.
#include <gtest/gtest.h>

#include "master/master_test_util.h"

namespace yb {
namespace {

class PutCommitTest : public testing::MasterFixture {
 protected:
  // A reservation of `size` bytes under a name of ctx's own.
  std::string Reserve(uint64_t size, CallContext ctx = {}, ReplicateConfig config = {}) {
    if (ctx.client.empty()) ctx = ctx_;
    const std::string name = std::string(kReservationPrefix) + ctx.client.ToString() + "/" + std::to_string(next_++);
    auto r = master_->PutStart(ctx, name, size, config);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return name;
  }
  PutCommitAnswer Commit(const std::string& key, const std::string& reservation, CallContext ctx = {},
                         MasterApi::Keys start = {}, uint64_t start_size = 0) {
    if (ctx.client.empty()) ctx = ctx_;
    return master_->BatchPutCommit(ctx, {key}, {reservation}, {std::optional<uint64_t>(0xabc)}, {}, start,
                                   std::vector<uint64_t>(start.size(), start_size), {});
  }
  int next_ = 0;
  SegmentId info_segment_ = 0;
};

TEST_F(PutCommitTest, AKeyIsPublishedFromAReservationWithItsReplicasAndTheNextIsStartedInTheSameCall) {
  info_segment_ = Mount("a", 1 << 20);
  const std::string r = Reserve(1000);
  auto where = master_->GetReplicaList(ctx_, r, false);
  EXPECT_FALSE(where.ok());  // a Put in progress: nobody reads it
  EXPECT_EQ(master_->Stats().reservations, 1u);
  EXPECT_EQ(master_->Stats().pending_puts, 0u);
  const uint64_t allocated = master_->Stats().allocated;

  const std::string next = std::string(kReservationPrefix) + ctx_.client.ToString() + "/next";
  auto answer = Commit("k", r, {}, {next}, 1000);
  ASSERT_EQ(answer.ends.size(), 1u);
  ASSERT_TRUE(answer.ends[0].ok()) << answer.ends[0].ToString();
  ASSERT_EQ(answer.started.size(), 1u);
  ASSERT_TRUE(answer.started[0].ok());
  ASSERT_EQ(answer.started[0]->size(), 1u);
  EXPECT_EQ((*answer.started[0])[0].segment, info_segment_);

  auto info = master_->GetReplicaList(ctx_, "k", false);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->size, 1000u);
  EXPECT_EQ(info->checksum, std::optional<uint64_t>(0xabc));
  EXPECT_EQ(info->replicas.size(), 1u);
  EXPECT_EQ(master_->Stats().reservations, 1u);  // the one started; the used one is the object's now
  EXPECT_EQ(master_->Stats().keys, 1u);
  EXPECT_EQ(master_->Stats().allocated, 2 * allocated);
  // The reservation's name is gone, and no miss is remembered under it.
  EXPECT_EQ(master_->WhyMissing(ctx_, r)->reason, MissReason::kNotRemembered);
  // Plain ends and starts go through the same call.
  ASSERT_TRUE(master_->PutStart(ctx_, "own", 10, {}).ok());
  auto plain = master_->BatchPutCommit(ctx_, {"own"}, {}, {}, {}, {}, {}, {});
  ASSERT_TRUE(plain.ends[0].ok()) << plain.ends[0].ToString();
  EXPECT_TRUE(Exists("own"));
}

TEST_F(PutCommitTest, AKeyThatExistsOrIsBeingWrittenIsRefusedAndTheReservationStaysTheCallers) {
  Mount("a", 1 << 20);
  ASSERT_TRUE(Put("taken", 1000).ok());
  ASSERT_TRUE(master_->PutStart(ctx_, "writing", 1000, {}).ok());
  const std::string r = Reserve(1000);
  EXPECT_EQ(Commit("taken", r).ends[0].code(), Code::kObjectAlreadyExists);
  EXPECT_EQ(Commit("writing", r).ends[0].code(), Code::kObjectAlreadyExists);
  EXPECT_EQ(master_->Stats().reservations, 1u);
  ASSERT_TRUE(Commit("free", r).ends[0].ok());  // still usable
  // Used once: gone.
  EXPECT_EQ(Commit("free2", r).ends[0].code(), Code::kObjectNotFound);
  EXPECT_FALSE(Exists("free2"));
}

TEST_F(PutCommitTest, OnlyItsOwnerCommitsAReservationAndOnlyAsANewKey) {
  Mount("a", 1 << 20);
  const CallContext other = Register(ClientId{2, 2});
  const std::string r = Reserve(1000);
  EXPECT_EQ(Commit("k", r, other).ends[0].code(), Code::kIllegalClient);
  EXPECT_FALSE(Exists("k"));
  // Another tenant's client names the same reservation in its own tenant: nothing there.
  const CallContext tenant_b = Register(ClientId{3, 3}, "b");
  EXPECT_EQ(Commit("k", r, tenant_b).ends[0].code(), Code::kObjectNotFound);
  // An upsert's reservation publishes nothing over an existing key this way.
  ASSERT_TRUE(Put("old", 1000).ok());
  const std::string u = std::string(kReservationPrefix) + ctx_.client.ToString() + "/upsert";
  ASSERT_TRUE(master_->UpsertStart(ctx_, u, 1000, {}).ok());
  EXPECT_EQ(Commit("old", u).ends[0].code(), Code::kInvalidParams);
  // Bad shapes of the call are refused per key.
  auto bad = master_->BatchPutCommit(ctx_, {"a", "b"}, {r}, {}, {}, {}, {}, {});
  EXPECT_EQ(bad.ends[0].code(), Code::kInvalidParams);
  EXPECT_EQ(bad.ends[1].code(), Code::kInvalidParams);
  EXPECT_TRUE(Commit("k", r).ends[0].ok());
}

TEST_F(PutCommitTest, AReservationLostToAnUnmountPublishesNothing) {
  const CallContext owner_b = Register(ClientId{2, 2});
  const SegmentId b = Mount("b", 1 << 20, owner_b);
  const std::string r = Reserve(1000);
  ASSERT_TRUE(master_->UnmountSegment(owner_b, b).ok());
  EXPECT_EQ(Commit("k", r).ends[0].code(), Code::kInvalidWrite);
  EXPECT_FALSE(Exists("k"));
  EXPECT_EQ(master_->Stats().reservations, 0u);
}

// Placed before its holder stopped taking new replicas (not heard from): the reservation goes, and
// the caller's Put starts as usual (elsewhere).
TEST_F(PutCommitTest, AReservationOnAHolderNotHeardFromPublishesNothing) {
  const CallContext owner_b = Register(ClientId{2, 2});
  Mount("b", 1 << 20, owner_b);
  const std::string r = Reserve(1000);
  SilenceAllBut({});
  const PutCommitAnswer a = Commit("k", r);
  EXPECT_EQ(a.ends[0].code(), Code::kInvalidWrite);
  EXPECT_NE(a.ends[0].message().find("takes no new replicas"), std::string::npos) << a.ends[0].ToString();
  EXPECT_FALSE(Exists("k"));
  EXPECT_EQ(master_->Stats().reservations, 0u);
}

// A reservation goes where the Puts it serves prefer, or nowhere: placed elsewhere, it would keep
// them from their preferred segment once that takes replicas again.
TEST_F(PutCommitTest, AReservationThatCannotGoWhereItsPutsPreferIsRefused) {
  Mount("a", 1 << 20);
  const CallContext owner_b = Register(ClientId{2, 2});
  Mount("b", 1 << 20, owner_b);
  ReplicateConfig on_b;
  on_b.preferred_segments = {"b"};
  const std::string name = std::string(kReservationPrefix) + ctx_.client.ToString() + "/on-b";
  ASSERT_TRUE(master_->PutStart(ctx_, name, 1000, on_b).ok());
  ASSERT_TRUE(master_->PutRevoke(ctx_, name).ok());
  SilenceAllBut({});  // b's owner not heard from: b takes no new replicas
  EXPECT_EQ(master_->PutStart(ctx_, name + "2", 1000, on_b).status().code(), Code::kNoAvailableHandle);
  EXPECT_TRUE(Put("plain", 1000, on_b).ok());  // a caller's Put goes elsewhere, as before
  EXPECT_EQ(master_->Stats().reservations, 0u);
}

TEST_F(PutCommitTest, AReservationOfALocalPutThatCannotGoOnTheWritersOwnSegmentIsRefused) {
  const SegmentId a = Mount("a", 64 << 10);  // the writer's own
  const CallContext owner_b = Register(ClientId{2, 2});
  Mount("b", 1 << 20, owner_b);
  ReplicateConfig on_a;
  on_a.preferred_segments = {"a"};
  for (int i = 0; i < 8; ++i) {
    ASSERT_TRUE(Put("k" + std::to_string(i), 8192, on_a).ok()) << i;
    ASSERT_EQ(Replicas("k" + std::to_string(i)), std::vector<SegmentId>{a}) << i;
  }
  // "a" is full: a reservation placed on "b" would serve the writer's later
  // local Puts there even once "a" has room again.
  ReplicateConfig local;
  local.prefer_local = true;
  const std::string name = std::string(kReservationPrefix) + ctx_.client.ToString() + "/local";
  EXPECT_EQ(master_->PutStart(ctx_, name, 8192, local).status().code(), Code::kNoAvailableHandle);
  EXPECT_EQ(master_->Stats().reservations, 0u);
  EXPECT_EQ(master_->Stats().keys, 8u);                        // nothing evicted for it
  auto plain = master_->PutStart(ctx_, "plain", 8192, local);  // a caller's Put goes elsewhere, as before
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_NE((*plain)[0].segment, a);
  // Once "a" has room, the reservation goes there.
  ASSERT_TRUE(master_->Remove(ctx_, "k0", false).ok());
  auto again = master_->PutStart(ctx_, name, 8192, local);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ((*again)[0].segment, a);
  EXPECT_EQ(master_->Stats().reservations, 1u);
}

TEST_F(PutCommitTest, AReservationIsRefusedRatherThanEvictAStoredObject) {
  Mount("a", 64 << 10);
  for (int i = 0; i < 16; ++i) ASSERT_TRUE(Put("k" + std::to_string(i), 4000).ok()) << i;
  const uint64_t keys = master_->Stats().keys;
  const std::string name = std::string(kReservationPrefix) + ctx_.client.ToString() + "/full";
  EXPECT_EQ(master_->PutStart(ctx_, name, 8000, {}).status().code(), Code::kNoAvailableHandle);
  EXPECT_EQ(master_->Stats().keys, keys);
  EXPECT_EQ(master_->Stats().puts_refused[static_cast<size_t>(MissReason::kRefusedNoSpace)], 0u);
  // A caller's Put makes room as before.
  EXPECT_TRUE(Put("new", 8000).ok());
  EXPECT_LT(master_->Stats().keys, keys + 1);
}

TEST_F(PutCommitTest, AClientThatLeavesOrDiesLosesItsReservationsAndNotItsPuts) {
  Mount("a", 1 << 20);
  const CallContext writer = Register(ClientId{2, 2});
  (void)Reserve(1000, writer);
  (void)Reserve(2000, writer);
  (void)Reserve(1000);  // another client's
  ASSERT_TRUE(master_->PutStart(writer, "in-progress", 1000, {}).ok());
  EXPECT_EQ(master_->Stats().reservations, 3u);
  ASSERT_TRUE(master_->UnregisterClient(writer).ok());
  EXPECT_EQ(master_->Stats().reservations, 1u);
  // Their names are no keys anyone asks about: their going is not remembered.
  const std::string gone = std::string(kReservationPrefix) + writer.client.ToString() + "/0";
  EXPECT_EQ(master_->WhyMissing(writer, gone)->reason, MissReason::kNotRemembered);
  EXPECT_EQ(master_->Stats().pending_puts, 1u);  // a caller's Put: taken over or reclaimed as before
}

TEST_F(PutCommitTest, AMasterBuiltFromTheLogHasTheObjectAndNotTheReservation) {
  testing::ImageSink sink;
  master_->SetSink(&sink);
  Mount("a", 1 << 20);
  const std::string r = Reserve(1000);
  const std::string kept = Reserve(500);
  ASSERT_TRUE(Commit("k", r).ends[0].ok());
  auto again = MasterService::Create(config_, clock_).value();
  Status loaded = again->Load(sink.image);
  ASSERT_TRUE(loaded.ok()) << loaded.ToString();
  // The object as published (its segment waits for its owner to mount it again, as after any
  // restart), the reservation not used still pending, the one used gone.
  ASSERT_EQ(sink.image.objects.size(), 1u);
  const pb::LogObject& k = sink.image.objects.begin()->second;
  EXPECT_EQ(k.size(), 1000u);
  EXPECT_EQ(k.checksum(), 0xabcu);
  EXPECT_EQ(sink.image.pending.size(), 1u);
  EXPECT_TRUE(again->ExistKey(ctx_, "k").value());
  EXPECT_EQ(again->Stats().reservations, 1u);  // the one not used
  EXPECT_EQ(again->Stats().pending_puts, 0u);
  EXPECT_EQ(again->Stats().allocated, master_->Stats().allocated);
}

}  // namespace
}  // namespace yb
