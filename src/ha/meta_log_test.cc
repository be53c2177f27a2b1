#include "ha/meta_log.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <future>
#include <random>
#include <set>
#include <thread>

#include "common/disk_key.h"
#include "common/temp_dir.h"
#include "ha/log_format.h"
#include "ha/replication.h"
#include "master/master_service.h"

namespace yb::ha {
namespace {

namespace fs = std::filesystem;

TEST(LogFormatTest, FramesRoundTripAndATornOrCorruptFrameEndsTheRead) {
  std::string data;
  AppendFrame(1, "one", data);
  AppendFrame(2, "", data);
  AppendFrame(3, std::string(1000, 'x'), data);
  {
    FrameReader r(data);
    auto a = r.Next(), b = r.Next(), c = r.Next();
    ASSERT_TRUE(a && b && c);
    EXPECT_EQ(a->seq, 1u);
    EXPECT_EQ(a->payload, "one");
    EXPECT_EQ(b->payload, "");
    EXPECT_EQ(c->payload.size(), 1000u);
    EXPECT_FALSE(r.Next());
    EXPECT_TRUE(r.clean());
  }
  for (size_t cut = 1; cut < 30; ++cut) {  // torn: the last frame cut short anywhere
    FrameReader r(std::string_view(data).substr(0, data.size() - cut));
    ASSERT_TRUE(r.Next() && r.Next());
    EXPECT_FALSE(r.Next());
    EXPECT_FALSE(r.clean());
    EXPECT_EQ(r.good_bytes(), 2 * kFrameHeader + 3);
  }
  std::string bad = data;
  bad[kFrameHeader + 1] ^= 1;  // a flipped bit in the first payload
  FrameReader r(bad);
  EXPECT_FALSE(r.Next());
  EXPECT_FALSE(r.clean());
  EXPECT_EQ(r.good_bytes(), 0u);
  EXPECT_EQ(ParseFileName(LogFileName(42), "log-", ".ybl"), 42u);
  EXPECT_EQ(ParseFileName(SnapshotFileName(7), "snap-", ".ybs"), 7u);
  EXPECT_FALSE(ParseFileName("log-x.ybl", "log-", ".ybl"));
}

// A master whose changes go to a log in `dir`, rebuilt from it at construction.
struct LoggedMaster {
  LoggedMaster(const std::string& dir, ManualClock& clock, MetaLog::Options o = {}) {
    o.dir = dir;
    MasterImage image;
    auto l = MetaLog::Open(o, &image);
    EXPECT_TRUE(l.ok()) << l.status().ToString();
    log = std::move(l).value();
    MasterConfig mc;
    mc.random_seed = 3;
    mc.object_shards = 8;
    master = MasterService::Create(mc, clock).value();
    EXPECT_TRUE(master->Load(image).ok());
    master->SetSink(log.get());
  }
  ~LoggedMaster() {
    master.reset();
    log.reset();
  }
  // Waits for everything this thread appended.
  void Settle() { log->Wait(MetaLog::TakeTicket()); }
  Status Snapshot() {
    return log->Snapshot([&](const auto& emit) { master->WriteImage(emit); }, master->next_object_id());
  }
  // The master's step each second (MetaLog::Maintain).
  void Maintain() { log->Maintain([&](const auto& emit) { master->WriteImage(emit); }, master->next_object_id()); }
  // Puts objects k0 .. k<n-1> of 100 bytes.
  void PutN(const CallContext& ctx, int n) {
    for (int i = 0; i < n; ++i) {
      ASSERT_TRUE(master->PutStart(ctx, "k" + std::to_string(i), 100, {}).ok());
      ASSERT_TRUE(master->PutEnd(ctx, "k" + std::to_string(i), std::nullopt).ok());
    }
  }

  std::unique_ptr<MetaLog> log;
  std::unique_ptr<MasterService> master;
};

// The master's state as a set of records in a canonical form: two masters whose fingerprints are
// equal answer every query alike.
std::multiset<std::string> Fingerprint(MasterService& m) {
  std::multiset<std::string> out;
  m.WriteImage([&](const pb::LogRecord& r) {
    // A held range's end is kept as wall-clock time, which moves apart from the tests' manual clock
    // (GrantHoldMasterTest checks that holds survive a restart).
    if (r.has_hold()) return;
    std::string s;
    pb::LogRecord copy = r;
    if (copy.has_object()) {  // replicas in a fixed order
      auto* reps = copy.mutable_object()->mutable_replicas();
      std::sort(reps->begin(), reps->end(), [](const auto& a, const auto& b) {
        return std::make_tuple(a.segment(), a.offset(), a.kind()) < std::make_tuple(b.segment(), b.offset(), b.kind());
      });
    }
    copy.SerializeToString(&s);
    out.insert(s);
  });
  return out;
}

SegmentMount Seg(SegmentId id, uint64_t size) {
  return SegmentMount{{id, "node-" + std::to_string(id), 0, size, "e"}, id * 7};
}

class MetaLogTest : public ::testing::Test {
 protected:
  std::vector<std::string> Files(const std::string& suffix) {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir_.path())) {
      if (e.path().extension() == suffix) out.push_back(e.path().string());
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  // Registers owner_ with `m`; again after a restart, with the token the first master gave (the
  // restarted master signs with the key its log kept).
  CallContext Join(MasterService& m, const std::string& tenant = "default") {
    auto ctx = m.RegisterClient({owner_, "h", tenant, false, token_});
    EXPECT_TRUE(ctx.ok()) << ctx.status().ToString();
    if (!ctx.ok()) return CallContext{owner_};
    token_ = ctx->token;
    return *ctx;
  }

  TempDir dir_{"yb-metalog"};
  ManualClock clock_;
  const ClientId owner_{5, 5};
  CallerToken token_{};
};

TEST_F(MetaLogTest, ARestartedMasterHasEveryObjectAndServesItOnceItsSegmentIsBack) {
  std::multiset<std::string> before;
  std::vector<GrantedReplica> where;
  {
    LoggedMaster a(dir_.path(), clock_);
    CallContext ctx = Join(*a.master);
    ASSERT_TRUE(a.master->MountSegments(ctx, {Seg(1, 1 << 20), Seg(2, 1 << 20)}).ok());
    ReplicateConfig two;
    two.replica_num = 2;
    for (int i = 0; i < 20; ++i) {
      std::string k = "k" + std::to_string(i);
      ASSERT_TRUE(a.master->PutStart(ctx, k, 1000 + i, two).ok());
      ASSERT_TRUE(a.master->PutEnd(ctx, k, i % 2 ? std::optional<uint64_t>(i) : std::nullopt).ok());
    }
    ASSERT_TRUE(a.master->PutStart(ctx, "unfinished", 500, {}).ok());
    clock_.AdvanceSec(11);  // leases over
    ASSERT_TRUE(a.master->Remove(ctx, "k3", false).ok());
    where = a.master->GetReplicaList(ctx, "k7", false)->replicas;
    a.Settle();
    before = Fingerprint(*a.master);
  }
  LoggedMaster b(dir_.path(), clock_);
  EXPECT_EQ(Fingerprint(*b.master), before);
  EXPECT_EQ(b.master->Stats().keys, 19u);
  CallContext ctx = Join(*b.master);
  // Known, but not read until its segments' owner is back with its memory.
  EXPECT_TRUE(*b.master->ExistKey(ctx, "k7"));
  EXPECT_FALSE(*b.master->ExistKey(ctx, "k3"));
  EXPECT_EQ(b.master->GetReplicaList(ctx, "k7", false).code(), Code::kReplicaNotReady);
  EXPECT_EQ(b.master->PutStart(ctx, "new", 100, {}).code(), Code::kNoAvailableHandle);  // nothing takes writes yet
  ASSERT_TRUE(b.master->MountSegments(ctx, {Seg(1, 1 << 20), Seg(2, 1 << 20)}).ok());
  auto info = b.master->GetReplicaList(ctx, "k7", false);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->size, 1007u);
  EXPECT_EQ(info->checksum, 7u);
  auto same = [](std::vector<GrantedReplica> v) {
    std::sort(v.begin(), v.end(), [](auto& x, auto& y) { return x.segment < y.segment; });
    std::vector<std::pair<SegmentId, uint64_t>> out;
    for (auto& r : v) out.emplace_back(r.segment, r.offset);
    return out;
  };
  EXPECT_EQ(same(info->replicas), same(where));
  // The unfinished Put kept its reservation: its writer ends it on the new master.
  EXPECT_TRUE(b.master->PutEnd(ctx, "unfinished", std::nullopt).ok());
  EXPECT_EQ(b.master->GetReplicaList(ctx, "unfinished", false)->size, 500u);
  // New space never overlaps what was restored.
  auto fresh = b.master->PutStart(ctx, "new", 100, {});
  ASSERT_TRUE(fresh.ok());
  for (int i = 0; i < 20; ++i) {
    auto o = b.master->GetReplicaList(ctx, "k" + std::to_string(i), false);
    if (!o.ok()) continue;
    for (const auto& r : o->replicas) {
      for (const auto& f : *fresh) {
        if (f.segment == r.segment) {
          EXPECT_TRUE(f.offset + 128 <= r.offset || f.offset >= r.offset + o->size);
        }
      }
    }
  }
}

TEST_F(MetaLogTest, AClientBackWithFreshMemoryOrNotBackLosesItsObjects) {
  {
    LoggedMaster a(dir_.path(), clock_);
    CallContext ctx = Join(*a.master);
    CallContext other = a.master->RegisterClient({ClientId{6, 6}, "h2", "default"}).value();
    ASSERT_TRUE(a.master->MountSegments(ctx, {Seg(1, 1 << 20)}).ok());
    ASSERT_TRUE(a.master->MountSegments(other, {Seg(2, 1 << 20)}).ok());
    ReplicateConfig on1, on2;
    on1.preferred_segments = {"node-1"};
    on2.preferred_segments = {"node-2"};
    ASSERT_TRUE(a.master->PutStart(ctx, "on1", 100, on1).ok() && a.master->PutEnd(ctx, "on1", std::nullopt).ok());
    ASSERT_TRUE(a.master->PutStart(ctx, "on2", 100, on2).ok() && a.master->PutEnd(ctx, "on2", std::nullopt).ok());
    a.Settle();
  }
  LoggedMaster b(dir_.path(), clock_);
  CallContext ctx = Join(*b.master);
  SegmentMount fresh = Seg(1, 1 << 20);
  fresh.incarnation = 999;  // same segment id, other memory behind it
  ASSERT_TRUE(b.master->MountSegments(ctx, {fresh}).ok());
  EXPECT_FALSE(*b.master->ExistKey(ctx, "on1"));
  EXPECT_TRUE(*b.master->ExistKey(ctx, "on2"));  // its owner has until client_ttl plus the grace
  clock_.AdvanceSec(19);  // a live master would have declared it dead, and still suspend its segment
  EXPECT_EQ(b.master->ExpireRecoveredOnce(), 0u);
  EXPECT_TRUE(*b.master->ExistKey(ctx, "on2"));
  clock_.AdvanceSec(2);
  EXPECT_EQ(b.master->ExpireRecoveredOnce(), 1u);
  EXPECT_FALSE(*b.master->ExistKey(ctx, "on2"));
  EXPECT_EQ(b.master->Stats().segments, 1u);
}

TEST_F(MetaLogTest, ATornTailIsCutAndTheLogGoesOn) {
  {
    LoggedMaster a(dir_.path(), clock_);
    CallContext ctx = Join(*a.master);
    ASSERT_TRUE(a.master->MountSegments(ctx, {Seg(1, 1 << 20)}).ok());
    a.PutN(ctx, 10);
    a.Settle();
  }
  auto logs = Files(".ybl");
  ASSERT_EQ(logs.size(), 1u);
  const auto size = fs::file_size(logs[0]);
  fs::resize_file(logs[0], size - 5);  // the last record (k9 published) torn by a crash
  {
    LoggedMaster b(dir_.path(), clock_);
    EXPECT_GT(b.log->stats().cut_bytes, 0u);
    CallContext ctx = Join(*b.master);
    EXPECT_TRUE(*b.master->ExistKey(ctx, "k8"));
    EXPECT_FALSE(*b.master->ExistKey(ctx, "k9"));
    ASSERT_TRUE(b.master->MountSegments(ctx, {Seg(1, 1 << 20)}).ok());
    EXPECT_TRUE(b.master->PutEnd(ctx, "k9", std::nullopt).ok());  // its reservation was durable before
    b.Settle();
  }
  LoggedMaster c(dir_.path(), clock_);
  CallContext ctx = Join(*c.master);
  EXPECT_TRUE(*c.master->ExistKey(ctx, "k9"));
  EXPECT_EQ(c.master->Stats().keys, 10u);
}

TEST_F(MetaLogTest, ACorruptRecordEndsReplayThereAndLaterFilesGo) {
  MetaLog::Options small;
  small.file_bytes = 600;  // a new file every few records
  {
    LoggedMaster a(dir_.path(), clock_, small);
    CallContext ctx = Join(*a.master);
    ASSERT_TRUE(a.master->MountSegments(ctx, {Seg(1, 1 << 20)}).ok());
    for (int i = 0; i < 30; ++i) {
      ASSERT_TRUE(a.master->PutStart(ctx, "k" + std::to_string(i), 100, {}).ok());
      ASSERT_TRUE(a.master->PutEnd(ctx, "k" + std::to_string(i), std::nullopt).ok());
      a.Settle();  // a round per put, so the files split between them
    }
  }
  auto logs = Files(".ybl");
  ASSERT_GE(logs.size(), 4u);
  {
    std::fstream f(logs[1], std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(kFrameHeader + 2);
    f.put('\x55');
  }
  LoggedMaster b(dir_.path(), clock_, small);
  EXPECT_GT(b.log->stats().cut_bytes, 0u);
  EXPECT_LT(b.master->Stats().keys, 30u);  // what followed the corrupt record is not taken
  auto after = Files(".ybl");
  EXPECT_LE(after.size(), 3u);  // the cut file, and the one started now
}

TEST_F(MetaLogTest, SnapshotsBoundReplayAndDeleteTheLogBeforeThem) {
  std::multiset<std::string> before;
  {
    LoggedMaster a(dir_.path(), clock_);
    CallContext ctx = Join(*a.master, "tenant-x");
    ASSERT_TRUE(a.master->SetTenantQuota("tenant-x", 1 << 19).ok());
    ASSERT_TRUE(a.master->MountSegments(ctx, {Seg(1, 1 << 20)}).ok());
    for (int i = 0; i < 50; ++i) {
      ASSERT_TRUE(a.master->PutStart(ctx, "a" + std::to_string(i), 100, {}).ok());
      ASSERT_TRUE(a.master->PutEnd(ctx, "a" + std::to_string(i), std::nullopt).ok());
    }
    a.Settle();
    ASSERT_TRUE(a.Snapshot().ok());
    EXPECT_EQ(Files(".ybs").size(), 1u);
    for (int i = 0; i < 10; ++i) {
      ASSERT_TRUE(a.master->PutStart(ctx, "b" + std::to_string(i), 100, {}).ok());
      ASSERT_TRUE(a.master->PutEnd(ctx, "b" + std::to_string(i), std::nullopt).ok());
    }
    clock_.AdvanceSec(11);
    ASSERT_TRUE(a.master->Remove(ctx, "a0", false).ok());
    a.Settle();
    ASSERT_TRUE(a.Snapshot().ok());
    ASSERT_TRUE(a.master->Remove(ctx, "a1", false).ok());
    a.Settle();
    EXPECT_EQ(Files(".ybs").size(), 1u);  // the older one went
    before = Fingerprint(*a.master);
  }
  LoggedMaster b(dir_.path(), clock_);
  EXPECT_EQ(b.log->stats().recovered_records, 1u);  // only what followed the last snapshot
  EXPECT_EQ(Fingerprint(*b.master), before);
  EXPECT_EQ(b.master->TenantUsed(Join(*b.master, "tenant-x").tenant),
            58u * 100);  // usage rebuilt, under the restored quota
}

// Replay equivalence: random operations against a logged master, with snapshots taken while
// another thread changes it; a master rebuilt from the directory has the same state.
TEST_F(MetaLogTest, AMasterRebuiltFromSnapshotAndLogEqualsTheOriginal) {
  std::multiset<std::string> before;
  {
    LoggedMaster a(dir_.path(), clock_);
    MasterService& m = *a.master;
    std::vector<CallContext> clients;
    for (uint64_t c = 1; c <= 3; ++c) {
      ClientId id{c, c};
      auto t = m.RegisterClient({id, "h" + std::to_string(c), c == 3 ? "other" : "default", true});
      ASSERT_TRUE(t.ok());
      clients.push_back(*t);
      ASSERT_TRUE(m.MountSegments(clients.back(), {Seg(c, 256 << 10)}).ok());
    }
    std::atomic<bool> done{false};
    std::thread snapshots([&] {
      while (!done) ASSERT_TRUE(a.Snapshot().ok());
    });
    std::mt19937_64 rng(11);
    for (int step = 0; step < 3000; ++step) {
      CallContext& ctx = clients[rng() % clients.size()];
      const std::string key = "k" + std::to_string(rng() % 300);
      ReplicateConfig rc;
      rc.replica_num = 1 + rng() % 3;
      rc.with_hard_pin = rng() % 10 == 0;
      rc.with_soft_pin = rng() % 10 == 1;
      switch (rng() % 10) {
        case 0:
        case 1:
        case 2:
          if (m.PutStart(ctx, key, 1 + rng() % 20000, rc).ok() && rng() % 4 != 0) {
            (void)m.PutEnd(ctx, key, rng() % 2 ? std::optional<uint64_t>(rng()) : std::nullopt);
          }
          break;
        case 3:
          if (m.UpsertStart(ctx, key, 1 + rng() % 20000, rc).ok()) (void)m.PutEnd(ctx, key, std::nullopt);
          break;
        case 4:
          (void)m.PutRevoke(ctx, key);
          break;
        case 5:
          (void)m.Remove(ctx, key, rng() % 2);
          break;
        case 6:
          (void)m.evictor().EvictBytes(20000);
          break;
        case 7: {  // a disk copy registered on the caller's segment, or dropped
          const std::string tenant = ctx.tenant == 0 ? "default" : "other";
          SegmentId seg = 0;
          const auto segs = m.ListSegments();
          for (const auto& u : *segs) {
            if (u.owner == ctx.client) seg = u.desc.id;
          }
          auto info = m.GetReplicaList(ctx, key, false);
          if (seg != 0 && info.ok() && info->checksum && rng() % 2) {
            (void)m.AddDiskReplicas(ctx, seg, {{DiskKey(tenant, key), info->size, *info->checksum}});
          } else {
            (void)m.DropDiskReplicas(ctx, {DiskKey(tenant, key)});
          }
          break;
        }
        case 8:
          clock_.Advance(static_cast<TimeMs>(rng() % 3000));
          m.RunBackgroundOnce();
          break;
        case 9:
          if (rng() % 40 == 0) {  // a node goes and comes back (empty)
            CallContext& c = clients[rng() % clients.size()];
            auto segs = m.ListSegments();
            for (const auto& u : *segs) {
              if (u.owner == c.client) {
                (void)m.UnmountSegment(c, u.desc.id);
                (void)m.MountSegments(c, {Seg(u.desc.id + 100, 256 << 10)});
              }
            }
          } else if (rng() % 3 == 0) {
            (void)m.RemoveByRegex(ctx, "^k1", false);
          }
          break;
      }
      for (auto& c : clients) (void)m.Ping(c);  // nobody is declared dead
    }
    done = true;
    snapshots.join();
    a.Settle();
    before = Fingerprint(m);
  }
  LoggedMaster b(dir_.path(), clock_);
  EXPECT_EQ(Fingerprint(*b.master), before);
}

TEST_F(MetaLogTest, ASecondProcessCannotOpenTheDirectory) {
  MasterImage image;
  MetaLog::Options o;
  o.dir = dir_.path();
  auto first = MetaLog::Open(o, &image);
  ASSERT_TRUE(first.ok());
  // flock is per open file description: a second open in this process is refused as another's.
  auto second = MetaLog::Open(o, &image);
  EXPECT_EQ(second.code(), Code::kFileOpenFail);
}

TEST_F(MetaLogTest, AReservationIsReleasedOnceWrittenAndAChangeOnceSynced) {
  MasterImage image;
  MetaLog::Options o;
  o.dir = dir_.path();
  auto log = MetaLog::Open(o, &image).value();
  (void)MetaLog::TakeTicket();
  pb::LogRecord pending;
  pending.mutable_pending()->set_key("k");
  log->Append(pending);
  MetaLog::Ticket t = MetaLog::TakeTicket();
  EXPECT_FALSE(t.sync);
  EXPECT_EQ(MetaLog::TakeTicket().seq, 0u);  // taken
  pb::LogRecord gone;
  gone.set_object_gone("k");
  log->Append(gone);
  log->Append(pending);
  MetaLog::Ticket t2 = MetaLog::TakeTicket();
  EXPECT_TRUE(t2.sync);  // one of its records must be synced
  EXPECT_TRUE(log->Cover(t).sync);  // a ticket before it may ask for a sync
  EXPECT_EQ(t2.seq, t.seq + 2);
  std::promise<void> fired;
  log->WhenReleased(t2, [&] { fired.set_value(); });
  log->Wait(t2);
  EXPECT_TRUE(log->Released(t));
  fired.get_future().wait();  // on the writer thread, once released
  int now = 0;
  log->WhenReleased(t2, [&] { ++now; });  // already released: at once, on this thread
  EXPECT_EQ(now, 1);
}

// At the process level (yb-master's default) every change is released once written: no answer
// waits for a sync, which the syncer makes at most once per interval; stopping syncs what is left.
TEST_F(MetaLogTest, AtTheProcessLevelEveryChangeIsReleasedOnceWrittenAndSyncedInTheBackground) {
  MasterImage image;
  MetaLog::Options o;
  o.dir = dir_.path();
  o.durability = MetaLog::Options::Durability::kProcess;
  o.sync_interval = std::chrono::hours(1);  // after its first sync, the syncer waits for the stop
  std::atomic<int> syncs{0};
  o.fault = [&](std::string_view op, const std::string&) {
    if (op == "sync") ++syncs;
    return 0;
  };
  {
    auto log = MetaLog::Open(o, &image).value();
    EXPECT_STREQ(log->durability(), "process");
    (void)MetaLog::TakeTicket();
    for (const char* key : {"a", "b", "c"}) {
      pb::LogRecord gone;
      gone.set_object_gone(key);
      log->Append(gone);
      MetaLog::Ticket t = MetaLog::TakeTicket();
      EXPECT_FALSE(t.sync);  // an object's removal too: written is enough
      log->Flush();
      EXPECT_TRUE(log->Released(t));  // at once, whatever the syncer does
      // The RPC server holds replies (for a standby) on a cover of their tickets: it must not ask
      // for a sync no ticket asked for (answers then waited for the background sync).
      EXPECT_FALSE(log->Cover(t).sync);
      EXPECT_TRUE(log->Released(log->Cover(t)));
    }
    EXPECT_LE(syncs.load(), 2);  // the directory's and at most one of the log's: the rest wait for the interval
  }  // stopping ends the wait and syncs what was written
  const int at_stop = syncs.load();
  MasterImage again;
  auto reopened = MetaLog::Open(o, &again).value();
  EXPECT_EQ(reopened->stats().recovered_records, 3u);
  EXPECT_GE(at_stop, 1);
}

// Group commit at the `always` level: a record written while a sync is in flight starts the next
// sync at once instead of waiting for the one in flight to end (its answer then waits one sync, not
// the rest of that one and a whole next one). Here the first sync of the log file never ends until
// the test lets it; the second record is synced, and both released, meanwhile.
TEST_F(MetaLogTest, AtTheAlwaysLevelARecordWrittenDuringASyncIsSyncedWithoutWaitingForIt) {
  MasterImage image;
  MetaLog::Options o;
  o.dir = dir_.path();
  o.durability = MetaLog::Options::Durability::kAlways;
  std::atomic<bool> armed{false};
  std::promise<void> holding, let_go;
  std::shared_future<void> released = let_go.get_future().share();
  o.fault = [&](std::string_view op, const std::string& path) {
    if (op == "sync" && path.find(".ybl") != std::string::npos && armed.exchange(false)) {
      holding.set_value();
      released.wait();  // the first sync of a record hangs, as a slow disk's would
    }
    return 0;
  };
  auto log = MetaLog::Open(o, &image).value();
  struct LetGo {  // before the log stops (it joins its syncers), whatever the outcome
    std::promise<void>& p;
    ~LetGo() { p.set_value(); }
  } let_go_at_end{let_go};
  (void)MetaLog::TakeTicket();
  auto append = [&](const char* key) {
    pb::LogRecord gone;
    gone.set_object_gone(key);
    log->Append(gone);
    MetaLog::Ticket t = MetaLog::TakeTicket();
    EXPECT_TRUE(t.sync);
    log->Flush();
    return t;
  };
  armed = true;
  const MetaLog::Ticket first = append("a");
  ASSERT_EQ(holding.get_future().wait_for(std::chrono::seconds(20)), std::future_status::ready);
  const MetaLog::Ticket second = append("b");
  std::promise<void> second_released;
  log->WhenReleased(second, [&] { second_released.set_value(); });
  EXPECT_EQ(second_released.get_future().wait_for(std::chrono::seconds(20)), std::future_status::ready);
  EXPECT_TRUE(log->Released(first));  // the second sync covers what was written before it began
}

// A full or failing disk under the log: the master keeps serving reads, refuses changes with a
// clear code, holds what it had appended, and takes changes again by itself once a snapshot can be
// written; a restart finds everything that was acknowledged.
class FailingDiskTest : public MetaLogTest {
 protected:
  MetaLog::Options Faulty() {
    MetaLog::Options o;
    o.min_free_bytes = 1;  // short of space only when the test says so ("space")
    o.fault = [this](std::string_view op, const std::string& path) -> int {
      (void)path;
      if (op == "write" || op == "open") return write_errno_.load();
      if (op == "sync") return sync_errno_.load();
      if (op == "space") return space_errno_.load();
      return 0;
    };
    return o;
  }
  std::atomic<int> write_errno_{0}, sync_errno_{0}, space_errno_{0};
};

TEST_F(FailingDiskTest, AFullDiskRefusesChangesServesReadsAndResumesOnceASnapshotFits) {
  std::multiset<std::string> before;
  {
    LoggedMaster a(dir_.path(), clock_, Faulty());
    CallContext ctx = Join(*a.master);
    ASSERT_TRUE(a.master->MountSegments(ctx, {Seg(1, 1 << 20)}).ok());
    a.PutN(ctx, 10);
    a.Settle();
    EXPECT_TRUE(a.master->Writable().ok());

    write_errno_ = ENOSPC;
    // A change admitted as the disk fills: applied, its record held, its reply (ticket) with it.
    ASSERT_TRUE(a.master->PutStart(ctx, "late", 100, {}).ok());
    MetaLog::Ticket held = MetaLog::TakeTicket();
    a.log->Flush();
    ASSERT_TRUE(a.log->failed());
    EXPECT_FALSE(a.log->Released(held));
    Status refused = a.master->Writable();
    EXPECT_EQ(refused.code(), Code::kFileWriteFail);
    EXPECT_NE(refused.message().find("No space left on device"), std::string::npos) << refused.ToString();
    EXPECT_NE(refused.message().find("serves reads"), std::string::npos) << refused.ToString();
    EXPECT_EQ(a.master->RegisterClient({ClientId{9, 9}, "h9", "new-tenant"}).code(), Code::kFileWriteFail);
    // Reads go on.
    auto info = a.master->GetReplicaList(ctx, "k3", false);
    ASSERT_TRUE(info.ok()) << info.status().ToString();
    EXPECT_EQ(info->size, 100u);
    auto s = a.log->stats();
    EXPECT_TRUE(s.failed);
    EXPECT_EQ(s.failures, 1u);
    EXPECT_NE(s.failure.find("No space"), std::string::npos);

    a.Maintain();  // the snapshot does not fit either
    EXPECT_TRUE(a.log->failed());
    EXPECT_FALSE(a.log->Released(held));

    write_errno_ = 0;  // space is back
    a.Maintain();
    EXPECT_FALSE(a.log->failed());
    EXPECT_TRUE(a.master->Writable().ok());
    EXPECT_TRUE(a.log->Released(held));  // the snapshot holds its record
    ASSERT_TRUE(a.master->PutEnd(ctx, "late", std::nullopt).ok());
    a.Settle();
    EXPECT_EQ(a.log->stats().failures, 1u);
    before = Fingerprint(*a.master);
  }
  LoggedMaster b(dir_.path(), clock_);
  EXPECT_EQ(Fingerprint(*b.master), before);
  EXPECT_EQ(b.master->Stats().keys, 11u);
}

// At the process level a write that fails holds the reply as at `always`: a change is answered only
// once its record is in the kernel, and a full disk makes the master read-only until a snapshot fits.
TEST_F(FailingDiskTest, AtTheProcessLevelAFullDiskHoldsRepliesUntilASnapshotFits) {
  MetaLog::Options o = Faulty();
  o.durability = MetaLog::Options::Durability::kProcess;
  std::multiset<std::string> before;
  {
    LoggedMaster a(dir_.path(), clock_, o);
    CallContext ctx = Join(*a.master);
    ASSERT_TRUE(a.master->MountSegments(ctx, {Seg(1, 1 << 20)}).ok());
    a.PutN(ctx, 3);
    a.Settle();
    write_errno_ = ENOSPC;
    ASSERT_TRUE(a.master->PutStart(ctx, "late", 100, {}).ok());
    MetaLog::Ticket held = MetaLog::TakeTicket();
    EXPECT_FALSE(held.sync);
    a.log->Flush();
    ASSERT_TRUE(a.log->failed());
    EXPECT_FALSE(a.log->Released(held));
    EXPECT_EQ(a.master->Writable().code(), Code::kFileWriteFail);
    write_errno_ = 0;
    a.Maintain();
    EXPECT_FALSE(a.log->failed());
    EXPECT_TRUE(a.log->Released(held));
    ASSERT_TRUE(a.master->PutEnd(ctx, "late", std::nullopt).ok());
    a.Settle();
    before = Fingerprint(*a.master);
  }
  LoggedMaster b(dir_.path(), clock_);
  EXPECT_EQ(Fingerprint(*b.master), before);
  EXPECT_EQ(b.master->Stats().keys, 4u);
}

TEST_F(FailingDiskTest, ASyncThatFailsIsNotTrustedAgainOnlyASnapshotVouchesForItsRecords) {
  LoggedMaster a(dir_.path(), clock_, Faulty());
  CallContext ctx = Join(*a.master);
  ASSERT_TRUE(a.master->MountSegments(ctx, {Seg(1, 1 << 20)}).ok());
  a.Settle();
  sync_errno_ = EIO;
  ASSERT_TRUE(a.master->PutStart(ctx, "k", 100, {}).ok());
  ASSERT_TRUE(a.master->PutEnd(ctx, "k", std::nullopt).ok());
  MetaLog::Ticket t = MetaLog::TakeTicket();
  a.log->Flush();  // written; the syncer's next sync fails, and the log with it
  while (!a.log->failed()) std::this_thread::yield();
  EXPECT_NE(a.log->stats().failure.find("Input/output error"), std::string::npos);
  sync_errno_ = 0;  // a sync that works now does not vouch for pages the failed one may have dropped
  EXPECT_FALSE(a.log->Released(t));  // (the syncer syncs nothing while the log is failed)
  a.Maintain();
  EXPECT_FALSE(a.log->failed());
  EXPECT_TRUE(a.log->Released(t));
  EXPECT_EQ(Files(".ybs").size(), 1u);
}

TEST_F(FailingDiskTest, TooLittleFreeSpaceFailsTheLogBeforeAWriteDoesAndAFullDiskAtStartIsReadOnly) {
  {
    LoggedMaster a(dir_.path(), clock_, Faulty());
    CallContext ctx = Join(*a.master);
    ASSERT_TRUE(a.master->MountSegments(ctx, {Seg(1, 1 << 20)}).ok());
    a.Settle();
    space_errno_ = ENOSPC;  // free space below min_free_bytes
    a.Maintain();
    EXPECT_TRUE(a.log->failed());
    EXPECT_NE(a.log->stats().failure.find("bytes are free"), std::string::npos) << a.log->stats().failure;
    a.Maintain();
    EXPECT_TRUE(a.log->failed());  // compacted, still short of space
    space_errno_ = 0;
    a.Maintain();
    EXPECT_FALSE(a.log->failed());
    ASSERT_TRUE(a.master->PutStart(ctx, "k", 100, {}).ok());
    ASSERT_TRUE(a.master->PutEnd(ctx, "k", std::nullopt).ok());
    a.Settle();
  }
  write_errno_ = ENOSPC;  // restarted on a full disk: it recovers, and starts refusing changes
  {
    LoggedMaster b(dir_.path(), clock_, Faulty());
    EXPECT_TRUE(b.log->failed());
    EXPECT_EQ(b.master->Writable().code(), Code::kFileWriteFail);
    CallContext ctx = Join(*b.master);
    EXPECT_TRUE(*b.master->ExistKey(ctx, "k"));
    write_errno_ = 0;
    b.Maintain();
    EXPECT_FALSE(b.log->failed());
    ASSERT_TRUE(b.master->Remove(ctx, "k", true).ok());
    b.Settle();
  }
  LoggedMaster c(dir_.path(), clock_);
  EXPECT_EQ(c.master->Stats().keys, 0u);
}

TEST_F(FailingDiskTest, AMasterThatStopsWhileFailedRecoversWhatWasAcknowledged) {
  {
    LoggedMaster a(dir_.path(), clock_, Faulty());
    CallContext ctx = Join(*a.master);
    ASSERT_TRUE(a.master->MountSegments(ctx, {Seg(1, 1 << 20)}).ok());
    ASSERT_TRUE(a.master->PutStart(ctx, "acked", 100, {}).ok());
    ASSERT_TRUE(a.master->PutEnd(ctx, "acked", std::nullopt).ok());
    a.Settle();
    write_errno_ = ENOSPC;
    ASSERT_TRUE(a.master->PutStart(ctx, "never", 100, {}).ok());
    ASSERT_TRUE(a.master->PutEnd(ctx, "never", std::nullopt).ok());
    (void)MetaLog::TakeTicket();
    a.log->Flush();
    ASSERT_TRUE(a.log->failed());
    // Stopping does not wait for what cannot be written.
  }
  write_errno_ = 0;
  LoggedMaster b(dir_.path(), clock_);
  CallContext ctx = Join(*b.master);
  EXPECT_TRUE(*b.master->ExistKey(ctx, "acked"));
  EXPECT_FALSE(*b.master->ExistKey(ctx, "never"));
}

}  // namespace
}  // namespace yb::ha

namespace yb::ha {
namespace {

// What a standby receives (the leader's snapshot, then its log read back by a LogTail, in small
// batches) rebuilds the leader's state exactly, and goes on in its own log.
TEST_F(MetaLogTest, AStandbyFedTheSnapshotAndTheTailHasTheLeadersState) {
  TempDir standby_dir{"yb-standby"};
  LoggedMaster a(dir_.path(), clock_);
  CallContext ctx = Join(*a.master);
  ASSERT_TRUE(a.master->MountSegments(ctx, {Seg(1, 1 << 20)}).ok());
  for (int i = 0; i < 40; ++i) {
    ASSERT_TRUE(a.master->PutStart(ctx, "a" + std::to_string(i), 100 + i, {}).ok());
    ASSERT_TRUE(a.master->PutEnd(ctx, "a" + std::to_string(i), std::nullopt).ok());
  }
  a.Settle();
  ASSERT_TRUE(a.Snapshot().ok());
  for (int i = 0; i < 40; ++i) {
    ASSERT_TRUE(a.master->PutStart(ctx, "b" + std::to_string(i), 100 + i, {}).ok());
    if (i % 3) {
      ASSERT_TRUE(a.master->PutEnd(ctx, "b" + std::to_string(i), std::nullopt).ok());
    }
  }
  clock_.AdvanceSec(11);
  ASSERT_TRUE(a.master->Remove(ctx, "a5", false).ok());
  a.Settle();

  MetaLog::Options so;
  so.dir = standby_dir.path();
  so.snapshot_log_bytes = 2000;  // the standby compacts its own log too
  MasterImage standby_image;
  auto standby_log = MetaLog::Open(so, &standby_image).value();
  LogApplier applier(*standby_log, standby_image);
  const uint64_t snap = a.log->latest_snapshot();
  ASSERT_GT(snap, 0u);
  std::string contents = ReadWholeFile(a.log->SnapshotPath(snap)).value();
  // The snapshot in two pieces, as the shipper cuts large ones.
  ASSERT_TRUE(applier.Apply(true, snap, std::string_view(contents).substr(0, contents.size() / 2), false, "").ok());
  auto after_snap = applier.Apply(false, snap, std::string_view(contents).substr(contents.size() / 2), true, "");
  ASSERT_TRUE(after_snap.ok()) << after_snap.status().ToString();
  EXPECT_EQ(*after_snap, snap);
  LogTail tail(dir_.path());
  uint64_t acked = snap;
  while (acked < a.log->written_seq()) {
    std::string frames;
    auto last = tail.Read(acked, a.log->written_seq(), 300, frames);  // small batches
    ASSERT_TRUE(last.ok()) << last.status().ToString();
    ASSERT_GT(*last, acked);
    auto applied = applier.Apply(false, 0, "", false, frames);
    ASSERT_TRUE(applied.ok()) << applied.status().ToString();
    EXPECT_EQ(*applied, *last);
    acked = *last;
  }
  // Its log called for a snapshot: it writes one from its image, at its last record, and drops the
  // log files that snapshot covers.
  ASSERT_TRUE(standby_log->SnapshotDue());
  bool copied = false;
  ASSERT_TRUE(applier.SnapshotIfDue([&] { copied = true; }).ok());
  EXPECT_TRUE(copied);
  EXPECT_EQ(standby_log->latest_snapshot(), acked);
  EXPECT_FALSE(standby_log->SnapshotDue());
  for (const auto& e : fs::directory_iterator(standby_dir.path())) {
    const std::string name = e.path().filename().string();
    if (auto first = ParseFileName(name, "log-", ".ybl")) {
      EXPECT_GT(*first, acked) << name;
    }
    if (auto snap = ParseFileName(name, "snap-", ".ybs")) {
      EXPECT_EQ(*snap, acked) << name;
    }
  }
  // The standby's image as a master equals the leader.
  auto rebuilt = MasterService::Create(MasterConfig{}, clock_).value();
  ASSERT_TRUE(rebuilt->Load(standby_image).ok());
  EXPECT_EQ(Fingerprint(*rebuilt), Fingerprint(*a.master));
  // What it received is in its own log: reopened, it has the same state.
  standby_log.reset();
  LoggedMaster reopened(standby_dir.path(), clock_);
  EXPECT_EQ(Fingerprint(*reopened.master), Fingerprint(*a.master));
  // Behind the oldest log file (a snapshot replaced it): the tail says so.
  std::string none;
  EXPECT_EQ(tail.Read(1, a.log->written_seq(), 100, none).code(), Code::kObjectNotFound);
}

}  // namespace
}  // namespace yb::ha
