#include <numeric>

#include "master/allocation_strategy.h"

namespace yb {
namespace {

class RandomStrategy final : public AllocationStrategy {
 public:
  explicit RandomStrategy(uint64_t seed) : rng_(seed) {}
  void Order(const std::vector<SegmentCandidate>& candidates, std::vector<uint32_t>& order) override {
    order.resize(candidates.size());
    std::iota(order.begin(), order.end(), 0u);
    for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng_.Uniform(i)]);
  }

 private:
  Random rng_;
};

}  // namespace

std::unique_ptr<AllocationStrategy> MakeRandomStrategy(uint64_t seed) { return std::make_unique<RandomStrategy>(seed); }

Result<std::unique_ptr<AllocationStrategy>> MakeAllocationStrategy(std::string_view name, uint64_t seed) {
  // local_first: the writer's own segments, then its host's (MasterService::Reserve), then random.
  if (name == "random" || name == "local_first") return MakeRandomStrategy(seed);
  if (name == "free_ratio_first") return MakeFreeRatioFirstStrategy();
  return Status(Code::kInvalidParams,
                "unknown allocation strategy '" + std::string(name) + "' (random, free_ratio_first, local_first)");
}

}  // namespace yb
