#include "ha/election.h"

#include <nlohmann/json.hpp>

#include "common/log.h"
#include "net/auth.h"

namespace yb::ha {

using nlohmann::json;

Election::Election(Options options, EtcdKv& etcd, const Clock& clock, Hooks hooks)
    : options_(std::move(options)), etcd_(etcd), clock_(clock), hooks_(std::move(hooks)) {}

std::string Election::leader() const {
  MutexLock lock(mu_);
  return leader_;
}

Status Election::AcceptShipper(const std::string& leader, uint64_t epoch) {
  {
    MutexLock lock(mu_);
    if (leader != view_leader_ || epoch != view_epoch_) {
      const std::string named = view_leader_.empty() ? "no master" : view_leader_;
      static LogBudget budget(1, 10'000);
      if (uint64_t held = 0; budget.Allow(clock_.NowMs(), &held)) {
        YB_LOG_WARN("HA: refused ApplyLog from {} (epoch {}): etcd names {} (epoch {}) as the leader{}", leader, epoch,
                    named, view_epoch_, LogBudget::HeldBack(held));
      }
      return Status(Code::kIllegalClient,
                    "etcd names " + named + " at epoch " + std::to_string(view_epoch_) + " as the leader");
    }
    leader_ = leader;
  }
  epoch_ = epoch;
  return Status::OK();
}

bool Election::GiveLeaseBack() {
  int64_t lease;
  {
    MutexLock lock(mu_);
    lease = lease_;
  }
  if (lease == 0) return false;
  if (Status st = etcd_.Revoke(lease); !st.ok()) YB_LOG_WARN("HA: giving the lease back: {}", st.ToString());
  return true;
}

void Election::RunOnce() {
  if (leading()) {
    RenewOrStepDown();
    return;
  }
  auto view = etcd_.Get(Key("master_view"));
  if (!view.ok()) {
    static LogBudget budget(1, 10'000);
    if (uint64_t held = 0; budget.Allow(clock_.NowMs(), &held)) {
      YB_LOG_WARN("HA: etcd not reachable: {}{}", view.status().ToString(), LogBudget::HeldBack(held));
    }
    return;
  }
  if (*view) {
    const auto& kv = **view;
    auto named = net::CheckView(kv.value, Key("master_view"), options_.secret);
    if (!named.ok()) {
      // Not a master of this cluster's word: followed by no one, and no ApplyLog is taken from it.
      {
        MutexLock lock(mu_);
        leader_.clear();
        view_leader_.clear();
      }
      static LogBudget forged(1, 10'000);
      if (uint64_t held = 0; forged.Allow(clock_.NowMs(), &held)) {
        YB_LOG_ERROR("HA: {}{}", named.status().message(), LogBudget::HeldBack(held));
      }
      return;
    }
    epoch_ = std::max<uint64_t>(epoch_.load(), static_cast<uint64_t>(kv.create_revision));
    {
      MutexLock lock(mu_);
      leader_ = *named;
      view_leader_ = *named;
      view_epoch_ = static_cast<uint64_t>(kv.create_revision);
    }
    // Our own key from before a restart: its lease is lost with the process; it expires soon.
    if (*named != options_.address && hooks_.follow) hooks_.follow(*named);
    return;
  }
  if (MayCampaign()) Campaign();
}

bool Election::MayCampaign() {
  auto list = etcd_.Get(Key("in_sync"));
  if (!list.ok()) return false;
  if (!*list) return true;  // a new cluster: anyone may lead
  json j = json::parse((*list)->value, nullptr, false);
  const bool well_formed = j.is_object() && (!j.contains("leader") || j["leader"].is_string()) &&
                           (!j.contains("standbys") || j["standbys"].is_array()) &&
                           (!j.contains("epoch") || j["epoch"].is_number_integer());
  if (!well_formed) {
    // Not ours, or damaged: which masters may take over is unknown, so none does (a master that
    // lacked acknowledged changes could otherwise lead). Fixed by deleting the key, or by the
    // leader's next write of it.
    static LogBudget bad(1, 30'000);
    if (uint64_t held = 0; bad.Allow(clock_.NowMs(), &held)) {
      YB_LOG_ERROR(
          "HA: etcd's in-sync list {} is malformed ('{}'): not campaigning; delete the key if no "
          "leader will write it again{}",
          Key("in_sync"), (*list)->value.substr(0, 200), LogBudget::HeldBack(held));
    }
    return false;
  }
  if (j.value("leader", "") == options_.address) return true;
  for (const auto& s : j.value("standbys", json::array())) {
    if (s.is_string() && s.get<std::string>() == options_.address) return true;
  }
  static LogBudget budget(1, 30'000);
  if (uint64_t held = 0; budget.Allow(clock_.NowMs(), &held)) {
    YB_LOG_WARN(
        "HA: no leader, and this master may not take over: it is not in the last leader's in-sync list "
        "(epoch {}: {}), so it may lack acknowledged changes; waiting for one of those masters{}",
        j.value("epoch", 0), (*list)->value, LogBudget::HeldBack(held));
  }
  return false;
}

void Election::Campaign() {
  const int64_t ttl_sec = std::max<int64_t>(1, (options_.lease_ttl.count() + 999) / 1000);
  auto lease = etcd_.Grant(ttl_sec);
  if (!lease.ok()) return;
  const TimeMs granted = clock_.NowMs();
  // Signed under every key a caller of this cluster may hold, so each can tell it from a forgery.
  auto claim = etcd_.PutIfAbsent(Key("master_view"),
                                 net::SignView(options_.address, Key("master_view"), options_.view_keys), *lease);
  if (!claim.ok() || !claim->won) {
    (void)etcd_.Revoke(*lease);
    return;
  }
  {
    MutexLock lock(mu_);
    lease_valid_until_ = granted + ttl_sec * 1000;
    last_renewal_ = granted;
  }
  answer_until_ = granted + ttl_sec * 1000 - std::max<TimeMs>(1, options_.lease_ttl.count() / 4);
  Lead(*lease, claim->current.create_revision);
}

void Election::Lead(int64_t lease, int64_t epoch) {
  {
    MutexLock lock(mu_);
    lease_ = lease;
    leader_ = options_.address;
  }
  epoch_ = static_cast<uint64_t>(epoch);
  // The in-sync list names us first: from now on only we, and the standbys we count, may take over.
  if (!WriteInSync({})) {
    YB_LOG_ERROR("HA: elected at epoch {} but etcd did not take the in-sync list: giving the lease back", epoch);
    (void)etcd_.Revoke(lease);
    MutexLock lock(mu_);
    lease_ = 0;
    leader_.clear();
    return;
  }
  if (Status st = hooks_.lead(static_cast<uint64_t>(epoch)); !st.ok()) return StepDown(st.ToString());
  leading_ = true;
  elections_won_.fetch_add(1);
}

void Election::RenewOrStepDown() {
  const TimeMs now = clock_.NowMs();
  const TimeMs quarter = std::max<TimeMs>(1, options_.lease_ttl.count() / 4);
  int64_t lease;
  TimeMs last, valid;
  {
    MutexLock lock(mu_);
    lease = lease_;
    last = last_renewal_;
    valid = lease_valid_until_;
  }
  if (now - last >= quarter) {
    auto ttl = etcd_.KeepAlive(lease);
    if (ttl.ok() && *ttl > 0) {
      MutexLock lock(mu_);
      lease_valid_until_ = valid = now + *ttl * 1000;  // counted from before the request left
      last_renewal_ = now;
      answer_until_ = valid - quarter;
    } else if (ttl.ok()) {
      return StepDown("etcd no longer has this master's lease");
    }
  }
  // Stop before etcd can let the lease go: a quarter of the TTL before the expiry we know of.
  if (clock_.NowMs() >= valid - quarter) StepDown("the lease could not be renewed in time");
}

void Election::StepDown(const std::string& why) {
  leading_ = false;  // answers nothing from here on
  answer_until_ = 0;
  step_downs_.fetch_add(1);
  YB_LOG_ERROR(
      "HA: master {} stops leading at epoch {}: {}. It stops (what it had not acknowledged goes "
      "with it); started again, it follows the new leader",
      options_.address, epoch_.load(), why);
  if (hooks_.step_down) hooks_.step_down(why);
}

bool Election::WriteInSync(const std::vector<std::string>& standbys) {
  const auto epoch = static_cast<int64_t>(epoch_.load());
  json j{{"epoch", epoch}, {"leader", options_.address}, {"standbys", standbys}};
  auto r = etcd_.PutIfOwned(Key("master_view"), epoch, Key("in_sync"), j.dump());
  if (!r.ok()) {
    YB_LOG_WARN("HA: writing the in-sync list: {}", r.status().ToString());
    return false;
  }
  if (!*r) {
    StepDown("etcd says the leader's key is no longer ours");
    return false;
  }
  return true;
}

}  // namespace yb::ha
