#include "transfer/transfer_engine.h"

#include <string>

#include "common/clock.h"

namespace yb {

void TransferEngine::AddTransport(std::shared_ptr<Transport> t) {
  auto c = std::make_unique<Counters>();
  c->kind = std::string(t->kind());
  size_t same = 0;
  for (const auto& o : counters_) same += o->kind == c->kind || o->kind.rfind(c->kind + "-", 0) == 0;
  if (same > 0) c->kind += "-" + std::to_string(same + 1);
  transports_.push_back(std::move(t));
  counters_.push_back(std::move(c));
}

std::vector<TransportUse> TransferEngine::uses() const {
  std::vector<TransportUse> out;
  for (const auto& c : counters_) {
    out.push_back({c->kind, c->requests.load(std::memory_order_relaxed), c->bytes.load(std::memory_order_relaxed),
                   c->failures.load(std::memory_order_relaxed), c->durations});
  }
  return out;
}

std::vector<Status> TransferEngine::SubmitTo(size_t t, const std::vector<TransferRequest>& batch) {
  Counters& c = *counters_[t];
  const int64_t start = MonotonicMicros();
  auto res = transports_[t]->Submit(batch);
  c.durations->Record(MicrosSince(start));
  uint64_t bytes = 0, failed = 0;
  for (size_t i = 0; i < batch.size(); ++i) {
    bytes += batch[i].length;
    failed += i < res.size() && !res[i].ok();
  }
  c.requests.fetch_add(batch.size(), std::memory_order_relaxed);
  c.bytes.fetch_add(bytes, std::memory_order_relaxed);
  c.failures.fetch_add(failed, std::memory_order_relaxed);
  return res;
}

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
  if (transports_.size() == 1 && !batch.empty()) return SubmitTo(0, batch);
  std::vector<std::vector<TransferRequest>> per(transports_.size());
  std::vector<std::vector<size_t>> where(transports_.size());
  // A batch's requests mostly name one segment (a value's slices, a batch of keys on one node):
  // each run of requests to one segment is routed once.
  SegmentId last = 0;
  size_t last_t = transports_.size() + 1;  // none yet
  for (size_t i = 0; i < batch.size(); ++i) {
    size_t t = 0;
    if (last_t <= transports_.size() && batch[i].segment == last) {
      t = last_t;
    } else {
      while (t < transports_.size() && !transports_[t]->Reaches(batch[i].segment)) ++t;
      last = batch[i].segment;
      last_t = t;
    }
    if (t == transports_.size()) {
      out[i] = Status(Code::kTransferFail, "no transport reaches segment " + std::to_string(batch[i].segment));
      continue;
    }
    per[t].push_back(batch[i]);
    where[t].push_back(i);
  }
  for (size_t t = 0; t < transports_.size(); ++t) {
    if (per[t].empty()) continue;
    auto res = SubmitTo(t, per[t]);
    for (size_t j = 0; j < res.size(); ++j) out[where[t][j]] = std::move(res[j]);
  }
  return out;
}

}  // namespace yb
