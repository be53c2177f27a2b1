// FaultInjectingTransport: wraps a transport and fails or corrupts chosen transfers, so tests can
// exercise replica fail-over and checksum detection.
#pragma once

#include <functional>
#include <memory>
#include <set>

#include "common/thread_annotations.h"
#include "transfer/transport.h"

namespace yb {

class FaultInjectingTransport final : public Transport {
 public:
  explicit FaultInjectingTransport(std::shared_ptr<Transport> inner, bool requires_registration = false)
      : inner_(std::move(inner)), requires_registration_(requires_registration) {}
  std::string_view kind() const override { return inner_->kind(); }

  // Every transfer to or from `segment` fails with TRANSFER_FAIL.
  void FailSegment(SegmentId segment);
  // Reads from `segment` succeed but deliver a flipped first byte.
  void CorruptReadsFrom(SegmentId segment);
  // `hook` runs (outside the transport's lock) at the start of every Submit until cleared: a test
  // acts while a transfer is in flight.
  void OnSubmit(std::function<void()> hook);
  void Clear();
  // Local buffers seen by Submit(), to check staging.
  std::vector<void*> seen_local_buffers() const;

  bool Reaches(SegmentId segment) const override { return inner_->Reaches(segment); }
  std::vector<Status> Submit(const std::vector<TransferRequest>& batch) override;
  bool RequiresRegisteredMemory() const override { return requires_registration_; }
  // A failing or corrupting segment shows nothing in place (its reads go through Submit).
  const uint8_t* View(const TransferRequest& r, std::shared_ptr<const void>* keep) override;

 private:
  std::shared_ptr<Transport> inner_;
  bool requires_registration_;
  mutable Mutex mu_;
  std::set<SegmentId> failing_ GUARDED_BY(mu_);
  std::set<SegmentId> corrupt_ GUARDED_BY(mu_);
  std::vector<void*> seen_ GUARDED_BY(mu_);
  std::function<void()> hook_ GUARDED_BY(mu_);
};

}  // namespace yb
