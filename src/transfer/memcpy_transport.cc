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

Status ReadObjectFrom(const LocalSegmentRegistry& registry, const TransferRequest& r) {
  if (!r.key) return Status(Code::kInvalidParams, "object read without a key");
  if (r.length > 0 && !r.local) return Status(Code::kInvalidParams, "null local buffer");
  auto disk = registry.FindDisk(r.segment);
  if (!disk) return Status(Code::kObjectNotFound, "no SSD tier serves segment " + std::to_string(r.segment));
  auto n = disk->ReadObject(*r.key, r.local, r.length);
  if (!n.ok()) return n.status();
  if (*n != r.length) {
    return Status(Code::kInvalidRead,
                  "object on disk has " + std::to_string(*n) + " bytes, expected " + std::to_string(r.length));
  }
  return Status::OK();
}

std::vector<Status> MemcpyTransport::Submit(const std::vector<TransferRequest>& batch) {
  std::vector<Status> out;
  out.reserve(batch.size());
  for (const auto& r : batch) {
    if (r.op == TransferRequest::Op::kReadObject) {
      out.push_back(ReadObjectFrom(*registry_, r));
      continue;
    }
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
