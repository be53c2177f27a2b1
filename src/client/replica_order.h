// The order in which a reader tries replicas (docs/design.md, section 3): MEMORY in this process first,
// then any MEMORY, then LOCAL_DISK, then DISK/DFS.
#pragma once

#include <functional>
#include <vector>

#include "common/internal_types.h"
#include "yuebing/types.h"

namespace yb {

// Stable: replicas of one rank keep the master's order.
std::vector<GrantedReplica> OrderReplicas(const std::vector<GrantedReplica>& replicas,
                                          const std::function<bool(SegmentId)>& is_local);

}  // namespace yb
