// LogShipper against a standby served by a real RpcServer on loopback.
#include "ha/replication.h"

#include <gtest/gtest.h>

#include <future>
#include <mutex>
#include <thread>

#include "common/temp_dir.h"
#include "ha.pb.h"
#include "master/master_service.h"
#include "rpc/master_convert.h"
#include "rpc/server.h"

namespace yb::ha {
namespace {

// A standby's ApplyLog handler: applies what is shipped to its own log and image.
class Standby {
 public:
  Standby() {
    MetaLog::Options o;
    o.dir = dir_.path();
    log_ = std::move(MetaLog::Open(o, &image_).value());
    applier_ = std::make_unique<LogApplier>(*log_, image_);
    rpc::RpcServer::Options so;
    so.address = "127.0.0.1";
    server_ = std::make_unique<rpc::RpcServer>(so);
    server_->Register(static_cast<uint16_t>(HaMethod::kApplyLog),
                      [this](const net::Peer&, std::string_view body, std::string& reply) {
                        pb::ApplyLogRequest q;
                        pb::ApplyLogResponse r;
                        if (!q.ParseFromArray(body.data(), static_cast<int>(body.size()))) {
                          return Status(Code::kInvalidParams, "ApplyLog does not parse");
                        }
                        std::lock_guard lock(mu_);
                        auto last = applier_->Apply(q.snapshot_begin(), q.snapshot_seq(), q.snapshot_frames(),
                                                    q.snapshot_done(), q.frames());
                        rpc::ToPb(last.ok() ? Status::OK() : last.status(), r.mutable_status());
                        if (last.ok()) r.set_last_seq(*last);
                        reply += r.SerializeAsString();
                        return Status::OK();
                      });
    EXPECT_TRUE(server_->Start().ok());
  }
  ~Standby() { server_->Stop(); }
  std::string address() const { return "127.0.0.1:" + std::to_string(server_->port()); }
  uint64_t last_seq() {
    std::lock_guard lock(mu_);
    return log_->last_seq();
  }

 private:
  TempDir dir_{"yb-standby"};
  MasterImage image_;
  std::unique_ptr<MetaLog> log_;
  std::mutex mu_;
  std::unique_ptr<LogApplier> applier_;
  std::unique_ptr<rpc::RpcServer> server_;
};

// A standby is counted (changes wait for it) once it has caught up, and listed as able to take over
// only once it also has every change the leader answered without it: the changes made while it was
// being counted included. (Listed at once, a standby that took over right then lacked them: an
// acknowledged Put was lost after a kill -9 of the leader.)
TEST(LogShipperTest, AStandbyIsListedOnlyOnceItHasEveryChangeAnsweredWithoutIt) {
  TempDir dir{"yb-leader"};
  ManualClock clock;
  MetaLog::Options lo;
  lo.dir = dir.path();
  MasterImage unused;
  auto log = std::move(MetaLog::Open(lo, &unused).value());
  auto master = std::move(MasterService::Create(MasterConfig{}, clock).value());
  master->SetSink(log.get());
  const ClientId owner{5, 5};
  CallContext ctx = master->RegisterClient({owner, "h", "default"}).value();
  ASSERT_TRUE(master->MountSegments(ctx, {SegmentDesc{1, "node-1", 0, 1 << 20, "e", 7}}).ok());
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
  LogShipper::Options so;
  so.standby = standby.address();
  so.epoch = 1;
  so.leader = "leader:1";
  so.heartbeat = std::chrono::milliseconds(20);
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
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!shipper.in_sync() && std::chrono::steady_clock::now() < until) std::this_thread::yield();
  EXPECT_TRUE(shipper.in_sync());
}

}  // namespace
}  // namespace yb::ha
