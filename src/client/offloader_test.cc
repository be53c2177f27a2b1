// The Offloader against a scripted master: bucket eviction when the master cannot be told, FIFO
// versus LRU through the client's SSD tier, and a round whose objects are replaced meanwhile.
#include "client/offloader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>
#include <xxhash.h>

#include <cstring>

#include "client/mock_master.h"
#include "storage/memory_device.h"

namespace yb {
namespace {

using ::testing::_;
using ::testing::NiceMock;
using ::testing::Return;
using yb::testing::MockMaster;

class OffloaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    region_ = MappedRegion::Map(1 << 20);
    local_ = std::make_shared<LocalSegmentRegistry>();
    local_->Add(kSeg, LocalSegment{region_, region_->data(), region_->size()});
    master_ = std::make_shared<NiceMock<MockMaster>>();
    storage::MemoryDevice::Options d;
    d.fault = [this](std::string_view op, const std::string& where) { return fault_ ? fault_(op, where) : 0; };
    device_ = std::make_shared<storage::MemoryDevice>(d);
  }

  // An offloader whose SSD tier is device_: one opened later finds what an earlier one wrote, as a
  // client restarted on the same disk does.
  std::unique_ptr<Offloader> Open(const std::string& policy) {
    Offloader::Options o;
    o.clock = &clock_;
    o.storage.device = device_;
    o.storage.total_size_limit = 10 * 1000;
    o.storage.bucket_keys_limit = 2;
    o.storage.eviction_policy = policy;
    auto off = Offloader::Open(
        o, master_,
        [] {
          return CallContext{ClientId{1, 2}, 0};
        },
        local_);
    EXPECT_TRUE(off.ok()) << off.status().ToString();
    return std::move(off).value();
  }
  // Buckets of two 1000-byte objects each: keys b<N>-0 and b<N>-1.
  void Fill(Offloader& o, int buckets) {
    std::string v(1000, 'x');
    for (int b = 0; b < buckets; ++b) {
      ASSERT_TRUE(o.engine().Put({{"b" + std::to_string(b) + "-0", v}, {"b" + std::to_string(b) + "-1", v}}).ok());
    }
  }

  ManualClock clock_;
  static constexpr SegmentId kSeg = 77;
  FaultHook fault_;  // asked by device_ as a file device asks its FaultHook
  std::shared_ptr<storage::MemoryDevice> device_;
  std::shared_ptr<MappedRegion> region_;
  std::shared_ptr<LocalSegmentRegistry> local_;
  std::shared_ptr<NiceMock<MockMaster>> master_;
};

TEST_F(OffloaderTest, AnUnreachableMasterKeepsEveryBucketUntilItCanBeTold) {
  auto off = Open("fifo");
  Fill(*off, 5);  // 10 KB of 10 KB: above the 0.90 watermark
  EXPECT_CALL(*master_, DropDiskReplicas(_, _))
      .WillOnce(Return(std::vector<Status>{Status(Code::kRpcTimeout, "down"), Status(Code::kRpcTimeout, "down")}));
  EXPECT_EQ(off->EvictIfNeeded(), 0u);
  EXPECT_EQ(off->engine().List().size(), 10u);  // nothing dropped locally
  std::vector<std::vector<std::string>> told;
  EXPECT_CALL(*master_, DropDiskReplicas(_, _))
      .WillRepeatedly([&](const CallContext&, const std::vector<std::string>& k) {
        told.push_back(k);
        return std::vector<Status>(k.size());
      });
  EXPECT_EQ(off->EvictIfNeeded(), 1u);  // down to 0.80: the oldest bucket
  ASSERT_EQ(told.size(), 1u);
  EXPECT_EQ(told[0], (std::vector<std::string>{"b0-0", "b0-1"}));
  EXPECT_EQ(off->engine().List().size(), 8u);
  // Objects about to be written count: room for 3 KB more means two more buckets go.
  EXPECT_EQ(off->EvictIfNeeded(3000), 2u);
  EXPECT_EQ(told.back(), (std::vector<std::string>{"b2-0", "b2-1"}));
}

// A disk that refuses writes pauses offloading (no task fetched: the master keeps the DRAM copies)
// while what is on disk is still read; once there is room again the next try resumes it.
TEST_F(OffloaderTest, AFullDiskPausesOffloadingUntilItHasRoomAgain) {
  std::atomic<int> write_errno{0}, space_errno{0};
  fault_ = [&](std::string_view op, const std::string&) -> int {
    if (op == "write") return write_errno.load();
    if (op == "space") return space_errno.load();
    return 0;
  };
  auto off = Open("fifo");
  Fill(*off, 1);
  std::memset(region_->data(), 'a', 100);
  std::vector<OffloadTask> tasks = {{"k1", 10, kSeg, 0, 100, std::nullopt}};
  std::vector<Code> reported;
  ON_CALL(*master_, OffloadDone(_, _)).WillByDefault([&](const CallContext&, const std::vector<OffloadResult>& r) {
    for (const auto& x : r) reported.push_back(x.status.code());
    return std::vector<Status>(r.size());
  });
  write_errno = ENOSPC;
  space_errno = ENOSPC;
  EXPECT_CALL(*master_, OffloadFetch(_, _)).WillOnce(Return(tasks));
  EXPECT_EQ(off->RunOnce(), 1u);
  EXPECT_TRUE(off->paused());
  EXPECT_EQ(reported, std::vector<Code>{Code::kFileWriteFail});  // the master keeps the DRAM copy
  ::testing::Mock::VerifyAndClearExpectations(master_.get());
  EXPECT_CALL(*master_, OffloadFetch(_, _)).Times(0);
  EXPECT_EQ(off->RunOnce(), 0u);  // within the pause: nothing fetched
  clock_.Advance(1000);
  EXPECT_EQ(off->RunOnce(), 0u);  // past it, and still no room
  std::string buf(1000, '\0');
  EXPECT_TRUE(off->reader()->ReadObject("b0-0", buf.data(), buf.size()).ok());  // the disk still reads
  ::testing::Mock::VerifyAndClearExpectations(master_.get());

  write_errno = 0;
  space_errno = 0;
  clock_.Advance(2000);  // the pause doubled
  EXPECT_CALL(*master_, OffloadFetch(_, _)).WillOnce(Return(tasks));
  EXPECT_EQ(off->RunOnce(), 1u);
  EXPECT_FALSE(off->paused());
  EXPECT_EQ(reported.back(), Code::kOk);
  EXPECT_TRUE(off->engine().Contains("k1"));
}

TEST_F(OffloaderTest, LruKeepsTheBucketsBeingRead) {
  auto off = Open("lru");
  Fill(*off, 5);
  std::string buf(1000, '\0');
  ASSERT_TRUE(off->reader()->ReadObject("b0-0", buf.data(), buf.size()).ok());  // b0 and b2 read lately
  ASSERT_TRUE(off->reader()->ReadObject("b2-1", buf.data(), buf.size()).ok());
  std::vector<std::string> told;
  EXPECT_CALL(*master_, DropDiskReplicas(_, _))
      .WillRepeatedly([&](const CallContext&, const std::vector<std::string>& k) {
        told.insert(told.end(), k.begin(), k.end());
        return std::vector<Status>(k.size());
      });
  EXPECT_EQ(off->EvictIfNeeded(3000), 3u);  // the three least recently read, oldest read first
  EXPECT_EQ(told, (std::vector<std::string>{"b1-0", "b1-1", "b3-0", "b3-1", "b4-0", "b4-1"}));
}

TEST_F(OffloaderTest, ARoundWritesFromTheSegmentAndForgetsValuesReplacedMeanwhile) {
  auto off = Open("fifo");
  std::memset(region_->data(), 'a', 100);
  std::memset(region_->data() + 100, 'b', 100);
  std::vector<OffloadTask> tasks = {{"k1", 10, kSeg, 0, 100, std::nullopt},
                                    {"k2", 11, kSeg, 100, 100, std::nullopt},
                                    {"k1", 12, kSeg, 100, 100, std::nullopt},              // k1 again, newer
                                    {"k3", 13, kSeg, (1 << 20) - 10, 100, std::nullopt}};  // outside
  EXPECT_CALL(*master_, OffloadFetch(_, _)).WillOnce(Return(tasks));
  std::vector<OffloadResult> reported;
  EXPECT_CALL(*master_, OffloadDone(_, _)).WillOnce([&](const CallContext&, const std::vector<OffloadResult>& r) {
    reported = r;
    // k2 was removed while it was written.
    return std::vector<Status>{Status(), Status(Code::kObjectNotFound, "gone"), Status(), Status()};
  });
  EXPECT_EQ(off->RunOnce(), 4u);
  ASSERT_EQ(reported.size(), 4u);
  EXPECT_EQ(reported[0].status.code(), Code::kObjectNotFound);  // superseded by object 12
  EXPECT_TRUE(reported[1].status.ok());
  EXPECT_TRUE(reported[2].status.ok());
  EXPECT_EQ(reported[3].status.code(), Code::kSegmentNotFound);
  EXPECT_FALSE(off->engine().Contains("k2"));  // forgotten: nobody will ask for it
  // Each copy made is reported with the checksum of the bytes written, for the master to match.
  const uint64_t b_sum = XXH3_64bits(std::string(100, 'b').data(), 100);
  EXPECT_EQ(reported[1].checksum, std::optional<uint64_t>(b_sum));
  EXPECT_EQ(reported[2].checksum, std::optional<uint64_t>(b_sum));
  EXPECT_FALSE(reported[0].checksum);
  EXPECT_FALSE(reported[3].checksum);
  std::string buf(100, '\0');
  ASSERT_TRUE(off->reader()->ReadObject("k1", buf.data(), buf.size()).ok());
  EXPECT_EQ(buf, std::string(100, 'b'));  // the newer value
}

TEST_F(OffloaderTest, ACopyTheMasterCannotMatchToTheValueIsForgotten) {
  auto off = Open("fifo");
  std::memset(region_->data(), 'a', 100);
  EXPECT_CALL(*master_, OffloadFetch(_, _))
      .WillOnce(Return(std::vector<OffloadTask>{{"k1", 10, kSeg, 0, 100, uint64_t{42}}}));
  EXPECT_CALL(*master_, OffloadDone(_, _)).WillOnce([](const CallContext&, const std::vector<OffloadResult>&) {
    return std::vector<Status>{Status(Code::kChecksumMismatch, "not the value")};
  });
  EXPECT_EQ(off->RunOnce(), 1u);
  EXPECT_FALSE(off->engine().Contains("k1"));
}

// A drop (the key was removed or replaced on the master) deletes the copy for good: a restarted
// client does not find it, so it cannot register the old value again. A new value of the key in
// the same round is written after the drop and survives. Drops are not reported.
TEST_F(OffloaderTest, ADroppedCopyIsGoneAfterARestartAndANewValueInTheSameRoundStays) {
  {
    auto off = Open("fifo");
    Fill(*off, 1);  // b0-0, b0-1
    std::memset(region_->data(), 'n', 100);
    OffloadTask drop0, drop1;
    drop0.disk_key = "b0-0";
    drop0.drop = true;
    drop1.disk_key = "b0-1";
    drop1.drop = true;
    EXPECT_CALL(*master_, OffloadFetch(_, _))
        .WillOnce(Return(std::vector<OffloadTask>{drop0, drop1, {"b0-1", 5, kSeg, 0, 100, std::nullopt}}));
    std::vector<OffloadResult> reported;
    EXPECT_CALL(*master_, OffloadDone(_, _)).WillOnce([&](const CallContext&, const std::vector<OffloadResult>& r) {
      reported = r;
      return std::vector<Status>(r.size());
    });
    EXPECT_EQ(off->RunOnce(), 3u);
    ASSERT_EQ(reported.size(), 1u);
    EXPECT_EQ(reported[0].disk_key, "b0-1");
  }
  auto off = Open("fifo");  // the client restarts on the same directory
  EXPECT_FALSE(off->engine().Contains("b0-0"));
  std::string buf(100, '\0');
  ASSERT_TRUE(off->reader()->ReadObject("b0-1", buf.data(), buf.size()).ok());
  EXPECT_EQ(buf, std::string(100, 'n'));
}

}  // namespace
}  // namespace yb
