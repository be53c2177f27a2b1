// Repairer: the client's half of re-replication (master/master_repair.cc). The master reserves a
// range in one of this client's segments for a new replica of an object that lost one, and says so
// in its heartbeat answers; a job on the client's scheduler then fetches the copy tasks, reads each
// object from the surviving replica the task names through the transfer engine straight into its
// own segment, checks the value's checksum when the writer gave one, and reports every outcome
// (RepairDone), after which the master publishes the new replica. Idle costs nothing: it asks only
// when the heartbeat said work is waiting. Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "api/master_api.h"
#include "client/membership.h"
#include "common/scheduler.h"
#include "transfer/local_segments.h"
#include "transfer/transfer_engine.h"

namespace yb {

class Repairer {
 public:
  static constexpr uint32_t kTasksPerFetch = 64;

  Repairer(Membership& members, std::shared_ptr<TransferEngine> engine, std::shared_ptr<LocalSegmentRegistry> local);
  ~Repairer() { Stop(); }
  void Start(Scheduler& scheduler);
  void Stop() { job_.reset(); }
  // Fetches and makes one batch of copies if the master said some wait, the last batch was full
  // (more may wait), or `force`; returns how many were made (successfully or not). The batch's
  // copies are submitted to the transfer engine together.
  size_t RunOnce(bool force = false);

  uint64_t copied() const { return copied_.load(); }
  uint64_t failed() const { return failed_.load(); }
  uint64_t bytes() const { return bytes_.load(); }

 private:
  // The transfer that makes `t`'s copy, or why it cannot be made.
  Result<TransferRequest> Plan(const RepairTask& t) const;

  Membership& members_;
  const std::shared_ptr<TransferEngine> engine_;
  const std::shared_ptr<LocalSegmentRegistry> local_;
  std::unique_ptr<Scheduler::Job> job_;
  std::atomic<uint64_t> copied_{0}, failed_{0}, bytes_{0};
  std::atomic<bool> more_{false};  // the last fetch was full
};

}  // namespace yb
