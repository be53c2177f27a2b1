// Client: Put, Upsert and BatchPut (two-phase: PutStart, copy every replica, PutEnd or PutRevoke).
#include <algorithm>

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
  auto size = SlicesSize(slices);
  if (!size.ok()) return size.status();
  if (*size == 0) return Status(Code::kInvalidParams, "value is empty");
  std::optional<uint64_t> checksum;
  if (this->config.enable_checksum) checksum = SlicesChecksum(slices);
  ReplicateConfig attempt = config;
  for (int round = 0;; ++round) {
    auto replicas =
        upsert ? master->UpsertStart(ctx(), key, *size, attempt) : master->PutStart(ctx(), key, *size, attempt);
    if (!replicas.ok()) {
      if (replicas.code() == Code::kObjectAlreadyExists && !upsert) {
        return SameSizeIsSuccess(*master, ctx(), key, *size, replicas.status());
      }
      return replicas.status();
    }
    Status failed;
    SegmentId where = 0;
    for (const auto& r : *replicas) {
      failed = Move(TransferRequest::Op::kWrite, r, slices);
      where = r.segment;
      if (!failed.ok()) break;
    }
    if (failed.ok()) return master->PutEnd(ctx(), key, checksum);
    if (uint64_t held = 0; transfer_warnings.Allow(RealClock().NowMs(), &held)) {
      YB_LOG_WARN("put of '{}' failed writing segment {}{}: {}{}", key, where, round == 0 ? "" : " (second try)",
                  failed.ToString(), LogBudget::HeldBack(held));
    }
    (void)master->PutRevoke(ctx(), key);
    // Most likely its node went away and the master has not noticed yet (client_ttl): once more,
    // on other segments.
    if (round == 0 && failed.code() == Code::kTransferFail) {
      attempt.avoid_segments.push_back(where);
      continue;
    }
    return Status(Code::kTransferFail, "writing a replica failed: " + failed.ToString());
  }
}

Status Client::Put(const std::string& key, const std::vector<Slice>& slices, const ReplicateConfig& config) {
  return impl_->Write(key, slices, config, false);
}

Status Client::Upsert(const std::string& key, const std::vector<Slice>& slices, const ReplicateConfig& config) {
  return impl_->Write(key, slices, config, true);
}

std::vector<Status> Client::BatchPut(const std::vector<std::string>& keys,
                                     const std::vector<std::vector<Slice>>& values, const ReplicateConfig& config) {
  const size_t n = keys.size();
  if (values.size() != n) {
    return std::vector<Status>(n, Status(Code::kInvalidParams, "keys and values differ in length"));
  }
  std::vector<Status> out(n);
  std::vector<uint64_t> sizes(n, 0);
  std::vector<size_t> pending;
  for (size_t i = 0; i < n; ++i) {
    auto sz = SlicesSize(values[i]);
    if (!sz.ok()) {
      out[i] = sz.status();
    } else if (*sz == 0) {
      out[i] = Status(Code::kInvalidParams, "value is empty");
    } else {
      sizes[i] = *sz;
      pending.push_back(i);
    }
  }
  // As Write(): the keys whose replica writes failed go once more, avoiding the segments that failed.
  ReplicateConfig attempt = config;
  for (int round = 0; round < 2 && !pending.empty(); ++round) {
    std::vector<SegmentId> unreachable;
    pending = impl_->BatchWriteRound(keys, values, sizes, pending, attempt, out, unreachable);
    for (SegmentId s : unreachable) {
      if (std::find(attempt.avoid_segments.begin(), attempt.avoid_segments.end(), s) == attempt.avoid_segments.end()) {
        attempt.avoid_segments.push_back(s);
      }
    }
  }
  return out;
}

std::vector<size_t> Client::Impl::BatchWriteRound(const std::vector<std::string>& keys,
                                                  const std::vector<std::vector<Slice>>& values,
                                                  const std::vector<uint64_t>& sizes,
                                                  const std::vector<size_t>& pending, const ReplicateConfig& config,
                                                  std::vector<Status>& out, std::vector<SegmentId>& unreachable) {
  std::vector<std::string> start_keys;
  std::vector<uint64_t> start_sizes;
  for (size_t i : pending) {
    start_keys.push_back(keys[i]);
    start_sizes.push_back(sizes[i]);
  }
  auto starts = master->BatchPutStart(ctx(), start_keys, start_sizes, config);

  // Copy every replica of every started key in one batch (or one by one when staging is needed).
  std::vector<TransferRequest> reqs;
  std::vector<size_t> req_owner;  // index into pending
  std::vector<bool> failed(pending.size(), false);
  auto note = [&](size_t j, SegmentId segment, const Status& st) {
    failed[j] = true;
    if (st.code() == Code::kTransferFail) unreachable.push_back(segment);
  };
  for (size_t j = 0; j < pending.size(); ++j) {
    size_t i = pending[j];
    if (!starts[j].ok()) {
      out[i] = starts[j].code() == Code::kObjectAlreadyExists
                   ? SameSizeIsSuccess(*master, ctx(), keys[i], sizes[i], starts[j].status())
                   : starts[j].status();
      continue;
    }
    for (const auto& r : *starts[j]) {
      if (NeedsStaging(r, values[i])) {
        if (Status st = Move(TransferRequest::Op::kWrite, r, values[i]); !st.ok()) note(j, r.segment, st);
        continue;
      }
      AppendRequests(TransferRequest::Op::kWrite, r, values[i], reqs);
      req_owner.resize(reqs.size(), j);
    }
  }
  auto results = engine->Submit(reqs);
  for (size_t k = 0; k < results.size(); ++k) {
    if (!results[k].ok()) note(req_owner[k], reqs[k].segment, results[k]);
  }
  std::vector<std::string> end_keys, revoke_keys;
  std::vector<std::optional<uint64_t>> checksums;
  std::vector<size_t> end_idx, again;
  for (size_t j = 0; j < pending.size(); ++j) {
    if (!starts[j].ok()) continue;
    size_t i = pending[j];
    if (failed[j]) {
      revoke_keys.push_back(keys[i]);
      out[i] = Status(Code::kTransferFail, "writing a replica failed");
      again.push_back(i);
    } else {
      end_keys.push_back(keys[i]);
      end_idx.push_back(i);
      checksums.push_back(this->config.enable_checksum ? std::optional(SlicesChecksum(values[i])) : std::nullopt);
    }
  }
  if (!revoke_keys.empty()) (void)master->BatchPutRevoke(ctx(), revoke_keys);
  auto ends = master->BatchPutEnd(ctx(), end_keys, checksums);
  for (size_t k = 0; k < ends.size(); ++k) out[end_idx[k]] = ends[k];
  if (unreachable.empty()) again.clear();  // nothing to steer around: another try would fail alike
  return again;
}

}  // namespace yb
