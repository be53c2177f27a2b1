// ConnectRemote: a client of a yb-master over the network, with a TCP transfer server for
// the segments it mounts, and memcpy for segments mapped in this process.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <optional>
#include <random>
#include <vector>

#include "client/client_internal.h"
#include "client/leader_follower.h"
#include "client/segment_directory.h"
#include "common/host_identity.h"
#include "common/log.h"
#include "common/segment_name.h"
#include "rpc/master_client.h"
#include "transfer/memcpy_transport.h"
#include "transfer/shm/shm_server.h"
#include "transfer/shm/shm_transport.h"
#include "transfer/tcp/tcp_transport.h"
#include "transfer/tcp/transfer_server.h"

namespace yb {
namespace {

// Segments mapped in this process, shared by all its clients: the memcpy transport's reach.
std::shared_ptr<LocalSegmentRegistry> ProcessSegments() {
  static auto registry = std::make_shared<LocalSegmentRegistry>();
  return registry;
}

// What a remote client keeps alive besides itself.
struct RemotePlumbing {
  RealClock clock;
  int reserved_port_fd = -1;  // a caller without a transfer server: the port in its name
  std::shared_ptr<MasterApi> master;
  std::shared_ptr<SegmentDirectory> directory;
  std::unique_ptr<tcp::TransferServer> server;
  std::unique_ptr<shm::ShmServer> same_host;
  ~RemotePlumbing() {
    if (same_host) same_host->Stop();
    if (server) server->Stop();
    if (reserved_port_fd >= 0) ::close(reserved_port_fd);
  }
};

// Ports to try, in a random order, from the client's range (Mooncake's 12300-14300 by default), at
// most kPortTries of them; then 0 (any free port).
constexpr size_t kPortTries = 32;
std::vector<uint16_t> PortsToTry(const ClientConfig& c) {
  std::vector<uint16_t> out;
  std::mt19937 rng(std::random_device{}());
  std::uniform_int_distribution<int> pick(c.client_port_min, c.client_port_max);
  const size_t span = static_cast<size_t>(c.client_port_max - c.client_port_min) + 1;
  for (size_t i = 0; i < std::min(span, kPortTries); ++i) out.push_back(static_cast<uint16_t>(pick(rng)));
  out.push_back(0);
  return out;
}

// A TCP port of this host held (bound, never listening) for the life of a client that serves no
// transfers, so that its name "host:port" is unique among the processes of the host, as Mooncake's
// clients reserve one: callers use it as their identity (get_hostname). In the client's range where
// one is free there; 0 when none is free at all.
uint16_t ReservePort(const ClientConfig& c, int& fd) {
  for (uint16_t want : PortsToTry(c)) {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return 0;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    a.sin_port = htons(want);
    socklen_t len = sizeof(a);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
      return ntohs(a.sin_port);
    }
    ::close(fd);
    fd = -1;
  }
  return 0;
}

// Host and port to listen on for transfers: from transfer_bind_address, else local_hostname.
// No port given: nullopt for the port (Mooncake's range then; an explicit 0 is any free port).
Result<std::pair<std::string, std::optional<uint16_t>>> TransferBind(const ClientConfig& c) {
  std::string spec = c.transfer_bind_address.empty() ? c.local_hostname : c.transfer_bind_address;
  if (spec.find(':') == std::string::npos) return std::make_pair(spec, std::optional<uint16_t>());
  auto hp = ParseHostPort(spec, /*allow_port_zero=*/true);
  if (!hp.ok()) return hp.status();
  return std::make_pair(hp->first, std::optional<uint16_t>(hp->second));
}

}  // namespace

Result<std::unique_ptr<Client>> ConnectRemote(const ClientConfig& config) {
  const auto timeout = std::chrono::milliseconds(config.rpc_timeout_ms);
  auto security = ClientSecurity(config);
  if (!security.ok()) return security.status();
  const auto channel = MasterChannel(config, *security);
  std::shared_ptr<MasterApi> master;
  if (LeaderFollower::IsEtcdAddress(config.master_server_addr)) {
    auto etcd = EtcdAccess(config);
    if (!etcd.ok()) return etcd.status();
    auto f = LeaderFollower::Create(config.master_server_addr, config.cluster_id, timeout, channel, *etcd);
    if (!f.ok()) return f.status();
    master = std::move(f).value();
  } else {
    auto hp = ParseHostPort(config.master_server_addr);
    if (!hp.ok()) {
      return Status(Code::kInvalidParams, "master_server_addr '" + config.master_server_addr +
                                              "' is neither host:port, etcd://host:port nor \"embedded[:NAME]\"");
    }
    master = std::make_shared<rpc::MasterClient>(hp->first, hp->second, timeout, nullptr, channel);
  }
  auto transport_options = tcp::TcpTransport::Options::WithSliceSize(config.transfer_slice_size, config.mc_slice_size);
  if (!transport_options.ok()) return transport_options.status();
  transport_options->security = *security;
  auto plumbing = std::make_shared<RemotePlumbing>();
  plumbing->master = std::move(master);
  plumbing->directory = std::make_shared<SegmentDirectory>(*plumbing->master, plumbing->clock);
  auto engine = std::make_shared<TransferEngine>();
  engine->AddTransport(std::make_shared<MemcpyTransport>(ProcessSegments()));
  auto directory = plumbing->directory;
  auto resolve = [directory](SegmentId s) { return directory->Resolve(s); };
  auto tcp = std::make_shared<tcp::TcpTransport>(resolve, *transport_options);
  if (config.same_host_transfers) {  // own process, same host, then TCP
    shm::ShmTransport::Options o;
    o.data_key = [security = *security] { return security->data_key(); };
    o.host_of = [directory](SegmentId s) { return directory->HostOf(s); };
    o.my_host = HostIdentity();
    engine->AddTransport(std::make_shared<shm::ShmTransport>(resolve, tcp, o));
  }
  engine->AddTransport(tcp);

  std::string endpoint{kLocalEndpoint};
  std::string renamed;  // local_hostname with the port actually served, when its own was taken
  std::shared_ptr<LocalSegmentRegistry> served;
  if (config.global_segment_size > 0) {
    auto bind = TransferBind(config);
    if (!bind.ok()) return bind.status();
    served = std::make_shared<LocalSegmentRegistry>();
    tcp::TransferServer::Options so;
    so.address = bind->first;
    so.max_connections = config.transfer_max_connections;
    so.max_connections_per_peer = config.transfer_max_connections_per_peer;
    so.keepalive = Keepalive::After(std::chrono::seconds(config.transfer_keepalive_sec));
    so.stall_timeout_ms = static_cast<int>(std::min<uint32_t>(config.transfer_stall_timeout_sec, 86400) * 1000);
    so.security = *security;
    // The port given, or the first free one of the client's range (then any). A port that only
    // local_hostname gives and another process (or another store of this one) holds: the range's,
    // as Mooncake's clients find theirs under P2PHANDSHAKE; an explicit transfer_bind_address is
    // bound as it is or not at all.
    const bool port_from_name = bind->second && *bind->second != 0 && config.transfer_bind_address.empty();
    std::vector<uint16_t> ports = bind->second ? std::vector<uint16_t>{*bind->second} : PortsToTry(config);
    if (port_from_name) {
      for (uint16_t p : PortsToTry(config)) ports.push_back(p);
    }
    Status started;
    for (uint16_t port : ports) {
      so.port = port;
      plumbing->server = std::make_unique<tcp::TransferServer>(served, so);
      started = plumbing->server->Start();
      if (started.ok()) break;
      plumbing->server.reset();
    }
    YB_RETURN_IF_ERROR(started);
    if (port_from_name && plumbing->server->port() != *bind->second) {
      renamed = bind->first + ":" + std::to_string(plumbing->server->port());
      YB_LOG_WARN("port {} of local_hostname '{}' is taken (by another client of this host): transfers are served "
                  "on port {}, and this client's name is '{}' (get_hostname)",
                  *bind->second, config.local_hostname, plumbing->server->port(), renamed);
    }
    if (!bind->second && (plumbing->server->port() < config.client_port_min ||
                          plumbing->server->port() > config.client_port_max)) {
      YB_LOG_WARN("no port free in {}-{} (MC_STORE_CLIENT_MIN_PORT / MC_STORE_CLIENT_MAX_PORT): transfers are "
                  "served on port {}",
                  config.client_port_min, config.client_port_max, plumbing->server->port());
    }
    // Others reach us at the bind address, or at local_hostname's host when bound to any address.
    std::string host = bind->first;
    if (host == "0.0.0.0" || host == "::") {
      host = config.local_hostname.substr(0, config.local_hostname.rfind(':'));
    }
    endpoint = host + ":" + std::to_string(plumbing->server->port());
    if (config.same_host_transfers) {
      plumbing->same_host = std::make_unique<shm::ShmServer>(
          served, shm::ShmServer::Options{endpoint, [security = *security] { return security->data_key(); }});
      if (Status st = plumbing->same_host->Start(); !st.ok()) {
        YB_LOG_WARN("{}: peers of this host reach this client's memory over TCP", st.ToString());
        plumbing->same_host.reset();
      }
    }
  }
  // Segment names are unique in the cluster, as Mooncake's are under P2PHANDSHAKE: a name that
  // carries no port gets the transfer server's, so that two daemons on one host (both named after
  // it) are two fault domains to the master, and not one that it silently merges.
  ClientConfig effective = config;
  if (!renamed.empty()) {
    effective.local_hostname = renamed;
  } else if (!HasPort(config.local_hostname)) {
    uint16_t port = plumbing->server ? plumbing->server->port() : ReservePort(config, plumbing->reserved_port_fd);
    if (port != 0) effective.local_hostname = config.local_hostname + ":" + std::to_string(port);
  }
  ClientParts parts;
  parts.master = plumbing->master;
  parts.local_segments = ProcessSegments();
  parts.engine = engine;
  parts.endpoint = endpoint;
  parts.served = served;
  parts.transfer_server = plumbing->server.get();
  parts.same_host_server = plumbing->same_host.get();
  parts.data_key = [security = *security] { return security->data_key(); };
  parts.keepalive = plumbing;
  auto client = ClientInternal::Create(effective, std::move(parts));
  if (!client.ok()) return client;
  YB_LOG_INFO("client '{}' connected to master {}; transfers at {}", effective.local_hostname,
              config.master_server_addr, endpoint);
  return client;
}

}  // namespace yb
