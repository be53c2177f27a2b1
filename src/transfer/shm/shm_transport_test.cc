// Same-host transfers (issue 34, items 1 and 2): a segment in shareable memory is mapped by another
// process's transport through the owner's socket, and bytes move by memcpy, checked against their
// grants as the owner's transfer server checks them; an owner that cannot share, a wrong secret or
// another user leaves the segment to the next transport.
#include "transfer/shm/shm_transport.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "common/checksum.h"
#include "common/grant.h"
#include "common/host_identity.h"
#include "common/temp_dir.h"
#include "transfer/shm/shm_server.h"

namespace yb::shm {
namespace {

const std::string kKey(kGrantKeySize, 'G');

// Counts what it is given, and answers as told.
class Recording final : public Transport {
 public:
  bool Reaches(SegmentId) const override { return true; }
  std::vector<Status> Submit(const std::vector<TransferRequest>& batch) override {
    submitted += batch.size();
    return std::vector<Status>(batch.size(), Status::OK());
  }
  size_t submitted = 0;
};

class ShmTransportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // An endpoint of its own per test: the socket's name.
    static std::atomic<int> n{0};
    endpoint_ = "127.0.0.1:" + std::to_string(getpid()) + "-" + std::to_string(n++);
    region_ = MappedRegion::Map(kSize, false, /*shareable=*/true);
    ASSERT_TRUE(region_);
    ASSERT_GE(region_->fd(), 0);
    std::memset(region_->data(), 0, kSize);
    served_ = std::make_shared<LocalSegmentRegistry>();
    served_->Add(5, LocalSegment{region_, region_->data() + 4096, kSize - 4096, kKey});
    auto private_memory = MappedRegion::Map(kSize);
    ASSERT_LT(private_memory->fd(), 0);
    served_->Add(6, LocalSegment{private_memory, private_memory->data(), kSize, kKey});
  }

  void Serve(const std::string& data_key) {
    server_ = std::make_unique<ShmServer>(served_, ShmServer::Options{endpoint_, [data_key] { return data_key; }});
    ASSERT_TRUE(server_->Start().ok());
  }

  std::unique_ptr<ShmTransport> Peer(const std::string& data_key, std::string owner_host = "",
                                     std::string shmem_huge_pages_path = "") {
    ShmTransport::Options o;
    o.shmem_huge_pages_path = std::move(shmem_huge_pages_path);
    o.data_key = [data_key] { return data_key; };
    o.host_of = [owner_host](SegmentId) { return owner_host; };
    o.my_host = HostIdentity();
    o.clock = &clock_;
    o.wall_clock = &wall_;
    return std::make_unique<ShmTransport>(
        [this](SegmentId s) -> std::optional<std::string> {
          if (s == 5 || s == 6) return endpoint_;
          if (s == 7) return std::string("127.0.0.1:1");  // another host's: no socket here
          return std::nullopt;
        },
        fallback_, o);
  }

  TransferRequest Request(TransferRequest::Op op, uint64_t offset, void* local, uint64_t length) {
    TransferRequest r{op, 5, offset, local, length};
    r.grant = MintGrant(kKey, 5, op == TransferRequest::Op::kWrite ? GrantAccess::kWrite : GrantAccess::kRead, offset,
                        length, wall_.NowMs() + 60'000);
    return r;
  }

  void MovesThroughTheOwnersMemory(ShmTransport& peer);

  static constexpr uint64_t kSize = 8 << 20;
  std::string endpoint_;
  std::shared_ptr<MappedRegion> region_;
  std::shared_ptr<LocalSegmentRegistry> served_;
  std::unique_ptr<ShmServer> server_;
  std::shared_ptr<Recording> fallback_ = std::make_shared<Recording>();
  ManualClock clock_;
  ManualClock wall_{WallMs()};
};

TEST_F(ShmTransportTest, BytesMoveThroughTheOwnersMemoryAndChecksumsAreTaken) {
  Serve("");
  // Writes through the owner's memfd (shmem without huge pages) and through the mapping (with).
  TempDir dir;
  for (const std::string thp : {"always within_size advise [never] deny force", "always within_size [advise] never"}) {
    SCOPED_TRACE(thp);
    std::ofstream(dir.path() + "/shmem_enabled") << thp << "\n";
    auto peer = Peer("", "", dir.path() + "/shmem_enabled");
    MovesThroughTheOwnersMemory(*peer);
    EXPECT_EQ(peer->memfd_written_bytes(), thp.find("[never]") != std::string::npos ? 3u << 20 : 0u);
  }
  EXPECT_EQ(server_->given(), 2u);  // mapped once by each
  EXPECT_EQ(fallback_->submitted, 0u);
}

void ShmTransportTest::MovesThroughTheOwnersMemory(ShmTransport& peer) {
  std::memset(region_->data(), 0, kSize);
  ASSERT_TRUE(peer.Reaches(5));
  std::string value(3 << 20, '\0');
  for (size_t i = 0; i < value.size(); ++i) value[i] = static_cast<char>(i * 7 + 3);
  ChecksumSink wrote(value.size());
  auto w = Request(TransferRequest::Op::kWrite, 1000, value.data(), value.size());
  w.checksum = &wrote;
  ASSERT_TRUE(peer.Submit({w})[0].ok());
  EXPECT_EQ(std::memcmp(region_->data() + 4096 + 1000, value.data(), value.size()), 0);  // the owner sees them
  std::string back(value.size(), '\0');
  ChecksumSink read(value.size());
  auto r = Request(TransferRequest::Op::kRead, 1000, back.data(), back.size());
  r.checksum = &read;
  ASSERT_TRUE(peer.Submit({r})[0].ok());
  EXPECT_EQ(back, value);
  struct Piece {
    const void* ptr;
    uint64_t size;
  };
  const std::vector<Piece> whole{{value.data(), value.size()}};
  EXPECT_EQ(wrote.Finish(whole), ObjectChecksum(value.data(), value.size()));
  EXPECT_EQ(read.Finish(whole), ObjectChecksum(value.data(), value.size()));
}

TEST_F(ShmTransportTest, SmallWritesAdjacentInTheSegmentGoInOneSystemCallEachCheckedAndHashed) {
  Serve("");
  TempDir dir;
  std::ofstream(dir.path() + "/shmem_enabled") << "always within_size advise [never] deny force\n";
  auto peer = Peer("", "", dir.path() + "/shmem_enabled");
  constexpr size_t kValues = 40, kValue = 4096;
  std::vector<std::string> values;
  std::vector<std::unique_ptr<ChecksumSink>> sums;
  std::vector<TransferRequest> batch;
  for (size_t v = 0; v < kValues; ++v) {
    values.emplace_back(kValue, static_cast<char>('a' + v % 26));
    sums.push_back(std::make_unique<ChecksumSink>(kValue));
    batch.push_back(Request(TransferRequest::Op::kWrite, v * kValue, values[v].data(), kValue));
    batch.back().checksum = sums.back().get();
  }
  batch[20].grant.mac[0] ^= 1;  // refused alone: the run is cut there
  // A read of what an earlier write of the batch wrote sees it (the run is written first), and a
  // write that is not adjacent begins a run of its own.
  std::string back(kValue, '\0');
  batch.push_back(Request(TransferRequest::Op::kRead, 3 * kValue, back.data(), kValue));
  std::string apart(100, 'z');
  batch.push_back(Request(TransferRequest::Op::kWrite, 1 << 20, apart.data(), apart.size()));
  auto res = peer->Submit(batch);
  for (size_t v = 0; v < kValues; ++v) {
    const uint8_t* at = region_->data() + 4096 + v * kValue;
    if (v == 20) {
      EXPECT_EQ(res[v].code(), Code::kIllegalClient);
      for (size_t i = 0; i < kValue; ++i) ASSERT_EQ(at[i], 0) << i;  // not a byte of it
      continue;
    }
    ASSERT_TRUE(res[v].ok()) << v << ": " << res[v].ToString();
    EXPECT_EQ(std::memcmp(at, values[v].data(), kValue), 0) << v;
    struct Piece {
      const void* ptr;
      uint64_t size;
    };
    EXPECT_EQ(sums[v]->Finish(std::vector<Piece>{{values[v].data(), kValue}}),
              ObjectChecksum(values[v].data(), kValue));
  }
  ASSERT_TRUE(res[kValues].ok());
  EXPECT_EQ(back, values[3]);
  ASSERT_TRUE(res[kValues + 1].ok());
  EXPECT_EQ(std::memcmp(region_->data() + 4096 + (1 << 20), apart.data(), apart.size()), 0);
  EXPECT_EQ(peer->memfd_written_bytes(), (kValues - 1) * kValue + apart.size());
  EXPECT_EQ(peer->memfd_writes(), 3u);  // values 0-19, 21-39, and the one apart

  // Placements that alternate between two regions, as a batch's do between the allocator's: sorted
  // by place, each region's values go in one call.
  std::vector<TransferRequest> alternating;
  for (size_t v = 0; v < 8; ++v) {
    const uint64_t region = v % 2 ? (2 << 20) : (3 << 20);
    alternating.push_back(Request(TransferRequest::Op::kWrite, region + v / 2 * kValue, values[v].data(), kValue));
  }
  for (const Status& st : peer->Submit(alternating)) EXPECT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(peer->memfd_writes(), 5u);
  for (size_t v = 0; v < 8; ++v) {
    const uint64_t region = v % 2 ? (2 << 20) : (3 << 20);
    EXPECT_EQ(std::memcmp(region_->data() + 4096 + region + v / 2 * kValue, values[v].data(), kValue), 0) << v;
  }
  // Writes that overlap keep the batch's order: the last one's bytes stay.
  auto first = Request(TransferRequest::Op::kWrite, 4 << 20, values[0].data(), kValue);
  auto second = Request(TransferRequest::Op::kWrite, (4 << 20) - 100, values[1].data(), kValue);
  for (const Status& st : peer->Submit({first, second})) EXPECT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(std::memcmp(region_->data() + 4096 + (4 << 20) - 100, values[1].data(), kValue), 0);
  EXPECT_EQ(region_->data()[4096 + (4 << 20) - 100 + kValue], static_cast<uint8_t>(values[0][0]));
}

TEST_F(ShmTransportTest, ASegmentTheMasterListsOnAnotherHostIsNotTried) {
  Serve("");
  EXPECT_FALSE(Peer("", "another-host/0000")->Reaches(5));
  EXPECT_EQ(server_->given() + server_->refused(), 0u);  // the owner never heard of us
  EXPECT_TRUE(Peer("", HostIdentity())->Reaches(5));       // this host's: mapped
  EXPECT_TRUE(Peer("", "")->Reaches(5));                   // an owner that did not say: tried
  EXPECT_EQ(server_->given(), 2u);
  EXPECT_NE(HostIdentity().find('/'), std::string::npos);
  EXPECT_GT(HostIdentity().size(), 30u);  // "hostname/" and a boot id
}

TEST_F(ShmTransportTest, EveryRequestIsCheckedAgainstItsGrantAsTheOwnerChecksIt) {
  Serve("");
  auto peer = Peer("");
  char buf[100] = {};
  auto none = Request(TransferRequest::Op::kWrite, 0, buf, 100);
  none.grant = Grant{};
  auto elsewhere = Request(TransferRequest::Op::kWrite, 0, buf, 100);
  elsewhere.offset = 4096;
  auto read_grant = Request(TransferRequest::Op::kRead, 0, buf, 100);
  read_grant.op = TransferRequest::Op::kWrite;
  auto forged = Request(TransferRequest::Op::kWrite, 0, buf, 100);
  forged.grant.mac[0] ^= 1;
  auto outside = Request(TransferRequest::Op::kWrite, kSize - 4096 - 50, buf, 100);
  auto res = peer->Submit({none, elsewhere, read_grant, forged, outside});
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(res[i].code(), Code::kIllegalClient) << i;
  EXPECT_EQ(res[4].code(), Code::kInvalidParams);
  auto lapsed = Request(TransferRequest::Op::kWrite, 0, buf, 100);
  wall_.Advance(60'001);
  EXPECT_EQ(peer->Submit({lapsed})[0].code(), Code::kIllegalClient);
  for (uint64_t i = 0; i < kSize; ++i) ASSERT_EQ(region_->data()[i], 0) << i;  // not a byte moved
}

TEST_F(ShmTransportTest, WhatCannotBeMappedIsLeftToTheNextTransport) {
  Serve("");
  auto peer = Peer("");
  EXPECT_FALSE(peer->Reaches(6));  // private memory: nothing to share
  EXPECT_FALSE(peer->Reaches(7));  // no owner on this host
  EXPECT_FALSE(peer->Reaches(8));  // unknown
  EXPECT_EQ(server_->given(), 0u);
  // An SSD tier read of a mapped segment is its owner's process's to serve.
  ASSERT_TRUE(peer->Reaches(5));
  std::string key = "k";
  char buf[10];
  TransferRequest disk{TransferRequest::Op::kReadObject, 5, 0, buf, 10, &key};
  EXPECT_TRUE(peer->Submit({disk})[0].ok());
  EXPECT_EQ(fallback_->submitted, 1u);
  EXPECT_EQ(peer->mapped_segments(), 1u);
  // An owner that dies (its end of the connection closes) is not written into any more: a write
  // that lands after its death fails, as it would over TCP (acknowledged, it would be lost with the
  // owner), and the mapping goes.
  server_->Stop();
  std::string value(1000, 'v');
  std::string other(1000, 'o');
  auto written = peer->Submit({Request(TransferRequest::Op::kWrite, 0, value.data(), value.size()),
                               Request(TransferRequest::Op::kWrite, 4096, other.data(), other.size())});
  for (const Status& st : written) {
    EXPECT_EQ(st.code(), Code::kTransferFail);
    EXPECT_NE(st.message().find("died"), std::string::npos) << st.ToString();
  }
  EXPECT_FALSE(peer->Reaches(5));
  EXPECT_EQ(peer->mapped_segments(), 0u);
  EXPECT_EQ(fallback_->submitted, 1u);  // the disk read only
  Serve("");  // back (a new process on the same endpoint): asked again after the pause
  EXPECT_FALSE(peer->Reaches(5));
  clock_.Advance(30'000);
  EXPECT_TRUE(peer->Reaches(5));
}

TEST_F(ShmTransportTest, WithASecretOnlyAPeerThatProvesItMapsTheSegmentAndTheOwnerProvesItBack) {
  Serve("the-data-plane-key");
  EXPECT_FALSE(Peer("")->Reaches(5));
  EXPECT_FALSE(Peer("another-clusters-key")->Reaches(5));
  EXPECT_EQ(server_->given(), 0u);
  EXPECT_EQ(server_->refused(), 2u);
  EXPECT_TRUE(Peer("the-data-plane-key")->Reaches(5));
  // An owner without the key (an impostor on the name) is not trusted by a peer that has one.
  server_->Stop();
  Serve("");
  EXPECT_FALSE(Peer("the-data-plane-key")->Reaches(5));
  EXPECT_EQ(server_->given(), 1u);  // it handed the memory over, but the peer did not use it
}

TEST_F(ShmTransportTest, APeerLeftToTcpIsAskedAgainAfterAPause) {
  auto peer = Peer("");
  EXPECT_FALSE(peer->Reaches(5));  // nobody serves the name yet
  Serve("");
  EXPECT_FALSE(peer->Reaches(5));  // within the pause
  clock_.Advance(30'000);
  EXPECT_TRUE(peer->Reaches(5));
}

TEST_F(ShmTransportTest, AProcessOfAnotherUserIsRefused) {
  if (getuid() != 0) GTEST_SKIP() << "needs root to run a process as another user";
  Serve("");
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (setgid(65534) != 0 || setuid(65534) != 0) _exit(2);
    _exit(Peer("")->Reaches(5) ? 1 : 0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);  // not mapped
  EXPECT_EQ(server_->given(), 0u);
  EXPECT_EQ(server_->refused(), 1u);
}

}  // namespace
}  // namespace yb::shm
