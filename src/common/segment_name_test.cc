#include "common/segment_name.h"

#include <gtest/gtest.h>

namespace yb {
namespace {

TEST(SegmentNameTest, HostsPortsAndMatches) {
  EXPECT_EQ(HostOf("node-a:15001"), "node-a");
  EXPECT_EQ(HostOf("node-a"), "node-a");
  EXPECT_EQ(HostOf("[::1]:50052"), "::1");
  EXPECT_EQ(HostOf("::1"), "::1");  // a bare IPv6 address has no port
  EXPECT_TRUE(HasPort("127.0.0.1:50052"));
  EXPECT_TRUE(HasPort("[::1]:7"));
  EXPECT_FALSE(HasPort("node-a"));
  EXPECT_FALSE(HasPort("node-a:"));
  EXPECT_FALSE(HasPort("::1"));
  EXPECT_TRUE(SegmentNameMatches("node-a:15001", "node-a:15001"));
  EXPECT_TRUE(SegmentNameMatches("node-a:15001", "node-a"));
  EXPECT_FALSE(SegmentNameMatches("node-a:15001", "node-b"));
  EXPECT_FALSE(SegmentNameMatches("node-ab:1", "node-a"));
}

}  // namespace
}  // namespace yb
