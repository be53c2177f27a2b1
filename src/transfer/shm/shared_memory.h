// SharedMemory: memory of this process that another process of this host can map (each allocation
// its own memfd), found again by address. A dummy client (client/dummy.h) allocates its buffers
// here (Mooncake's MooncakeHostMemAllocator, alloc_from_mem_pool) so that its real client can move
// bytes straight into them; the relay names a byte by (region id, offset). Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>

#include "common/thread_annotations.h"
#include "transfer/local_segments.h"
#include "yuebing/status.h"

namespace yb::shm {

class SharedMemory {
 public:
  // The process's one instance (what the Python allocator and every dummy client of it share).
  static SharedMemory& Process();

  // `size` bytes (rounded up to pages), zeroed; nullptr when the memory cannot be had.
  void* Allocate(uint64_t size);
  // INVALID_PARAMS for an address Allocate did not give (or gave and took back).
  Status Free(void* ptr);
  // Adds a region mapped elsewhere (a dummy's staging buffer); it stays findable until Forget.
  void Adopt(std::shared_ptr<MappedRegion> region);
  void Forget(const MappedRegion* region);

  struct Found {
    std::shared_ptr<MappedRegion> region;
    uint64_t id = 0;      // stable for the region's life in this process
    uint64_t offset = 0;  // of the address in the region
  };
  // The region holding [ptr, ptr + n) whole; nullopt when none does.
  std::optional<Found> Find(const void* ptr, uint64_t n) const;
  uint64_t allocated_bytes() const;

 private:
  struct Entry {
    std::shared_ptr<MappedRegion> region;
    uint64_t id = 0;
    bool owned = false;  // given by Allocate (Free takes it back)
  };
  mutable Mutex mu_;
  std::map<uintptr_t, Entry> regions_ GUARDED_BY(mu_);  // by start address
  uint64_t next_id_ GUARDED_BY(mu_) = 1;
};

}  // namespace yb::shm
