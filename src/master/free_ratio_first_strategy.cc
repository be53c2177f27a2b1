#include <algorithm>
#include <numeric>

#include "master/allocation_strategy.h"

namespace yb {
namespace {

class FreeRatioFirstStrategy final : public AllocationStrategy {
 public:
  void Order(const std::vector<SegmentCandidate>& candidates, std::vector<uint32_t>& order) override {
    order.resize(candidates.size());
    std::iota(order.begin(), order.end(), 0u);
    auto ratio = [&](uint32_t i) {
      const auto& c = candidates[i];
      return c.capacity == 0 ? 0.0 : static_cast<double>(c.free) / static_cast<double>(c.capacity);
    };
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return ratio(a) > ratio(b); });
  }
};

}  // namespace

std::unique_ptr<AllocationStrategy> MakeFreeRatioFirstStrategy() { return std::make_unique<FreeRatioFirstStrategy>(); }

}  // namespace yb
