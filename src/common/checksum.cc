#include "common/checksum.h"

#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t, to hash a chunk in steps
#include <xxh_x86dispatch.h>
#include <xxhash.h>

#include <algorithm>
#include <cstring>

namespace yb {

uint64_t Xxh3(const void* data, size_t n) { return XXH3_64bits_dispatch(data, n); }

namespace {

uint64_t CombineHashes(const std::vector<uint64_t>& hashes, uint64_t size) {
  if (hashes.size() == 1) return hashes[0];
  static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "chunk hashes are combined as little-endian u64s");
  return XXH3_64bits_withSeed_dispatch(hashes.data(), hashes.size() * sizeof(uint64_t), size);
}

uint64_t Chunks(uint64_t size) { return size == 0 ? 1 : (size + kChecksumChunk - 1) / kChecksumChunk; }

}  // namespace

uint64_t ObjectChecksum(const void* data, uint64_t size) {
  if (size <= kChecksumChunk) return Xxh3(data, size);
  std::vector<uint64_t> hashes(Chunks(size));
  const auto* p = static_cast<const uint8_t*>(data);
  for (uint64_t c = 0; c < hashes.size(); ++c) {
    hashes[c] = Xxh3(p + c * kChecksumChunk, std::min(kChecksumChunk, size - c * kChecksumChunk));
  }
  return CombineHashes(hashes, size);
}

void ChecksumSink::Reset(uint64_t size) {
  size_ = size;
  hashes_.assign(Chunks(size), 0);
  done_.assign(hashes_.size(), 0);
  if (size == 0) {
    hashes_[0] = Xxh3(nullptr, 0);
    done_[0] = 1;
  }
}

uint64_t ChecksumSink::ChunkLength(uint64_t chunk) const {
  return std::min(kChecksumChunk, size_ - std::min(size_, chunk * kChecksumChunk));
}

void ChecksumSink::Moved(uint64_t pos, const void* p, uint64_t n) {
  const auto* bytes = static_cast<const uint8_t*>(p);
  const uint64_t end = std::min(size_, pos + n);
  // The first chunk boundary at or after pos: only whole chunks are hashed here.
  for (uint64_t at = (pos + kChecksumChunk - 1) / kChecksumChunk * kChecksumChunk; at < end; at += kChecksumChunk) {
    const uint64_t c = at / kChecksumChunk;
    const uint64_t len = ChunkLength(c);
    if (at + len > end) break;
    hashes_[c] = Xxh3(bytes + (at - pos), len);
    done_[c] = 1;
  }
}

void CopyInSteps(void* to, const void* from, uint64_t n) {
  auto* d = static_cast<uint8_t*>(to);
  const auto* s = static_cast<const uint8_t*>(from);
  for (uint64_t done = 0; done < n; done += kCopyStep) std::memcpy(d + done, s + done, std::min(kCopyStep, n - done));
}

void ChecksumSink::CopyMoved(uint64_t pos, void* to, const void* from, uint64_t n, bool hash_copy) {
  auto* d = static_cast<uint8_t*>(to);
  const auto* s = static_cast<const uint8_t*>(from);
  const uint64_t end = std::min(size_, pos + n);
  // The whole chunks within [pos, end), as Moved() takes them; the bytes around them are copied
  // only (Finish hashes them from the object's bytes).
  uint64_t at = (pos + kChecksumChunk - 1) / kChecksumChunk * kChecksumChunk;
  alignas(64) XXH3_state_t state;
  for (; at < end; at += kChecksumChunk) {
    const uint64_t c = at / kChecksumChunk;
    const uint64_t len = ChunkLength(c);
    if (at + len > end) break;
    const uint64_t off = at - pos;
    XXH3_64bits_reset(&state);
    for (uint64_t q = 0; q < len; q += kCopyStep) {
      const uint64_t step = std::min(kCopyStep, len - q);
      if (hash_copy) {
        std::memcpy(d + off + q, s + off + q, step);
        XXH3_64bits_update_dispatch(&state, d + off + q, step);
      } else {
        XXH3_64bits_update_dispatch(&state, s + off + q, step);
        std::memcpy(d + off + q, s + off + q, step);
      }
    }
    hashes_[c] = XXH3_64bits_digest(&state);
    done_[c] = 1;
  }
  // What no whole chunk covered: before the first (or all of it) and after the last.
  const uint64_t first = std::min(n, ((pos + kChecksumChunk - 1) / kChecksumChunk * kChecksumChunk) - pos);
  const uint64_t hashed_end = std::max(first, std::min(n, at - pos));
  CopyInSteps(d, s, first);
  CopyInSteps(d + hashed_end, s + hashed_end, n - hashed_end);
}

void ChecksumSink::FillMissing(uint64_t pos, const void* p, uint64_t n) {
  const auto* bytes = static_cast<const uint8_t*>(p);
  for (uint64_t off = 0; off < n;) {
    const uint64_t at = pos + off;
    if (at >= size_) return;
    const uint64_t c = at / kChecksumChunk;
    const uint64_t chunk_start = c * kChecksumChunk;
    const uint64_t chunk_end = chunk_start + ChunkLength(c);
    const uint64_t take = std::min(n - off, chunk_end - at);
    if (!done_[c]) {
      if (at == chunk_start && take == chunk_end - chunk_start) {
        hashes_[c] = Xxh3(bytes + off, take);
        done_[c] = 1;
      } else {  // the chunk continues in the next piece
        if (at == chunk_start) partial_.clear();
        partial_.insert(partial_.end(), bytes + off, bytes + off + take);
        if (at + take == chunk_end) {
          hashes_[c] = Xxh3(partial_.data(), partial_.size());
          done_[c] = 1;
          partial_.clear();
        }
      }
    }
    off += take;
  }
}

bool ChecksumSink::complete() const {
  return std::all_of(done_.begin(), done_.end(), [](uint8_t d) { return d != 0; });
}

uint64_t ChecksumSink::Combine() const { return CombineHashes(hashes_, size_); }

}  // namespace yb
