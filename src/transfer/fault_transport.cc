#include "transfer/fault_transport.h"

namespace yb {

void FaultInjectingTransport::FailSegment(SegmentId segment) {
  MutexLock lock(mu_);
  failing_.insert(segment);
}

void FaultInjectingTransport::CorruptReadsFrom(SegmentId segment) {
  MutexLock lock(mu_);
  corrupt_.insert(segment);
}

void FaultInjectingTransport::Clear() {
  MutexLock lock(mu_);
  failing_.clear();
  corrupt_.clear();
  hook_ = nullptr;
}

std::vector<void*> FaultInjectingTransport::seen_local_buffers() const {
  MutexLock lock(mu_);
  return seen_;
}

void FaultInjectingTransport::OnSubmit(std::function<void()> hook) {
  MutexLock lock(mu_);
  hook_ = std::move(hook);
}

const uint8_t* FaultInjectingTransport::View(const TransferRequest& r, std::shared_ptr<const void>* keep) {
  {
    MutexLock lock(mu_);
    if (failing_.count(r.segment) || corrupt_.count(r.segment)) return nullptr;
  }
  return inner_->View(r, keep);
}

std::vector<Status> FaultInjectingTransport::Submit(const std::vector<TransferRequest>& batch) {
  std::function<void()> hook;
  {
    MutexLock lock(mu_);
    hook = hook_;
  }
  if (hook) hook();
  std::vector<Status> out(batch.size());
  std::vector<TransferRequest> pass;
  std::vector<size_t> where;
  {
    MutexLock lock(mu_);
    for (size_t i = 0; i < batch.size(); ++i) {
      seen_.push_back(batch[i].local);
      if (failing_.count(batch[i].segment)) {
        out[i] = Status(Code::kTransferFail, "injected failure");
      } else {
        pass.push_back(batch[i]);
        where.push_back(i);
        // A damaged segment: what the reader hashes is what arrives, so the sink is fed below,
        // after the damage.
        if (batch[i].op == TransferRequest::Op::kRead && corrupt_.count(batch[i].segment)) {
          pass.back().checksum = nullptr;
          pass.back().landed = nullptr;
        }
      }
    }
  }
  auto inner = inner_->Submit(pass);
  MutexLock lock(mu_);
  for (size_t j = 0; j < pass.size(); ++j) {
    out[where[j]] = inner[j];
    const auto& r = pass[j];
    if (inner[j].ok() && r.op == TransferRequest::Op::kRead && r.length > 0 && corrupt_.count(r.segment)) {
      static_cast<uint8_t*>(r.local)[0] ^= 0xFF;
      const auto& original = batch[where[j]];
      if (original.checksum) original.checksum->Moved(original.object_pos, original.local, original.length);
      if (original.landed) original.landed->Landed(original.object_pos, original.local, original.length);
    }
  }
  return out;
}

}  // namespace yb
