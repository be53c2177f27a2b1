// DataPath: writes (two-phase: PutStart, copy every replica, PutEnd or PutRevoke), single or
// batched through one path.
#include <algorithm>

#include "client/data_path.h"
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

PlacementConfig ForKeys(const PlacementConfig& config, const std::vector<size_t>& which) {
  if (config.group_ids.empty()) return config;
  PlacementConfig out = config;
  out.group_ids.clear();
  for (size_t i : which) out.group_ids.push_back(config.group_ids[i]);
  return out;
}

std::vector<Status> DataPath::Write(const MasterApi::Keys& keys, const std::vector<std::vector<Slice>>& values,
                                    const ReplicateConfig& config, WriteMode mode) {
  const size_t n = keys.size();
  if (values.size() != n) {
    return std::vector<Status>(n, Status(Code::kInvalidParams, "keys and values differ in length"));
  }
  if (!config.group_ids.empty() && config.group_ids.size() != n) {
    return std::vector<Status>(n, Status(Code::kInvalidParams, "group_ids name " + std::to_string(config.group_ids.size()) +
                                                                   " groups for " + std::to_string(n) + " keys"));
  }
  for (const auto& key : keys) locations_.Drop(key);  // this client's next read asks the master
  if (config.soft_pin_ttl_ms && !config.with_soft_pin) {
    return std::vector<Status>(n, Status(Code::kInvalidParams, "a soft-pin TTL goes only with a soft pin "
                                                                 "(SoftPinAction.ENABLE)"));
  }
  std::vector<Status> out(n);
  std::vector<uint64_t> sizes(n, 0);
  std::vector<size_t> pending;
  for (size_t i = 0; i < n; ++i) {
    auto sz = CallerSize(values[i]);
    if (!sz.ok()) {
      out[i] = sz.status();
    } else if (*sz == 0) {
      out[i] = Status(Code::kInvalidParams, "value is empty");
    } else {
      sizes[i] = *sz;
      pending.push_back(i);
    }
  }
  // The retry policy: keys whose replica writes failed go once more, avoiding the segments that
  // failed (and their owners' others).
  PlacementConfig attempt(config);  // the caller's config, and the segments its retry avoids
  for (int round = 0; round < 2 && !pending.empty(); ++round) {
    std::vector<SegmentId> failed_segments;
    pending = WriteRound(keys, values, sizes, pending, attempt, mode, round, out, failed_segments);
    for (SegmentId s : failed_segments) {
      if (std::find(attempt.avoid_segments.begin(), attempt.avoid_segments.end(), s) == attempt.avoid_segments.end()) {
        attempt.avoid_segments.push_back(s);
      }
    }
  }
  return out;
}

std::vector<size_t> DataPath::WriteRound(const MasterApi::Keys& keys, const std::vector<std::vector<Slice>>& values,
                                         const std::vector<uint64_t>& sizes, const std::vector<size_t>& pending,
                                         const PlacementConfig& config, WriteMode mode, int round,
                                         std::vector<Status>& out, std::vector<SegmentId>& failed_segments) {
  MasterApi::Keys start_keys;
  std::vector<uint64_t> start_sizes;
  start_keys.reserve(pending.size());
  start_sizes.reserve(pending.size());
  for (size_t i : pending) {
    start_keys.push_back(keys[i]);
    start_sizes.push_back(sizes[i]);
  }
  auto starts = master().BatchPutStart(ctx(), start_keys, start_sizes, ForKeys(config, pending), mode);

  // Copy every replica of every started key in one batch (or one by one when staging is needed).
  std::vector<TransferRequest> reqs;
  std::vector<size_t> req_owner;  // index into pending
  std::vector<Status> failed(pending.size());
  // The checksum of each value, computed as its first replica's bytes move.
  std::vector<ChecksumSink> sums(config_.enable_checksum ? pending.size() : 0);
  StagingLeases staged_batch(*staging_);
  auto note = [&](size_t j, SegmentId segment, const Status& st) {
    if (failed[j].ok()) failed[j] = Status(st.code(), "segment " + std::to_string(segment) + ": " + st.ToString());
    if (st.code() == Code::kTransferFail) failed_segments.push_back(segment);
    members_.unreachable().Note(segment, st);
  };
  for (size_t j = 0; j < pending.size(); ++j) {
    size_t i = pending[j];
    if (!starts[j].ok()) {
      out[i] = starts[j].code() == Code::kObjectAlreadyExists && mode == WriteMode::kPut
                   ? SameSizeIsSuccess(master(), ctx(), keys[i], sizes[i], starts[j].status())
                   : starts[j].status();
      continue;
    }
    ChecksumSink* sum = nullptr;
    if (!sums.empty()) {
      sums[j].Reset(sizes[i]);
      sum = &sums[j];
    }
    const bool device = OnDevice(values[i]);  // asked once per value, not per replica
    // Host memory the transport cannot reach: copied once into a staging range that goes with the
    // batch to every replica (else, or in device memory, staged replica by replica).
    std::vector<Slice> staged;
    if (!device && !starts[j]->empty() && NeedsRegistration(starts[j]->front(), values[i])) {
      if (uint8_t* p = staged_batch.Allocate(sizes[i])) {
        Gather(values[i], p);
        staged = {{p, sizes[i]}};
      }
    }
    for (const auto& r : *starts[j]) {
      if (!staged.empty()) {
        AppendRequests(TransferRequest::Op::kWrite, r, staged, reqs, sum);
        req_owner.resize(reqs.size(), j);
      } else if (device || NeedsRegistration(r, values[i])) {
        if (Status st = MoveStaged(TransferRequest::Op::kWrite, r, values[i], sum); !st.ok()) note(j, r.segment, st);
      } else {
        AppendRequests(TransferRequest::Op::kWrite, r, values[i], reqs, sum);
        req_owner.resize(reqs.size(), j);
      }
      sum = nullptr;  // the same bytes go to every replica: hashed once
    }
  }
  auto results = engine_->Submit(reqs);
  staged_batch.Release();
  for (size_t k = 0; k < results.size(); ++k) {
    if (!results[k].ok()) note(req_owner[k], reqs[k].segment, results[k]);
  }
  MasterApi::Keys end_keys, revoke_keys;
  std::vector<std::optional<uint64_t>> checksums;
  std::vector<size_t> end_idx, again;
  for (size_t j = 0; j < pending.size(); ++j) {
    if (!starts[j].ok()) continue;
    size_t i = pending[j];
    if (!failed[j].ok()) {
      replica_write_failures_.fetch_add(1, std::memory_order_relaxed);
      YB_LOG_DEBUG("put of '{}' failed writing {}{}", keys[i], failed[j].message(), round == 0 ? "" : " (second try)");
      revoke_keys.push_back(keys[i]);
      out[i] = Status(failed[j].code(), "writing a replica failed: " + failed[j].message());
      again.push_back(i);
    } else {
      end_keys.push_back(keys[i]);
      end_idx.push_back(i);
      checksums.push_back(sums.empty() ? std::nullopt : std::optional(sums[j].Finish(values[i])));
    }
  }
  if (!revoke_keys.empty()) (void)master().BatchPutRevoke(ctx(), revoke_keys);
  if (!end_keys.empty()) {
    auto ends = master().BatchPutEnd(ctx(), end_keys, checksums);
    for (size_t k = 0; k < ends.size(); ++k) out[end_idx[k]] = ends[k];
  }
  if (failed_segments.empty()) again.clear();  // nothing to steer around: another try would fail alike
  return again;
}

}  // namespace yb
