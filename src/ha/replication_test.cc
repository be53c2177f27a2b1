// LogShipper against a standby served by a real RpcServer on loopback. The shipper's heartbeats
// and retries run on its own thread over real sockets; the tests wait for a condition it reaches
// (in sync, a number of calls) under a generous real deadline, never for a length of time.
#include "ha/replication.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <filesystem>
#include <future>
#include <mutex>
#include <thread>

#include "common/temp_dir.h"
#include "ha.pb.h"
#include "ha/replica.h"
#include "master/master_service.h"
#include "rpc/master_convert.h"
#include "rpc/server.h"

namespace yb::ha {
namespace {

// A standby's ApplyLog handler: applies what is shipped to its own log and image.
class Standby {
 public:
  // `lie`: answers every ApplyLog with a record far beyond what it was shipped, applying nothing
  // (what a process posing as a standby could say to be counted in sync).
  explicit Standby(bool lie = false) {
    MetaLog::Options o;
    o.dir = dir_.path();
    MasterImage image;
    log_ = MetaLog::Open(o, &image).value();
    replica_ = std::make_unique<Replica>(*log_, std::move(image));
    rpc::RpcServer::Options so;
    so.address = "127.0.0.1";
    server_ = std::make_unique<rpc::RpcServer>(so);
    server_->Register(static_cast<uint16_t>(HaMethod::kApplyLog),
                      [this, lie](const net::Peer&, std::string_view body, std::string& reply) {
                        pb::ApplyLogRequest q;
                        pb::ApplyLogResponse r;
                        if (!q.ParseFromArray(body.data(), static_cast<int>(body.size()))) {
                          return Status(Code::kInvalidParams, "ApplyLog does not parse");
                        }
                        std::unique_lock lock(mu_);
                        // Paused (a SIGSTOPped process): the request waits, and is applied when it
                        // resumes, its answer long given up on.
                        resumed_.wait(lock, [&] { return !paused_; });
                        ++calls_;
                        if (lie) {
                          rpc::ToPb(Status::OK(), r.mutable_status());
                          r.set_last_seq(uint64_t{1} << 40);
                          reply += r.SerializeAsString();
                          return Status::OK();
                        }
                        reply += replica_->Apply(std::move(q)).SerializeAsString();
                        return Status::OK();
                      });
    EXPECT_TRUE(server_->Start().ok());
  }
  ~Standby() {
    Pause(false);
    server_->Stop();
  }
  void Pause(bool paused) {
    {
      std::lock_guard lock(mu_);
      paused_ = paused;
    }
    resumed_.notify_all();
  }
  // What a standby that lost its memory of the shipping (restarted) holds: its log, and no digest.
  void Forget() {
    std::lock_guard lock(mu_);
    replica_.reset();
    replica_ = std::make_unique<Replica>(*log_, MasterImage{});
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(server_->port()); }
  uint64_t last_seq() {
    std::lock_guard lock(mu_);
    return log_->last_seq();
  }
  int calls() {
    std::lock_guard lock(mu_);
    return calls_;
  }

 private:
  TempDir dir_{"yb-standby"};
  std::unique_ptr<MetaLog> log_;
  std::mutex mu_;
  std::condition_variable resumed_;
  bool paused_ = false;
  std::unique_ptr<Replica> replica_;
  std::unique_ptr<rpc::RpcServer> server_;
  int calls_ = 0;
};

// Whether `done` became true within a generous real deadline (20 s): the shipper's thread and the
// sockets run on their own, so the tests wait for what they reach, never for a length of time.
bool Eventually(const std::function<bool()>& done) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::yield();
  }
  return true;
}

// How the tests ship: to `standby`, heartbeats every `heartbeat`.
LogShipper::Options ShipTo(const std::string& standby, std::chrono::milliseconds heartbeat) {
  LogShipper::Options so;
  so.standby = standby;
  so.epoch = 1;
  so.leader = "leader:1";
  so.heartbeat = heartbeat;
  return so;
}

// A leader's master writing its log, with one client and a segment mounted.
struct Leader {
  Leader() {
    MetaLog::Options lo;
    lo.dir = dir.path();
    MasterImage unused;
    log = MetaLog::Open(lo, &unused).value();
    master = MasterService::Create(MasterConfig{}, clock).value();
    master->SetSink(log.get());
    ctx = master->RegisterClient({ClientId{5, 5}, "h", "default"}).value();
    EXPECT_TRUE(master->MountSegments(ctx, {SegmentMount{{1, "node-1", 0, 1 << 20, "e"}, 7}}).ok());
  }
  TempDir dir{"yb-leader"};
  ManualClock clock;
  std::unique_ptr<MetaLog> log;
  std::unique_ptr<MasterService> master;
  CallContext ctx;
};

// A standby is counted (changes wait for it) once it has caught up, and listed as able to take over
// only once it also has every change the leader answered without it: the changes made while it was
// being counted included. (Listed at once, a standby that took over right then lacked them: an
// acknowledged Put was lost after a kill -9 of the leader.)
TEST(LogShipperTest, AStandbyIsListedOnlyOnceItHasEveryChangeAnsweredWithoutIt) {
  Leader leader;
  auto& log = leader.log;
  auto& master = leader.master;
  CallContext& ctx = leader.ctx;
  auto put = [&](const std::string& key) {
    ASSERT_TRUE(master->PutStart(ctx, key, 100, {}).ok());
    ASSERT_TRUE(master->PutEnd(ctx, key, std::nullopt).ok());
    log->Wait(MetaLog::TakeTicket());
  };
  for (int i = 0; i < 5; ++i) put("before-" + std::to_string(i));

  Standby standby;
  std::mutex mu;
  uint64_t join_seq = 0;
  std::promise<uint64_t> listed;  // the standby's last record when it was listed
  LogShipper::Hooks hooks;
  hooks.acked = [](const std::string&, uint64_t) {};
  hooks.caught_up = [&](const std::string&) {
    // Answered while the standby was being counted, before changes waited for it.
    for (int i = 0; i < 3; ++i) put("while-counted-" + std::to_string(i));
    std::lock_guard lock(mu);
    join_seq = log->last_seq();
    return join_seq;
  };
  bool once = false;
  hooks.sync_changed = [&](const std::string&, bool in_sync) {
    if (in_sync && !once) {
      once = true;
      listed.set_value(standby.last_seq());
    }
    return true;
  };
  LogShipper::Options so = ShipTo(standby.address(), std::chrono::milliseconds(20));
  LogShipper shipper(so, *log, hooks);
  shipper.Start();
  auto f = listed.get_future();
  ASSERT_EQ(f.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  const uint64_t at_listing = f.get();
  {
    std::lock_guard lock(mu);
    EXPECT_GE(at_listing, join_seq);
    EXPECT_GT(join_seq, 0u);
  }
  // The shipper marks itself in sync once the hook that listed it has returned.
  (void)Eventually([&] { return shipper.in_sync(); });
  EXPECT_TRUE(shipper.in_sync());
}

// A process posing as a standby that answers each ApplyLog with a record far past what it was
// shipped is never counted: the leader takes an acknowledgement only of what it shipped, with the
// digest of those bytes.
TEST(LogShipperTest, AStandbyThatClaimsMoreThanItWasShippedIsNeverCounted) {
  Leader leader;
  auto& log = leader.log;
  log->Wait(MetaLog::TakeTicket());

  Standby liar(/*lie=*/true);
  std::atomic<int> caught_up{0}, listed{0};
  LogShipper::Hooks hooks;
  hooks.acked = [](const std::string&, uint64_t) {};
  hooks.caught_up = [&](const std::string&) {
    ++caught_up;
    return log->last_seq();
  };
  hooks.sync_changed = [&](const std::string&, bool in_sync) {
    listed += in_sync;
    return true;
  };
  LogShipper::Options so = ShipTo(liar.address(), std::chrono::milliseconds(5));
  LogShipper shipper(so, *log, hooks);
  shipper.Start();
  // Many rounds of shipping, each answered with the lie.
  (void)Eventually([&] { return liar.calls() >= 20; });
  EXPECT_GE(liar.calls(), 20);
  EXPECT_EQ(caught_up.load(), 0);
  EXPECT_EQ(listed.load(), 0);
  EXPECT_FALSE(shipper.in_sync());
  EXPECT_LT(shipper.acked(), uint64_t{1} << 40);

  // A real standby on the same log is counted.
  Standby honest;
  so.standby = honest.address();
  std::promise<void> counted;
  bool once = false;
  hooks.sync_changed = [&](const std::string&, bool in_sync) {
    if (in_sync && !once) {
      once = true;
      counted.set_value();
    }
    return true;
  };
  LogShipper good(so, *log, hooks);
  good.Start();
  EXPECT_EQ(counted.get_future().wait_for(std::chrono::seconds(20)), std::future_status::ready);
}

// Records the standby needs that are in no log file, with no snapshot past what it has (a failed
// log goes on after records it never wrote, until its next snapshot): the shipper ships its snapshot
// once and then looks again each heartbeat (it shipped the same snapshot again and again, without a
// pause, for as long as that lasted), and ships the snapshot that holds them as soon as there is one.
TEST(LogShipperTest, RecordsInNoFileAreWaitedForUntilASnapshotHoldsThem) {
  Leader leader;
  auto& log = leader.log;
  log->Wait(MetaLog::TakeTicket());
  const uint64_t written = log->last_seq();
  ASSERT_GT(written, 0u);
  for (const auto& e : std::filesystem::directory_iterator(leader.dir.path())) {
    if (e.path().extension() == ".ybl") std::filesystem::remove(e.path());
  }

  Standby standby;
  std::atomic<int> snapshots{0};
  std::atomic<uint64_t> last_snapshot{UINT64_MAX};
  LogShipper::Hooks hooks;
  hooks.acked = [](const std::string&, uint64_t) {};
  hooks.caught_up = [&](const std::string&) { return log->last_seq(); };
  hooks.sync_changed = [](const std::string&, bool) { return true; };
  hooks.snapshot_begun = [&](const std::string&, uint64_t seq) {
    last_snapshot = seq;
    ++snapshots;
  };
  ManualClock clock;
  const TimeMs start = clock.NowMs();
  LogShipper::Options so = ShipTo(standby.address(), std::chrono::milliseconds(20));
  so.clock = &clock;
  LogShipper shipper(so, *log, hooks);
  shipper.Start();
  // Each look is a heartbeat on the shipper's clock: ten of them, and still the one snapshot.
  (void)Eventually([&] { return clock.NowMs() - start >= 10 * 20; });
  EXPECT_GE(clock.NowMs() - start, 10 * 20);
  EXPECT_EQ(snapshots.load(), 1);
  EXPECT_EQ(last_snapshot.load(), 0u);
  EXPECT_FALSE(shipper.in_sync());

  // A snapshot that holds them: shipped, and the standby caught up with it.
  ASSERT_TRUE(
      log->Snapshot([&](const auto& emit) { leader.master->WriteImage(emit); }, leader.master->next_object_id()).ok());
  ASSERT_EQ(log->latest_snapshot(), written);
  (void)Eventually([&] { return shipper.in_sync(); });
  EXPECT_TRUE(shipper.in_sync());
  EXPECT_EQ(snapshots.load(), 2);
  EXPECT_EQ(last_snapshot.load(), written);
  EXPECT_EQ(standby.last_seq(), written);
}

// A standby paused past the call timeout (its last request applied only when it wakes, the answer
// lost) is asked where it stands when it answers again, and shipped the log from there: not the
// whole state again, as it was. One that lost what it was shipped (restarted) gets a snapshot. A
// later shipper (the first one dropped when the standby went silent) goes on from where the
// first left it too.
TEST(LogShipperTest, AStandbyThatWasPausedGoesOnFromWhereItStoodAndOneThatForgotStartsOver) {
  Leader leader;
  auto& log = leader.log;
  auto put = [&](const std::string& key) {
    ASSERT_TRUE(leader.master->PutStart(leader.ctx, key, 100, {}).ok());
    ASSERT_TRUE(leader.master->PutEnd(leader.ctx, key, std::nullopt).ok());
  };
  put("first");
  log->Wait(MetaLog::TakeTicket());

  Standby standby;
  std::atomic<int> snapshots{0}, dropped{0};
  LogShipper::Hooks hooks;
  hooks.acked = [](const std::string&, uint64_t) {};
  hooks.caught_up = [&](const std::string&) { return log->last_seq(); };
  hooks.sync_changed = [&](const std::string&, bool in_sync) {
    dropped += !in_sync;
    return true;
  };
  hooks.snapshot_begun = [&](const std::string&, uint64_t) { ++snapshots; };
  LogShipper::Options so = ShipTo(standby.address(), std::chrono::milliseconds(10));
  so.call_timeout = std::chrono::milliseconds(100);
  auto shipper = std::make_unique<LogShipper>(so, *log, hooks);
  shipper->Start();
  auto caught_up = [&] { return shipper->in_sync() && standby.last_seq() == log->last_seq(); };
  ASSERT_TRUE(Eventually(caught_up));
  EXPECT_EQ(snapshots.load(), 1);

  // Paused while records are shipped to it: dropped, then back, and given only the log.
  standby.Pause(true);
  put("while-paused-1");
  ASSERT_TRUE(Eventually([&] { return dropped.load() == 1; }));
  put("while-paused-2");
  standby.Pause(false);
  ASSERT_TRUE(Eventually(caught_up));
  EXPECT_EQ(snapshots.load(), 1);

  // The shipper stops (dropped as silent); the next one goes on from where it left the standby.
  put("between-shippers");
  shipper->Stop();
  so.resume_from = shipper->resume_points();
  ASSERT_EQ(so.resume_from.size(), 1u);
  shipper = std::make_unique<LogShipper>(so, *log, hooks);
  shipper->Start();
  ASSERT_TRUE(Eventually(caught_up));
  EXPECT_EQ(snapshots.load(), 1);

  // A standby that forgot what it was shipped while paused: it answers at no position shipped to it.
  standby.Pause(true);
  put("while-forgotten");
  ASSERT_TRUE(Eventually([&] { return dropped.load() == 2; }));
  standby.Forget();
  standby.Pause(false);
  ASSERT_TRUE(Eventually(caught_up));
  EXPECT_EQ(snapshots.load(), 2);
}

}  // namespace
}  // namespace yb::ha
