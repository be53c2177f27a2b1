// The data plane's one interface. A Transport moves bytes between this process's memory and a
// (segment, offset) range that some client mounted. Transports: memcpy (segment in this process),
// and, behind the same interface, TCP and shared memory; RDMA later, which is why requests are
// submitted as a batch and memory can be registered.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/checksum.h"
#include "common/internal_types.h"
#include "yuebing/status.h"
#include "yuebing/types.h"

namespace yb {

// Told of a read's bytes as they land in local memory, a chunk at a time: what a mover that copies
// them on (into GPU memory) starts on while the rest is still arriving. Called from any thread, from
// several at once for distinct chunks.
class LandingObserver {
 public:
  virtual ~LandingObserver() = default;
  // `n` bytes of the object from position `pos` are now at `p`.
  virtual void Landed(uint64_t pos, const void* p, uint64_t n) = 0;
};

struct TransferRequest {
  // read: segment -> local; write: local -> segment; read_object: a whole object, by key, from the
  // SSD tier of the client owning `segment` (a LOCAL_DISK replica) -> local.
  enum class Op : uint8_t { kRead, kWrite, kReadObject };
  Op op = Op::kRead;
  SegmentId segment = 0;
  uint64_t offset = 0;
  void* local = nullptr;
  uint64_t length = 0;
  const std::string* key = nullptr;  // kReadObject: the object's key on disk; outlives the Submit
  // The master's permission for the range (a replica's grant), which a segment served by another
  // process requires; a slice of the request carries the whole request's grant.
  Grant grant = {};
  // When set, the transport reports to it the bytes it moves, as object positions from
  // `object_pos` (where this request's first byte sits in the object), right after it received
  // them or right before it sends them: the object's checksum is computed while the bytes move.
  ChecksumSink* checksum = nullptr;
  uint64_t object_pos = 0;
  // kRead: told of each chunk (whole checksum chunks where it can) once it has landed.
  LandingObserver* landed = nullptr;
  // kRead into a range the master may give up once `grant` lapses (a copy's new replica): no byte
  // lands after that (on this host's wall clock).
  bool land_within_grant = false;
};

class Transport {
 public:
  virtual ~Transport() = default;
  // Whether this transport can reach the segment at all.
  virtual bool Reaches(SegmentId segment) const = 0;
  // What it moves bytes over, as metrics label it: "memory" (this process), "shm" (this host's
  // shared memory), "tcp", "relay" (a dummy's real client).
  virtual std::string_view kind() const { return "other"; }
  // Runs a batch; one Status per request, in order. A request outside its segment's bounds fails
  // with INVALID_PARAMS and touches no byte. The requests of a batch may run concurrently and in
  // any order: a batch must not write bytes that another of its requests reads or writes.
  virtual std::vector<Status> Submit(const std::vector<TransferRequest>& batch) = 0;
  // True when local memory must be registered (RDMA-like); callers then stage through the
  // client's registered buffer.
  virtual bool RequiresRegisteredMemory() const { return false; }
  // Whether it can move bytes to and from this local memory at all (a dummy client's relay reaches
  // only memory its real client mapped); callers stage through the client's buffer when not.
  virtual bool ReachesLocal(const void* /*p*/, uint64_t /*n*/) const { return true; }
  // Whether the segment's server is unreachable as far as this transport knows now (connections to
  // it fail or time out): a holder a client reports to the master (PingState::unreachable).
  virtual bool Unreachable(SegmentId /*segment*/) const { return false; }
  // Tries, in the background, to reach the segment's server again if it is unreachable and its next
  // attempt is due; its outcome is what Unreachable() says next.
  virtual void Probe(SegmentId /*segment*/) {}
  // The bytes a kRead of `r` would copy, where they already sit in memory this process maps: a
  // read-only pointer to [r.offset, r.offset + r.length) of r.segment, checked as that read would
  // be (bounds, and the grant where the transport checks one); `*keep` then holds the memory
  // mapped. nullptr when this transport cannot show them in place (the caller copies instead).
  virtual const uint8_t* View(const TransferRequest& /*r*/, std::shared_ptr<const void>* /*keep*/) { return nullptr; }
};

}  // namespace yb
