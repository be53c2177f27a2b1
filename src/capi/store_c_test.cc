#include "yuebing/store_c.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace {

class StoreCTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = mooncake_store_create();
    ASSERT_NE(store_, nullptr);
    std::string cluster = std::string("embedded:") + ::testing::UnitTest::GetInstance()->current_test_info()->name();
    ASSERT_EQ(mooncake_store_setup(store_, "host-a", "P2PHANDSHAKE", 16 << 20, 4 << 20, "tcp", "", cluster.c_str()), 0);
  }
  void TearDown() override { mooncake_store_destroy(store_); }
  mooncake_store_t store_ = nullptr;
};

TEST_F(StoreCTest, PutGetExistSizeRemove) {
  std::string v(5000, 'x');
  EXPECT_EQ(mooncake_store_put(store_, "k", v.data(), v.size(), nullptr), 0);
  EXPECT_EQ(mooncake_store_put(store_, "k", v.data(), v.size(), nullptr), 0);  // same size again: 0
  EXPECT_EQ(mooncake_store_put(store_, "k", v.data(), 10, nullptr), -705);
  std::vector<char> out(8000);
  EXPECT_EQ(mooncake_store_get_into(store_, "k", out.data(), out.size()), 5000);
  EXPECT_EQ(std::memcmp(out.data(), v.data(), v.size()), 0);
  EXPECT_LT(mooncake_store_get_into(store_, "k", out.data(), 100), 0);  // buffer too small
  EXPECT_EQ(mooncake_store_is_exist(store_, "k"), 1);
  EXPECT_EQ(mooncake_store_is_exist(store_, "nope"), 0);
  EXPECT_EQ(mooncake_store_get_size(store_, "k"), 5000);
  EXPECT_EQ(mooncake_store_get_size(store_, "nope"), -704);
  EXPECT_EQ(mooncake_store_get_into(store_, "nope", out.data(), out.size()), -704);
  EXPECT_EQ(mooncake_store_remove(store_, "k", 0), -706);  // just read: leased
  EXPECT_EQ(mooncake_store_remove(store_, "k", 1), 0);
  EXPECT_EQ(mooncake_store_remove(store_, "k", 0), -704);
  EXPECT_EQ(mooncake_store_health_check(store_), 0);
}

TEST_F(StoreCTest, BatchesReportPerKey) {
  std::string a(100, 'a'), b(200, 'b');
  const char* keys[] = {"a", "b", ""};
  void* bufs[] = {a.data(), b.data(), a.data()};
  size_t sizes[] = {a.size(), b.size(), a.size()};
  int put_res[3];
  mooncake_replicate_config_t cfg{1, 0, 0, nullptr, 0};
  EXPECT_EQ(mooncake_store_batch_put_from(store_, keys, bufs, sizes, 3, &cfg, put_res), 0);
  EXPECT_EQ(put_res[0], 0);
  EXPECT_EQ(put_res[1], 0);
  EXPECT_EQ(put_res[2], -400);
  int exist[3];
  EXPECT_EQ(mooncake_store_batch_is_exist(store_, keys, 3, exist), 0);
  EXPECT_EQ(exist[0], 1);
  EXPECT_EQ(exist[1], 1);
  EXPECT_EQ(exist[2], -400);
  std::vector<char> oa(100), ob(150);
  void* outs[] = {oa.data(), ob.data()};
  size_t out_sizes[] = {oa.size(), ob.size()};
  int64_t got[2];
  EXPECT_EQ(mooncake_store_batch_get_into(store_, keys, outs, out_sizes, 2, got), 0);
  EXPECT_EQ(got[0], 100);
  EXPECT_EQ(got[1], -10);  // BUFFER_OVERFLOW
  EXPECT_EQ(std::string(oa.data(), 100), a);
}

TEST_F(StoreCTest, RegexAllHostnameBuffersAndConfig) {
  const char* pref[] = {"host-a"};
  mooncake_replicate_config_t cfg{2, 1, 0, pref, 1};
  for (const char* k : {"m@1", "m@2", "z"}) EXPECT_EQ(mooncake_store_put(store_, k, "v", 1, &cfg), 0);
  EXPECT_EQ(mooncake_store_remove_by_regex(store_, "^m@", 1), 2);
  EXPECT_EQ(mooncake_store_remove_by_regex(store_, "([", 1), -600);
  EXPECT_EQ(mooncake_store_remove_all(store_, 1), 1);
  char host[64];
  EXPECT_EQ(mooncake_store_get_hostname(store_, host, sizeof(host)), 0);
  EXPECT_STREQ(host, "host-a");
  EXPECT_EQ(mooncake_store_get_hostname(store_, host, 3), -600);
  std::vector<char> buf(4096, 'r');
  EXPECT_EQ(mooncake_store_register_buffer(store_, buf.data(), buf.size()), 0);
  EXPECT_EQ(mooncake_store_put_from(store_, "reg", buf.data(), buf.size(), nullptr), 0);
  EXPECT_EQ(mooncake_store_unregister_buffer(store_, buf.data()), 0);
  EXPECT_EQ(mooncake_store_unregister_buffer(store_, buf.data()), -600);
}

TEST_F(StoreCTest, BadArgumentsAreRefusedWithoutCrashing) {
  char buf[16];
  EXPECT_EQ(mooncake_store_put(store_, nullptr, "v", 1, nullptr), -1);  // a NULL key: Mooncake's -1
  EXPECT_EQ(mooncake_store_put(store_, "k", nullptr, 10, nullptr), -600);
  EXPECT_EQ(mooncake_store_put(store_, "", "v", 1, nullptr), -400);
  EXPECT_EQ(mooncake_store_put(store_, "k", "v", 0, nullptr), -600);
  EXPECT_EQ(mooncake_store_put(store_, "k", std::string(10000, 'x').c_str(), 32 << 20, nullptr), -600);
  EXPECT_EQ(mooncake_store_get_into(store_, "k", nullptr, 10), -600);
  EXPECT_EQ(mooncake_store_get_into(store_, nullptr, buf, 10), -1);
  EXPECT_EQ(mooncake_store_is_exist(nullptr, "k"), -1);
  EXPECT_EQ(mooncake_store_health_check(nullptr), -1);
  EXPECT_EQ(mooncake_store_batch_is_exist(store_, nullptr, 2, nullptr), -1);
  int one = 0;
  const char* null_key[] = {nullptr};
  EXPECT_EQ(mooncake_store_batch_is_exist(store_, null_key, 1, &one), -1);
  EXPECT_EQ(mooncake_store_register_buffer(store_, nullptr, 10), -600);
  EXPECT_EQ(mooncake_store_setup(store_, "h", "", 0, 0, "tcp", "", "embedded"), -600);  // already set up
  mooncake_store_t fresh = mooncake_store_create();
  EXPECT_EQ(mooncake_store_put(fresh, "k", "v", 1, nullptr), -600);  // not set up
  EXPECT_EQ(mooncake_store_health_check(fresh), 1);
  EXPECT_EQ(mooncake_store_setup(fresh, "h", "", 0, 0, "carrier-pigeon", "", "embedded"), -600);
  EXPECT_EQ(mooncake_store_setup(fresh, "h", "", 0, 0, "tcp", "", "not-an-address"), -600);
  EXPECT_EQ(mooncake_store_setup(fresh, "127.0.0.1", "", 0, 0, "tcp", "", "127.0.0.1:1"), -900);  // nobody there
  mooncake_store_destroy(fresh);
  mooncake_store_destroy(nullptr);
}

// init_all and a NULL master address look for the master at Mooncake's default, 127.0.0.1:50051
// (tests/cluster/test_callers.py runs them against a yb-master there).
TEST(StoreCInitAllTest, AZeroedConfigIsTheDefault) {
  mooncake_store_t s = mooncake_store_create();
  ASSERT_EQ(mooncake_store_setup(s, "localhost", nullptr, 8 << 20, 1 << 20, "tcp", "", "embedded:zeroed"), 0);
  mooncake_replicate_config_t zeroed{};  // as C programs zero a struct: replica_num 0 means one replica
  EXPECT_EQ(mooncake_store_put(s, "k", "value", 5, &zeroed), 0);
  char out[8];
  EXPECT_EQ(mooncake_store_get_into(s, "k", out, sizeof(out)), 5);
  mooncake_store_destroy(s);
}

}  // namespace
