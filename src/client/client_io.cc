// DataPath: moving bytes between caller slices and replicas.
#include <algorithm>
#include <cstring>

#include "client/data_path.h"

namespace yb {

Result<uint64_t> SlicesSize(const std::vector<Slice>& slices) {
  uint64_t total = 0;
  for (const auto& s : slices) {
    if (s.size > 0 && s.ptr == nullptr) return Status(Code::kInvalidParams, "null buffer with a non-zero size");
    if (total + s.size < total) return Status(Code::kInvalidParams, "slice sizes overflow");
    total += s.size;
  }
  return total;
}

Result<uint64_t> DataPath::CallerSize(const std::vector<Slice>& slices) const {
  auto total = SlicesSize(slices);
  if (!total.ok()) return total;
  for (const auto& s : slices) {
    if (s.size > 0) YB_RETURN_IF_ERROR(registered_.CheckSpan(s.ptr, s.size));
  }
  return total;
}

void DataPath::AppendRequests(TransferRequest::Op op, const ReplicaDesc& replica, const std::vector<Slice>& slices,
                              std::vector<TransferRequest>& out, ChecksumSink* checksum) {
  uint64_t pos = 0;
  for (const auto& s : slices) {
    if (s.size == 0) continue;
    out.push_back({op, replica.segment, replica.offset + pos, s.ptr, s.size, nullptr, replica.grant, checksum, pos});
    pos += s.size;
  }
}

bool DataPath::NeedsStaging(const ReplicaDesc& replica, const std::vector<Slice>& slices) const {
  Transport* t = engine_->Route(replica.segment);
  if (!t || !t->RequiresRegisteredMemory()) return false;
  return std::any_of(slices.begin(), slices.end(), [&](const Slice& s) {
    return s.size > 0 && !registered_.Contains(s.ptr, s.size) && !staging_->Contains(s.ptr, s.size);
  });
}

Status DataPath::Move(TransferRequest::Op op, const ReplicaDesc& replica, const std::vector<Slice>& slices,
                      ChecksumSink* checksum) {
  if (!NeedsStaging(replica, slices)) {
    std::vector<TransferRequest> reqs;
    AppendRequests(op, replica, slices, reqs, checksum);
    for (auto& st : engine_->Submit(reqs)) YB_RETURN_IF_ERROR(st);
    return Status::OK();
  }
  // Stage in pieces of at most half the staging buffer, so two movers can share it.
  uint64_t piece_max = std::max<uint64_t>(staging_->capacity() / 2, 64);
  uint64_t off = replica.offset;
  for (const auto& s : slices) {
    for (uint64_t done = 0; done < s.size;) {
      uint64_t n = std::min(piece_max, s.size - done);
      auto lease = staging_->Allocate(n);
      if (!lease) return Status(Code::kNoAvailableHandle, "staging buffer (local_buffer_size) is too small or full");
      auto* user = static_cast<uint8_t*>(s.ptr) + done;
      if (op == TransferRequest::Op::kWrite) std::memcpy(lease->ptr, user, n);
      Status st = engine_->Submit({{op, replica.segment, off, lease->ptr, n, nullptr, replica.grant}})[0];
      if (st.ok() && op == TransferRequest::Op::kRead) std::memcpy(user, lease->ptr, n);
      staging_->Free(*lease);
      YB_RETURN_IF_ERROR(st);
      done += n;
      off += n;
    }
  }
  return Status::OK();
}

}  // namespace yb
