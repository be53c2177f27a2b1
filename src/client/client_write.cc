// DataPath: writes (two-phase: PutStart, copy every replica, PutEnd or PutRevoke; or, into space
// reserved ahead, copy then BatchPutCommit), single or batched through one path.
#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>

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
  // failed (and their owners' others); keys refused for the tenant's quota while this client held
  // reservations go once more after it gave them up (their quota is released at once).
  PlacementConfig attempt(config);  // the caller's config, and the segments its retry avoids
  for (int round = 0; round < 2 && !pending.empty(); ++round) {
    std::vector<SegmentId> failed_segments;
    const std::vector<size_t> tried = pending;
    pending = WriteRound(keys, values, sizes, pending, attempt, mode, round, out, failed_segments);
    if (round == 0 && reservations_.held_bytes() > 0) {
      std::vector<size_t> over_quota;
      for (size_t i : tried) {
        if (out[i].code() == Code::kTenantQuotaExceeded) over_quota.push_back(i);
      }
      if (!over_quota.empty()) {
        DropReservations();
        pending.insert(pending.end(), over_quota.begin(), over_quota.end());
      }
    }
    for (SegmentId s : failed_segments) {
      if (std::find(attempt.avoid_segments.begin(), attempt.avoid_segments.end(), s) == attempt.avoid_segments.end()) {
        attempt.avoid_segments.push_back(s);
      }
    }
  }
  return out;
}

void DataPath::DropReservations() {
  auto names = reservations_.TakeAll();
  if (!names.empty()) (void)master().BatchPutRevoke(ctx(), names);
}

std::vector<size_t> DataPath::WriteRound(const MasterApi::Keys& keys, const std::vector<std::vector<Slice>>& values,
                                         const std::vector<uint64_t>& sizes, const std::vector<size_t>& pending,
                                         const PlacementConfig& config, WriteMode mode, int round,
                                         std::vector<Status>& out, std::vector<SegmentId>& failed_segments) {
  const ClientId me = ctx().client;
  // Reservations (first round only; Reservations): the value of key j goes into `into[j]` when one
  // of its shape is at hand, and is published with one call. A key that has none is started as
  // before, and a reservation of its shape is started beside it for the next Put.
  std::vector<std::optional<Reservations::Reservation>> into(pending.size());
  std::vector<std::optional<std::string>> shapes(pending.size());
  const bool reserve = round == 0 && reservations_.enabled() && !no_reservations_.load(std::memory_order_relaxed);
  if (reserve) {
    std::map<std::string, std::vector<size_t>> by_shape;
    for (size_t j = 0; j < pending.size(); ++j) {
      shapes[j] = reservations_.Shape(sizes[pending[j]], config, mode);
      if (shapes[j]) by_shape[*shapes[j]].push_back(j);
    }
    for (auto& [shape, js] : by_shape) {
      auto got = reservations_.Take(shape, js.size());
      for (size_t k = 0; k < got.size(); ++k) into[js[k]] = std::move(got[k]);
      // A shape written for the first time starts no reservation (SeenBefore) beside its keys.
      if (!reservations_.SeenBefore(shape)) {
        for (size_t k = got.size(); k < js.size(); ++k) shapes[js[k]].reset();
      }
    }
  }
  // Reservations being started (by PutStart here, or by the commit below): their shape and size.
  struct Starting {
    std::string shape;
    uint64_t size = 0;
  };
  MasterApi::Keys start_keys;
  std::vector<uint64_t> start_sizes;
  std::vector<size_t> start_of(pending.size(), SIZE_MAX);  // index into `starts` of each key's own start
  std::vector<Starting> starting;                          // start_keys[first_reservation + k]
  std::vector<size_t> own;                                 // keys started under their own name
  for (size_t j = 0; j < pending.size(); ++j) {
    if (into[j]) continue;
    start_of[j] = start_keys.size();
    start_keys.push_back(keys[pending[j]]);
    start_sizes.push_back(sizes[pending[j]]);
    own.push_back(pending[j]);
  }
  const size_t first_reservation = start_keys.size();
  for (size_t j = 0; j < pending.size(); ++j) {
    if (into[j] || !shapes[j]) continue;
    for (std::string& name : reservations_.Names(me, 1, sizes[pending[j]])) {
      start_keys.push_back(std::move(name));
      start_sizes.push_back(sizes[pending[j]]);
      starting.push_back({*shapes[j], sizes[pending[j]]});
    }
  }
  std::vector<Result<std::vector<GrantedReplica>>> starts;
  if (!start_keys.empty()) {
    // Group ids (one per key of the call) name no reservation: Shape() gives none with them.
    starts = master().BatchPutStart(ctx(), start_keys, start_sizes,
                                    first_reservation == start_keys.size() ? ForKeys(config, own) : config, mode);
  }
  for (size_t k = 0; k < starting.size(); ++k) {
    reservations_.Started(starting[k].shape, start_keys[first_reservation + k], starting[k].size,
                          std::move(starts[first_reservation + k]));
  }
  // Where key j's value goes, or why it goes nowhere.
  auto replicas_of = [&](size_t j) -> const std::vector<GrantedReplica>* {
    if (into[j]) return &into[j]->replicas;
    return starts[start_of[j]].ok() ? &*starts[start_of[j]] : nullptr;
  };

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
    const std::vector<GrantedReplica>* replicas = replicas_of(j);
    if (!replicas) {
      const Status& why = starts[start_of[j]].status();
      out[i] = why.code() == Code::kObjectAlreadyExists && mode == WriteMode::kPut
                   ? SameSizeIsSuccess(master(), ctx(), keys[i], sizes[i], why)
                   : why;
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
    if (!device && !replicas->empty() && NeedsRegistration(replicas->front(), values[i])) {
      if (uint8_t* p = staged_batch.Allocate(sizes[i])) {
        Gather(values[i], p);
        staged = {{p, sizes[i]}};
      }
    }
    for (const auto& r : *replicas) {
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
  MasterApi::Keys end_keys, end_reservations, revoke_keys;
  std::vector<std::optional<uint64_t>> checksums;
  std::vector<size_t> end_idx, again;
  bool used_reservation = false;
  for (size_t j = 0; j < pending.size(); ++j) {
    if (!replicas_of(j)) continue;
    size_t i = pending[j];
    if (!failed[j].ok()) {
      replica_write_failures_.fetch_add(1, std::memory_order_relaxed);
      YB_LOG_DEBUG("put of '{}' failed writing {}{}", keys[i], failed[j].message(), round == 0 ? "" : " (second try)");
      if (into[j]) {
        reservations_.Discard(std::move(*into[j]));
        into[j].reset();
      } else {
        revoke_keys.push_back(keys[i]);
      }
      out[i] = Status(failed[j].code(), "writing a replica failed: " + failed[j].message());
      again.push_back(i);
    } else {
      end_keys.push_back(keys[i]);
      end_reservations.push_back(into[j] ? into[j]->name : std::string());
      used_reservation |= into[j].has_value();
      end_idx.push_back(j);
      checksums.push_back(sums.empty() ? std::nullopt : std::optional(sums[j].Finish(values[i])));
    }
  }
  // Reservations no longer wanted (aged, or given up above) are revoked with this round's last call:
  // the commit, which ends plain Puts too, when there is one.
  for (std::string& name : reservations_.TakeDiscarded()) revoke_keys.push_back(std::move(name));
  const bool commit = !end_keys.empty() && (used_reservation || (!revoke_keys.empty() && reserve));
  if (!revoke_keys.empty() && !commit) {
    (void)master().BatchPutRevoke(ctx(), revoke_keys);
    revoke_keys.clear();
  }
  bool retry_plain = false;  // a key whose reservation failed it goes again, started as before
  if (!end_keys.empty() && !commit) {
    auto ends = master().BatchPutEnd(ctx(), end_keys, checksums);
    for (size_t k = 0; k < ends.size(); ++k) out[pending[end_idx[k]]] = ends[k];
  } else if (!end_keys.empty()) {
    // Each reservation used is replaced by one of its shape, started in the same call.
    MasterApi::Keys refill;
    std::vector<uint64_t> refill_sizes;
    std::vector<Starting> refilling;
    for (size_t j : end_idx) {
      if (!into[j]) continue;
      for (std::string& name : reservations_.Names(me, 1, into[j]->size)) {
        refill.push_back(std::move(name));
        refill_sizes.push_back(into[j]->size);
        refilling.push_back({*shapes[j], into[j]->size});
      }
    }
    auto answer = master().BatchPutCommit(ctx(), end_keys, end_reservations, checksums, revoke_keys, refill,
                                          refill_sizes, config);
    if (answer.status().code() == Code::kNotSupported) {
      // An older master: it started the reservations as Puts of their names, and ends none. Its
      // Puts end as before; the values written into reservations go again, started as before.
      no_reservations_.store(true, std::memory_order_relaxed);
      YB_LOG_INFO("the master takes no Puts into reservations ({}): Puts make two master calls",
                  answer.status().ToString());
      MasterApi::Keys own_keys, dropped = reservations_.TakeAll();
      dropped.insert(dropped.end(), revoke_keys.begin(), revoke_keys.end());  // not revoked by this call
      std::vector<std::optional<uint64_t>> own_sums;
      std::vector<size_t> own_idx;
      for (size_t k = 0; k < end_keys.size(); ++k) {
        const size_t j = end_idx[k];
        if (into[j]) {
          dropped.push_back(into[j]->name);
          reservations_.Release(into[j]->size);
          again.push_back(pending[j]);
          retry_plain = true;
        } else {
          own_keys.push_back(end_keys[k]);
          own_sums.push_back(checksums[k]);
          own_idx.push_back(j);
        }
      }
      for (const auto& r : refilling) reservations_.Release(r.size);
      if (!dropped.empty()) (void)master().BatchPutRevoke(ctx(), dropped);
      if (!own_keys.empty()) {
        auto ends = master().BatchPutEnd(ctx(), own_keys, own_sums);
        for (size_t k = 0; k < ends.size(); ++k) out[pending[own_idx[k]]] = ends[k];
      }
    } else {
      for (size_t k = 0; k < end_keys.size(); ++k) {
        const size_t j = end_idx[k];
        const size_t i = pending[j];
        const Status& st = answer.ends[k];
        out[i] = st;
        if (!into[j]) continue;
        if (st.code() == Code::kObjectAlreadyExists) {
          // The key was taken meanwhile: the reservation is still ours, and the one started in its
          // stead serves the next Put; this one goes with the next call that revokes.
          reservations_.Discard(std::move(*into[j]));
          out[i] = SameSizeIsSuccess(master(), ctx(), keys[i], sizes[i], st);
          continue;
        }
        reservations_.Release(into[j]->size);
        if (st.code() == Code::kObjectNotFound || st.code() == Code::kIllegalClient ||
            st.code() == Code::kInvalidWrite) {
          // The reservation is gone (revoked, reclaimed, lost to an unmount, or a master that
          // restarted without it): the value goes again, started as before.
          YB_LOG_DEBUG("put of '{}' into reservation '{}': {}; started again", keys[i], into[j]->name, st.ToString());
          again.push_back(i);
          retry_plain = true;
        }
      }
      for (size_t k = 0; k < refilling.size(); ++k) {
        reservations_.Started(refilling[k].shape, refill[k], refilling[k].size, std::move(answer.started[k]));
      }
    }
  }
  if (failed_segments.empty() && !retry_plain) again.clear();  // nothing to steer around: another try would fail alike
  return again;
}

}  // namespace yb
