// TransferEngine: routes each request to the first transport (in priority order: memcpy, then
// same-host, then network) that reaches its segment, and submits each transport's share as one
// batch. Thread-safe if its transports are.
#pragma once

#include <memory>
#include <vector>

#include "transfer/transport.h"

namespace yb {

class TransferEngine {
 public:
  void AddTransport(std::shared_ptr<Transport> t) { transports_.push_back(std::move(t)); }
  bool Reaches(SegmentId segment) const;
  // The transport a segment would use, or nullptr.
  Transport* Route(SegmentId segment) const;
  std::vector<Status> Submit(const std::vector<TransferRequest>& batch);
  // Transport::View of the segment's transport.
  const uint8_t* View(const TransferRequest& r, std::shared_ptr<const void>* keep) const;
  // Transport::Unreachable and Probe of the segment's transport.
  bool Unreachable(SegmentId segment) const;
  void Probe(SegmentId segment);

 private:
  std::vector<std::shared_ptr<Transport>> transports_;
};

}  // namespace yb
