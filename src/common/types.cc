#include "yuebing/types.h"

#include <cstdio>
#include <iterator>
#include <utility>
#include <random>

namespace yb {

std::string ClientId::ToString() const {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%016llx%016llx", static_cast<unsigned long long>(hi),
                static_cast<unsigned long long>(lo));
  return buf;
}

namespace {
// 128 random bits, never all zero (which means "none" for both ids).
std::pair<uint64_t, uint64_t> RandomPair() {
  thread_local std::mt19937_64 gen([] {
    std::random_device rd;
    return (static_cast<uint64_t>(rd()) << 32) ^ rd();
  }());
  std::pair<uint64_t, uint64_t> p{gen(), gen()};
  if (p.first == 0 && p.second == 0) p.second = 1;
  return p;
}
}  // namespace

ClientId ClientId::Random() {
  auto [hi, lo] = RandomPair();
  return ClientId{hi, lo};
}

TaskId TaskId::Random() {
  auto [hi, lo] = RandomPair();
  return TaskId{hi, lo};
}

std::string_view MissReasonName(MissReason r) {
  static constexpr std::string_view kNames[kMissReasonCount] = {
      "stored",       "not_remembered", "put_in_progress", "removed",       "evicted",
      "node_lost",    "replica_lost",   "put_abandoned",   "refused_quota", "refused_no_space"};
  const auto i = static_cast<size_t>(r);
  return i < std::size(kNames) ? kNames[i] : std::string_view("unknown");
}

std::string DescribeMiss(const MissInfo& why) {
  std::string out;
  switch (why.reason) {
    case MissReason::kStored: return "stored";
    case MissReason::kNotRemembered: return "never written, as far as the master remembers";
    case MissReason::kPutInProgress: return "being written";
    case MissReason::kRemoved: out = "removed"; break;
    case MissReason::kEvicted: out = "evicted"; break;
    case MissReason::kNodeLost: out = "dropped with the node that held it"; break;
    case MissReason::kReplicaLost: out = "its last replica was lost"; break;
    case MissReason::kPutAbandoned: out = "its Put was abandoned before it ended"; break;
    case MissReason::kRefusedQuota: out = "its Put was refused: the tenant's quota is used up"; break;
    case MissReason::kRefusedNoSpace: out = "its Put was refused: no segment had room"; break;
  }
  if (why.age_ms >= 0) out += " " + std::to_string(why.age_ms / 1000) + " s ago";
  return out;
}

}  // namespace yb
