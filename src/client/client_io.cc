// DataPath: moving bytes between caller slices and replicas.
#include <algorithm>
#include <cstring>
#include <optional>

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

void Gather(const std::vector<Slice>& slices, uint8_t* to) {
  for (const auto& s : slices) {
    std::memcpy(to, s.ptr, s.size);
    to += s.size;
  }
}

void Scatter(const uint8_t* from, const std::vector<Slice>& slices) {
  for (const auto& s : slices) {
    std::memcpy(s.ptr, from, s.size);
    from += s.size;
  }
}

Result<uint64_t> DataPath::CallerSize(const std::vector<Slice>& slices) const {
  auto total = SlicesSize(slices);
  if (!total.ok()) return total;
  const DeviceMemory& dm = DeviceMemory::Get();
  for (const auto& s : slices) {
    if (s.size == 0) continue;
    YB_RETURN_IF_ERROR(registered_.CheckSpan(s.ptr, s.size));
    if (dm.available()) YB_RETURN_IF_ERROR(dm.Locate(s.ptr, s.size).status());
  }
  return total;
}

void DataPath::AppendRequests(TransferRequest::Op op, const GrantedReplica& replica, const std::vector<Slice>& slices,
                              std::vector<TransferRequest>& out, ChecksumSink* checksum) {
  uint64_t pos = 0;
  for (const auto& s : slices) {
    if (s.size == 0) continue;
    out.push_back({op, replica.segment, replica.offset + pos, s.ptr, s.size, nullptr, replica.grant, checksum, pos});
    pos += s.size;
  }
}

bool DataPath::OnDevice(const std::vector<Slice>& slices) {
  const DeviceMemory& dm = DeviceMemory::Get();
  if (!dm.available()) return false;
  return std::any_of(slices.begin(), slices.end(), [&](const Slice& s) {
    auto where = dm.Locate(s.ptr, s.size);
    return s.size > 0 && (!where.ok() || *where);  // an error: the staged move reports it
  });
}

bool DataPath::NeedsStaging(const GrantedReplica& replica, const std::vector<Slice>& slices) const {
  return OnDevice(slices) || NeedsRegistration(replica, slices);
}

bool DataPath::NeedsRegistration(const GrantedReplica& replica, const std::vector<Slice>& slices) const {
  Transport* t = engine_->Route(replica.segment);
  if (!t) return false;
  const bool registration = t->RequiresRegisteredMemory();
  return std::any_of(slices.begin(), slices.end(), [&](const Slice& s) {
    if (s.size == 0) return false;
    if (!t->ReachesLocal(s.ptr, s.size)) return true;
    return registration && !registered_.Contains(s.ptr, s.size) && !staging_->Contains(s.ptr, s.size);
  });
}

Status DataPath::Move(TransferRequest::Op op, const GrantedReplica& replica, const std::vector<Slice>& slices,
                      ChecksumSink* checksum) {
  if (NeedsStaging(replica, slices)) return MoveStaged(op, replica, slices, checksum);
  std::vector<TransferRequest> reqs;
  AppendRequests(op, replica, slices, reqs, checksum);
  for (auto& st : engine_->Submit(reqs)) YB_RETURN_IF_ERROR(st);
  return Status::OK();
}

namespace {

// The piece a move through device memory stages at a time (the pinned slots' size): a whole number
// of checksum chunks, so each chunk is hashed as its piece moves, never read again from the
// caller's memory. A read hands each chunk on to the device as it lands, so one piece overlaps
// itself; a write copies the next piece off the device while the current one goes out.
constexpr uint64_t kDevicePiece = 4ULL << 20;

// Calls fn(slice index, pointer, length) for each part of the caller's slices that holds object
// bytes [pos, pos + n), in order; stops at the first error.
template <typename Fn>
Status ForEachFragment(const std::vector<Slice>& slices, uint64_t pos, uint64_t n, Fn fn) {
  uint64_t start = 0;
  for (size_t i = 0; i < slices.size() && n > 0; ++i) {
    const uint64_t end = start + slices[i].size;
    if (end > pos) {
      const uint64_t off = pos - start, take = std::min(n, slices[i].size - off);
      YB_RETURN_IF_ERROR(fn(i, static_cast<uint8_t*>(slices[i].ptr) + off, take));
      pos += take;
      n -= take;
    }
    start = end;
  }
  return Status::OK();
}

}  // namespace

// A move through host staging slots, piece by piece. Two slots alternate: while one piece moves
// over the transport, the other's copy between the slot and the caller's memory runs (the driver's
// async copies for device memory; memcpy otherwise). The slots are the pinned ones of a device
// stager when any slice is device memory, else two ranges of the registered staging buffer.
Status DataPath::MoveStaged(TransferRequest::Op op, const GrantedReplica& replica, const std::vector<Slice>& slices,
                            ChecksumSink* checksum) {
  auto total = SlicesSize(slices);
  if (!total.ok()) return total.status();
  DeviceMemory& dm = DeviceMemory::Get();
  std::vector<DeviceMemory::Context> where(slices.size(), nullptr);
  DeviceMemory::Context ctx = nullptr;
  for (size_t i = 0; i < slices.size(); ++i) {
    auto c = dm.Locate(slices[i].ptr, slices[i].size);
    if (!c.ok()) return c.status();
    where[i] = *c;
    if (*c && ctx && *c != ctx) {
      return Status(Code::kInvalidParams, "one value's buffers are in the memory of two devices");
    }
    if (*c) ctx = *c;
  }
  uint8_t* slot[2] = {nullptr, nullptr};
  uint64_t piece = 0;
  DeviceMemory::StagerPtr stager;
  std::optional<StagingBuffer::Lease> lease[2];
  struct FreeLeases {
    StagingBuffer& staging;
    std::optional<StagingBuffer::Lease>* lease;
    ~FreeLeases() {
      for (int i = 0; i < 2; ++i) {
        if (lease[i]) staging.Free(*lease[i]);
      }
    }
  } free_leases{*staging_, lease};
  if (ctx) {
    piece = std::min(*total, kDevicePiece);
    auto got = dm.Acquire(ctx, kDevicePiece);
    if (!got.ok()) return got.status();
    stager = std::move(got).value();
    slot[0] = stager->slot(0);
    slot[1] = stager->slot(1);
  } else {
    // A quarter of the staging buffer each: two movers can share it.
    piece = std::min(*total, std::max<uint64_t>(staging_->capacity() / 4, 64));
    for (int i = 0; i < 2; ++i) {
      lease[i] = staging_->Allocate(piece);
      if (!lease[i]) return Status(Code::kNoAvailableHandle, "staging buffer (local_buffer_size) is too small or full");
      slot[i] = lease[i]->ptr;
    }
  }
  std::optional<DeviceMemory::Bind> bound;
  if (ctx) {
    bound.emplace(dm, ctx);
    YB_RETURN_IF_ERROR(bound->status());
  }
  // Caller memory -> slot, and slot -> caller memory, for object bytes [pos, pos + n).
  auto stage_in = [&](uint64_t pos, uint64_t n, uint8_t* to) {
    uint64_t at = 0;
    return ForEachFragment(slices, pos, n, [&](size_t i, uint8_t* p, uint64_t len) {
      Status st = Status::OK();
      if (where[i]) {
        st = stager->ToHostAsync(to + at, p, len);
      } else {
        std::memcpy(to + at, p, len);
      }
      at += len;
      return st;
    });
  };
  auto stage_out = [&](uint64_t pos, uint64_t n, const uint8_t* from) {
    uint64_t at = 0;
    return ForEachFragment(slices, pos, n, [&](size_t i, uint8_t* p, uint64_t len) {
      Status st = Status::OK();
      if (where[i]) {
        st = stager->ToDeviceAsync(p, from + at, len);
      } else {
        std::memcpy(p, from + at, len);
      }
      at += len;
      return st;
    });
  };
  auto wait = [&] { return stager ? stager->Wait() : Status::OK(); };
  auto transfer = [&](uint64_t pos, uint64_t n, uint8_t* local) {
    return engine_->Submit(
        {{op, replica.segment, replica.offset + pos, local, n, nullptr, replica.grant, checksum, pos}})[0];
  };
  const uint64_t pieces = (*total + piece - 1) / piece;
  auto length = [&](uint64_t k) { return std::min(piece, *total - k * piece); };
  Status st = Status::OK();
  if (op == TransferRequest::Op::kWrite) {
    st = stage_in(0, length(0), slot[0]);
    if (Status w = wait(); st.ok()) st = w;
    for (uint64_t k = 0; st.ok() && k < pieces; ++k) {
      // The next piece comes off the device while this one goes out.
      Status next = k + 1 < pieces ? stage_in((k + 1) * piece, length(k + 1), slot[(k + 1) % 2]) : Status::OK();
      st = transfer(k * piece, length(k), slot[k % 2]);
      Status w = wait();
      if (st.ok()) st = !next.ok() ? next : w;
    }
  } else if (stager) {
    // Each chunk goes on to the device as soon as it lands (the transport's threads queue the
    // copies on the stager's stream) while the rest of the piece is still arriving.
    class Onward : public LandingObserver {
     public:
      Onward(const DeviceMemory& dm, DeviceMemory::Context ctx, const std::function<Status(uint64_t, uint64_t,
                                                                                          const uint8_t*)>& out)
          : dm_(dm), ctx_(ctx), out_(out) {}
      void Landed(uint64_t pos, const void* p, uint64_t n) override {
        DeviceMemory::Bind bound(dm_, ctx_);
        Status st = bound.status().ok() ? out_(pos, n, static_cast<const uint8_t*>(p)) : bound.status();
        if (st.ok()) return;
        MutexLock lock(mu_);
        if (first_error_.ok()) first_error_ = st;
      }
      Status error() {
        MutexLock lock(mu_);
        return first_error_;
      }

     private:
      const DeviceMemory& dm_;
      DeviceMemory::Context ctx_;
      const std::function<Status(uint64_t, uint64_t, const uint8_t*)>& out_;
      Mutex mu_;
      Status first_error_ GUARDED_BY(mu_);
    };
    const std::function<Status(uint64_t, uint64_t, const uint8_t*)> out = stage_out;
    for (uint64_t k = 0; st.ok() && k < pieces; ++k) {
      Onward onward(dm, ctx, out);
      st = engine_->Submit({{op, replica.segment, replica.offset + k * piece, slot[k % 2], length(k), nullptr,
                             replica.grant, checksum, k * piece, &onward}})[0];
      Status w = wait();
      if (st.ok()) st = onward.error();
      if (st.ok()) st = w;
    }
  } else {
    for (uint64_t k = 0; st.ok() && k < pieces; ++k) {
      st = transfer(k * piece, length(k), slot[k % 2]);
      if (st.ok()) st = stage_out(k * piece, length(k), slot[k % 2]);
    }
  }
  if (Status w = wait(); st.ok()) st = w;  // no copy may still use a slot once it is given back
  return st;
}

}  // namespace yb
