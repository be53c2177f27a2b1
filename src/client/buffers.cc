#include "client/buffers.h"

#include "transfer/shm/shared_memory.h"

namespace yb {

StagingBuffer::StagingBuffer(uint64_t size, bool must_share) {
  if (size == 0) return;
  region_ = MappedRegion::Map(size, /*populate=*/false, /*shareable=*/true);
  if (must_share && region_ && region_->fd() < 0) region_.reset();  // a dummy's relay could not reach it
  if (!region_) return;
  MutexLock lock(mu_);
  alloc_ = std::make_unique<OffsetAllocator>(size, 64);
  if (region_->fd() >= 0) {
    shm::SharedMemory::Process().Adopt(region_);
    shared_ = true;
  }
}

StagingBuffer::~StagingBuffer() {
  if (shared_) shm::SharedMemory::Process().Forget(region_.get());
}

std::optional<StagingBuffer::Lease> StagingBuffer::Allocate(uint64_t size) {
  if (!region_ || size == 0) return std::nullopt;
  MutexLock lock(mu_);
  auto a = alloc_->Allocate(size);
  if (!a) return std::nullopt;
  return Lease{region_->data() + a->offset, size, a->node};
}

void StagingBuffer::Free(const Lease& lease) {
  if (!region_ || lease.node == OffsetAllocator::kNoNode) return;
  MutexLock lock(mu_);
  alloc_->Free(lease.node);
}

bool StagingBuffer::Contains(const void* p, uint64_t len) const {
  if (!region_) return false;
  auto a = reinterpret_cast<uintptr_t>(p), base = reinterpret_cast<uintptr_t>(region_->data());
  return a >= base && a - base <= region_->size() && len <= region_->size() - (a - base);
}

Status BufferRegistry::Register(void* ptr, uint64_t size) {
  if (!ptr || size == 0) return Status(Code::kInvalidParams, "register_buffer needs a non-null buffer and a size");
  auto start = reinterpret_cast<uintptr_t>(ptr);
  if (start + size < start) return Status(Code::kInvalidParams, "buffer range wraps around");
  MutexLock lock(mu_);
  auto it = ranges_.find(start);
  if (it != ranges_.end() && it->second == size) return Status::OK();
  auto next = ranges_.lower_bound(start);
  if (next != ranges_.end() && next->first < start + size) {
    return Status(Code::kInvalidParams, "buffer overlaps a registered buffer");
  }
  if (next != ranges_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second > start) return Status(Code::kInvalidParams, "buffer overlaps a registered buffer");
  }
  ranges_.emplace(start, size);
  return Status::OK();
}

Status BufferRegistry::Unregister(void* ptr) {
  MutexLock lock(mu_);
  if (ranges_.erase(reinterpret_cast<uintptr_t>(ptr)) == 0) {
    return Status(Code::kInvalidParams, "buffer was not registered");
  }
  return Status::OK();
}

bool BufferRegistry::Contains(const void* p, uint64_t len) const {
  auto a = reinterpret_cast<uintptr_t>(p);
  MutexLock lock(mu_);
  auto it = ranges_.upper_bound(a);
  if (it == ranges_.begin()) return false;
  --it;
  return a - it->first <= it->second && len <= it->second - (a - it->first);
}

Status BufferRegistry::CheckSpan(const void* p, uint64_t len) const {
  auto a = reinterpret_cast<uintptr_t>(p);
  MutexLock lock(mu_);
  auto it = ranges_.upper_bound(a);
  if (it == ranges_.begin()) return Status::OK();
  --it;
  const uint64_t at = a - it->first;
  if (at >= it->second || len <= it->second - at) return Status::OK();
  return Status(Code::kInvalidParams, "a range of " + std::to_string(len) + " bytes at offset " + std::to_string(at) +
                                          " of a registered buffer of " + std::to_string(it->second) +
                                          " bytes runs past its end");
}

}  // namespace yb
