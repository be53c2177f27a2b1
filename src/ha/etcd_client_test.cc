#include "ha/etcd_client.h"

#include <gtest/gtest.h>

namespace yb::ha {
namespace {

TEST(EtcdClientTest, Base64RoundTripsEveryLength) {
  EXPECT_EQ(Base64Encode(""), "");
  EXPECT_EQ(Base64Encode("f"), "Zg==");
  EXPECT_EQ(Base64Encode("fo"), "Zm8=");
  EXPECT_EQ(Base64Encode("foo"), "Zm9v");
  EXPECT_EQ(Base64Encode("mooncake-store/c/master_view"), "bW9vbmNha2Utc3RvcmUvYy9tYXN0ZXJfdmlldw==");
  std::string all;
  for (int i = 0; i < 256; ++i) all.push_back(static_cast<char>(i));
  for (size_t n = 0; n <= all.size(); n += 7) {
    auto back = Base64Decode(Base64Encode(all.substr(0, n)));
    ASSERT_TRUE(back.has_value()) << n;
    EXPECT_EQ(*back, all.substr(0, n));
  }
  EXPECT_FALSE(Base64Decode("abc").has_value());   // not a multiple of 4
  EXPECT_FALSE(Base64Decode("ab=c").has_value());  // padding inside
  EXPECT_FALSE(Base64Decode("a!bc").has_value());  // not in the alphabet
}

TEST(EtcdClientTest, EndpointsInMooncakesSpellings) {
  auto one = EtcdClient::ParseEndpoints("127.0.0.1:2379");
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->size(), 1u);
  auto many = EtcdClient::ParseEndpoints("etcd://10.0.0.1:2379;10.0.0.2:2379;http://h:1");
  ASSERT_TRUE(many.ok());
  ASSERT_EQ(many->size(), 3u);
  EXPECT_EQ((*many)[1].first, "10.0.0.2");
  EXPECT_EQ((*many)[2].second, 1);
  EXPECT_FALSE(EtcdClient::ParseEndpoints("").ok());
  EXPECT_FALSE(EtcdClient::ParseEndpoints("nohost").ok());
}

// Nothing listens on the endpoint: a clear error naming it, within the timeout.
TEST(EtcdClientTest, AnEtcdThatDoesNotAnswerIsAnEtcdError) {
  EtcdClient c({{{"127.0.0.1", 1}}, std::chrono::milliseconds(300)});
  auto g = c.Get("k");
  EXPECT_EQ(g.code(), Code::kEtcdOperationError);
  EXPECT_NE(g.status().message().find("127.0.0.1:1"), std::string::npos) << g.status().ToString();
}

}  // namespace
}  // namespace yb::ha
