// The internal side of yuebing/types.h: what the master, the clients and their wire carry about
// segments and replicas that a caller never passes or reads. The public types are the bases, so a
// caller's view of one is a plain copy (slice) of it.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "yuebing/types.h"

namespace yb {

// A capability (docs/security.md): what the master lets the bearer move through a segment owner's
// transfer server. The master mints it with a key only it and the owner know (common/grant.h); the
// owner checks it before it moves a byte.
enum class GrantAccess : uint8_t { kNone = 0, kRead = 1, kWrite = 2, kReadObject = 3 };
struct Grant {
  GrantAccess access = GrantAccess::kNone;  // kNone: no grant (in-process segments need none)
  uint64_t offset = 0;                      // the range of the segment it covers
  uint64_t length = 0;
  int64_t expires_ms = 0;  // Unix time, in milliseconds
  std::array<uint8_t, 16> mac{};
};

// A replica as the master hands it out for one call: where it lives, and the grant to move its
// bytes (read for a Get, write for a Put's reservation).
struct GrantedReplica : ReplicaDesc {
  Grant grant = {};
};

// A segment as its owner mounts it and the master keeps it.
struct SegmentMount : SegmentDesc {
  // The memory behind the segment: a random number the owner draws when it maps the memory. A
  // master that restarted keeps the objects of a segment re-mounted with the same id and
  // incarnation (the owner kept its memory), and drops them otherwise.
  uint64_t incarnation = 0;
  // The key the master mints this segment's grants with (kGrantKeySize random bytes the owner draws
  // at mount). Secret: the master never lists it (a listing carries the SegmentDesc only).
  std::string grant_key = {};
};

}  // namespace yb
