// Segment names and endpoints: "host:port" (or "[v6]:port"). A storage process names its segments
// after its host and transfer port, so a name is one process and its host part one machine. One
// place for the parsing that placement, drains and the tools share.
#pragma once

#include <string_view>

namespace yb {

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
