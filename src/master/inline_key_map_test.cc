#include "master/inline_key_map.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace yb {
namespace {

// A value that counts live instances, so a leak or a double destruction shows.
struct Counted {
  static inline int live = 0;
  int v = 0;
  explicit Counted(int x) : v(x) { ++live; }
  Counted(Counted&& o) noexcept : v(o.v) { ++live; }
  Counted& operator=(Counted&&) = delete;
  ~Counted() { --live; }
};

// The same key with a chosen hash: forces collisions and long probe runs.
HashedKey WithHash(std::string_view key, uint64_t hash) {
  HashedKey k(key);
  k.hash = hash;
  return k;
}

TEST(InlineKeyMapTest, FindsWhatWasInsertedAndNothingElse) {
  InlineKeyMap<int> m;
  EXPECT_TRUE(m.find(HashedKey("a")) == m.end());
  auto [it, inserted] = m.emplace(HashedKey("alpha"), 1);
  EXPECT_TRUE(inserted);
  EXPECT_EQ(it->first, "alpha");
  EXPECT_EQ(it->second, 1);
  auto [again, second] = m.emplace(HashedKey("alpha"), 2);  // present: unchanged
  EXPECT_FALSE(second);
  EXPECT_EQ(again->second, 1);
  m.emplace(HashedKey(""), 3);  // an empty key is a key
  EXPECT_EQ(m.size(), 2u);
  EXPECT_EQ(m.find(HashedKey(""))->second, 3);
  EXPECT_TRUE(m.find(HashedKey("alph")) == m.end());
  EXPECT_TRUE(m.find(HashedKey("alphab")) == m.end());
}

// Entries never move: a pointer taken at insertion still names the entry after the slot array
// grew many times over; its key bytes stay where they were.
TEST(InlineKeyMapTest, EntriesStayPutWhileTheSlotsGrow) {
  InlineKeyMap<int> m;
  auto* first = &*m.emplace(HashedKey("first"), 7).first;
  const char* key_bytes = first->first.data();
  const size_t slots = m.slot_count();
  for (int i = 0; i < 10000; ++i) m.emplace(HashedKey("k" + std::to_string(i)), i);
  EXPECT_GT(m.slot_count(), slots);
  EXPECT_EQ(&*m.find(HashedKey("first")), first);
  EXPECT_EQ(first->first.data(), key_bytes);
  EXPECT_EQ(first->second, 7);
  EXPECT_LE(m.size() * 4, m.slot_count() * 3);  // never more than 3/4 used
  EXPECT_GE(m.size() * 8, m.slot_count() * 3);  // grown by doubling: at least 3/8 used here
}

// Keys with one hash share a probe run; erasing one in the middle leaves the ones after it found.
TEST(InlineKeyMapTest, CollidingKeysAreAllFoundAfterErasesInTheirRun) {
  InlineKeyMap<int> m;
  std::vector<std::string> keys;
  for (int i = 0; i < 40; ++i) keys.push_back("same-hash-" + std::to_string(i));
  for (int i = 0; i < 40; ++i) ASSERT_TRUE(m.emplace(WithHash(keys[i], 42), i).second);
  for (int i = 0; i < 40; i += 3) m.erase(m.find(WithHash(keys[i], 42)));
  for (int i = 0; i < 40; ++i) {
    auto it = m.find(WithHash(keys[i], 42));
    if (i % 3 == 0) {
      EXPECT_TRUE(it == m.end()) << keys[i];
    } else {
      ASSERT_FALSE(it == m.end()) << keys[i];
      EXPECT_EQ(it->second, i);
    }
  }
  // A key with the same hash but other bytes is not found, and a re-inserted one is.
  EXPECT_TRUE(m.find(WithHash("same-hash-x", 42)) == m.end());
  EXPECT_TRUE(m.emplace(WithHash(keys[0], 42), 100).second);
  EXPECT_EQ(m.find(WithHash(keys[0], 42))->second, 100);
}

// Erasing the entry a loop stands on, after taking the next one, visits every entry once.
TEST(InlineKeyMapTest, ErasingWhileIteratingVisitsEachEntryOnce) {
  InlineKeyMap<int> m;
  for (int i = 0; i < 1000; ++i) m.emplace(WithHash("k" + std::to_string(i), i % 37), i);  // long runs
  std::multiset<int> seen;
  for (auto it = m.begin(); it != m.end();) {
    auto next = std::next(it);
    seen.insert(it->second);
    if (it->second % 2 == 0) m.erase(it);
    it = next;
  }
  EXPECT_EQ(seen.size(), 1000u);
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(seen.count(i), 1u) << i;
  EXPECT_EQ(m.size(), 500u);
  size_t left = 0;
  for (const auto& [key, v] : m) {
    EXPECT_EQ(v % 2, 1);
    EXPECT_EQ(key, "k" + std::to_string(v));
    ++left;
  }
  EXPECT_EQ(left, 500u);
}

// Random inserts and erases against std::map; every value is destroyed exactly once, and a map
// churned at a steady size does not grow without bound (tombstones are reclaimed).
TEST(InlineKeyMapTest, MatchesAReferenceMapUnderChurn) {
  std::mt19937 rng(11);
  {
    InlineKeyMap<Counted> m;
    std::map<std::string, int> ref;
    for (int step = 0; step < 200000; ++step) {
      std::string key = "key/" + std::to_string(rng() % 3000);
      HashedKey hk(key);
      if (rng() % 2) {
        bool fresh = m.emplace(hk, Counted(step)).second;
        EXPECT_EQ(fresh, ref.emplace(key, step).second);
      } else if (auto it = m.find(hk); it != m.end()) {
        ASSERT_EQ(ref.count(key), 1u);
        EXPECT_EQ(it->second.v, ref[key]);
        m.erase(it);
        ref.erase(key);
      } else {
        EXPECT_EQ(ref.count(key), 0u);
      }
    }
    EXPECT_EQ(m.size(), ref.size());
    for (const auto& [key, v] : ref) EXPECT_EQ(m.find(HashedKey(key))->second.v, v);
    EXPECT_EQ(Counted::live, static_cast<int>(ref.size()));
    EXPECT_LE(m.slot_count(), 8192u);  // 3000 keys at most, half of them live at a time
  }
  EXPECT_EQ(Counted::live, 0);
}

TEST(InlineKeyMapTest, ClearFreesEverythingAndTheMapIsUsableAfter) {
  InlineKeyMap<Counted> m;
  for (int i = 0; i < 100; ++i) m.emplace(HashedKey(std::to_string(i)), Counted(i));
  m.clear();
  EXPECT_EQ(Counted::live, 0);
  EXPECT_TRUE(m.empty());
  EXPECT_TRUE(m.begin() == m.end());
  m.emplace(HashedKey("after"), Counted(1));
  EXPECT_EQ(m.find(HashedKey("after"))->second.v, 1);
}

// A standby's image is copied (for its snapshot) and moved (a snapshot replaces it): a copy holds
// entries of its own, erased keys (tombstones in a run of collisions) stay erased in it, and a move
// leaves the source empty and usable.
TEST(InlineKeyMapTest, ACopyHoldsItsOwnEntriesAndAMoveTakesThemAll) {
  {
    InlineKeyMap<std::string> m;
    for (int i = 0; i < 6; ++i) m.emplace(WithHash("k" + std::to_string(i), 7), "v" + std::to_string(i));
    EXPECT_EQ(m.erase(WithHash("k1", 7)), 1u);
    EXPECT_EQ(m.erase(WithHash("k1", 7)), 0u);
    EXPECT_EQ(m.erase(HashedKey("never")), 0u);

    InlineKeyMap<std::string> copy(m);
    m.find(WithHash("k0", 7))->second = "changed";
    EXPECT_EQ(copy.size(), 5u);
    EXPECT_EQ(copy.find(WithHash("k0", 7))->second, "v0");
    EXPECT_TRUE(copy.find(WithHash("k1", 7)) == copy.end());
    for (int i = 2; i < 6; ++i)
      EXPECT_EQ(copy.find(WithHash("k" + std::to_string(i), 7))->second, "v" + std::to_string(i));

    InlineKeyMap<std::string> moved(std::move(m));
    EXPECT_EQ(moved.find(WithHash("k0", 7))->second, "changed");
    EXPECT_TRUE(m.empty());  // NOLINT(bugprone-use-after-move): moved-from is empty, and usable
    m.emplace(HashedKey("again"), "x");
    EXPECT_EQ(m.size(), 1u);

    copy = moved;  // copy-assigned over entries of its own
    EXPECT_EQ(copy.find(WithHash("k0", 7))->second, "changed");
    copy = std::move(m);
    EXPECT_EQ(copy.size(), 1u);
    EXPECT_EQ(copy.find(HashedKey("again"))->second, "x");
  }
  const InlineKeyMap<std::string> empty;
  InlineKeyMap<std::string> empty_copy(empty);
  EXPECT_TRUE(empty_copy.empty());
  EXPECT_TRUE(empty_copy.find(HashedKey("x")) == empty_copy.end());
  static_assert(!std::is_copy_constructible_v<InlineKeyMap<Counted>>);
}

}  // namespace
}  // namespace yb
