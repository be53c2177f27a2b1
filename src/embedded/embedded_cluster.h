// EmbeddedCluster: a master and a transfer setup living in this process, shared by every client
// of the process that names the same cluster ("embedded" or "embedded:NAME"). It runs the
// master's background steps on a ThreadScheduler and goes away with its last client.
#pragma once

#include <memory>
#include <string>

#include "common/clock.h"
#include "common/scheduler.h"
#include "master/master_service.h"
#include "transfer/local_segments.h"
#include "transfer/transfer_engine.h"

namespace yb {

class EmbeddedCluster {
 public:
  // The cluster named `name`, started with `config` if it does not exist yet.
  static Result<std::shared_ptr<EmbeddedCluster>> Get(const std::string& name, const MasterConfig& config = {});
  ~EmbeddedCluster();

  std::shared_ptr<MasterService> master() const { return master_; }
  std::shared_ptr<LocalSegmentRegistry> local_segments() const { return local_; }
  std::shared_ptr<TransferEngine> engine() const { return engine_; }

 private:
  EmbeddedCluster() = default;
  ThreadScheduler scheduler_;
  std::shared_ptr<MasterService> master_;
  std::shared_ptr<LocalSegmentRegistry> local_;
  std::shared_ptr<TransferEngine> engine_;
  std::unique_ptr<Scheduler::Job> background_;
};

}  // namespace yb
