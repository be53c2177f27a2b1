#include "master/gone_keys.h"

#include <gtest/gtest.h>

#include <optional>
#include <random>
#include <unordered_map>
#include <vector>

namespace yb {
namespace {

TEST(GoneKeysTest, RemembersTheLastReasonAndTimeOfEachKey) {
  GoneKeys g(4);
  EXPECT_FALSE(g.Find(1).has_value());
  g.Note(1, MissReason::kRemoved, 5'000);
  g.Note(2, MissReason::kEvicted, 7'999);
  ASSERT_TRUE(g.Find(1).has_value());
  EXPECT_EQ(g.Find(1)->reason, MissReason::kRemoved);
  EXPECT_EQ(g.Find(1)->when_s, 5u);
  EXPECT_EQ(g.Find(2)->reason, MissReason::kEvicted);
  EXPECT_EQ(g.Find(2)->when_s, 7u);
  g.Note(1, MissReason::kNodeLost, 9'000);  // its newest departure replaces the older one
  EXPECT_EQ(g.Find(1)->reason, MissReason::kNodeLost);
  EXPECT_EQ(g.size(), 2u);
  EXPECT_FALSE(g.Find(3).has_value());
}

TEST(GoneKeysTest, ForgetsTheOldestFirstAndAKeyNotedAgainIsNewest) {
  GoneKeys g(3);
  g.Note(10, MissReason::kRemoved, 0);
  g.Note(20, MissReason::kRemoved, 0);
  g.Note(30, MissReason::kRemoved, 0);
  g.Note(10, MissReason::kEvicted, 0);  // 10 is now the newest: 20 goes next
  g.Note(40, MissReason::kRemoved, 0);
  EXPECT_FALSE(g.Find(20).has_value());
  EXPECT_TRUE(g.Find(10).has_value());
  EXPECT_TRUE(g.Find(30).has_value());
  EXPECT_TRUE(g.Find(40).has_value());
  EXPECT_EQ(g.size(), 3u);
  g.Note(50, MissReason::kRemoved, 0);
  EXPECT_FALSE(g.Find(30).has_value());
  EXPECT_EQ(g.size(), 3u);
}

TEST(GoneKeysTest, NothingIsRememberedWithNoCapacityOrForAStoredKey) {
  GoneKeys none(0);
  none.Note(1, MissReason::kRemoved, 0);
  EXPECT_FALSE(none.Find(1).has_value());
  GoneKeys g(2);
  g.Note(1, MissReason::kStored, 0);
  EXPECT_FALSE(g.Find(1).has_value());
  EXPECT_EQ(g.size(), 0u);
}

// Keys whose hashes share their low bits probe the same run of the index; forgetting one in the
// middle of the run must leave every other findable (the backward shift). Checked against a plain
// model of the ring (a key noted again leaves a vacant position behind and takes the newest) over
// many random notes, with hashes from a small set of homes so that runs are long.
TEST(GoneKeysTest, AgreesWithAModelWhenHashesCollideInTheIndex) {
  for (size_t capacity : {1u, 2u, 3u, 7u, 64u}) {
    GoneKeys g(capacity);
    std::vector<std::optional<uint64_t>> ring(capacity);  // the model: hash at each position
    size_t next = 0;
    std::unordered_map<uint64_t, MissReason> model;
    std::mt19937_64 rng(capacity);
    for (int step = 0; step < 20'000; ++step) {
      const uint64_t hash = ((rng() % 40) << 20) | (rng() % 4);  // 4 homes, 160 keys
      const auto why = static_cast<MissReason>(1 + rng() % (kMissReasonCount - 1));
      g.Note(hash, why, step);
      for (auto& at : ring) {
        if (at == hash) at.reset();
      }
      if (ring[next]) model.erase(*ring[next]);
      ring[next] = hash;
      next = (next + 1) % capacity;
      model[hash] = why;
      for (uint64_t h = 0; h < 40; ++h) {
        for (uint64_t low = 0; low < 4; ++low) {
          const uint64_t k = (h << 20) | low;
          auto found = g.Find(k);
          auto it = model.find(k);
          ASSERT_EQ(found.has_value(), it != model.end()) << "capacity " << capacity << " step " << step;
          if (found) {
            ASSERT_EQ(found->reason, it->second);
          }
        }
      }
    }
    EXPECT_EQ(g.size(), model.size());
  }
}

TEST(GoneKeysTest, CostsAtMost32BytesPerKey) { EXPECT_LE(GoneKeys::kBytesPerKey, 32u); }

}  // namespace
}  // namespace yb
