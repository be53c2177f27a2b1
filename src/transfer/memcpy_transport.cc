#include "transfer/memcpy_transport.h"

#include <algorithm>
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
  if (r.checksum) r.checksum->Moved(r.object_pos, r.local, r.length);
  if (r.landed) r.landed->Landed(r.object_pos, r.local, r.length);
  return Status::OK();
}

const uint8_t* MemcpyTransport::View(const TransferRequest& r, std::shared_ptr<const void>* keep) {
  LocalSegment seg = registry_->Find(r.segment);
  if (!seg.base || r.offset > seg.size || r.length > seg.size - r.offset) return nullptr;
  *keep = seg.region;
  return seg.base + r.offset;
}

namespace {

// Copies a request's bytes; with a checksum sink, hashed as they are copied (a read's copy, a
// write's source: ChecksumSink::CopyMoved); a read's observer is told of each chunk copied.
void Copy(const TransferRequest& r, uint8_t* remote) {
  auto* local = static_cast<uint8_t*>(r.local);
  const bool read = r.op == TransferRequest::Op::kRead;
  uint8_t* to = read ? local : remote;
  const uint8_t* from = read ? remote : local;
  if (!r.checksum && !(read && r.landed)) {
    CopyInSteps(to, from, r.length);
    return;
  }
  for (uint64_t done = 0; done < r.length;) {
    const uint64_t pos = r.object_pos + done;
    const uint64_t n = std::min(r.length - done, kChecksumChunk - pos % kChecksumChunk);
    if (r.checksum) {
      r.checksum->CopyMoved(pos, to + done, from + done, n, /*hash_copy=*/read);
    } else {
      CopyInSteps(to + done, from + done, n);
    }
    if (read && r.landed) r.landed->Landed(pos, local + done, n);
    done += n;
  }
}

}  // namespace

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
    if (st.ok() && r.length > 0) Copy(r, seg.base + r.offset);
    out.push_back(std::move(st));
  }
  return out;
}

}  // namespace yb
