#include "transfer/transfer_engine.h"

#include <string>

namespace yb {

Transport* TransferEngine::Route(SegmentId segment) const {
  for (const auto& t : transports_) {
    if (t->Reaches(segment)) return t.get();
  }
  return nullptr;
}

bool TransferEngine::Reaches(SegmentId segment) const { return Route(segment) != nullptr; }

bool TransferEngine::Unreachable(SegmentId segment) const {
  const Transport* t = Route(segment);
  return t && t->Unreachable(segment);
}

const uint8_t* TransferEngine::View(const TransferRequest& r, std::shared_ptr<const void>* keep) const {
  Transport* t = Route(r.segment);
  return t ? t->View(r, keep) : nullptr;
}

void TransferEngine::Probe(SegmentId segment) {
  if (Transport* t = Route(segment)) t->Probe(segment);
}

std::vector<Status> TransferEngine::Submit(const std::vector<TransferRequest>& batch) {
  std::vector<Status> out(batch.size());
  if (transports_.size() == 1 && !batch.empty()) return transports_[0]->Submit(batch);
  std::vector<std::vector<TransferRequest>> per(transports_.size());
  std::vector<std::vector<size_t>> where(transports_.size());
  for (size_t i = 0; i < batch.size(); ++i) {
    size_t t = 0;
    while (t < transports_.size() && !transports_[t]->Reaches(batch[i].segment)) ++t;
    if (t == transports_.size()) {
      out[i] = Status(Code::kTransferFail, "no transport reaches segment " + std::to_string(batch[i].segment));
      continue;
    }
    per[t].push_back(batch[i]);
    where[t].push_back(i);
  }
  for (size_t t = 0; t < transports_.size(); ++t) {
    if (per[t].empty()) continue;
    auto res = transports_[t]->Submit(per[t]);
    for (size_t j = 0; j < res.size(); ++j) out[where[t][j]] = std::move(res[j]);
  }
  return out;
}

}  // namespace yb
