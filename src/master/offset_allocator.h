// OffsetAllocator: an O(1) allocator of ranges inside one segment, with no access to the memory.
//
// The design is the bin-based "offset allocator" that Mooncake uses for its segments (after
// Sebastian Aaltonen's OffsetAllocator): free ranges sit in 512 bins indexed by a small float
// (5-6 bits of exponent, 3 of mantissa), so a bin is found with two bit scans; a free range is
// split on allocation and merged with its free neighbours on release. Allocation and release are
// O(1); the bins waste at most 1/8 of a request to rounding. A free range sits in the bin its size
// rounds down to, so a request whose size lies between two bins' bounds first tries a few ranges
// of that bin (kFitTries): otherwise a hole of exactly its size, the common case when values are of
// one size, would never take it again.
//
// Sizes are rounded up to `alignment` (a power of two), so every offset is aligned.
// Not thread-safe: the owner (a Segment) serializes calls.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace yb {

class OffsetAllocator {
 public:
  static constexpr uint32_t kNoNode = UINT32_MAX;
  static constexpr uint32_t kNumTopBins = 64;
  static constexpr uint32_t kBinsPerLeaf = 8;
  static constexpr uint32_t kNumBins = kNumTopBins * kBinsPerLeaf;

  struct Allocation {
    uint64_t offset = 0;
    uint32_t node = kNoNode;  // handle for Free()
  };

  struct Stats {
    uint64_t capacity = 0;
    uint64_t allocated_bytes = 0;  // after rounding to alignment
    uint64_t free_bytes = 0;
    uint64_t allocations = 0;  // live allocations
    uint64_t free_regions = 0;
    uint64_t largest_free_region = 0;
    // 1 - largest_free_region / free_bytes: 0 when free space is one range.
    double fragmentation = 0;
  };

  explicit OffsetAllocator(uint64_t capacity, uint64_t alignment = 64);

  // Reserves `size` bytes (> 0). nullopt when no free range is large enough.
  std::optional<Allocation> Allocate(uint64_t size);
  // Releases an allocation. Returns false (and changes nothing) for a handle that is not live.
  bool Free(uint32_t node);
  // Rebuilds a fresh allocator (nothing allocated yet) with `ranges` (offset, size) allocated, as
  // they were when a master restarted: sizes are rounded up to the alignment, and the space between
  // them is free. Returns each range's handle, in the order given; nullopt (nothing changed) when
  // a range is misaligned, outside the capacity, or overlaps another.
  std::optional<std::vector<uint32_t>> Restore(const std::vector<std::pair<uint64_t, uint64_t>>& ranges);

  // Rounded size of a live allocation, 0 otherwise.
  uint64_t AllocationSize(uint32_t node) const;
  Stats GetStats() const;
  uint64_t capacity() const { return capacity_; }
  uint64_t free_bytes() const { return free_bytes_; }
  uint64_t alignment() const { return alignment_; }

  // Small-float bin index of a size; exposed for tests.
  static uint32_t BinRoundDown(uint64_t size);
  static uint32_t BinRoundUp(uint64_t size);
  static uint64_t BinLowerBound(uint32_t bin);

 private:
  // 32 bytes: the master keeps one per stored replica.
  struct Node {
    uint64_t offset : 62 = 0;
    uint64_t used : 1 = 0;
    uint64_t live : 1 = 0;  // 0 while on the spare list
    uint64_t size = 0;
    uint32_t bin_prev = kNoNode;
    uint32_t bin_next = kNoNode;
    uint32_t nb_prev = kNoNode;  // neighbour ranges by address
    uint32_t nb_next = kNoNode;
  };
  static_assert(sizeof(Node) == 32);
  // Nodes live in fixed chunks: no copy and no doubling slack as the count grows.
  static constexpr uint32_t kChunkBits = 12;
  // Ranges of the bin a size rounds down to that Allocate tries before the bins above it.
  static constexpr int kFitTries = 8;

  Node& N(uint32_t n) { return chunks_[n >> kChunkBits][n & ((1u << kChunkBits) - 1)]; }
  const Node& N(uint32_t n) const { return chunks_[n >> kChunkBits][n & ((1u << kChunkBits) - 1)]; }

  uint32_t NewNode();
  void ReleaseNode(uint32_t n);
  uint32_t InsertFree(uint64_t offset, uint64_t size);  // returns the node
  void RemoveFree(uint32_t n);
  uint32_t FindBin(uint32_t min_bin) const;  // smallest non-empty bin >= min_bin, or kNumBins

  uint64_t capacity_;
  uint64_t alignment_;
  uint64_t free_bytes_ = 0;
  uint64_t live_allocations_ = 0;
  uint64_t top_mask_ = 0;
  std::array<uint8_t, kNumTopBins> leaf_masks_{};
  std::array<uint32_t, kNumBins> bin_heads_;
  std::vector<std::unique_ptr<Node[]>> chunks_;
  uint32_t node_count_ = 0;
  std::vector<uint32_t> spare_;
};

}  // namespace yb
