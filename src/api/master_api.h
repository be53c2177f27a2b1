// MasterApi: everything a client asks of the master. The in-process MasterService implements it;
// the RPC client (MasterClient) implements it over the network. Clients hold only a MasterApi, so
// the same Client code runs embedded or remote. This module (src/api) holds the interface and its
// value types only, so that the client side and the master side both include it and neither
// includes the other.
//
// Only the batch forms (and the calls that have no key) are virtual: a decorator (leader redirect,
// authentication, metrics) implements those, and the single-key forms are helpers on the base that
// make a batch of one.
//
// Semantics (docs/design.md, "Objects"): two-phase Put (PutStart reserves, the writer copies,
// PutEnd publishes or PutRevoke frees); readers see only COMPLETE objects; GetReplicaList with `pin`
// holds the object's bytes for the caller until ReadEnd (or until the caller is declared dead), so
// no timer can fail a read in progress. Batch calls answer each key on its own, in order.
// All methods are thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/internal_types.h"
#include "yuebing/status.h"
#include "yuebing/types.h"

namespace yb {

using TenantIndex = uint16_t;

// Where the master is asked to place a Put: the caller's ReplicateConfig, and what the client's
// own retry adds to it.
struct PlacementConfig : ReplicateConfig {
  PlacementConfig() = default;
  PlacementConfig(const ReplicateConfig& c) : ReplicateConfig(c) {}  // NOLINT(google-explicit-constructor)
  // Segments not to allocate on, nor any other segment of their owners: a put that could not
  // write to them (their node went away, and the master has not noticed yet) is tried once more
  // elsewhere.
  std::vector<SegmentId> avoid_segments;
};

// What proves a caller's id and tenant: a keyed hash the master made of them (RegisterClient).
using CallerToken = std::array<uint8_t, 16>;

// Who is calling: what RegisterClient answered, sent with every request. The master checks the
// token over RPC (VerifyCaller): a caller cannot make up an id, borrow another's, or change tenant.
struct CallContext {
  ClientId client;
  TenantIndex tenant = 0;  // from RegisterClient
  CallerToken token{};     // from RegisterClient; all zeros: none
  // May do what only masters and operators may (drain any segment): true in the master's own
  // process; over RPC, the RPC server sets it from what the connection proved (never from the
  // wire): the cluster secret or the admin key, or a master that asks for no proof.
  bool privileged = true;
  // May act on objects of any tenant (a storage node's disk copies of every tenant's objects):
  // the privileged and the node key (net::Peer::any_tenant); a tenant's client acts in its own.
  bool any_tenant = true;
  // The address the call came from over RPC (valid during the call only); empty in process.
  std::string_view peer_address = {};
  bool has_token() const {
    for (uint8_t b : token) {
      if (b) return true;
    }
    return false;
  }
};

struct ClientRegistration {
  ClientId id;  // asked for: a new random one, or the one this client had
  std::string hostname;
  std::string tenant = "default";
  bool ssd_tier = false;  // the client has an SSD tier: the master may queue offloads to it
  // The client's token when it registers again (the master restarted, or forgot it): an id the
  // master knows is given only to the client that proves it had it.
  CallerToken token{};
};

// An object the master asks a client to copy from its own segment to its SSD tier. The bytes are
// read-pinned for the client until it reports the task in OffloadDone.
struct OffloadTask {
  std::string disk_key;  // DiskKey(tenant name, key): the key to store it under
  uint64_t object_id = 0;
  SegmentId segment = 0;  // the client's segment holding a MEMORY replica
  uint64_t offset = 0;
  uint64_t size = 0;
  std::optional<uint64_t> checksum;
  // The key was removed or replaced: drop the disk copy stored under disk_key, durably (other
  // fields unset; not reported in OffloadDone).
  bool drop = false;
};

struct OffloadResult {
  std::string disk_key;
  uint64_t object_id = 0;
  Status status;                     // OK: durable on disk
  std::optional<uint64_t> checksum;  // with OK: the checksum of the bytes written (common/checksum.h)
};

// An object on a client's SSD tier, as registered after a restart.
struct DiskObject {
  std::string disk_key;
  uint64_t size = 0;
  uint64_t checksum = 0;  // the value's checksum (common/checksum.h)
};

struct ObjectInfo {
  uint64_t size = 0;
  std::optional<uint64_t> checksum;   // the value's (common/checksum.h), when the writer gave one
  std::vector<GrantedReplica> replicas;  // COMPLETE replicas only
  uint64_t read_pin = 0;              // non-zero when pinned: pass to ReadEnd
};

// A read pin the client holds: a read whose ReadEnd it has not sent yet.
struct HeldPin {
  std::string key;
  uint64_t read_pin = 0;
};

// What a heartbeat states. `mounted_segments`: how many segments the client holds mounted as far
// as it knows (0: it states nothing). `pins_stated`: `pins` names every read pin it holds, so the
// master may end the ones it stops naming (their ReadEnd was lost).
// `unreachable`: other clients' segments this client's transfers cannot reach now (connections
// refused or timing out): the master hands them to no reader or writer while reports last.
inline constexpr size_t kMaxStatedPins = 4096;  // more held: the heartbeat states none
inline constexpr size_t kMaxReportedUnreachable = 64;  // more: the first ones
struct PingState {
  uint32_t mounted_segments = 0;
  bool pins_stated = false;
  std::vector<HeldPin> pins;
  std::vector<SegmentId> unreachable;
};

struct PingResponse {
  bool need_remount = false;  // the master does not know this client's segments
  uint32_t repairs = 0;       // copy tasks waiting for this client (RepairFetch)
};

// A copy the master asks a client to make into its own segment: a new MEMORY replica of an object
// that lost one (its segment went), read from a surviving replica through the transfer engine. The
// object is read-pinned for the client until it reports the task in RepairDone.
struct RepairTask {
  uint64_t task_id = 0;
  uint64_t size = 0;
  SegmentId source = 0;  // a COMPLETE replica to read
  uint64_t source_offset = 0;
  SegmentId target = 0;  // the client's segment to write into
  uint64_t target_offset = 0;
  std::optional<uint64_t> checksum;  // the value's (common/checksum.h) when its writer gave one
  Grant source_grant = {};           // read grant for the source range
};

struct RepairResult {
  uint64_t task_id = 0;
  Status status;  // OK: every byte is in place
};

// A copy or move task (TaskId, TaskInfo in yuebing/types.h) as a caller asks for it.
struct TaskSpec {
  // Chosen by the caller (random), so that a call made again after a lost answer finds the task it
  // made instead of making a second; empty: the master picks one.
  TaskId id;
  TaskType type = TaskType::kCopy;
  std::string key;
  std::string source;                // kMove: the segment (by name) whose replica moves
  std::vector<std::string> targets;  // segment names; kMove: exactly one
};

// A Put's start: a new key (PutStart), or a replacement of an existing value (UpsertStart).
enum class WriteMode : uint8_t { kPut, kUpsert };

// The names under which clients start their reservations (BatchPutCommit): "<prefix><client id>/<n>".
// A client that leaves or is declared dead loses those it still has (the master revokes them).
inline constexpr std::string_view kReservationPrefix = "__yb_reservation__/";
inline bool IsReservation(std::string_view user_key) { return user_key.starts_with(kReservationPrefix); }

// What BatchPutCommit answers: one status per key ended, one reservation (or why not) per key started.
struct PutCommitAnswer {
  std::vector<Status> ends;
  std::vector<Result<std::vector<GrantedReplica>>> started;
  // The same failure for every part (the call as a whole failed).
  static PutCommitAnswer Failed(const Status& why, size_t ends, size_t starts) {
    return {std::vector<Status>(ends, why), std::vector<Result<std::vector<GrantedReplica>>>(starts, why)};
  }
  // The call's status as a router judges it: its first part's.
  Status status() const {
    if (!ends.empty()) return ends.front();
    return started.empty() ? Status::OK() : started.front().status();
  }
};

class MasterApi {
 public:
  using Keys = std::vector<std::string>;

  virtual ~MasterApi() = default;

  // ---- clients and segments
  // Registers a client and binds it to its tenant; the answer is the context of its later calls.
  // ILLEGAL_CLIENT for an id the master knows (live, or owning segments) asked for without that
  // id's token.
  virtual Result<CallContext> RegisterClient(const ClientRegistration& reg) = 0;
  // Whether `ctx` is what RegisterClient answered (its token matches its id and tenant): the RPC
  // server asks before every other call. ILLEGAL_CLIENT without a token; CLIENT_NOT_FOUND for a
  // token this master did not sign (the caller registers again). In-process masters trust their
  // callers: the default says OK.
  virtual Status VerifyCaller(const CallContext& ctx) {
    (void)ctx;
    return Status::OK();
  }
  // Whether the master takes changes now: FILE_WRITE_FAIL, saying why, while its metadata log
  // cannot be written (a full or failing disk); it serves reads meanwhile. The RPC server asks
  // before every change.
  virtual Status Writable() { return Status::OK(); }
  // The heartbeat. While the master lists fewer segments for the client than it states (the master
  // restarted, declared the client dead, or a mount's answer was lost), every answer says
  // need_remount, so the two converge whatever messages are lost. A read pin of the client that two
  // heartbeats stating pins in a row did not name is ended, as if its ReadEnd had come.
  virtual Result<PingResponse> Ping(const CallContext& ctx, const PingState& state) = 0;
  Result<PingResponse> Ping(const CallContext& ctx, uint32_t mounted_segments) {
    return Ping(ctx, PingState{mounted_segments, false, {}, {}});
  }
  Result<PingResponse> Ping(const CallContext& ctx) { return Ping(ctx, 0); }
  // The client leaves: it stops counting as live, its read pins end, and whatever it still has
  // mounted is unmounted as if it had died. OK for a client the master does not know.
  virtual Status UnregisterClient(const CallContext& ctx) = 0;
  // Mounts segments (also again, after the master forgot them: a restart, or the client declared
  // dead). Every segment is tried; the first error is returned.
  virtual Status MountSegments(const CallContext& ctx, const std::vector<SegmentMount>& segs) = 0;
  virtual Status UnmountSegment(const CallContext& ctx, SegmentId id) = 0;
  // Drains a segment before it goes: it takes no new replicas, and each object it holds a memory
  // replica of gets one elsewhere (re-replication). Returns how many objects still need theirs:
  // 0 means unmounting it loses nothing. Call again to follow the progress.
  virtual Result<uint64_t> DrainSegment(const CallContext& ctx, SegmentId id) = 0;
  // Ends a drain: the segment takes new replicas again. The same callers as DrainSegment.
  virtual Status UndrainSegment(const CallContext& ctx, SegmentId id) = 0;
  virtual Result<std::vector<SegmentUsage>> ListSegments() = 0;

  // ---- objects, one answer per key, in order
  // Reserves space for each key (`sizes` one per key). kUpsert: an existing COMPLETE value is
  // replaced atomically at PutEnd.
  virtual std::vector<Result<std::vector<GrantedReplica>>> BatchPutStart(const CallContext& ctx, const Keys& keys,
                                                                         const std::vector<uint64_t>& sizes,
                                                                         const PlacementConfig& config,
                                                                         WriteMode mode) = 0;
  // `checksums`: one per key, or empty (none known).
  virtual std::vector<Status> BatchPutEnd(const CallContext& ctx, const Keys& keys,
                                          const std::vector<std::optional<uint64_t>>& checksums) = 0;
  virtual std::vector<Status> BatchPutRevoke(const CallContext& ctx, const Keys& keys) = 0;
  // A Put in one call (docs/design.md, "Puts into reservations"): ends Puts, then starts others, in
  // one round trip. Each key is published as PutEnd publishes it, with `checksums[i]` (one per key,
  // or empty), from the Put in progress named `reservations[i]` ("" or no reservations at all: the
  // key's own): a Put the caller started under a name of its own (its reservation), into whose
  // space it wrote the value before it knew the key. That Put ends; the key gets its space, replicas
  // and flags. Only a new key: one that exists or is being written is refused as PutStart refuses
  // it (OBJECT_ALREADY_EXISTS), and the reservation stays the caller's. Before them, the caller's
  // Puts in progress named in `revoke` are revoked (reservations it no longer wants; unanswered).
  // Then each of `start_keys` is started as BatchPutStart(start_keys, start_sizes, config, kPut)
  // starts it (the caller's next reservations). The default makes the calls one by one, and
  // refuses reservations (an older master).
  virtual PutCommitAnswer BatchPutCommit(const CallContext& ctx, const Keys& keys, const Keys& reservations,
                                         const std::vector<std::optional<uint64_t>>& checksums, const Keys& revoke,
                                         const Keys& start_keys, const std::vector<uint64_t>& start_sizes,
                                         const PlacementConfig& config);
  virtual std::vector<Result<ObjectInfo>> BatchGetReplicaList(const CallContext& ctx, const Keys& keys, bool pin) = 0;
  // Over RPC this is one-way: it returns once sent, and an unknown pin is not reported.
  virtual std::vector<Status> BatchReadEnd(const CallContext& ctx, const Keys& keys,
                                           const std::vector<uint64_t>& read_pins) = 0;
  // Never renews a lease nor changes recency: probes cannot keep objects from eviction.
  virtual std::vector<Result<bool>> BatchExistKey(const CallContext& ctx, const Keys& keys) = 0;
  // Why each key holds no object (MissInfo; kStored for one that does), as far as the master
  // remembers. Changes nothing and counts no miss.
  virtual std::vector<Result<MissInfo>> BatchWhyMissing(const CallContext& ctx, const Keys& keys) = 0;
  virtual std::vector<Status> BatchRemove(const CallContext& ctx, const Keys& keys, bool force) = 0;
  // Mooncake's batch_replica_clear: of these keys, the objects no one uses now (no read lease or read
  // in progress, not written within the lease TTL, no copy being made of them) lose their MEMORY
  // replicas on the segment named `segment_name` (an object left without replicas goes), or with
  // "" are removed. Returns the keys cleared; the others (missing, in use, nothing there) are left.
  virtual Result<Keys> BatchReplicaClear(const CallContext& ctx, const Keys& keys, const std::string& segment_name) = 0;
  // Removes the caller's tenant's objects whose key `pattern` (ECMAScript, searched) matches, or
  // every one of them without a pattern. Returns how many were removed.
  virtual Result<uint64_t> RemoveWhere(const CallContext& ctx, const std::optional<std::string>& pattern,
                                       bool force) = 0;

  // ---- SSD tier (docs/ssd-tier.md)
  // Up to `max` offload tasks queued for the caller (empty when none).
  virtual Result<std::vector<OffloadTask>> OffloadFetch(const CallContext& ctx, uint32_t max) = 0;
  // ---- re-replication: up to `max` copy tasks for this client, and their outcomes
  virtual Result<std::vector<RepairTask>> RepairFetch(const CallContext& ctx, uint32_t max) = 0;
  virtual std::vector<Status> RepairDone(const CallContext& ctx, const std::vector<RepairResult>& results) = 0;
  // Ends offload tasks: each success adds a LOCAL_DISK replica on the task's segment (and, for an
  // eviction, frees the memory); a failure leaves the DRAM copy as it was. One answer per result.
  virtual std::vector<Status> OffloadDone(const CallContext& ctx, const std::vector<OffloadResult>& results) = 0;
  // Records objects already on the caller's SSD tier (after a restart or a re-mount) as LOCAL_DISK
  // replicas on its segment `segment`. A key whose current value differs is refused
  // (OBJECT_ALREADY_EXISTS): the caller should forget its copy.
  virtual std::vector<Status> AddDiskReplicas(const CallContext& ctx, SegmentId segment,
                                              const std::vector<DiskObject>& objects) = 0;
  // ---- copy and move tasks (TaskSpec): of the caller's tenant's objects, into any mounted segment
  // that takes that tenant's replicas. OBJECT_NOT_FOUND for a key with no object; INVALID_PARAMS for
  // no target, a target or source that is not a mounted segment, a move onto its own source or from a
  // segment that holds no replica of it; UNAVAILABLE_IN_CURRENT_STATUS for a draining target;
  // TASK_PENDING_LIMIT_EXCEEDED while too many are unfinished.
  virtual Result<TaskId> CreateTask(const CallContext& ctx, const TaskSpec& spec) = 0;
  // TASK_NOT_FOUND for an id this master does not know (or another tenant's task).
  virtual Result<TaskInfo> QueryTask(const CallContext& ctx, const TaskId& id) = 0;
  // Drops the caller's LOCAL_DISK replicas of these disk keys (its SSD tier evicts them); an object
  // left without replicas is removed. Unknown keys are not an error.
  virtual std::vector<Status> DropDiskReplicas(const CallContext& ctx, const Keys& disk_keys) = 0;

  // ---- helpers: the calls above for one key or one segment
  Status MountSegment(const CallContext& ctx, const SegmentMount& seg) { return MountSegments(ctx, {seg}); }
  std::vector<Result<std::vector<GrantedReplica>>> BatchPutStart(const CallContext& ctx, const Keys& keys,
                                                                 const std::vector<uint64_t>& sizes,
                                                                 const PlacementConfig& config) {
    return BatchPutStart(ctx, keys, sizes, config, WriteMode::kPut);
  }
  Result<std::vector<GrantedReplica>> PutStart(const CallContext& ctx, const std::string& key, uint64_t size,
                                               const PlacementConfig& config);
  Result<std::vector<GrantedReplica>> UpsertStart(const CallContext& ctx, const std::string& key, uint64_t size,
                                                  const PlacementConfig& config);
  Status PutEnd(const CallContext& ctx, const std::string& key, std::optional<uint64_t> checksum);
  Status PutRevoke(const CallContext& ctx, const std::string& key);
  Result<ObjectInfo> GetReplicaList(const CallContext& ctx, const std::string& key, bool pin);
  Status ReadEnd(const CallContext& ctx, const std::string& key, uint64_t read_pin);
  Result<bool> ExistKey(const CallContext& ctx, const std::string& key);
  Result<MissInfo> WhyMissing(const CallContext& ctx, const std::string& key);
  Status Remove(const CallContext& ctx, const std::string& key, bool force);
  Result<uint64_t> RemoveByRegex(const CallContext& ctx, const std::string& pattern, bool force) {
    return RemoveWhere(ctx, pattern, force);
  }
  Result<uint64_t> RemoveAll(const CallContext& ctx, bool force) { return RemoveWhere(ctx, std::nullopt, force); }
};

}  // namespace yb
