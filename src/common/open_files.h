// RaiseOpenFileLimit: lifts this process's soft limit on open descriptors to its hard limit.
//
// Our servers keep a descriptor per connection, and Debian's default soft limit (1024) is what
// ends a master's growth at about a thousand clients, though the hard limit (usually 524288 or
// more) would allow far more: so the daemons raise it at start, as Go programs and most servers
// do. Libraries (the C and Python APIs) leave the embedding process's limits alone.
#pragma once

#include <cstdint>

namespace yb {

struct OpenFileLimit {
  uint64_t before = 0;  // the soft limit found
  uint64_t now = 0;     // the soft limit after raising it
};

// Never lowers the limit; when setrlimit fails, `now` is `before`.
OpenFileLimit RaiseOpenFileLimit();

}  // namespace yb
