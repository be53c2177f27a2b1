// The master's side of the SSD tier: offload queues (eager and on eviction), their completion into
// LOCAL_DISK replicas, registration and dropping of disk replicas, and client death.
#include <gtest/gtest.h>

#include "common/disk_key.h"
#include "master/master_test_util.h"

namespace yb {
namespace {

using testing::MasterFixture;

class OffloadTest : public MasterFixture {
 protected:
  static constexpr uint64_t kObj = 1024;

  // The SSD client ssd_ owns segment "a" of `objects` objects; ctx_ (no SSD tier) writes.
  void Start(MasterConfig config, int objects = 4) {
    Reset(config);
    JoinSsdClient(ClientId{9, 9}, objects);
  }
  // Start, and ctx_ (no SSD tier, keeps pinging) mounts segment "b" of four objects.
  void StartBesideAPlainClient(MasterConfig config, int objects = 4) {
    Start(config, objects);
    Mount("b", kObj * 4);
  }
  // Where a Put goes: segment `name` only, or two replicas (one on each client).
  static ReplicateConfig On(const std::string& name) {
    ReplicateConfig c;
    c.preferred_segments = {name};
    return c;
  }
  static ReplicateConfig OnBoth() {
    ReplicateConfig c;
    c.replica_num = 2;
    return c;
  }
  // ssd_ registers (with an SSD tier) as `id` and mounts segment "a" of `objects` objects.
  void JoinSsdClient(ClientId id, int objects) {
    auto t = master_->RegisterClient({id, "ssd-host", "default", true});
    ASSERT_TRUE(t.ok());
    ssd_ = *t;
    seg_ = Mount("a", kObj * objects, ssd_);
  }
  // ssd_ falls silent past client_ttl while ctx_ keeps pinging: the master declares it dead.
  void SsdClientDies() {
    clock_.AdvanceSec(11);
    ASSERT_TRUE(master_->Ping(ctx_).ok());
    master_->LivenessOnce();
  }
  // ssd_ comes back as a new process (a new id) with the same disk.
  void SsdClientReturns(int objects) { JoinSsdClient(ClientId{9, 10}, objects); }
  static MasterConfig Eager() {
    MasterConfig c;
    c.enable_offload = true;
    return c;
  }
  static MasterConfig OnEvict(size_t queue = 4096, bool force = false) {
    MasterConfig c;
    c.offload_on_evict = true;
    c.offload_queue_limit = queue;
    c.offload_force_evict = force;
    return c;
  }
  std::string K(int i) { return "k" + std::to_string(i); }
  std::vector<ReplicaKind> Kinds(const std::string& key) {
    auto info = master_->GetReplicaList(ctx_, key, false);
    std::vector<ReplicaKind> out;
    if (info.ok()) {
      for (const auto& r : info->replicas) out.push_back(r.kind);
    }
    return out;
  }
  std::vector<OffloadTask> Fetch(uint32_t max = 64) {
    auto t = master_->OffloadFetch(ssd_, max);
    EXPECT_TRUE(t.ok());
    return t.ok() ? *t : std::vector<OffloadTask>{};
  }
  static constexpr uint64_t kSum = 0xC0FFEE;  // what the client's storage engine computed
  std::vector<Status> Done(const std::vector<OffloadTask>& tasks, Status st = Status::OK(),
                           std::optional<uint64_t> sum = kSum) {
    std::vector<OffloadResult> res;
    for (const auto& t : tasks) res.push_back({t.disk_key, t.object_id, st, st.ok() ? sum : std::nullopt});
    return master_->OffloadDone(ssd_, res);
  }
  uint64_t Allocated() { return master_->Stats().allocated; }

  CallContext ssd_;
  SegmentId seg_ = 0;
};

const auto kMem = ReplicaKind::kMemory;
const auto kDisk = ReplicaKind::kLocalDisk;

TEST_F(OffloadTest, EagerOffloadAddsADiskReplicaBesideTheMemoryOne) {
  Start(Eager());
  ASSERT_TRUE(Put(K(0), kObj).ok());
  auto tasks = Fetch();
  ASSERT_EQ(tasks.size(), 1u);
  EXPECT_EQ(tasks[0].disk_key, DiskKey("default", K(0)));
  EXPECT_EQ(tasks[0].segment, seg_);
  EXPECT_EQ(tasks[0].size, kObj);
  // While the client copies, the bytes stay: even a forced eviction cannot take them.
  clock_.AdvanceSec(11);
  EXPECT_EQ(master_->evictor().EvictBytes(kObj), 0u);
  for (const auto& st : Done(tasks)) EXPECT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(Kinds(K(0)), (std::vector<ReplicaKind>{kMem, kDisk}));
  auto info = master_->GetReplicaList(ctx_, K(0), false);
  EXPECT_EQ(info->replicas[1].segment, seg_);
  EXPECT_TRUE(Fetch().empty());
  EXPECT_EQ(master_->Stats().offloaded, 1u);
  // Eviction now frees the memory and keeps the disk copy: still a hit.
  clock_.AdvanceSec(11);  // past the lease of the reads above
  EXPECT_EQ(master_->evictor().EvictBytes(kObj), kObj);
  EXPECT_EQ(Kinds(K(0)), (std::vector<ReplicaKind>{kDisk}));
  EXPECT_EQ(Allocated(), 0u);
}

// Eviction takes the DRAM copies of objects that are also on disk first, older objects that are
// only in DRAM after: with eager offload, the newest objects may not have reached the disk yet.
TEST_F(OffloadTest, EvictionFreesCopiesThatAreOnDiskBeforeOlderDramOnlyObjects) {
  Start(Eager());
  ASSERT_TRUE(Put(K(0), kObj).ok());  // the older object; its offload fails: DRAM only
  ASSERT_TRUE(Put(K(1), kObj).ok());
  auto tasks = Fetch();
  ASSERT_EQ(tasks.size(), 2u);
  ASSERT_EQ(tasks[0].disk_key, DiskKey("default", K(0)));
  EXPECT_TRUE(Done({tasks[0]}, Status(Code::kFileWriteFail, "disk full"))[0].ok());
  EXPECT_TRUE(Done({tasks[1]})[0].ok());
  EXPECT_EQ(Kinds(K(0)), (std::vector<ReplicaKind>{kMem}));
  EXPECT_EQ(Kinds(K(1)), (std::vector<ReplicaKind>{kMem, kDisk}));
  clock_.AdvanceSec(11);  // past the leases of those reads
  EXPECT_EQ(master_->evictor().EvictBytes(kObj), kObj);
  EXPECT_EQ(Kinds(K(0)), (std::vector<ReplicaKind>{kMem}));  // kept, though older
  EXPECT_EQ(Kinds(K(1)), (std::vector<ReplicaKind>{kDisk}));
  clock_.AdvanceSec(11);
  EXPECT_EQ(master_->evictor().EvictBytes(kObj), kObj);  // then the DRAM-only one
  EXPECT_FALSE(Exists(K(0)));
  EXPECT_TRUE(Exists(K(1)));
}

// An object whose eager offload has not finished is on its way to the disk: eviction waits for the
// copy instead of dropping it, and a writer that finds the pool full of such objects is refused
// (NO_AVAILABLE_HANDLE) until copies land. Before, the newest object could be dropped whole while
// the older ones it was evicted for were leased by readers.
TEST_F(OffloadTest, ObjectsWaitingForTheirEagerDiskCopyAreNotEvicted) {
  Start(Eager());
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(Put(K(i), kObj).ok());  // the segment is full
  clock_.AdvanceSec(11);
  EXPECT_EQ(master_->evictor().EvictBytes(4 * kObj), 0u);
  EXPECT_EQ(master_->evictor().RunOnce(), 0u);  // over the watermark, nothing to take
  EXPECT_EQ(Put(K(4), kObj).code(), Code::kNoAvailableHandle);
  EXPECT_EQ(master_->Stats().keys, 4u);
  // k0 and k1 reach the disk; k2's copy fails (it stays, evictable as DRAM-only); k3's is running.
  auto tasks = Fetch();
  ASSERT_EQ(tasks.size(), 4u);
  for (const auto& st : Done({tasks[0], tasks[1]})) EXPECT_TRUE(st.ok());
  EXPECT_TRUE(Done({tasks[2]}, Status(Code::kFileWriteFail, "disk full"))[0].ok());
  ASSERT_TRUE(Put(K(4), kObj).ok());  // inline eviction takes k0's DRAM copy
  EXPECT_EQ(Kinds(K(0)), (std::vector<ReplicaKind>{kDisk}));
  clock_.AdvanceSec(11);
  EXPECT_EQ(master_->evictor().EvictBytes(3 * kObj), 2 * kObj);  // k1's copy, then k2 (DRAM only)
  EXPECT_EQ(Kinds(K(1)), (std::vector<ReplicaKind>{kDisk}));
  EXPECT_FALSE(Exists(K(2)));
  EXPECT_EQ(Kinds(K(3)), (std::vector<ReplicaKind>{kMem}));  // copy still running: kept
  EXPECT_TRUE(Done({tasks[3]})[0].ok());
  EXPECT_EQ(Kinds(K(3)), (std::vector<ReplicaKind>{kMem, kDisk}));
}

TEST_F(OffloadTest, ForcedEvictionDropsObjectsWaitingForTheirDiskCopy) {
  MasterConfig c = Eager();
  c.offload_force_evict = true;
  Start(c);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(Put(K(i), kObj).ok());
  clock_.AdvanceSec(11);
  EXPECT_EQ(master_->evictor().EvictBytes(kObj), kObj);
  EXPECT_FALSE(Exists(K(0)));
  EXPECT_EQ(Fetch().size(), 3u);  // k0's task is dropped: nothing left to copy
}

// The eager copy of a dead client will not come: the object (its replica on a live client) is an
// ordinary eviction candidate again.
TEST_F(OffloadTest, ADeadSsdClientsPendingCopiesNoLongerHoldTheirObjects) {
  StartBesideAPlainClient(Eager());
  const ReplicateConfig cfg = OnBoth();
  ASSERT_TRUE(Put(K(0), kObj, cfg).ok());
  clock_.AdvanceSec(11);
  EXPECT_EQ(master_->evictor().EvictBytes(kObj), 0u);
  ASSERT_TRUE(master_->Ping(ctx_).ok());
  master_->LivenessOnce();  // ssd_ silent for 11 s: dead
  EXPECT_EQ(Kinds(K(0)), (std::vector<ReplicaKind>{kMem}));
  clock_.AdvanceSec(11);
  ASSERT_TRUE(master_->Ping(ctx_).ok());
  EXPECT_EQ(master_->evictor().EvictBytes(kObj), kObj);
  EXPECT_FALSE(Exists(K(0)));
}

// After a restart, an SSD client registers what its disk holds. A copy joins a key the master
// still has only when its checksum proves it holds that key's value: the one recorded when the
// offload was reported, or the writer's. Before, a copy of an older value of the same size (the key
// put again while the client was away) joined the new value, and a read could return the old bytes.
TEST_F(OffloadTest, ARestartedClientsDiskCopiesJoinOnlyTheValuesTheyHold) {
  StartBesideAPlainClient(Eager());
  const ReplicateConfig on_a = On("a"), on_both = OnBoth();
  ASSERT_TRUE(Put(K(0), kObj, on_a).ok());
  ASSERT_TRUE(Put(K(1), kObj, on_both).ok());
  for (const auto& st : Done(Fetch())) ASSERT_TRUE(st.ok());
  EXPECT_EQ(Kinds(K(1)), (std::vector<ReplicaKind>{kMem, kMem, kDisk}));
  SsdClientDies();  // k0 goes with it, k1 keeps its copy on b
  EXPECT_FALSE(Exists(K(0)));
  const ReplicateConfig on_b = On("b");
  ASSERT_TRUE(Put(K(0), kObj, on_b).ok());  // a new value of k0, same size, no checksum

  // The client comes back (a new process: a new id) with the same disk.
  SsdClientReturns(4);
  auto sts = master_->AddDiskReplicas(ssd_, seg_,
                                      {{DiskKey("default", K(0)), kObj, kSum}, {DiskKey("default", K(1)), kObj, kSum}});
  EXPECT_EQ(sts[0].code(), Code::kObjectAlreadyExists) << "an old value must not join the new one";
  EXPECT_TRUE(sts[1].ok()) << sts[1].ToString();
  EXPECT_EQ(Kinds(K(0)), (std::vector<ReplicaKind>{kMem}));
  EXPECT_EQ(Kinds(K(1)), (std::vector<ReplicaKind>{kMem, kDisk}));
  // A copy whose checksum differs from the one recorded is refused too.
  ASSERT_TRUE(master_->Remove(ctx_, K(1), true).ok());
  ASSERT_TRUE(Put(K(1), kObj, on_b).ok());
  ASSERT_TRUE(master_->PutStart(ctx_, K(2), kObj, on_b).ok());
  ASSERT_TRUE(master_->PutEnd(ctx_, K(2), uint64_t{42}).ok());  // the writer's checksum
  sts = master_->AddDiskReplicas(ssd_, seg_,
                                 {{DiskKey("default", K(2)), kObj, 43}, {DiskKey("default", K(2)), kObj, 42}});
  EXPECT_EQ(sts[0].code(), Code::kObjectAlreadyExists);
  EXPECT_TRUE(sts[1].ok());
  EXPECT_EQ(Kinds(K(2)), (std::vector<ReplicaKind>{kMem, kDisk}));
}

// An offload whose bytes do not hash to the writer's checksum is not a replica: the client is told
// (CHECKSUM_MISMATCH, it drops the copy) and the DRAM copy stays, not queued again.
// A client that goes away keeps its disk copies, and the master remembers them (AwayCopy). Keys
// removed or written while it is away have their copies refused when it comes back, so a removed
// key, or an older value of a key since rewritten and removed, does not reappear.
TEST_F(OffloadTest, KeysRemovedOrRewrittenWhileTheirOwnerIsAwayDoNotComeBack) {
  StartBesideAPlainClient(Eager(), /*objects=*/8);
  const ReplicateConfig on_a = On("a"), on_b = On("b");
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(Put(K(i), kObj, on_a).ok());
  for (const auto& st : Done(Fetch())) ASSERT_TRUE(st.ok());
  SsdClientDies();  // its four objects go with it, their disk copies stay away
  EXPECT_EQ(master_->Stats().disk_away_copies, 4u);
  EXPECT_EQ(master_->Remove(ctx_, K(0), false).code(), Code::kObjectNotFound);  // not listed, yet removed
  ASSERT_TRUE(Put(K(1), kObj, on_b).ok());                                      // a new value of k1 ...
  ASSERT_TRUE(master_->Remove(ctx_, K(1), true).ok());                          // ... removed in turn
  EXPECT_EQ(*master_->RemoveByRegex(ctx_, "^k2$", false), 0u);

  SsdClientReturns(8);
  std::vector<DiskObject> disk;
  for (int i = 0; i < 4; ++i) disk.push_back({DiskKey("default", K(i)), kObj, kSum});
  auto sts = master_->AddDiskReplicas(ssd_, seg_, disk);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(sts[i].code(), Code::kObjectAlreadyExists) << K(i) << " must not come back";
    EXPECT_FALSE(Exists(K(i)));
  }
  EXPECT_TRUE(sts[3].ok()) << "k3 was left alone: " << sts[3].ToString();
  EXPECT_EQ(Kinds(K(3)), (std::vector<ReplicaKind>{kDisk}));
  EXPECT_EQ(master_->Stats().disk_away_copies, 0u);  // all came back
  // Only the copies the master remembers are refused: a key it never saw registers.
  EXPECT_TRUE(master_->AddDiskReplicas(ssd_, seg_, {{DiskKey("default", K(5)), kObj, kSum}})[0].ok());
}

// A drop its owner never took (it died first, or its queue was full) is remembered the same way.
TEST_F(OffloadTest, DropsTheOwnerNeverTookAreRememberedAsAwayCopies) {
  MasterConfig c = Eager();
  c.offload_queue_limit = 1;  // drops: 64
  StartBesideAPlainClient(c, /*objects=*/66);
  const ReplicateConfig on_a = On("a");
  for (int i = 0; i < 65; ++i) {
    ASSERT_TRUE(Put(K(i), kObj, on_a).ok());
    for (const auto& st : Done(Fetch())) ASSERT_TRUE(st.ok());
  }
  EXPECT_EQ(*master_->RemoveAll(ctx_, true), 65u);  // 64 drops queued, one refused
  EXPECT_EQ(master_->Stats().disk_drops_refused, 1u);
  EXPECT_EQ(master_->Stats().disk_away_copies, 1u);
  SsdClientDies();  // with its 64 drops untaken
  EXPECT_EQ(master_->Stats().disk_away_copies, 65u);

  SsdClientReturns(66);
  std::vector<DiskObject> disk;
  for (int i = 0; i < 65; ++i) disk.push_back({DiskKey("default", K(i)), kObj, kSum});
  for (const auto& st : master_->AddDiskReplicas(ssd_, seg_, disk)) EXPECT_EQ(st.code(), Code::kObjectAlreadyExists);
  EXPECT_EQ(master_->Stats().keys, 0u);
  EXPECT_EQ(master_->Stats().disk_away_copies, 0u);
}

// A key that a remove leaves in place (a reader's lease) keeps its value: its away copy is still
// that value, and registers once the owner is back, even after the key was evicted meanwhile.
TEST_F(OffloadTest, AwayCopiesOfKeysARemoveLeftInPlaceStayValid) {
  StartBesideAPlainClient(Eager());
  const ReplicateConfig both = OnBoth();
  ASSERT_TRUE(Put(K(0), kObj, both).ok());
  for (const auto& st : Done(Fetch())) ASSERT_TRUE(st.ok());
  // ssd_ dies: k0 keeps its copy on b, its disk copy is away.
  SsdClientDies();
  ASSERT_TRUE(Read(K(0)).ok());  // a reader's lease
  EXPECT_EQ(*master_->RemoveAll(ctx_, false), 0u);
  EXPECT_EQ(*master_->RemoveByRegex(ctx_, "^k0$", false), 0u);
  clock_.AdvanceSec(11);
  ASSERT_TRUE(master_->Ping(ctx_).ok());
  EXPECT_EQ(master_->evictor().EvictBytes(kObj), kObj);  // evicted, not removed
  EXPECT_FALSE(Exists(K(0)));

  SsdClientReturns(4);
  auto sts = master_->AddDiskReplicas(ssd_, seg_, {{DiskKey("default", K(0)), kObj, kSum}});
  EXPECT_TRUE(sts[0].ok()) << sts[0].ToString();
  EXPECT_EQ(Kinds(K(0)), (std::vector<ReplicaKind>{kDisk}));
}

TEST_F(OffloadTest, AwayCopiesBeyondTheirLimitAreCounted) {
  MasterConfig c = Eager();
  c.disk_away_copies_limit = 1;
  StartBesideAPlainClient(c);
  const ReplicateConfig on_a = On("a");
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(Put(K(i), kObj, on_a).ok());
  for (const auto& st : Done(Fetch())) ASSERT_TRUE(st.ok());
  SsdClientDies();
  EXPECT_EQ(master_->Stats().disk_away_copies, 1u);
  EXPECT_EQ(master_->Stats().disk_away_untracked, 2u);
}

TEST_F(OffloadTest, AnOffloadThatDoesNotMatchTheWritersChecksumIsRefused) {
  Start(Eager());
  ASSERT_TRUE(master_->PutStart(ctx_, K(0), kObj, {}).ok());
  ASSERT_TRUE(master_->PutEnd(ctx_, K(0), uint64_t{42}).ok());
  auto tasks = Fetch();
  ASSERT_EQ(tasks.size(), 1u);
  EXPECT_EQ(tasks[0].checksum, std::optional<uint64_t>(42));
  EXPECT_EQ(Done(tasks, Status::OK(), 41)[0].code(), Code::kChecksumMismatch);
  EXPECT_EQ(Kinds(K(0)), (std::vector<ReplicaKind>{kMem}));
  EXPECT_EQ(master_->Stats().offload_failed, 1u);
  clock_.AdvanceSec(11);
  EXPECT_EQ(master_->evictor().EvictBytes(kObj), kObj);  // an ordinary DRAM-only object now
}

// Removing or replacing a key tells the owner of each disk copy to drop it, so that a restart of
// the owner or the master does not register the old value again. A drop is handed out once and is
// never reported; it does not take the room of offloads in the queue.
TEST_F(OffloadTest, RemovedAndReplacedKeysHaveTheirDiskCopiesDropped) {
  Start(Eager());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(Put(K(i), kObj).ok());
  for (const auto& st : Done(Fetch())) ASSERT_TRUE(st.ok());
  clock_.AdvanceSec(11);
  ASSERT_TRUE(master_->Remove(ctx_, K(0), false).ok());
  EXPECT_EQ(*master_->RemoveByRegex(ctx_, "^k1$", false), 1u);
  ASSERT_TRUE(master_->UpsertStart(ctx_, K(2), kObj, {}).ok());
  ASSERT_TRUE(master_->PutEnd(ctx_, K(2), std::nullopt).ok());  // replaces k2: its old copy goes
  auto tasks = Fetch();
  ASSERT_EQ(tasks.size(), 4u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(tasks[i].drop);
    EXPECT_EQ(tasks[i].disk_key, DiskKey("default", K(i)));
  }
  EXPECT_FALSE(tasks[3].drop);  // the new k2, queued after the drop of the old one
  EXPECT_EQ(tasks[3].disk_key, DiskKey("default", K(2)));
  EXPECT_EQ(master_->Stats().offload_queued, 1u);  // only the copy in progress
  EXPECT_TRUE(Fetch().empty());
  // An object only in DRAM has no copy to drop.
  ASSERT_TRUE(Put(K(5), kObj).ok());
  ASSERT_EQ(Fetch().size(), 1u);  // its offload, handed out and never reported
  ASSERT_TRUE(master_->Remove(ctx_, K(5), true).ok());
  EXPECT_TRUE(Fetch().empty());
}

TEST_F(OffloadTest, DropsDoNotTakeTheRoomOfOffloads) {
  MasterConfig c = Eager();
  c.offload_queue_limit = 1;
  Start(c);
  ASSERT_TRUE(Put(K(0), kObj).ok());
  for (const auto& st : Done(Fetch())) ASSERT_TRUE(st.ok());
  ASSERT_TRUE(master_->Remove(ctx_, K(0), true).ok());  // one drop queued
  ASSERT_TRUE(Put(K(1), kObj).ok());                    // its offload still fits
  auto tasks = Fetch();
  ASSERT_EQ(tasks.size(), 2u);
  EXPECT_TRUE(tasks[0].drop);
  EXPECT_FALSE(tasks[1].drop);
  EXPECT_EQ(master_->Stats().disk_drops_refused, 0u);
  EXPECT_EQ(master_->Stats().offload_refused, 0u);
}

TEST_F(OffloadTest, DropsBeyondTheirBoundAreCounted) {
  MasterConfig c = Eager();
  c.offload_queue_limit = 1;  // drops: 64
  Start(c, /*objects=*/66);
  for (int i = 0; i < 65; ++i) {
    ASSERT_TRUE(Put(K(i), kObj).ok());
    for (const auto& st : Done(Fetch())) ASSERT_TRUE(st.ok());
  }
  EXPECT_EQ(*master_->RemoveAll(ctx_, true), 65u);
  EXPECT_EQ(master_->Stats().disk_drops_refused, 1u);
  EXPECT_EQ(Fetch(100).size(), 64u);
}

TEST_F(OffloadTest, OnlyClientsWithAnSsdTierGetTasks) {
  StartBesideAPlainClient(Eager());
  const ReplicateConfig cfg = On("b");
  ASSERT_TRUE(Put(K(0), kObj, cfg).ok());
  EXPECT_TRUE(Fetch().empty());
  auto none = master_->OffloadFetch(ctx_, 64);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST_F(OffloadTest, EvictionQueuesTheObjectAndFreesItsMemoryOnceDurable) {
  Start(OnEvict());
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(Put(K(i), kObj).ok());
  clock_.AdvanceSec(11);
  EXPECT_EQ(master_->evictor().EvictBytes(kObj), kObj);
  EXPECT_EQ(Allocated(), 4 * kObj);  // still in DRAM until the disk copy is durable
  EXPECT_EQ(Kinds(K(0)), (std::vector<ReplicaKind>{kMem}));
  EXPECT_EQ(master_->Stats().offloaded_on_evict, 1u);
  // Not picked twice: the next eviction takes the next object.
  EXPECT_EQ(master_->evictor().EvictBytes(kObj), kObj);
  auto tasks = Fetch();
  ASSERT_EQ(tasks.size(), 2u);
  EXPECT_EQ(tasks[0].disk_key, DiskKey("default", K(0)));
  for (const auto& st : Done(tasks)) EXPECT_TRUE(st.ok());
  EXPECT_EQ(Kinds(K(0)), (std::vector<ReplicaKind>{kDisk}));
  EXPECT_EQ(Kinds(K(1)), (std::vector<ReplicaKind>{kDisk}));
  EXPECT_EQ(Allocated(), 2 * kObj);
  EXPECT_TRUE(Exists(K(0)));
  EXPECT_EQ(master_->Stats().keys, 4u);
}

TEST_F(OffloadTest, AFullQueueKeepsTheObjectInDramUnlessForced) {
  Start(OnEvict(/*queue=*/1));
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(Put(K(i), kObj).ok());
  clock_.AdvanceSec(11);
  master_->evictor().EvictBytes(2 * kObj);
  EXPECT_EQ(master_->Stats().keys, 4u);  // k0 queued, the rest kept
  EXPECT_GE(master_->Stats().kept_queue_full, 1u);
  EXPECT_EQ(Allocated(), 4 * kObj);

  Start(OnEvict(/*queue=*/1, /*force=*/true));
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(Put(K(i), kObj).ok());
  clock_.AdvanceSec(11);
  master_->evictor().EvictBytes(2 * kObj);
  EXPECT_EQ(master_->Stats().keys, 3u);  // of k0 and k1, one queued and one dropped
  EXPECT_NE(Exists(K(0)), Exists(K(1)));
  EXPECT_EQ(master_->Stats().offload_queued, 1u);
}

TEST_F(OffloadTest, AFailedOffloadKeepsTheDramCopyAndIsNotRetried) {
  Start(OnEvict());
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(Put(K(i), kObj).ok());
  clock_.AdvanceSec(11);
  master_->evictor().EvictBytes(kObj);
  auto tasks = Fetch();
  ASSERT_EQ(tasks.size(), 1u);
  for (const auto& st : Done(tasks, Status(Code::kFileWriteFail, "No space left on device"))) EXPECT_TRUE(st.ok());
  EXPECT_EQ(Kinds(K(0)), (std::vector<ReplicaKind>{kMem}));
  EXPECT_EQ(master_->Stats().offload_failed, 1u);
  // Evicted like an object without an SSD tier next time (k1, read last, goes after it).
  ASSERT_TRUE(master_->GetReplicaList(ctx_, K(1), false).ok());
  clock_.AdvanceSec(11);
  master_->evictor().EvictBytes(kObj);
  EXPECT_FALSE(Exists(K(0)));
  EXPECT_TRUE(Fetch().empty());
}

TEST_F(OffloadTest, ARemovedObjectsOffloadIsRefusedAndItsBytesFreedAfter) {
  Start(Eager());
  ASSERT_TRUE(Put(K(0), kObj).ok());
  auto tasks = Fetch();
  ASSERT_EQ(tasks.size(), 1u);
  ASSERT_TRUE(master_->Remove(ctx_, K(0), true).ok());
  EXPECT_EQ(Allocated(), kObj);  // the client may still be copying them
  auto done = Done(tasks);
  EXPECT_EQ(done[0].code(), Code::kObjectNotFound);
  EXPECT_EQ(Allocated(), 0u);
  EXPECT_EQ(Done(tasks)[0].code(), Code::kInvalidParams);  // reported twice
}

TEST_F(OffloadTest, RegisteredDiskObjectsAreHitsAndMismatchesAreRefused) {
  Start(MasterConfig{});
  ASSERT_TRUE(Put(K(1), kObj).ok());
  CallContext other = Register(ClientId{5, 5}, "other");
  std::vector<DiskObject> objs = {{DiskKey("default", K(0)), 100, 7},
                                  {DiskKey("default", K(1)), kObj + 1, 7},
                                  {DiskKey("other", K(0)), 50, 8},
                                  {"\xff", 1, 1},
                                  {DiskKey("never-registered", K(0)), 50, 8}};
  const size_t tenants = master_->Tenants().size();
  auto sts = master_->AddDiskReplicas(ssd_, seg_, objs);
  EXPECT_TRUE(sts[0].ok());
  EXPECT_EQ(sts[1].code(), Code::kObjectAlreadyExists);
  EXPECT_TRUE(sts[2].ok());
  EXPECT_EQ(sts[3].code(), Code::kInvalidKey);
  EXPECT_EQ(sts[4].code(), Code::kTenantNotRegistered);  // a disk key registers no tenant
  EXPECT_EQ(master_->Tenants().size(), tenants);
  // A caller bound to its tenant names no other tenant's key.
  CallContext bound = ssd_;
  bound.any_tenant = false;
  EXPECT_EQ(master_->AddDiskReplicas(bound, seg_, {objs[2]})[0].code(), Code::kIllegalClient);
  EXPECT_EQ(master_->DropDiskReplicas(bound, {objs[2].disk_key})[0].code(), Code::kIllegalClient);
  auto info = master_->GetReplicaList(ctx_, K(0), false);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->size, 100u);
  EXPECT_EQ(info->checksum, std::optional<uint64_t>(7));
  EXPECT_EQ(Kinds(K(0)), (std::vector<ReplicaKind>{kDisk}));
  EXPECT_EQ(master_->GetReplicaList(other, K(0), false)->size, 50u);  // the tenant comes from the disk key
  // Registering again is harmless; a segment that is not ours is refused.
  EXPECT_TRUE(master_->AddDiskReplicas(ssd_, seg_, {objs[0]})[0].ok());
  EXPECT_EQ(Kinds(K(0)).size(), 1u);
  EXPECT_EQ(master_->AddDiskReplicas(ctx_, seg_, {objs[0]})[0].code(), Code::kSegmentNotFound);
  // Disk-only objects never count as DRAM for eviction.
  clock_.AdvanceSec(11);
  EXPECT_EQ(master_->evictor().EvictBytes(kObj), kObj);  // takes k1, not k0
  EXPECT_TRUE(Exists(K(0)));
}

TEST_F(OffloadTest, DroppingDiskReplicasRemovesObjectsLeftWithout) {
  Start(Eager());
  ASSERT_TRUE(Put(K(0), kObj).ok());
  for (const auto& st : Done(Fetch())) ASSERT_TRUE(st.ok());
  ASSERT_TRUE(master_->AddDiskReplicas(ssd_, seg_, {{DiskKey("default", K(1)), 10, 1}})[0].ok());
  auto sts = master_->DropDiskReplicas(
      ssd_, {DiskKey("default", K(0)), DiskKey("default", K(1)), DiskKey("default", "never")});
  for (const auto& st : sts) EXPECT_TRUE(st.ok());
  EXPECT_EQ(Kinds(K(0)), (std::vector<ReplicaKind>{kMem}));
  EXPECT_FALSE(Exists(K(1)));
}

TEST_F(OffloadTest, ADeadClientsQueueIsForgottenAndItsObjectsEvictableAgain) {
  StartBesideAPlainClient(OnEvict());
  const ReplicateConfig cfg = On("a");
  ASSERT_TRUE(Put(K(0), kObj, cfg).ok());
  clock_.AdvanceSec(11);
  master_->evictor().EvictBytes(kObj);
  EXPECT_EQ(master_->Stats().offload_queued, 1u);
  ASSERT_TRUE(master_->Ping(ctx_).ok());
  master_->LivenessOnce();  // ssd_ silent for 11 s: dead, its segment and queue go
  EXPECT_EQ(master_->Stats().offload_queued, 0u);
  EXPECT_FALSE(Exists(K(0)));  // its only replica was on the dead client's segment
}

}  // namespace
}  // namespace yb
