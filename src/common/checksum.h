// An object's checksum, and the pieces that let a transport compute it while the bytes move.
//
// The checksum of an object of `size` bytes is XXH3-64 of its bytes when it fits in one chunk
// (kChecksumChunk, 64 KiB); a larger object's is XXH3-64, seeded with `size`, of the XXH3-64 of
// each of its 64 KiB chunks in order (the last may be shorter), as little-endian u64s. Chunks are
// hashed on their own, so the pieces of a transfer that arrive in any order on several
// connections are each hashed as they land (in cache), and only the list is hashed at the end.
//
// XXH3 runs through xxHash's x86 dispatcher: AVX2 or AVX-512 where the CPU has them (about twice
// the SSE2 rate Debian's build defaults to).
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

namespace yb {

inline constexpr uint64_t kChecksumChunk = 64ULL << 10;

// XXH3-64 of `n` bytes (the dispatched implementation).
uint64_t Xxh3(const void* data, size_t n);

// How a transport copies a value's bytes: in steps of kCopyStep. On this project's machines (AMD
// EPYC, glibc 2.36) memcpy of 4 KiB steps from a source in cache beats one memcpy of the whole
// range (1 MiB in 48 us against 59-64 us, 4 MiB in 183-193 against 287-298: glibc's copy of large
// ranges bypasses the cache), and lets a checksum read each step's bytes once (CopyMoved).
inline constexpr uint64_t kCopyStep = 4096;
void CopyInSteps(void* to, const void* from, uint64_t n);

// The checksum of a contiguous object.
uint64_t ObjectChecksum(const void* data, uint64_t size);

// The chunk hashes of one object as a transfer moves it: a transport reports each range of the
// object's bytes that sits in memory it just filled (a read) or is about to send (a write), and a
// range that is a whole chunk is hashed then. Finish() hashes what no transport reported (a
// staged copy, chunks cut by a caller's buffer boundary) from the object's bytes and combines.
//
// Moved() may be called from several threads at once for distinct chunks; Finish() after they
// are done (the transfer's Submit returned).
class ChecksumSink {
 public:
  explicit ChecksumSink(uint64_t size = 0) { Reset(size); }
  void Reset(uint64_t size);
  uint64_t size() const { return size_; }
  // Every chunk was hashed as it moved: Finish() reads no byte again.
  bool complete() const;
  // `n` bytes of the object from position `pos` are at `p`. Any range: it is cut at chunk bounds.
  void Moved(uint64_t pos, const void* p, uint64_t n);
  // Copies `n` bytes of the object from position `pos` from `from` to `to` (CopyInSteps) and hashes
  // them as Moved() would, step by step while each step is in the first-level cache: a 1 MiB value
  // is copied and hashed in about the time of its copy alone (49 us against 48 us, where hashing
  // each 64 KiB chunk then copying it took 72-74 us). A write hashes what it copies from (the
  // caller's bytes, before they are copied); a read (`hash_copy`) hashes the copy, after it is
  // made: the bytes the caller gets are the bytes checked, even where the source could change.
  void CopyMoved(uint64_t pos, void* to, const void* from, uint64_t n, bool hash_copy);
  // The object's checksum; `pieces` (pointer, length) hold its bytes in order.
  template <typename Piece>
  uint64_t Finish(const std::vector<Piece>& pieces) {
    uint64_t pos = 0;
    for (const auto& s : pieces) {
      FillMissing(pos, s.ptr, s.size);
      pos += s.size;
    }
    return Combine();
  }

 private:
  uint64_t ChunkLength(uint64_t chunk) const;
  // Hashes the whole chunks of [pos, pos + n) not yet hashed; a chunk split between two pieces is
  // gathered in `partial_`.
  void FillMissing(uint64_t pos, const void* p, uint64_t n);
  uint64_t Combine() const;

  uint64_t size_ = 0;
  std::vector<uint64_t> hashes_;
  std::vector<uint8_t> done_;  // one byte per chunk: distinct threads write distinct bytes
  std::vector<uint8_t> partial_;
};

}  // namespace yb
