#include "etcd/etcd_client.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <thread>

namespace yb {
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

// An etcd (or whatever answers on its port) that answers JSON of unexpected shapes: every call
// returns an error or a harmless value, and none throws out of the client.
TEST(EtcdClientTest, AnswersOfAnyShapeAreErrorsNotCrashes) {
  const std::vector<std::string> answers = {
      "not json",
      "[]",
      R"({"kvs": 5})",
      R"({"kvs": [7]})",
      R"({"kvs": [{"value": 3, "create_revision": "x9"}]})",
      R"({"kvs": [{"value": "!!", "create_revision": {}}]})",
      R"({"succeeded": "yes", "responses": 4, "header": []})",
      R"({"succeeded": false, "responses": [{"response_range": {"kvs": "no"}}]})",
      R"({"result": [], "ID": {"a": 1}, "TTL": "99999999999999999999999"})",
      R"({"error": 5, "message": []})",
  };
  for (const std::string& answer : answers) {
    httplib::Server server;
    server.Post(".*",
                [&](const httplib::Request&, httplib::Response& res) { res.set_content(answer, "application/json"); });
    const int port = server.bind_to_any_port("127.0.0.1");
    ASSERT_GT(port, 0);
    std::thread t([&] { server.listen_after_bind(); });
    while (!server.is_running()) std::this_thread::yield();
    EtcdClient c({{{"127.0.0.1", static_cast<uint16_t>(port)}}, std::chrono::milliseconds(2000)});
    (void)c.Get("k");
    (void)c.Grant(5);
    (void)c.KeepAlive(1);
    (void)c.Revoke(1);
    (void)c.Put("k", "v");
    (void)c.PutIfAbsent("k", "v", 1);
    (void)c.PutIfOwned("k", 1, "k2", "v");
    auto g = c.Get("k");
    if (!g.ok()) {
      EXPECT_EQ(g.code(), Code::kEtcdOperationError) << answer;
    }
    server.stop();
    t.join();
  }
}

}  // namespace
}  // namespace yb
