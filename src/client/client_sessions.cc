// DataPath: sessions, Mooncake's layer-wise loads and stores. A get session pins its objects at
// the master once (one BatchGetReplicaList) and keeps their replica lists here, so each layer's
// ranged read is transfers only; a put session reserves its objects once (BatchPutStart), each
// layer's ranged write goes straight to every replica, and the end publishes them (BatchPutEnd).
//
// A pinned object cannot be evicted or removed until the session ends, whatever its lease: no
// timer can fail a session read. A put session's writes carry the writer's grant from its start,
// valid --grant_ttl_sec; a session's objects are the client's until it ends them (a client that
// leaves has its pins dropped and its unfinished puts reclaimed by the master).
#include <algorithm>
#include <mutex>

#include "client/data_path.h"
#include "client/replica_order.h"
#include "common/log.h"

namespace yb {
namespace {

// Each range [offset, offset + size) of the caller's ranges, checked against an object of `size`
// bytes; INVALID_PARAMS (with which range) for one past its end or lists that differ in length.
Status CheckRanges(const std::vector<Slice>& slices, const std::vector<uint64_t>& offsets, uint64_t size) {
  if (slices.size() != offsets.size()) return Status(Code::kInvalidParams, "buffers and offsets differ in length");
  for (size_t j = 0; j < slices.size(); ++j) {
    if (offsets[j] > size || slices[j].size > size - offsets[j]) {
      return Status(Code::kInvalidParams, "range " + std::to_string(j) + " (" + std::to_string(slices[j].size) +
                                              " bytes at offset " + std::to_string(offsets[j]) +
                                              ") runs past the object's " + std::to_string(size) + " bytes");
    }
  }
  return Status::OK();
}

}  // namespace

Status DataPath::MoveRanges(TransferRequest::Op op, const std::vector<GrantedReplica>& replicas,
                            const std::vector<Slice>& slices, const std::vector<uint64_t>& offsets,
                            std::vector<TransferRequest>& batch) {
  for (const GrantedReplica& replica : replicas) {
    for (size_t j = 0; j < slices.size(); ++j) {
      if (slices[j].size == 0) continue;
      GrantedReplica range = replica;  // the range as a replica of its own: the staged path moves it
      range.offset += offsets[j];
      range.size = slices[j].size;
      const std::vector<Slice> one{slices[j]};
      if (NeedsStaging(range, one)) {
        YB_RETURN_IF_ERROR(Move(op, range, one));
      } else {
        AppendRequests(op, range, one, batch);
      }
    }
  }
  return Status::OK();
}

std::vector<Status> DataPath::GetSessionStart(const MasterApi::Keys& keys) {
  std::vector<Status> out(keys.size());
  auto infos = master().BatchGetReplicaList(ctx(), keys, true);
  MasterApi::Keys replaced;
  std::vector<uint64_t> replaced_pins;
  {
    MutexLock lock(sessions_mu_);
    for (size_t i = 0; i < keys.size(); ++i) {
      if (i >= infos.size() || !infos[i].ok()) {
        out[i] = i < infos.size() ? infos[i].status() : Status(Code::kRpcFail, "no answer for the key");
        continue;
      }
      members_.pins().Add(keys[i], infos[i]->read_pin);
      auto ordered = OrderReplicas(infos[i]->replicas, [this](SegmentId s) { return members_.IsLocal(s); });
      ordered.erase(std::remove_if(ordered.begin(), ordered.end(),
                                   [](const GrantedReplica& r) { return r.kind != ReplicaKind::kMemory; }),
                    ordered.end());
      if (auto it = get_sessions_.find(keys[i]); it != get_sessions_.end()) {  // started again: the old pin goes
        replaced.push_back(keys[i]);
        replaced_pins.push_back(it->second.pin);
        get_sessions_.erase(it);
      }
      if (ordered.empty()) {
        // Mooncake's answer: a session reads memory replicas only (an object on disk alone: get it whole).
        out[i] = Status(Code::kInvalidReplica, "no complete memory replica of the object");
        replaced.push_back(keys[i]);
        replaced_pins.push_back(infos[i]->read_pin);
        continue;
      }
      get_sessions_[keys[i]] = GetSession{infos[i]->size, infos[i]->read_pin, std::move(ordered)};
    }
  }
  if (!replaced.empty()) {
    for (uint64_t pin : replaced_pins) members_.pins().Remove(pin);
    (void)master().BatchReadEnd(ctx(), replaced, replaced_pins);
  }
  return out;
}

std::vector<Result<uint64_t>> DataPath::GetSessionRanges(const MasterApi::Keys& keys,
                                                          const std::vector<std::vector<Slice>>& buffers,
                                                          const std::vector<std::vector<uint64_t>>& offsets) {
  const size_t n = keys.size();
  if (buffers.size() != n || offsets.size() != n) {
    return std::vector<Result<uint64_t>>(n, Status(Code::kInvalidParams, "keys, buffers and offsets differ in length"));
  }
  std::vector<Result<uint64_t>> out(n, Result<uint64_t>(uint64_t{0}));
  std::vector<std::vector<GrantedReplica>> sources(n);
  for (size_t i = 0; i < n; ++i) {
    {
      MutexLock lock(sessions_mu_);
      auto it = get_sessions_.find(keys[i]);
      if (it == get_sessions_.end()) {
        out[i] = Status(Code::kInvalidParams, "no get session for the key (batch_get_session_start)");
        continue;
      }
      if (Status st = CheckRanges(buffers[i], offsets[i], it->second.size); !st.ok()) {
        out[i] = st;
        continue;
      }
      sources[i] = {it->second.replicas.front()};  // the best replica; the session keeps the list
    }
    if (auto size = CallerSize(buffers[i]); !size.ok()) {
      out[i] = size.status();
    } else {
      out[i] = *size;
    }
  }
  // Every key's ranges in one batch; a key that failed there is read again from its next replicas.
  std::vector<TransferRequest> batch;
  std::vector<size_t> owner;
  std::vector<Status> failed(n);  // the first attempt's error, per key
  auto note = [&](size_t i, SegmentId segment, const Status& st) {
    members_.unreachable().Note(segment, st);
    if (failed[i].ok()) failed[i] = st;
  };
  for (size_t i = 0; i < n; ++i) {
    if (!out[i].ok()) continue;
    // Ranges that are staged (GPU memory, a transport that needs registered memory) move here.
    Status st = MoveRanges(TransferRequest::Op::kRead, sources[i], buffers[i], offsets[i], batch);
    if (!st.ok()) note(i, sources[i][0].segment, st);
    owner.resize(batch.size(), i);
  }
  auto results = engine_->Submit(batch);
  for (size_t k = 0; k < results.size(); ++k) {
    if (!results[k].ok()) note(owner[k], batch[k].segment, results[k]);
  }
  // A key whose best replica failed is read again from its next ones, one at a time.
  for (size_t i = 0; i < n; ++i) {
    if (failed[i].ok()) continue;
    replica_read_failures_.fetch_add(1, std::memory_order_relaxed);
    std::vector<GrantedReplica> rest;
    {
      MutexLock lock(sessions_mu_);
      if (auto it = get_sessions_.find(keys[i]); it != get_sessions_.end()) rest = it->second.replicas;
    }
    Status st = failed[i];
    for (size_t r = 1; r < rest.size() && !st.ok(); ++r) {
      std::vector<TransferRequest> again;
      st = MoveRanges(TransferRequest::Op::kRead, {rest[r]}, buffers[i], offsets[i], again);
      for (const Status& s : engine_->Submit(again)) {
        if (st.ok() && !s.ok()) st = s;
      }
      if (!st.ok()) members_.unreachable().Note(rest[r].segment, st);
    }
    if (!st.ok()) out[i] = st;
  }
  return out;
}

void DataPath::GetSessionEnd(const MasterApi::Keys& keys) {
  MasterApi::Keys ended;
  std::vector<uint64_t> pins;
  {
    MutexLock lock(sessions_mu_);
    for (const auto& key : keys) {
      auto it = get_sessions_.find(key);
      if (it == get_sessions_.end()) continue;
      ended.push_back(key);
      pins.push_back(it->second.pin);
      get_sessions_.erase(it);
    }
  }
  if (ended.empty()) return;
  for (uint64_t pin : pins) members_.pins().Remove(pin);
  (void)master().BatchReadEnd(ctx(), ended, pins);  // one-way, as every read's end
}

std::vector<Status> DataPath::PutSessionStart(const MasterApi::Keys& keys, const std::vector<uint64_t>& sizes,
                                              const PlacementConfig& config) {
  const size_t n = keys.size();
  if (sizes.size() != n) return std::vector<Status>(n, Status(Code::kInvalidParams, "keys and sizes differ in length"));
  if (!config.group_ids.empty() && config.group_ids.size() != n) {
    return std::vector<Status>(n, Status(Code::kInvalidParams, "group_ids and keys differ in length"));
  }
  std::vector<Status> out(n);
  for (const auto& key : keys) locations_.Drop(key);
  MasterApi::Keys start_keys;
  std::vector<uint64_t> start_sizes;
  std::vector<size_t> where;
  {
    MutexLock lock(sessions_mu_);
    for (size_t i = 0; i < n; ++i) {
      if (sizes[i] == 0) {
        out[i] = Status(Code::kInvalidParams, "value is empty");
      } else if (put_sessions_.count(keys[i])) {
        out[i] = Status(Code::kInvalidParams, "a put session for the key is open");
      } else {
        start_keys.push_back(keys[i]);
        start_sizes.push_back(sizes[i]);
        where.push_back(i);
      }
    }
  }
  if (start_keys.empty()) return out;
  auto starts = master().BatchPutStart(ctx(), start_keys, start_sizes, ForKeys(config, where), WriteMode::kPut);
  {
    MutexLock lock(sessions_mu_);
    for (size_t j = 0; j < start_keys.size(); ++j) {
      const size_t i = where[j];
      if (j >= starts.size() || !starts[j].ok()) {
        out[i] = j < starts.size() ? starts[j].status() : Status(Code::kRpcFail, "no answer for the key");
        continue;
      }
      put_sessions_[keys[i]] = PutSession{start_sizes[j], std::move(starts[j]).value(), 0, false};
    }
  }
  return out;
}

std::vector<Result<uint64_t>> DataPath::PutSessionRanges(const MasterApi::Keys& keys,
                                                          const std::vector<std::vector<Slice>>& buffers,
                                                          const std::vector<std::vector<uint64_t>>& offsets) {
  const size_t n = keys.size();
  if (buffers.size() != n || offsets.size() != n) {
    return std::vector<Result<uint64_t>>(n, Status(Code::kInvalidParams, "keys, buffers and offsets differ in length"));
  }
  std::vector<Result<uint64_t>> out(n, Result<uint64_t>(uint64_t{0}));
  std::vector<std::vector<GrantedReplica>> targets(n);
  std::vector<bool> counted(n, false);
  for (size_t i = 0; i < n; ++i) {
    auto size = CallerSize(buffers[i]);
    MutexLock lock(sessions_mu_);
    auto it = put_sessions_.find(keys[i]);
    if (it == put_sessions_.end() || it->second.sealed) {
      out[i] = Status(Code::kInvalidParams, "no open put session for the key (batch_put_session_start)");
    } else if (Status st = CheckRanges(buffers[i], offsets[i], it->second.size); !st.ok()) {
      out[i] = st;
    } else if (!size.ok()) {
      out[i] = size.status();
    } else {
      out[i] = *size;
      targets[i] = it->second.replicas;
      ++it->second.inflight;  // end and revoke wait for it
      counted[i] = true;
    }
  }
  std::vector<TransferRequest> batch;
  std::vector<size_t> owner;
  for (size_t i = 0; i < n; ++i) {
    if (!counted[i]) continue;
    if (Status st = MoveRanges(TransferRequest::Op::kWrite, targets[i], buffers[i], offsets[i], batch); !st.ok()) {
      out[i] = st;
    }
    owner.resize(batch.size(), i);
  }
  auto results = engine_->Submit(batch);
  for (size_t k = 0; k < results.size(); ++k) {
    if (results[k].ok()) continue;
    members_.unreachable().Note(batch[k].segment, results[k]);
    if (out[owner[k]].ok()) {
      out[owner[k]] = Status(results[k].code(), "writing a replica failed: " + results[k].message());
      replica_write_failures_.fetch_add(1, std::memory_order_relaxed);
    }
  }
  {
    MutexLock lock(sessions_mu_);
    for (size_t i = 0; i < n; ++i) {
      if (!counted[i]) continue;
      if (auto it = put_sessions_.find(keys[i]); it != put_sessions_.end()) --it->second.inflight;
    }
  }
  sessions_cv_.notify_all();
  return out;
}

std::vector<Status> DataPath::FinishPutSessions(const MasterApi::Keys& keys, bool publish) {
  std::vector<Status> out(keys.size());
  MasterApi::Keys finish;
  std::vector<size_t> where;
  {
    MutexUniqueLock lock(sessions_mu_);
    for (size_t i = 0; i < keys.size(); ++i) {
      auto it = put_sessions_.find(keys[i]);
      if (it == put_sessions_.end()) {
        out[i] = Status(Code::kInvalidParams, "no put session for the key");
        continue;
      }
      it->second.sealed = true;  // no range write starts after this
      finish.push_back(keys[i]);
      where.push_back(i);
    }
    // Range writes already under way finish first: their bytes are part of what is published.
    sessions_cv_.wait(lock, [&] {
      sessions_mu_.AssertHeld();  // the predicate runs with the lock held
      for (const std::string& k : finish) {
        auto it = put_sessions_.find(k);
        if (it != put_sessions_.end() && it->second.inflight != 0) return false;
      }
      return true;
    });
  }
  if (finish.empty()) return out;
  std::vector<Status> answers = publish ? master().BatchPutEnd(ctx(), finish, std::vector<std::optional<uint64_t>>(
                                                                                  finish.size(), std::nullopt))
                                        : master().BatchPutRevoke(ctx(), finish);
  MutexLock lock(sessions_mu_);
  for (size_t j = 0; j < finish.size(); ++j) {
    Status st = j < answers.size() ? answers[j] : Status(Code::kRpcFail, "no answer for the key");
    out[where[j]] = st;
    // Kept only when the master's answer was lost: the caller may end or revoke it again.
    if (st.code() != Code::kRpcFail && st.code() != Code::kRpcTimeout) put_sessions_.erase(finish[j]);
  }
  return out;
}

std::vector<Status> DataPath::PutSessionEnd(const MasterApi::Keys& keys) { return FinishPutSessions(keys, true); }
std::vector<Status> DataPath::PutSessionRevoke(const MasterApi::Keys& keys) { return FinishPutSessions(keys, false); }

}  // namespace yb
