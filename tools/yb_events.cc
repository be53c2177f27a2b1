#include "yb_events.h"

#include <cstdio>

#include "master/kv_events.h"

namespace yb::tools {

int TailKvEvents(const EventsOptions& o) {
  auto sub = KvEventSubscriber::Connect(o.endpoint);
  if (!sub.ok()) {
    std::fprintf(stderr, "%s\n", sub.status().message().c_str());
    return 1;
  }
  const int wait_ms = o.timeout_s > 0 ? static_cast<int>(o.timeout_s * 1000) : 1000;
  uint64_t seen = 0;
  std::optional<uint64_t> last_seq;
  for (;;) {
    auto m = (*sub)->Receive(wait_ms);
    if (!m.ok()) {
      std::fprintf(stderr, "yb events: %s\n", m.status().message().c_str());
      return 1;
    }
    if (!m->has_value()) {
      if (o.timeout_s > 0) return 0;  // quiet for the time asked: done
      continue;
    }
    const auto& msg = **m;
    if (last_seq && msg.seq != *last_seq + 1) {
      std::fprintf(stderr, "yb events: messages %llu to %llu missed (the master's queue was full, or ZeroMQ dropped "
                   "them): an index built from these events is incomplete\n",
                   static_cast<unsigned long long>(*last_seq + 1), static_cast<unsigned long long>(msg.seq - 1));
    }
    last_seq = msg.seq;
    for (const auto& e : msg.batch[1]) {
      if (o.json) {
        std::printf("%s\n", e.dump().c_str());
      } else {
        auto field = [&](const char* name) {
          return e.contains(name) && e[name].is_string() ? e[name].get<std::string>() : std::string("-");
        };
        std::printf("%llu %s %s %s tenant=%s\n", static_cast<unsigned long long>(msg.seq),
                    field("event_type").c_str(), field("medium").c_str(), field("object_key").c_str(),
                    field("tenant_id").c_str());
      }
      if (o.count > 0 && ++seen >= o.count) {
        std::fflush(stdout);
        return 0;
      }
    }
    std::fflush(stdout);
  }
}

}  // namespace yb::tools
