#include "client/buffers.h"

#include <gtest/gtest.h>

#include "client/replica_order.h"

namespace yb {
namespace {

TEST(StagingBufferTest, AllocatesWithinItsRegionUntilFull) {
  StagingBuffer s(4096);
  auto a = s.Allocate(3000);
  ASSERT_TRUE(a);
  EXPECT_TRUE(s.Contains(a->ptr, 3000));
  EXPECT_FALSE(s.Allocate(2000));
  s.Free(*a);
  EXPECT_TRUE(s.Allocate(4096));
  StagingBuffer none(0);
  EXPECT_FALSE(none.Allocate(1));
}

TEST(BufferRegistryTest, RegistersRangesAndRejectsOverlapAndNull) {
  BufferRegistry r;
  alignas(64) static char buf[1024];
  EXPECT_EQ(r.Register(nullptr, 10).code(), Code::kInvalidParams);
  EXPECT_EQ(r.Register(buf, 0).code(), Code::kInvalidParams);
  ASSERT_TRUE(r.Register(buf, 512).ok());
  EXPECT_TRUE(r.Register(buf, 512).ok());
  EXPECT_EQ(r.Register(buf + 100, 10).code(), Code::kInvalidParams);
  ASSERT_TRUE(r.Register(buf + 512, 512).ok());
  EXPECT_TRUE(r.Contains(buf + 10, 100));
  EXPECT_TRUE(r.Contains(buf + 600, 424));
  EXPECT_FALSE(r.Contains(buf + 600, 425));
  ASSERT_TRUE(r.Unregister(buf).ok());
  EXPECT_FALSE(r.Contains(buf + 10, 1));
  EXPECT_EQ(r.Unregister(buf).code(), Code::kInvalidParams);
}

// A range that starts in a registered buffer must end in it: past it lies memory the caller did not
// hand over. Memory outside every registered buffer is the caller's to vouch for.
TEST(BufferRegistryTest, ARangeStartingInARegisteredBufferMustEndInIt) {
  BufferRegistry r;
  alignas(64) static char buf[64];
  ASSERT_TRUE(r.Register(buf, 32).ok());
  EXPECT_TRUE(r.CheckSpan(buf, 32).ok());
  EXPECT_TRUE(r.CheckSpan(buf + 31, 1).ok());
  Status past = r.CheckSpan(buf + 31, 4);  // Mooncake's test: offset 31, size 4, into 32 bytes
  EXPECT_EQ(past.code(), Code::kInvalidParams);
  EXPECT_NE(past.message().find("runs past its end"), std::string::npos) << past.ToString();
  EXPECT_TRUE(r.CheckSpan(buf + 32, 100).ok());  // not in a registered buffer
}

TEST(ReplicaOrderTest, LocalMemoryThenMemoryThenLocalDiskThenDisk) {
  std::vector<GrantedReplica> in = {
      {ReplicaKind::kDisk, ReplicaStatus::kComplete, 1, 0, 1},
      {ReplicaKind::kLocalDisk, ReplicaStatus::kComplete, 2, 0, 1},
      {ReplicaKind::kMemory, ReplicaStatus::kComplete, 3, 0, 1},
      {ReplicaKind::kMemory, ReplicaStatus::kComplete, 4, 0, 1},
  };
  auto out = OrderReplicas(in, [](SegmentId s) { return s == 4; });
  std::vector<SegmentId> order;
  for (auto& r : out) order.push_back(r.segment);
  EXPECT_EQ(order, (std::vector<SegmentId>{4, 3, 2, 1}));
}

}  // namespace
}  // namespace yb
