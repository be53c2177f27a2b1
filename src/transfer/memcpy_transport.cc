#include "transfer/memcpy_transport.h"

#include <cstring>
#include <string>

namespace yb {

Status CheckBounds(const TransferRequest& r, uint64_t size) {
  if (r.length > 0 && r.local == nullptr) return Status(Code::kInvalidParams, "null local buffer");
  if (r.offset > size || r.length > size - r.offset) {
    return Status(Code::kInvalidParams, "range [" + std::to_string(r.offset) + ", +" + std::to_string(r.length) +
                                            ") is outside segment " + std::to_string(r.segment) + " of " +
                                            std::to_string(size) + " bytes");
  }
  return Status::OK();
}

std::vector<Status> MemcpyTransport::Submit(const std::vector<TransferRequest>& batch) {
  std::vector<Status> out;
  out.reserve(batch.size());
  for (const auto& r : batch) {
    LocalSegment seg = registry_->Find(r.segment);
    if (!seg.base) {
      out.emplace_back(Code::kTransferFail, "segment " + std::to_string(r.segment) + " is not in this process");
      continue;
    }
    Status st = CheckBounds(r, seg.size);
    if (st.ok() && r.length > 0) {
      if (r.op == TransferRequest::Op::kRead) {
        std::memcpy(r.local, seg.base + r.offset, r.length);
      } else {
        std::memcpy(seg.base + r.offset, r.local, r.length);
      }
    }
    out.push_back(std::move(st));
  }
  return out;
}

}  // namespace yb
