// DataPath: construction, the staging buffer and the SSD tier.
#include "client/data_path.h"

namespace yb {

DataPath::DataPath(const ClientConfig& config, Membership& members, std::shared_ptr<TransferEngine> engine,
                   const Clock& clock)
    : config_(config), members_(members), engine_(std::move(engine)), clock_(clock) {}

DataPath::~DataPath() = default;

Status DataPath::Init() {
  staging_ = std::make_unique<StagingBuffer>(config_.local_buffer_size, /*must_share=*/!config_.real_client.empty());
  if (config_.local_buffer_size > 0 && staging_->capacity() == 0) {
    return Status(Code::kInternal,
                  "cannot map a local buffer of " + std::to_string(config_.local_buffer_size) + " bytes");
  }
  return Status::OK();
}

Status DataPath::StartSsdTier(Scheduler& scheduler, const StorageFault& fault,
                              const std::shared_ptr<LocalSegmentRegistry>& local, LocalSegmentRegistry* served) {
  Offloader::Options o;
  o.storage = storage::StorageConfig(config_.ssd);
  o.storage.fault = fault;
  o.clock = &scheduler.clock();
  Membership& m = members_;
  auto off = Offloader::Open(
      o, members_.master_ptr(), [&m] { return m.ctx(); }, local);
  if (!off.ok()) return off.status();
  offloader_ = std::move(off).value();
  std::vector<SegmentMount> segs = members_.mounted();
  // LOCAL_DISK replicas name one of our segments: serve the SSD tier under each of them.
  for (const auto& d : segs) {
    local->AddDisk(d.id, offloader_->reader());
    if (served) served->AddDisk(d.id, offloader_->reader());
  }
  YB_RETURN_IF_ERROR(offloader_->RegisterAll(segs.front().id));
  // From now on, a re-mount (the master forgot our segments) registers the disk replicas again.
  Offloader* raw = offloader_.get();
  members_.SetRemountHook([raw](SegmentId first) { return raw->RegisterAll(first); });
  offloader_->Start(scheduler);
  YB_LOG_INFO("SSD tier at {}: {} objects, {} bytes", config_.ssd.path, offloader_->engine().object_count(),
              offloader_->engine().used_bytes());
  return Status::OK();
}

void DataPath::StopSsdTier(LocalSegmentRegistry& local, LocalSegmentRegistry* served) {
  if (!offloader_) return;
  members_.SetRemountHook(nullptr);
  offloader_->Stop();
  for (const auto& d : members_.mounted()) {
    local.RemoveDisk(d.id);
    if (served) served->RemoveDisk(d.id);
  }
}

}  // namespace yb
