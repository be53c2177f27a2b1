// TransferEngine: routes each request to the first transport (in priority order: memcpy, then
// same-host, then network) that reaches its segment, and submits each transport's share as one
// batch, timing each batch per transport (TransportUse). Thread-safe if its transports are;
// transports are added before it is used from several threads.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "common/histogram.h"
#include "transfer/transport.h"

namespace yb {

class TransferEngine {
 public:
  void AddTransport(std::shared_ptr<Transport> t);
  // What each transport moved (yuebing/types.h), in priority order.
  std::vector<TransportUse> uses() const;
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
  struct Counters {
    std::string kind;
    std::shared_ptr<LatencyHistogram> durations = std::make_shared<LatencyHistogram>();
    std::atomic<uint64_t> requests{0}, bytes{0}, failures{0};
  };
  // Submits one transport's share, timed and counted.
  std::vector<Status> SubmitTo(size_t t, const std::vector<TransferRequest>& batch);

  std::vector<std::shared_ptr<Transport>> transports_;
  std::vector<std::unique_ptr<Counters>> counters_;  // one per transport
};

}  // namespace yb
