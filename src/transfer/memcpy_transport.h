// MemcpyTransport: segments mapped in this process, moved by memcpy with bounds checks.
#pragma once

#include <memory>

#include "transfer/local_segments.h"
#include "transfer/transport.h"

namespace yb {

class MemcpyTransport final : public Transport {
 public:
  std::string_view kind() const override { return "memory"; }
  explicit MemcpyTransport(std::shared_ptr<LocalSegmentRegistry> registry) : registry_(std::move(registry)) {}
  bool Reaches(SegmentId segment) const override { return registry_->Contains(segment); }
  std::vector<Status> Submit(const std::vector<TransferRequest>& batch) override;
  const uint8_t* View(const TransferRequest& r, std::shared_ptr<const void>* keep) override;

 private:
  std::shared_ptr<LocalSegmentRegistry> registry_;
};

// Checks a request against a segment of `size` bytes: INVALID_PARAMS when out of bounds.
Status CheckBounds(const TransferRequest& r, uint64_t size);
// Serves a kReadObject request from the registry's SSD tier for r.segment.
Status ReadObjectFrom(const LocalSegmentRegistry& registry, const TransferRequest& r);

}  // namespace yb
