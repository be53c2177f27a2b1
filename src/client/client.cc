// Client: creation, segments, buffers, liveness and metadata calls.
#include <random>

#include "client/client_impl.h"
#include "client/embedded_cluster.h"
#include "common/log.h"

namespace yb {

Client::Client(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Result<std::unique_ptr<Client>> Client::Create(const ClientConfig& config, std::shared_ptr<MasterApi> master,
                                               std::shared_ptr<LocalSegmentRegistry> local_segments,
                                               std::shared_ptr<TransferEngine> engine, const std::string& endpoint,
                                               std::shared_ptr<LocalSegmentRegistry> served, bool heartbeat) {
  if (!master || !local_segments || !engine)
    return Status(Code::kInvalidParams, "client needs a master and a transfer engine");
  if (config.local_hostname.empty()) return Status(Code::kInvalidParams, "local_hostname is empty");
  if (config.global_segment_size > 0 && config.segment_chunk_size < 4096) {
    return Status(Code::kInvalidParams, "segment_chunk_size must be at least 4096 bytes");
  }
  auto impl = std::make_unique<Impl>();
  impl->config = config;
  impl->master = std::move(master);
  impl->local = std::move(local_segments);
  impl->engine = std::move(engine);
  impl->endpoint = endpoint;
  impl->served = std::move(served);
  impl->id = ClientId::Random();
  if (config.enable_offload && (config.global_segment_size == 0 || config.storage_path.empty())) {
    return Status(Code::kInvalidParams, "enable_offload needs a global segment and a storage path");
  }
  auto tenant = impl->master->RegisterClient(impl->Registration());
  if (!tenant.ok()) return tenant.status();
  impl->tenant = *tenant;
  // Heartbeats from here on: mapping and faulting in a large segment can take longer than the
  // master's client_ttl (seconds per GiB when huge pages need compaction), and a client silent
  // that long is declared dead.
  if (heartbeat) {
    impl->heartbeat = std::make_unique<PeriodicRunner>();
    Impl* raw = impl.get();  // stays put when the Impl moves into its Client
    impl->heartbeat->Add("client-heartbeat", std::chrono::seconds(1), [raw] { (void)raw->Heartbeat(); });
    impl->heartbeat->Start();
  }
  auto fail = [&impl](Status st) {
    if (impl->heartbeat) impl->heartbeat->Stop();  // before what it uses goes
    return st;
  };
  impl->staging = std::make_unique<StagingBuffer>(config.local_buffer_size);
  if (config.local_buffer_size > 0 && impl->staging->capacity() == 0) {
    return fail(
        Status(Code::kInternal, "cannot map a local buffer of " + std::to_string(config.local_buffer_size) + " bytes"));
  }
  if (Status st = impl->MountPool(); !st.ok()) return fail(st);
  if (config.enable_offload) {
    Status st = impl->StartOffload();
    if (!st.ok()) {
      st = fail(st);
      impl->UnmountPool();
      return st;
    }
    impl->offload_running.store(true, std::memory_order_release);
  }
  return std::unique_ptr<Client>(new Client(std::move(impl)));
}

Result<std::unique_ptr<Client>> Client::Connect(const ClientConfig& config) {
  Result<std::unique_ptr<Client>> client(Status(Code::kInternal, ""));
  if (auto name = EmbeddedClusterName(config.master_server_addr)) {
    auto cluster = EmbeddedCluster::Get(*name);
    if (!cluster.ok()) return cluster.status();
    auto c = *cluster;
    client = Create(config, c->master(), c->local_segments(), c->engine(), "local", nullptr, /*heartbeat=*/true);
    if (!client.ok()) return client;
    (*client)->impl_->keepalive = c;
  } else {
    client = ConnectRemote(config);
  }
  return client;
}

Client::~Client() {
  if (impl_->heartbeat) impl_->heartbeat->Stop();
  impl_->StopOffload();
  // Leaving says so, so that the master stops counting this client as live now rather than after
  // client_ttl. Not when it could not be reached just now: that would only wait another deadline.
  if (impl_->UnmountPool()) {
    if (Status st = impl_->master->UnregisterClient(impl_->ctx()); !st.ok() && st.code() != Code::kNotSupported) {
      YB_LOG_INFO("leaving: the master did not take the news ({}); it forgets this client after client_ttl",
                  st.ToString());
    }
  }
  impl_->keepalive.reset();  // stops the transfer server, closes the master connection
}

Status Client::Impl::MountPool() {
  if (config.global_segment_size == 0) return Status::OK();
  pool = MappedRegion::Map(config.global_segment_size, config.prefault_segment);
  if (!pool) {
    return Status(Code::kInternal, "cannot " + std::string(config.prefault_segment ? "map and fault in" : "map") +
                                       " a global segment of " + std::to_string(config.global_segment_size) +
                                       " bytes: not that much memory free?");
  }
  std::mt19937_64 rng(std::random_device{}() ^ id.lo);
  for (uint64_t off = 0; off < config.global_segment_size; off += config.segment_chunk_size) {
    uint64_t size = std::min(config.segment_chunk_size, config.global_segment_size - off);
    SegmentDesc d{rng() | 1, config.local_hostname, reinterpret_cast<uint64_t>(pool->data() + off), size, endpoint};
    local->Add(d.id, LocalSegment{pool, pool->data() + off, size});
    if (served) served->Add(d.id, LocalSegment{pool, pool->data() + off, size});
    Status st = master->MountSegment(ctx(), d);
    if (!st.ok()) {
      local->Remove(d.id);
      if (served) served->Remove(d.id);
      UnmountPool();
      return st;
    }
    std::lock_guard lock(mounted_mu);
    mounted.push_back(d);
  }
  return Status::OK();
}

Status Client::Impl::StartOffload() {
  auto policy = storage::ParseBucketPolicy(config.storage_eviction_policy);
  if (!policy.ok()) return policy.status();
  Offloader::Options o;
  o.storage.path = config.storage_path;
  o.storage.total_size_limit = config.storage_size_limit;
  o.storage.bucket_size_limit = config.storage_bucket_size;
  o.storage.bucket_keys_limit = config.storage_bucket_keys;
  o.storage.policy = *policy;
  o.storage.high_watermark = config.storage_high_watermark;
  o.storage.low_watermark = config.storage_low_watermark;
  o.storage.fault = config.storage_fault;
  o.idle_ms = config.offload_interval_ms;
  auto off = Offloader::Open(
      o, master, [this] { return ctx(); }, local);
  if (!off.ok()) return off.status();
  offloader = std::move(off).value();
  std::vector<SegmentDesc> segs;
  {
    std::lock_guard lock(mounted_mu);
    segs = mounted;
  }
  // LOCAL_DISK replicas name one of our segments: serve the SSD tier under each of them.
  for (const auto& d : segs) {
    local->AddDisk(d.id, offloader->reader());
    if (served) served->AddDisk(d.id, offloader->reader());
  }
  YB_RETURN_IF_ERROR(offloader->RegisterAll(segs.front().id));
  if (config.offload_interval_ms > 0) offloader->Start();
  YB_LOG_INFO("SSD tier at {}: {} objects, {} bytes", config.storage_path, offloader->engine().object_count(),
              offloader->engine().used_bytes());
  return Status::OK();
}

void Client::Impl::StopOffload() {
  if (!offloader) return;
  offloader->Stop();
  std::lock_guard lock(mounted_mu);
  for (const auto& d : mounted) {
    local->RemoveDisk(d.id);
    if (served) served->RemoveDisk(d.id);
  }
}

bool Client::Impl::UnmountPool() {
  std::vector<SegmentDesc> segs;
  {
    std::lock_guard lock(mounted_mu);
    segs.swap(mounted);
  }
  bool master_reachable = true;
  for (const auto& d : segs) {
    if (master_reachable) {
      Status st = master->UnmountSegment(ctx(), d.id);
      if (st.IsUnavailable()) {
        // Do not wait a deadline per segment: the master drops them when our pings stop.
        YB_LOG_WARN("master unreachable while unmounting ({}); it will drop our segments after client_ttl",
                    st.ToString());
        master_reachable = false;
      } else if (!st.ok() && st.code() != Code::kSegmentNotFound) {
        YB_LOG_WARN("unmounting segment {} failed: {}", d.id, st.ToString());
      }
    }
    local->Remove(d.id);
    if (served) served->Remove(d.id);
  }
  return master_reachable;
}

void Client::Impl::NoteHeartbeat(const Status& ping) {
  if (ping.ok()) {
    if (uint64_t missed = missed_heartbeats.exchange(0); missed > 0) {
      YB_LOG_INFO("client '{}': master {} reachable again after {} failed heartbeats", config.local_hostname,
                  config.master_server_addr, missed);
    }
    return;
  }
  ++heartbeat_failures;
  if (uint64_t missed = ++missed_heartbeats; LogOccurrence(missed)) {
    YB_LOG_WARN("client '{}': {} heartbeat{} to master {} failed ({}); trying again every second",
                config.local_hostname, missed, missed == 1 ? "" : "s in a row", config.master_server_addr,
                ping.ToString());
  }
}

Status Client::Heartbeat() { return impl_->Heartbeat(); }

Status Client::Impl::Heartbeat() {
  auto pong = master->Ping(ctx());
  NoteHeartbeat(pong.status());
  if (!pong.ok()) return pong.status();
  if (pong->need_remount) {
    // The master lost us (restart, or we were declared dead): register again, then re-mount.
    auto t = master->RegisterClient(Registration());
    if (!t.ok()) return t.status();
    tenant = *t;
    std::vector<SegmentDesc> segs;
    {
      std::lock_guard lock(mounted_mu);
      segs = mounted;
    }
    if (!segs.empty()) {
      YB_LOG_INFO("master asked client {} to re-mount {} segments", id.ToString(), segs.size());
      YB_RETURN_IF_ERROR(master->MountSegments(ctx(), segs));
      ++remounts;
      // The master forgot our disk replicas with our segments: tell it again what the SSD holds
      // (once the SSD tier runs; it registers them itself when it starts).
      disk_unregistered = true;
    }
  }
  if (disk_unregistered && offload_running.load(std::memory_order_acquire)) {
    SegmentId first;
    {
      std::lock_guard lock(mounted_mu);
      first = mounted.empty() ? 0 : mounted.front().id;
    }
    if (first != 0) {
      YB_RETURN_IF_ERROR(offloader->RegisterAll(first));
      disk_unregistered = false;
    }
  }
  return Status::OK();
}

Status Client::HealthCheck() {
  auto pong = impl_->master->Ping(impl_->ctx());
  return pong.ok() ? Status::OK() : pong.status();
}

const std::string& Client::hostname() const { return impl_->config.local_hostname; }
ClientId Client::id() const { return impl_->id; }
MasterApi& Client::master() { return *impl_->master; }

size_t Client::RunOffloadOnce() { return impl_->offloader ? impl_->offloader->RunOnce() : 0; }

size_t Client::DiskObjects() const { return impl_->offloader ? impl_->offloader->engine().object_count() : 0; }

ClientStats Client::Stats() const {
  ClientStats s;
  s.master_reachable = impl_->missed_heartbeats.load() == 0;
  s.heartbeat_failures = impl_->heartbeat_failures.load();
  s.remounts = impl_->remounts.load();
  {
    std::lock_guard lock(impl_->mounted_mu);
    s.segments = impl_->mounted.size();
    for (const auto& d : impl_->mounted) s.segment_bytes += d.size;
  }
  if (impl_->transfer_server) s.transfer = impl_->transfer_server->stats();
  if (const Offloader* o = impl_->offloader.get()) {
    const storage::StorageEngine& e = o->engine();
    s.disk_objects = e.object_count();
    s.disk_bytes = e.used_bytes();
    s.disk_limit_bytes = e.total_size_limit();
    s.disk_buckets = e.bucket_count();
    s.offloaded = o->offloaded();
    s.offload_failures = o->failed();
    s.disk_evicted_buckets = o->evicted_buckets();
  }
  return s;
}

std::vector<SegmentId> Client::segments() const {
  std::lock_guard lock(impl_->mounted_mu);
  std::vector<SegmentId> out;
  for (const auto& d : impl_->mounted) out.push_back(d.id);
  return out;
}

Status Client::RegisterBuffer(void* ptr, uint64_t size) { return impl_->registered.Register(ptr, size); }
Status Client::UnregisterBuffer(void* ptr) { return impl_->registered.Unregister(ptr); }
bool Client::IsRegistered(const void* ptr, uint64_t size) const { return impl_->registered.Contains(ptr, size); }

Result<Client::QueryResult> Client::Query(const std::string& key) {
  auto info = impl_->master->GetReplicaList(impl_->ctx(), key, false);
  if (!info.ok()) return info.status();
  return QueryResult{info->size, info->checksum, std::move(info->replicas)};
}

Result<bool> Client::IsExist(const std::string& key) { return impl_->master->ExistKey(impl_->ctx(), key); }

std::vector<Result<bool>> Client::BatchIsExist(const std::vector<std::string>& keys) {
  return impl_->master->BatchExistKey(impl_->ctx(), keys);
}

Result<uint64_t> Client::GetSize(const std::string& key) {
  auto info = impl_->master->GetReplicaList(impl_->ctx(), key, false);
  if (!info.ok()) return info.status();
  return info->size;
}

Status Client::Remove(const std::string& key, bool force) { return impl_->master->Remove(impl_->ctx(), key, force); }

std::vector<Status> Client::BatchRemove(const std::vector<std::string>& keys, bool force) {
  return impl_->master->BatchRemove(impl_->ctx(), keys, force);
}

Result<uint64_t> Client::RemoveByRegex(const std::string& pattern, bool force) {
  return impl_->master->RemoveByRegex(impl_->ctx(), pattern, force);
}

Result<uint64_t> Client::RemoveAll(bool force) { return impl_->master->RemoveAll(impl_->ctx(), force); }

}  // namespace yb
