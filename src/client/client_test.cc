#include "yuebing/client.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <numeric>

#include "api/routed_master_api.h"
#include "client/client_internal.h"
#include "client/mock_master.h"
#include "common/checksum.h"
#include "common/clock.h"
#include "master/master_service.h"
#include "transfer/fault_transport.h"
#include "transfer/memcpy_transport.h"
#include "transfer/transfer_engine.h"
#include "yuebing/embedded.h"

namespace yb {
namespace {

class ClientTest : public ::testing::Test {
 protected:
  void SetUp() override { Build(false); }

  void Build(bool transport_needs_registration) {
    clients_.clear();
    MasterConfig mc;
    mc.random_seed = 11;
    mc.object_shards = 8;
    mc.liveness_max_gap_ms = 0;  // the tests step the clock by whole TTLs
    master_ = std::shared_ptr<MasterService>(MasterService::Create(mc, clock_).value().release());
    local_ = std::make_shared<LocalSegmentRegistry>();
    fault_ = std::make_shared<FaultInjectingTransport>(std::make_shared<MemcpyTransport>(local_),
                                                       transport_needs_registration);
    engine_ = std::make_shared<TransferEngine>();
    engine_->AddTransport(fault_);
    a_ = NewClient("node-a", 1 << 20);
    b_ = NewClient("node-b", 1 << 20);
  }

  // Reservations off unless asked: most tests here check the master's exact accounting of what
  // their Puts hold (the ReservationTest cases below turn them on).
  Client* NewClient(const std::string& host, uint64_t segment, bool checksum = ClientConfig{}.enable_checksum,
                    uint64_t reservation_bytes = 0) {
    ClientConfig c;
    c.put_reservation_bytes = reservation_bytes;
    c.local_hostname = host;
    c.global_segment_size = segment;
    c.local_buffer_size = 1 << 16;
    c.enable_checksum = checksum;
    auto cl = ClientInternal::Create(c, Parts());
    EXPECT_TRUE(cl.ok()) << cl.status().ToString();
    clients_.push_back(std::move(cl).value());
    return clients_.back().get();
  }

  // The test's master and memcpy engine; the heartbeat on a scheduler the tests never advance
  // (they call Heartbeat themselves).
  ClientParts Parts() {
    ClientParts p;
    p.master =
        counting_ ? std::static_pointer_cast<MasterApi>(counting_) : std::static_pointer_cast<MasterApi>(master_);
    p.local_segments = local_;
    p.engine = engine_;
    p.scheduler = &scheduler_;
    return p;
  }

  static std::string Bytes(size_t n, char seed) {
    std::string s(n, '\0');
    for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(seed + i * 7);
    return s;
  }

  // The master as clients see it through a counter of their calls, when a test sets one.
  class CountingMaster final : public RoutedMasterApi {
   public:
    explicit CountingMaster(std::shared_ptr<MasterApi> target) : target_(std::move(target)) {}
    // An older master: it takes no Puts into reservations (MasterApi's default).
    bool old = false;
    std::atomic<int> calls{0};
    PutCommitAnswer BatchPutCommit(const CallContext& ctx, const Keys& keys, const Keys& reservations,
                                   const std::vector<std::optional<uint64_t>>& checksums, const Keys& revoke,
                                   const Keys& start_keys, const std::vector<uint64_t>& start_sizes,
                                   const PlacementConfig& config) override {
      if (old)
        return MasterApi::BatchPutCommit(ctx, keys, reservations, checksums, revoke, start_keys, start_sizes, config);
      return RoutedMasterApi::BatchPutCommit(ctx, keys, reservations, checksums, revoke, start_keys, start_sizes,
                                             config);
    }

   protected:
    Status Route(const Attempt& attempt) override {
      ++calls;
      (void)attempt(*target_);
      return Status::OK();  // its answer is the call's, whatever it says
    }

   private:
    std::shared_ptr<MasterApi> target_;
  };

  ManualClock clock_;
  ManualScheduler scheduler_{clock_};
  std::shared_ptr<CountingMaster> counting_;
  std::shared_ptr<MasterService> master_;
  std::shared_ptr<LocalSegmentRegistry> local_;
  std::shared_ptr<FaultInjectingTransport> fault_;
  std::shared_ptr<TransferEngine> engine_;
  std::vector<std::unique_ptr<Client>> clients_;
  Client* a_ = nullptr;
  Client* b_ = nullptr;
};

TEST_F(ClientTest, PutFromOneClientGetFromAnother) {
  std::string v = Bytes(10000, 'a');
  ASSERT_TRUE(a_->Put("k", v.data(), v.size()).ok());
  std::string out(10000, '\0');
  auto n = b_->Get("k", out.data(), out.size());
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, 10000u);
  EXPECT_EQ(out, v);
  EXPECT_EQ(*b_->Get("k"), v);
  EXPECT_EQ(*b_->GetSize("k"), 10000u);
  EXPECT_TRUE(*b_->IsExist("k"));
  EXPECT_EQ(b_->Get("missing").code(), Code::kObjectNotFound);
}

TEST_F(ClientTest, SlicesScatterAndGather) {
  std::string p1 = Bytes(100, 'x'), p2 = Bytes(3000, 'y'), p3 = Bytes(1, 'z');
  ASSERT_TRUE(a_->Put("k", {{p1.data(), p1.size()}, {p2.data(), p2.size()}, {p3.data(), 1}}).ok());
  std::string whole = p1 + p2 + p3;
  std::string o1(2000, '\0'), o2(2000, '\0');
  auto n = b_->Get("k", std::vector<Slice>{{o1.data(), o1.size()}, {o2.data(), o2.size()}});
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, whole.size());
  EXPECT_EQ((o1 + o2).substr(0, whole.size()), whole);
}

TEST_F(ClientTest, SmallBufferIsAnErrorAndWritesNothing) {
  std::string v = Bytes(1000, 'a');
  ASSERT_TRUE(a_->Put("k", v.data(), v.size()).ok());
  std::string out(999, '#');
  EXPECT_EQ(b_->Get("k", out.data(), out.size()).code(), Code::kBufferOverflow);
  EXPECT_EQ(out, std::string(999, '#'));
  EXPECT_EQ(b_->Get("k", nullptr, 10).code(), Code::kInvalidParams);
  // The failed read released its pin: the object can be removed once its lease ends.
  clock_.AdvanceSec(11);
  EXPECT_TRUE(a_->Remove("k").ok());
}

TEST_F(ClientTest, PutOfAnExistingKeyAndUpsert) {
  std::string v1 = Bytes(500, '1'), v2 = Bytes(500, '2'), v3 = Bytes(800, '3');
  ASSERT_TRUE(a_->Put("k", v1.data(), v1.size()).ok());
  EXPECT_TRUE(a_->Put("k", v2.data(), v2.size()).ok());  // same size: no-op success
  EXPECT_EQ(*b_->Get("k"), v1);                          // values are immutable
  EXPECT_EQ(a_->Put("k", v3.data(), v3.size()).code(), Code::kObjectAlreadyExists);
  ASSERT_TRUE(a_->Upsert("k", {{v3.data(), v3.size()}}).ok());
  EXPECT_EQ(*a_->Get("k"), v3);  // the writer's own cached location went with its write
  // b read it within its location cache's ttl: the value before, whose bytes are still where they
  // were (bounded staleness, docs/design.md section 3); the ttl later, the new one.
  EXPECT_EQ(*b_->Get("k"), v1);
  clock_.Advance(ClientConfig{}.location_cache_ttl_ms);
  EXPECT_EQ(*b_->Get("k"), v3);
}

// A repeated get goes straight to the holder; a location whose range now holds other bytes is
// found out by the checksum, dropped, and the master asked: the right bytes, never the others.
TEST_F(ClientTest, RepeatedGetsUseCachedLocationsAndAStaleOneIsFoundOut) {
  const std::string v = Bytes(6000, 'r');
  ASSERT_TRUE(a_->Put("k", v.data(), v.size()).ok());
  EXPECT_EQ(*b_->Get("k"), v);
  const uint64_t hits = b_->Stats().location_cache_hits;
  std::string out(v.size(), '\0');
  EXPECT_EQ(*b_->Get("k", out.data(), out.size()), v.size());
  EXPECT_EQ(out, v);
  EXPECT_EQ(*b_->Get("k"), v);
  auto batch = b_->BatchGet({"k"});
  ASSERT_TRUE(batch[0].ok());
  EXPECT_EQ(*batch[0], v);
  EXPECT_EQ(b_->Stats().location_cache_hits, hits + 3);  // no master call for any (the batch's size neither)
  EXPECT_EQ(ClientInternal::held_pins(*b_), 0u);
  // Another client replaces it with a value of the same size whose range is the old one's: the
  // cached location now holds other bytes.
  const ReplicaDesc where = b_->Query("k")->replicas.at(0);
  ASSERT_TRUE(a_->Remove("k", true).ok());
  const std::string w = Bytes(6000, 'w');
  ASSERT_TRUE(a_->Put("k", w.data(), w.size()).ok());
  ASSERT_EQ(b_->Query("k")->replicas.at(0).offset, where.offset);  // the same range again
  EXPECT_EQ(*b_->Get("k"), w);
  EXPECT_EQ(b_->Stats().location_cache_stale, 1u);
  // Removed by this client: its next read asks the master.
  ASSERT_TRUE(b_->Remove("k", true).ok());
  EXPECT_EQ(b_->Get("k").status().code(), Code::kObjectNotFound);
  // Objects without a checksum are never cached.
  Client* plain = NewClient("node-c", 1 << 20, /*checksum=*/false);
  ASSERT_TRUE(plain->Put("p", v.data(), v.size()).ok());
  const uint64_t before = b_->Stats().location_cache_hits;
  EXPECT_EQ(*b_->Get("p"), v);
  EXPECT_EQ(*b_->Get("p"), v);
  EXPECT_EQ(b_->Stats().location_cache_hits, before);
}

TEST_F(ClientTest, FailedReplicaReadMovesToTheNextReplica) {
  std::string v = Bytes(4096, 'r');
  ReplicateConfig two;
  two.replica_num = 2;
  ASSERT_TRUE(a_->Put("k", v.data(), v.size(), two).ok());
  auto q = b_->Query("k");
  ASSERT_TRUE(q.ok());
  ASSERT_EQ(q->replicas.size(), 2u);
  fault_->FailSegment(q->replicas[0].segment);
  EXPECT_EQ(*b_->Get("k"), v);
  fault_->FailSegment(q->replicas[1].segment);
  EXPECT_EQ(b_->Get("k").code(), Code::kTransferFail);
}

// A layer-wise load: one start, each layer's ranges of every object, one end. The objects are
// pinned meanwhile (a remove without force is refused), and released at the end.
TEST_F(ClientTest, AGetSessionReadsLayerRangesAndPinsItsObjects) {
  constexpr size_t kLayers = 8, kLayer = 1000;
  const std::vector<std::string> keys{"s0", "s1"};
  std::vector<std::string> values;
  for (size_t i = 0; i < keys.size(); ++i) {
    values.push_back(Bytes(kLayers * kLayer, static_cast<char>('a' + i)));
    ASSERT_TRUE(a_->Put(keys[i], values[i].data(), values[i].size()).ok());
  }
  auto started = b_->GetSessionStart({"s0", "s1", "missing"});
  EXPECT_TRUE(started[0].ok() && started[1].ok());
  EXPECT_EQ(started[2].code(), Code::kObjectNotFound);
  std::vector<std::string> got(keys.size(), std::string(kLayers * kLayer, '\0'));
  for (size_t l = kLayers; l-- > 0;) {  // any order
    std::vector<std::vector<Slice>> bufs;
    std::vector<std::vector<uint64_t>> offsets;
    for (auto& g : got) {
      bufs.push_back({{g.data() + l * kLayer, kLayer}});
      offsets.push_back({l * kLayer});
    }
    auto r = b_->GetSessionRanges(keys, bufs, offsets);
    ASSERT_TRUE(r[0].ok() && r[1].ok()) << r[0].status().ToString();
    EXPECT_EQ(*r[0], kLayer);
  }
  EXPECT_EQ(got, values);
  // Two ranges of one key at once, and the checks: past the end, lists that differ, no session.
  std::string two(20, '\0');
  auto r = b_->GetSessionRanges({"s1"}, {{{two.data(), 10}, {two.data() + 10, 10}}}, {{5, kLayers * kLayer - 10}});
  ASSERT_TRUE(r[0].ok());
  EXPECT_EQ(two, values[1].substr(5, 10) + values[1].substr(kLayers * kLayer - 10));
  EXPECT_EQ(b_->GetSessionRanges({"s1"}, {{{two.data(), 20}}}, {{kLayers * kLayer - 10}})[0].code(),
            Code::kInvalidParams);
  EXPECT_EQ(b_->GetSessionRanges({"s1"}, {{{two.data(), 20}}}, {{}})[0].code(), Code::kInvalidParams);
  EXPECT_EQ(b_->GetSessionRanges({"missing"}, {{{two.data(), 20}}}, {{0}})[0].code(), Code::kInvalidParams);
  EXPECT_EQ(a_->Remove("s0").code(), Code::kObjectHasLease);  // pinned by the session
  b_->GetSessionEnd(keys);
  EXPECT_EQ(b_->GetSessionRanges({"s0"}, {{{two.data(), 20}}}, {{0}})[0].code(), Code::kInvalidParams);
  clock_.AdvanceSec(11);  // past the read's lease
  EXPECT_TRUE(a_->Remove("s0").ok());
}

TEST_F(ClientTest, AGetSessionRangeFallsToTheNextReplica) {
  std::string v = Bytes(4096, 'f');
  ReplicateConfig two;
  two.replica_num = 2;
  ASSERT_TRUE(a_->Put("f", v.data(), v.size(), two).ok());
  ASSERT_TRUE(b_->GetSessionStart({"f"})[0].ok());
  auto q = b_->Query("f");
  ASSERT_TRUE(q.ok());
  fault_->FailSegment(q->replicas[0].segment);
  std::string got(100, '\0');
  auto r = b_->GetSessionRanges({"f"}, {{{got.data(), 100}}}, {{3000}});
  ASSERT_TRUE(r[0].ok()) << r[0].status().ToString();
  EXPECT_EQ(got, v.substr(3000, 100));
  fault_->FailSegment(q->replicas[1].segment);
  EXPECT_EQ(b_->GetSessionRanges({"f"}, {{{got.data(), 100}}}, {{0}})[0].code(), Code::kTransferFail);
  b_->GetSessionEnd({"f"});
}

// A layer-wise store: the object is reserved at the start, invisible until the end, written
// range by range to every replica; a revoke frees it.
TEST_F(ClientTest, APutSessionWritesLayerRangesThenPublishes) {
  constexpr size_t kLayers = 4, kLayer = 3000;
  const std::string v = Bytes(kLayers * kLayer, 'p');
  ReplicateConfig two;
  two.replica_num = 2;
  auto started = a_->PutSessionStart({"p", "q"}, {v.size(), v.size()}, two);
  ASSERT_TRUE(started[0].ok() && started[1].ok());
  EXPECT_EQ(a_->PutSessionStart({"p"}, {v.size()})[0].code(), Code::kInvalidParams);  // open already
  for (size_t l = 0; l < kLayers; ++l) {
    auto r = a_->PutSessionRanges({"p"}, {{{const_cast<char*>(v.data()) + l * kLayer, kLayer}}}, {{l * kLayer}});
    ASSERT_TRUE(r[0].ok()) << r[0].status().ToString();
    EXPECT_EQ(*r[0], kLayer);
    EXPECT_EQ(b_->Get("p").code(), Code::kReplicaNotReady);  // not before the end
  }
  EXPECT_EQ(a_->PutSessionRanges({"p"}, {{{const_cast<char*>(v.data()), 10}}}, {{v.size() - 5}})[0].code(),
            Code::kInvalidParams);
  EXPECT_EQ(a_->PutSessionRanges({"none"}, {{{const_cast<char*>(v.data()), 10}}}, {{0}})[0].code(),
            Code::kInvalidParams);
  auto ended = a_->PutSessionEnd({"p", "none"});
  EXPECT_TRUE(ended[0].ok());
  EXPECT_EQ(ended[1].code(), Code::kInvalidParams);
  EXPECT_EQ(*b_->Get("p"), v);
  auto q = b_->Query("p");
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->replicas.size(), 2u);
  fault_->FailSegment(q->replicas[0].segment);
  EXPECT_EQ(*b_->Get("p"), v);  // every replica got every range
  fault_->Clear();
  EXPECT_EQ(a_->PutSessionRanges({"p"}, {{{const_cast<char*>(v.data()), 10}}}, {{0}})[0].code(),
            Code::kInvalidParams);  // ended: no more writes
  EXPECT_TRUE(a_->PutSessionRevoke({"q"})[0].ok());
  EXPECT_EQ(b_->Get("q").code(), Code::kObjectNotFound);
  EXPECT_TRUE(a_->PutSessionStart({"q"}, {10})[0].ok());  // the key is free again
  EXPECT_TRUE(a_->PutSessionRevoke({"q"})[0].ok());
}

TEST_F(ClientTest, ChecksumCatchesCorruptionAndTriesTheNextReplica) {
  Client* c = NewClient("node-c", 1 << 20, /*checksum=*/true);
  std::string v = Bytes(4096, 'c');
  ReplicateConfig two;
  two.replica_num = 2;
  two.preferred_segments = {"node-a", "node-b"};
  ASSERT_TRUE(c->Put("k2", v.data(), v.size(), two).ok());
  ReplicateConfig on_a;
  on_a.preferred_segments = {"node-a"};
  ASSERT_TRUE(c->Put("k1", v.data(), v.size(), on_a).ok());
  ASSERT_TRUE(b_->Query("k2")->checksum.has_value());
  fault_->CorruptReadsFrom(ClientInternal::segments(*a_)[0]);
  EXPECT_EQ(*b_->Get("k2"), v);
  std::string out(4096, '\0');
  EXPECT_EQ(b_->Get("k1", out.data(), out.size()).code(), Code::kChecksumMismatch);
  std::string out2(4096, '\0');
  auto batch = b_->BatchGet({"k1", "k2"}, {{{out.data(), out.size()}}, {{out2.data(), out2.size()}}});
  EXPECT_EQ(batch[0].code(), Code::kChecksumMismatch);
  EXPECT_TRUE(batch[1].ok());
  EXPECT_EQ(out2, v);
}

// Checksums are on by default, for values of many chunks too, read into buffers cut anywhere; a
// caller who turns them off records none and checks none.
TEST_F(ClientTest, ChecksumsAreOnByDefaultAndCatchADamagedChunkOfALargeValue) {
  std::string v = Bytes(300000, 'L');
  ReplicateConfig two;
  two.replica_num = 2;
  two.preferred_segments = {"node-a", "node-b"};
  ASSERT_TRUE(a_->Put("big", v.data(), v.size(), two).ok());
  ASSERT_TRUE(b_->Query("big")->checksum.has_value());
  EXPECT_EQ(*b_->Query("big")->checksum, ObjectChecksum(v.data(), v.size()));
  std::string head(70001, '\0'), tail(v.size() - head.size(), '\0');
  ASSERT_TRUE(b_->Get("big", {{head.data(), head.size()}, {tail.data(), tail.size()}}).ok());
  EXPECT_EQ(head + tail, v);
  fault_->CorruptReadsFrom(ClientInternal::segments(*a_)[0]);
  fault_->CorruptReadsFrom(ClientInternal::segments(*b_)[0]);
  std::string out(v.size(), '\0');
  EXPECT_EQ(b_->Get("big", out.data(), out.size()).code(), Code::kChecksumMismatch);
  fault_->Clear();
  Client* off = NewClient("node-c", 0, /*checksum=*/false);
  ASSERT_TRUE(off->Put("unchecked", v.data(), v.size(), two).ok());
  EXPECT_FALSE(off->Query("unchecked")->checksum.has_value());
}

// Mooncake's master refuses a soft-pin TTL that does not come with a soft pin: so does every write.
TEST_F(ClientTest, ASoftPinTtlWithoutASoftPinIsRefused) {
  ReplicateConfig rc;
  rc.soft_pin_ttl_ms = 1000;
  std::string v = Bytes(100, 's');
  EXPECT_EQ(a_->Put("k", v.data(), v.size(), rc).code(), Code::kInvalidParams);
  EXPECT_FALSE(*a_->IsExist("k"));
  rc.with_soft_pin = true;
  EXPECT_TRUE(a_->Put("k", v.data(), v.size(), rc).ok());
}

// Puts into reservations (docs/design.md): once a client writes a shape again, its Puts of that
// shape make one master call each, single or batched, with the bytes exact; what it keeps is one
// reservation per Put it made at once. A shape written once leaves none.
TEST_F(ClientTest, PutsIntoReservationsMakeOneMasterCallAndKeepOneReservationPerKey) {
  counting_ = std::make_shared<CountingMaster>(master_);
  Client* c = NewClient("node-r", 0, true, /*reservation_bytes=*/1 << 20);
  const std::string v0 = Bytes(1000, '0'), v1 = Bytes(1000, '1'), v2 = Bytes(1000, '2');
  int before = counting_->calls;
  ASSERT_TRUE(c->Put("k0", v0.data(), v0.size()).ok());
  EXPECT_EQ(counting_->calls - before, 2);  // PutStart, PutEnd
  EXPECT_EQ(ClientInternal::reservations(*c), 0u);
  before = counting_->calls;
  ASSERT_TRUE(c->Put("k1", v1.data(), v1.size()).ok());
  EXPECT_EQ(counting_->calls - before, 2);  // PutStart (with a reservation beside it), PutEnd
  EXPECT_EQ(ClientInternal::reservations(*c), 1u);
  before = counting_->calls;
  ASSERT_TRUE(c->Put("k2", v2.data(), v2.size()).ok());
  EXPECT_EQ(counting_->calls - before, 1);  // BatchPutCommit only
  EXPECT_EQ(ClientInternal::reservations(*c), 1u);
  EXPECT_EQ(master_->Stats().reservations, 1u);
  EXPECT_EQ(master_->Stats().pending_puts, 0u);
  EXPECT_EQ(*b_->Get("k0"), v0);
  EXPECT_EQ(*b_->Get("k1"), v1);
  EXPECT_EQ(*b_->Get("k2"), v2);
  // A batch: the one kept serves one key, the others start with reservations beside them; the
  // next batch of the same shape is one call.
  std::vector<std::string> keys = {"b1", "b2", "b3"};
  std::vector<std::string> vals = {Bytes(1000, 'x'), Bytes(1000, 'y'), Bytes(1000, 'z')};
  std::vector<std::vector<Slice>> slices;
  for (auto& v : vals) slices.push_back({{v.data(), v.size()}});
  for (auto& r : c->BatchPut(keys, slices)) ASSERT_TRUE(r.ok()) << r.ToString();
  EXPECT_EQ(ClientInternal::reservations(*c), 3u);
  keys = {"c1", "c2", "c3"};
  before = counting_->calls;
  for (auto& r : c->BatchPut(keys, slices)) ASSERT_TRUE(r.ok()) << r.ToString();
  EXPECT_EQ(counting_->calls - before, 1);
  for (size_t i = 0; i < keys.size(); ++i) {
    EXPECT_EQ(*b_->Get("b" + std::to_string(i + 1)), vals[i]);
    EXPECT_EQ(*b_->Get(keys[i]), vals[i]);
  }
  EXPECT_EQ(master_->Stats().reservations, 3u);
  // Other sizes and placements have reservations of their own; upserts use none.
  const std::string big = Bytes(3000, 'B');
  ASSERT_TRUE(c->Put("big0", big.data(), big.size()).ok());
  EXPECT_EQ(ClientInternal::reservations(*c), 3u);
  ASSERT_TRUE(c->Put("big", big.data(), big.size()).ok());
  EXPECT_EQ(ClientInternal::reservations(*c), 4u);
  ASSERT_TRUE(c->Upsert("big", {{const_cast<char*>(big.data()), big.size()}}).ok());
  EXPECT_EQ(ClientInternal::reservations(*c), 4u);
  EXPECT_EQ(*b_->Get("big"), big);
  ClientInternal::DropReservations(*c);
  EXPECT_EQ(master_->Stats().reservations, 0u);
}

// A key taken meanwhile refuses the Put as before (the same value's size: success) and the
// reservation serves the next; one gone (its segment unmounted, aged out) sends the value the old
// way; an older master that takes no Puts into reservations gets two calls per Put from then on.
TEST_F(ClientTest, APutIntoAReservationThatCannotBeUsedGoesTheOldWay) {
  counting_ = std::make_shared<CountingMaster>(master_);
  Client* c = NewClient("node-r", 0, true, 1 << 20);
  const std::string v = Bytes(500, 'v');
  ASSERT_TRUE(c->Put("k0", v.data(), v.size()).ok());
  ASSERT_TRUE(c->Put("k", v.data(), v.size()).ok());
  ASSERT_EQ(ClientInternal::reservations(*c), 1u);
  EXPECT_TRUE(c->Put("k", v.data(), v.size()).ok());  // exists with that size
  const std::string w = Bytes(600, 'w');
  ASSERT_TRUE(c->Put("w0", w.data(), w.size()).ok());
  ASSERT_TRUE(c->Put("w", w.data(), w.size()).ok());
  EXPECT_EQ(c->Put("w", v.data(), v.size()).code(), Code::kObjectAlreadyExists);
  EXPECT_EQ(ClientInternal::reservations(*c), 2u);
  EXPECT_EQ(*b_->Get("k"), v);

  // Aged: past half the time its write grants had (they last at most put_start_discard_timeout,
  // 30 s), it is revoked (with the next call that can carry it) and the Put starts as before, with
  // a fresh reservation beside it.
  clock_.Advance(16'000);
  ASSERT_TRUE(c->Put("k2", v.data(), v.size()).ok());
  EXPECT_EQ(*b_->Get("k2"), v);
  EXPECT_EQ(ClientInternal::reservations(*c), 1u);  // k2's new one (w's aged too, and went)
  EXPECT_EQ(master_->Stats().reservations, 1u);

  // Its holder goes (the node leaves): the Put into it fails at the master, and the value goes
  // again, elsewhere.
  ReplicateConfig on_a;
  on_a.preferred_segments = {"node-a"};
  ASSERT_TRUE(c->Put("a0", v.data(), v.size(), on_a).ok());
  ASSERT_TRUE(c->Put("a1", v.data(), v.size(), on_a).ok());  // a reservation on node-a beside it
  ASSERT_EQ(ClientInternal::reservations(*c), 2u);
  for (auto& cl : clients_) {
    if (cl.get() == a_) cl.reset();
  }
  a_ = nullptr;
  ASSERT_TRUE(c->Put("a2", v.data(), v.size(), on_a).ok());
  EXPECT_EQ(*b_->Get("a2"), v);
  EXPECT_EQ(master_->Stats().pending_puts, 0u);
  EXPECT_EQ(ClientInternal::reservations(*c), 1u);  // node-a's went; k2's shape stays
  ClientInternal::DropReservations(*c);

  // An older master: Puts still land, two calls each, and nothing is left reserved there.
  counting_->old = true;
  for (int i = 0; i < 3; ++i) {
    const std::string key = "old" + std::to_string(i);
    const int before = counting_->calls;
    ASSERT_TRUE(c->Put(key, v.data(), v.size()).ok()) << key;
    EXPECT_EQ(*b_->Get(key), v);
    if (i > 1) {  // the first Put finds a reservation beside it, the second finds out
      EXPECT_EQ(counting_->calls - before, 2) << key;
    }
  }
  EXPECT_EQ(ClientInternal::reservations(*c), 0u);
  EXPECT_EQ(master_->Stats().reservations, 0u);
  EXPECT_EQ(master_->Stats().pending_puts, 0u);
}

// Reservations count against the tenant's quota: a Put refused for it while the client holds
// some gives them up and goes once more.
TEST_F(ClientTest, APutRefusedForTheQuotaWhileReservationsHoldSomeOfItGetsIt) {
  ASSERT_TRUE(master_->SetTenantQuota("default", 12'000).ok());
  Client* c = NewClient("node-r", 0, true, 1 << 20);
  const std::string v = Bytes(2000, 'q');
  ASSERT_TRUE(c->Put("a0", v.data(), v.size()).ok());
  std::vector<std::vector<Slice>> two(2, {{const_cast<char*>(v.data()), v.size()}});
  for (auto& r : c->BatchPut({"b1", "b2"}, two)) ASSERT_TRUE(r.ok()) << r.ToString();
  ASSERT_EQ(ClientInternal::reservations(*c), 2u);  // 10000 of the 12000 bytes used or reserved
  const std::string x = Bytes(3000, 'x');
  ASSERT_TRUE(c->Put("x", x.data(), x.size()).ok());
  EXPECT_EQ(*b_->Get("x"), x);
  EXPECT_EQ(ClientInternal::reservations(*c), 0u);
  EXPECT_EQ(master_->Stats().reservations, 0u);
  // Over the quota with nothing reserved: refused as before.
  const std::string big = Bytes(5000, 'B');
  EXPECT_EQ(c->Put("big", big.data(), big.size()).code(), Code::kTenantQuotaExceeded);
}

TEST_F(ClientTest, FailedReplicaWriteRevokesThePut) {
  for (SegmentId s : ClientInternal::segments(*a_)) fault_->FailSegment(s);
  for (SegmentId s : ClientInternal::segments(*b_)) fault_->FailSegment(s);
  std::string v = Bytes(100, 'w');
  EXPECT_EQ(a_->Put("k", v.data(), v.size()).code(), Code::kTransferFail);
  EXPECT_FALSE(*a_->IsExist("k"));
  EXPECT_EQ(master_->Stats().allocated, master_->Stats().held);  // fenced while its write grants last
  EXPECT_EQ(master_->Stats().pending_puts, 0u);
}

// A put whose replica write fails (its node went away, and the master has not noticed yet) goes
// once more, on other segments; a batch does the same for its keys that failed.
TEST_F(ClientTest, AFailedReplicaWriteIsTriedOnceMoreElsewhere) {
  for (SegmentId s : ClientInternal::segments(*a_)) fault_->FailSegment(s);
  ReplicateConfig on_a;
  on_a.preferred_segments = {"node-a"};  // every first try lands on the failing node
  std::string v = Bytes(100, 'r');
  ASSERT_TRUE(b_->Put("k", v.data(), v.size(), on_a).ok());
  auto q = b_->Query("k");
  ASSERT_TRUE(q.ok());
  ASSERT_EQ(q->replicas.size(), 1u);
  EXPECT_EQ(q->replicas[0].segment, ClientInternal::segments(*b_)[0]);
  EXPECT_EQ(*b_->Get("k"), v);

  std::vector<std::string> keys = {"b1", "b2", "b3"};
  std::vector<std::string> vals = {Bytes(10, 'x'), Bytes(5000, 'y'), Bytes(70000, 'z')};
  std::vector<std::vector<Slice>> slices;
  for (auto& s : vals) slices.push_back({{s.data(), s.size()}});
  auto put = b_->BatchPut(keys, slices, on_a);
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_TRUE(put[i].ok()) << keys[i] << ": " << put[i].ToString();
    EXPECT_EQ(b_->Query(keys[i])->replicas[0].segment, ClientInternal::segments(*b_)[0]);
    EXPECT_EQ(*b_->Get(keys[i]), vals[i]);
  }
  EXPECT_EQ(master_->Stats().pending_puts, 0u);
}

TEST_F(ClientTest, UnregisteredMemoryIsStagedWhenTheTransportNeedsRegistration) {
  Build(/*transport_needs_registration=*/true);
  std::string v = Bytes(200000, 's');  // larger than the 64 KiB staging buffer: moved in pieces
  ASSERT_TRUE(a_->Put("k", v.data(), v.size()).ok());
  for (void* p : fault_->seen_local_buffers()) {
    EXPECT_FALSE(p >= v.data() && p < v.data() + v.size()) << "user memory went to the transport";
  }
  EXPECT_EQ(*b_->Get("k"), v);
  // A registered buffer is used as it is.
  std::vector<char> reg(4096, 'q');
  ASSERT_TRUE(a_->RegisterBuffer(reg.data(), reg.size()).ok());
  ASSERT_TRUE(a_->Put("r", reg.data(), reg.size()).ok());
  auto seen = fault_->seen_local_buffers();
  EXPECT_EQ(seen.back(), reg.data());
  EXPECT_TRUE(a_->UnregisterBuffer(reg.data()).ok());
  EXPECT_EQ(a_->UnregisterBuffer(reg.data()).code(), Code::kInvalidParams);
}

TEST_F(ClientTest, BatchCallsAnswerPerKey) {
  std::string v1 = Bytes(100, '1'), v2 = Bytes(200, '2');
  auto put = a_->BatchPut({"b1", "", "b2", "b3"},
                          {{{v1.data(), v1.size()}}, {{v1.data(), v1.size()}}, {{v2.data(), v2.size()}}, {}});
  EXPECT_TRUE(put[0].ok());
  EXPECT_EQ(put[1].code(), Code::kInvalidKey);
  EXPECT_TRUE(put[2].ok());
  EXPECT_EQ(put[3].code(), Code::kInvalidParams);  // empty value
  auto exist = b_->BatchIsExist({"b1", "b2", "b3"});
  EXPECT_TRUE(*exist[0]);
  EXPECT_TRUE(*exist[1]);
  EXPECT_FALSE(*exist[2]);
  std::string o1(100, '\0'), o2(100, '\0'), o3(100, '\0');
  auto got =
      b_->BatchGet({"b1", "b2", "b3"}, {{{o1.data(), o1.size()}}, {{o2.data(), o2.size()}}, {{o3.data(), o3.size()}}});
  EXPECT_EQ(*got[0], 100u);
  EXPECT_EQ(o1, v1);
  EXPECT_EQ(got[1].code(), Code::kBufferOverflow);
  EXPECT_EQ(got[2].code(), Code::kObjectNotFound);
  auto strings = b_->BatchGet(std::vector<std::string>{"b1", "b3", "b2"});
  EXPECT_EQ(*strings[0], v1);
  EXPECT_EQ(strings[1].code(), Code::kObjectNotFound);
  EXPECT_EQ(*strings[2], v2);
  clock_.AdvanceSec(11);
  auto rm = a_->BatchRemove({"b1", "b3"});
  EXPECT_TRUE(rm[0].ok());
  EXPECT_EQ(rm[1].code(), Code::kObjectNotFound);
}

TEST_F(ClientTest, RemoveByRegexAndRemoveAll) {
  std::string v = Bytes(10, 'v');
  for (const char* k : {"m@1", "m@2", "x"}) ASSERT_TRUE(a_->Put(k, v.data(), v.size()).ok());
  EXPECT_EQ(*b_->RemoveByRegex("^m@"), 2u);
  EXPECT_EQ(*b_->RemoveAll(), 1u);
  EXPECT_EQ(master_->Stats().keys, 0u);
}

TEST_F(ClientTest, PureCallerCanPutAndGet) {
  Client* caller = NewClient("caller", 0);
  EXPECT_TRUE(ClientInternal::segments(*caller).empty());
  std::string v = Bytes(300, 'p');
  ASSERT_TRUE(caller->Put("k", v.data(), v.size()).ok());
  EXPECT_EQ(*caller->Get("k"), v);
}

TEST_F(ClientTest, DestroyedClientTakesItsReplicasAlong) {
  Client* c = NewClient("node-c", 1 << 20);
  std::string v = Bytes(100, 'd');
  ReplicateConfig on_c;
  on_c.preferred_segments = {"node-c"};
  ASSERT_TRUE(c->Put("k", v.data(), v.size(), on_c).ok());
  EXPECT_EQ(b_->Query("k")->replicas[0].segment, ClientInternal::segments(*c)[0]);
  clients_.pop_back();  // destroys c: unmounts its segment
  EXPECT_FALSE(*b_->IsExist("k"));
  EXPECT_EQ(master_->Stats().segments, 2u);
}

// Re-replication end to end in one process: a node leaves, the master hands a copy task to a
// third node, whose repairer copies the bytes from the survivor into its own segment; then the
// survivor leaves too and the value is still read whole.
TEST_F(ClientTest, ALostReplicaIsCopiedBackAndOutlivesTheNextLoss) {
  Client* c = NewClient("node-c", 1 << 20, /*checksum=*/true);
  const std::string v = Bytes(70000, 'r');
  ReplicateConfig rc;
  rc.replica_num = 2;
  rc.preferred_segments = {"node-a", "node-b"};
  ASSERT_TRUE(c->Put("k", v.data(), v.size(), rc).ok());
  clients_.erase(clients_.begin());  // node-a leaves: its segment and its replica go
  a_ = nullptr;
  EXPECT_EQ(master_->Stats().repair_at_risk, 1u);
  EXPECT_EQ(master_->RepairOnce(), 1u);
  ASSERT_TRUE(ClientInternal::Heartbeat(*c).ok());  // told a copy waits
  EXPECT_EQ(ClientInternal::RunRepairOnce(*c), 1u);
  EXPECT_EQ(c->Stats().repairs, 1u);
  EXPECT_EQ(c->Stats().repair_bytes, v.size());
  EXPECT_EQ(master_->Stats().repaired, 1u);
  EXPECT_EQ(c->Query("k")->replicas.size(), 2u);
  clients_.erase(clients_.begin());  // node-b leaves too
  b_ = nullptr;
  auto got = c->Get("k");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, v);
}

// A read in flight across heartbeats: each names the read's pin, so the master keeps the bytes of
// an object removed meanwhile until the read ends (a pin left unnamed would be ended; see
// MasterServiceTest.AReadPinHoldsWhileItsReaderNamesItAndEndsTwoHeartbeatsAfter).
TEST_F(ClientTest, HeartbeatsNameTheReadPinsHeldAndTheBytesStayUntilTheReadEnds) {
  std::string v = Bytes(4000, 'p');
  ASSERT_TRUE(a_->Put("k", v.data(), v.size()).ok());
  const uint64_t stored = master_->Stats().allocated;
  uint64_t during = 0;
  size_t named = 0;
  fault_->OnSubmit([&] {
    fault_->OnSubmit(nullptr);
    ASSERT_TRUE(a_->Remove("k", true).ok());
    for (int i = 0; i < 4; ++i) {
      ASSERT_TRUE(ClientInternal::Heartbeat(*a_).ok());
      ASSERT_TRUE(ClientInternal::Heartbeat(*b_).ok());
      master_->RunBackgroundOnce();
    }
    during = master_->Stats().allocated;
    named = ClientInternal::held_pins(*b_);
  });
  std::string got(v.size(), '\0');
  auto n = b_->Get("k", got.data(), got.size());
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(got, v);
  EXPECT_EQ(named, 1u);
  EXPECT_EQ(during, stored);  // the removed object's bytes stayed for the read
  EXPECT_EQ(ClientInternal::held_pins(*b_), 0u);
  EXPECT_EQ(master_->Stats().allocated, 0u);  // freed by its ReadEnd
  EXPECT_EQ(master_->Stats().stale_pins_released, 0u);
}

// GetView (Python's get_buffer): the bytes where the pool holds them, no copy, the object pinned
// (its bytes stay through a forced Remove) until the view is let go.
TEST_F(ClientTest, AViewShowsThePoolsBytesInPlaceAndPinsThemUntilLetGo) {
  std::string v = Bytes(10000, 'v');
  ASSERT_TRUE(a_->Put("k", v.data(), v.size()).ok());
  const uint64_t stored = master_->Stats().allocated;
  {
    auto view = b_->GetView("k");
    ASSERT_TRUE(view.ok()) << view.status().ToString();
    EXPECT_TRUE(view->in_place);
    const ReplicaDesc r = b_->Query("k")->replicas.at(0);
    EXPECT_EQ(view->data, local_->Find(r.segment).base + r.offset);  // the segment's own bytes
    EXPECT_EQ(ClientInternal::held_pins(*b_), 1u);
    ASSERT_TRUE(a_->Remove("k", true).ok());
    master_->RunBackgroundOnce();
    EXPECT_EQ(master_->Stats().allocated, stored);  // kept for the view
    auto copy = *view;                              // a copy of the view holds them too
    view = Status(Code::kInternal, "let go");
    EXPECT_EQ(std::string(static_cast<const char*>(copy.data), copy.size), v);
    EXPECT_EQ(ClientInternal::held_pins(*b_), 1u);
  }
  EXPECT_EQ(ClientInternal::held_pins(*b_), 0u);
  EXPECT_EQ(master_->Stats().allocated, 0u);  // freed once the last view went
  EXPECT_EQ(b_->GetView("k").code(), Code::kObjectNotFound);
}

TEST_F(ClientTest, ABatchOfViewsAnswersPerKeyAndCopiesWhereAskedTo) {
  const std::string x = Bytes(3000, 'x'), y = Bytes(5000, 'y');
  ASSERT_TRUE(a_->Put("x", x.data(), x.size()).ok());
  ASSERT_TRUE(a_->Put("y", y.data(), y.size()).ok());
  auto views = b_->BatchGetView({"x", "missing", "y"});
  ASSERT_EQ(views.size(), 3u);
  ASSERT_TRUE(views[0].ok() && views[2].ok());
  EXPECT_TRUE(views[0]->in_place && views[2]->in_place);
  EXPECT_EQ(std::string(static_cast<const char*>(views[2]->data), views[2]->size), y);
  EXPECT_EQ(views[1].code(), Code::kObjectNotFound);
  EXPECT_EQ(ClientInternal::held_pins(*b_), 2u);
  views.clear();
  EXPECT_EQ(ClientInternal::held_pins(*b_), 0u);
  // A client that asks for copies gets its own bytes, and holds no pin for them.
  ClientConfig c;
  c.local_hostname = "copier";
  c.get_buffer_in_place = false;
  auto copier = ClientInternal::Create(c, Parts());
  ASSERT_TRUE(copier.ok());
  auto copied = (*copier)->BatchGetView({"x", "y"});
  ASSERT_TRUE(copied[0].ok() && copied[1].ok());
  EXPECT_FALSE(copied[0]->in_place);
  EXPECT_EQ(std::string(static_cast<const char*>(copied[0]->data), copied[0]->size), x);
  EXPECT_EQ(std::string(static_cast<const char*>(copied[1]->data), copied[1]->size), y);
  EXPECT_EQ(ClientInternal::held_pins(**copier), 0u);
  // A view that outlives its client keeps its memory, and ends no pin through it.
  auto late = (*copier)->GetView("x");
  copier->reset();
  ASSERT_TRUE(late.ok());
  EXPECT_EQ(std::string(static_cast<const char*>(late->data), late->size), x);
}

TEST_F(ClientTest, AViewOfADamagedReplicaShowsAnotherOne) {
  const std::string v = Bytes(8192, 'd');
  ReplicateConfig two;
  two.replica_num = 2;
  two.preferred_segments = {"node-a", "node-b"};
  ASSERT_TRUE(a_->Put("k", v.data(), v.size(), two).ok());
  auto replicas = b_->Query("k")->replicas;
  ASSERT_EQ(replicas.size(), 2u);
  // Damage the replica that b would look at first (its own segment's), in the pool's memory.
  const SegmentId mine = ClientInternal::segments(*b_)[0];
  const ReplicaDesc damaged = replicas[0].segment == mine ? replicas[0] : replicas[1];
  const ReplicaDesc good = replicas[0].segment == mine ? replicas[1] : replicas[0];
  uint8_t* byte = local_->Find(damaged.segment).base + damaged.offset + 100;
  *byte ^= 0xff;
  auto view = b_->GetView("k");
  ASSERT_TRUE(view.ok());
  EXPECT_TRUE(view->in_place);
  EXPECT_EQ(view->data, local_->Find(good.segment).base + good.offset);
  EXPECT_EQ(std::string(static_cast<const char*>(view->data), view->size), v);
  EXPECT_EQ(b_->Stats().replica_read_failures, 1u);  // the damaged one was looked at, and refused
  *byte ^= 0xff;
}

TEST_F(ClientTest, ClientDeclaredDeadRemountsOnItsNextHeartbeat) {
  clock_.AdvanceSec(11);
  ASSERT_TRUE(ClientInternal::Heartbeat(*b_).ok());
  master_->LivenessOnce();  // a_ was silent: its segment is gone
  EXPECT_EQ(master_->Stats().segments, 1u);
  EXPECT_EQ(a_->Stats().remounts, 0u);
  ASSERT_TRUE(ClientInternal::Heartbeat(*a_).ok());  // told to re-mount, and does
  EXPECT_EQ(master_->Stats().segments, 2u);
  ClientStats sa = a_->Stats(), sb = b_->Stats();
  EXPECT_EQ(sa.remounts, 1u);
  EXPECT_EQ(sb.remounts, 0u);
  EXPECT_TRUE(sa.master_reachable);
  EXPECT_TRUE(sa.segments_mounted);
  EXPECT_EQ(sa.heartbeat_failures, 0u);
  EXPECT_EQ(sa.segments, 1u);
  EXPECT_EQ(sa.segment_bytes, 1u << 20);
  EXPECT_EQ(sa.transfer.reads, 0u);  // in one process: no transfer server
  EXPECT_EQ(sa.disk_objects, 0u);    // no SSD tier
  std::string v = Bytes(100, 'h');
  ReplicateConfig on_a;
  on_a.preferred_segments = {"node-a"};
  ASSERT_TRUE(b_->Put("k", v.data(), v.size(), on_a).ok());
  EXPECT_EQ(b_->Query("k")->replicas[0].segment, ClientInternal::segments(*a_)[0]);
}

TEST_F(ClientTest, ConnectRunsAnEmbeddedMaster) {
  EnableEmbeddedMaster();
  ClientConfig c;
  c.master_server_addr = "embedded:client-test";
  c.global_segment_size = 4 << 20;
  c.segment_chunk_size = 1 << 20;
  auto x = Client::Connect(c);
  ASSERT_TRUE(x.ok()) << x.status().ToString();
  EXPECT_EQ(ClientInternal::segments(**x).size(), 4u);
  auto y = Client::Connect(c);
  ASSERT_TRUE(y.ok());
  std::string v = Bytes(5000, 'e');
  ASSERT_TRUE((*x)->Put("k", v.data(), v.size()).ok());
  EXPECT_EQ(*(*y)->Get("k"), v);
  c.master_server_addr = "no-port-here";
  EXPECT_EQ(Client::Connect(c).code(), Code::kInvalidParams);
}

// A client of 1 MiB on a mock master, its jobs on `scheduler`.
Result<std::unique_ptr<Client>> ClientOnMock(std::shared_ptr<testing::MockMaster> master, ManualScheduler& scheduler,
                                             const std::string& name) {
  ClientConfig c;
  c.local_hostname = name;
  c.global_segment_size = 1 << 20;
  c.local_buffer_size = 0;
  ClientParts parts;
  parts.master = std::move(master);
  parts.local_segments = std::make_shared<LocalSegmentRegistry>();
  parts.engine = std::make_shared<TransferEngine>();
  parts.scheduler = &scheduler;
  return ClientInternal::Create(c, std::move(parts));
}

// The heartbeat starts as soon as the master knows the client, not once its segments are mounted:
// mapping and faulting in a large segment can take longer than the master's client_ttl, and a
// client silent that long is declared dead. Here mounting takes three seconds of the scheduler's
// clock, and the heartbeat beats in them.
TEST(ClientHeartbeatTest, BeatsWhileTheSegmentIsMounted) {
  auto master = std::make_shared<::testing::NiceMock<testing::MockMaster>>();
  ManualClock clock;
  ManualScheduler scheduler(clock);
  int pings = 0, pings_while_mounting = 0;
  ON_CALL(*master, RegisterClient(::testing::_)).WillByDefault(::testing::Return(CallContext{}));
  ON_CALL(*master, Ping(::testing::_, ::testing::_))
      .WillByDefault([&](const CallContext&, const PingState&) -> Result<PingResponse> {
        ++pings;
        return PingResponse{};
      });
  ON_CALL(*master, MountSegments(::testing::_, ::testing::_))
      .WillByDefault([&](const CallContext&, const std::vector<SegmentMount>&) {
        scheduler.Advance(3000);  // a slow mount
        pings_while_mounting = pings;
        return Status::OK();
      });
  auto client = ClientOnMock(master, scheduler, "slow");
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  EXPECT_EQ(pings_while_mounting, 3);
  EXPECT_EQ(ClientInternal::segments(**client).size(), 1u);
  EXPECT_EQ(scheduler.jobs(), 2u);  // the heartbeat, and the repairer (it has memory to copy into)
  scheduler.Advance(1000);
  EXPECT_EQ(pings, 4);
  client->reset();
  EXPECT_EQ(scheduler.jobs(), 0u);  // stopped with its client
}

// The master lost the client's segments (it stalled past client_ttl); the re-mount it asks for
// fails once (its answer lost). Each heartbeat states the segments the client holds, so the master
// asks again, and the client says it is not mounted until a re-mount succeeds.
TEST(ClientHeartbeatTest, AFailedRemountIsTriedAgainUntilTheMasterServesTheSegments) {
  auto master = std::make_shared<::testing::NiceMock<testing::MockMaster>>();
  ManualClock clock;
  ManualScheduler scheduler(clock);
  uint32_t served = 0;
  int mounts = 0;
  ON_CALL(*master, RegisterClient(::testing::_)).WillByDefault(::testing::Return(CallContext{}));
  ON_CALL(*master, Ping(::testing::_, ::testing::_))
      .WillByDefault([&](const CallContext&, const PingState& state) -> Result<PingResponse> {
        return PingResponse{state.mounted_segments > served};
      });
  ON_CALL(*master, MountSegments(::testing::_, ::testing::_))
      .WillByDefault([&](const CallContext&, const std::vector<SegmentMount>& segs) {
        if (++mounts == 2) return Status(Code::kRpcTimeout, "the answer was lost");
        served = static_cast<uint32_t>(segs.size());
        return Status::OK();
      });
  auto client = ClientOnMock(master, scheduler, "n");
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  scheduler.Advance(1000);
  EXPECT_TRUE((*client)->Stats().segments_mounted);
  served = 0;               // the master declared us dead
  scheduler.Advance(1000);  // told to re-mount; the mount fails
  EXPECT_EQ(mounts, 2);
  EXPECT_FALSE((*client)->Stats().segments_mounted);
  scheduler.Advance(1000);  // told again
  EXPECT_EQ(mounts, 3);
  EXPECT_TRUE((*client)->Stats().segments_mounted);
  EXPECT_EQ((*client)->Stats().remounts, 1u);
  scheduler.Advance(1000);
  EXPECT_EQ(mounts, 3);  // converged: nothing more asked
}

// A master (or whatever answers as one) that declares a replica larger than its object, or an
// object larger than this process can hold: an error for that read, no byte past the buffer.
TEST(ClientDeclaredSizesTest, AReplicaLargerThanItsObjectIsRefusedBeforeAByteMoves) {
  auto master = std::make_shared<::testing::NiceMock<testing::MockMaster>>();
  ManualClock clock;
  ManualScheduler scheduler(clock);
  ON_CALL(*master, RegisterClient(::testing::_)).WillByDefault(::testing::Return(CallContext{}));
  SegmentId own = 0;
  ON_CALL(*master, MountSegments(::testing::_, ::testing::_))
      .WillByDefault([&](const CallContext&, const std::vector<SegmentMount>& segs) {
        own = segs[0].id;
        return Status::OK();
      });
  uint64_t object_size = 8, replica_size = 4096;
  ON_CALL(*master, BatchGetReplicaList(::testing::_, ::testing::_, ::testing::_))
      .WillByDefault([&](const CallContext&, const MasterApi::Keys& keys, bool) {
        ObjectInfo info;
        info.size = object_size;
        info.replicas.push_back(GrantedReplica{ReplicaKind::kMemory, ReplicaStatus::kComplete, own, 0, replica_size});
        return std::vector<Result<ObjectInfo>>(keys.size(), info);
      });
  ON_CALL(*master, BatchReadEnd(::testing::_, ::testing::_, ::testing::_))
      .WillByDefault([](const CallContext&, const MasterApi::Keys& keys, const std::vector<uint64_t>&) {
        return std::vector<Status>(keys.size());
      });
  auto client = ClientOnMock(master, scheduler, "reader");
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  std::vector<char> buf(64, 'x');
  auto r = (*client)->Get("k", buf.data(), 8);
  EXPECT_EQ(r.code(), Code::kInvalidReplica) << r.status().ToString();
  EXPECT_EQ(std::count(buf.begin(), buf.end(), 'x'), 64);
  auto batch = (*client)->BatchGet({"k"}, {{Slice{buf.data(), 8}}});
  ASSERT_EQ(batch.size(), 1u);
  EXPECT_EQ(batch[0].code(), Code::kInvalidReplica);
  EXPECT_EQ(std::count(buf.begin(), buf.end(), 'x'), 64);
  object_size = replica_size = uint64_t{1} << 62;  // more than any process holds
  auto whole = (*client)->Get("k");
  EXPECT_FALSE(whole.ok());
}

}  // namespace
}  // namespace yb
