// Reservations (docs/design.md, "Puts into reservations"): what a client keeps started ahead is
// bounded in bytes, found by shape, used only while its grants have time left, and handed back
// whole when the client closes.
#include "client/reservations.h"

#include <gtest/gtest.h>

namespace yb {
namespace {

const ClientId kMe{0x1234, 0x5678};

std::vector<GrantedReplica> Granted(int64_t expires_ms) {
  GrantedReplica r;
  r.segment = 3;
  r.offset = 4096;
  r.grant.access = GrantAccess::kWrite;
  r.grant.expires_ms = expires_ms;
  return {r};
}

class ReservationsTest : public ::testing::Test {
 protected:
  ManualClock clock_;
  ManualClock wall_{1'700'000'000'000};
  Reservations res_{10'000, clock_, &wall_};
};

TEST_F(ReservationsTest, APutFitsOnlyAReservationOfItsSizeAndPlacement) {
  PlacementConfig plain;
  auto shape = res_.Shape(1000, plain, WriteMode::kPut);
  ASSERT_TRUE(shape);
  EXPECT_EQ(res_.Shape(1000, plain, WriteMode::kPut), shape);
  EXPECT_NE(res_.Shape(1001, plain, WriteMode::kPut), shape);
  PlacementConfig two = plain;
  two.replica_num = 2;
  EXPECT_NE(res_.Shape(1000, two, WriteMode::kPut), shape);
  PlacementConfig pinned = plain;
  pinned.with_soft_pin = true;
  EXPECT_NE(res_.Shape(1000, pinned, WriteMode::kPut), shape);
  PlacementConfig preferred = plain;
  preferred.preferred_segments = {"a", "b"};
  PlacementConfig joined = plain;
  joined.preferred_segments = {"a/1:b"};
  EXPECT_NE(res_.Shape(1000, preferred, WriteMode::kPut), res_.Shape(1000, joined, WriteMode::kPut));
  // None serves an upsert, a Put that steers around segments or names groups, or one larger than
  // the whole budget.
  EXPECT_FALSE(res_.Shape(1000, plain, WriteMode::kUpsert));
  PlacementConfig avoiding = plain;
  avoiding.avoid_segments = {7};
  EXPECT_FALSE(res_.Shape(1000, avoiding, WriteMode::kPut));
  PlacementConfig grouped = plain;
  grouped.group_ids = {"g"};
  EXPECT_FALSE(res_.Shape(1000, grouped, WriteMode::kPut));
  EXPECT_FALSE(res_.Shape(10'001, plain, WriteMode::kPut));
  Reservations off(0, clock_);
  EXPECT_FALSE(off.Shape(1000, plain, WriteMode::kPut));
}

TEST_F(ReservationsTest, NamesAreTheOwnersAndTheBytesStayWithinTheBudget) {
  auto names = res_.Names(kMe, 20, 3000);
  ASSERT_EQ(names.size(), 3u);  // 9000 of 10000 bytes
  EXPECT_EQ(res_.held_bytes(), 9000u);
  for (const auto& n : names) {
    EXPECT_TRUE(IsReservation(n)) << n;
    EXPECT_NE(n.find(kMe.ToString()), std::string::npos) << n;
  }
  EXPECT_NE(names[0], names[1]);
  EXPECT_TRUE(res_.Names(kMe, 1, 3000).empty());
  EXPECT_TRUE(res_.Names(ClientId{}, 1, 100).empty());  // not registered: no name
  res_.Release(3000);                                   // one the master did not start
  EXPECT_EQ(res_.Names(kMe, 1, 3000).size(), 1u);
}

TEST_F(ReservationsTest, APutTakesAKeptReservationOfItsShapeWhileItsGrantsHaveTimeLeft) {
  const std::string shape = *res_.Shape(1000, PlacementConfig{}, WriteMode::kPut);
  auto names = res_.Names(kMe, 2, 1000);
  ASSERT_EQ(names.size(), 2u);
  // Grants with 20 s left: usable for 10 s.
  res_.Keep(shape, names[0], 1000, Granted(wall_.NowMs() + 20'000));
  clock_.Advance(5'000);
  wall_.Advance(5'000);
  res_.Keep(shape, names[1], 1000, Granted(wall_.NowMs() + 20'000));
  EXPECT_EQ(res_.kept(), 2u);
  EXPECT_TRUE(res_.Take("another shape", 1).empty());
  // The newest first.
  auto got = res_.Take(shape, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].name, names[1]);
  EXPECT_EQ(got[0].replicas.size(), 1u);
  res_.Keep(shape, std::move(got[0]));  // the key was taken meanwhile: it serves the next Put
  // Past the first one's time: it is handed back for revoking, and its bytes leave the budget.
  clock_.Advance(5'000);
  got = res_.Take(shape, 5);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].name, names[1]);
  EXPECT_EQ(res_.TakeDiscarded(), std::vector<std::string>{names[0]});
  EXPECT_TRUE(res_.TakeDiscarded().empty());
  EXPECT_EQ(res_.held_bytes(), 1000u);  // the one taken, until the Put settles it
  res_.Release(1000);
  EXPECT_EQ(res_.held_bytes(), 0u);
  EXPECT_EQ(res_.kept(), 0u);
}

TEST_F(ReservationsTest, GrantsAlreadyLapsedOrMissingAreJudgedSafely) {
  const std::string shape = *res_.Shape(100, PlacementConfig{}, WriteMode::kPut);
  auto names = res_.Names(kMe, 2, 100);
  res_.Keep(shape, names[0], 100, Granted(wall_.NowMs() - 1));  // lapsed on arrival: never used
  std::vector<GrantedReplica> in_process(1);                    // no grant at all
  res_.Keep(shape, names[1], 100, in_process);
  auto got = res_.Take(shape, 2);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].name, names[1]);
  EXPECT_EQ(res_.TakeDiscarded(), std::vector<std::string>{names[0]});
  // One a Put no longer wants: revoked with the next call, its bytes free at once.
  res_.Discard(std::move(got[0]));
  EXPECT_EQ(res_.held_bytes(), 0u);
  EXPECT_EQ(res_.TakeDiscarded(), std::vector<std::string>{names[1]});
}

TEST_F(ReservationsTest, AClosingClientTakesEveryReservationItKeeps) {
  const std::string a = *res_.Shape(100, PlacementConfig{}, WriteMode::kPut);
  const std::string b = *res_.Shape(200, PlacementConfig{}, WriteMode::kPut);
  auto na = res_.Names(kMe, 2, 100);
  auto nb = res_.Names(kMe, 1, 200);
  for (const auto& n : na) res_.Keep(a, n, 100, Granted(wall_.NowMs() + 20'000));
  res_.Keep(b, nb[0], 200, Granted(wall_.NowMs() + 20'000));
  res_.Discard(res_.Take(a, 1).at(0));
  auto all = res_.TakeAll();
  EXPECT_EQ(all.size(), 3u);  // two kept, one discarded
  EXPECT_EQ(res_.held_bytes(), 0u);
  EXPECT_EQ(res_.kept(), 0u);
}

}  // namespace
}  // namespace yb
