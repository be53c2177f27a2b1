#include "master/master_service.h"

#include <gtest/gtest.h>

#include <set>
#include <thread>

#include "master/master_test_util.h"

namespace yb {
namespace {

using testing::MasterFixture;
using MasterServiceTest = MasterFixture;

TEST_F(MasterServiceTest, ReaderNeverSeesAnObjectWhileItIsWritten) {
  Mount("a", 1 << 20);
  auto start = master_->PutStart(ctx_, "k", 1000, {});
  ASSERT_TRUE(start.ok());
  ASSERT_EQ(start->size(), 1u);
  EXPECT_EQ((*start)[0].status, ReplicaStatus::kProcessing);
  EXPECT_EQ(master_->GetReplicaList(ctx_, "k", false).code(), Code::kReplicaNotReady);
  EXPECT_FALSE(Exists("k"));
  EXPECT_EQ(master_->Remove(ctx_, "k", false).code(), Code::kReplicaNotReady);
  ASSERT_TRUE(master_->PutEnd(ctx_, "k", 42).ok());
  auto info = master_->GetReplicaList(ctx_, "k", false);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->size, 1000u);
  EXPECT_EQ(info->checksum, 42u);
  ASSERT_EQ(info->replicas.size(), 1u);
  EXPECT_EQ(info->replicas[0].status, ReplicaStatus::kComplete);
  EXPECT_EQ(info->replicas[0].offset, (*start)[0].offset);
}

TEST_F(MasterServiceTest, OnlyTheWriterMayEndOrRevoke) {
  Mount("a", 1 << 20);
  CallContext other = Register(ClientId{9, 9});
  ASSERT_TRUE(master_->PutStart(ctx_, "k", 100, {}).ok());
  EXPECT_EQ(master_->PutEnd(other, "k", std::nullopt).code(), Code::kIllegalClient);
  EXPECT_EQ(master_->PutRevoke(other, "k").code(), Code::kIllegalClient);
  EXPECT_TRUE(master_->PutRevoke(ctx_, "k").ok());
  // Its range is fenced while its write grant lasts (a late write must land in no other object).
  EXPECT_EQ(master_->Stats().allocated, 128u);
  EXPECT_EQ(master_->Stats().held, 128u);
  EXPECT_EQ(master_->PutEnd(ctx_, "k", std::nullopt).code(), Code::kObjectNotFound);
}

TEST_F(MasterServiceTest, ValuesAreImmutableUnlessUpserted) {
  Mount("a", 1 << 20);
  ASSERT_TRUE(Put("k", 100).ok());
  EXPECT_EQ(master_->PutStart(ctx_, "k", 100, {}).code(), Code::kObjectAlreadyExists);
  EXPECT_EQ(master_->PutStart(ctx_, "k", 200, {}).code(), Code::kObjectAlreadyExists);
  EXPECT_EQ(master_->GetReplicaList(ctx_, "k", false)->size, 100u);

  // Upsert: the old value stays readable until PutEnd, then the new one replaces it atomically.
  auto reader = master_->GetReplicaList(ctx_, "k", true);
  ASSERT_TRUE(reader.ok());
  auto up = master_->UpsertStart(ctx_, "k", 300, {});
  ASSERT_TRUE(up.ok());
  EXPECT_EQ(master_->GetReplicaList(ctx_, "k", false)->size, 100u);
  ASSERT_TRUE(master_->PutEnd(ctx_, "k", std::nullopt).ok());
  EXPECT_EQ(master_->GetReplicaList(ctx_, "k", false)->size, 300u);
  // The reader of the old value still holds its bytes (128 + 320 allocated) until it ends.
  EXPECT_EQ(master_->Stats().allocated, 128u + 320u);
  ASSERT_TRUE(master_->ReadEnd(ctx_, "k", reader->read_pin).ok());
  EXPECT_EQ(master_->Stats().allocated, 320u);
}

TEST_F(MasterServiceTest, ReplicasLandOnDistinctSegmentsBestEffort) {
  SegmentId a = Mount("a", 1 << 20), b = Mount("b", 1 << 20), c = Mount("c", 1 << 20);
  ReplicateConfig cfg;
  cfg.replica_num = 3;
  auto r = master_->PutStart(ctx_, "k", 1000, cfg);
  ASSERT_TRUE(r.ok());
  std::set<SegmentId> segs;
  for (auto& d : *r) segs.insert(d.segment);
  EXPECT_EQ(segs, (std::set<SegmentId>{a, b, c}));
  cfg.replica_num = 5;
  auto r2 = master_->PutStart(ctx_, "k2", 1000, cfg);
  ASSERT_TRUE(r2.ok());
  EXPECT_EQ(r2->size(), 3u);
  cfg.replica_num = 1;
  cfg.preferred_segments = {"b"};
  auto r3 = master_->PutStart(ctx_, "k3", 1000, cfg);
  ASSERT_TRUE(r3.ok());
  EXPECT_EQ((*r3)[0].segment, b);
}

TEST_F(MasterServiceTest, LeaseBlocksRemoveAndForceSkipsIt) {
  Mount("a", 1 << 20);
  ASSERT_TRUE(Put("k", 100).ok());
  ASSERT_TRUE(Read("k").ok());  // grants a 10 s lease
  EXPECT_EQ(master_->Remove(ctx_, "k", false).code(), Code::kObjectHasLease);
  clock_.AdvanceSec(9);
  EXPECT_EQ(master_->Remove(ctx_, "k", false).code(), Code::kObjectHasLease);
  clock_.AdvanceSec(2);
  EXPECT_TRUE(master_->Remove(ctx_, "k", false).ok());
  EXPECT_EQ(master_->Remove(ctx_, "k", false).code(), Code::kObjectNotFound);

  ASSERT_TRUE(Put("k2", 100).ok());
  ASSERT_TRUE(Read("k2").ok());
  EXPECT_TRUE(master_->Remove(ctx_, "k2", true).ok());
  EXPECT_FALSE(Exists("k2"));
}

// Fault (b) of Mooncake: a read that outlives its lease must not fail, and its bytes must not be
// reused until it ends.
TEST_F(MasterServiceTest, ReadOutlivingItsLeaseKeepsItsBytes) {
  Mount("a", 4096);
  ASSERT_TRUE(Put("k", 4096).ok());
  auto info = master_->GetReplicaList(ctx_, "k", true);
  ASSERT_TRUE(info.ok());
  ASSERT_NE(info->read_pin, 0u);
  clock_.AdvanceSec(3600);  // far past the 10 s lease
  // Not removable without force, not evictable, and force does not free the bytes.
  EXPECT_EQ(master_->Remove(ctx_, "k", false).code(), Code::kObjectHasLease);
  master_->evictor().EvictBytes(4096);
  EXPECT_TRUE(Exists("k"));
  EXPECT_TRUE(master_->Remove(ctx_, "k", true).ok());
  EXPECT_FALSE(Exists("k"));
  EXPECT_EQ(master_->PutStart(ctx_, "new", 4096, {}).code(), Code::kNoAvailableHandle);
  // The read ends (successfully, whatever the clock says); only then is the space reusable.
  EXPECT_TRUE(master_->ReadEnd(ctx_, "k", info->read_pin).ok());
  EXPECT_EQ(master_->ReadEnd(ctx_, "k", info->read_pin).code(), Code::kInvalidParams);
  EXPECT_TRUE(Put("new", 4096).ok());
}

TEST_F(MasterServiceTest, DeadClientsReadPinsAreReleased) {
  Mount("a", 4096);
  ASSERT_TRUE(Put("k", 4096).ok());
  CallContext reader = Register(ClientId{5, 5});
  auto info = master_->GetReplicaList(reader, "k", true);
  ASSERT_TRUE(info.ok());
  ASSERT_TRUE(master_->Remove(ctx_, "k", true).ok());
  clock_.AdvanceSec(5);
  ASSERT_TRUE(master_->Ping(ctx_).ok());
  EXPECT_EQ(master_->LivenessOnce(), 0u);
  EXPECT_EQ(master_->Stats().allocated, 4096u);
  clock_.AdvanceSec(6);  // reader silent for 11 s > client_ttl 10 s
  ASSERT_TRUE(master_->Ping(ctx_).ok());
  EXPECT_EQ(master_->LivenessOnce(), 1u);
  EXPECT_EQ(master_->Stats().allocated, 0u);
}

// Liveness judged fairly: a master that did not run for a while (SIGSTOP, a VM pause) judges no
// client by the silence it could not hear, and gives every one a fresh TTL; silence while it runs
// is judged as before.
TEST(MasterLivenessTest, AGapInTheMastersOwnRunsGivesEveryClientAFreshTtl) {
  ManualClock clock;
  MasterConfig mc;
  mc.client_ttl_sec = 3;
  mc.liveness_max_gap_ms = 1000;
  auto master = MasterService::Create(mc, clock).value();
  CallContext a = master->RegisterClient({ClientId{1, 1}, "a", "default"}).value();
  CallContext b = master->RegisterClient({ClientId{2, 2}, "b", "default"}).value();
  ASSERT_TRUE(master->MountSegment(a, {1, "a", 0x10000000, 1 << 20, "local"}).ok());
  ASSERT_TRUE(master->MountSegment(b, {2, "b", 0x20000000, 1 << 20, "local"}).ok());
  ASSERT_TRUE(master->PutStart(a, "k", 100, {}).ok());
  ASSERT_TRUE(master->PutEnd(a, "k", std::nullopt).ok());
  EXPECT_EQ(master->LivenessOnce(), 0u);
  // Paused for 8 s (its checks run every 200 ms): nobody was heard, nobody is judged.
  clock.Advance(8000);
  EXPECT_EQ(master->LivenessOnce(), 0u);
  EXPECT_EQ(master->Stats().live_clients, 2u);
  EXPECT_EQ(master->Stats().liveness_gaps, 1u);
  EXPECT_TRUE(master->ExistKey(a, "k").value());
  // Running again, b pings and a does not: a is declared dead once its fresh TTL has passed.
  for (int t = 0; t < 20; ++t) {  // 4 s in steps of 200 ms
    clock.Advance(200);
    ASSERT_TRUE(master->Ping(b).ok());
    master->LivenessOnce();
  }
  EXPECT_EQ(master->Stats().live_clients, 1u);
  EXPECT_EQ(master->Stats().liveness_gaps, 1u);
  EXPECT_EQ(master->Stats().segments, 1u);
}

// The same when the threads that receive the clients' calls stall (the liveness check runs, but
// no ping could be read meanwhile).
TEST(MasterLivenessTest, AStallOfTheReceivingThreadsGivesEveryClientAFreshTtl) {
  ManualClock clock;
  std::atomic<int64_t> stall{0};
  MasterConfig mc;
  mc.client_ttl_sec = 3;
  mc.liveness_max_gap_ms = 1000;
  mc.receive_stall_ms = [&] { return stall.load(); };
  auto master = MasterService::Create(mc, clock).value();
  CallContext a = master->RegisterClient({ClientId{1, 1}, "a", "default"}).value();
  ASSERT_TRUE(master->MountSegment(a, {1, "a", 0x10000000, 1 << 20, "local"}).ok());
  for (int t = 0; t < 20; ++t) {  // 4 s of checks every 200 ms, the receiving threads stuck
    clock.Advance(200);
    stall = (t + 1) * 200;
    EXPECT_EQ(master->LivenessOnce(), 0u);
  }
  EXPECT_EQ(master->Stats().live_clients, 1u);
  EXPECT_GE(master->Stats().liveness_gaps, 1u);
  stall = 0;  // turning again: silence from now on is judged
  for (int t = 0; t < 20; ++t) {
    clock.Advance(200);
    master->LivenessOnce();
  }
  EXPECT_EQ(master->Stats().live_clients, 0u);
}

// A live reader whose ReadEnd was lost: each heartbeat names the pins it holds, and a pin that two
// heartbeats stating pins in a row left out is ended (the removed object's bytes are freed), while
// one still named holds however long the read takes. Heartbeats that state nothing end nothing.
TEST_F(MasterServiceTest, AReadPinHoldsWhileItsReaderNamesItAndEndsTwoHeartbeatsAfter) {
  Mount("a", 8192);
  ASSERT_TRUE(Put("k", 4096).ok());
  ASSERT_TRUE(Put("slow", 4096).ok());
  CallContext reader = Register(ClientId{5, 5});
  auto lost = master_->GetReplicaList(reader, "k", true);
  auto held = master_->GetReplicaList(reader, "slow", true);
  ASSERT_TRUE(lost.ok() && held.ok());
  ASSERT_TRUE(master_->Remove(ctx_, "k", true).ok());
  ASSERT_TRUE(master_->Remove(ctx_, "slow", true).ok());
  EXPECT_EQ(master_->Stats().allocated, 8192u);  // both zombies, pinned

  auto ping = [&](bool stated, std::vector<HeldPin> pins) {
    ASSERT_TRUE(master_->Ping(reader, PingState{0, stated, std::move(pins), {}}).ok());
    master_->RunBackgroundOnce();
  };
  for (int i = 0; i < 5; ++i) ping(false, {});  // an older client states nothing: nothing ends
  EXPECT_EQ(master_->Stats().allocated, 8192u);
  ping(true, {{"slow", held->read_pin}});
  // One heartbeat without it is not enough: it may have been sent before the pin's answer came.
  EXPECT_EQ(master_->Stats().allocated, 8192u);
  ping(true, {{"slow", held->read_pin}});
  EXPECT_EQ(master_->Stats().allocated, 4096u);  // "k" unnamed twice: its bytes are back
  EXPECT_EQ(master_->Stats().stale_pins_released, 1u);
  for (int i = 0; i < 10; ++i) ping(true, {{"slow", held->read_pin}});
  EXPECT_EQ(master_->Stats().allocated, 4096u);  // "slow" is named: held
  EXPECT_TRUE(master_->ReadEnd(reader, "slow", held->read_pin).ok());
  EXPECT_EQ(master_->Stats().allocated, 0u);
  // The late ReadEnd of the pin already ended is refused, and changes nothing.
  EXPECT_FALSE(master_->ReadEnd(reader, "k", lost->read_pin).ok());
  EXPECT_EQ(master_->Stats().stale_pins_released, 1u);
}

// A client that says it leaves is forgotten at once, as a dead one is after client_ttl: it stops
// counting as live, its read pins end and what it still has mounted is unmounted.
TEST_F(MasterServiceTest, ALeavingClientIsForgottenAtOnce) {
  Mount("a", 4096);
  CallContext holder = Register(ClientId{6, 6});
  Mount("b", 8192, holder);
  ASSERT_TRUE(Put("k", 4096).ok());
  CallContext reader = Register(ClientId{5, 5});
  auto info = master_->GetReplicaList(reader, "k", true);
  ASSERT_TRUE(info.ok());
  ASSERT_TRUE(master_->Remove(ctx_, "k", true).ok());
  EXPECT_EQ(master_->Stats().live_clients, 3u);
  EXPECT_EQ(master_->Stats().allocated, 4096u);  // the reader's pin holds the bytes

  EXPECT_TRUE(master_->UnregisterClient(reader).ok());
  EXPECT_EQ(master_->Stats().live_clients, 2u);
  EXPECT_EQ(master_->Stats().allocated, 0u);
  EXPECT_TRUE(master_->UnregisterClient(holder).ok());
  auto segs = master_->ListSegments();
  ASSERT_TRUE(segs.ok());
  ASSERT_EQ(segs->size(), 1u);
  EXPECT_EQ(segs->front().desc.name, "a");
  EXPECT_EQ(master_->Stats().live_clients, 1u);
  EXPECT_TRUE(master_->UnregisterClient(reader).ok());  // again, or never known: still OK
  // Coming back is registering again, like a client declared dead.
  EXPECT_TRUE(master_->Ping(reader)->need_remount);
}

TEST_F(MasterServiceTest, UnfinishedPutIsTakenOverAfter30sAndReclaimedAfter600s) {
  Mount("a", 1 << 20);
  CallContext slow = Register(ClientId{3, 3});
  CallContext other = Register(ClientId{4, 4});
  ASSERT_TRUE(master_->PutStart(slow, "k", 1000, {}).ok());
  clock_.AdvanceSec(29);
  EXPECT_EQ(master_->PutStart(other, "k", 1000, {}).code(), Code::kObjectAlreadyExists);
  clock_.AdvanceSec(2);
  ASSERT_TRUE(master_->PutStart(other, "k", 1000, {}).ok());
  EXPECT_EQ(master_->PutEnd(slow, "k", std::nullopt).code(), Code::kIllegalClient);
  ASSERT_TRUE(master_->PutEnd(other, "k", std::nullopt).ok());
  // The slow writer may still be copying into its old range: it is kept until 600 s.
  EXPECT_EQ(master_->Stats().allocated, 2 * 1024u);
  clock_.AdvanceSec(500);
  EXPECT_EQ(master_->ReclaimOnce(), 0u);
  clock_.AdvanceSec(70);  // 601 s after the first PutStart
  EXPECT_EQ(master_->ReclaimOnce(), 1u);
  EXPECT_EQ(master_->Stats().allocated, 1024u);

  // A Put left unfinished with nobody taking over is reclaimed after 600 s.
  ASSERT_TRUE(master_->PutStart(slow, "lonely", 1000, {}).ok());
  clock_.AdvanceSec(599);
  EXPECT_EQ(master_->ReclaimOnce(), 0u);
  clock_.AdvanceSec(2);
  EXPECT_EQ(master_->ReclaimOnce(), 1u);
  EXPECT_EQ(master_->Stats().allocated, 1024u);
  EXPECT_EQ(master_->Stats().pending_puts, 0u);
}

TEST_F(MasterServiceTest, AnUnfinishedPutOfAWriterThatIsGoneIsTakenOverAtOnce) {
  Mount("a", 1 << 20);
  CallContext gone = Register(ClientId{3, 3});
  CallContext other = Register(ClientId{4, 4});
  ASSERT_TRUE(master_->PutStart(gone, "k", 1000, {}).ok());
  EXPECT_EQ(master_->PutStart(other, "k", 1000, {}).code(), Code::kObjectAlreadyExists);  // alive: its own
  clock_.AdvanceSec(config_.client_ttl_sec);  // live writers have had time to register again
  EXPECT_EQ(master_->PutStart(other, "k", 1000, {}).code(), Code::kObjectAlreadyExists);
  ASSERT_TRUE(master_->UnregisterClient(gone).ok());  // as one declared dead is forgotten
  ASSERT_TRUE(master_->PutStart(other, "k", 1000, {}).ok());
  ASSERT_TRUE(master_->PutEnd(other, "k", std::nullopt).ok());
  EXPECT_EQ(master_->GetReplicaList(other, "k", false)->size, 1000u);
}

TEST_F(MasterServiceTest, UnmountDropsReplicasAndObjectsLeftWithNone) {
  CallContext owner_b = Register(ClientId{2, 2});
  Mount("a", 1 << 20);
  SegmentId b = Mount("b", 1 << 20, owner_b);
  PutBothAndOnlyOn("b", "both", "only_b", 100);
  ASSERT_EQ(master_->GetReplicaList(ctx_, "only_b", false)->replicas[0].segment, b);

  EXPECT_EQ(master_->UnmountSegment(ctx_, b).code(), Code::kIllegalClient);  // not the owner
  ASSERT_TRUE(master_->UnmountSegment(owner_b, b).ok());
  EXPECT_FALSE(Exists("only_b"));
  auto both = master_->GetReplicaList(ctx_, "both", false);
  ASSERT_TRUE(both.ok());
  ASSERT_EQ(both->replicas.size(), 1u);
  EXPECT_NE(both->replicas[0].segment, b);
  EXPECT_EQ(master_->UnmountSegment(owner_b, b).code(), Code::kSegmentNotFound);
}

TEST_F(MasterServiceTest, SilentClientIsDeclaredDeadAndItsSegmentsUnmounted) {
  CallContext owner_b = Register(ClientId{2, 2});
  Mount("a", 1 << 20);
  Mount("b", 1 << 20, owner_b);
  ReplicateConfig on_b;
  on_b.preferred_segments = {"b"};
  ASSERT_TRUE(Put("kb", 100, on_b).ok());
  for (int i = 0; i < 12; ++i) {
    clock_.AdvanceSec(1);
    ASSERT_TRUE(master_->Ping(ctx_).ok());
    master_->LivenessOnce();
  }
  EXPECT_EQ(master_->Stats().segments, 1u);
  EXPECT_FALSE(Exists("kb"));
  auto pong = master_->Ping(owner_b);  // it comes back: told to re-mount
  ASSERT_TRUE(pong.ok());
  EXPECT_TRUE(pong->need_remount);
  EXPECT_FALSE(master_->Ping(owner_b)->need_remount);
}

// A client mounting its segments one by one is declared dead half-way (its first segment goes);
// the next mount is accepted, and its next ping tells it to re-mount, so the first comes back.
TEST_F(MasterServiceTest, AClientDeclaredDeadBetweenTwoMountsIsToldToRemount) {
  CallContext late = Register(ClientId{2, 2});
  SegmentMount first{501, "late", 0x10000000ULL, 1 << 20, "local"};
  SegmentMount second{502, "late", 0x20000000ULL, 1 << 20, "local"};
  ASSERT_TRUE(master_->MountSegment(late, first).ok());
  clock_.AdvanceSec(11);
  ASSERT_TRUE(master_->Ping(ctx_).ok());
  EXPECT_EQ(master_->LivenessOnce(), 1u);
  EXPECT_EQ(master_->Stats().segments, 0u);
  ASSERT_TRUE(master_->MountSegment(late, second).ok());
  EXPECT_EQ(master_->Stats().segments, 1u);
  auto pong = master_->Ping(late);
  ASSERT_TRUE(pong.ok());
  EXPECT_TRUE(pong->need_remount);
  ASSERT_TRUE(master_->RegisterClient({late.client, "host", "default", false, late.token}).ok());
  ASSERT_TRUE(master_->MountSegments(late, {first, second}).ok());  // the second again: a no-op
  EXPECT_EQ(master_->Stats().segments, 2u);
  EXPECT_FALSE(master_->Ping(late)->need_remount);
}

// A storage daemon restarted on its port (same name, same endpoint) before the master declared the
// old process dead: the old one's segments and what was on them go, and the new one mounts.
TEST_F(MasterServiceTest, ANewProcessAtAnOldOnesEndpointReplacesItsSegments) {
  CallContext old_proc = Register(ClientId{2, 2}), new_proc = Register(ClientId{3, 3});
  SegmentMount a{{601, "n:9", 0x10000000ULL, 1 << 20, "n:9"}, 11};
  ASSERT_TRUE(master_->MountSegment(old_proc, a).ok());
  ASSERT_TRUE(Put("k", 1000).ok());
  SegmentMount b{{602, "n:9", 0x10000000ULL, 1 << 20, "n:9"}, 12};
  ASSERT_TRUE(master_->MountSegment(new_proc, b).ok());
  EXPECT_EQ(master_->Stats().segments, 1u);
  EXPECT_FALSE(Exists("k"));  // its only replica was in the old process's memory
  // Another endpoint under a name in use: refused, nothing dropped.
  ASSERT_TRUE(Put("k2", 1000).ok());
  SegmentMount c{{603, "n:9", 0x10000000ULL, 1 << 20, "m:9"}, 13};
  EXPECT_EQ(master_->MountSegment(old_proc, c).code(), Code::kSegmentAlreadyExists);
  EXPECT_TRUE(Exists("k2"));
  EXPECT_EQ(master_->Stats().segments, 1u);
}

// A client told to re-mount whose answer was lost (the master stalled past client_ttl and the
// client's call timed out): every later heartbeat that states the segments it holds is told again,
// until the master serves from all of them.
TEST_F(MasterServiceTest, ARemountRequestIsRepeatedUntilTheSegmentsAreBack) {
  CallContext c = Register(ClientId{2, 2});
  SegmentMount s1{{701, "c", 0x10000000ULL, 1 << 20, "local"}, 1}, s2{{702, "c", 0x20000000ULL, 1 << 20, "local"}, 1};
  ASSERT_TRUE(master_->MountSegments(c, {s1, s2}).ok());
  EXPECT_FALSE(master_->Ping(c, 2)->need_remount);
  clock_.AdvanceSec(11);
  ASSERT_TRUE(master_->Ping(ctx_).ok());
  EXPECT_EQ(master_->LivenessOnce(), 1u);
  EXPECT_TRUE(master_->Ping(c, 2)->need_remount);   // this answer is lost
  EXPECT_TRUE(master_->Ping(c, 2)->need_remount);   // asked again
  EXPECT_FALSE(master_->Ping(c, 0)->need_remount);  // a caller that states nothing is not
  ASSERT_TRUE(master_->RegisterClient({c.client, "host", "default", false, c.token}).ok());
  ASSERT_TRUE(master_->MountSegments(c, {s1}).ok());  // half of it
  EXPECT_TRUE(master_->Ping(c, 2)->need_remount);
  ASSERT_TRUE(master_->MountSegments(c, {s1, s2}).ok());
  EXPECT_FALSE(master_->Ping(c, 2)->need_remount);
}

// A Put that asks for it (Python's prefer_alloc_in_same_node) gets local_first's placement under
// the default strategy: its first replica on the writer's own segment.
TEST_F(MasterServiceTest, APutThatPrefersItsNodeGetsItsOwnSegmentFirst) {
  CallContext w = Register(ClientId{21, 21}), far = Register(ClientId{23, 23});
  SegmentMount mine{{801, "h1:1", 0x10000000ULL, 1 << 20, "h1:1"}, 1};
  SegmentMount remote{{803, "h2:1", 0x30000000ULL, 1 << 20, "h2:1"}, 1};
  ASSERT_TRUE(master_->MountSegment(w, mine).ok());
  ASSERT_TRUE(master_->MountSegment(far, remote).ok());
  int local = 0, plain_local = 0;
  for (int i = 0; i < 30; ++i) {
    ReplicateConfig near;
    near.prefer_local = true;
    auto one = master_->PutStart(w, "near" + std::to_string(i), 1000, near);
    ASSERT_TRUE(one.ok());
    local += (*one)[0].segment == 801u;
    auto plain = master_->PutStart(w, "plain" + std::to_string(i), 1000, {});
    ASSERT_TRUE(plain.ok());
    plain_local += (*plain)[0].segment == 801u;
  }
  EXPECT_EQ(local, 30);
  EXPECT_LT(plain_local, 30);  // random placement without it
}

// local_first (Mooncake's third strategy): a writer's first replica goes to its own segment, or
// else to another process on its host; further replicas still to other hosts first.
TEST_F(MasterServiceTest, LocalFirstPutsTheFirstReplicaOnTheWritersOwnSegmentThenItsHost) {
  MasterConfig c;
  c.allocation_strategy = "local_first";
  Reset(c);
  CallContext w = Register(ClientId{21, 21}), n = Register(ClientId{22, 22}), far = Register(ClientId{23, 23});
  SegmentMount mine{{801, "h1:1", 0x10000000ULL, 1 << 20, "h1:1"}, 1};
  SegmentMount neighbour{{802, "h1:2", 0x20000000ULL, 1 << 20, "h1:2"}, 1};
  SegmentMount remote{{803, "h2:1", 0x30000000ULL, 1 << 20, "h2:1"}, 1};
  ASSERT_TRUE(master_->MountSegment(w, mine).ok());
  ASSERT_TRUE(master_->MountSegment(n, neighbour).ok());
  ASSERT_TRUE(master_->MountSegment(far, remote).ok());
  for (int i = 0; i < 20; ++i) {
    auto one = master_->PutStart(w, "one" + std::to_string(i), 1000, {});
    ASSERT_TRUE(one.ok());
    EXPECT_EQ((*one)[0].segment, 801u);
    ReplicateConfig two;
    two.replica_num = 2;
    auto pair = master_->PutStart(w, "two" + std::to_string(i), 1000, two);
    ASSERT_TRUE(pair.ok());
    ASSERT_EQ(pair->size(), 2u);
    EXPECT_EQ((*pair)[0].segment, 801u);
    EXPECT_EQ((*pair)[1].segment, 803u);  // the other host, not the neighbour
  }
  // Its own segment full: the neighbour on its host.
  ASSERT_TRUE(master_->UnmountSegment(w, 801).ok());
  SegmentMount tiny{{804, "h1:1", 0x40000000ULL, 4096, "h1:1"}, 2};
  ASSERT_TRUE(master_->MountSegment(w, tiny).ok());
  auto big = master_->PutStart(w, "big", 100000, {});
  ASSERT_TRUE(big.ok());
  EXPECT_EQ((*big)[0].segment, 802u);
  EXPECT_EQ(MasterService::Create(
                [] {
                  MasterConfig bad;
                  bad.allocation_strategy = "nearest";
                  return bad;
                }(),
                clock_)
                .status()
                .code(),
            Code::kInvalidParams);
}

TEST_F(MasterServiceTest, TenantQuotasBoundBytesAndNamespacesKeys) {
  Mount("a", 1 << 20);
  Mount("b", 1 << 20);
  ASSERT_TRUE(master_->SetTenantQuota("small", 3000).ok());
  CallContext small = Register(ClientId{6, 6}, "small");
  ASSERT_TRUE(Put("x", 1000, {}, small).ok());
  ReplicateConfig two;
  two.replica_num = 2;
  ASSERT_TRUE(Put("y", 1000, two, small).ok());  // exactly at quota
  EXPECT_EQ(Put("z", 1, {}, small).code(), Code::kTenantQuotaExceeded);
  EXPECT_EQ(master_->TenantUsed(small.tenant), 3000u);
  // Same key, other tenant: a different object.
  EXPECT_FALSE(Exists("x"));
  ASSERT_TRUE(Put("x", 50).ok());
  ASSERT_TRUE(master_->Remove(small, "x", false).ok());
  EXPECT_TRUE(Exists("x"));
  EXPECT_EQ(master_->TenantUsed(small.tenant), 2000u);
  ASSERT_TRUE(Put("z", 1000, {}, small).ok());
  EXPECT_EQ(*master_->RemoveAll(small, false), 2u);
  EXPECT_EQ(master_->TenantUsed(small.tenant), 0u);
  EXPECT_TRUE(Exists("x"));
}

// Mooncake's routing groups: a group's objects go to the segment of its last one while they fit
// there, whatever segment the strategy would pick; a full home sends the next elsewhere, which
// becomes the group's home. Explicit preferred segments win over the group.
TEST_F(MasterServiceTest, AGroupsObjectsLandTogetherWhereTheyFit) {
  std::vector<CallContext> owners;
  for (int i = 0; i < 4; ++i) {
    owners.push_back(Register(ClientId{10, static_cast<uint64_t>(i + 1)}));
    Mount("seg" + std::to_string(i), 64 << 10, owners.back());
  }
  auto segment_of = [&](const std::string& key) {
    auto info = master_->GetReplicaList(ctx_, key, false);
    EXPECT_TRUE(info.ok()) << key;
    return info.ok() ? info->replicas[0].segment : SegmentId{0};
  };
  ReplicateConfig g;
  g.group_ids = {"g"};
  ASSERT_TRUE(Put("g0", 4096, g).ok());
  const SegmentId home = segment_of("g0");
  for (int i = 1; i < 16; ++i) {
    ASSERT_TRUE(Put("g" + std::to_string(i), 4096, g).ok());
    EXPECT_EQ(segment_of("g" + std::to_string(i)), home) << i;  // 16 x 4 KiB: all fit in 64 KiB
  }
  // Without a group the same puts spread (the strategy balances segments): the group placed them.
  std::set<SegmentId> spread;
  for (int i = 0; i < 8; ++i) {
    ASSERT_TRUE(Put("free" + std::to_string(i), 512).ok());
    spread.insert(segment_of("free" + std::to_string(i)));
  }
  EXPECT_GT(spread.size(), 1u);
  // A batch names one group per key; "" is none.
  ReplicateConfig batch;
  batch.group_ids = {"g", "", "g"};
  auto starts = master_->BatchPutStart(ctx_, {"b0", "b1", "b2"}, {100, 100, 100}, batch);
  ASSERT_TRUE(starts[0].ok() && starts[1].ok() && starts[2].ok());
  // The home is full (16 x 4 KiB, plus the batch's): the group's next object goes elsewhere, and
  // the group follows it there.
  ASSERT_TRUE(Put("g-next", 4096, g).ok());
  const SegmentId moved = segment_of("g-next");
  EXPECT_NE(moved, home);
  ASSERT_TRUE(Put("g-after", 100, g).ok());
  EXPECT_EQ(segment_of("g-after"), moved);
  // Explicit preferred segments win; group ids that do not name one per key are refused.
  ReplicateConfig pinned = g;
  pinned.preferred_segments = {"seg3"};
  ASSERT_TRUE(Put("g-pinned", 100, pinned).ok());
  auto listed = master_->ListSegments();
  ASSERT_TRUE(listed.ok());
  for (const auto& u : *listed) {
    if (u.desc.name == "seg3") {
      EXPECT_EQ(segment_of("g-pinned"), u.desc.id);
    }
  }
  ReplicateConfig two = g;
  two.group_ids = {"g", "h"};
  EXPECT_EQ(Put("bad", 100, two).code(), Code::kInvalidParams);
  EXPECT_EQ(master_->BatchPutStart(ctx_, {"x", "y"}, {1, 1}, g)[1].code(), Code::kInvalidParams);
}

TEST_F(MasterServiceTest, BatchCallsAnswerEachKeyOnItsOwn) {
  Mount("a", 1 << 20);
  ASSERT_TRUE(Put("exists", 100).ok());
  std::vector<std::string> keys = {"new1", "exists", "", "new2"};
  auto starts = master_->BatchPutStart(ctx_, keys, {100, 100, 100, 100}, {});
  ASSERT_EQ(starts.size(), 4u);
  EXPECT_TRUE(starts[0].ok());
  EXPECT_EQ(starts[1].code(), Code::kObjectAlreadyExists);
  EXPECT_EQ(starts[2].code(), Code::kInvalidKey);
  EXPECT_TRUE(starts[3].ok());
  auto ends = master_->BatchPutEnd(ctx_, {"new1", "new2", "nothing"}, {});
  EXPECT_TRUE(ends[0].ok());
  EXPECT_TRUE(ends[1].ok());
  EXPECT_EQ(ends[2].code(), Code::kObjectNotFound);
  auto exist = master_->BatchExistKey(ctx_, {"new1", "missing", ""});
  EXPECT_TRUE(*exist[0]);
  EXPECT_FALSE(*exist[1]);
  EXPECT_EQ(exist[2].code(), Code::kInvalidKey);
  auto gets = master_->BatchGetReplicaList(ctx_, {"new2", "missing"}, true);
  EXPECT_TRUE(gets[0].ok());
  EXPECT_EQ(gets[1].code(), Code::kObjectNotFound);
  auto read_end = master_->BatchReadEnd(ctx_, {"new2", "missing"}, {gets[0]->read_pin, 77});
  EXPECT_TRUE(read_end[0].ok());
  EXPECT_EQ(read_end[1].code(), Code::kInvalidParams);
  EXPECT_EQ(master_->BatchPutStart(ctx_, {"a", "b"}, {1}, {})[0].code(), Code::kInvalidParams);
  clock_.AdvanceSec(11);
  auto rm = master_->BatchRemove(ctx_, {"new1", "missing"}, false);
  EXPECT_TRUE(rm[0].ok());
  EXPECT_EQ(rm[1].code(), Code::kObjectNotFound);
}

TEST_F(MasterServiceTest, BadInputGivesClearErrorsAndChangesNothing) {
  Mount("a", 1 << 20);
  ASSERT_TRUE(Put("keep", 100).ok());
  auto before = master_->Stats();
  EXPECT_EQ(master_->PutStart(ctx_, "", 100, {}).code(), Code::kInvalidKey);
  EXPECT_EQ(master_->PutStart(ctx_, std::string(kMaxKeyLength + 1, 'k'), 100, {}).code(), Code::kInvalidKey);
  EXPECT_EQ(master_->PutStart(ctx_, "k", 0, {}).code(), Code::kInvalidParams);
  auto too_big = master_->PutStart(ctx_, "k", (1 << 20) + 1, {});
  EXPECT_EQ(too_big.code(), Code::kInvalidParams);
  EXPECT_NE(too_big.status().message().find("larger than the largest segment"), std::string::npos);
  ReplicateConfig zero;
  zero.replica_num = 0;
  EXPECT_EQ(master_->PutStart(ctx_, "k", 100, zero).code(), Code::kInvalidParams);
  EXPECT_EQ(master_->UnmountSegment(ctx_, 424242).code(), Code::kSegmentNotFound);
  EXPECT_EQ(master_->GetReplicaList(ctx_, "", false).code(), Code::kInvalidKey);
  EXPECT_EQ(master_->RemoveByRegex(ctx_, "([", false).code(), Code::kInvalidParams);
  CallContext bad_tenant{ClientId{1, 1}, 999};
  EXPECT_EQ(master_->PutStart(bad_tenant, "k", 100, {}).code(), Code::kTenantNotRegistered);
  SegmentMount empty{555, "z", 0, 0, "local"};
  EXPECT_EQ(master_->MountSegment(ctx_, empty).code(), Code::kInvalidParams);
  auto after = master_->Stats();
  EXPECT_EQ(after.keys, before.keys);
  EXPECT_EQ(after.allocated, before.allocated);
  EXPECT_EQ(after.segments, before.segments);
  EXPECT_EQ(after.pending_puts, 0u);
  EXPECT_TRUE(Exists("keep"));
}

TEST_F(MasterServiceTest, BadConfigurationIsRefused) {
  ManualClock clock;
  MasterConfig c;
  c.eviction_high_watermark_ratio = 1.5;
  EXPECT_EQ(MasterService::Create(c, clock).code(), Code::kInvalidParams);
  c = {};
  c.allocation_strategy = "nope";
  EXPECT_EQ(MasterService::Create(c, clock).code(), Code::kInvalidParams);
  c = {};
  c.put_start_release_timeout_sec = 10;
  EXPECT_EQ(MasterService::Create(c, clock).code(), Code::kInvalidParams);
}

TEST_F(MasterServiceTest, RemoveByRegexMatchesKeysAndRespectsLeases) {
  Mount("a", 1 << 20);
  for (const char* k : {"model@1@aa", "model@1@bb", "model@2@cc", "other"}) ASSERT_TRUE(Put(k, 10).ok());
  ASSERT_TRUE(Read("model@1@bb").ok());  // leased
  auto n = master_->RemoveByRegex(ctx_, "^model@1@", false);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 1u);
  EXPECT_TRUE(Exists("model@1@bb"));
  EXPECT_EQ(*master_->RemoveByRegex(ctx_, "^model@", true), 2u);
  EXPECT_TRUE(Exists("other"));
}

// Patterns a caller sends cannot stall or crash the master: `(.*)*c` against a long key (minutes
// with std::regex's backtracking) and a 4 KiB pattern of one letter (std::regex recursed per
// character and overflowed the stack at 128 KiB) are answered at once; a longer pattern is refused.
TEST_F(MasterServiceTest, RegexPatternsRunInLinearTimeAndAreBounded) {
  Mount("a", 1 << 20);
  ASSERT_TRUE(Put(std::string(22, 'a'), 10).ok());
  ASSERT_TRUE(Put(std::string(2000, 'a') + "c", 10).ok());
  auto n = master_->RemoveByRegex(ctx_, "(.*)*c", true);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, 1u);
  EXPECT_EQ(*master_->RemoveByRegex(ctx_, std::string(4096, 'a'), true), 0u);
  auto too_long = master_->RemoveByRegex(ctx_, std::string(4097, 'a'), true);
  EXPECT_EQ(too_long.status().code(), Code::kInvalidParams);
  EXPECT_NE(too_long.status().message().find("exceeds 4096"), std::string::npos);
  EXPECT_EQ(master_->RemoveByRegex(ctx_, "(a)\\1", true).status().code(), Code::kInvalidParams);  // no backreferences
  EXPECT_EQ(*master_->RemoveByRegex(ctx_, "^a{22}$", true), 1u);
}

// Concurrent writers, readers and removers on shared keys: a smoke test for the sanitizers; the
// accounting must balance at the end.
TEST_F(MasterServiceTest, ConcurrentOperationsKeepAccountingConsistent) {
  Mount("a", 64 << 20);
  Mount("b", 64 << 20);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      CallContext ctx{ClientId{100, static_cast<uint64_t>(t + 1)}, 0};
      for (int i = 0; i < 2000; ++i) {
        std::string key = "k" + std::to_string(i % 97);
        switch ((i + t) % 4) {
          case 0:
            if (master_->PutStart(ctx, key, 1000, {}).ok()) (void)master_->PutEnd(ctx, key, std::nullopt);
            break;
          case 1: {
            auto info = master_->GetReplicaList(ctx, key, true);
            if (info.ok()) (void)master_->ReadEnd(ctx, key, info->read_pin);
            break;
          }
          case 2:
            (void)master_->Remove(ctx, key, true);
            break;
          default:
            (void)master_->ExistKey(ctx, key);
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  auto st = master_->Stats();
  EXPECT_EQ(st.allocated, st.keys * 1024);
  EXPECT_EQ(st.pending_puts, 0u);
  EXPECT_EQ(*master_->RemoveAll(ctx_, true), st.keys);
  EXPECT_EQ(master_->Stats().allocated, 0u);
  EXPECT_EQ(master_->TenantUsed(0), 0u);
}

// A Put's reservation carries write grants for its ranges only, a Get's replicas read grants, each
// minted with the key the owner gave at mount (issue 22 item 3); the key is never listed.
TEST_F(MasterServiceTest, ReplicasCarryGrantsForTheirOwnRangeAndAccess) {
  const std::string key = NewGrantKey();
  SegmentMount d{{42, "owner", 0x10000000, 1 << 20, "127.0.0.1:1"}, 1, key};
  ASSERT_TRUE(master_->MountSegment(ctx_, d).ok());
  SegmentMount bad = d;
  bad.id = 43;
  bad.name = "other";
  bad.grant_key = "short";
  EXPECT_EQ(master_->MountSegment(ctx_, bad).code(), Code::kInvalidParams);
  auto put = master_->PutStart(ctx_, "k", 1000, {});
  ASSERT_TRUE(put.ok());
  ASSERT_EQ(put->size(), 1u);
  const GrantedReplica& w = (*put)[0];
  const int64_t now = WallMs();
  EXPECT_TRUE(CheckGrant(key, 42, w.grant, GrantAccess::kWrite, w.offset, 1000, now).ok());
  EXPECT_FALSE(CheckGrant(key, 42, w.grant, GrantAccess::kRead, w.offset, 1000, now).ok());
  EXPECT_FALSE(CheckGrant(key, 42, w.grant, GrantAccess::kWrite, w.offset, 1001, now).ok());
  // A write grant lasts no longer than a Put may before it is taken over.
  EXPECT_LE(w.grant.expires_ms, now + config_.put_start_discard_timeout_sec * 1000);
  ASSERT_TRUE(master_->PutEnd(ctx_, "k", std::nullopt).ok());
  auto info = master_->GetReplicaList(ctx_, "k", true);
  ASSERT_TRUE(info.ok());
  const GrantedReplica& r = info->replicas[0];
  EXPECT_TRUE(CheckGrant(key, 42, r.grant, GrantAccess::kRead, r.offset, 1000, now).ok());
  EXPECT_FALSE(CheckGrant(key, 42, r.grant, GrantAccess::kWrite, r.offset, 1000, now).ok());  // a COMPLETE object
  EXPECT_GT(r.grant.expires_ms, now + (config_.grant_ttl_sec - 5) * 1000);
  auto listed = master_->ListSegments();
  ASSERT_TRUE(listed.ok());
  // (The listing carries SegmentDesc, which has no grant key: the key cannot leak through it.)
  // A segment mounted without a key (in one process) hands out no grant.
  Mount("local", 1 << 20);
  ReplicateConfig on_local;
  on_local.preferred_segments = {"local"};
  auto local = master_->PutStart(ctx_, "l", 100, on_local);
  ASSERT_TRUE(local.ok());
  EXPECT_EQ((*local)[0].grant.access, GrantAccess::kNone);
}

}  // namespace
}  // namespace yb
