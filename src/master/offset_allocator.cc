#include "master/offset_allocator.h"

#include <algorithm>
#include <bit>

namespace yb {
namespace {
constexpr uint32_t kMantissaBits = 3;
constexpr uint64_t kMantissaValue = 1ULL << kMantissaBits;
constexpr uint64_t kMantissaMask = kMantissaValue - 1;
}  // namespace

uint32_t OffsetAllocator::BinRoundDown(uint64_t size) {
  if (size < kMantissaValue) return static_cast<uint32_t>(size);
  uint32_t high = 63 - std::countl_zero(size);
  uint32_t shift = high - kMantissaBits;
  uint32_t exp = shift + 1;
  uint64_t mantissa = (size >> shift) & kMantissaMask;
  return (exp << kMantissaBits) | static_cast<uint32_t>(mantissa);
}

uint32_t OffsetAllocator::BinRoundUp(uint64_t size) {
  uint32_t bin = BinRoundDown(size);
  if (size < kMantissaValue) return bin;
  uint32_t shift = 63 - std::countl_zero(size) - kMantissaBits;
  if (size & ((1ULL << shift) - 1)) ++bin;  // carries into the exponent when the mantissa overflows
  return bin;
}

uint64_t OffsetAllocator::BinLowerBound(uint32_t bin) {
  uint32_t exp = bin >> kMantissaBits;
  uint64_t mantissa = bin & kMantissaMask;
  if (exp == 0) return mantissa;
  return (mantissa | kMantissaValue) << (exp - 1);
}

OffsetAllocator::OffsetAllocator(uint64_t capacity, uint64_t alignment)
    : capacity_(capacity - capacity % std::max<uint64_t>(alignment, 1)), alignment_(std::max<uint64_t>(alignment, 1)) {
  bin_heads_.fill(kNoNode);
  if (capacity_ > 0) InsertFree(0, capacity_);
}

uint32_t OffsetAllocator::NewNode() {
  uint32_t n;
  if (!spare_.empty()) {
    n = spare_.back();
    spare_.pop_back();
  } else {
    n = node_count_++;
    if ((n >> kChunkBits) >= chunks_.size()) chunks_.push_back(std::make_unique<Node[]>(1u << kChunkBits));
  }
  N(n) = Node{};
  N(n).live = 1;
  return n;
}

void OffsetAllocator::ReleaseNode(uint32_t n) {
  N(n).live = 0;
  N(n).used = 0;
  spare_.push_back(n);
}

uint32_t OffsetAllocator::InsertFree(uint64_t offset, uint64_t size) {
  uint32_t bin = BinRoundDown(size);
  uint32_t n = NewNode();
  Node& node = N(n);
  node.offset = offset;
  node.size = size;
  node.bin_next = bin_heads_[bin];
  if (node.bin_next != kNoNode) N(node.bin_next).bin_prev = n;
  bin_heads_[bin] = n;
  top_mask_ |= 1ULL << (bin / kBinsPerLeaf);
  leaf_masks_[bin / kBinsPerLeaf] |= static_cast<uint8_t>(1u << (bin % kBinsPerLeaf));
  free_bytes_ += size;
  return n;
}

void OffsetAllocator::RemoveFree(uint32_t n) {
  Node& node = N(n);
  if (node.bin_prev != kNoNode) {
    N(node.bin_prev).bin_next = node.bin_next;
  } else {
    uint32_t bin = BinRoundDown(node.size);
    bin_heads_[bin] = node.bin_next;
    if (node.bin_next == kNoNode) {
      uint32_t top = bin / kBinsPerLeaf;
      leaf_masks_[top] &= static_cast<uint8_t>(~(1u << (bin % kBinsPerLeaf)));
      if (leaf_masks_[top] == 0) top_mask_ &= ~(1ULL << top);
    }
  }
  if (node.bin_next != kNoNode) N(node.bin_next).bin_prev = node.bin_prev;
  node.bin_prev = node.bin_next = kNoNode;
  free_bytes_ -= node.size;
}

uint32_t OffsetAllocator::FindBin(uint32_t min_bin) const {
  if (min_bin >= kNumBins) return kNumBins;
  uint32_t top = min_bin / kBinsPerLeaf;
  uint32_t leaf = min_bin % kBinsPerLeaf;
  if (top_mask_ & (1ULL << top)) {
    uint32_t mask = leaf_masks_[top] & (0xFFu << leaf);
    if (mask) return top * kBinsPerLeaf + std::countr_zero(mask);
  }
  if (top + 1 >= kNumTopBins) return kNumBins;
  uint64_t above = top_mask_ & (~0ULL << (top + 1));
  if (!above) return kNumBins;
  uint32_t t = std::countr_zero(above);
  return t * kBinsPerLeaf + std::countr_zero(static_cast<uint32_t>(leaf_masks_[t]));
}

std::optional<OffsetAllocator::Allocation> OffsetAllocator::Allocate(uint64_t size) {
  if (size == 0 || size > free_bytes_) return std::nullopt;
  uint64_t rounded = (size + alignment_ - 1) & ~(alignment_ - 1);
  if (rounded < size) return std::nullopt;  // overflow
  // A free range sits in the bin its size rounds down to, and the bins from the one `rounded`
  // rounds up to hold only ranges large enough. A size between two bins' bounds (most: a bin spans
  // an eighth of its size) would then never take a hole of exactly its size, such as one its own
  // kind left: with every value of one size, a full segment evicts again and again. So the bin it
  // rounds down to is searched first, a few ranges deep, for one that fits.
  uint32_t n = kNoNode;
  const uint32_t below = BinRoundDown(rounded);
  if (BinLowerBound(below) != rounded) {
    uint32_t c = bin_heads_[below];
    for (int tries = 0; c != kNoNode && tries < kFitTries; ++tries, c = N(c).bin_next) {
      if (N(c).size >= rounded) {
        n = c;
        break;
      }
    }
  }
  if (n == kNoNode) {
    uint32_t bin = FindBin(BinRoundUp(rounded));
    if (bin >= kNumBins) return std::nullopt;
    n = bin_heads_[bin];
  }
  RemoveFree(n);
  Node& node = N(n);
  uint64_t remainder = node.size - rounded;
  node.size = rounded;
  node.used = 1;
  if (remainder > 0) {
    uint64_t rest_offset = node.offset + rounded;
    uint32_t r = InsertFree(rest_offset, remainder);
    Node& cur = N(n);
    Node& rest = N(r);
    rest.nb_prev = n;
    rest.nb_next = cur.nb_next;
    if (cur.nb_next != kNoNode) N(cur.nb_next).nb_prev = r;
    cur.nb_next = r;
  }
  ++live_allocations_;
  return Allocation{N(n).offset, n};
}

bool OffsetAllocator::Free(uint32_t n) {
  if (n >= node_count_ || !N(n).live || !N(n).used) return false;
  uint64_t offset = N(n).offset;
  uint64_t size = N(n).size;
  uint32_t prev = N(n).nb_prev;
  uint32_t next = N(n).nb_next;

  if (prev != kNoNode && !N(prev).used) {
    offset = N(prev).offset;
    size += N(prev).size;
    RemoveFree(prev);
    uint32_t pp = N(prev).nb_prev;
    ReleaseNode(prev);
    prev = pp;
  }
  if (next != kNoNode && !N(next).used) {
    size += N(next).size;
    RemoveFree(next);
    uint32_t nn = N(next).nb_next;
    ReleaseNode(next);
    next = nn;
  }
  ReleaseNode(n);
  uint32_t merged = InsertFree(offset, size);
  N(merged).nb_prev = prev;
  N(merged).nb_next = next;
  if (prev != kNoNode) N(prev).nb_next = merged;
  if (next != kNoNode) N(next).nb_prev = merged;
  --live_allocations_;
  return true;
}

std::optional<std::vector<uint32_t>> OffsetAllocator::Restore(
    const std::vector<std::pair<uint64_t, uint64_t>>& ranges) {
  if (live_allocations_ != 0) return std::nullopt;
  std::vector<size_t> order(ranges.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ranges[a].first < ranges[b].first; });
  uint64_t end = 0;
  for (size_t i : order) {
    const auto [offset, size] = ranges[i];
    const uint64_t rounded = (size + alignment_ - 1) & ~(alignment_ - 1);
    if (size == 0 || offset % alignment_ != 0 || offset < end || rounded < size || offset > capacity_ ||
        rounded > capacity_ - offset) {
      return std::nullopt;
    }
    end = offset + rounded;
  }
  // Start over: no free range, no node.
  bin_heads_.fill(kNoNode);
  leaf_masks_.fill(0);
  top_mask_ = 0;
  free_bytes_ = 0;
  chunks_.clear();
  spare_.clear();
  node_count_ = 0;
  std::vector<uint32_t> nodes(ranges.size(), kNoNode);
  uint32_t prev = kNoNode;
  auto link = [&](uint32_t n) {
    N(n).nb_prev = prev;
    if (prev != kNoNode) N(prev).nb_next = n;
    prev = n;
  };
  uint64_t at = 0;
  for (size_t i : order) {
    const auto [offset, size] = ranges[i];
    if (offset > at) link(InsertFree(at, offset - at));
    uint32_t n = NewNode();
    N(n).offset = offset;
    N(n).size = (size + alignment_ - 1) & ~(alignment_ - 1);
    N(n).used = 1;
    link(n);
    nodes[i] = n;
    at = offset + N(n).size;
  }
  if (at < capacity_) link(InsertFree(at, capacity_ - at));
  live_allocations_ = ranges.size();
  return nodes;
}

uint64_t OffsetAllocator::AllocationSize(uint32_t n) const {
  if (n >= node_count_ || !N(n).live || !N(n).used) return 0;
  return N(n).size;
}

OffsetAllocator::Stats OffsetAllocator::GetStats() const {
  Stats s;
  s.capacity = capacity_;
  s.free_bytes = free_bytes_;
  s.allocated_bytes = capacity_ - free_bytes_;
  s.allocations = live_allocations_;
  for (uint32_t bin = 0; bin < kNumBins; ++bin) {
    for (uint32_t n = bin_heads_[bin]; n != kNoNode; n = N(n).bin_next) {
      ++s.free_regions;
      s.largest_free_region = std::max(s.largest_free_region, N(n).size);
    }
  }
  if (s.free_bytes > 0) {
    s.fragmentation = 1.0 - static_cast<double>(s.largest_free_region) / static_cast<double>(s.free_bytes);
  }
  return s;
}

}  // namespace yb
