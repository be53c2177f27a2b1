// DataPath: reads. A read pins the object at the master (GetReplicaList with pin) and releases it
// with ReadEnd, so no timer can fail it; replicas are tried in order (replica_order.h).
#include <unistd.h>

#include <cstring>
#include <optional>

#include "client/data_path.h"
#include "client/replica_order.h"
#include "common/disk_key.h"
#include "common/log.h"

namespace yb {
namespace {

// The first `size` bytes of `slices`.
std::vector<Slice> Trim(const std::vector<Slice>& slices, uint64_t size) {
  std::vector<Slice> out;
  for (const auto& s : slices) {
    if (size == 0) break;
    uint64_t n = std::min(size, s.size);
    if (n > 0) out.push_back({s.ptr, n});
    size -= n;
  }
  return out;
}

Status TooSmall(uint64_t have, uint64_t need) {
  return Status(Code::kBufferOverflow, "buffer of " + std::to_string(have) + " bytes is smaller than the object (" +
                                           std::to_string(need) + " bytes)");
}

// What the master declared, checked before a byte moves: a replica of another size than its
// object would be read past the caller's buffer.
Status CheckDeclared(const ObjectInfo& info) {
  for (const GrantedReplica& r : info.replicas) {
    if (r.size != info.size) {
      return Status(Code::kInvalidReplica, "the master declared a replica of " + std::to_string(r.size) +
                                               " bytes for an object of " + std::to_string(info.size));
    }
  }
  return Status::OK();
}

// A buffer for a whole object of the size the master declared; an error, not an exception, when
// this process cannot hold it (more than the machine's memory is not even tried).
Result<std::string> BufferFor(uint64_t size) {
  static const uint64_t physical =
      static_cast<uint64_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  if (size > physical) {
    return Status(Code::kInternal, "an object of " + std::to_string(size) + " bytes is larger than this machine's " +
                                       std::to_string(physical) + " bytes of memory");
  }
  try {
    return std::string(size, '\0');
  } catch (const std::exception&) {
    return Status(Code::kInternal, "cannot hold an object of " + std::to_string(size) + " bytes in memory");
  }
}

}  // namespace

Status DataPath::ReadFromDisk(const std::string& key, const GrantedReplica& replica, const std::vector<Slice>& slices,
                              ChecksumSink* checksum) {
  const std::string disk_key = DiskKey(config_.tenant, key);
  disk_reads_.fetch_add(1, std::memory_order_relaxed);
  // The object comes whole: straight into a single slice of host memory, else through a buffer
  // and scattered (device memory with the driver's copies; its checksum taken from the buffer).
  const bool device = OnDevice(slices);
  std::string buffer;
  void* dst = slices.size() == 1 && !device ? slices[0].ptr : nullptr;
  if (!dst) {
    buffer.resize(replica.size);
    dst = buffer.data();
  }
  TransferRequest r{TransferRequest::Op::kReadObject, replica.segment, 0, dst, replica.size, &disk_key, replica.grant,
                    device ? nullptr : checksum, 0};
  YB_RETURN_IF_ERROR(engine_->Submit({r})[0]);
  if (device && checksum) checksum->Moved(0, buffer.data(), buffer.size());
  if (!buffer.empty()) {
    uint64_t off = 0;
    for (const auto& s : slices) {
      YB_RETURN_IF_ERROR(DeviceMemory::Get().Copy(s.ptr, buffer.data() + off, s.size));
      off += s.size;
    }
  }
  return Status::OK();
}

void DataPath::EndRead(const std::string& key, uint64_t pin) {
  members_.pins().Remove(pin);
  (void)master().ReadEnd(ctx(), key, pin);  // one-way: if lost, the next heartbeats do not name the pin
}

Status DataPath::ReadReplicas(const std::string& key, const ObjectInfo& info, const std::vector<Slice>& target,
                              size_t first, Status prior) {
  YB_RETURN_IF_ERROR(CheckDeclared(info));
  auto ordered = OrderReplicas(info.replicas, [this](SegmentId s) { return members_.IsLocal(s); });
  if (ordered.empty()) return Status(Code::kInvalidReplica, "object has no complete replica");
  Status last = std::move(prior);
  ChecksumSink sum;
  ChecksumSink* check = Verifies(info) ? &sum : nullptr;
  for (size_t i = first; i < ordered.size(); ++i) {
    sum.Reset(info.size);
    Status st = ordered[i].kind == ReplicaKind::kLocalDisk
                    ? ReadFromDisk(key, ordered[i], target, check)
                    : Move(TransferRequest::Op::kRead, ordered[i], target, check);
    if (st.ok() && check && sum.Finish(target) != *info.checksum) {
      st = Status(Code::kChecksumMismatch,
                  "replica on segment " + std::to_string(ordered[i].segment) + " does not match the checksum");
    }
    if (st.ok()) return st;
    replica_read_failures_.fetch_add(1, std::memory_order_relaxed);
    members_.unreachable().Note(ordered[i].segment, st);
    YB_LOG_DEBUG("read of a {} replica on segment {} failed, trying the next replica: {}",
                 ordered[i].kind == ReplicaKind::kLocalDisk ? "disk" : "memory", ordered[i].segment, st.ToString());
    last = st;
  }
  return last;
}

Status DataPath::ReadCached(const ObjectInfo& info, const std::vector<Slice>& target) {
  auto ordered = OrderReplicas(info.replicas, [this](SegmentId s) { return members_.IsLocal(s); });
  if (ordered.empty() || !info.checksum) return Status(Code::kInvalidReplica, "no cached replica");
  ChecksumSink sum(info.size);
  YB_RETURN_IF_ERROR(Move(TransferRequest::Op::kRead, ordered[0], target, &sum));
  if (sum.Finish(target) != *info.checksum) {
    return Status(Code::kChecksumMismatch, "the cached location holds other bytes now");
  }
  return Status::OK();
}

Result<uint64_t> DataPath::Read(const std::string& key, const std::vector<Slice>& slices) {
  auto total = CallerSize(slices);
  if (!total.ok()) return total.status();
  if (auto cached = locations_.Find(key); cached && cached->size <= *total) {  // else the master says how big
    if (ReadCached(*cached, Trim(slices, cached->size)).ok()) return cached->size;
    locations_.NoteStale(key);
  }
  auto info = master().GetReplicaList(ctx(), key, true);
  if (!info.ok()) return info.status();
  members_.pins().Add(key, info->read_pin);
  Status st =
      info->size > *total ? TooSmall(*total, info->size) : ReadReplicas(key, *info, Trim(slices, info->size), 0);
  EndRead(key, info->read_pin);
  if (!st.ok()) return st;
  RememberRead(key, *info);
  return info->size;
}

Result<std::string> DataPath::ReadString(const std::string& key) {
  if (auto cached = locations_.Find(key)) {
    auto out = BufferFor(cached->size);
    if (out.ok() && ReadCached(*cached, {{out->data(), out->size()}}).ok()) return out;
    locations_.NoteStale(key);
  }
  auto info = master().GetReplicaList(ctx(), key, true);
  if (!info.ok()) return info.status();
  members_.pins().Add(key, info->read_pin);
  auto out = BufferFor(info->size);
  Status st = out.ok() ? ReadReplicas(key, *info, {{out->data(), out->size()}}, 0) : out.status();
  EndRead(key, info->read_pin);
  if (!st.ok()) return st;
  RememberRead(key, *info);
  return out;
}

std::vector<Result<uint64_t>> DataPath::BatchRead(const MasterApi::Keys& keys,
                                                  const std::vector<std::vector<Slice>>& buffers) {
  const size_t n = keys.size();
  std::vector<Result<uint64_t>> out(n, Result<uint64_t>(uint64_t{0}));
  if (buffers.size() != n) {
    return std::vector<Result<uint64_t>>(n, Status(Code::kInvalidParams, "keys and buffers differ in length"));
  }
  std::vector<uint64_t> totals(n, 0);
  for (size_t i = 0; i < n; ++i) {
    auto t = CallerSize(buffers[i]);
    if (!t.ok()) out[i] = t.status();
    totals[i] = t.ok() ? *t : 0;
  }
  // The keys with a cached location first, in one batch of transfers; the rest (and any whose
  // location turned out stale) from the master.
  std::vector<bool> done(n, false);
  if (locations_.enabled()) {
    std::vector<std::optional<ObjectInfo>> cached(n);
    std::vector<ChecksumSink> sums(n);
    std::vector<std::vector<Slice>> targets(n);
    std::vector<TransferRequest> reqs;
    std::vector<size_t> owner;
    for (size_t i = 0; i < n; ++i) {
      if (!out[i].ok() || !(cached[i] = locations_.Find(keys[i]))) continue;
      const GrantedReplica best =
          OrderReplicas(cached[i]->replicas, [this](SegmentId s) { return members_.IsLocal(s); }).front();
      targets[i] = Trim(buffers[i], cached[i]->size);
      // Staged buffers go the master's way: the cache serves what moves in one batch.
      if (cached[i]->size > totals[i] || OnDevice(targets[i]) || NeedsRegistration(best, targets[i])) {
        cached[i].reset();
        continue;
      }
      sums[i].Reset(cached[i]->size);
      AppendRequests(TransferRequest::Op::kRead, best, targets[i], reqs, &sums[i]);
      owner.resize(reqs.size(), i);
      done[i] = true;
    }
    auto results = engine_->Submit(reqs);
    for (size_t k = 0; k < results.size(); ++k) {
      if (!results[k].ok()) done[owner[k]] = false;
    }
    for (size_t i = 0; i < n; ++i) {
      if (!cached[i]) continue;
      if (done[i] && sums[i].Finish(targets[i]) == *cached[i]->checksum) {
        out[i] = cached[i]->size;
      } else {
        done[i] = false;
        locations_.NoteStale(keys[i]);
      }
    }
  }
  MasterApi::Keys ask;
  std::vector<std::vector<Slice>> ask_buffers;
  std::vector<uint64_t> ask_totals;
  std::vector<Result<uint64_t>> ask_out;
  std::vector<size_t> where;
  for (size_t i = 0; i < n; ++i) {
    if (done[i]) continue;
    ask.push_back(keys[i]);
    ask_buffers.push_back(buffers[i]);
    ask_totals.push_back(totals[i]);
    ask_out.push_back(out[i]);
    where.push_back(i);
  }
  if (ask.empty()) return out;
  auto infos = master().BatchGetReplicaList(ctx(), ask, true);
  infos.resize(ask.size(), Status(Code::kRpcFail, "no answer for the key"));
  for (size_t j = 0; j < ask.size(); ++j) {
    if (infos[j].ok()) members_.pins().Add(ask[j], infos[j]->read_pin);
  }
  auto got = ReadPinned(ask, ask_buffers, ask_totals, infos, std::move(ask_out));
  for (size_t j = 0; j < ask.size(); ++j) {
    if (got[j].ok()) RememberRead(ask[j], *infos[j]);
    out[where[j]] = std::move(got[j]);
  }
  return out;
}

std::vector<Result<uint64_t>> DataPath::ReadPinned(const MasterApi::Keys& keys,
                                                   const std::vector<std::vector<Slice>>& buffers,
                                                   const std::vector<uint64_t>& totals,
                                                   const std::vector<Result<ObjectInfo>>& infos,
                                                   std::vector<Result<uint64_t>> out) {
  const size_t n = keys.size();
  // First attempt: every object from its best replica, in one batch.
  std::vector<TransferRequest> reqs;
  std::vector<size_t> owner;
  std::vector<std::vector<Slice>> targets(n);
  std::vector<std::vector<GrantedReplica>> ordered(n);
  std::vector<bool> ok(n, false), attempted(n, false);
  std::vector<ChecksumSink> sums(n);  // of the first attempt, as its bytes arrive
  StagingLeases staged_batch(*staging_);
  std::vector<uint8_t*> staged(n, nullptr);  // host values read through staging, with the batch
  for (size_t i = 0; i < n; ++i) {
    if (!out[i].ok()) continue;
    if (!infos[i].ok()) {
      out[i] = infos[i].status();
      continue;
    }
    if (infos[i]->size > totals[i]) {
      out[i] = TooSmall(totals[i], infos[i]->size);
      continue;
    }
    if (Status st = CheckDeclared(*infos[i]); !st.ok()) {
      out[i] = st;
      continue;
    }
    targets[i] = Trim(buffers[i], infos[i]->size);
    ordered[i] = OrderReplicas(infos[i]->replicas, [&](SegmentId s) { return members_.IsLocal(s); });
    // Below, one by one: a disk replica first, or device memory (staged through the driver).
    if (ordered[i].empty() || ordered[i][0].kind != ReplicaKind::kMemory || OnDevice(targets[i])) continue;
    std::vector<Slice> into = targets[i];
    if (NeedsRegistration(ordered[i][0], targets[i])) {
      // Host memory the transport cannot reach: through a staging range, with the batch.
      if (!(staged[i] = staged_batch.Allocate(infos[i]->size))) continue;
      into = {{staged[i], infos[i]->size}};
    }
    ok[i] = attempted[i] = true;
    ChecksumSink* check = nullptr;
    if (Verifies(*infos[i])) {
      sums[i].Reset(infos[i]->size);
      check = &sums[i];
    }
    AppendRequests(TransferRequest::Op::kRead, ordered[i][0], into, reqs, check);
    owner.resize(reqs.size(), i);
  }
  auto results = engine_->Submit(reqs);
  for (size_t k = 0; k < results.size(); ++k) {
    if (results[k].ok()) continue;
    ok[owner[k]] = false;
    members_.unreachable().Note(reqs[k].segment, results[k]);
  }
  for (size_t i = 0; i < n; ++i) {
    if (staged[i] && ok[i]) Scatter(staged[i], targets[i]);
  }
  staged_batch.Release();  // the one-by-one reads below stage through the buffer too
  for (size_t i = 0; i < n; ++i) {
    if (!out[i].ok() || !infos[i].ok()) continue;
    const ObjectInfo& info = *infos[i];
    bool good = ok[i] && (!Verifies(info) || sums[i].Finish(targets[i]) == *info.checksum);
    // On a failed first attempt, go on from the second replica.
    Status prior = !attempted[i] ? Status(Code::kTransferFail, "no replica could be read")
                   : ok[i]       ? Status(Code::kChecksumMismatch, "first replica does not match the checksum")
                                 : Status(Code::kTransferFail, "first replica could not be read");
    Status st = good ? Status::OK() : ReadReplicas(keys[i], info, targets[i], attempted[i] ? 1 : 0, prior);
    out[i] = st.ok() ? Result<uint64_t>(info.size) : Result<uint64_t>(st);
  }
  MasterApi::Keys pinned_keys;
  std::vector<uint64_t> pins;
  for (size_t i = 0; i < n; ++i) {
    if (infos[i].ok()) {
      pinned_keys.push_back(keys[i]);
      pins.push_back(infos[i]->read_pin);
    }
  }
  if (!pinned_keys.empty()) {
    for (uint64_t pin : pins) members_.pins().Remove(pin);
    (void)master().BatchReadEnd(ctx(), pinned_keys, pins);
  }
  return out;
}

void ViewPins::End(const std::string& key, uint64_t pin) {
  MutexLock lock(mu_);
  if (path_) path_->EndRead(key, pin);
}

void ViewPins::Stop() {
  MutexLock lock(mu_);
  path_ = nullptr;
}

namespace {

// What an in-place view keeps: the memory mapped, and the object's pin until the view goes.
struct ViewHold {
  ViewHold(std::shared_ptr<const void> m, std::shared_ptr<ViewPins> p, std::string k, uint64_t n)
      : memory(std::move(m)), pins(std::move(p)), key(std::move(k)), pin(n) {}
  ~ViewHold() { pins->End(key, pin); }
  ViewHold(const ViewHold&) = delete;
  ViewHold& operator=(const ViewHold&) = delete;
  std::shared_ptr<const void> memory;
  std::shared_ptr<ViewPins> pins;
  std::string key;
  uint64_t pin;
};

}  // namespace

std::optional<ObjectView> DataPath::ViewInPlace(const ObjectInfo& info) {
  if (!CheckDeclared(info).ok()) return std::nullopt;
  for (const GrantedReplica& r : OrderReplicas(info.replicas, [this](SegmentId s) { return members_.IsLocal(s); })) {
    if (r.kind != ReplicaKind::kMemory) continue;
    TransferRequest q;
    q.op = TransferRequest::Op::kRead;
    q.segment = r.segment;
    q.offset = r.offset;
    q.length = r.size;
    q.grant = r.grant;
    std::shared_ptr<const void> keep;
    const uint8_t* p = engine_->View(q, &keep);
    if (!p) continue;
    if (Verifies(info)) {
      struct Piece {
        const uint8_t* ptr;
        uint64_t size;
      };
      ChecksumSink sum(info.size);
      if (sum.Finish(std::vector<Piece>{{p, info.size}}) != *info.checksum) {
        replica_read_failures_.fetch_add(1, std::memory_order_relaxed);
        YB_LOG_DEBUG("replica on segment {} does not match the checksum: viewing the next", r.segment);
        continue;
      }
    }
    return ObjectView{p, info.size, true, std::move(keep)};
  }
  return std::nullopt;
}

std::vector<Result<ObjectView>> DataPath::ReadViews(const MasterApi::Keys& keys) {
  const size_t n = keys.size();
  std::vector<Result<ObjectView>> out(n, Result<ObjectView>(ObjectView{}));
  auto infos = master().BatchGetReplicaList(ctx(), keys, true);
  infos.resize(n, Status(Code::kRpcFail, "no answer for the key"));
  // The objects not shown in place are copied under the pins just taken (ReadPinned ends them).
  MasterApi::Keys copied;
  std::vector<Result<ObjectInfo>> copied_infos;
  std::vector<std::shared_ptr<std::string>> copies;
  std::vector<size_t> where;
  for (size_t i = 0; i < n; ++i) {
    if (!infos[i].ok()) {
      out[i] = infos[i].status();
      continue;
    }
    members_.pins().Add(keys[i], infos[i]->read_pin);
    if (config_.get_buffer_in_place) {
      if (auto view = ViewInPlace(*infos[i])) {
        view->keep = std::make_shared<ViewHold>(std::move(view->keep), view_pins_, keys[i], infos[i]->read_pin);
        out[i] = std::move(*view);
        continue;
      }
    }
    auto buffer = BufferFor(infos[i]->size);
    if (!buffer.ok()) {
      out[i] = buffer.status();
      EndRead(keys[i], infos[i]->read_pin);
      continue;
    }
    copies.push_back(std::make_shared<std::string>(std::move(buffer).value()));
    copied.push_back(keys[i]);
    copied_infos.push_back(std::move(infos[i]));
    where.push_back(i);
  }
  if (copied.empty()) return out;
  std::vector<std::vector<Slice>> slices;
  std::vector<uint64_t> totals;
  for (const auto& c : copies) {
    slices.push_back({{c->data(), c->size()}});
    totals.push_back(c->size());
  }
  auto got = ReadPinned(copied, slices, totals, copied_infos,
                        std::vector<Result<uint64_t>>(copied.size(), Result<uint64_t>(uint64_t{0})));
  for (size_t j = 0; j < copied.size(); ++j) {
    if (got[j].ok()) {
      out[where[j]] = ObjectView{copies[j]->data(), copies[j]->size(), false, copies[j]};
    } else {
      out[where[j]] = got[j].status();
    }
  }
  return out;
}

std::vector<Result<std::string>> DataPath::BatchReadStrings(const MasterApi::Keys& keys) {
  std::vector<Result<std::string>> out(keys.size(), Result<std::string>(std::string()));
  // The sizes: from the cached locations where there are some, else from the master (no pin).
  std::vector<std::optional<uint64_t>> sizes(keys.size());
  std::vector<bool> from_cache(keys.size(), false);
  MasterApi::Keys ask;
  std::vector<size_t> asked;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (auto cached = locations_.Find(keys[i], /*read=*/false)) {
      sizes[i] = cached->size;
      from_cache[i] = true;
    } else {
      ask.push_back(keys[i]);
      asked.push_back(i);
    }
  }
  if (!ask.empty()) {
    auto answers = master().BatchGetReplicaList(ctx(), ask, false);
    for (size_t j = 0; j < ask.size(); ++j) {
      if (j >= answers.size()) {
        out[asked[j]] = Status(Code::kRpcFail, "no answer for the key");
      } else if (!answers[j].ok()) {
        out[asked[j]] = answers[j].status();
      } else {
        sizes[asked[j]] = answers[j]->size;
      }
    }
  }
  MasterApi::Keys found_keys;
  std::vector<size_t> where;
  std::vector<std::string> values;
  values.reserve(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    if (!sizes[i]) continue;
    auto buffer = BufferFor(*sizes[i]);
    if (!buffer.ok()) {
      out[i] = buffer.status();
      continue;
    }
    found_keys.push_back(keys[i]);
    where.push_back(i);
    values.push_back(std::move(buffer).value());
  }
  std::vector<std::vector<Slice>> slices;
  for (auto& v : values) slices.push_back({{v.data(), v.size()}});
  auto got = BatchRead(found_keys, slices);
  for (size_t j = 0; j < found_keys.size(); ++j) {
    const size_t i = where[j];
    if (got[j].ok()) {
      values[j].resize(*got[j]);  // replaced by a smaller value in between: its own size
      out[i] = std::move(values[j]);
    } else if (got[j].code() == Code::kBufferOverflow && from_cache[i]) {
      out[i] = ReadString(keys[i]);  // replaced by a larger value since it was cached: its size now
    } else {
      // A value replaced by a larger one in between reads as BUFFER_OVERFLOW: the caller sees an error.
      out[i] = got[j].status();
    }
  }
  return out;
}

}  // namespace yb
