// BucketPolicy: which of the SSD tier's buckets go first when it evicts (storage_engine.h). The
// engine tells it what it knows of each bucket; the policy puts them in the order to evict.
// FIFO (the oldest written first) and LRU (the least recently read first) are built in.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "yuebing/status.h"

namespace yb::storage {

// What the engine knows of a bucket when it picks.
struct BucketStats {
  uint64_t id = 0;  // ascending in the order the buckets were written
  uint64_t bytes = 0;
  uint64_t last_read = 0;  // a counter over every write and read of the engine: larger is later
};

class BucketPolicy {
 public:
  virtual ~BucketPolicy() = default;
  virtual std::string_view name() const = 0;
  // Puts `buckets` (given in id order) in the order they are to be evicted, the first first.
  virtual void Order(std::vector<BucketStats>& buckets) const = 0;
};

// "fifo" or "lru" (SsdTierConfig::eviction_policy); INVALID_PARAMS naming both otherwise.
Result<std::unique_ptr<BucketPolicy>> MakeBucketPolicy(std::string_view name);

}  // namespace yb::storage
