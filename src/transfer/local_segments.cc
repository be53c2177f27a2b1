#include "transfer/local_segments.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

namespace yb {

namespace {

// Faults every page of [p, p + size) in for writing. False when the memory cannot be had.
bool Populate(void* p, uint64_t size) {
#ifdef MADV_POPULATE_WRITE
  // In pieces: the process's memory map stays locked while a piece is faulted in, and at worst
  // (huge pages waiting for compaction) a GiB takes seconds. Any other thread that faults a page
  // or maps memory meanwhile waits, so a client's heartbeat would go silent for that long.
  constexpr uint64_t kPiece = 64ull << 20;
  auto* start = static_cast<uint8_t*>(p);
  uint64_t done = 0;
  for (; done < size; done += kPiece) {
    if (madvise(start + done, std::min(kPiece, size - done), MADV_POPULATE_WRITE) != 0) break;
  }
  if (done >= size) return true;
  if (errno != EINVAL || done > 0) return false;  // ENOMEM, or a fault: the memory is not there
#endif
  // A kernel before 5.14: one write per page does the same, a fault at a time.
  const long page = sysconf(_SC_PAGESIZE);
  auto* bytes = static_cast<volatile uint8_t*>(p);
  for (uint64_t off = 0; off < size; off += static_cast<uint64_t>(page)) bytes[off] = 0;
  return true;
}

}  // namespace

std::shared_ptr<MappedRegion> MappedRegion::Map(uint64_t size, bool populate, bool shareable) {
  if (size == 0) return nullptr;
  if (shareable) {
    // A memfd: pages another process of this host can map too (shmem; huge ones where
    // shmem_enabled allows). Without one (an old kernel, a seccomp filter), anonymous memory.
    int fd = memfd_create("yuebing-segment", MFD_CLOEXEC);
    if (fd >= 0 && ftruncate(fd, static_cast<off_t>(size)) == 0) {
      void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | (populate ? 0 : MAP_NORESERVE), fd, 0);
      if (p != MAP_FAILED) {
        madvise(p, size, MADV_HUGEPAGE);
        if (populate && !Populate(p, size)) {
          munmap(p, size);
          close(fd);
          return nullptr;
        }
        return std::shared_ptr<MappedRegion>(new MappedRegion(static_cast<uint8_t*>(p), size, fd));
      }
    }
    if (fd >= 0) close(fd);
  }
  // Without MAP_POPULATE: pages faulted in before the madvise below would be 4 KiB ones, and
  // khugepaged would then spend minutes merging them in the background, slowing transfers while
  // it does. Advised first, the faults take transparent huge pages wherever the system allows
  // them (transparent_hugepage "madvise" or "always"): 512 times fewer faults and TLB entries.
  int flags = MAP_PRIVATE | MAP_ANONYMOUS | (populate ? 0 : MAP_NORESERVE);
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, flags, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  madvise(p, size, MADV_HUGEPAGE);  // a hint: without THP the pages stay small
  if (populate && !Populate(p, size)) {
    munmap(p, size);
    return nullptr;
  }
  return std::shared_ptr<MappedRegion>(new MappedRegion(static_cast<uint8_t*>(p), size));
}

std::shared_ptr<MappedRegion> MappedRegion::MapShared(int fd, uint64_t size) {
  struct stat st {};
  // Smaller than said: a touch past its end would be SIGBUS.
  const bool fits = fstat(fd, &st) == 0 && st.st_size >= 0 && static_cast<uint64_t>(st.st_size) >= size;
  void* p = size == 0 || !fits ? MAP_FAILED : mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) return nullptr;
  madvise(p, size, MADV_HUGEPAGE);  // taken where transparent_hugepage/shmem_enabled allows ("advise")
  return std::shared_ptr<MappedRegion>(new MappedRegion(static_cast<uint8_t*>(p), size));
}

Result<std::shared_ptr<MappedRegion>> MappedRegion::MapFile(const std::string& path, uint64_t offset,
                                                            uint64_t size) {
  const auto page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  if (size == 0) return Status(Code::kInvalidParams, "mount_segment: a segment of 0 bytes");
  if (offset % page != 0) {
    return Status(Code::kInvalidParams, "mount_segment: offset " + std::to_string(offset) +
                                            " is not a multiple of the page size (" + std::to_string(page) + ")");
  }
  const int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return Status(Code::kFileOpenFail, "mount_segment: cannot open " + path + ": " + std::strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    const int e = errno;
    close(fd);
    return Status(Code::kFileOpenFail, "mount_segment: cannot stat " + path + ": " + std::strerror(e));
  }
  // A regular file must hold the range (a device's size is not in st_size: the mapping says).
  if (S_ISREG(st.st_mode) && (offset > static_cast<uint64_t>(st.st_size) || size > st.st_size - offset)) {
    close(fd);
    return Status(Code::kInvalidParams, "mount_segment: [" + std::to_string(offset) + ", +" + std::to_string(size) +
                                            ") is outside " + path + " (" + std::to_string(st.st_size) + " bytes)");
  }
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, static_cast<off_t>(offset));
  const int e = errno;
  close(fd);  // the mapping keeps the file
  if (p == MAP_FAILED) return Status(Code::kFileOpenFail, "mount_segment: cannot map " + path + ": " + std::strerror(e));
  madvise(p, size, MADV_HUGEPAGE);
  return std::shared_ptr<MappedRegion>(new MappedRegion(static_cast<uint8_t*>(p), size));
}

std::string ShmemHugePages(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!std::getline(in, line)) return "";
  const size_t open = line.find('['), close = line.find(']', open);
  return open == std::string::npos || close == std::string::npos ? "" : line.substr(open + 1, close - open - 1);
}

bool ShmemHugePagesOn(const std::string& mode) {
  return mode == "advise" || mode == "always" || mode == "within_size" || mode == "force";
}

MappedRegion::~MappedRegion() {
  munmap(data_, size_);
  if (fd_ >= 0) close(fd_);
}

void LocalSegmentRegistry::Add(SegmentId id, LocalSegment seg) {
  WriterLock lock(mu_);
  segments_[id] = std::move(seg);
}

void LocalSegmentRegistry::Remove(SegmentId id) {
  WriterLock lock(mu_);
  segments_.erase(id);
}

LocalSegment LocalSegmentRegistry::Find(SegmentId id) const {
  ReaderLock lock(mu_);
  auto it = segments_.find(id);
  return it == segments_.end() ? LocalSegment{} : it->second;
}

bool LocalSegmentRegistry::Contains(SegmentId id) const {
  ReaderLock lock(mu_);
  return segments_.count(id) != 0;
}

void LocalSegmentRegistry::AddDisk(SegmentId id, std::shared_ptr<ObjectReader> reader) {
  WriterLock lock(mu_);
  disks_[id] = std::move(reader);
}

void LocalSegmentRegistry::RemoveDisk(SegmentId id) {
  WriterLock lock(mu_);
  disks_.erase(id);
}

std::shared_ptr<ObjectReader> LocalSegmentRegistry::FindDisk(SegmentId id) const {
  ReaderLock lock(mu_);
  auto it = disks_.find(id);
  return it == disks_.end() ? nullptr : it->second;
}

}  // namespace yb
