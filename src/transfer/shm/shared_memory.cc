#include "transfer/shm/shared_memory.h"

#include <unistd.h>

namespace yb::shm {

SharedMemory& SharedMemory::Process() {
  static SharedMemory* one = new SharedMemory();  // never destroyed: callers may outlive statics
  return *one;
}

void* SharedMemory::Allocate(uint64_t size) {
  if (size == 0) return nullptr;
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  if (size > UINT64_MAX - page) return nullptr;
  auto region = MappedRegion::Map((size + page - 1) / page * page, /*populate=*/false, /*shareable=*/true);
  if (!region || region->fd() < 0) return nullptr;
  void* p = region->data();
  MutexLock lock(mu_);
  regions_[reinterpret_cast<uintptr_t>(p)] = Entry{std::move(region), next_id_++, true};
  return p;
}

Status SharedMemory::Free(void* ptr) {
  std::shared_ptr<MappedRegion> gone;  // unmapped outside the lock, once no transfer holds it
  MutexLock lock(mu_);
  auto it = regions_.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == regions_.end() || !it->second.owned) {
    return Status(Code::kInvalidParams, "free of an address this allocator did not give");
  }
  gone = std::move(it->second.region);
  regions_.erase(it);
  return Status::OK();
}

void SharedMemory::Adopt(std::shared_ptr<MappedRegion> region) {
  if (!region) return;
  MutexLock lock(mu_);
  const auto at = reinterpret_cast<uintptr_t>(region->data());
  regions_[at] = Entry{std::move(region), next_id_++, false};
}

void SharedMemory::Forget(const MappedRegion* region) {
  if (!region) return;
  MutexLock lock(mu_);
  auto it = regions_.find(reinterpret_cast<uintptr_t>(region->data()));
  if (it != regions_.end() && it->second.region.get() == region) regions_.erase(it);
}

std::optional<SharedMemory::Found> SharedMemory::Find(const void* ptr, uint64_t n) const {
  const auto p = reinterpret_cast<uintptr_t>(ptr);
  MutexLock lock(mu_);
  auto it = regions_.upper_bound(p);
  if (it == regions_.begin()) return std::nullopt;
  --it;
  const uint64_t off = p - it->first;
  const uint64_t size = it->second.region->size();
  if (off > size || n > size - off) return std::nullopt;
  return Found{it->second.region, it->second.id, off};
}

uint64_t SharedMemory::allocated_bytes() const {
  MutexLock lock(mu_);
  uint64_t total = 0;
  for (const auto& [at, e] : regions_) {
    if (e.owned) total += e.region->size();
  }
  return total;
}

}  // namespace yb::shm
