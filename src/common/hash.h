// One hash for keys (XXH3-64) and the pre-hashed key type that lets a sharded table hash a key
// once: the shard index and the shard's bucket both come from the same 64-bit value.
#pragma once

#include <xxhash.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

namespace yb {

inline uint64_t HashBytes(const void* data, size_t len) { return XXH3_64bits(data, len); }
inline uint64_t HashKey(std::string_view key) { return HashBytes(key.data(), key.size()); }

// A key with its hash computed once.
struct HashedKey {
  std::string_view key;
  uint64_t hash;
  explicit HashedKey(std::string_view k) : key(k), hash(HashKey(k)) {}
};

// Transparent hasher/equality for unordered containers keyed by std::string: lookups with a
// HashedKey reuse its hash.
//
// The string overloads are deliberately not noexcept: libstdc++ stores each node's hash in the
// node only for a hasher that may throw (or is not "fast"), and without the stored hash a lookup
// walking a bucket re-hashes the key of every node it passes, and compares the keys of nodes with
// another hash, each a cache miss on a large table (a third of the master's user time per
// ExistKey). With it, other keys are told apart by their stored hash.
struct KeyHash {
  using is_transparent = void;
  size_t operator()(const std::string& k) const { return HashKey(k); }
  size_t operator()(std::string_view k) const { return HashKey(k); }
  size_t operator()(const HashedKey& k) const noexcept { return k.hash; }
};
#if defined(__GLIBCXX__)
static_assert(std::__cache_default<std::string, KeyHash>::value, "tables keyed with KeyHash should store hashes");
#endif
struct KeyEq {
  using is_transparent = void;
  static std::string_view View(const std::string& s) { return s; }
  static std::string_view View(std::string_view s) { return s; }
  static std::string_view View(const HashedKey& k) { return k.key; }
  template <typename A, typename B>
  bool operator()(const A& a, const B& b) const {
    return View(a) == View(b);
  }
};

}  // namespace yb
