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

// One round's state, shared by its steps. `into[j]`: the reservation key j's value goes into;
// else `start_of[j]` indexes its own PutStart in `starts`.
struct DataPath::Round {
  const MasterApi::Keys& keys;
  const std::vector<std::vector<Slice>>& values;
  const std::vector<uint64_t>& sizes;
  const std::vector<size_t>& pending;
  const PlacementConfig& config;
  WriteMode mode;
  int number;
  std::vector<Status>& out;
  std::vector<SegmentId>& failed_segments;

  // Reservations being started (by PutStart here, or by the commit): their shape and size.
  struct Starting {
    std::string shape;
    uint64_t size = 0;
  };
  bool reserve = false;  // this round uses reservations (the first round only; Reservations)
  std::vector<std::optional<Reservations::Reservation>> into{};
  std::vector<std::optional<std::string>> shapes{};
  MasterApi::Keys start_keys{};
  std::vector<uint64_t> start_sizes{};
  std::vector<size_t> start_of{};  // index into `starts` of each key's own start (SIZE_MAX: none)
  std::vector<Result<std::vector<GrantedReplica>>> starts{};
  std::vector<Status> failed{};      // of each key's copies
  std::vector<ChecksumSink> sums{};  // of each value, computed as its first replica's bytes move
  std::vector<size_t> again{};       // keys (indices into `keys`) that go once more
  bool retry_plain = false;          // a key whose reservation failed it goes again, started as before

  // Where key j's value goes, or nullptr: its start failed.
  const std::vector<GrantedReplica>* replicas_of(size_t j) const {
    if (into[j]) return &into[j]->replicas;
    return starts[start_of[j]].ok() ? &*starts[start_of[j]] : nullptr;
  }
};

std::vector<size_t> DataPath::WriteRound(const MasterApi::Keys& keys, const std::vector<std::vector<Slice>>& values,
                                         const std::vector<uint64_t>& sizes, const std::vector<size_t>& pending,
                                         const PlacementConfig& config, WriteMode mode, int round,
                                         std::vector<Status>& out, std::vector<SegmentId>& failed_segments) {
  Round r{keys, values, sizes, pending, config, mode, round, out, failed_segments};
  StartRound(r);
  CopyRound(r);
  EndRound(r);
  if (failed_segments.empty() && !r.retry_plain)
    r.again.clear();  // nothing to steer around: another try would fail alike
  return std::move(r.again);
}

void DataPath::StartRound(Round& r) {
  const size_t n = r.pending.size();
  r.into.resize(n);
  r.shapes.resize(n);
  r.start_of.assign(n, SIZE_MAX);
  // Reservations: the value of key j goes into `into[j]` when one of its shape is at hand, and is
  // published with one call. A key that has none is started as before, and a reservation of its
  // shape is started beside it for the next Put.
  r.reserve = r.number == 0 && reservations_.enabled() && !no_reservations_.load(std::memory_order_relaxed);
  if (r.reserve) {
    std::map<std::string, std::vector<size_t>> by_shape;
    for (size_t j = 0; j < n; ++j) {
      r.shapes[j] = reservations_.Shape(r.sizes[r.pending[j]], r.config, r.mode);
      if (r.shapes[j]) by_shape[*r.shapes[j]].push_back(j);
    }
    for (auto& [shape, js] : by_shape) {
      auto got = reservations_.Take(shape, js.size());
      for (size_t k = 0; k < got.size(); ++k) r.into[js[k]] = std::move(got[k]);
      // A shape written for the first time starts no reservation (SeenBefore) beside its keys.
      if (!reservations_.SeenBefore(shape)) {
        for (size_t k = got.size(); k < js.size(); ++k) r.shapes[js[k]].reset();
      }
    }
  }
  std::vector<Round::Starting> starting;  // start_keys[first_reservation + k]
  std::vector<size_t> own;                // keys started under their own name
  for (size_t j = 0; j < n; ++j) {
    if (r.into[j]) continue;
    r.start_of[j] = r.start_keys.size();
    r.start_keys.push_back(r.keys[r.pending[j]]);
    r.start_sizes.push_back(r.sizes[r.pending[j]]);
    own.push_back(r.pending[j]);
  }
  const size_t first_reservation = r.start_keys.size();
  for (size_t j = 0; j < n; ++j) {
    if (r.into[j] || !r.shapes[j]) continue;
    for (std::string& name : reservations_.Names(ctx().client, 1, r.sizes[r.pending[j]])) {
      r.start_keys.push_back(std::move(name));
      r.start_sizes.push_back(r.sizes[r.pending[j]]);
      starting.push_back({*r.shapes[j], r.sizes[r.pending[j]]});
    }
  }
  if (!r.start_keys.empty()) {
    // Group ids (one per key of the call) name no reservation: Shape() gives none with them.
    r.starts =
        master().BatchPutStart(ctx(), r.start_keys, r.start_sizes,
                               first_reservation == r.start_keys.size() ? ForKeys(r.config, own) : r.config, r.mode);
  }
  for (size_t k = 0; k < starting.size(); ++k) {
    reservations_.Started(starting[k].shape, r.start_keys[first_reservation + k], starting[k].size,
                          std::move(r.starts[first_reservation + k]));
  }
}

void DataPath::CopyRound(Round& r) {
  // Every replica of every started key in one batch (or one by one when staging is needed).
  std::vector<TransferRequest> reqs;
  std::vector<size_t> req_owner;  // index into pending
  r.failed.assign(r.pending.size(), Status::OK());
  if (config_.enable_checksum) r.sums.resize(r.pending.size());
  StagingLeases staged_batch(*staging_);
  auto note = [&](size_t j, SegmentId segment, const Status& st) {
    if (r.failed[j].ok()) r.failed[j] = Status(st.code(), "segment " + std::to_string(segment) + ": " + st.ToString());
    if (st.code() == Code::kTransferFail) r.failed_segments.push_back(segment);
    members_.unreachable().Note(segment, st);
  };
  for (size_t j = 0; j < r.pending.size(); ++j) {
    const size_t i = r.pending[j];
    const std::vector<GrantedReplica>* replicas = r.replicas_of(j);
    if (!replicas) {
      const Status& why = r.starts[r.start_of[j]].status();
      r.out[i] = why.code() == Code::kObjectAlreadyExists && r.mode == WriteMode::kPut
                     ? SameSizeIsSuccess(master(), ctx(), r.keys[i], r.sizes[i], why)
                     : why;
      continue;
    }
    ChecksumSink* sum = nullptr;
    if (!r.sums.empty()) {
      r.sums[j].Reset(r.sizes[i]);
      sum = &r.sums[j];
    }
    const std::vector<Slice>& value = r.values[i];
    const bool device = OnDevice(value);  // asked once per value, not per replica
    // Host memory the transport cannot reach: copied once into a staging range that goes with the
    // batch to every replica (else, or in device memory, staged replica by replica).
    std::vector<Slice> staged;
    if (!device && !replicas->empty() && NeedsRegistration(replicas->front(), value)) {
      if (uint8_t* p = staged_batch.Allocate(r.sizes[i])) {
        Gather(value, p);
        staged = {{p, r.sizes[i]}};
      }
    }
    for (const auto& replica : *replicas) {
      if (!staged.empty()) {
        AppendRequests(TransferRequest::Op::kWrite, replica, staged, reqs, sum);
        req_owner.resize(reqs.size(), j);
      } else if (device || NeedsRegistration(replica, value)) {
        if (Status st = MoveStaged(TransferRequest::Op::kWrite, replica, value, sum); !st.ok()) {
          note(j, replica.segment, st);
        }
      } else {
        AppendRequests(TransferRequest::Op::kWrite, replica, value, reqs, sum);
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
}

void DataPath::EndRound(Round& r) {
  MasterApi::Keys end_keys, end_reservations, revoke_keys;
  std::vector<std::optional<uint64_t>> checksums;
  std::vector<size_t> end_idx;
  bool used_reservation = false;
  for (size_t j = 0; j < r.pending.size(); ++j) {
    if (!r.replicas_of(j)) continue;
    const size_t i = r.pending[j];
    if (!r.failed[j].ok()) {
      replica_write_failures_.fetch_add(1, std::memory_order_relaxed);
      YB_LOG_DEBUG("put of '{}' failed writing {}{}", r.keys[i], r.failed[j].message(),
                   r.number == 0 ? "" : " (second try)");
      if (r.into[j]) {
        reservations_.Discard(std::move(*r.into[j]));
        r.into[j].reset();
      } else {
        revoke_keys.push_back(r.keys[i]);
      }
      r.out[i] = Status(r.failed[j].code(), "writing a replica failed: " + r.failed[j].message());
      r.again.push_back(i);
    } else {
      end_keys.push_back(r.keys[i]);
      end_reservations.push_back(r.into[j] ? r.into[j]->name : std::string());
      used_reservation |= r.into[j].has_value();
      end_idx.push_back(j);
      checksums.push_back(r.sums.empty() ? std::nullopt : std::optional(r.sums[j].Finish(r.values[i])));
    }
  }
  // Reservations no longer wanted (aged, or given up above) are revoked with this round's last call:
  // the commit, which ends plain Puts too, when there is one.
  for (std::string& name : reservations_.TakeDiscarded()) revoke_keys.push_back(std::move(name));
  const bool commit = !end_keys.empty() && (used_reservation || (!revoke_keys.empty() && r.reserve));
  if (commit) {
    CommitRound(r, end_keys, end_reservations, checksums, end_idx, revoke_keys);
    return;
  }
  if (!revoke_keys.empty()) (void)master().BatchPutRevoke(ctx(), revoke_keys);
  if (!end_keys.empty()) {
    auto ends = master().BatchPutEnd(ctx(), end_keys, checksums);
    for (size_t k = 0; k < ends.size(); ++k) r.out[r.pending[end_idx[k]]] = ends[k];
  }
}

void DataPath::CommitRound(Round& r, const MasterApi::Keys& end_keys, const MasterApi::Keys& end_reservations,
                           const std::vector<std::optional<uint64_t>>& checksums, const std::vector<size_t>& end_idx,
                           const MasterApi::Keys& revoke_keys) {
  // Each reservation used is replaced by one of its shape, started in the same call.
  MasterApi::Keys refill;
  std::vector<uint64_t> refill_sizes;
  std::vector<Round::Starting> refilling;
  for (size_t j : end_idx) {
    if (!r.into[j]) continue;
    for (std::string& name : reservations_.Names(ctx().client, 1, r.into[j]->size)) {
      refill.push_back(std::move(name));
      refill_sizes.push_back(r.into[j]->size);
      refilling.push_back({*r.shapes[j], r.into[j]->size});
    }
  }
  auto answer = master().BatchPutCommit(ctx(), end_keys, end_reservations, checksums, revoke_keys, refill, refill_sizes,
                                        r.config);
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
      if (r.into[j]) {
        dropped.push_back(r.into[j]->name);
        reservations_.Release(r.into[j]->size);
        r.again.push_back(r.pending[j]);
        r.retry_plain = true;
      } else {
        own_keys.push_back(end_keys[k]);
        own_sums.push_back(checksums[k]);
        own_idx.push_back(j);
      }
    }
    for (const auto& s : refilling) reservations_.Release(s.size);
    if (!dropped.empty()) (void)master().BatchPutRevoke(ctx(), dropped);
    if (!own_keys.empty()) {
      auto ends = master().BatchPutEnd(ctx(), own_keys, own_sums);
      for (size_t k = 0; k < ends.size(); ++k) r.out[r.pending[own_idx[k]]] = ends[k];
    }
    return;
  }
  for (size_t k = 0; k < end_keys.size(); ++k) {
    const size_t j = end_idx[k];
    const size_t i = r.pending[j];
    const Status& st = answer.ends[k];
    r.out[i] = st;
    if (!r.into[j]) continue;
    if (st.code() == Code::kObjectAlreadyExists) {
      // The key was taken meanwhile: the reservation is still ours, and the one started in its
      // stead serves the next Put; this one goes with the next call that revokes.
      reservations_.Discard(std::move(*r.into[j]));
      r.out[i] = SameSizeIsSuccess(master(), ctx(), r.keys[i], r.sizes[i], st);
      continue;
    }
    reservations_.Release(r.into[j]->size);
    if (st.code() == Code::kObjectNotFound || st.code() == Code::kIllegalClient || st.code() == Code::kInvalidWrite) {
      // The reservation is gone (revoked, reclaimed, lost to an unmount, or a master that
      // restarted without it): the value goes again, started as before.
      YB_LOG_DEBUG("put of '{}' into reservation '{}': {}; started again", r.keys[i], r.into[j]->name, st.ToString());
      r.again.push_back(i);
      r.retry_plain = true;
    }
  }
  for (size_t k = 0; k < refilling.size(); ++k) {
    reservations_.Started(refilling[k].shape, refill[k], refilling[k].size, std::move(answer.started[k]));
  }
}

}  // namespace yb
