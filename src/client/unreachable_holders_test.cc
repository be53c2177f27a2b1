#include "client/unreachable_holders.h"

#include <gtest/gtest.h>

#include <set>

namespace yb {
namespace {

// A transport that reaches segments 1-9 and finds those in `down` unreachable; counts probes.
class FakeTransport final : public Transport {
 public:
  bool Reaches(SegmentId s) const override { return s >= 1 && s <= 9; }
  std::vector<Status> Submit(const std::vector<TransferRequest>& batch) override {
    return std::vector<Status>(batch.size());
  }
  bool Unreachable(SegmentId s) const override { return down.count(s) > 0; }
  void Probe(SegmentId s) override { probes.insert(s); }
  std::set<SegmentId> down, probes;
};

TEST(UnreachableHoldersTest, ReportsFailedHoldersWhileTheTransportFindsThemUnreachableAndProbesThem) {
  auto transport = std::make_shared<FakeTransport>();
  TransferEngine engine;
  engine.AddTransport(transport);
  UnreachableHolders holders;
  transport->down = {3, 4};
  holders.Note(3, Status(Code::kTransferFail, "connection timed out"));
  holders.Note(4, Status(Code::kChecksumMismatch, "bad bytes"));  // not about reaching it
  holders.Note(5, Status::OK());
  holders.Note(6, Status(Code::kTransferFail, "refused"));  // failed, but reachable again by now
  PingState state;
  holders.State(engine, state);
  EXPECT_EQ(state.unreachable, std::vector<SegmentId>{3});
  EXPECT_EQ(transport->probes, std::set<SegmentId>{3});
  EXPECT_EQ(holders.size(), 1u);  // 6 is forgotten
  holders.State(engine, state);  // still down: reported again
  EXPECT_EQ(state.unreachable, std::vector<SegmentId>{3});
  transport->down.clear();  // a probe reached it
  holders.State(engine, state);
  EXPECT_TRUE(state.unreachable.empty());
  EXPECT_EQ(holders.size(), 0u);
}

TEST(UnreachableHoldersTest, AtMostTheReportLimitIsKept) {
  auto transport = std::make_shared<FakeTransport>();
  TransferEngine engine;
  engine.AddTransport(transport);
  UnreachableHolders holders;
  for (SegmentId s = 1; s <= 1000; ++s) holders.Note(s, Status(Code::kTransferFail, "x"));
  EXPECT_EQ(holders.size(), kMaxReportedUnreachable);
}

}  // namespace
}  // namespace yb
