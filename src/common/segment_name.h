// Segment names and endpoints: "host:port" (or "[v6]:port"). A storage process names its segments
// after its host and transfer port, so a name is one process and its host part one machine. One
// place for the parsing that placement, drains, addresses of masters and etcd, and the tools share.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "yuebing/status.h"

namespace yb {

// Splits "host:port" or "[v6]:port" into the host (without brackets) and the port; INVALID_PARAMS
// naming the text when it is not that. Port 0 ("any free port") only if allowed.
inline Result<std::pair<std::string, uint16_t>> ParseHostPort(std::string_view address, bool allow_port_zero = false) {
  const size_t colon = address.rfind(':');
  const auto bad = [&](const char* what) {
    return Status(Code::kInvalidParams, "address '" + std::string(address) + "' " + what);
  };
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == address.size()) return bad("is not host:port");
  std::string_view host = address.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  uint32_t port = 0;
  for (const char c : address.substr(colon + 1)) {
    if (c < '0' || c > '9' || port > 65535) return bad("has a bad port");
    port = port * 10 + static_cast<uint32_t>(c - '0');
  }
  if ((port == 0 && !allow_port_zero) || port > 65535) return bad("has a bad port");
  return std::make_pair(std::string(host), static_cast<uint16_t>(port));
}

// The host part of "host:port" or "[v6]:port"; the whole text when it carries no port.
inline std::string_view HostOf(std::string_view endpoint) {
  const size_t colon = endpoint.rfind(':');
  if (colon == std::string_view::npos) return endpoint;
  if (endpoint.front() == '[') {
    return colon > 1 && endpoint[colon - 1] == ']' ? endpoint.substr(1, colon - 2) : endpoint;
  }
  if (endpoint.find(':') != colon) return endpoint;  // a bare IPv6 address
  return endpoint.substr(0, colon);
}

// Whether the text ends in a port that HostOf would strip ("node-a:15001", not "node-a" or "::1").
inline bool HasPort(std::string_view name) {
  const std::string_view host = HostOf(name);
  return host.size() != name.size() && name.back() != ':' &&
         name.find_first_not_of("0123456789", name.rfind(':') + 1) == std::string_view::npos;
}

// Whether segment `name` is the one `wanted` names: the same name, or `wanted` is its host (every
// process on that machine).
inline bool SegmentNameMatches(std::string_view name, std::string_view wanted) {
  return name == wanted || HostOf(name) == wanted;
}

}  // namespace yb
