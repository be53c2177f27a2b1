#include "common/grant.h"

#include <gtest/gtest.h>

namespace yb {
namespace {

constexpr int64_t kNow = 1'800'000'000'000;

TEST(GrantTest, AGrantCoversItsRangeAccessAndLifetimeOnly) {
  const std::string key = NewGrantKey();
  ASSERT_EQ(key.size(), kGrantKeySize);
  Grant g = MintGrant(key, 7, GrantAccess::kWrite, 4096, 1000, kNow + 500);
  EXPECT_TRUE(CheckGrant(key, 7, g, GrantAccess::kWrite, 4096, 1000, kNow).ok());
  EXPECT_TRUE(CheckGrant(key, 7, g, GrantAccess::kWrite, 4596, 500, kNow + 500).ok());  // a slice, at the last ms
  auto refused = [&](const Status& st) { return st.code() == Code::kIllegalClient; };
  EXPECT_TRUE(refused(CheckGrant(key, 7, g, GrantAccess::kRead, 4096, 1000, kNow)));       // another access
  EXPECT_TRUE(refused(CheckGrant(key, 8, g, GrantAccess::kWrite, 4096, 1000, kNow)));      // another segment
  EXPECT_TRUE(refused(CheckGrant(key, 7, g, GrantAccess::kWrite, 4095, 10, kNow)));        // starts before
  EXPECT_TRUE(refused(CheckGrant(key, 7, g, GrantAccess::kWrite, 5000, 97, kNow)));        // ends after
  EXPECT_TRUE(refused(CheckGrant(key, 7, g, GrantAccess::kWrite, UINT64_MAX, 2, kNow)));   // wraps
  EXPECT_TRUE(refused(CheckGrant(key, 7, g, GrantAccess::kWrite, 4096, 1000, kNow + 501)));  // expired
  EXPECT_TRUE(refused(CheckGrant(NewGrantKey(), 7, g, GrantAccess::kWrite, 4096, 1000, kNow)));  // another key
  EXPECT_TRUE(refused(CheckGrant(key, 7, Grant{}, GrantAccess::kWrite, 4096, 1000, kNow)));      // none
}

TEST(GrantTest, AnyChangedFieldOrByteOfTheMacIsAForgery) {
  const std::string key = NewGrantKey();
  const Grant g = MintGrant(key, 3, GrantAccess::kRead, 0, 1 << 20, kNow + 1000);
  Grant wider = g;
  wider.length = 2 << 20;
  EXPECT_EQ(CheckGrant(key, 3, wider, GrantAccess::kRead, 0, 2 << 20, kNow).code(), Code::kIllegalClient);
  Grant longer = g;
  longer.expires_ms += 1;
  EXPECT_EQ(CheckGrant(key, 3, longer, GrantAccess::kRead, 0, 1, kNow).code(), Code::kIllegalClient);
  for (size_t i = 0; i < g.mac.size(); ++i) {
    Grant bad = g;
    bad.mac[i] ^= 1;
    EXPECT_EQ(CheckGrant(key, 3, bad, GrantAccess::kRead, 0, 1, kNow).code(), Code::kIllegalClient) << i;
  }
}

TEST(GrantTest, AnObjectReadGrantNamesItsKey) {
  const std::string key = NewGrantKey();
  Grant g = MintGrant(key, 3, GrantAccess::kReadObject, 0, 100, kNow + 1000, "tenant/key-a");
  EXPECT_TRUE(CheckGrant(key, 3, g, GrantAccess::kReadObject, 0, 100, kNow, "tenant/key-a").ok());
  EXPECT_FALSE(CheckGrant(key, 3, g, GrantAccess::kReadObject, 0, 100, kNow, "tenant/key-b").ok());
}

TEST(GrantTest, TheWireFormRoundTripsAndRejectsJunk) {
  const std::string key = NewGrantKey();
  Grant g = MintGrant(key, 9, GrantAccess::kRead, 123, 456, kNow);
  std::string wire = EncodeGrant(g);
  ASSERT_EQ(wire.size(), kGrantWireSize);
  Grant back;
  ASSERT_TRUE(DecodeGrant(reinterpret_cast<const uint8_t*>(wire.data()), wire.size(), &back));
  EXPECT_TRUE(CheckGrant(key, 9, back, GrantAccess::kRead, 123, 456, kNow).ok());
  EXPECT_FALSE(DecodeGrant(reinterpret_cast<const uint8_t*>(wire.data()), wire.size() - 1, &back));
  wire[0] = 9;
  EXPECT_FALSE(DecodeGrant(reinterpret_cast<const uint8_t*>(wire.data()), wire.size(), &back));
  EXPECT_EQ(MintGrant("short", 9, GrantAccess::kRead, 0, 1, kNow).access, GrantAccess::kNone);
}

}  // namespace
}  // namespace yb
