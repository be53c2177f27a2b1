#include "master/client_registry.h"

#include <gtest/gtest.h>

namespace yb {
namespace {

class ClientRegistryTest : public ::testing::Test {
 protected:
  ManualClock clock_;
  ClientRegistry reg_{clock_, 10'000};
  const ClientId a_{1, 1};
};

TEST_F(ClientRegistryTest, ARegisteredClientOwesNothingAndExpiresWhenSilent) {
  reg_.Register(a_);
  EXPECT_FALSE(reg_.Ping(a_));
  clock_.AdvanceSec(10);
  EXPECT_TRUE(reg_.Expire().empty());  // exactly the TTL: still alive
  clock_.Advance(1);
  EXPECT_EQ(reg_.Expire(), std::vector<ClientId>{a_});
  EXPECT_FALSE(reg_.Known(a_));
  EXPECT_TRUE(reg_.Ping(a_));   // it comes back: register and re-mount
  EXPECT_FALSE(reg_.Ping(a_));  // said once
}

// The race seen on a client whose segment took longer than client_ttl to fault in: the master
// expired it, a MountSegment from it arrived and was accepted, then the master forgot it (and
// unmounted what it had just mounted). The client must still be told to re-mount.
TEST_F(ClientRegistryTest, ACallFromAForgottenClientLeavesItOwingARemount) {
  reg_.Register(a_);
  clock_.AdvanceSec(11);
  ASSERT_EQ(reg_.Expire().size(), 1u);
  reg_.Touch(a_);  // a MountSegment in flight
  EXPECT_TRUE(reg_.Known(a_));
  reg_.MarkRemount(a_);  // the master has forgotten what it held
  // Registering again does not settle a debt the client has not been told of.
  reg_.Register(a_);
  EXPECT_TRUE(reg_.Ping(a_));
  EXPECT_FALSE(reg_.Ping(a_));
}

TEST_F(ClientRegistryTest, AMountFromAnUnknownClientMakesItOweTheRest) {
  reg_.Touch(a_);  // mounts without having registered (or after being forgotten)
  EXPECT_TRUE(reg_.Ping(a_));
  EXPECT_FALSE(reg_.Ping(a_));
  reg_.Touch(a_);  // known: nothing more owed
  EXPECT_FALSE(reg_.Ping(a_));
}

TEST_F(ClientRegistryTest, MarkingAnUnknownClientDoesNotMakeItKnown) {
  reg_.MarkRemount(a_);
  EXPECT_FALSE(reg_.Known(a_));
  EXPECT_EQ(reg_.size(), 0u);
  reg_.Register(a_);
  EXPECT_FALSE(reg_.Ping(a_));
  EXPECT_TRUE(reg_.Remove(a_));
  EXPECT_FALSE(reg_.Remove(a_));
}

}  // namespace
}  // namespace yb
