// LocalSegmentRegistry: the segments whose memory is mapped in this process, by id. Shared by the
// clients of one process (and the memcpy transport); a region stays mapped while any transfer
// holds it, so unmounting never pulls memory from under a copy. Thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>

#include "common/thread_annotations.h"
#include "yuebing/status.h"
#include "yuebing/types.h"

namespace yb {

// Memory mapped for a segment or a buffer; unmapped when the last holder lets go.
class MappedRegion {
 public:
  // Huge pages are asked for (MADV_HUGEPAGE). nullptr when the mapping fails. `populate` faults
  // every page in now, so that the first transfers into the memory do not pay for page faults; it
  // fails (nullptr) when the memory cannot be had, rather than leaving a later fault to the OOM
  // killer. `shareable`: backed by a memfd that another process of this host may map (fd(); the
  // same-host transport), else anonymous (also when the memfd cannot be made).
  static std::shared_ptr<MappedRegion> Map(uint64_t size, bool populate = false, bool shareable = false);
  // Another process's memfd of `size` bytes, mapped here (read and write); nullptr on failure.
  // Takes `fd` (closed once mapped).
  static std::shared_ptr<MappedRegion> MapShared(int fd, uint64_t size);
  // `size` bytes of the file at `path` from `offset` (a multiple of the page size), mapped shared,
  // read and write (Mooncake's mount_segment: a /dev/shm file, a DAX device). INVALID_PARAMS for a
  // range outside the file or an unaligned offset, FILE_OPEN_FAIL when it cannot be opened or
  // mapped. The file must not shrink while mapped: a touch past its end would be SIGBUS.
  static Result<std::shared_ptr<MappedRegion>> MapFile(const std::string& path, uint64_t offset, uint64_t size);
  ~MappedRegion();
  MappedRegion(const MappedRegion&) = delete;
  MappedRegion& operator=(const MappedRegion&) = delete;
  uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }
  // The memfd behind a shareable region; -1 for anonymous memory.
  int fd() const { return fd_; }

 private:
  MappedRegion(uint8_t* d, uint64_t s, int fd = -1) : data_(d), size_(s), fd_(fd) {}
  uint8_t* data_;
  uint64_t size_;
  int fd_;
};

// Whether shmem (memfd) memory gets transparent huge pages here: the bracketed word of
// `path` (/sys/kernel/mm/transparent_hugepage/shmem_enabled: "never", "advise", "always", ...), ""
// when it cannot be read. Without them, each process's first touch of each 4 KiB page of another
// process's segment is a page fault (docs/performance.md, "Same-host transfers").
std::string ShmemHugePages(const std::string& path = "/sys/kernel/mm/transparent_hugepage/shmem_enabled");
// Whether that mode gives a segment (which asks with MADV_HUGEPAGE) huge pages.
bool ShmemHugePagesOn(const std::string& mode);

struct LocalSegment {
  std::shared_ptr<MappedRegion> region;  // keeps the memory alive
  uint8_t* base = nullptr;               // start of this segment within the region
  uint64_t size = 0;
  // The key the master mints this segment's grants with (SegmentMount::grant_key): the transfer
  // server serves no request for a segment without one.
  std::string grant_key = {};
};

// Reads whole objects by key from a client's SSD tier: how LOCAL_DISK replicas are served.
class ObjectReader {
 public:
  virtual ~ObjectReader() = default;
  // Bytes read; OBJECT_NOT_FOUND if absent, CHECKSUM_MISMATCH if damaged, BUFFER_OVERFLOW if larger than `size`.
  virtual Result<uint64_t> ReadObject(const std::string& key, void* buffer, uint64_t size) = 0;
};

class LocalSegmentRegistry {
 public:
  void Add(SegmentId id, LocalSegment seg);
  void Remove(SegmentId id);
  // A copy of the entry (keeping its memory alive), or an entry with base == nullptr.
  LocalSegment Find(SegmentId id) const;
  bool Contains(SegmentId id) const;

  // The SSD tier whose LOCAL_DISK replicas name segment `id` (the owner's segment).
  void AddDisk(SegmentId id, std::shared_ptr<ObjectReader> reader);
  void RemoveDisk(SegmentId id);
  std::shared_ptr<ObjectReader> FindDisk(SegmentId id) const;

 private:
  mutable SharedMutex mu_;
  std::unordered_map<SegmentId, LocalSegment> segments_ GUARDED_BY(mu_);
  std::unordered_map<SegmentId, std::shared_ptr<ObjectReader>> disks_ GUARDED_BY(mu_);
};

}  // namespace yb
