#include "client/replica_order.h"

#include <algorithm>

namespace yb {

std::vector<GrantedReplica> OrderReplicas(const std::vector<GrantedReplica>& replicas,
                                          const std::function<bool(SegmentId)>& is_local) {
  auto rank = [&](const GrantedReplica& r) {
    switch (r.kind) {
      case ReplicaKind::kMemory:
        return is_local(r.segment) ? 0 : 1;
      case ReplicaKind::kLocalDisk:
        return is_local(r.segment) ? 2 : 3;  // our own SSD, then another node's
      default:
        return 4;
    }
  };
  std::vector<GrantedReplica> out = replicas;
  std::stable_sort(out.begin(), out.end(),
                   [&](const GrantedReplica& a, const GrantedReplica& b) { return rank(a) < rank(b); });
  return out;
}

}  // namespace yb
