// Client-side memory: the staging buffer (over local_buffer_size) and the set of buffers the
// application registered. Both thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "common/thread_annotations.h"
#include "master/offset_allocator.h"
#include "transfer/local_segments.h"
#include "yuebing/status.h"

namespace yb {

// Hands out ranges of the client's registered staging buffer.
class StagingBuffer {
 public:
  struct Lease {
    uint8_t* ptr = nullptr;
    uint64_t size = 0;
    uint32_t node = OffsetAllocator::kNoNode;
  };
  // size 0: no staging buffer (every Allocate fails). In memory another process of this host can
  // map (a memfd, in shm/shared_memory.h's registry) where it can be had, else anonymous memory;
  // `must_share`: shared or none (a dummy client's, which its real client moves bytes into).
  explicit StagingBuffer(uint64_t size, bool must_share = false);
  ~StagingBuffer();
  StagingBuffer(const StagingBuffer&) = delete;
  StagingBuffer& operator=(const StagingBuffer&) = delete;
  // A range of exactly `size` bytes, or nullopt when the buffer is too full or too small.
  std::optional<Lease> Allocate(uint64_t size);
  void Free(const Lease& lease);
  uint64_t capacity() const { return region_ ? region_->size() : 0; }
  bool Contains(const void* p, uint64_t len) const;

 private:
  std::shared_ptr<MappedRegion> region_;
  Mutex mu_;
  std::unique_ptr<OffsetAllocator> alloc_ GUARDED_BY(mu_);
  bool shared_ = false;
};

// The staging ranges of one batch: host values a transport cannot reach move through them together,
// in the batch's one submission, instead of one staged move each. At most half the buffer, so that
// the moves staged one at a time beside the batch (MoveStaged's two quarters) still find room.
// Every range goes back when this ends (or at Release()).
class StagingLeases {
 public:
  explicit StagingLeases(StagingBuffer& staging) : staging_(staging) {}
  ~StagingLeases() { Release(); }
  StagingLeases(const StagingLeases&) = delete;
  StagingLeases& operator=(const StagingLeases&) = delete;
  // A range of `size` bytes, or null when the batch's half is used up.
  uint8_t* Allocate(uint64_t size) {
    if (size == 0 || used_ + size > staging_.capacity() / 2) return nullptr;
    auto lease = staging_.Allocate(size);
    if (!lease) return nullptr;
    used_ += size;
    leases_.push_back(*lease);
    return lease->ptr;
  }
  void Release() {
    for (const auto& l : leases_) staging_.Free(l);
    leases_.clear();
    used_ = 0;
  }

 private:
  StagingBuffer& staging_;
  std::vector<StagingBuffer::Lease> leases_;
  uint64_t used_ = 0;
};

// Memory ranges the application registered (register_buffer).
class BufferRegistry {
 public:
  // INVALID_PARAMS for null/empty or a range overlapping another one; registering the same range
  // again is a no-op.
  Status Register(void* ptr, uint64_t size);
  Status Unregister(void* ptr);
  bool Contains(const void* p, uint64_t len) const;
  // INVALID_PARAMS when [p, p + len) starts inside a registered buffer and runs past its end (a
  // caller's offset or size is wrong: the bytes after it are someone else's); OK otherwise.
  Status CheckSpan(const void* p, uint64_t len) const;

 private:
  mutable Mutex mu_;
  std::map<uintptr_t, uint64_t> ranges_ GUARDED_BY(mu_);  // start -> size
};

}  // namespace yb
