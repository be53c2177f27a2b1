// HaMaster's parts on the manual clock: the Election against an etcd held in memory (leases expire
// as the clock moves), the leader's Standbys with a scripted etcd write, and the standby's Replica
// applying what a leader's log holds. The multi-process tests (tests/cluster/test_ha.py) run the
// whole of it against a real etcd.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "common/temp_dir.h"
#include "etcd/memory_etcd.h"
#include "ha/election.h"
#include "ha/log_format.h"
#include "ha/replica.h"
#include "ha/standbys.h"
#include "master/master_service.h"
#include "net/auth.h"

namespace yb::ha {
namespace {

using namespace std::chrono_literals;

// One master's election, with what its hooks were told.
struct Candidate {
  Candidate(std::string address, MemoryEtcd& etcd, const Clock& clock, std::string secret = "") {
    Election::Options o;
    o.cluster_id = "c";
    o.address = std::move(address);
    o.lease_ttl = 2000ms;
    o.secret = secret;
    if (!secret.empty()) o.view_keys = {secret};
    Election::Hooks h;
    h.lead = [this](uint64_t epoch) {
      led.push_back(epoch);
      return lead_status;
    };
    h.follow = [this](const std::string& leader) { followed.push_back(leader); };
    h.step_down = [this](const std::string& why) { stepped_down.push_back(why); };
    election = std::make_unique<Election>(o, etcd, clock, h);
  }
  Election& operator*() { return *election; }
  Election* operator->() { return election.get(); }

  std::unique_ptr<Election> election;
  Status lead_status = Status::OK();
  std::vector<uint64_t> led;
  std::vector<std::string> followed;
  std::vector<std::string> stepped_down;
};

class ElectionTest : public ::testing::Test {
 protected:
  ManualClock clock_;
  MemoryEtcd etcd_{clock_};
};

TEST_F(ElectionTest, TheFirstToCampaignLeadsAndTheOtherFollowsIt) {
  Candidate a("10.0.0.1:50051", etcd_, clock_), b("10.0.0.2:50051", etcd_, clock_);
  a->RunOnce();
  ASSERT_EQ(a.led.size(), 1u);
  EXPECT_TRUE(a->leading());
  EXPECT_TRUE(a->MayAnswer());
  EXPECT_EQ(a->epoch(), a.led[0]);
  EXPECT_EQ(a->leader(), "10.0.0.1:50051");
  EXPECT_EQ(etcd_.Value("mooncake-store/c/master_view"), "10.0.0.1:50051");  // Mooncake's spelling
  EXPECT_NE(etcd_.Value("mooncake-store/c/in_sync").find("\"leader\":\"10.0.0.1:50051\""), std::string::npos);

  b->RunOnce();
  EXPECT_TRUE(b.led.empty());
  EXPECT_FALSE(b->leading());
  EXPECT_FALSE(b->MayAnswer());
  EXPECT_EQ(b.followed, std::vector<std::string>{"10.0.0.1:50051"});
  EXPECT_EQ(b->leader(), "10.0.0.1:50051");
  EXPECT_EQ(b->epoch(), a->epoch());
  EXPECT_EQ(a->elections_won(), 1u);
}

// The leader renews every quarter TTL; cut off from etcd it stops answering a quarter TTL before
// the expiry it knows of, and steps down then, while etcd still holds its lease: no other master
// can lead while it still answers.
TEST_F(ElectionTest, ALeaderCutOffFromEtcdStopsAnsweringBeforeItsLeaseCanExpire) {
  Candidate a("a:1", etcd_, clock_);
  a->RunOnce();
  ASSERT_TRUE(a->leading());
  for (int i = 0; i < 20; ++i) {  // 10 s of renewals
    clock_.Advance(500);
    a->RunOnce();
    ASSERT_TRUE(a->MayAnswer()) << i;
  }
  EXPECT_EQ(etcd_.leases(), 1u);
  const TimeMs cut = clock_.NowMs();
  etcd_.SetReachable(false);
  while (a.stepped_down.empty() && clock_.NowMs() - cut < 5000) {
    clock_.Advance(100);
    a->RunOnce();
    if (a->MayAnswer()) {
      EXPECT_LT(clock_.NowMs() - cut, 1500);
    }
  }
  ASSERT_EQ(a.stepped_down.size(), 1u);
  EXPECT_NE(a.stepped_down[0].find("could not be renewed in time"), std::string::npos) << a.stepped_down[0];
  EXPECT_FALSE(a->leading());
  EXPECT_FALSE(a->MayAnswer());
  etcd_.SetReachable(true);
  EXPECT_EQ(etcd_.leases(), 1u);  // etcd still held the lease when it stopped
  EXPECT_EQ(a->step_downs(), 1u);
}

// A leader paused past its lease (SIGSTOP) answers nothing from the moment it wakes, before its
// next step; that step finds etcd has let the lease go and steps down.
TEST_F(ElectionTest, ALeaderPausedPastItsLeaseAnswersNothingOnWaking) {
  Candidate a("a:1", etcd_, clock_);
  a->RunOnce();
  ASSERT_TRUE(a->MayAnswer());
  clock_.Advance(3000);  // paused: no step ran
  EXPECT_FALSE(a->MayAnswer());
  EXPECT_EQ(etcd_.Value("mooncake-store/c/master_view"), "");  // gone with the lease
  a->RunOnce();
  ASSERT_EQ(a.stepped_down.size(), 1u);
  EXPECT_NE(a.stepped_down[0].find("no longer has this master's lease"), std::string::npos) << a.stepped_down[0];
}

// Only a master the last leader's in-sync list names may take over: another waits, whatever
// happens to the leader.
TEST_F(ElectionTest, OnlyAMasterTheInSyncListNamesTakesOver) {
  Candidate a("a:1", etcd_, clock_), b("b:1", etcd_, clock_), c("c:1", etcd_, clock_);
  a->RunOnce();
  ASSERT_TRUE(a->leading());
  ASSERT_TRUE(a->WriteInSync({"b:1"}));
  const uint64_t first = a->epoch();
  ASSERT_TRUE(a->GiveLeaseBack());  // a stops: its key goes at once
  c->RunOnce();
  EXPECT_TRUE(c.led.empty());
  EXPECT_TRUE(c.followed.empty());
  b->RunOnce();
  ASSERT_EQ(b.led.size(), 1u);
  EXPECT_GT(b->epoch(), first);
  c->RunOnce();
  EXPECT_EQ(c.followed, std::vector<std::string>{"b:1"});
}

// A list that is not the leaders' (damaged, or written by someone else) stops every campaign; a
// new cluster's (no list) lets anyone lead.
TEST_F(ElectionTest, AMalformedInSyncListStopsEveryCampaign) {
  Candidate a("a:1", etcd_, clock_);
  for (const char* bad : {"garbage", "[]", R"({"standbys": "a:1"})", R"({"leader": 5})"}) {
    etcd_.Put("mooncake-store/c/in_sync", bad);
    a->RunOnce();
    EXPECT_TRUE(a.led.empty()) << bad;
  }
  etcd_.Delete("mooncake-store/c/in_sync");
  a->RunOnce();
  EXPECT_EQ(a.led.size(), 1u);
}

// With a secret, a name no master of this cluster signed is followed by no one, and no log is taken
// from the master it names; the signed name is.
TEST_F(ElectionTest, WithASecretAnUnsignedNameIsNeitherFollowedNorShippedFrom) {
  Candidate b("b:1", etcd_, clock_, "s3cret");
  etcd_.Put("mooncake-store/c/master_view", "evil:1");
  b->RunOnce();
  EXPECT_TRUE(b.followed.empty());
  EXPECT_TRUE(b.led.empty());
  EXPECT_EQ(b->leader(), "");
  EXPECT_EQ(b->AcceptShipper("evil:1", 2).code(), Code::kIllegalClient);

  etcd_.Delete("mooncake-store/c/master_view");
  Candidate a("a:1", etcd_, clock_, "s3cret");
  a->RunOnce();
  ASSERT_TRUE(a->leading());
  EXPECT_NE(etcd_.Value("mooncake-store/c/master_view"), "a:1");  // signed
  b->RunOnce();
  EXPECT_EQ(b.followed, std::vector<std::string>{"a:1"});
  EXPECT_TRUE(b->AcceptShipper("a:1", a->epoch()).ok());
  // Another master claiming to lead, or the leader at another epoch, is refused.
  Status other = b->AcceptShipper("c:1", a->epoch());
  EXPECT_EQ(other.code(), Code::kIllegalClient);
  EXPECT_NE(other.message().find("etcd names a:1"), std::string::npos) << other.ToString();
  EXPECT_EQ(b->AcceptShipper("a:1", a->epoch() + 1).code(), Code::kIllegalClient);
}

// A leader whose key is no longer the one it created (deleted by an operator, another's since)
// steps down at its next write of the in-sync list, and the write is not taken.
TEST_F(ElectionTest, ALeaderWhoseKeyIsNoLongerItsStepsDownAtItsNextWrite) {
  Candidate a("a:1", etcd_, clock_);
  a->RunOnce();
  ASSERT_TRUE(a->leading());
  etcd_.Delete("mooncake-store/c/master_view");
  etcd_.Put("mooncake-store/c/master_view", "b:1");
  EXPECT_FALSE(a->WriteInSync({"x:1"}));
  ASSERT_EQ(a.stepped_down.size(), 1u);
  EXPECT_EQ(etcd_.Value("mooncake-store/c/in_sync").find("x:1"), std::string::npos);
}

// A master that wins but cannot build its master (its log's state does not load) steps down.
TEST_F(ElectionTest, AWinnerThatCannotBuildItsMasterStepsDown) {
  Candidate a("a:1", etcd_, clock_);
  a.lead_status = Status(Code::kInternal, "the replicated state does not load");
  a->RunOnce();
  EXPECT_EQ(a.led.size(), 1u);
  EXPECT_FALSE(a->leading());
  ASSERT_EQ(a.stepped_down.size(), 1u);
  EXPECT_NE(a.stepped_down[0].find("does not load"), std::string::npos);
}

// An etcd not reached: nothing is decided, and the master neither leads nor follows.
TEST_F(ElectionTest, WithoutEtcdNoOneLeads) {
  Candidate a("a:1", etcd_, clock_);
  etcd_.SetReachable(false);
  for (int i = 0; i < 5; ++i) {
    a->RunOnce();
    clock_.Advance(100);
  }
  EXPECT_TRUE(a.led.empty());
  EXPECT_TRUE(a.followed.empty());
  EXPECT_FALSE(a->MayAnswer());
}

// ---- the leader's standbys

class StandbysTest : public ::testing::Test {
 protected:
  StandbysTest() {
    MetaLog::Options o;
    o.dir = dir_.path();
    o.durability = MetaLog::Options::Durability::kProcess;  // released once written (and acked)
    MasterImage image;
    log_ = MetaLog::Open(o, &image).value();
    Standbys::Hooks h;
    h.write_in_sync = [this](const std::vector<std::string>& listed) {
      writes_.push_back(listed);
      if (fail_writes_ > 0) {
        --fail_writes_;
        return false;
      }
      return true;
    };
    h.may_answer = [this] { return may_answer_; };
    standbys_ = std::make_unique<Standbys>(Standbys::Options{"leader:1", nullptr}, *log_, clock_, h);
  }
  // Appends `n` records and writes them: the last one's number.
  uint64_t Append(int n) {
    for (int i = 0; i < n; ++i) {
      pb::LogRecord r;
      r.set_object_gone("k" + std::to_string(i));
      log_->Append(r);
    }
    log_->Flush();
    const uint64_t last = log_->last_seq();
    while (log_->written_seq() < last) log_->WaitWritten(log_->written_seq(), 1s);
    return last;
  }

  TempDir dir_{"yb-standbys"};
  ManualClock clock_;
  std::unique_ptr<MetaLog> log_;
  std::vector<std::vector<std::string>> writes_;
  int fail_writes_ = 0;
  bool may_answer_ = true;
  std::unique_ptr<Standbys> standbys_;
};

// A standby counted holds back the release of every record it has not acknowledged; one that is
// not counted does not.
TEST_F(StandbysTest, ACountedStandbyHoldsBackWhatItHasNotAcked) {
  const uint64_t before = Append(3);
  EXPECT_EQ(log_->released_seq(), before);
  EXPECT_EQ(standbys_->OnCaughtUp("s:1"), before);  // every change answered without it
  EXPECT_EQ(standbys_->counted(), std::vector<std::string>{"s:1"});
  EXPECT_TRUE(standbys_->listed().empty());
  const uint64_t after = Append(2);
  EXPECT_EQ(log_->released_seq(), 0u);
  standbys_->OnAcked("s:1", before + 1);
  EXPECT_EQ(log_->released_seq(), before + 1);
  standbys_->OnAcked("s:1", 1);  // an older acknowledgement lowers nothing
  EXPECT_EQ(log_->released_seq(), before + 1);
  standbys_->OnAcked("other:1", after);  // not counted: no effect
  EXPECT_EQ(log_->released_seq(), before + 1);
  standbys_->OnAcked("s:1", after);
  EXPECT_EQ(log_->released_seq(), after);
  EXPECT_TRUE(writes_.empty());  // counting is not listing
}

// Listed only once etcd took the list naming it; a list etcd refused leaves it counted, unlisted.
TEST_F(StandbysTest, AStandbyIsListedOnlyOnceEtcdTookTheList) {
  EXPECT_FALSE(standbys_->OnSyncChanged("never:1", true));  // not counted: never listed
  EXPECT_TRUE(writes_.empty());
  (void)standbys_->OnCaughtUp("s:1");
  fail_writes_ = 1;
  EXPECT_FALSE(standbys_->OnSyncChanged("s:1", true));
  EXPECT_TRUE(standbys_->listed().empty());
  EXPECT_EQ(standbys_->counted(), std::vector<std::string>{"s:1"});
  EXPECT_TRUE(standbys_->OnSyncChanged("s:1", true));
  EXPECT_EQ(standbys_->listed(), std::vector<std::string>{"s:1"});
  ASSERT_EQ(writes_.size(), 2u);
  EXPECT_EQ(writes_[1], std::vector<std::string>{"s:1"});
}

// A standby leaves etcd's list before it stops being counted: while etcd does not take the list
// without it, changes go on waiting for it, and the list is written again.
TEST_F(StandbysTest, AStandbyLeavesTheListBeforeChangesStopWaitingForIt) {
  (void)standbys_->OnCaughtUp("s:1");
  (void)standbys_->OnCaughtUp("t:1");
  ASSERT_TRUE(standbys_->OnSyncChanged("s:1", true));
  ASSERT_TRUE(standbys_->OnSyncChanged("t:1", true));
  writes_.clear();
  Append(2);
  fail_writes_ = 2;
  const TimeMs t0 = clock_.NowMs();
  EXPECT_TRUE(standbys_->OnSyncChanged("s:1", false));
  ASSERT_EQ(writes_.size(), 3u);
  for (const auto& w : writes_) EXPECT_EQ(w, std::vector<std::string>{"t:1"});
  EXPECT_GE(clock_.NowMs() - t0, 200);  // tried again every 100 ms
  EXPECT_EQ(standbys_->counted(), std::vector<std::string>{"t:1"});
  EXPECT_EQ(log_->released_seq(), 0u);                  // t:1 acked nothing yet
  EXPECT_TRUE(standbys_->OnSyncChanged("s:1", false));  // no longer counted: nothing to do
  EXPECT_EQ(writes_.size(), 3u);
}

// A leader past the moment it may answer stops counting a standby without telling etcd: it answers
// nothing more, so nothing the standby lacks can be acknowledged.
TEST_F(StandbysTest, PastItsLastAnswerTheLeaderStopsCountingWithoutEtcd) {
  (void)standbys_->OnCaughtUp("s:1");
  ASSERT_TRUE(standbys_->OnSyncChanged("s:1", true));
  const uint64_t last = Append(1);
  fail_writes_ = 100;
  may_answer_ = false;
  EXPECT_TRUE(standbys_->OnSyncChanged("s:1", false));
  EXPECT_TRUE(standbys_->counted().empty());
  EXPECT_EQ(log_->released_seq(), last);
}

// ---- the standby's replica

// A leader's master writing its log: one client and one segment.
struct LeaderLog {
  LeaderLog() {
    MetaLog::Options o;
    o.dir = dir.path();
    MasterImage unused;
    log = MetaLog::Open(o, &unused).value();
    master = MasterService::Create(MasterConfig{}, clock).value();
    master->SetSink(log.get());
    AddNode(1);
  }
  // A client that mounts segment `n` ("node-<n>"), its records written.
  void AddNode(uint64_t n) {
    auto ctx = master->RegisterClient({ClientId{n + 4, n + 4}, "h", "default"}).value();
    EXPECT_TRUE(master->MountSegments(ctx, {SegmentMount{{n, "node-" + std::to_string(n), 0, 1 << 20, "e"}, 7}}).ok());
    log->Flush();
  }
  // Its records after `after`, as a shipper reads them.
  std::string Frames(uint64_t after) {
    std::string out;
    LogTail tail(dir.path());
    EXPECT_TRUE(tail.Read(after, log->last_seq(), 1 << 20, out).ok());
    return out;
  }
  TempDir dir{"yb-leader"};
  ManualClock clock;
  std::unique_ptr<MetaLog> log;
  std::unique_ptr<MasterService> master;
};

// A standby's empty log directory, opened: `image` is what it replayed (the Replica takes it).
struct StandbyLog {
  StandbyLog() {
    MetaLog::Options o;
    o.dir = dir.path();
    log = MetaLog::Open(o, &image).value();
  }
  TempDir dir{"yb-replica"};
  MasterImage image;
  std::unique_ptr<MetaLog> log;
};

pb::ApplyLogRequest Ship(uint64_t epoch, bool snapshot, std::string frames, bool in_sync = false) {
  pb::ApplyLogRequest q;
  q.set_leader("leader:1");
  q.set_epoch(epoch);
  if (snapshot) {
    q.set_snapshot_begin(true);
    q.set_snapshot_seq(0);  // an empty snapshot: the leader's log starts from its first record
    q.set_snapshot_done(true);
  }
  q.set_frames(std::move(frames));
  q.set_in_sync(in_sync);
  return q;
}

TEST(ReplicaTest, ALeadersLogAppliedThenPromotedServesItsState) {
  LeaderLog leader;
  StandbyLog standby;
  MetaLog* log = standby.log.get();
  Replica replica(*log, std::move(standby.image));

  // A new leader starts with its snapshot: records alone are refused, and nothing is applied.
  auto refused = replica.Apply(Ship(3, false, leader.Frames(0)));
  EXPECT_NE(refused.status().message().find("starts with its snapshot"), std::string::npos);
  EXPECT_EQ(log->last_seq(), 0u);

  auto applied = replica.Apply(Ship(3, true, leader.Frames(0), /*in_sync=*/true));
  EXPECT_EQ(applied.status().code(), 0u) << applied.status().message();
  EXPECT_EQ(applied.last_seq(), leader.log->last_seq());
  EXPECT_NE(applied.digest(), 0u);
  EXPECT_TRUE(replica.in_sync());
  EXPECT_NE(replica.Summary().find("1 segments"), std::string::npos) << replica.Summary();
  // The same leader goes on without a snapshot; records that do not parse are refused, and the next
  // request must begin a snapshot again.
  auto bad = replica.Apply(Ship(3, false, "not frames"));
  EXPECT_NE(bad.status().code(), 0u);

  ManualClock clock;
  auto promoted = MasterService::Create(MasterConfig{}, clock).value();
  ASSERT_TRUE(replica.Promote(*promoted).ok());
  auto awaiting = promoted->AwaitingSegments();
  ASSERT_EQ(awaiting.size(), 1u);  // restored until its owner re-mounts it, as after a restart
  EXPECT_EQ(awaiting[0].desc.id, 1u);
  EXPECT_NE(replica.Summary().find("0 segments"), std::string::npos);  // the master holds it now
}

// A call the leader gave up on (the standby paused past its deadline, the request left in a socket)
// may arrive after the leader's later calls, on another connection. Refused then, changing nothing:
// taken, it rewound a snapshot being received or clashed with the records shipped since, and the
// standby was shipped the whole state again.
TEST(ReplicaTest, ACallTheLeaderGaveUpOnChangesNothingWhenItArrivesLate) {
  LeaderLog leader;
  StandbyLog standby;
  MetaLog* log = standby.log.get();
  Replica replica(*log, std::move(standby.image));
  auto call = [](pb::ApplyLogRequest q, uint64_t n) {
    q.set_call(n);
    return q;
  };
  ASSERT_EQ(replica.Apply(call(Ship(3, true, leader.Frames(0)), 1)).status().code(), 0u);
  const uint64_t after = leader.log->last_seq();
  leader.AddNode(2);
  const std::string records = leader.Frames(after);
  // The leader gave up on call 2 and shipped the same records as call 3, which arrived first.
  auto taken = replica.Apply(call(Ship(3, false, records), 3));
  ASSERT_EQ(taken.status().code(), 0u) << taken.status().message();
  auto late = replica.Apply(call(Ship(3, false, records), 2));
  EXPECT_NE(late.status().message().find("gave up on it"), std::string::npos) << late.status().message();
  auto late_snapshot = replica.Apply(call(Ship(3, true, ""), 2));
  EXPECT_NE(late_snapshot.status().code(), 0u);
  // Where it stands is what call 3 left, and the leader goes on from there.
  auto probe = replica.Apply(call(Ship(3, false, ""), 4));
  ASSERT_EQ(probe.status().code(), 0u) << probe.status().message();
  EXPECT_EQ(probe.last_seq(), taken.last_seq());
  EXPECT_EQ(probe.digest(), taken.digest());
  const uint64_t after2 = leader.log->last_seq();
  leader.AddNode(3);
  auto next = replica.Apply(call(Ship(3, false, leader.Frames(after2)), 5));
  ASSERT_EQ(next.status().code(), 0u) << next.status().message();
  EXPECT_EQ(next.last_seq(), leader.log->last_seq());
  EXPECT_NE(replica.Summary().find("3 segments"), std::string::npos) << replica.Summary();
  // A new leader numbers its calls afresh.
  auto new_leader = replica.Apply(call(Ship(4, true, leader.Frames(0)), 1));
  EXPECT_EQ(new_leader.status().code(), 0u) << new_leader.status().message();
}

// A standby answers records once they are in its log; its thread applies them to the image behind
// the answer (a few records, none waiting, are applied before it: the test sends every record through
// the thread).
TEST(ReplicaTest, RecordsAreAnsweredOnceLoggedAndAppliedBeforeAnyoneReadsTheImage) {
  LeaderLog leader;
  StandbyLog standby;
  MetaLog* log = standby.log.get();
  Replica replica(*log, std::move(standby.image), /*apply_here_bytes=*/0);  // every record through the thread
  ASSERT_EQ(replica.Apply(Ship(3, true, leader.Frames(0), true)).status().code(), 0u);

  // Records alone: in the standby's log when answered; the image has them whenever it is read.
  for (uint64_t n = 2; n <= 4; ++n) {
    const uint64_t after = leader.log->last_seq();
    leader.AddNode(n);
    auto answered = replica.Apply(Ship(3, false, leader.Frames(after), true));
    ASSERT_EQ(answered.status().code(), 0u) << answered.status().message();
    EXPECT_EQ(answered.last_seq(), leader.log->last_seq());
    EXPECT_EQ(log->last_seq(), leader.log->last_seq());
  }
  EXPECT_NE(replica.Summary().find("4 segments"), std::string::npos) << replica.Summary();
  EXPECT_EQ(replica.queued_bytes(), 0u);

  // A record whose frame is intact but whose content does not parse: answered (it is in the log),
  // and then this standby may not take over, and takes no records, until a snapshot replaces its image.
  std::string bad;
  AppendFrame(log->last_seq() + 1, "\xff\xff\xff", bad);
  ASSERT_EQ(replica.Apply(Ship(3, false, bad, true)).status().code(), 0u);
  (void)replica.Summary();  // applied by now
  const uint64_t after = leader.log->last_seq();
  leader.AddNode(9);
  auto refused = replica.Apply(Ship(3, false, leader.Frames(after), true));
  EXPECT_NE(refused.status().message().find("does not parse"), std::string::npos) << refused.status().message();
  ManualClock clock;
  auto not_promoted = MasterService::Create(MasterConfig{}, clock).value();
  EXPECT_FALSE(replica.Promote(*not_promoted).ok());

  // The snapshot that replaces it, in two parts as the shipper cuts a large one: the second part
  // is taken too, though the image still lacks the record until the snapshot is done.
  pb::ApplyLogRequest first = Ship(3, true, "", true);
  first.set_snapshot_done(false);
  ASSERT_EQ(replica.Apply(std::move(first)).status().code(), 0u);
  pb::ApplyLogRequest rest = Ship(3, false, leader.Frames(0), true);
  rest.set_snapshot_done(true);
  EXPECT_FALSE(replica.Promote(*not_promoted).ok());  // not until it is done
  auto again = replica.Apply(std::move(rest));
  ASSERT_EQ(again.status().code(), 0u) << again.status().message();
  EXPECT_EQ(again.last_seq(), leader.log->last_seq());
  auto promoted = MasterService::Create(MasterConfig{}, clock).value();
  ASSERT_TRUE(replica.Promote(*promoted).ok());
  EXPECT_EQ(promoted->AwaitingSegments().size(), 5u);
}

}  // namespace
}  // namespace yb::ha
