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
    // Each event read in place: the text form needs four fields, and JSON is built only for --json.
    bool enough = false;
    auto print = [&](const KvEventView& e) {
      auto field = [&](const char* name) { return e.Str(name).value_or("-"); };
      const std::string_view type = field("event_type"), medium = field("medium"), key = field("object_key"),
                             tenant = field("tenant_id");
      std::printf("%llu %.*s %.*s %.*s tenant=%.*s\n", static_cast<unsigned long long>(msg.seq),
                  static_cast<int>(type.size()), type.data(), static_cast<int>(medium.size()), medium.data(),
                  static_cast<int>(key.size()), key.data(), static_cast<int>(tenant.size()), tenant.data());
      enough = o.count > 0 && ++seen >= o.count;
      return !enough;
    };
    Status st;
    if (o.json) {
      auto batch = DecodeKvEventBatch(msg.payload);
      st = batch.status();
      for (size_t i = 0; batch.ok() && i < (*batch)[1].size() && !enough; ++i) {
        std::printf("%s\n", (*batch)[1][i].dump().c_str());
        enough = o.count > 0 && ++seen >= o.count;
      }
    } else {
      st = ForEachKvEvent(msg.payload, print);
    }
    if (!st.ok()) {
      std::fprintf(stderr, "yb events: %s\n", st.message().c_str());
      return 1;
    }
    std::fflush(stdout);
    if (enough) return 0;
  }
}

}  // namespace yb::tools
