// Client: Put, Upsert and BatchPut (two-phase: PutStart, copy every replica, PutEnd or PutRevoke).
#include "client/client_impl.h"
#include "common/log.h"

namespace yb {
namespace {

// Put of an existing key: a no-op success when the stored value has the same size.
Status SameSizeIsSuccess(MasterApi& master, const CallContext& ctx, const std::string& key, uint64_t size,
                         const Status& exists) {
  auto info = master.GetReplicaList(ctx, key, false);
  if (info.ok() && info->size == size) return Status::OK();
  return exists;
}

}  // namespace

Status Client::Put(const std::string& key, const void* data, uint64_t size, const ReplicateConfig& config) {
  return Put(key, std::vector<Slice>{{const_cast<void*>(data), size}}, config);
}

Status Client::Impl::Write(const std::string& key, const std::vector<Slice>& slices, const ReplicateConfig& config,
                           bool upsert) {
  Impl& impl = *this;
  auto size = SlicesSize(slices);
  if (!size.ok()) return size.status();
  if (*size == 0) return Status(Code::kInvalidParams, "value is empty");
  std::optional<uint64_t> checksum;
  if (impl.config.enable_checksum) checksum = SlicesChecksum(slices);
  auto replicas = upsert ? impl.master->UpsertStart(impl.ctx(), key, *size, config)
                         : impl.master->PutStart(impl.ctx(), key, *size, config);
  if (!replicas.ok()) {
    if (replicas.code() == Code::kObjectAlreadyExists && !upsert) {
      return SameSizeIsSuccess(*impl.master, impl.ctx(), key, *size, replicas.status());
    }
    return replicas.status();
  }
  for (const auto& r : *replicas) {
    Status st = impl.Move(TransferRequest::Op::kWrite, r, slices);
    if (!st.ok()) {
      if (uint64_t held = 0; impl.transfer_warnings.Allow(RealClock().NowMs(), &held)) {
        YB_LOG_WARN("put of '{}' failed writing segment {}: {}{}", key, r.segment, st.ToString(),
                    LogBudget::HeldBack(held));
      }
      (void)impl.master->PutRevoke(impl.ctx(), key);
      return Status(Code::kTransferFail, "writing a replica failed: " + st.ToString());
    }
  }
  return impl.master->PutEnd(impl.ctx(), key, checksum);
}

Status Client::Put(const std::string& key, const std::vector<Slice>& slices, const ReplicateConfig& config) {
  return impl_->Write(key, slices, config, false);
}

Status Client::Upsert(const std::string& key, const std::vector<Slice>& slices, const ReplicateConfig& config) {
  return impl_->Write(key, slices, config, true);
}

std::vector<Status> Client::BatchPut(const std::vector<std::string>& keys,
                                     const std::vector<std::vector<Slice>>& values, const ReplicateConfig& config) {
  Impl& impl = *impl_;
  const size_t n = keys.size();
  if (values.size() != n) {
    return std::vector<Status>(n, Status(Code::kInvalidParams, "keys and values differ in length"));
  }
  std::vector<Status> out(n);
  std::vector<uint64_t> sizes(n, 0);
  std::vector<std::string> start_keys;
  std::vector<uint64_t> start_sizes;
  std::vector<size_t> start_idx;
  for (size_t i = 0; i < n; ++i) {
    auto sz = SlicesSize(values[i]);
    if (!sz.ok()) {
      out[i] = sz.status();
    } else if (*sz == 0) {
      out[i] = Status(Code::kInvalidParams, "value is empty");
    } else {
      sizes[i] = *sz;
      start_keys.push_back(keys[i]);
      start_sizes.push_back(*sz);
      start_idx.push_back(i);
    }
  }
  auto starts = impl.master->BatchPutStart(impl.ctx(), start_keys, start_sizes, config);

  // Copy every replica of every started key in one batch (or one by one when staging is needed).
  std::vector<TransferRequest> reqs;
  std::vector<size_t> req_owner;  // index into start_idx
  std::vector<bool> failed(start_idx.size(), false);
  for (size_t j = 0; j < start_idx.size(); ++j) {
    size_t i = start_idx[j];
    if (!starts[j].ok()) {
      out[i] = starts[j].code() == Code::kObjectAlreadyExists
                   ? SameSizeIsSuccess(*impl.master, impl.ctx(), keys[i], sizes[i], starts[j].status())
                   : starts[j].status();
      continue;
    }
    for (const auto& r : *starts[j]) {
      if (impl.NeedsStaging(r, values[i])) {
        if (!impl.Move(TransferRequest::Op::kWrite, r, values[i]).ok()) failed[j] = true;
        continue;
      }
      size_t before = reqs.size();
      Impl::AppendRequests(TransferRequest::Op::kWrite, r, values[i], reqs);
      req_owner.resize(reqs.size(), j);
      (void)before;
    }
  }
  auto results = impl.engine->Submit(reqs);
  for (size_t k = 0; k < results.size(); ++k) {
    if (!results[k].ok()) failed[req_owner[k]] = true;
  }
  std::vector<std::string> end_keys, revoke_keys;
  std::vector<std::optional<uint64_t>> checksums;
  std::vector<size_t> end_idx;
  for (size_t j = 0; j < start_idx.size(); ++j) {
    if (!starts[j].ok()) continue;
    size_t i = start_idx[j];
    if (failed[j]) {
      revoke_keys.push_back(keys[i]);
      out[i] = Status(Code::kTransferFail, "writing a replica failed");
    } else {
      end_keys.push_back(keys[i]);
      end_idx.push_back(i);
      checksums.push_back(impl.config.enable_checksum ? std::optional(SlicesChecksum(values[i])) : std::nullopt);
    }
  }
  if (!revoke_keys.empty()) (void)impl.master->BatchPutRevoke(impl.ctx(), revoke_keys);
  auto ends = impl.master->BatchPutEnd(impl.ctx(), end_keys, checksums);
  for (size_t k = 0; k < ends.size(); ++k) out[end_idx[k]] = ends[k];
  return out;
}

}  // namespace yb
