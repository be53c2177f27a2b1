// ShmTransport: moves the bytes of segments that another process of this host serves with one
// memcpy, through that process's memory mapped here (shm_server.h). A segment is mapped the first
// time a request names it, and stays mapped while the directory still knows it; an endpoint whose
// owner is not on this host (no such socket in this network namespace), refuses us, or serves the
// segment from memory it cannot share, is left to the next transport (TCP) and asked again only
// after a pause. A mapping is dropped once its owner's process has died (the connection it was
// given on ends), so that no write lands in memory nobody will serve: the next transport then
// fails, and the write goes elsewhere, as over TCP. Every request is checked against its grant exactly as the owner's transfer server
// checks it (range, access, expiry, MAC with the segment's key), so a stale or lapsed grant moves
// nothing here either. SSD tier reads (kReadObject) go to `fallback`. Thread-safe.
#pragma once

#include <sys/uio.h>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/clock.h"
#include "common/thread_annotations.h"
#include "transfer/local_segments.h"
#include "transfer/transport.h"

namespace yb::shm {

class ShmTransport final : public Transport {
 public:
  std::string_view kind() const override { return "shm"; }
  using Resolver = std::function<std::optional<std::string>(SegmentId)>;
  struct Options {
    // The data-plane key this process proves (the owner checks it when it has a secret); read at
    // each new mapping (a client given its key at registration has it only then).
    std::function<std::string()> data_key;
    const Clock* clock = nullptr;       // for the pauses; null: the steady clock
    const Clock* wall_clock = nullptr;  // grants' expiry, Unix ms; null: WallMs()
    TimeMs retry_ms = 30000;            // an endpoint not mapped is asked again after this
    // The segment owner's host identity as the master lists it ("" unknown), and ours: a segment
    // of another host is left to the next transport without a try.
    std::function<std::string(SegmentId)> host_of;
    std::string my_host;
    // Where the host says whether shmem has huge pages (ShmemHugePages; "": the kernel's file).
    // With them, writes go through the mapping; without, through the owner's memfd.
    std::string shmem_huge_pages_path;
  };
  ShmTransport(Resolver resolver, std::shared_ptr<Transport> fallback, Options options);

  bool Reaches(SegmentId segment) const override;
  std::vector<Status> Submit(const std::vector<TransferRequest>& batch) override;
  bool Unreachable(SegmentId segment) const override;
  void Probe(SegmentId segment) override;
  const uint8_t* View(const TransferRequest& r, std::shared_ptr<const void>* keep) override;

  size_t mapped_segments() const;
  // Bytes written through owners' memfds (the rest of the writes went through the mappings).
  uint64_t memfd_written_bytes() const { return memfd_written_.load(std::memory_order_relaxed); }
  // The system calls that wrote them.
  uint64_t memfd_writes() const { return memfd_writes_.load(std::memory_order_relaxed); }

 private:
  struct Mapped {
    std::shared_ptr<MappedRegion> region;
    uint8_t* base = nullptr;
    uint64_t size = 0;
    std::string grant_key;
    int alive = -1;  // the connection to the owner: it ends when the owner's process does
    // Seen ended after a write (Submit): the next lookup drops the mapping.
    mutable std::atomic<bool> dead{false};
    int fd = -1;             // the owner's memfd, written through (WriteAt)
    uint64_t fd_offset = 0;  // of the segment in it
    Mapped() = default;
    Mapped(Mapped&& o) noexcept
        : region(std::move(o.region)),
          base(o.base),
          size(o.size),
          grant_key(std::move(o.grant_key)),
          alive(o.alive),
          dead(o.dead.load()),
          fd(o.fd),
          fd_offset(o.fd_offset) {
      o.alive = -1;
      o.fd = -1;
    }
    Mapped(const Mapped&) = delete;
    ~Mapped();
    // Whether the owner's process still lives (its end of `alive` is open): a system call, asked
    // once per Submit that wrote here.
    bool OwnerAlive() const;
  };
  // The segment's mapping, made now if it can be (nullopt: not here).
  std::shared_ptr<const Mapped> Find(SegmentId segment) const;
  // Asks the owner at `endpoint` for the segment's memory; a mapping, or why not.
  Result<Mapped> Attach(SegmentId segment, const std::string& endpoint) const;
  // Checks `r` against the segment's size and its grant, as the owner's transfer server would.
  Status Admit(const TransferRequest& r, const Mapped& m) const;
  Status Move(const TransferRequest& r, const Mapped& m) const;
  // A small write through the memfd (m.fd >= 0), admitted and hashed but not moved yet: Submit
  // writes those of a batch together (WriteStaged), each run of them adjacent in a segment with
  // one system call rather than one each.
  Status Stage(const TransferRequest& r, const Mapped& m) const;
  struct Staged {
    const Mapped* m;  // held by the Submit that staged it
    size_t index;     // in the batch
  };
  void WriteStaged(const std::vector<TransferRequest>& batch, const std::vector<Staged>& staged,
                   std::vector<Status>& out) const;
  // `iov`'s bytes, in order, into the segment from `offset` on, through its memfd (m.fd >= 0).
  Status WriteAt(const Mapped& m, uint64_t offset, std::vector<iovec> iov) const;
  TimeMs Now() const;
  int64_t Wall() const;

  const Resolver resolver_;
  const std::shared_ptr<Transport> fallback_;
  const Options options_;
  mutable Mutex mu_;
  mutable std::unordered_map<SegmentId, std::shared_ptr<const Mapped>> mapped_ GUARDED_BY(mu_);
  // Endpoint (or "endpoint#segment" for a segment it does not share) -> when to ask again.
  mutable std::map<std::string, TimeMs> not_here_ GUARDED_BY(mu_);
  mutable TimeMs last_sweep_ GUARDED_BY(mu_) = 0;
  mutable std::atomic<uint64_t> memfd_written_{0};
  mutable std::atomic<uint64_t> memfd_writes_{0};
};

}  // namespace yb::shm
