// Election: which of the masters leads, decided in etcd (HaMaster's first part).
//
// Masters campaign on Mooncake's key mooncake-store/<cluster_id>/master_view, created with an etcd
// lease (lease_ttl) and holding the leader's address, signed (net::SignView) so that callers can tell
// it from a forgery; the key's creation revision is the leader's epoch. The leader renews its lease
// every lease_ttl/4 and answers only until a quarter TTL before the expiry it knows of
// (`MayAnswer`), so it stops before etcd can let another master lead; when it cannot renew in time
// it steps down. It writes the in-sync list (mooncake-store/<cluster_id>/in_sync: its address and
// the standbys that may take over) only while the master_view key is still the one it created.
// Only a master that list names may campaign; a new cluster (no list) lets anyone.
//
// What leading means is the owner's (HaMaster): `lead` builds the master when this one wins, `follow`
// is told of the leader etcd names, `step_down` ends the process in production (a leader that may
// lose its lease stops, and a supervisor restarts it as a standby). Thread-safe: RunOnce from one
// thread, the rest from any.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/thread_annotations.h"
#include "etcd/etcd_client.h"

namespace yb::ha {

class Election {
 public:
  struct Options {
    std::string cluster_id = "mooncake_cluster";
    std::string address;  // this master's, as others reach it
    std::chrono::milliseconds lease_ttl{2000};
    std::string secret;                  // what the leader's name is checked with ("": unsigned names)
    std::vector<std::string> view_keys;  // what this master signs its name with (net::SignView)
  };
  struct Hooks {
    // Won at `epoch`, the in-sync list naming this master: become the leader. A status that is not
    // OK steps down with it.
    std::function<Status(uint64_t epoch)> lead;
    // etcd names `leader` (another master): follow it. Called at each step while it leads.
    std::function<void(const std::string& leader)> follow;
    // This master may no longer answer as the leader. Never returns in production (the process
    // ends); a test's returns, and the election then leads no more.
    std::function<void(const std::string& why)> step_down;
  };

  Election(Options options, EtcdKv& etcd, const Clock& clock, Hooks hooks);

  // The step, every 100 ms: a leader renews its lease or steps down; any other master reads who
  // leads, follows it, or campaigns when no one does and it may.
  void RunOnce();

  bool leading() const { return leading_.load(std::memory_order_acquire); }
  // Leading, and its lease is known valid for at least a quarter TTL more: by the clock, whatever
  // the thread of RunOnce is doing (a call to etcd that hangs).
  bool MayAnswer() const {
    return leading() && !stopping_.load() && clock_.NowMs() < answer_until_.load(std::memory_order_acquire);
  }
  uint64_t epoch() const { return epoch_.load(); }
  // The leader known of ("" for none yet): etcd's word, or the shipper accepted by `AcceptShipper`.
  std::string leader() const;
  // Whether `leader` at `epoch` is the master etcd names as the leader (the only one whose log a
  // standby takes); if so it becomes the leader known of. Else ILLEGAL_CLIENT saying who etcd names.
  Status AcceptShipper(const std::string& leader, uint64_t epoch);

  // Writes the in-sync list: this master and `standbys`. False when etcd did not take it (not
  // reached, or the master_view key is no longer ours, which steps down).
  bool WriteInSync(const std::vector<std::string>& standbys);
  // Steps down now (see Hooks::step_down).
  void StepDown(const std::string& why);
  // No answer from now on (stopping, or handing over): MayAnswer is false.
  void Stop() {
    stopping_ = true;
    answer_until_ = 0;
  }
  // Revokes this master's lease (its master_view goes with it): a standby takes over at once.
  // False when it holds none.
  bool GiveLeaseBack();

  uint64_t elections_won() const { return elections_won_.load(); }
  uint64_t step_downs() const { return step_downs_.load(); }
  std::string Key(const char* name) const { return "mooncake-store/" + options_.cluster_id + "/" + name; }

 private:
  // Whether etcd's in-sync list lets this master campaign.
  bool MayCampaign();
  void Campaign();
  void Lead(int64_t lease, int64_t epoch);
  void RenewOrStepDown();

  const Options options_;
  EtcdKv& etcd_;
  const Clock& clock_;
  const Hooks hooks_;

  std::atomic<bool> leading_{false};
  std::atomic<bool> stopping_{false};
  std::atomic<TimeMs> answer_until_{0};  // a quarter TTL before the lease could expire: no answer after
  std::atomic<uint64_t> epoch_{0};       // the epoch of the leader this master knows of
  std::atomic<uint64_t> elections_won_{0};
  std::atomic<uint64_t> step_downs_{0};

  mutable Mutex mu_;
  std::string leader_ GUARDED_BY(mu_);  // address of the leader known of
  // The leader etcd names and its epoch, as last read there: the only master whose log is taken.
  std::string view_leader_ GUARDED_BY(mu_);
  uint64_t view_epoch_ GUARDED_BY(mu_) = 0;
  int64_t lease_ GUARDED_BY(mu_) = 0;  // ours, while leading
  TimeMs lease_valid_until_ GUARDED_BY(mu_) = 0;
  TimeMs last_renewal_ GUARDED_BY(mu_) = 0;
};

}  // namespace yb::ha
