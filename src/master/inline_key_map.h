// InlineKeyMap<V>: the index of the master's object table, and of the image a standby keeps of it
// (master_image.h). String keys map to values; each key is
// stored inline after its value's entry, in one allocation (a node), and an open-addressing array of
// (hash, node) slots with linear probing finds the nodes.
//
// Why not std::unordered_map: there a lookup is a chain of dependent cache misses: the bucket array,
// the node before the bucket's first one (libstdc++ buckets point at the predecessor), the node, and
// the key's own heap block. On a master holding millions of keys each miss goes to memory, and the
// kernel's network work between two calls evicts whatever was cached (a lookup of a key among 20,000
// cost ~1 us of the master's ~2 us of user time per call; docs/performance.md). Here a lookup reads
// a slot, whose stored hash rules out the other keys without touching their nodes, then the one
// node, whose key and value sit side by side. It also saves the std::string header and the node's
// link: about 40 bytes per object.
//
// Nodes never move: pointers and references to entries stay valid until the entry is erased (the
// table's recency list links entries by pointer). An insert may rehash, which invalidates iterators
// (not entry pointers); erasing leaves the other entries in their slots (a tombstone, or an empty
// slot where no probe can pass), so a loop may erase the entry it stands on after taking the next
// one, and visits every other entry exactly once. Lookups take a HashedKey: the hash computed once
// for the shard and the slot. Not thread-safe: the shard's mutex guards it.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <new>
#include <string_view>
#include <utility>

#include "common/hash.h"

namespace yb {

template <typename V>
struct InlineKeyEntry {
  std::string_view first;  // the key: its bytes follow this entry in the same allocation
  V second;
};

template <typename V>
class InlineKeyMap {
 public:
  using Entry = InlineKeyEntry<V>;

  template <bool kConst>
  class Iter {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = Entry;
    using difference_type = std::ptrdiff_t;
    using pointer = std::conditional_t<kConst, const Entry*, Entry*>;
    using reference = std::conditional_t<kConst, const Entry&, Entry&>;
    using Map = std::conditional_t<kConst, const InlineKeyMap, InlineKeyMap>;

    Iter() = default;
    reference operator*() const { return *map_->slots_[i_].entry; }
    pointer operator->() const { return map_->slots_[i_].entry; }
    Iter& operator++() {
      i_ = map_->Occupied(i_ + 1);
      return *this;
    }
    Iter operator++(int) {
      Iter before = *this;
      ++*this;
      return before;
    }
    bool operator==(const Iter& o) const { return i_ == o.i_; }

   private:
    friend class InlineKeyMap;
    Iter(Map* map, size_t i) : map_(map), i_(i) {}
    Map* map_ = nullptr;
    size_t i_ = 0;
  };
  using iterator = Iter<false>;
  using const_iterator = Iter<true>;

  InlineKeyMap() = default;
  ~InlineKeyMap() { clear(); }
  InlineKeyMap(InlineKeyMap&& o) noexcept
      : slots_(std::exchange(o.slots_, nullptr)),
        cap_(std::exchange(o.cap_, 0)),
        size_(std::exchange(o.size_, 0)),
        tombstones_(std::exchange(o.tombstones_, 0)) {}
  InlineKeyMap& operator=(InlineKeyMap&& o) noexcept {
    if (this != &o) {
      clear();
      slots_ = std::exchange(o.slots_, nullptr);
      cap_ = std::exchange(o.cap_, 0);
      size_ = std::exchange(o.size_, 0);
      tombstones_ = std::exchange(o.tombstones_, 0);
    }
    return *this;
  }
  // A deep copy, slot for slot (a standby copies its image to write a snapshot of it).
  InlineKeyMap(const InlineKeyMap& o) requires std::copy_constructible<V>
      : cap_(o.cap_), size_(o.size_), tombstones_(o.tombstones_) {
    if (cap_ == 0) return;
    slots_ = new Slot[cap_];
    for (size_t i = 0; i < cap_; ++i) {
      const Slot& from = o.slots_[i];
      slots_[i] = Live(from) ? Slot{from.hash, NewEntry(from.entry->first, V(from.entry->second))} : from;
    }
  }
  InlineKeyMap& operator=(const InlineKeyMap& o) requires std::copy_constructible<V> {
    if (this != &o) *this = InlineKeyMap(o);
    return *this;
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t slot_count() const { return cap_; }

  iterator begin() { return iterator(this, Occupied(0)); }
  iterator end() { return iterator(this, cap_); }
  const_iterator begin() const { return const_iterator(this, Occupied(0)); }
  const_iterator end() const { return const_iterator(this, cap_); }

  iterator find(const HashedKey& k) { return iterator(this, Find(k)); }
  const_iterator find(const HashedKey& k) const { return const_iterator(this, Find(k)); }

  // Inserts `value` under the key unless the key is present; the iterator names the key's entry.
  std::pair<iterator, bool> emplace(const HashedKey& k, V value) {
    if (size_t at = Find(k); at != cap_) return {iterator(this, at), false};
    if ((size_ + tombstones_ + 1) * 4 > cap_ * 3) Rehash(size_ + 1);
    size_t i = k.hash & (cap_ - 1);
    while (slots_[i].entry != nullptr && slots_[i].entry != Tombstone()) i = (i + 1) & (cap_ - 1);
    if (slots_[i].entry == Tombstone()) --tombstones_;
    slots_[i] = Slot{k.hash, NewEntry(k.key, std::move(value))};
    ++size_;
    return {iterator(this, i), true};
  }

  // Erases the key's entry if it is there; how many were erased (0 or 1).
  size_t erase(const HashedKey& k) {
    const size_t at = Find(k);
    if (at == cap_) return 0;
    erase(iterator(this, at));
    return 1;
  }

  void erase(iterator it) {
    Entry* e = slots_[it.i_].entry;
    // An empty next slot ends every probe that would pass this one, so this one may be empty too.
    if (slots_[(it.i_ + 1) & (cap_ - 1)].entry == nullptr) {
      slots_[it.i_].entry = nullptr;
    } else {
      slots_[it.i_].entry = Tombstone();
      ++tombstones_;
    }
    --size_;
    DeleteEntry(e);
  }

  void clear() {
    for (size_t i = 0; i < cap_; ++i) {
      if (Live(slots_[i])) DeleteEntry(slots_[i].entry);
    }
    delete[] slots_;
    slots_ = nullptr;
    cap_ = size_ = tombstones_ = 0;
  }

 private:
  struct Slot {
    uint64_t hash = 0;
    Entry* entry = nullptr;  // nullptr: empty; Tombstone(): erased, probes go on past it
  };

  static Entry* Tombstone() { return reinterpret_cast<Entry*>(alignof(Entry)); }
  static bool Live(const Slot& s) { return s.entry != nullptr && s.entry != Tombstone(); }

  // The slot holding the key, or cap_. A slot array is never full (at most 3/4 used), so the probe
  // meets an empty slot.
  size_t Find(const HashedKey& k) const {
    if (size_ == 0) return cap_;
    for (size_t i = k.hash & (cap_ - 1);; i = (i + 1) & (cap_ - 1)) {
      const Slot& s = slots_[i];
      if (s.entry == nullptr) return cap_;
      if (s.hash == k.hash && s.entry != Tombstone() && s.entry->first == k.key) return i;
    }
  }

  size_t Occupied(size_t i) const {
    while (i < cap_ && !Live(slots_[i])) ++i;
    return i;
  }

  // A slot array for `need` entries, at most half used (tombstones dropped): growing from 3/4 used
  // doubles it, and a churned array with many tombstones keeps its size.
  void Rehash(size_t need) {
    size_t cap = 8;
    while (cap < need * 2) cap *= 2;
    Slot* slots = new Slot[cap];
    for (size_t i = 0; i < cap_; ++i) {
      if (!Live(slots_[i])) continue;
      size_t j = slots_[i].hash & (cap - 1);
      while (slots[j].entry != nullptr) j = (j + 1) & (cap - 1);
      slots[j] = slots_[i];
    }
    delete[] slots_;
    slots_ = slots;
    cap_ = cap;
    tombstones_ = 0;
  }

  static Entry* NewEntry(std::string_view key, V&& value) {
    void* mem = ::operator new(sizeof(Entry) + key.size());
    char* bytes = static_cast<char*>(mem) + sizeof(Entry);
    if (!key.empty()) std::memcpy(bytes, key.data(), key.size());
    return new (mem) Entry{std::string_view(bytes, key.size()), std::move(value)};
  }
  static void DeleteEntry(Entry* e) {
    e->~Entry();
    ::operator delete(e);
  }

  Slot* slots_ = nullptr;
  size_t cap_ = 0;  // a power of two, or 0
  size_t size_ = 0;
  size_t tombstones_ = 0;
};

}  // namespace yb
