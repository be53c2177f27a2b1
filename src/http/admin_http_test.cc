// AdminHttp: a daemon's HTTP endpoint on a thread of its own.
#include "http/admin_http.h"

#include <gtest/gtest.h>

namespace yb::http {
namespace {

// Stop() right after Start() used to be lost when it came before httplib's accept loop began (its
// stop() did nothing yet), and the join waited forever: a daemon refusing a flag read after it
// started its HTTP endpoint hung on its way out. Many rounds, so the thread rarely runs first.
TEST(AdminHttpTest, StopRightAfterStartReturns) {
  for (int i = 0; i < 200; ++i) {
    AdminHttp http;
    ASSERT_TRUE(http.Start("test", "127.0.0.1", 0, /*loopback_only=*/true));
    http.Stop();
  }
}

TEST(AdminHttpTest, ServesItsRoutesUntilStopped) {
  AdminHttp http;
  http.server().Get("/ping",
                    [](const httplib::Request&, httplib::Response& res) { res.set_content("pong", "text/plain"); });
  ASSERT_TRUE(http.Start("test", "127.0.0.1", 0, /*loopback_only=*/true));
  ASSERT_GT(http.port(), 0);
  httplib::Client client("127.0.0.1", http.port());
  auto res = client.Get("/ping");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->body, "pong");
  http.Stop();
  EXPECT_FALSE(client.Get("/ping"));
}

}  // namespace
}  // namespace yb::http
