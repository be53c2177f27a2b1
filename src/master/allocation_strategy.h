// AllocationStrategy: the order in which segments are tried for one replica. One implementation
// per file, chosen by MasterConfig::allocation_strategy.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/random.h"
#include "yuebing/status.h"

namespace yb {

// What a strategy may look at: a snapshot of one segment.
struct SegmentCandidate {
  uint64_t capacity = 0;
  uint64_t free = 0;
};

class AllocationStrategy {
 public:
  virtual ~AllocationStrategy() = default;
  // Fills `order` with a permutation of [0, candidates.size()), most preferred first.
  virtual void Order(const std::vector<SegmentCandidate>& candidates, std::vector<uint32_t>& order) = 0;
};

// Uniformly random order (the default): spreads load without looking at usage.
std::unique_ptr<AllocationStrategy> MakeRandomStrategy(uint64_t seed);
// Highest free/capacity ratio first: keeps segments evenly filled.
std::unique_ptr<AllocationStrategy> MakeFreeRatioFirstStrategy();
// "random", "free_ratio_first" or "local_first" (random after the writer's own segments and its
// host's, which the master puts first); INVALID_PARAMS otherwise.
Result<std::unique_ptr<AllocationStrategy>> MakeAllocationStrategy(std::string_view name, uint64_t seed);

}  // namespace yb
