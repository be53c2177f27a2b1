// Test helpers for MasterService: a ManualClock, small mounts and one-call Puts.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "master/master_image.h"
#include "master/master_service.h"
#include "master/meta_sink.h"

namespace yb::testing {

// A sink that applies each record to an image: what a restarted master or a standby would load.
class ImageSink final : public MetaSink {
 public:
  uint64_t Append(const pb::LogRecord& r) override {
    image.Apply(r);
    return 0;
  }
  MasterImage image;
};

class MasterFixture : public ::testing::Test {
 protected:
  void SetUp() override { Reset(MasterConfig{}); }

  void Reset(MasterConfig config) {
    config.random_seed = 7;
    config.object_shards = 16;
    config_ = config;
    config_.liveness_max_gap_ms = 0;  // these tests step the clock by whole TTLs between checks
    // What a death drops, at once; the grace before it has tests of its own (which set it).
    if (config_.client_grace_sec < 0) config_.client_grace_sec = 0;
    auto m = MasterService::Create(config_, clock_);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    master_ = std::move(m).value();
    ctx_ = Register(ClientId{1, 1});
  }

  CallContext Register(ClientId id, const std::string& tenant = "default") {
    auto t = master_->RegisterClient({id, "host", tenant});
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    return t.ok() ? *t : CallContext{id};
  }

  // Mounts a segment named `name` of `size` bytes owned by `owner`.
  SegmentId Mount(const std::string& name, uint64_t size, CallContext owner = {}) {
    if (owner.client.empty()) owner = ctx_;
    SegmentMount d{next_segment_++, name, 0x10000000ULL * next_segment_, size, "local"};
    EXPECT_TRUE(master_->MountSegment(owner, d).ok());
    return d.id;
  }

  Status Put(const std::string& key, uint64_t size, ReplicateConfig config = {}, CallContext ctx = {}) {
    if (ctx.client.empty()) ctx = ctx_;
    auto r = master_->PutStart(ctx, key, size, config);
    if (!r.ok()) return r.status();
    return master_->PutEnd(ctx, key, std::nullopt);
  }

  // Two objects of `size` bytes: `both` with two replicas, and `only` on the segment named `name`.
  void PutBothAndOnlyOn(const std::string& name, const std::string& both, const std::string& only, uint64_t size) {
    ReplicateConfig two;
    two.replica_num = 2;
    ASSERT_TRUE(Put(both, size, two).ok());
    ReplicateConfig on;
    on.preferred_segments = {name};
    ASSERT_TRUE(Put(only, size, on).ok());
  }

  // A whole read, as a client makes one: the replicas with a read pin, then ReadEnd. It grants the
  // lease and counts as use (a lookup without a pin does neither).
  Status Read(const std::string& key, CallContext ctx = {}) {
    if (ctx.client.empty()) ctx = ctx_;
    auto info = master_->GetReplicaList(ctx, key, true);
    if (!info.ok()) return info.status();
    return master_->ReadEnd(ctx, key, info->read_pin);
  }

  // The segments of the key's readable replicas, sorted (none for a miss). A lookup: no lease.
  std::vector<SegmentId> Replicas(const std::string& key) {
    std::vector<SegmentId> out;
    auto info = master_->GetReplicaList(ctx_, key, false);
    if (info.ok()) {
      for (const auto& r : info->replicas) out.push_back(r.segment);
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  // Four seconds in which only ctx_ and `heard` ping, with a liveness check each second: past the
  // default 3 s gap, every other client is not heard from (its segments take no new replicas).
  void SilenceAllBut(const std::vector<CallContext>& heard) {
    for (int i = 0; i < 4; ++i) {
      clock_.AdvanceSec(1);
      ASSERT_TRUE(master_->Ping(ctx_).ok());
      for (const CallContext& c : heard) ASSERT_TRUE(master_->Ping(c).ok());
      master_->LivenessOnce();
    }
  }

  bool Exists(const std::string& key, CallContext ctx = {}) {
    if (ctx.client.empty()) ctx = ctx_;
    auto r = master_->ExistKey(ctx, key);
    return r.ok() && *r;
  }

  ManualClock clock_;
  MasterConfig config_;
  std::unique_ptr<MasterService> master_;
  CallContext ctx_;
  SegmentId next_segment_ = 100;
};

}  // namespace yb::testing
