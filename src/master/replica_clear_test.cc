// Mooncake's batch_replica_clear on the master: what counts as in use (a write or a read within the
// lease TTL, a read in progress, a copy being made), and clearing one segment's replica or all.
#include <gtest/gtest.h>

#include "master/master_test_util.h"

namespace yb {
namespace {

using testing::MasterFixture;

class ReplicaClearTest : public MasterFixture {
 protected:
  void SetUp() override {
    MasterConfig c;
    c.repair_bandwidth = 0;
    Reset(c);
    b_ = Register(ClientId{12, 12});
    Mount("a", 1 << 20);
    Mount("b", 1 << 20, b_);
  }
  std::vector<std::string> Clear(std::vector<std::string> keys, const std::string& segment = "") {
    auto r = master_->BatchReplicaClear(ctx_, keys, segment);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : std::vector<std::string>{};
  }
  CallContext b_;
};

TEST_F(ReplicaClearTest, AWriteOrAReadWithinTheLeaseTtlKeepsAnObject) {
  ASSERT_TRUE(Put("written", 100).ok());
  ASSERT_TRUE(Put("read", 100).ok());
  EXPECT_TRUE(Clear({"written", "read", "missing"}).empty());  // just written
  clock_.Advance(config_.default_kv_lease_ttl_ms);
  ASSERT_TRUE(Read("read").ok());
  auto held = master_->GetReplicaList(ctx_, "written", true);  // a read in progress
  ASSERT_TRUE(held.ok());
  clock_.Advance(1);
  EXPECT_TRUE(Clear({"written", "read"}).empty());
  ASSERT_TRUE(master_->ReadEnd(ctx_, "written", held->read_pin).ok());
  clock_.Advance(config_.default_kv_lease_ttl_ms);
  EXPECT_EQ(Clear({"written", "read"}), (std::vector<std::string>{"written", "read"}));
  EXPECT_FALSE(Exists("written"));
  EXPECT_FALSE(Exists("read"));
}

TEST_F(ReplicaClearTest, ASegmentsReplicaGoesAndTheOthersStay) {
  ReplicateConfig two;
  two.replica_num = 2;
  ASSERT_TRUE(Put("k", 100, two).ok());
  ASSERT_TRUE(Put("only-b", 100, [] {
                ReplicateConfig c;
                c.preferred_segments = {"b"};
                return c;
              }()).ok());
  clock_.Advance(config_.default_kv_lease_ttl_ms + 1);
  EXPECT_TRUE(Clear({"k"}, "nowhere").empty());
  EXPECT_EQ(Clear({"k", "only-b"}, "b"), (std::vector<std::string>{"k", "only-b"}));
  EXPECT_EQ(Replicas("k").size(), 1u);
  EXPECT_FALSE(Exists("only-b"));  // its one replica went, and it with it
  EXPECT_EQ(master_->TenantUsed(ctx_.tenant), 100u);  // the space of what went is back
  // Another tenant's caller clears nothing of this tenant's.
  CallContext other = Register(ClientId{31, 31}, "other");
  EXPECT_TRUE(master_->BatchReplicaClear(other, {"k"}, "")->empty());
  EXPECT_TRUE(Exists("k"));
}

}  // namespace
}  // namespace yb
