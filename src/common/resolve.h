// NameResolver: host names to TCP addresses, within a deadline.
//
// getaddrinfo cannot be told to give up: with a DNS server that does not answer it blocks for the
// resolver's timeouts times its attempts (5 s x 2 by default, per name server), whatever deadline
// the caller has. So a lookup of a name runs on a helper thread and the caller waits for it only
// until its deadline (RPC_TIMEOUT then). A lookup that outlives its caller goes on; the next
// Resolve of the same host and port waits for that one (or takes its answer) instead of starting
// another, unless it started more than 30 s ago. So a hung resolver costs a thread per name per
// 30 s, not one per attempt, and no answer older than that is used. A numeric address ("127.0.0.1", "::1")
// is parsed at once, with no thread. Each Resolve after a lookup has finished looks the name up
// again (a name may move, as a master's does when it fails over). Thread-safe.
#pragma once

#include <sys/socket.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/clock.h"
#include "yuebing/status.h"

namespace yb {

struct SocketAddress {
  sockaddr_storage addr{};
  socklen_t len = 0;
  int family = AF_UNSPEC;
};

class NameResolver {
 public:
  // Looks host:port up, blocking. Errors: RPC_FAIL with the reason.
  using Lookup = std::function<Result<std::vector<SocketAddress>>(const std::string& host, const std::string& port)>;
  static Result<std::vector<SocketAddress>> SystemLookup(const std::string& host, const std::string& port);

  // `clock` (default: the steady clock) dates the lookups.
  explicit NameResolver(Lookup lookup = SystemLookup, const Clock* clock = nullptr);
  NameResolver(const NameResolver&) = delete;
  NameResolver& operator=(const NameResolver&) = delete;

  // The addresses of host:port, in getaddrinfo's order, by `until`. RPC_TIMEOUT if the lookup
  // had not finished by then; RPC_FAIL if the name does not resolve.
  Result<std::vector<SocketAddress>> Resolve(const std::string& host, const std::string& port,
                                             std::chrono::steady_clock::time_point until);

 private:
  struct Pending;  // a lookup on its helper thread; shared with that thread
  Lookup lookup_;
  const Clock* clock_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<Pending>> pending_;  // host and port -> the latest lookup, until used
};

// Whether `address` ("127.0.0.1", "::1", "::ffff:127.0.0.1", "localhost") is this host's loopback.
bool IsLoopbackAddress(std::string_view address);

// Whether `address` (numeric, as a listener reports a peer: "10.0.0.2", "::1", "::ffff:10.0.0.2")
// is this machine's: a loopback address, or one of its interfaces' (looked up each call, so an
// address added since counts). A connection from such an address comes from a process here.
bool IsAddressOfThisHost(std::string_view address);

// Whether a connection from `peer` (an address as a listener reports it: "10.0.0.2", "::1",
// "::ffff:10.0.0.2") comes from the host of `endpoint` ("host:port", "[v6]:port"): `peer` is one
// of the host's addresses, or both are this machine (a loopback peer, and a host that resolves to
// loopback or to an address of one of this machine's interfaces). A name is looked up (blocking,
// SystemLookup). False when the endpoint does not parse or resolve.
bool PeerOnHostOf(std::string_view peer, std::string_view endpoint);

}  // namespace yb
