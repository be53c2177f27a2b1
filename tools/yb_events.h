// `yb events`: tails the KV events a master publishes (--enable_kv_events), one line per event.
#pragma once

#include <cstdint>
#include <string>

namespace yb::tools {

struct EventsOptions {
  std::string endpoint = "tcp://127.0.0.1:5557";
  uint64_t count = 0;      // stop after this many events (0: never)
  double timeout_s = 0;    // stop after this long without a message (0: never)
  bool json = false;       // each event as the JSON object it decodes to
};

// Prints each event as it comes ("SEQ stored cpu KEY tenant=T", or JSON), and a line on stderr for
// each gap in the sequence. Returns the exit status: 0, or 1 when the endpoint is refused or a
// message does not decode.
int TailKvEvents(const EventsOptions& o);

}  // namespace yb::tools
