#include "storage/bucket_policy.h"

#include <algorithm>
#include <string>

namespace yb::storage {
namespace {

class Fifo final : public BucketPolicy {
 public:
  std::string_view name() const override { return "fifo"; }
  void Order(std::vector<BucketStats>&) const override {}  // id order is write order
};

class Lru final : public BucketPolicy {
 public:
  std::string_view name() const override { return "lru"; }
  void Order(std::vector<BucketStats>& buckets) const override {
    std::stable_sort(buckets.begin(), buckets.end(),
                     [](const BucketStats& a, const BucketStats& b) { return a.last_read < b.last_read; });
  }
};

}  // namespace

Result<std::unique_ptr<BucketPolicy>> MakeBucketPolicy(std::string_view name) {
  if (name == "fifo") return std::unique_ptr<BucketPolicy>(std::make_unique<Fifo>());
  if (name == "lru") return std::unique_ptr<BucketPolicy>(std::make_unique<Lru>());
  return Status(Code::kInvalidParams, "bucket eviction policy must be fifo or lru, not '" + std::string(name) + "'");
}

}  // namespace yb::storage
