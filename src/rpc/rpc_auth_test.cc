// The master over RPC with a secret: who may connect, what each proof (the cluster secret, a
// tenant's, a role key) lets a caller do, and what it may name.
#include <gtest/gtest.h>
#include <sys/ioctl.h>

#include <asio.hpp>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>

#include "common/clock.h"
#include "common/disk_key.h"
#include "common/segment_name.h"
#include "common/test_util.h"
#include "master/master_service.h"
#include "rpc/channel.h"
#include "rpc/master_client.h"
#include "rpc/master_server.h"
#include "rpc/server.h"

namespace yb::rpc {
namespace {

using namespace std::chrono_literals;

const std::string kClusterSecret = "the-cluster-secret-0123456789";
const std::string kTeamA = "team-a-secret-0123456789";

std::shared_ptr<net::Security> SecurityWith(const std::string& secret,
                                            std::map<std::string, std::string> tenants = {}) {
  net::SecurityOptions o;
  o.secret = secret;
  o.tenant_secrets = std::move(tenants);
  return net::Security::Create(std::move(o)).value();
}

// A master whose RPC server asks every connection for a proof: the cluster secret, or team-a's.
class MasterAuthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    master_ = MasterService::Create(MasterConfig{}, clock_).value();
    Serve(false);
  }
  // (Re)starts the RPC server in front of master_.
  void Serve(bool tenants_may_mount) {
    if (server_) server_->Stop();
    RpcServer::Options o;
    o.address = "127.0.0.1";
    o.security = security_;
    server_ = std::make_unique<RpcServer>(o);
    MasterServiceOptions mo;
    mo.data_key = security_->cluster_data_key();
    mo.tenants_may_mount = tenants_may_mount;
    RegisterMasterService(*server_, *master_, mo);
    ASSERT_TRUE(server_->Start().ok());
  }
  void TearDown() override { server_->Stop(); }
  // A client of the master proving `secret` (none: "") for `tenant`.
  std::unique_ptr<MasterClient> Client(const std::string& secret, const std::string& tenant,
                                       std::shared_ptr<net::Security>* sec_out = nullptr) {
    RpcChannel::Options ch;
    auto sec = secret.empty() ? net::Security::None() : SecurityWith(secret);
    if (sec_out) *sec_out = sec;
    ch.security = sec;
    ch.tenant = tenant;
    return std::make_unique<MasterClient>("127.0.0.1", server_->port(), 2s, nullptr, ch);
  }

  ManualClock clock_;
  std::unique_ptr<MasterService> master_;
  std::shared_ptr<net::Security> security_ = SecurityWith(kClusterSecret, {{"team-a", kTeamA}});
  std::unique_ptr<RpcServer> server_;
};

TEST_F(MasterAuthTest, AConnectionWithoutTheSecretIsRefusedBeforeAnyCall) {
  auto none = Client("", "default")->RegisterClient({ClientId{1, 1}, "h", "default"});
  EXPECT_EQ(none.code(), Code::kIllegalClient);
  EXPECT_NE(none.status().message().find("asks for authentication"), std::string::npos) << none.status().ToString();
  auto wrong = Client("not-the-secret-0123456789", "default")->RegisterClient({ClientId{1, 1}, "h", "default"});
  EXPECT_EQ(wrong.code(), Code::kIllegalClient);
  EXPECT_NE(wrong.status().message().find("refused our proof"), std::string::npos) << wrong.status().ToString();
  EXPECT_FALSE(Client("", "default")->ListSegments().ok());
  EXPECT_EQ(master_->Stats().live_clients, 0u);
}

// The cluster secret registers any tenant; a client gets the data-plane key with its registration.
TEST_F(MasterAuthTest, TheClusterSecretMayActForAnyTenantAndClientsGetTheDataKey) {
  std::shared_ptr<net::Security> sec;
  auto node = Client(kClusterSecret, "default", &sec);
  auto ctx = node->RegisterClient({ClientId{1, 1}, "h", "team-b"});
  ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
  EXPECT_EQ(sec->data_key(), security_->cluster_data_key());
  ASSERT_TRUE(node->MountSegment(*ctx, {7, "n", 0, 1 << 20, "e:7"}).ok());
  EXPECT_TRUE(node->DrainSegment(*ctx, 7).ok());
}

// A connection that proved team-a's secret registers as team-a only, is no operator (drains no
// segment of another) and no storage node (mounts no memory).
TEST_F(MasterAuthTest, ATenantSecretBindsItsTenant) {
  auto node = Client(kClusterSecret, "default");
  CallContext storage = node->RegisterClient({ClientId{1, 1}, "storage", "default"}).value();
  ASSERT_TRUE(node->MountSegment(storage, {7, "storage", 0, 1 << 20, "e:7"}).ok());

  std::shared_ptr<net::Security> sec;
  auto team = Client(kTeamA, "team-a", &sec);
  auto mine = team->RegisterClient({ClientId{2, 2}, "app", "team-a"});
  ASSERT_TRUE(mine.ok()) << mine.status().ToString();
  EXPECT_EQ(sec->data_key(), security_->cluster_data_key());  // so that it reaches transfer servers
  auto other = team->RegisterClient({ClientId{3, 3}, "app", "team-b"});
  EXPECT_EQ(other.code(), Code::kIllegalClient);
  EXPECT_EQ(team->DrainSegment(*mine, 7).code(), Code::kIllegalClient);
  EXPECT_EQ(team->UndrainSegment(*mine, 7).code(), Code::kIllegalClient);
  auto mount = team->MountSegment(*mine, {8, "app", 0, 1 << 20, "e:8"});
  EXPECT_EQ(mount.code(), Code::kIllegalClient);
  EXPECT_NE(mount.message().find("storage node"), std::string::npos) << mount.ToString();
  EXPECT_EQ(team->AddDiskReplicas(*mine, 7, {{DiskKey("team-a", "k"), 10, 1}})[0].code(), Code::kIllegalClient);
  EXPECT_FALSE(team->OffloadFetch(*mine, 10).ok());
  EXPECT_FALSE(team->RepairFetch(*mine, 10).ok());
  // Its secret is no cluster secret for another tenant's name either.
  EXPECT_EQ(Client(kTeamA, "team-b")->RegisterClient({ClientId{4, 4}, "x", "team-b"}).code(), Code::kIllegalClient);
  EXPECT_TRUE(node->PutStart(storage, "k", 100, {}).ok());
}

// The role keys derived from the cluster secret: a node's mounts memory and acts for any tenant but
// drains only its own segments; an operator's drains any and mounts nothing. Neither is the
// cluster secret, and a key of one role proves no other.
TEST_F(MasterAuthTest, RoleKeysGiveTheirRolesCallsOnly) {
  const std::string node_key = net::RoleKey(kClusterSecret, net::Role::kNode);
  const std::string admin_key = net::RoleKey(kClusterSecret, net::Role::kAdmin);
  ASSERT_EQ(net::RoleOfSecret(node_key), net::Role::kNode);
  ASSERT_EQ(net::RoleOfSecret(admin_key), net::Role::kAdmin);
  EXPECT_FALSE(net::RoleOfSecret(kClusterSecret));

  std::shared_ptr<net::Security> node_sec;
  auto node = Client(node_key, "default", &node_sec);
  auto nctx = node->RegisterClient({ClientId{1, 1}, "storage", "team-b"});
  ASSERT_TRUE(nctx.ok()) << nctx.status().ToString();
  EXPECT_EQ(node_sec->data_key(), security_->cluster_data_key());  // its transfer server checks this one
  ASSERT_TRUE(node->MountSegment(*nctx, {7, "storage", 0, 1 << 20, "e:7"}).ok());
  EXPECT_TRUE(node->DrainSegment(*nctx, 7).ok());  // its own
  EXPECT_TRUE(node->UndrainSegment(*nctx, 7).ok());

  auto other = Client(kClusterSecret, "default");
  CallContext octx = other->RegisterClient({ClientId{2, 2}, "other", "default"}).value();
  ASSERT_TRUE(other->MountSegment(octx, {8, "other", 0, 1 << 20, "e:8"}).ok());
  EXPECT_EQ(node->DrainSegment(*nctx, 8).code(), Code::kIllegalClient);  // not its own

  auto admin = Client(admin_key, "default");
  auto actx = admin->RegisterClient({ClientId{3, 3}, "ops", "default"});
  ASSERT_TRUE(actx.ok()) << actx.status().ToString();
  EXPECT_TRUE(admin->DrainSegment(*actx, 8).ok());
  EXPECT_TRUE(admin->UndrainSegment(*actx, 8).ok());
  EXPECT_EQ(admin->MountSegment(*actx, {9, "ops", 0, 1 << 20, "e:9"}).code(), Code::kIllegalClient);

  // A node's key claimed as an admin's (or the other way) proves nothing.
  net::SecurityOptions forged;
  forged.secret = "yb-role:admin:" + node_key.substr(std::string("yb-role:node:").size());
  RpcChannel::Options ch;
  ch.security = net::Security::Create(forged).value();
  MasterClient wrong("127.0.0.1", server_->port(), 2s, nullptr, ch);
  EXPECT_EQ(wrong.RegisterClient({ClientId{4, 4}, "x", "default"}).code(), Code::kIllegalClient);
}

// A disk copy names its tenant; a node reporting one registers no tenant the master does not know.
TEST_F(MasterAuthTest, DiskKeysNameNoNewTenant) {
  auto node = Client(net::RoleKey(kClusterSecret, net::Role::kNode), "default");
  CallContext ctx = node->RegisterClient({ClientId{1, 1}, "storage", "default"}).value();
  ASSERT_TRUE(node->MountSegment(ctx, {7, "storage", 0, 1 << 20, "e:7"}).ok());
  const size_t tenants = master_->Tenants().size();
  auto added = node->AddDiskReplicas(ctx, 7, {{DiskKey("ghost-tenant", "k"), 10, 1}});
  ASSERT_EQ(added.size(), 1u);
  EXPECT_EQ(added[0].code(), Code::kTenantNotRegistered);
  EXPECT_EQ(master_->Tenants().size(), tenants);
}

// The name and endpoint of every node are public: a Mount that repeats them takes the segments over
// (dropping the holder's objects) only from the endpoint's own host, where the holder must be gone
// if a new process serves at its port.
TEST_F(MasterAuthTest, AnEndpointIsTakenOverOnlyFromItsHost) {
  auto holder = Client(kClusterSecret, "default");
  CallContext hctx = holder->RegisterClient({ClientId{1, 1}, "far", "default"}).value();
  ASSERT_TRUE(holder->MountSegment(hctx, {7, "far-node", 0, 1 << 20, "10.1.2.3:7000"}).ok());
  ASSERT_TRUE(holder->MountSegment(hctx, {8, "near-node", 0, 1 << 20, "127.0.0.1:7001"}).ok());
  auto other = Client(kClusterSecret, "default");  // connects from 127.0.0.1
  CallContext octx = other->RegisterClient({ClientId{2, 2}, "x", "default"}).value();
  auto far = other->MountSegment(octx, {9, "far-node", 0, 1 << 20, "10.1.2.3:7000"});
  EXPECT_EQ(far.code(), Code::kSegmentAlreadyExists);
  EXPECT_NE(far.message().find("does not come from that host"), std::string::npos) << far.ToString();
  auto mounted = [&](SegmentId id) {
    for (const auto& u : master_->ListSegments().value()) {
      if (u.desc.id == id) return true;
    }
    return false;
  };
  EXPECT_TRUE(mounted(7));
  // A process restarted on this host at the endpoint it served: the old one is gone.
  EXPECT_TRUE(other->MountSegment(octx, {10, "near-node", 0, 1 << 20, "127.0.0.1:7001"}).ok());
  EXPECT_FALSE(mounted(8));
}

// Bounds on what a caller names: preferred segments, host names, segments per client.
TEST_F(MasterAuthTest, WhatACallerNamesIsBounded) {
  auto node = Client(kClusterSecret, "default");
  EXPECT_EQ(node->RegisterClient({ClientId{1, 1}, std::string(300, 'h'), "default"}).code(), Code::kInvalidParams);
  CallContext ctx = node->RegisterClient({ClientId{1, 1}, "h", "default"}).value();
  EXPECT_EQ(node->MountSegment(ctx, {7, std::string(300, 'n'), 0, 1 << 20, "e:7"}).code(), Code::kInvalidParams);
  ASSERT_TRUE(node->MountSegment(ctx, {7, "n", 0, 1 << 20, "e:7"}).ok());
  ReplicateConfig many;
  for (int i = 0; i < 65; ++i) many.preferred_segments.push_back("seg-" + std::to_string(i));
  EXPECT_EQ(node->PutStart(ctx, "k", 100, many).code(), Code::kInvalidParams);
  many.preferred_segments.resize(64);
  EXPECT_TRUE(node->PutStart(ctx, "k", 100, many).ok());
}

// With --tenants_may_mount, a tenant's client lends memory to its own tenant only.
TEST_F(MasterAuthTest, ATenantMayMountWhenAllowedAndItsSegmentsServeItOnly) {
  Serve(/*tenants_may_mount=*/true);

  auto team = Client(kTeamA, "team-a");
  CallContext mine = team->RegisterClient({ClientId{2, 2}, "app", "team-a"}).value();
  ASSERT_TRUE(team->MountSegment(mine, {8, "app", 0, 1 << 20, "127.0.0.1:8"}).ok());
  ASSERT_TRUE(team->PutStart(mine, "k", 100, {}).ok());
  auto node = Client(kClusterSecret, "default");
  CallContext other = node->RegisterClient({ClientId{1, 1}, "node", "default"}).value();
  EXPECT_EQ(node->PutStart(other, "k", 100, {}).code(), Code::kNoAvailableHandle);  // team-a's memory only
}

}  // namespace
}  // namespace yb::rpc
