// Client: creation and teardown, and the public calls, each handed to its half.
#include <algorithm>

#include "client/client_impl.h"
#include "common/log.h"
#include "common/thread_annotations.h"
#include "transfer/shm/shm_server.h"
#include "transfer/tcp/transfer_server.h"

namespace yb {
namespace {

Mutex g_embedded_mu;
EmbeddedConnector g_embedded GUARDED_BY(g_embedded_mu);

// The ids of segments just mounted at run time, logged with what they hold (`what`).
Result<std::vector<SegmentId>> MountedIds(const Result<std::vector<SegmentMount>>& mounted, const std::string& host,
                                          const std::string& what) {
  if (!mounted.ok()) return mounted.status();
  std::vector<SegmentId> ids;
  for (const auto& d : *mounted) ids.push_back(d.id);
  YB_LOG_INFO("client '{}': {} mounted as {} segments", host, what, ids.size());
  return ids;
}

}  // namespace

std::optional<std::string> EmbeddedClusterName(const std::string& addr) {
  if (addr == "embedded") return std::string("default");
  if (addr.rfind("embedded:", 0) == 0 && addr.size() > 9) return addr.substr(9);
  return std::nullopt;
}

void SetEmbeddedConnector(EmbeddedConnector connect) {
  MutexLock lock(g_embedded_mu);
  g_embedded = std::move(connect);
}

Client::Client(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Result<std::unique_ptr<Client>> ClientInternal::Create(const ClientConfig& config, ClientParts parts) {
  if (!parts.master || !parts.local_segments || !parts.engine) {
    return Status(Code::kInvalidParams, "client needs a master and a transfer engine");
  }
  YB_RETURN_IF_ERROR(ValidateClientConfig(config));
  auto impl = std::make_unique<Client::Impl>(config, std::move(parts));
  Membership& m = impl->members;
  YB_RETURN_IF_ERROR(m.Register());
  // Heartbeats from here on: mapping and faulting in a large segment can take longer than the
  // master's client_ttl (seconds per GiB when huge pages need compaction), and a client silent
  // that long is declared dead.
  m.StartHeartbeat(impl->scheduler);
  auto fail = [&m](Status st) {
    m.StopHeartbeat();  // before what it uses goes
    return st;
  };
  if (Status st = impl->data.Init(); !st.ok()) return fail(st);
  if (Status st = m.MountPool(); !st.ok()) return fail(st);
  if (config.global_segment_size > 0) impl->repairer.Start(impl->scheduler);  // copies into our memory
  if (config.enable_offload) {
    Status st = impl->data.StartSsdTier(impl->scheduler, impl->parts.storage_fault, impl->parts.local_segments,
                                        impl->parts.served.get());
    if (!st.ok()) {
      st = fail(st);
      m.UnmountPool();
      return st;
    }
  }
  return std::unique_ptr<Client>(new Client(std::move(impl)));
}

Client::~Client() {
  Impl& i = *impl_;
  i.data.StopViews();  // a view let go after this ends no pin: the master ends them as we leave
  i.members.StopHeartbeat();
  i.repairer.Stop();
  i.data.StopSsdTier(*i.parts.local_segments, i.parts.served.get());
  // Not when the master could not be reached just now: that would only wait another deadline.
  if (i.members.UnmountPool()) i.members.Leave();
  i.parts.keepalive.reset();  // stops the transfer server, closes the master connection
}

Result<std::unique_ptr<Client>> Client::Connect(const ClientConfig& given) {
  YB_RETURN_IF_ERROR(ValidateClientConfig(given));
  const ClientConfig config = EffectiveConfig(given);
  if (!config.real_client.empty()) return ConnectDummy(config);
  if (auto name = EmbeddedClusterName(config.master_server_addr)) {
    EmbeddedConnector connect;
    {
      MutexLock lock(g_embedded_mu);
      connect = g_embedded;
    }
    if (!connect) {
      return Status(Code::kNotSupported, "master_server_addr '" + config.master_server_addr +
                                             "' asks for a master in this process, and this program does not carry "
                                             "one (link yb_embedded and call yb::EnableEmbeddedMaster())");
    }
    return connect(config, *name);
  }
  return ConnectRemote(config);
}

MasterApi& ClientInternal::master(Client& c) { return c.impl_->members.master(); }
std::shared_ptr<TransferEngine> ClientInternal::engine(Client& c) { return c.impl_->parts.engine; }
std::shared_ptr<LocalSegmentRegistry> ClientInternal::served(Client& c) { return c.impl_->parts.served; }
std::string ClientInternal::data_key(Client& c) {
  return c.impl_->parts.data_key ? c.impl_->parts.data_key() : std::string();
}
Status ClientInternal::Heartbeat(Client& c) { return c.impl_->members.Beat(); }

size_t ClientInternal::RunRepairOnce(Client& c) { return c.impl_->repairer.RunOnce(true); }

size_t ClientInternal::RunOffloadOnce(Client& c) {
  Offloader* o = c.impl_->data.ssd_tier();
  return o ? o->RunOnce() : 0;
}

size_t ClientInternal::DiskObjects(const Client& c) {
  const Offloader* o = c.impl_->data.ssd_tier();
  return o ? o->engine().object_count() : 0;
}

size_t ClientInternal::held_pins(const Client& c) { return c.impl_->members.pins().size(); }

size_t ClientInternal::reservations(Client& c) { return c.impl_->data.reservations().kept(); }

void ClientInternal::DropReservations(Client& c) { c.impl_->data.DropReservations(); }

std::vector<SegmentId> ClientInternal::segments(const Client& c) {
  std::vector<SegmentId> out;
  for (const auto& d : c.impl_->members.mounted()) out.push_back(d.id);
  return out;
}

Status Client::Drain(std::chrono::milliseconds timeout) {
  Membership& m = impl_->members;
  const std::string& name = impl_->config.local_hostname;
  std::vector<SegmentId> ids;
  for (const auto& d : m.mounted()) ids.push_back(d.id);
  uint64_t round = 0;
  return DrainSegments(m.master(), m.ctx(), ids, timeout, [&](uint64_t remaining) {
    if (remaining == 0) {
      YB_LOG_INFO("client '{}': drained, nothing is held only here", name);
    } else if (round++ % 25 == 0) {
      YB_LOG_INFO("client '{}': draining, {} objects still to be copied elsewhere", name, remaining);
    }
  }, impl_->scheduler.clock());
}

Result<std::vector<SegmentId>> Client::AllocateAndMountSegment(uint64_t size) {
  return MountedIds(impl_->members.AllocateAndMount(size), impl_->config.local_hostname,
                    std::to_string(size) + " more bytes");
}

Result<std::vector<SegmentId>> Client::MountFileSegment(const std::string& path, uint64_t offset, uint64_t size) {
  return MountedIds(impl_->members.MountFile(path, offset, size), impl_->config.local_hostname,
                    std::to_string(size) + " bytes of " + path + " from offset " + std::to_string(offset));
}

Status Client::UnmountAndFreeSegments(const std::vector<SegmentId>& ids, std::chrono::milliseconds grace) {
  Membership& m = impl_->members;
  std::vector<SegmentId> ours;
  for (const auto& d : m.mounted()) {
    if (std::find(ids.begin(), ids.end(), d.id) != ids.end()) ours.push_back(d.id);
  }
  if (grace.count() > 0 && !ours.empty()) {
    Status drained = DrainSegments(m.master(), m.ctx(), ours, grace, [](uint64_t) {}, impl_->scheduler.clock());
    if (!drained.ok()) {
      YB_LOG_WARN("client '{}': unmounting {} segments after a {} ms grace: {}", impl_->config.local_hostname,
                  ours.size(), grace.count(), drained.ToString());
    }
  }
  return m.Unmount(ids);
}

Status Client::HealthCheck() {
  auto pong = impl_->members.master().Ping(impl_->members.ctx());
  return pong.ok() ? Status::OK() : pong.status();
}

const std::string& Client::hostname() const { return impl_->config.local_hostname; }
ClientId Client::id() const { return impl_->members.id(); }

ClientStats Client::Stats() const {
  const Membership& m = impl_->members;
  ClientStats s;
  s.master_reachable = m.master_reachable();
  s.heartbeat_failures = m.heartbeat_failures();
  s.remounts = m.remounts();
  s.segments_mounted = m.segments_mounted();
  s.repairs = impl_->repairer.copied();
  s.repair_failures = impl_->repairer.failed();
  s.repair_bytes = impl_->repairer.bytes();
  s.replica_read_failures = impl_->data.replica_read_failures();
  s.disk_reads = impl_->data.disk_reads();
  s.replica_write_failures = impl_->data.replica_write_failures();
  for (const auto& d : m.mounted()) {
    ++s.segments;
    s.segment_bytes += d.size;
  }
  s.get_durations = impl_->get_durations;
  s.transports = impl_->parts.engine->uses();
  s.put_durations = impl_->put_durations;
  s.location_cache_hits = impl_->data.locations().hits();
  s.location_cache_stale = impl_->data.locations().stale();
  if (impl_->parts.transfer_server) s.transfer = impl_->parts.transfer_server->stats();
  if (impl_->parts.same_host_server) {
    s.transfer.same_host_given = impl_->parts.same_host_server->given();
    s.transfer.same_host_refused = impl_->parts.same_host_server->refused();
  }
  if (const Offloader* o = impl_->data.ssd_tier()) {
    const storage::StorageEngine& e = o->engine();
    s.disk_objects = e.object_count();
    s.disk_bytes = e.used_bytes();
    s.disk_limit_bytes = e.total_size_limit();
    s.disk_buckets = e.bucket_count();
    s.offloaded = o->offloaded();
    s.offload_failures = o->failed();
    s.disk_evicted_buckets = o->evicted_buckets();
    s.disk_offload_paused = o->paused();
  }
  return s;
}

// ---- writes and reads: the data path

Status Client::Put(const std::string& key, const void* data, uint64_t size, const ReplicateConfig& config) {
  return Put(key, std::vector<Slice>{{const_cast<void*>(data), size}}, config);
}

namespace {
// Times a call into a histogram (ClientStats' get and put durations).
class Timed {
 public:
  explicit Timed(LatencyHistogram& h) : h_(h), start_(MonotonicMicros()) {}
  ~Timed() { h_.Record(MicrosSince(start_)); }
  Timed(const Timed&) = delete;
  Timed& operator=(const Timed&) = delete;

 private:
  LatencyHistogram& h_;
  const int64_t start_;
};
}  // namespace

Status Client::Put(const std::string& key, const std::vector<Slice>& slices, const ReplicateConfig& config) {
  Timed t(*impl_->put_durations);
  return std::move(impl_->data.Write({key}, {slices}, config, WriteMode::kPut).front());
}

Status Client::Upsert(const std::string& key, const std::vector<Slice>& slices, const ReplicateConfig& config) {
  Timed t(*impl_->put_durations);
  return std::move(impl_->data.Write({key}, {slices}, config, WriteMode::kUpsert).front());
}

std::vector<Status> Client::BatchPut(const std::vector<std::string>& keys,
                                     const std::vector<std::vector<Slice>>& values, const ReplicateConfig& config) {
  Timed t(*impl_->put_durations);
  return impl_->data.Write(keys, values, config, WriteMode::kPut);
}

std::vector<Status> Client::BatchUpsert(const std::vector<std::string>& keys,
                                        const std::vector<std::vector<Slice>>& values, const ReplicateConfig& config) {
  Timed t(*impl_->put_durations);
  return impl_->data.Write(keys, values, config, WriteMode::kUpsert);
}

Result<uint64_t> Client::Get(const std::string& key, void* buffer, uint64_t size) {
  if (!buffer && size > 0) return Status(Code::kInvalidParams, "null buffer");
  return Get(key, std::vector<Slice>{{buffer, size}});
}

Result<uint64_t> Client::Get(const std::string& key, const std::vector<Slice>& slices) {
  Timed t(*impl_->get_durations);
  return impl_->data.Read(key, slices);
}

Result<std::string> Client::Get(const std::string& key) {
  Timed t(*impl_->get_durations);
  return impl_->data.ReadString(key);
}

std::vector<Result<uint64_t>> Client::BatchGet(const std::vector<std::string>& keys,
                                               const std::vector<std::vector<Slice>>& buffers) {
  Timed t(*impl_->get_durations);
  return impl_->data.BatchRead(keys, buffers);
}

std::vector<Result<std::string>> Client::BatchGet(const std::vector<std::string>& keys) {
  Timed t(*impl_->get_durations);
  return impl_->data.BatchReadStrings(keys);
}

Result<ObjectView> Client::GetView(const std::string& key) { return std::move(impl_->data.ReadViews({key})[0]); }

std::vector<Result<ObjectView>> Client::BatchGetView(const std::vector<std::string>& keys) {
  return impl_->data.ReadViews(keys);
}

std::vector<Status> Client::GetSessionStart(const std::vector<std::string>& keys) {
  return impl_->data.GetSessionStart(keys);
}
std::vector<Result<uint64_t>> Client::GetSessionRanges(const std::vector<std::string>& keys,
                                                       const std::vector<std::vector<Slice>>& buffers,
                                                       const std::vector<std::vector<uint64_t>>& offsets) {
  return impl_->data.GetSessionRanges(keys, buffers, offsets);
}
void Client::GetSessionEnd(const std::vector<std::string>& keys) { impl_->data.GetSessionEnd(keys); }
std::vector<Status> Client::PutSessionStart(const std::vector<std::string>& keys, const std::vector<uint64_t>& sizes,
                                            const ReplicateConfig& config) {
  return impl_->data.PutSessionStart(keys, sizes, config);
}
std::vector<Result<uint64_t>> Client::PutSessionRanges(const std::vector<std::string>& keys,
                                                       const std::vector<std::vector<Slice>>& buffers,
                                                       const std::vector<std::vector<uint64_t>>& offsets) {
  return impl_->data.PutSessionRanges(keys, buffers, offsets);
}
std::vector<Status> Client::PutSessionEnd(const std::vector<std::string>& keys) {
  return impl_->data.PutSessionEnd(keys);
}
std::vector<Status> Client::PutSessionRevoke(const std::vector<std::string>& keys) {
  return impl_->data.PutSessionRevoke(keys);
}

Status Client::RegisterBuffer(void* ptr, uint64_t size) { return impl_->data.registered().Register(ptr, size); }
Status Client::UnregisterBuffer(void* ptr) { return impl_->data.registered().Unregister(ptr); }
bool Client::IsRegistered(const void* ptr, uint64_t size) const { return impl_->data.registered().Contains(ptr, size); }
Status Client::CheckCallerMemory(const void* ptr, uint64_t size) const {
  return impl_->data.CallerSize({{const_cast<void*>(ptr), size}}).status();
}
Status Client::CopyMemory(void* dst, const void* src, uint64_t n) { return DeviceMemory::Get().Copy(dst, src, n); }
bool Client::IsDeviceMemory(const void* ptr) {
  auto where = DeviceMemory::Get().Locate(ptr, 1);
  return !where.ok() || *where != nullptr;
}

// ---- metadata and removal: straight to the master

Result<Client::QueryResult> Client::Query(const std::string& key) {
  auto info = impl_->members.master().GetReplicaList(impl_->members.ctx(), key, false);
  if (!info.ok()) return info.status();
  // The caller sees where the replicas are, not the grants the master minted for this call.
  return QueryResult{info->size, info->checksum, {info->replicas.begin(), info->replicas.end()}};
}

Result<bool> Client::IsExist(const std::string& key) {
  return impl_->members.master().ExistKey(impl_->members.ctx(), key);
}

std::vector<Result<bool>> Client::BatchIsExist(const std::vector<std::string>& keys) {
  return impl_->members.master().BatchExistKey(impl_->members.ctx(), keys);
}

Result<MissInfo> Client::WhyMissing(const std::string& key) {
  return impl_->members.master().WhyMissing(impl_->members.ctx(), key);
}

Result<uint64_t> Client::GetSize(const std::string& key) {
  auto info = impl_->members.master().GetReplicaList(impl_->members.ctx(), key, false);
  if (!info.ok()) return info.status();
  return info->size;
}

Result<std::vector<SegmentUsage>> Client::ListSegments() { return impl_->members.master().ListSegments(); }

// A removal drops this client's cached locations of what it removes (others' expire with their ttl).
Status Client::Remove(const std::string& key, bool force) {
  impl_->data.locations().Drop(key);
  return impl_->members.master().Remove(impl_->members.ctx(), key, force);
}

std::vector<Status> Client::BatchRemove(const std::vector<std::string>& keys, bool force) {
  for (const auto& key : keys) impl_->data.locations().Drop(key);
  return impl_->members.master().BatchRemove(impl_->members.ctx(), keys, force);
}

Result<uint64_t> Client::RemoveByRegex(const std::string& pattern, bool force) {
  impl_->data.locations().Clear();
  return impl_->members.master().RemoveByRegex(impl_->members.ctx(), pattern, force);
}

Result<uint64_t> Client::RemoveAll(bool force) {
  impl_->data.locations().Clear();
  return impl_->members.master().RemoveAll(impl_->members.ctx(), force);
}

// The id is drawn here, so that the call made again on a new leader finds the task it made.
Result<TaskId> Client::CreateCopyTask(const std::string& key, const std::vector<std::string>& targets) {
  return impl_->members.master().CreateTask(impl_->members.ctx(), TaskSpec{TaskId::Random(), TaskType::kCopy, key, "", targets});
}

Result<TaskId> Client::CreateMoveTask(const std::string& key, const std::string& source, const std::string& target) {
  return impl_->members.master().CreateTask(impl_->members.ctx(),
                                            TaskSpec{TaskId::Random(), TaskType::kMove, key, source, {target}});
}

Result<std::vector<std::string>> Client::BatchReplicaClear(const std::vector<std::string>& keys,
                                                           const std::string& segment_name) {
  return impl_->members.master().BatchReplicaClear(impl_->members.ctx(), keys, segment_name);
}

Result<TaskInfo> Client::QueryTask(const TaskId& id) { return impl_->members.master().QueryTask(impl_->members.ctx(), id); }

}  // namespace yb
