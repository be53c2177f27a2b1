#include "transfer/local_segments.h"

#include <sys/mman.h>

#include <mutex>

namespace yb {

std::shared_ptr<MappedRegion> MappedRegion::Map(uint64_t size, bool populate) {
  if (size == 0) return nullptr;
  int flags = MAP_PRIVATE | MAP_ANONYMOUS | (populate ? MAP_POPULATE : MAP_NORESERVE);
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, flags, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  madvise(p, size, MADV_HUGEPAGE);
  return std::shared_ptr<MappedRegion>(new MappedRegion(static_cast<uint8_t*>(p), size));
}

MappedRegion::~MappedRegion() { munmap(data_, size_); }

void LocalSegmentRegistry::Add(SegmentId id, LocalSegment seg) {
  std::unique_lock lock(mu_);
  segments_[id] = std::move(seg);
}

void LocalSegmentRegistry::Remove(SegmentId id) {
  std::unique_lock lock(mu_);
  segments_.erase(id);
}

LocalSegment LocalSegmentRegistry::Find(SegmentId id) const {
  std::shared_lock lock(mu_);
  auto it = segments_.find(id);
  return it == segments_.end() ? LocalSegment{} : it->second;
}

bool LocalSegmentRegistry::Contains(SegmentId id) const {
  std::shared_lock lock(mu_);
  return segments_.count(id) != 0;
}

void LocalSegmentRegistry::AddDisk(SegmentId id, std::shared_ptr<ObjectReader> reader) {
  std::unique_lock lock(mu_);
  disks_[id] = std::move(reader);
}

void LocalSegmentRegistry::RemoveDisk(SegmentId id) {
  std::unique_lock lock(mu_);
  disks_.erase(id);
}

std::shared_ptr<ObjectReader> LocalSegmentRegistry::FindDisk(SegmentId id) const {
  std::shared_lock lock(mu_);
  auto it = disks_.find(id);
  return it == disks_.end() ? nullptr : it->second;
}

}  // namespace yb
