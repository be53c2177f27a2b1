// Client: what an application links to store and load objects. Thread-safe.
//
// A client talks to the master through a MasterApi (in-process, or over RPC) and moves object
// bytes itself through its transfer engine. It may contribute memory to the pool
// (global_segment_size, mounted in chunks) and owns a staging buffer (local_buffer_size) for
// transports that need registered memory and for reads that return fresh bytes.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "yuebing/status.h"
#include "yuebing/types.h"

namespace yb {

// One piece of a value: objects are stored contiguously, written from and read into slices.
struct Slice {
  void* ptr = nullptr;
  uint64_t size = 0;
};


// Bytes of an object read in place or copied (Client::GetView); valid while any copy of the view
// lives (`keep` holds the memory, and the object's pin when in place).
struct ObjectView {
  const void* data = nullptr;
  uint64_t size = 0;
  bool in_place = false;  // the pool's own bytes (never write to them), else a copy of them
  std::shared_ptr<const void> keep;
};

struct ClientConfig {
  // Names this client's segments. With a networked master and memory to contribute, a name without
  // a port becomes "name:port" of the transfer server, unique in the cluster (hostname() tells).
  std::string local_hostname = "localhost";
  std::string metadata_server = "P2PHANDSHAKE";
  // "host:port" of a yb-master; "etcd://host:port[;host:port]": the leader of several masters
  // (yb-master --enable_ha), found and followed through etcd; or "embedded" / "embedded:NAME": a
  // master in this process, shared by its clients that name the same cluster.
  std::string master_server_addr = "embedded";
  std::string cluster_id = "mooncake_cluster";  // with etcd://: the masters' --cluster_id
  // With etcd://: how etcd is reached (docs/security.md): TLS (a CA to check etcd against, and the
  // certificate and key etcd's --client-cert-auth asks for), and etcd's own user and a file
  // holding its password (0600). Empty: plain HTTP, no user.
  std::string etcd_tls_ca, etcd_tls_cert, etcd_tls_key;
  std::string etcd_user, etcd_password_file;
  // "tcp". Mooncake's "rdma", "efa" and "nvlink" (the default of callers' configs) run as tcp, with
  // one warning naming the setting, unless strict_protocol (YB_STRICT_PROTOCOL=1) refuses them.
  std::string protocol = "tcp";
  bool strict_protocol = false;
  std::string device_name;
  uint64_t global_segment_size = 0;          // contributed to the pool; 0 for a pure caller
  uint64_t local_buffer_size = 16ULL << 20;  // staging buffer
  uint64_t segment_chunk_size = 1ULL << 30;  // the pool memory is mounted in chunks of this size
  std::string tenant = "default";
  // This client's failure domain, given to its segments (a rack, a power feed, an availability
  // zone; up to 64 printable characters): replicas of an object go to distinct zones first, then
  // distinct hosts. "" (the default): unlabelled. The entry points read YB_ZONE when not set.
  std::string zone;
  // Record a checksum with every Put (common/checksum.h, computed as the bytes move); reads check
  // it on every tier. Off: faster puts, and a damaged replica is served as it is.
  bool enable_checksum = true;
  bool verify_checksum = true;  // check it on Get when the writer recorded one
  // Security (docs/security.md), with a networked master. auth_secret_file: a file holding the
  // cluster's secret, or this client's tenant's where the master keeps per-tenant secrets; every
  // connection (to the master, to transfer servers, of others to ours) then proves it. The TLS
  // files: a CA to check servers against (and a certificate and key, which servers that ask get, and
  // which our transfer server serves with) turn TLS on for every connection. Empty: off.
  std::string auth_secret_file;
  std::string tls_cert;
  std::string tls_key;
  std::string tls_ca;
  // Protected mode: without a secret (or client certificates), this client's transfer server serves
  // only processes on its own host and refuses others with a message saying how to proceed. False
  // serves any peer that reaches it (YB_PROTECTED_MODE, setup's "protected_mode").
  bool protected_mode = true;
  // With a secret and without TLS, every byte after a connection's handshake carries a MAC (docs/
  // security.md); the whole cluster needs the same setting (YB_WIRE_MACS, setup's "wire_macs").
  bool wire_macs = true;
  // Whether its servers (transfers, the HTTP endpoints) then serve only this host.
  bool loopback_only() const { return protected_mode && auth_secret_file.empty() && (tls_cert.empty() || tls_ca.empty()); }
  // With a networked master: the address this client's transfer server listens on. The host of
  // local_hostname (and its port, if it has one; else any free port) when empty.
  std::string transfer_bind_address;
  // When neither gives a port: the transfer server (or, without one, the port held for this
  // client's name) takes one from [client_port_min, client_port_max], as Mooncake's clients do
  // (MC_STORE_CLIENT_MIN_PORT / MC_STORE_CLIENT_MAX_PORT), and any free port when none there is.
  uint16_t client_port_min = 12300;
  uint16_t client_port_max = 14300;
  // Open connections its transfer server takes at most (each costs a descriptor); one more is
  // closed at once and counted.
  int transfer_max_connections = 4096;
  // ... and from one peer address at most (0: no bound), so that one host cannot take every slot.
  int transfer_max_connections_per_peer = 1024;
  // A peer whose host died or was cut off is disconnected from the transfer server after about
  // this long with no answer to TCP keepalive probes; 0 turns keepalive off.
  uint32_t transfer_keepalive_sec = 120;
  // Its transfer server closes a connection halfway through a request (or with answers unread)
  // that moves no byte for this long; idle ones stay. 0: never.
  uint32_t transfer_stall_timeout_sec = 30;
  uint32_t rpc_timeout_ms = 5000;  // deadline of each call to the master
  // Bytes per slice of a TCP transfer (4 KiB - 64 MiB); a size outside fails setup. 0: from
  // mc_slice_size, else 64 KiB.
  uint64_t transfer_slice_size = 0;
  // The value of Mooncake's MC_SLICE_SIZE environment variable, as the entry points read it (the
  // tools' main(), the C API's and the Python binding's setup); the library reads no environment.
  // A value that is not a size in 4 KiB - 64 MiB is logged and ignored.
  std::string mc_slice_size;
  bool prefault_segment = false;  // fault the pool memory in at mount (steady latency; costs RAM now)
  // Same-host transfers (docs/design.md): this client's segments live in memory that another
  // process of this host and user may map (a memfd), and the segments of such processes are read
  // and written by memcpy through their memory instead of over TCP. False: TCP only.
  bool same_host_transfers = true;
  // GetView (Python's get_buffer, batch_get_buffer) hands the pool's own bytes, read-only and
  // pinned, where this process maps them; false: always a copy (Mooncake's get_buffer copies, and
  // its buffer is writable). Environment: YB_GET_BUFFER_IN_PLACE.
  bool get_buffer_in_place = true;
  // Cached locations (docs/design.md section 3): a Get of an object this client read within the
  // last `location_cache_ttl_ms` goes straight to its holder, no master round trip; its bytes are
  // checked against the object's checksum, and a stale location (removed, evicted, replaced) is
  // dropped and the master asked. Only objects with a checksum are cached, and only while
  // verify_checksum is on. After a Remove, this client may read the removed object's bytes for up
  // to the ttl. 0 turns the cache off. Environment: YB_LOCATION_CACHE_TTL_MS.
  uint32_t location_cache_ttl_ms = 1000;
  uint32_t location_cache_entries = 65536;  // the most locations kept (least recently used go)
  // Puts into reservations (docs/design.md): the client keeps space started ahead, up to this many
  // bytes, so that a Put of a size and placement it wrote before costs one master call (the value
  // is copied into a reservation, then published with the reservation that replaces it) instead
  // of two. Upserts and Puts that name groups do not use them. 0 turns them off. Environment:
  // YB_PUT_RESERVATION_BYTES.
  uint64_t put_reservation_bytes = 64ULL << 20;
  // Mooncake's setup_dummy: "host:port" of the real client of this host (a yb-client serving
  // transfers on that port; the host part is not used). This client is then its dummy: it has no
  // master address and no network connection of its own; every call goes to the real client through
  // a Unix socket named after the port, which moves the bytes between the pool and this process's
  // memory (docs/design.md, "Dummy clients"). Buffers the real client can move bytes into directly
  // come from yb::AllocateSharedMemory (Python: MooncakeHostMemAllocator, alloc_from_mem_pool);
  // others are staged through the local buffer. Needs global_segment_size 0.
  std::string real_client;

  // SSD tier (docs/ssd-tier.md): objects in this client's segment go down to `ssd.path` when the
  // master queues them (its enable_offload / offload_on_evict). Needs a global segment.
  bool enable_offload = false;
  SsdTierConfig ssd;
};

// Fills what the environment sets, for the entry points that have no flags of their own (the C
// API's setup, Python's setup; the tools read the same names where a flag is not given): `lookup`
// is std::getenv, or a test's. Mooncake's, as its client reads them: MC_SLICE_SIZE,
// MC_STORE_CLUSTER_ID (cluster_id), MC_RPC_TIMEOUT_MS (rpc_timeout_ms), MOONCAKE_OFFLOAD_FILE_STORAGE_PATH
// and MOONCAKE_STORAGE_ROOT_DIR (the SSD tier's directory, when none is set); ours: YB_ZONE,
// YB_ENABLE_CHECKSUM (0 or false turns checksums off), YB_AUTH_SECRET_FILE, YB_TLS_CERT, YB_TLS_KEY,
// YB_TLS_CA, YB_TENANT, YB_STRICT_PROTOCOL, YB_SAME_HOST_TRANSFERS, YB_GET_BUFFER_IN_PLACE, YB_LOCATION_CACHE_TTL_MS (docs/compat.md lists each, read
// or not). A value that
// does not parse is logged and left as it was.
void ApplyEnvironment(ClientConfig& config, const std::function<const char*(const char*)>& lookup);

// Checks a configuration as Connect() does: INVALID_PARAMS naming the setting, or NOT_SUPPORTED
// for a protocol this build cannot run ("rdma", "efa", "nvlink" with strict_protocol).
Status ValidateClientConfig(const ClientConfig& config);
// The configuration Connect() runs: "rdma", "efa" and "nvlink" become "tcp" (logged once per call,
// naming the setting) unless strict_protocol.
ClientConfig EffectiveConfig(const ClientConfig& config);

// What a client holds and has done, for monitoring (yb-client serves it on /metrics).
struct ClientStats {
  bool master_reachable = false;    // the last heartbeat reached the master
  uint64_t heartbeat_failures = 0;  // heartbeats that did not
  uint64_t remounts = 0;            // times the master asked this client to re-mount its segments
  // The master serves from every segment this client holds (false while a re-mount is owed: the
  // master restarted, or declared this client dead, and the client has not mounted them again yet).
  bool segments_mounted = true;
  // Re-replication copies this client made into its segments on the master's request, those that
  // failed, and the bytes copied.
  uint64_t repairs = 0;
  uint64_t repair_failures = 0;
  uint64_t repair_bytes = 0;
  uint64_t segments = 0;  // mounted, and their bytes
  uint64_t segment_bytes = 0;
  TransferServerStats transfer;  // zero without a global segment
  // Replica transfers of this client's own reads and puts that failed (a read then tries the next
  // replica, a put another node): logged at debug level, counted here.
  uint64_t replica_read_failures = 0;
  // How long this client's get and put calls took, a batch as one call (from the call to its
  // answer: master calls and transfers); exported on /metrics as histograms.
  std::shared_ptr<const LatencyHistogram> get_durations, put_durations;
  std::vector<TransportUse> transports;  // this client's transfers, by transport
  uint64_t location_cache_hits = 0;   // gets served from a cached location (no master call)
  uint64_t location_cache_stale = 0;  // cached locations that failed or mismatched (the master asked)
  // Objects this client read from an SSD tier (a LOCAL_DISK replica, its own or another client's),
  // tried or done: Mooncake's get_offload_rpc_read_count.
  uint64_t disk_reads = 0;
  uint64_t replica_write_failures = 0;
  // The SSD tier (zero without one).
  uint64_t disk_objects = 0;
  uint64_t disk_bytes = 0;
  uint64_t disk_limit_bytes = 0;
  uint64_t disk_buckets = 0;
  uint64_t offloaded = 0;         // objects copied down at the master's request
  uint64_t offload_failures = 0;  // copies that failed (the DRAM copy stayed)
  uint64_t disk_evicted_buckets = 0;
  bool disk_offload_paused = false;  // the disk refused a write: offloading waits for space
  // Dummy clients this one serves (yb-client; zero elsewhere): connected, the memory regions of
  // theirs it has mapped, and the bytes it moved for them.
  uint64_t dummies = 0;
  uint64_t dummy_regions = 0;
  uint64_t dummy_relayed_bytes = 0;
};

// Memory that the real client of a dummy (ClientConfig::real_client) moves bytes into and out of
// directly, with no staging copy: Mooncake's MooncakeHostMemAllocator and alloc_from_mem_pool.
// `size` bytes (rounded up to pages, zeroed, each allocation its own memfd), or nullptr when the
// memory cannot be had. Any client may use it as ordinary memory.
void* AllocateSharedMemory(uint64_t size);
// INVALID_PARAMS for an address AllocateSharedMemory did not give.
Status FreeSharedMemory(void* ptr);

class Client {
 public:
  // Connects to the master that config.master_server_addr names ("host:port"; "embedded[:NAME]"
  // runs one in this process, see yuebing/embedded.h), mounts config.global_segment_size of memory
  // and starts the heartbeat (and the SSD tier when enabled). A bad configuration is INVALID_PARAMS
  // (or NOT_SUPPORTED for an unavailable protocol) naming the setting.
  static Result<std::unique_ptr<Client>> Connect(const ClientConfig& config);
  // Unmounts this client's memory and tells the master it leaves.
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Writes. A Put of an existing key with the same size is a no-op success; with another size,
  // OBJECT_ALREADY_EXISTS. Upsert replaces an existing value.
  Status Put(const std::string& key, const std::vector<Slice>& slices, const ReplicateConfig& config = {});
  Status Put(const std::string& key, const void* data, uint64_t size, const ReplicateConfig& config = {});
  Status Upsert(const std::string& key, const std::vector<Slice>& slices, const ReplicateConfig& config = {});
  std::vector<Status> BatchPut(const std::vector<std::string>& keys, const std::vector<std::vector<Slice>>& values,
                               const ReplicateConfig& config = {});
  std::vector<Status> BatchUpsert(const std::vector<std::string>& keys, const std::vector<std::vector<Slice>>& values,
                                  const ReplicateConfig& config = {});

  // Reads into caller memory; returns the object's size. A buffer smaller than the object gives
  // BUFFER_OVERFLOW and writes nothing.
  Result<uint64_t> Get(const std::string& key, void* buffer, uint64_t size);
  Result<uint64_t> Get(const std::string& key, const std::vector<Slice>& slices);
  // Reads into a fresh string.
  Result<std::string> Get(const std::string& key);
  std::vector<Result<uint64_t>> BatchGet(const std::vector<std::string>& keys,
                                         const std::vector<std::vector<Slice>>& buffers);
  // Reads every key into a fresh string: two round trips to the master for the whole batch.
  std::vector<Result<std::string>> BatchGet(const std::vector<std::string>& keys);
  // The object's bytes, read-only, where they already sit in memory this process maps (a memory
  // replica in a segment of this process, or of another process of this host through the
  // same-host transport), checked against the object's checksum: no copy. The object stays pinned
  // at the master (not evicted, not removed, its range not reused) until the last copy of the view
  // is let go. Where no replica is in reach so (another host, the SSD tier, same-host transfers
  // off, ClientConfig::get_buffer_in_place false), a copy made as Get makes it (in_place false).
  // Let views go before the client: a view that outlives it keeps its memory mapped, but no pin.
  Result<ObjectView> GetView(const std::string& key);
  // One master round trip for the batch (and one more for the keys that are copied).
  std::vector<Result<ObjectView>> BatchGetView(const std::vector<std::string>& keys);

  // Metadata.
  struct QueryResult {
    uint64_t size = 0;
    std::optional<uint64_t> checksum;
    std::vector<ReplicaDesc> replicas;
  };
  Result<QueryResult> Query(const std::string& key);
  Result<bool> IsExist(const std::string& key);
  std::vector<Result<bool>> BatchIsExist(const std::vector<std::string>& keys);
  // Why a key holds no object, as far as the master remembers (MissInfo; kStored if it does).
  Result<MissInfo> WhyMissing(const std::string& key);
  Result<uint64_t> GetSize(const std::string& key);
  // The segments of the cluster, with their owners and usage.
  Result<std::vector<SegmentUsage>> ListSegments();

  // Copy and move tasks (Mooncake's create_copy_task, create_move_task, query_task): the master has
  // the targets' owners copy the key's object into the segments named (a move then drops the
  // source's replica); the task's progress is asked for by its id. They survive a master restart.
  Result<TaskId> CreateCopyTask(const std::string& key, const std::vector<std::string>& targets);
  Result<TaskId> CreateMoveTask(const std::string& key, const std::string& source, const std::string& target);
  Result<TaskInfo> QueryTask(const TaskId& id);
  // Mooncake's batch_replica_clear: of `keys`, the objects no one uses now (no read lease or read in
  // progress, not written within the lease TTL) lose their memory replicas on the segment named
  // `segment_name`, or with "" are removed. Returns the keys cleared.
  Result<std::vector<std::string>> BatchReplicaClear(const std::vector<std::string>& keys,
                                                     const std::string& segment_name = "");

  // Removal.
  Status Remove(const std::string& key, bool force = false);
  std::vector<Status> BatchRemove(const std::vector<std::string>& keys, bool force = false);
  Result<uint64_t> RemoveByRegex(const std::string& pattern, bool force = false);
  Result<uint64_t> RemoveAll(bool force = false);

  // Sessions: layer-wise loads and stores of whole objects, one master call to start and one to
  // end, each layer's ranges in between transfers only (Mooncake's batch_get_session_* and
  // batch_put_session_*). A get session pins its objects (no eviction, no removal) until it ends;
  // its ranges read buffers[i][j].size bytes from offset offsets[i][j] of key i. A put session
  // reserves its objects; its ranges write at those offsets; the end publishes them (without a
  // checksum: the writer never holds the whole value), the revoke frees them. One session per key
  // per client; a range past the object's end is INVALID_PARAMS before a byte moves.
  std::vector<Status> GetSessionStart(const std::vector<std::string>& keys);
  std::vector<Result<uint64_t>> GetSessionRanges(const std::vector<std::string>& keys,
                                                 const std::vector<std::vector<Slice>>& buffers,
                                                 const std::vector<std::vector<uint64_t>>& offsets);
  void GetSessionEnd(const std::vector<std::string>& keys);
  std::vector<Status> PutSessionStart(const std::vector<std::string>& keys, const std::vector<uint64_t>& sizes,
                                      const ReplicateConfig& config = {});
  std::vector<Result<uint64_t>> PutSessionRanges(const std::vector<std::string>& keys,
                                                 const std::vector<std::vector<Slice>>& buffers,
                                                 const std::vector<std::vector<uint64_t>>& offsets);
  std::vector<Status> PutSessionEnd(const std::vector<std::string>& keys);
  std::vector<Status> PutSessionRevoke(const std::vector<std::string>& keys);

  // Memory the application registers for zero-copy transfers (put_from / get_into). Any address
  // this API takes may be GPU memory where the CUDA driver is installed: the client finds out from
  // the driver and moves such bytes through pinned host memory; the CPU never touches them.
  Status RegisterBuffer(void* ptr, uint64_t size);
  Status UnregisterBuffer(void* ptr);
  // Whether [ptr, ptr + size) lies inside one registered buffer.
  bool IsRegistered(const void* ptr, uint64_t size) const;
  // INVALID_PARAMS when [ptr, ptr + size) starts inside a registered buffer and runs past its end
  // (every read and write into caller memory is checked so; a caller copying itself asks here), or
  // when it starts in a GPU allocation and runs past that allocation's end.
  Status CheckCallerMemory(const void* ptr, uint64_t size) const;
  // Copies n bytes between caller memory of any kind (host, or GPU memory through the driver's
  // copies): for a caller that moves bytes itself, such as the Python binding's byte ranges.
  static Status CopyMemory(void* dst, const void* src, uint64_t n);
  // Whether the address is GPU memory (false without a CUDA driver).
  static bool IsDeviceMemory(const void* ptr);

  // Before this client leaves with its memory: drains its segments (the master copies every object
  // they hold a memory replica of to other nodes, and puts nothing new on them), waiting up to
  // `timeout`. OK once leaving loses nothing; RPC_TIMEOUT naming what is left otherwise. Needs
  // re-replication on (yb-master --repair_bandwidth > 0) and room on other nodes.
  Status Drain(std::chrono::milliseconds timeout);

  // Memory contributed at run time (Mooncake's allocate_and_mount_segment / unmount_and_free_segment):
  // `size` more bytes mounted as segments (their ids); and segments of this client unmounted, after
  // draining them for up to `grace` (their objects copied elsewhere first, where re-replication runs),
  // their memory freed once no transfer uses it. A segment that is not this client's:
  // SEGMENT_NOT_FOUND (the others are unmounted all the same).
  Result<std::vector<SegmentId>> AllocateAndMountSegment(uint64_t size);
  // Mooncake's mount_segment: `size` bytes of the file at `path` from `offset` (a multiple of the
  // page size; a /dev/shm file, a DAX device) mapped shared and mounted as segments. The file must
  // not shrink while mounted. Unmounted with UnmountAndFreeSegments.
  Result<std::vector<SegmentId>> MountFileSegment(const std::string& path, uint64_t offset, uint64_t size);
  Status UnmountAndFreeSegments(const std::vector<SegmentId>& ids, std::chrono::milliseconds grace);

  // OK while the master answers.
  Status HealthCheck();
  const std::string& hostname() const;
  ClientId id() const;
  // Safe from any thread while the client exists.
  ClientStats Stats() const;

 private:
  friend class ClientInternal;  // client/client_internal.h: creation from parts, test hooks
  struct Impl;
  explicit Client(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace yb
