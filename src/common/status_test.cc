#include "yuebing/status.h"

#include <gtest/gtest.h>

#include <set>

#include "common/status_wire.h"

namespace yb {
namespace {

TEST(StatusTest, EveryCodeRoundTripsThroughMooncakeNumbers) {
  std::set<int32_t> seen;
  for (int i = 0; i < kNumCodes; ++i) {
    auto code = static_cast<Code>(i);
    int32_t mc = ToMooncakeCode(code);
    EXPECT_TRUE(seen.insert(mc).second) << "duplicate Mooncake number " << mc;
    EXPECT_EQ(FromMooncakeCode(mc), code) << CodeName(code);
    EXPECT_FALSE(CodeName(code).empty());
  }
}

TEST(StatusTest, MooncakeNumbersMatchTheirPublishedValues) {
  EXPECT_EQ(ToMooncakeCode(Code::kOk), 0);
  EXPECT_EQ(ToMooncakeCode(Code::kInternal), -1);
  EXPECT_EQ(ToMooncakeCode(Code::kSegmentNotFound), -101);
  EXPECT_EQ(ToMooncakeCode(Code::kNoAvailableHandle), -200);
  EXPECT_EQ(ToMooncakeCode(Code::kInvalidKey), -400);
  EXPECT_EQ(ToMooncakeCode(Code::kInvalidParams), -600);
  EXPECT_EQ(ToMooncakeCode(Code::kInvalidWrite), -700);
  EXPECT_EQ(ToMooncakeCode(Code::kInvalidRead), -701);
  EXPECT_EQ(ToMooncakeCode(Code::kReplicaNotReady), -703);
  EXPECT_EQ(ToMooncakeCode(Code::kObjectNotFound), -704);
  EXPECT_EQ(ToMooncakeCode(Code::kObjectAlreadyExists), -705);
  EXPECT_EQ(ToMooncakeCode(Code::kObjectHasLease), -706);
  EXPECT_EQ(ToMooncakeCode(Code::kLeaseExpired), -707);
  EXPECT_EQ(ToMooncakeCode(Code::kTransferFail), -800);
  EXPECT_EQ(ToMooncakeCode(Code::kChecksumMismatch), -801);
  EXPECT_EQ(ToMooncakeCode(Code::kRpcFail), -900);
  EXPECT_EQ(ToMooncakeCode(Code::kRpcTimeout), -901);
  EXPECT_EQ(ToMooncakeCode(Code::kTenantQuotaExceeded), -1700);
}

TEST(StatusTest, UnknownMooncakeNumberIsInternal) { EXPECT_EQ(FromMooncakeCode(-123456), Code::kInternal); }

TEST(StatusTest, EveryCodeRoundTripsThroughTheWire) {
  for (int i = 0; i < kNumCodes; ++i) {
    auto code = static_cast<Code>(i);
    Status st = DecodeStatus(EncodeCode(code), "m");
    EXPECT_EQ(st.code(), code) << CodeName(code);
  }
  Status unknown = DecodeStatus(kNumCodes + 7, "from a newer peer");
  EXPECT_EQ(unknown.code(), Code::kInternal);
  EXPECT_NE(unknown.message().find(std::to_string(kNumCodes + 7)), std::string::npos);
}

TEST(StatusTest, ClassifiersSayWhatACallerShouldDo) {
  EXPECT_TRUE(IsUnavailable(Code::kRpcFail));
  EXPECT_TRUE(IsUnavailable(Code::kRpcTimeout));
  EXPECT_FALSE(IsUnavailable(Code::kNoAvailableHandle));
  for (Code c : {Code::kRpcFail, Code::kRpcTimeout, Code::kNoAvailableHandle, Code::kReplicaNotReady,
                 Code::kObjectHasLease, Code::kTransferFail}) {
    EXPECT_TRUE(IsRetryable(c)) << CodeName(c);
  }
  for (Code c : {Code::kOk, Code::kInvalidKey, Code::kInvalidParams, Code::kObjectNotFound, Code::kObjectAlreadyExists,
                 Code::kBufferOverflow, Code::kChecksumMismatch}) {
    EXPECT_FALSE(IsRetryable(c)) << CodeName(c);
    EXPECT_FALSE(IsUnavailable(c)) << CodeName(c);
  }
  EXPECT_TRUE(Status(Code::kRpcTimeout, "x").IsUnavailable());
}

TEST(StatusTest, ResultCarriesValueOrStatus) {
  Result<int> good(7);
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, 7);
  Result<int> bad(Code::kObjectNotFound, "key 'k'");
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.code(), Code::kObjectNotFound);
  EXPECT_EQ(bad.status().ToString(), "OBJECT_NOT_FOUND: key 'k'");
}

}  // namespace
}  // namespace yb
