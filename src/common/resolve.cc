#include "common/resolve.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <thread>

#include "common/segment_name.h"
#include "common/unix_socket.h"
#include "common/worker.h"

namespace yb {

namespace {

constexpr TimeMs kFreshMs = 30'000;  // a lookup started longer ago than this is not waited for or used

Result<std::vector<SocketAddress>> GetAddrInfo(const std::string& host, const std::string& port, int flags) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = flags;
  addrinfo* res = nullptr;
  if (int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &res); rc != 0) {
    return Status(Code::kRpcFail, std::string("cannot resolve ") + host + ":" + port + ": " +
                                      (rc == EAI_SYSTEM ? strerror(errno) : gai_strerror(rc)));
  }
  std::vector<SocketAddress> out;
  for (addrinfo* a = res; a; a = a->ai_next) {
    if (a->ai_addrlen > sizeof(sockaddr_storage)) continue;
    SocketAddress s;
    std::memcpy(&s.addr, a->ai_addr, a->ai_addrlen);
    s.len = a->ai_addrlen;
    s.family = a->ai_family;
    out.push_back(s);
  }
  freeaddrinfo(res);
  if (out.empty()) return Status(Code::kRpcFail, "cannot resolve " + host + ":" + port + ": no address");
  return out;
}

}  // namespace

struct NameResolver::Pending {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  TimeMs started = 0;
  Result<std::vector<SocketAddress>> result{Status(Code::kInternal, "")};
};

NameResolver::NameResolver(Lookup lookup, const Clock* clock)
    : lookup_(std::move(lookup)), clock_(clock ? clock : &SteadyClock()) {}

Result<std::vector<SocketAddress>> NameResolver::SystemLookup(const std::string& host, const std::string& port) {
  return GetAddrInfo(host, port, 0);
}

Result<std::vector<SocketAddress>> NameResolver::Resolve(const std::string& host, const std::string& port,
                                                         std::chrono::steady_clock::time_point until) {
  if (auto numeric = GetAddrInfo(host, port, AI_NUMERICHOST | AI_NUMERICSERV); numeric.ok()) return numeric;
  const std::string key = host + '\0' + port;
  std::shared_ptr<Pending> p;
  {
    std::lock_guard lock(mu_);
    auto it = pending_.find(key);
    const TimeMs now = clock_->NowMs();
    if (it != pending_.end() && now - it->second->started <= kFreshMs) p = it->second;
    if (!p) {
      p = std::make_shared<Pending>();
      p->started = now;
      try {
        Worker("yb-resolve", [lookup = lookup_, p, host, port] {
          auto r = lookup(host, port);
          {
            std::lock_guard pl(p->mu);
            p->result = std::move(r);
            p->done = true;
          }
          p->cv.notify_all();
        }).Detach();
      } catch (const std::system_error& e) {
        return Status(Code::kRpcFail,
                      "cannot resolve " + host + ":" + port + ": no thread for the lookup: " + e.what());
      }
      pending_[key] = p;
    }
  }
  std::unique_lock pl(p->mu);
  if (!p->cv.wait_until(pl, until, [&] { return p->done; })) {
    return Status(Code::kRpcTimeout, "resolving " + host + " took longer than the deadline (the lookup goes on)");
  }
  auto result = p->result;
  pl.unlock();
  std::lock_guard lock(mu_);
  if (auto it = pending_.find(key); it != pending_.end() && it->second == p)
    pending_.erase(it);  // used: look up anew next time
  return result;
}

namespace {

// An IPv4 address as a dual-stack socket reports it ("::ffff:10.0.0.2") in its plain form.
std::string WithoutMapping(std::string_view a) {
  std::string out(a);
  if (out.rfind("::ffff:", 0) == 0 && out.find('.') != std::string::npos) out.erase(0, 7);
  return out;
}

// The numeric form of an address, IPv4-mapped IPv6 as IPv4.
std::string Numeric(const sockaddr* sa) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (sa->sa_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr, buf, sizeof(buf));
  } else if (sa->sa_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr, buf, sizeof(buf));
  }
  return WithoutMapping(buf);
}

// This machine's interface addresses, numeric.
std::vector<std::string> InterfaceAddresses() {
  std::vector<std::string> out;
  ifaddrs* ifs = nullptr;
  if (getifaddrs(&ifs) != 0) return out;
  for (ifaddrs* i = ifs; i; i = i->ifa_next) {
    if (i->ifa_addr && (i->ifa_addr->sa_family == AF_INET || i->ifa_addr->sa_family == AF_INET6)) {
      out.push_back(Numeric(i->ifa_addr));
    }
  }
  freeifaddrs(ifs);
  return out;
}

}  // namespace

bool IsLoopbackAddress(std::string_view address) {
  const std::string a = WithoutMapping(address);
  return a.rfind("127.", 0) == 0 || a == "::1" || a == "localhost";
}

bool IsAddressOfThisHost(std::string_view address) {
  const std::string a = WithoutMapping(address);
  if (IsLoopbackAddress(a) || a == kUnixSocketPeer) return true;
  const auto mine = InterfaceAddresses();
  return std::find(mine.begin(), mine.end(), a) != mine.end();
}

bool PeerOnHostOf(std::string_view peer, std::string_view endpoint) {
  const std::string p = WithoutMapping(peer);
  auto hp = ParseHostPort(endpoint);
  if (!hp.ok()) return false;
  auto addrs = NameResolver::SystemLookup(hp->first, std::to_string(hp->second));
  if (!addrs.ok()) return false;
  std::vector<std::string> host_addrs;
  for (const auto& a : *addrs) host_addrs.push_back(Numeric(reinterpret_cast<const sockaddr*>(&a.addr)));
  if (std::find(host_addrs.begin(), host_addrs.end(), p) != host_addrs.end()) return true;
  // A caller on this machine, and an endpoint of this machine?
  if (!IsAddressOfThisHost(p)) return false;
  return std::any_of(host_addrs.begin(), host_addrs.end(), [](const std::string& a) { return IsAddressOfThisHost(a); });
}

}  // namespace yb
