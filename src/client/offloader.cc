#include "client/offloader.h"

#include <algorithm>
#include <unordered_map>

#include "common/files.h"
#include "common/log.h"

namespace yb {
namespace {

// LOCAL_DISK reads go straight to the engine.
class EngineReader final : public ObjectReader {
 public:
  explicit EngineReader(std::shared_ptr<storage::StorageEngine> e) : engine_(std::move(e)) {}
  Result<uint64_t> ReadObject(const std::string& key, void* buffer, uint64_t size) override {
    return engine_->Read(key, buffer, size);
  }

 private:
  std::shared_ptr<storage::StorageEngine> engine_;
};

constexpr size_t kRegisterBatch = 1000;

}  // namespace

Offloader::Offloader(Options options, std::shared_ptr<MasterApi> master, ContextFn ctx,
                     std::shared_ptr<LocalSegmentRegistry> local)
    : options_(std::move(options)),
      master_(std::move(master)),
      ctx_(std::move(ctx)),
      local_(std::move(local)),
      clock_(options_.clock ? *options_.clock : real_clock_) {}

Result<std::unique_ptr<Offloader>> Offloader::Open(Options options, std::shared_ptr<MasterApi> master, ContextFn ctx,
                                                   std::shared_ptr<LocalSegmentRegistry> local) {
  if (options.batch == 0) return Status(Code::kInvalidParams, "offload batch must be > 0");
  std::unique_ptr<Offloader> o(new Offloader(std::move(options), std::move(master), std::move(ctx), std::move(local)));
  o->engine_ = std::make_shared<storage::StorageEngine>(o->options_.storage);
  auto recovered = o->engine_->Open();
  if (!recovered.ok()) return recovered.status();
  o->reader_ = std::make_shared<EngineReader>(o->engine_);
  return o;
}

Offloader::~Offloader() { Stop(); }

void Offloader::ForgetCopies(const std::vector<std::string>& disk_keys) {
  if (disk_keys.empty()) return;
  Status st = engine_->Forget(disk_keys);
  if (!st.ok()) {
    YB_LOG_WARN("SSD tier: {} copies dropped for now, but they may be registered again after a restart: {}",
                disk_keys.size(), st.ToString());
  }
}

Status Offloader::RegisterAll(SegmentId segment) {
  std::vector<storage::StoredObject> all = engine_->List();
  size_t registered = 0, refused = 0;
  for (size_t from = 0; from < all.size(); from += kRegisterBatch) {
    size_t to = std::min(all.size(), from + kRegisterBatch);
    std::vector<DiskObject> batch;
    for (size_t i = from; i < to; ++i) batch.push_back({all[i].key, all[i].size, all[i].checksum});
    auto sts = master_->AddDiskReplicas(ctx_(), segment, batch);
    std::vector<std::string> stale;
    for (size_t i = 0; i < sts.size(); ++i) {
      if (sts[i].IsUnavailable()) return sts[i];
      if (sts[i].ok()) {
        ++registered;
      } else {
        ++refused;
        if (sts[i].code() == Code::kObjectAlreadyExists) stale.push_back(batch[i].disk_key);
      }
    }
    ForgetCopies(stale);
  }
  if (!all.empty()) {
    YB_LOG_INFO("SSD tier: {} objects registered with the master, {} refused (newer values elsewhere)", registered,
                refused);
  }
  return Status::OK();
}

size_t Offloader::EvictIfNeeded(uint64_t incoming) {
  size_t evicted = 0;
  for (uint64_t bucket : engine_->PickEvictions(incoming)) {
    Status st = engine_->EvictBucket(bucket, [this](const std::vector<std::string>& keys) {
      for (const Status& s : master_->DropDiskReplicas(ctx_(), keys)) {
        if (s.IsUnavailable()) return s;  // keep the bucket: the master still lists its replicas
      }
      return Status::OK();
    });
    if (!st.ok()) break;
    ++evicted;
    evicted_buckets_.fetch_add(1, std::memory_order_relaxed);
  }
  return evicted;
}

namespace {
constexpr TimeMs kFirstPauseMs = 1000, kLongestPauseMs = 30000;
constexpr uint64_t kRoomToTry = 1ULL << 20;  // free bytes under the directory worth a try
}  // namespace

void Offloader::Pause(const Status& why) {
  free_at_pause_ = engine_->device().FreeBytes();
  pause_ms_ = pause_ms_ == 0 ? kFirstPauseMs : std::min(pause_ms_ * 2, kLongestPauseMs);
  retry_at_ = clock_.NowMs() + pause_ms_;
  if (!paused_.exchange(true)) {
    YB_LOG_WARN(
        "SSD tier {}: {}: offloading paused (every object keeps its DRAM copy, and what is on disk is still "
        "read); it tries again once space is freed there, every {}-{} s",
        options_.storage.path, why.ToString(), kFirstPauseMs / 1000, kLongestPauseMs / 1000);
  }
}

bool Offloader::MayWrite() {
  if (!paused_.load()) return true;
  const TimeMs now = clock_.NowMs();
  if (now < retry_at_) return false;
  // Worth a try once space was freed since the write failed, or there is plenty.
  const uint64_t free = engine_->device().FreeBytes();
  if (free <= free_at_pause_ && free < kRoomToTry) {
    retry_at_ = now + pause_ms_;
    return false;
  }
  return true;  // a try: its outcome pauses again or resumes
}

size_t Offloader::RunOnce() {
  MutexLock round(round_mu_);
  if (!MayWrite()) {
    EvictIfNeeded();  // frees space, and needs no write
    return 0;
  }
  auto tasks = master_->OffloadFetch(ctx_(), options_.batch);
  if (!tasks.ok() || tasks->empty()) {
    EvictIfNeeded();
    return 0;
  }
  const size_t fetched = tasks->size();
  // Copies of removed or replaced keys go first: a newer value of the same key in this round is
  // written after, into a later bucket, and survives.
  std::vector<std::string> dropped;
  std::erase_if(*tasks, [&](OffloadTask& t) {
    if (t.drop) dropped.push_back(std::move(t.disk_key));
    return t.drop;
  });
  ForgetCopies(dropped);
  // A key queued twice (its value replaced meanwhile) is written once, with its newest value.
  std::unordered_map<std::string, uint64_t> newest;
  for (const auto& t : *tasks) {
    auto& id = newest[t.disk_key];
    id = std::max(id, t.object_id);
  }
  std::vector<OffloadResult> results;
  std::vector<storage::StorageEngine::Value> values;
  std::vector<size_t> value_result;  // values[k] reports in results[value_result[k]]
  std::vector<LocalSegment> holds;   // keeps the segments mapped while their bytes are written
  uint64_t incoming = 0;
  for (const auto& t : *tasks) {
    results.push_back({t.disk_key, t.object_id, Status::OK(), std::nullopt});
    if (newest[t.disk_key] != t.object_id) {
      results.back().status = Status(Code::kObjectNotFound, "superseded by a newer value");
      continue;
    }
    LocalSegment seg = local_->Find(t.segment);
    if (!seg.base || t.offset > seg.size || t.size > seg.size - t.offset) {
      results.back().status = Status(Code::kSegmentNotFound, "segment " + std::to_string(t.segment) + " is not ours");
      continue;
    }
    values.push_back({t.disk_key, std::string_view(reinterpret_cast<const char*>(seg.base + t.offset), t.size)});
    value_result.push_back(results.size() - 1);
    holds.push_back(std::move(seg));
    incoming += t.size;
  }
  if (!values.empty()) {
    EvictIfNeeded(incoming);
    size_t stored = 0;
    std::vector<uint64_t> sums;
    Status st = engine_->Put(values, &stored, &sums);
    for (size_t k = 0; k < stored && k < sums.size(); ++k) results[value_result[k]].checksum = sums[k];
    for (size_t k = stored; k < values.size(); ++k) results[value_result[k]].status = st;
    offloaded_.fetch_add(stored, std::memory_order_relaxed);
    if (!st.ok()) {
      failed_.fetch_add(values.size() - stored, std::memory_order_relaxed);
      if (st.code() == Code::kFileWriteFail) {
        Pause(st);
      } else {
        YB_LOG_WARN("SSD tier: {} of {} objects not offloaded, their DRAM copies stay: {}", values.size() - stored,
                    values.size(), st.ToString());
      }
    } else if (paused_.exchange(false)) {
      pause_ms_ = 0;
      YB_LOG_WARN("SSD tier {}: the disk takes writes again: offloading resumes", options_.storage.path);
    }
  }
  if (results.empty()) return fetched;
  auto done = master_->OffloadDone(ctx_(), results);
  std::vector<std::string> unwanted;
  for (size_t i = 0; i < done.size() && i < results.size(); ++i) {
    // The value went away (removed or replaced) while it was written, or the bytes written are not
    // the value's (its recorded checksum differs): nobody will ask for this copy.
    if (results[i].status.ok() &&
        (done[i].code() == Code::kObjectNotFound || done[i].code() == Code::kChecksumMismatch)) {
      unwanted.push_back(results[i].disk_key);
    }
  }
  ForgetCopies(unwanted);
  return fetched;
}

void Offloader::Start(Scheduler& scheduler) {
  if (job_) return;
  job_ = scheduler.Every("yb-ssd-tier", std::chrono::milliseconds(std::max<uint32_t>(1, options_.storage.idle_ms)),
                         Scheduler::Step([this] { return RunOnce() > 0; }));
}

void Offloader::Stop() { job_.reset(); }

}  // namespace yb
