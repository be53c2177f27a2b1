// Grants that cannot outlive what they grant (issue 30 item 4, docs/security.md): a range freed by
// Remove, eviction, PutRevoke or a lost Put is not handed to another tenant while a grant for it may
// still be valid, across a restart too; the tenant that freed it may take it again at once.
#include "master/grant_hold.h"

#include <gtest/gtest.h>

#include "common/grant.h"
#include "master/master_image.h"
#include "master/master_test_util.h"

namespace yb {
namespace {

TEST(GrantHoldTest, AStampIsBoundedByTheFirstSampleTakenAfterIt) {
  ManualClock clock(1000);
  GrantHold hold(clock, 100);
  EXPECT_EQ(hold.UntilAfterStamp(5), 1100);  // no sample yet: given before now
  hold.Sample(10);                           // stamps 0-9 given by 1000
  clock.Advance(50);
  hold.Sample(20);  // stamps 10-19 by 1050
  clock.Advance(50);
  EXPECT_EQ(hold.UntilAfterStamp(3), 1100);
  EXPECT_EQ(hold.UntilAfterStamp(15), 1150);
  EXPECT_EQ(hold.UntilAfterStamp(25), 1200);  // newer than every sample: by now (1100)
  clock.Advance(500);
  hold.Sample(30);  // the old samples bound nothing held any more: they go, but for one
  EXPECT_LE(hold.UntilAfterStamp(3), clock.NowMs() + 100);
  EXPECT_GE(hold.UntilAfterStamp(3), 1100);
  EXPECT_EQ(hold.UntilAfter(7), 107);
  GrantHold off(clock, 0);
  EXPECT_EQ(off.UntilAfterStamp(1), 0);
  EXPECT_EQ(off.UntilAfter(1), 0);
}

class GrantHoldMasterTest : public testing::MasterFixture {
 protected:
  static constexpr uint64_t kSize = 1 << 16;  // one object fills the segment

  void SetUp() override { Start(MasterConfig{}); }

  void Start(MasterConfig c, bool hold = true) {
    c.hold_freed_ranges = hold;
    Reset(c);
    a_ = Register(ClientId{2, 2}, "team-a");
    b_ = Register(ClientId{3, 3}, "team-b");
    master_->SetSink(&sink_);
    ASSERT_TRUE(master_->MountSegment(ctx_, Desc()).ok());
  }

  // The clients, registered again with a master built from an image (a restart, a promotion).
  void RegisterAgain(MasterService& m) {
    for (const auto& [c, tenant] : {std::pair{ctx_, "default"}, {a_, "team-a"}, {b_, "team-b"}}) {
      ASSERT_TRUE(m.RegisterClient({c.client, "host", tenant, false, c.token}).ok());  // it proves its id
    }
  }

  SegmentMount Desc() const { return SegmentMount{{42, "owner", 0x10000000, kSize, "127.0.0.1:1"}, 1, key_}; }

  // Lets `ms` pass as a running master sees it: heartbeats from everyone, background rounds.
  void Pass(TimeMs ms, MasterService& m) {
    for (TimeMs done = 0; done < ms; done += 1000) {
      clock_.Advance(1000);
      for (const auto& c : {ctx_, a_, b_}) ASSERT_TRUE(m.Ping(c).ok());
      m.RunBackgroundOnce();
    }
  }

  // Writes `key` for `who`; the offset of its replica, or the error.
  Result<uint64_t> Write(const CallContext& who, const std::string& key, MasterService& m) {
    auto put = m.PutStart(who, key, kSize, {});
    if (!put.ok()) return put.status();
    YB_RETURN_IF_ERROR(m.PutEnd(who, key, std::nullopt));
    return (*put)[0].offset;
  }

  const std::string key_ = NewGrantKey();
  testing::ImageSink sink_;
  CallContext a_, b_;
};

TEST_F(GrantHoldMasterTest, AFreedRangeGoesToNoOtherTenantWhileAGrantForItMayBeValid) {
  auto at = Write(a_, "secret", *master_);
  ASSERT_TRUE(at.ok()) << at.status().ToString();
  auto info = master_->GetReplicaList(a_, "secret", true);
  ASSERT_TRUE(info.ok());
  const Grant old = info->replicas[0].grant;
  const int64_t minted_wall = WallMs();
  const TimeMs minted = clock_.NowMs();
  ASSERT_TRUE(master_->ReadEnd(a_, "secret", info->read_pin).ok());
  ASSERT_TRUE(master_->Remove(a_, "secret", true).ok());
  EXPECT_EQ(master_->Stats().held, kSize);

  // Another tenant finds no room while the old grant may be valid.
  Pass(config_.grant_ttl_sec * 1000 - 1000, *master_);
  EXPECT_EQ(Write(b_, "theirs", *master_).status().code(), Code::kNoAvailableHandle);
  // The tenant that freed it may take it again (its callers could read its new object anyway).
  auto again = Write(a_, "mine", *master_);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(*again, *at);
  EXPECT_EQ(master_->Stats().held, 0u);
  ASSERT_TRUE(master_->Remove(a_, "mine", true).ok());

  // Past every grant's lifetime (and the clocks' margin) the range is free for anyone; the old
  // grant, on the owner's clock that moved as ours did, is refused there.
  Pass(config_.grant_ttl_sec * 1000 + 6000, *master_);
  EXPECT_EQ(master_->Stats().held, 0u);
  auto theirs = Write(b_, "theirs", *master_);
  ASSERT_TRUE(theirs.ok()) << theirs.status().ToString();
  EXPECT_EQ(*theirs, *at);
  const int64_t owner_now = minted_wall + (clock_.NowMs() - minted);
  EXPECT_EQ(CheckGrant(key_, 42, old, GrantAccess::kRead, *at, kSize, owner_now).code(), Code::kIllegalClient);
}

TEST_F(GrantHoldMasterTest, ARevokedOrTakenOverPutsRangeIsHeldForItsWriteGrant) {
  auto put = master_->PutStart(a_, "half", kSize, {});
  ASSERT_TRUE(put.ok());
  ASSERT_TRUE(master_->PutRevoke(a_, "half").ok());
  EXPECT_EQ(Write(b_, "theirs", *master_).status().code(), Code::kNoAvailableHandle);
  Pass(config_.grant_ttl_sec * 1000 + 6000, *master_);
}

// A write may still land after its Put was revoked (its writer timed out on a peer that was cut
// off or paused, and the bytes arrive once the peer is back): until its write grant lapses, the
// range is taken by no one, its own tenant and writer included, with or without tenants walled
// off; a restarted master fences it too. (The nemesis test lost an acknowledged object this way.)
TEST_F(GrantHoldMasterTest, ARevokedPutsRangeIsTakenByNoOneBeforeItsWriteGrantLapses) {
  Start(MasterConfig{}, /*hold=*/false);
  auto put = master_->PutStart(a_, "half", kSize, {});
  ASSERT_TRUE(put.ok());
  const Grant late = (*put)[0].grant;
  const int64_t minted_wall = WallMs();
  const TimeMs minted = clock_.NowMs();
  ASSERT_TRUE(master_->PutRevoke(a_, "half").ok());
  EXPECT_EQ(master_->Stats().held, kSize);
  EXPECT_EQ(Write(a_, "next", *master_).status().code(), Code::kNoAvailableHandle);
  EXPECT_EQ(Write(b_, "theirs", *master_).status().code(), Code::kNoAvailableHandle);

  auto restarted = MasterService::Create(config_, clock_).value();
  ASSERT_TRUE(restarted->Load(sink_.image).ok());
  RegisterAgain(*restarted);
  ASSERT_TRUE(restarted->MountSegment(ctx_, Desc()).ok());
  EXPECT_EQ(Write(a_, "next", *restarted).status().code(), Code::kNoAvailableHandle);

  // The write grant lasts put_start_discard_timeout_sec (30 s); the range comes back after it and
  // the clocks' margin (5 s), when the segment's owner refuses the late write.
  const TimeMs fence = config_.put_start_discard_timeout_sec * 1000 + 5000;
  auto pass = [&](TimeMs ms) {
    for (TimeMs done = 0; done < ms; done += 1000) {
      clock_.Advance(1000);
      for (MasterService* m : {master_.get(), restarted.get()}) {
        for (const auto& c : {ctx_, a_, b_}) ASSERT_TRUE(m->Ping(c).ok());
        m->RunBackgroundOnce();
      }
    }
  };
  pass(fence - 2000);
  for (MasterService* m : {master_.get(), restarted.get()}) {
    EXPECT_EQ(Write(a_, "next", *m).status().code(), Code::kNoAvailableHandle);
  }
  pass(2000);
  for (MasterService* m : {master_.get(), restarted.get()}) {
    auto next = Write(a_, "next", *m);
    ASSERT_TRUE(next.ok()) << next.status().ToString();
    EXPECT_EQ(*next, late.offset);
  }
  const int64_t owner_now = minted_wall + (clock_.NowMs() - minted);
  EXPECT_EQ(CheckGrant(key_, 42, late, GrantAccess::kWrite, late.offset, kSize, owner_now).code(),
            Code::kIllegalClient);
}

TEST_F(GrantHoldMasterTest, ALostPutsRangeReleasedBeforeItsWriteGrantLapsedIsHeld) {
  MasterConfig c;
  c.put_start_discard_timeout_sec = 30;
  c.put_start_release_timeout_sec = 30;  // released as soon as it may be taken over
  Start(c);
  ASSERT_TRUE(master_->PutStart(b_, "lost", kSize, {}).ok());
  Pass(31000, *master_);
  EXPECT_EQ(master_->Stats().pending_puts, 0u);  // reclaimed: held, not free
  EXPECT_EQ(master_->Stats().held, kSize);
  EXPECT_EQ(Write(a_, "next", *master_).status().code(), Code::kNoAvailableHandle);
  Pass(config_.grant_ttl_sec * 1000, *master_);
  EXPECT_TRUE(Write(a_, "next", *master_).ok());
}

TEST_F(GrantHoldMasterTest, ARestartedOrPromotedMasterHoldsWhatTheOldOneHeld) {
  ASSERT_TRUE(Write(a_, "secret", *master_).ok());
  ASSERT_TRUE(Read("secret", a_).ok());
  ASSERT_TRUE(master_->Remove(a_, "secret", true).ok());
  // From the log as it was appended (a standby's image), and from a snapshot.
  MasterImage snapshot;
  master_->WriteImage([&](const pb::LogRecord& r) { snapshot.Apply(r); });
  for (const MasterImage* image : {&sink_.image, &snapshot}) {
    ASSERT_EQ(image->holds.size(), 1u);
    auto again = MasterService::Create(config_, clock_).value();
    ASSERT_TRUE(again->Load(*image).ok());
    RegisterAgain(*again);
    ASSERT_TRUE(again->MountSegment(ctx_, Desc()).ok());  // its owner re-mounts it
    EXPECT_EQ(again->Stats().held, kSize);
    EXPECT_EQ(Write(b_, "theirs", *again).status().code(), Code::kNoAvailableHandle);
    Pass(config_.grant_ttl_sec * 1000 + 6000, *again);
    EXPECT_TRUE(Write(b_, "theirs", *again).ok());
  }
}

TEST_F(GrantHoldMasterTest, WithoutTenantsWalledOffNothingIsHeldAndALookupCarriesNoGrant) {
  Start(MasterConfig{}, /*hold=*/false);  // every caller may reach every tenant's objects anyway
  ASSERT_TRUE(Write(a_, "k", *master_).ok());
  auto lookup = master_->GetReplicaList(a_, "k", false);
  ASSERT_TRUE(lookup.ok());
  EXPECT_EQ(lookup->replicas[0].grant.access, GrantAccess::kNone);  // only a read that pins gets one
  ASSERT_TRUE(Read("k", a_).ok());
  ASSERT_TRUE(master_->Remove(a_, "k", true).ok());
  EXPECT_EQ(master_->Stats().held, 0u);
  EXPECT_TRUE(Write(b_, "theirs", *master_).ok());
}

}  // namespace
}  // namespace yb
