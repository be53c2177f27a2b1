// Standbys: the leader's side of log shipping (HaMaster's second part). A standby that asks
// (Follow) gets a LogShipper; once it has caught up it is counted, and from then on a change is
// answered only once it has the change's record (the log's replicated floor, MetaLog::SetReplicated).
// It is listed in etcd's in-sync list (and may then take over) only once it also has every change
// answered before it was counted, and it is taken off that list before it stops being counted. A
// standby that stops asking for 5 s is dropped; where it stood is kept, and if it comes back still
// standing there it is shipped the log from there rather than the whole state. Thread-safe.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/thread_annotations.h"
#include "ha/meta_log.h"
#include "ha/replication.h"

namespace yb::ha {

class Standbys {
 public:
  struct Options {
    std::string leader;  // this master's address, as the shippers name it
    std::shared_ptr<const net::Security> security;
  };
  struct Hooks {
    // Writes etcd's in-sync list with these standbys; false when etcd did not take it.
    std::function<bool(const std::vector<std::string>& listed)> write_in_sync;
    // Whether this master may still answer as the leader (Election::MayAnswer).
    std::function<bool()> may_answer;
  };
  struct State {
    std::string address;
    bool in_sync = false;
    uint64_t acked = 0;
  };

  Standbys(Options options, MetaLog& log, const Clock& clock, Hooks hooks);
  ~Standbys() { StopAll(); }

  // `standby` asks to be shipped the log of the leader at `epoch`: its shipper starts at the first
  // ask; each ask keeps it.
  void Follow(const std::string& standby, uint64_t epoch);
  // Drops the standbys that have not asked for 5 s (they are counted no more).
  void DropSilent();
  // Stops every shipper (counting none of them afterwards).
  void StopAll();
  std::vector<State> states() const;
  bool any_in_sync() const;
  // Snapshots begun to standbys (each a standby starting over), over the process's life.
  uint64_t snapshots_shipped() const { return snapshots_shipped_.load(std::memory_order_relaxed); }

  // A shipper's hooks (LogShipper::Hooks), public for tests.
  void OnAcked(const std::string& standby, uint64_t seq);
  uint64_t OnCaughtUp(const std::string& standby);
  bool OnSyncChanged(const std::string& standby, bool in_sync);
  // The standbys changes wait for, and those of them listed in etcd.
  std::vector<std::string> counted() const;
  std::vector<std::string> listed() const;

 private:
  std::vector<std::string> Listed() const REQUIRES(mu_);
  void UpdateFloor() REQUIRES(mu_);

  const Options options_;
  MetaLog& log_;
  const Clock& clock_;
  const Hooks hooks_;

  mutable Mutex mu_;
  std::map<std::string, std::unique_ptr<LogShipper>> shippers_ GUARDED_BY(mu_);
  // Standbys changes wait for -> what each acked, and whether etcd's in-sync list names it (it
  // may take over). Counted first, listed once it has every change answered without it.
  struct Counted {
    uint64_t acked = 0;
    bool listed = false;
  };
  std::map<std::string, Counted> counted_ GUARDED_BY(mu_);
  // Dropped standbys -> where each may still stand (LogShipper::resume_points), for its next shipper.
  std::map<std::string, std::vector<LogShipper::Position>> resume_ GUARDED_BY(mu_);
  std::atomic<uint64_t> snapshots_shipped_{0};
};

}  // namespace yb::ha
