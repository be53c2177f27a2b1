// DataPath: a client's reads and writes of object bytes. It asks the master where (PutStart,
// GetReplicaList), moves the bytes itself through the transfer engine (staging through the local
// buffer when a transport needs registered memory and the caller's memory is not, and through
// pinned host slots when the caller's memory is a GPU's: device_memory.h), and publishes
// or releases (PutEnd / PutRevoke, ReadEnd). It owns the staging buffer, the registry of the
// caller's registered buffers and the SSD tier (the Offloader) when the client has one.
//
// Writes, single or batched, go through one path: a round starts every key, copies every replica
// and ends or revokes each key on its own; keys whose replica write failed in transfer get one more
// round avoiding the segments that failed (and, at the master, their owners' others): most likely
// their node went away and the master has not noticed yet (client_ttl).
//
// Thread-safe; callers' threads run the reads and writes, the SSD tier its rounds on the scheduler.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "api/master_api.h"
#include "client/buffers.h"
#include "client/client_internal.h"
#include "client/device_memory.h"
#include "client/location_cache.h"
#include "client/membership.h"
#include "client/offloader.h"
#include "client/reservations.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/scheduler.h"
#include "transfer/transfer_engine.h"
#include "yuebing/client.h"

namespace yb {

class DataPath;

// Ends the pins of in-place views (DataPath::ReadViews) as they are let go, while the DataPath that
// gave them lives; after Stop (the client is going) the master ends them with the client.
class ViewPins {
 public:
  explicit ViewPins(DataPath* path) : path_(path) {}
  void End(const std::string& key, uint64_t pin);
  void Stop();

 private:
  Mutex mu_;
  DataPath* path_ GUARDED_BY(mu_);
};

class DataPath {
 public:
  DataPath(const ClientConfig& config, Membership& members, std::shared_ptr<TransferEngine> engine, const Clock& clock);
  ~DataPath();
  DataPath(const DataPath&) = delete;
  DataPath& operator=(const DataPath&) = delete;

  // Maps the staging buffer (local_buffer_size).
  Status Init();

  // ---- writes: one status per key
  std::vector<Status> Write(const MasterApi::Keys& keys, const std::vector<std::vector<Slice>>& values,
                            const ReplicateConfig& config, WriteMode mode);

  // ---- reads
  // Reads a whole object into `slices` from its best replica, falling back to the next ones.
  Result<uint64_t> Read(const std::string& key, const std::vector<Slice>& slices);
  Result<std::string> ReadString(const std::string& key);
  std::vector<Result<uint64_t>> BatchRead(const MasterApi::Keys& keys, const std::vector<std::vector<Slice>>& buffers);
  std::vector<Result<std::string>> BatchReadStrings(const MasterApi::Keys& keys);
  // Client::GetView / BatchGetView: each object in place where a transport shows it, else copied.
  std::vector<Result<ObjectView>> ReadViews(const MasterApi::Keys& keys);
  // Views let go from now on end no pin here (called as the client goes).
  void StopViews() { view_pins_->Stop(); }

  // The caller's slices' total size; INVALID_PARAMS for a null one, an overflow, or a slice that
  // starts in a registered buffer and runs past its end (no byte is moved then).
  Result<uint64_t> CallerSize(const std::vector<Slice>& slices) const;
  BufferRegistry& registered() { return registered_; }
  const BufferRegistry& registered() const { return registered_; }

  // ---- sessions (client_sessions.cc): Mooncake's layer-wise loads and stores, one master call
  // to start and one to end, the ranges in between transfers only.
  std::vector<Status> GetSessionStart(const MasterApi::Keys& keys);
  // Per key: the bytes of its ranges (buffers[i][j] gets offsets[i][j] onwards of the object).
  std::vector<Result<uint64_t>> GetSessionRanges(const MasterApi::Keys& keys,
                                                 const std::vector<std::vector<Slice>>& buffers,
                                                 const std::vector<std::vector<uint64_t>>& offsets);
  void GetSessionEnd(const MasterApi::Keys& keys);
  std::vector<Status> PutSessionStart(const MasterApi::Keys& keys, const std::vector<uint64_t>& sizes,
                                      const PlacementConfig& config);
  // Per key: the bytes written to each replica (buffers[i][j] lands at offsets[i][j] of the object).
  std::vector<Result<uint64_t>> PutSessionRanges(const MasterApi::Keys& keys,
                                                 const std::vector<std::vector<Slice>>& buffers,
                                                 const std::vector<std::vector<uint64_t>>& offsets);
  std::vector<Status> PutSessionEnd(const MasterApi::Keys& keys);
  std::vector<Status> PutSessionRevoke(const MasterApi::Keys& keys);

  // ---- the SSD tier
  // Opens it, serves it under this client's segments (in `local` and `served`), registers what it
  // holds with the master, and runs its rounds on `scheduler`.
  Status StartSsdTier(Scheduler& scheduler, const StorageFault& fault,
                      const std::shared_ptr<LocalSegmentRegistry>& local, LocalSegmentRegistry* served);
  void StopSsdTier(LocalSegmentRegistry& local, LocalSegmentRegistry* served);
  Offloader* ssd_tier() const { return offloader_.get(); }
  // Replica transfers of this client's reads and puts that failed (ClientStats).
  uint64_t replica_read_failures() const { return replica_read_failures_.load(std::memory_order_relaxed); }
  uint64_t disk_reads() const { return disk_reads_.load(std::memory_order_relaxed); }
  uint64_t replica_write_failures() const { return replica_write_failures_.load(std::memory_order_relaxed); }
  // Where this client read lately (ClientStats; its own writes and removes drop entries).
  LocationCache& locations() { return locations_; }
  // The space it keeps started ahead for its Puts (client_write.cc), and revoking all of it.
  Reservations& reservations() { return reservations_; }
  void DropReservations();

 private:
  // One round of writes over the keys `pending` (indices): start, copy, end or revoke; sets `out`
  // for each. Returns the keys whose replica writes failed in transfer, adding the segments that
  // failed to `failed_segments` (none: no round can help).
  std::vector<size_t> WriteRound(const MasterApi::Keys& keys, const std::vector<std::vector<Slice>>& values,
                                 const std::vector<uint64_t>& sizes, const std::vector<size_t>& pending,
                                 const PlacementConfig& config, WriteMode mode, int round, std::vector<Status>& out,
                                 std::vector<SegmentId>& failed_segments);
  // A round's steps (client_write.cc): where each value goes (a reservation, or a PutStart, with
  // the reservations started beside), the copies, and the calls that end the round.
  struct Round;
  void StartRound(Round& r);
  void CopyRound(Round& r);
  void EndRound(Round& r);
  // EndRound's commit, for a round that used reservations (or revokes some).
  void CommitRound(Round& r, const MasterApi::Keys& end_keys, const MasterApi::Keys& end_reservations,
                   const std::vector<std::optional<uint64_t>>& checksums, const std::vector<size_t>& end_idx,
                   const MasterApi::Keys& revoke_keys);
  friend class ViewPins;
  // Ends a read: forgets the pin, then sends ReadEnd.
  void EndRead(const std::string& key, uint64_t pin);
  // BatchRead once the master answered (`infos`, their pins held): moves the bytes, then ends
  // every pin. `out` holds the callers' errors found before; `totals` their buffers' sizes.
  std::vector<Result<uint64_t>> ReadPinned(const MasterApi::Keys& keys, const std::vector<std::vector<Slice>>& buffers,
                                           const std::vector<uint64_t>& totals,
                                           const std::vector<Result<ObjectInfo>>& infos,
                                           std::vector<Result<uint64_t>> out);
  // The object's bytes where a transport shows them in place, checked against its checksum;
  // nullopt when no memory replica is in reach so.
  std::optional<ObjectView> ViewInPlace(const ObjectInfo& info);
  // A read through a cached location (LocationCache): the best replica only, its checksum checked.
  Status ReadCached(const ObjectInfo& info, const std::vector<Slice>& target);
  // Remembers where a read found the object (when it is verified, so a stale location shows).
  void RememberRead(const std::string& key, const ObjectInfo& info) {
    if (Verifies(info)) locations_.Remember(key, info);
  }
  // Copies one object (info) into `target`, trying replicas in order from `first`; `prior` is the
  // error of the attempts already made (returned if no later replica succeeds).
  Status ReadReplicas(const std::string& key, const ObjectInfo& info, const std::vector<Slice>& target, size_t first,
                      Status prior = Status(Code::kTransferFail, "no replica could be read"));
  // Reads a whole object from a LOCAL_DISK replica (here or through its owner's transfer server).
  Status ReadFromDisk(const std::string& key, const GrantedReplica& replica, const std::vector<Slice>& slices,
                      ChecksumSink* checksum);
  // Moves a whole object to or from the caller's slices, staging when needed; `checksum` (if set)
  // is given the bytes as they move (a staged copy gives none: Finish hashes them).
  Status Move(TransferRequest::Op op, const GrantedReplica& replica, const std::vector<Slice>& slices,
              ChecksumSink* checksum = nullptr);
  // Through host staging slots: when a slice is device memory, or the transport needs registered
  // memory and a slice is not.
  bool NeedsStaging(const GrantedReplica& replica, const std::vector<Slice>& slices) const;
  // The transport to the replica needs registered memory and a slice is not in it.
  bool NeedsRegistration(const GrantedReplica& replica, const std::vector<Slice>& slices) const;
  // Ranges of objects: slices[j] <-> offsets[j] onwards of each replica, staged ones moved here,
  // the others appended to `batch`.
  Status MoveRanges(TransferRequest::Op op, const std::vector<GrantedReplica>& replicas,
                    const std::vector<Slice>& slices, const std::vector<uint64_t>& offsets,
                    std::vector<TransferRequest>& batch);
  // Seals put sessions, waits for their range writes, then ends (publish) or revokes them.
  std::vector<Status> FinishPutSessions(const MasterApi::Keys& keys, bool publish);
  Status MoveStaged(TransferRequest::Op op, const GrantedReplica& replica, const std::vector<Slice>& slices,
                    ChecksumSink* checksum);
  // Whether any slice is device memory (or one the driver cannot place: the staged move says why).
  static bool OnDevice(const std::vector<Slice>& slices);
  // Requests for a whole object over `slices`, appended to `out`.
  static void AppendRequests(TransferRequest::Op op, const GrantedReplica& replica, const std::vector<Slice>& slices,
                             std::vector<TransferRequest>& out, ChecksumSink* checksum = nullptr);
  // Whether a read of this object checks its bytes (the writer recorded a checksum, and the
  // configuration verifies).
  bool Verifies(const ObjectInfo& info) const { return info.checksum && config_.verify_checksum; }
  MasterApi& master() const { return members_.master(); }
  CallContext ctx() const { return members_.ctx(); }

  const ClientConfig& config_;
  Membership& members_;
  const std::shared_ptr<TransferEngine> engine_;
  const Clock& clock_;
  std::unique_ptr<StagingBuffer> staging_;
  BufferRegistry registered_;
  std::unique_ptr<Offloader> offloader_;  // the SSD tier, when enable_offload
  const std::shared_ptr<ViewPins> view_pins_ = std::make_shared<ViewPins>(this);
  LocationCache locations_{config_.location_cache_entries, config_.location_cache_ttl_ms, clock_};
  Reservations reservations_{config_.put_reservation_bytes, clock_};
  // Set when the master takes no Puts into reservations (an older one): none are made again.
  std::atomic<bool> no_reservations_{false};
  // Failed replica transfers: a node that went away fails every transfer that touches it until the
  // master drops its segments. Counted here and logged at debug level; the transport says once
  // per peer that it became unreachable, and once that it is back.
  std::atomic<uint64_t> replica_read_failures_{0}, replica_write_failures_{0};
  std::atomic<uint64_t> disk_reads_{0};  // objects read from a client's SSD tier (ReadFromDisk)

  // Open sessions, by key (Mooncake keys them so too: one session per key per client).
  struct GetSession {
    uint64_t size = 0;
    uint64_t pin = 0;                   // the master's read pin, released at the end
    std::vector<GrantedReplica> replicas;  // memory replicas, best first
  };
  struct PutSession {
    uint64_t size = 0;
    std::vector<GrantedReplica> replicas;  // every replica the master reserved
    int inflight = 0;                   // range writes under way
    bool sealed = false;                // ending or revoking: no new range write
  };
  Mutex sessions_mu_;
  std::condition_variable_any sessions_cv_;
  std::unordered_map<std::string, GetSession> get_sessions_ GUARDED_BY(sessions_mu_);
  std::unordered_map<std::string, PutSession> put_sessions_ GUARDED_BY(sessions_mu_);
};

// `config` for the keys `which` (indices) of its call: their group ids, when it names any.
PlacementConfig ForKeys(const PlacementConfig& config, const std::vector<size_t>& which);

// Total bytes of slices; INVALID_PARAMS for a null slice with a size.
Result<uint64_t> SlicesSize(const std::vector<Slice>& slices);
// Host slices copied, in order, into one contiguous range at `to` (Gather), or out of one at `from`
// (Scatter).
void Gather(const std::vector<Slice>& slices, uint8_t* to);
void Scatter(const uint8_t* from, const std::vector<Slice>& slices);

}  // namespace yb
