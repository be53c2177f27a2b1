// What the public Client does not show: creating a client from parts (embedded mode, tests), and
// the hooks tests step a client with. Only code inside the project includes this.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "api/master_api.h"
#include "common/clock.h"
#include "common/scheduler.h"
#include "etcd/etcd_client.h"
#include "net/security.h"
#include "rpc/channel.h"
#include "transfer/local_segments.h"
#include "transfer/transfer_engine.h"
#include "yuebing/client.h"

namespace yb {

namespace shm {
class ShmServer;
}  // namespace shm
namespace tcp {
class TransferServer;
}

// Called before each SSD-tier write, sync and read with the operation and the file; a non-zero
// return is the errno that operation fails with (tests: a failing device).
using StorageFault = std::function<int(std::string_view op, const std::string& path)>;

// What a client runs on. Connect() builds them from the configuration.
struct ClientParts {
  std::shared_ptr<MasterApi> master;
  std::shared_ptr<LocalSegmentRegistry> local_segments;  // segments this process reaches by memcpy
  std::shared_ptr<TransferEngine> engine;
  // Where other processes reach this client's segments ("local": only this process), and the
  // registry its transfer server serves from, if it runs one.
  std::string endpoint{kLocalEndpoint};
  std::shared_ptr<LocalSegmentRegistry> served;
  const tcp::TransferServer* transfer_server = nullptr;  // for Stats(); owned by `keepalive`
  const shm::ShmServer* same_host_server = nullptr;     // for Stats(); owned by `keepalive`
  std::shared_ptr<void> keepalive;                       // kept until the client is gone (a master, a server)
  // Runs the heartbeat (every second, from the moment the master knows the client) and the SSD
  // tier. Null: the client runs its own ThreadScheduler on the real clock. A test passes a
  // ManualScheduler and steps it, or never advances it and calls Heartbeat()/RunOffloadOnce().
  Scheduler* scheduler = nullptr;
  StorageFault storage_fault;
  // The data-plane key this client proves to transfer servers (the master may give it at
  // registration); what its dummies prove to the same-host transport. Null: none.
  std::function<std::string()> data_key;
};

class ClientInternal {
 public:
  static Result<std::unique_ptr<Client>> Create(const ClientConfig& config, ClientParts parts);
  // Tests and tools: the parts in use, and the background steps run by hand.
  static MasterApi& master(Client& c);
  // What a dummy server (dummy_server.h) moves bytes with, and the client's own segments.
  static std::shared_ptr<TransferEngine> engine(Client& c);
  static std::shared_ptr<LocalSegmentRegistry> served(Client& c);
  // ClientParts::data_key now ("" without one).
  static std::string data_key(Client& c);
  // Pings the master; registers and re-mounts when it asks (what the heartbeat does each second).
  static Status Heartbeat(Client& c);
  // One SSD-tier round now (fetch, write, report, evict); the tasks handled. 0 without an SSD tier.
  static size_t RunOffloadOnce(Client& c);
  // One batch of re-replication copies into this client's segments; how many were made.
  static size_t RunRepairOnce(Client& c);
  static size_t DiskObjects(const Client& c);
  static std::vector<SegmentId> segments(const Client& c);
  // Read pins the client holds (named in its heartbeats).
  static size_t held_pins(const Client& c);
  // Its reservations (Puts into reservations): how many it keeps, and revoking them all (as the
  // master does when it leaves).
  static size_t reservations(Client& c);
  static void DropReservations(Client& c);
};

// A client of a yb-master over the network ("host:port"), with a TCP transfer server for the
// segments it mounts (client_remote.cc).
Result<std::unique_ptr<Client>> ConnectRemote(const ClientConfig& config);
// A dummy client of the real client of this host that config.real_client names (dummy_client.cc).
Result<std::unique_ptr<Client>> ConnectDummy(const ClientConfig& config);

// The security a client's connections use: its secret file read, its TLS files loaded
// (INVALID_PARAMS naming what does not load); net::Security::None() without either.
Result<std::shared_ptr<net::Security>> ClientSecurity(const ClientConfig& config);
// How its connections to a master are set up: that security, proving the client's tenant.
rpc::RpcChannel::Options MasterChannel(const ClientConfig& config, std::shared_ptr<const net::Security> security);
// How a client reaches etcd (TLS files, its user and the password read from its file), endpoints
// left empty. INVALID_PARAMS when the password file cannot be read or others may read it.
Result<EtcdClient::Options> EtcdAccess(const ClientConfig& config);

// "embedded" / "embedded:NAME" names a master in this process; nullopt for any other address.
std::optional<std::string> EmbeddedClusterName(const std::string& master_server_addr);

// How Connect() reaches an embedded master. Set by EnableEmbeddedMaster() (yuebing/embedded.h),
// whose library carries the master; without it, an embedded address is NOT_SUPPORTED.
using EmbeddedConnector = std::function<Result<std::unique_ptr<Client>>(const ClientConfig&, const std::string& name)>;
void SetEmbeddedConnector(EmbeddedConnector connect);

}  // namespace yb
