// Public value types shared by the client, the master and the bindings.
#pragma once

#include <compare>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace yb {

// A client's SSD tier (docs/ssd-tier.md): where its objects go down to, and how much it keeps.
struct SsdTierConfig {
  std::string path;                           // directory, created if missing
  uint64_t total_size_limit = 64ULL << 30;    // bytes on disk at most
  uint64_t bucket_size_limit = 256ULL << 20;  // bytes per bucket file
  uint64_t bucket_keys_limit = 500;           // objects per bucket
  std::string eviction_policy = "fifo";       // which bucket goes first: fifo (oldest) | lru (least read)
  double high_watermark = 0.90;               // usage share that starts bucket eviction
  double low_watermark = 0.80;                // usage share bucket eviction brings it down to
  uint32_t idle_ms = 20;                      // pause after a round that found nothing to do (>= 1)
};

// Keys longer than this are refused with INVALID_KEY.
inline constexpr size_t kMaxKeyLength = 4096;
inline constexpr size_t kMaxZoneLength = 64;  // SegmentDesc::zone
// A host or segment name, and a transfer endpoint ("host:port"), at most.
inline constexpr size_t kMaxHostNameLength = 256;

// Mooncake's default: where a client looks for the master when none is named, and the port
// yb-master listens on unless told otherwise.
inline constexpr uint16_t kDefaultMasterPort = 50051;
inline constexpr const char* kDefaultMasterAddress = "127.0.0.1:50051";

using SegmentId = uint64_t;

// How many copies of an object to keep, and whether to protect it from eviction.
struct ReplicateConfig {
  size_t replica_num = 1;
  bool with_soft_pin = false;                   // evicted only after every unpinned candidate, and only if allowed
  bool with_hard_pin = false;                   // never evicted
  std::vector<std::string> preferred_segments;  // segment names to try first, in order
  // The first replica on the writer's own segment, else on another process of its host, as the
  // master's local_first strategy does for every Put (Python's prefer_alloc_in_same_node).
  bool prefer_local = false;
  // Mooncake's request-level soft-pin TTL, which goes only with a soft pin (its SoftPinAction.ENABLE):
  // set without with_soft_pin, the write is refused (INVALID_PARAMS). The pin lasts the master's
  // --default_kv_soft_pin_ttl here whatever it says.
  std::optional<uint64_t> soft_pin_ttl_ms;
  // Mooncake's routing groups: empty, or one group id per key of the call ("" for none). The first
  // replica of an object of a group goes to the segment that holds the group's last placed object
  // when it has room (a layer's or a request's blocks together), else where any other would.
  std::vector<std::string> group_ids;
};

enum class ReplicaKind : uint8_t { kMemory = 0, kLocalDisk = 1, kDisk = 2 };
enum class ReplicaStatus : uint8_t { kProcessing = 0, kComplete = 1, kFailed = 2, kRemoved = 3 };

// Identifies a client process (128 random bits).
struct ClientId {
  uint64_t hi = 0;
  uint64_t lo = 0;
  bool operator==(const ClientId&) const = default;
  bool empty() const { return hi == 0 && lo == 0; }
  std::string ToString() const;
  static ClientId Random();
};

// Segments are named by their owner (usually its local_hostname) and identified by a 64-bit id
// the owner picks (SegmentId), so the owner can re-mount the same segments after a master restart.
struct SegmentDesc {
  SegmentId id = 0;
  std::string name;   // owner's name; what preferred_segments refers to
  uint64_t base = 0;  // owner's address of byte 0 (opaque to the master)
  uint64_t size = 0;
  std::string endpoint;  // where its transfer server listens ("local" in one process)
  // The owner's failure domain (yb-client --zone: a rack, a power feed, an availability zone);
  // "" when none was given. Replicas of an object go to distinct zones first, then distinct hosts.
  std::string zone = {};
  // The owner's host: "hostname/boot id" (HostIdentity()), announced at mount. A process whose
  // own differs reaches the segment over the network without trying the same-host transport;
  // "" (an owner that did not say) is tried.
  std::string host_id = {};
};

// The endpoint of a segment served only inside its owner's process (an embedded master's clients).
inline constexpr std::string_view kLocalEndpoint = "local";

// Where one replica of an object lives.
struct ReplicaDesc {
  ReplicaKind kind = ReplicaKind::kMemory;
  ReplicaStatus status = ReplicaStatus::kComplete;
  SegmentId segment = 0;
  uint64_t offset = 0;  // within the segment
  uint64_t size = 0;
};

// Usage of one mounted segment.
struct SegmentUsage {
  SegmentDesc desc;
  ClientId owner;
  uint64_t capacity = 0;
  uint64_t allocated = 0;
  uint64_t allocations = 0;
  uint64_t free_regions = 0;
  uint64_t largest_free_region = 0;
  double fragmentation = 0;
  bool draining = false;  // takes no new replicas: its objects are being copied elsewhere
};

// What a client's transfer server has served since it started (all zero for a client that
// contributes no memory and so runs none).
class LatencyHistogram;  // durations in buckets (an internal header: common/histogram.h)

// What one transport of a client's transfer engine moved since the client started: its own reads
// and writes of replicas, by what they went over.
struct TransportUse {
  std::string kind;  // "memory" (this process), "shm" (this host), "tcp", "relay" (a dummy's)
  uint64_t requests = 0, bytes = 0, failures = 0;
  std::shared_ptr<const LatencyHistogram> durations;  // of each batch handed to it
};

struct TransferServerStats {
  uint64_t open_connections = 0;
  uint64_t refused_connections = 0;  // closed at once: the connection limit was reached
  uint64_t stalled_connections = 0;  // closed after moving no byte halfway through a request
  uint64_t accept_failures = 0;      // e.g. out of descriptors
  uint64_t refused_requests = 0;     // out of bounds, unknown segment, malformed, no valid grant
  uint64_t refused_grants = 0;       // of those: without a grant the master minted for the range, or expired
  uint64_t reads = 0;                // segment reads served, and their bytes
  uint64_t read_bytes = 0;
  uint64_t writes = 0;  // segment writes received whole, and their bytes
  uint64_t written_bytes = 0;
  uint64_t disk_reads = 0;  // whole objects read from the SSD tier for a peer, and their bytes
  uint64_t disk_read_bytes = 0;
  // Same-host transfers: segments whose memory a process of this host was given to map (its
  // transfers then bypass the counters above), and peers refused (another user, a wrong proof).
  uint64_t same_host_given = 0;
  uint64_t same_host_refused = 0;
};

// A copy or move task (Mooncake's create_copy_task / create_move_task / query_task): the master has
// the target segments' owners copy a key's object into their segments, as re-replication does, and
// for a move then drops the source's replica. Tasks are in the metadata log: one a master restart or
// a failover interrupts is carried on by the master that follows.
struct TaskId {
  uint64_t hi = 0, lo = 0;  // Mooncake's UUID pair; (0, 0): none
  bool empty() const { return hi == 0 && lo == 0; }
  auto operator<=>(const TaskId&) const = default;
  static TaskId Random();  // never empty
};
enum class TaskType : uint8_t { kCopy = 0, kMove = 1 };  // Mooncake's REPLICA_COPY, REPLICA_MOVE
enum class TaskStatus : uint8_t { kPending = 0, kProcessing = 1, kSuccess = 2, kFailed = 3 };

// Why a key holds no object, as far as the master remembers (Client::WhyMissing, `yb why`,
// Python get_miss_reason; docs/operations.md, "Why a key is missing"). The master remembers the
// last departure of a bounded number of keys (--miss_reason_keys), from when it started or took
// over: an older or forgotten departure reads as kNotRemembered.
enum class MissReason : uint8_t {
  kStored = 0,          // not missing: the key holds an object
  kNotRemembered = 1,   // never written, as far as the master remembers
  kPutInProgress = 2,   // a Put has started and not ended
  kRemoved = 3,         // removed by a caller (remove, remove_by_regex, remove_all, replica clear)
  kEvicted = 4,         // evicted from memory, with no copy on disk
  kNodeLost = 5,        // dropped with the node that held it (died, left, or unmounted its memory)
  kReplicaLost = 6,     // its last replica was lost otherwise (a disk copy dropped, a copy that failed)
  kPutAbandoned = 7,    // its Put was revoked, taken over, or its writer went before ending it
  kRefusedQuota = 8,    // its last Put was refused: the tenant's quota was used up
  kRefusedNoSpace = 9,  // its last Put was refused: no segment had room, even after eviction
};
inline constexpr int kMissReasonCount = 10;
// "stored", "not_remembered", "put_in_progress", "removed", "evicted", "node_lost", "replica_lost",
// "put_abandoned", "refused_quota", "refused_no_space" (the label /metrics uses).
std::string_view MissReasonName(MissReason r);

struct MissInfo {
  MissReason reason = MissReason::kNotRemembered;
  int64_t age_ms = -1;  // how long ago the key went (or its Put was refused), in whole seconds; -1: not known
};
// For a message or a tool: "removed 12 s ago", "never written, as far as the master remembers", ...
std::string DescribeMiss(const MissInfo& why);

struct TaskInfo {
  TaskId id;
  TaskType type = TaskType::kCopy;
  TaskStatus status = TaskStatus::kPending;
  int64_t created_ms = 0;  // Unix time in milliseconds
  int64_t updated_ms = 0;
  ClientId assigned_client;  // the client making the copy now, or the last one
  std::string message;          // why it failed, or what it did
};

}  // namespace yb
