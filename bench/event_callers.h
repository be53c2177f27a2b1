// Closed-loop callers driven by one thread, as wrk or memtier drive a server: `conns` connections
// to an RpcServer, each with exactly one call in flight (a connection's next request is written only
// after its reply has been read and checked). The threads-per-connection callers of yb-bench pay a
// thread switch per call on the caller's side too; with callers and master sharing two cores that
// cost is charged to the master's figure. This caller keeps its own cost to one epoll_wait per batch
// of ready replies plus one read and one write per call, so the figure is closer to what the master
// serves to callers on other machines.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "yuebing/status.h"

namespace yb::bench {

struct EventCallResult {
  uint64_t calls = 0;     // replies received and accepted by `check`
  uint64_t failures = 0;  // error replies or replies `check` refused
  double seconds = 0;
};

// The request a connection sends as its n-th call: sets the method and returns the body, which
// must stay valid until the next call of the function (pre-built bodies keep the caller cheap).
using NextRequest = std::function<std::string_view(int conn, uint64_t n, uint16_t* method)>;
// Accepts a reply body (of a reply without the error flag) to the n-th call of a connection.
using CheckReply = std::function<bool(int conn, uint64_t n, std::string_view body)>;

// Runs for `seconds`; fails when a connection cannot be made, a reply is malformed, or a
// connection is lost. `per_cpu` runs one such caller thread per CPU this process may use, each
// pinned to its CPU and holding its share of the connections, as callers on other hosts would reach
// a server whose NIC spreads connections over its CPUs; `next` and `check` are then called from
// those threads at once.
Result<EventCallResult> RunEventCallers(const std::string& host, uint16_t port, int conns, double seconds,
                                        const NextRequest& next, const CheckReply& check, bool per_cpu = false);

}  // namespace yb::bench
