// Security: what a process proves and checks on its connections (docs/security.md). One per
// process, built from its flags (or, for the C API and Python, its setup), shared by its servers
// and clients:
//   - authentication (auth.h): with a secret, every server asks each new connection to prove it
//     (the cluster secret, a tenant's secret on the master, the data-plane key on transfer
//     servers), and every client proves it and checks the server's proof in return;
//   - TLS (tls.h): with a certificate, servers speak TLS; with a CA, they ask for client
//     certificates too; clients given TLS files speak TLS to every server.
// Both are set up where a connection starts: a server's accepted descriptor goes through
// Accept(), whose session runs TLS and the exchange on the event loop before it hands a Stream and
// the proven Peer to the real session; a client's connected descriptor goes through Connect()
// before its first byte. With neither on, both hand over a plain stream at once.
// Thread-safe.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "common/event_loop.h"
#include "net/auth.h"
#include "net/stream.h"
#include "net/tls.h"
#include "yuebing/status.h"

namespace yb::net {

// Who is at the other end of a connection, as its handshake proved.
struct Peer {
  std::string address;
  bool authenticated = false;  // false: the server asks for no proof, and trusts every caller as today
  Role role = Role::kCluster;
  std::string tenant;  // kTenant: the tenant whose secret it proved
  // A master (the cluster secret), or anyone where the server asks for no proof: follows the log.
  bool master() const { return !authenticated || role == Role::kCluster; }
  // ... or an operator: drains others' segments, sets quotas, removes across tenants.
  bool privileged() const { return master() || role == Role::kAdmin; }
  // ... or a storage node: acts on objects of any tenant (it holds them all).
  bool any_tenant() const { return privileged() || role == Role::kNode; }
  bool MayActFor(std::string_view t) const { return any_tenant() || tenant == t; }
};

// Which key a server checks: the master's RPC (the cluster secret, or a tenant's) or a transfer
// server (the data-plane key).
enum class Plane { kControl, kData };

struct SecurityOptions {
  std::string secret;  // the cluster secret, or a tenant's for a client of that tenant ("": no authentication)
  std::map<std::string, std::string> tenant_secrets;  // the master's: tenant -> its secret
  TlsFiles tls;
  // A server's handshake that has not ended after this long is closed (the event loops' stall
  // sweep does it; 0: never).
  std::chrono::milliseconds handshake_timeout{10000};
  // Protected mode (Redis's): a server that checks no credential (no secret, no client
  // certificates) serves only peers on its own host (IsAddressOfThisHost) and refuses every other with a
  // message saying how to proceed. False serves anyone who reaches it (the operator's choice).
  bool protected_mode = true;
  // With a secret and without TLS, every byte after the handshake goes in records that carry a MAC
  // under a key of the connection (mac_stream.h). Both ends must agree (a server says which in its
  // hello; a client that differs refuses). Off: integrity rests on the network.
  bool wire_macs = true;
};

// What a protected server tells a peer it refuses, and logs.
std::string ProtectedModeRefusal(std::string_view peer);

class RefusalSession;

class Security : public std::enable_shared_from_this<Security> {
 public:
  // Loads the TLS files. INVALID_PARAMS naming what does not load.
  static Result<std::shared_ptr<Security>> Create(SecurityOptions options);
  // Neither authentication nor TLS: what a process without those settings uses.
  // Protected mode on, as every process is by default.
  static std::shared_ptr<Security> None();

  bool auth() const { return !options_.secret.empty(); }
  // Whether a connection with `stream` after its handshake goes in MAC'd records.
  bool MacsOn(const Stream& stream) const { return auth() && options_.wire_macs && !stream.encrypted(); }
  bool tls() const { return options_.tls.enabled(); }
  // Whether this process's servers check a credential of every peer: a secret, or client
  // certificates signed by our CA (mutual TLS).
  bool checks_peers() const { return auth() || (!options_.tls.cert.empty() && !options_.tls.ca.empty()); }
  // Whether a server of this process serves only its own host (protected mode without credentials).
  bool loopback_only() const { return options_.protected_mode && !checks_peers(); }
  const SecurityOptions& options() const { return options_; }

  // The data-plane key this process proves to and checks on transfer servers: derived from its
  // secret, unless the master gave it another (a client that proved a tenant's secret only).
  std::string data_key() const;
  void SetDataKey(std::string key) const;
  // The master's, to give clients at registration: derived from the cluster secret.
  std::string cluster_data_key() const { return auth() ? DataPlaneKey(options_.secret) : std::string(); }
  // The role this process claims at connect: that of its role key, else kCluster (or a tenant's,
  // which the master decides by the tenant named).
  std::optional<Role> claimed_role() const { return RoleOfSecret(options_.secret); }
  // The admin HTTP token this process can compute: from the cluster secret (a master) or the admin
  // role's key (an operator); "" otherwise.
  std::string admin_token() const;

  // ---- servers
  // Makes the session that serves a connection once its handshake is done.
  using SessionFactory = std::function<std::unique_ptr<LoopSession>(std::unique_ptr<Stream> stream, Peer peer)>;
  // The session for an accepted descriptor: `make`'s at once when there is nothing to check, else
  // one that runs the handshake first (refusing, logged, a peer that fails it). In protected mode
  // without credentials, a peer not on this host gets a session that sends it the refusal
  // (EncodeRefusal) and closes.
  std::unique_ptr<LoopSession> Accept(Plane plane, int fd, std::string peer, const SessionFactory& make) const;

  // ---- clients
  // TLS and the exchange on a connected descriptor (its blocking mode is kept), by `deadline`.
  // `tenant`: the name a control-plane proof gives. ILLEGAL_CLIENT when the server refuses the
  // proof or fails to prove itself; RPC_FAIL / RPC_TIMEOUT (control) or TRANSFER_FAIL (data) when
  // the exchange breaks off.
  Result<std::unique_ptr<Stream>> Connect(Plane plane, int fd, const std::string& target, const std::string& tenant,
                                          std::chrono::steady_clock::time_point deadline) const;

 private:
  friend class HandshakeSession;
  explicit Security(SecurityOptions options) : options_(std::move(options)) {}
  // The role a control- or data-plane proof earns, or nullopt.
  std::optional<Role> Check(Plane plane, const Nonce& server, const Proof& proof, std::string* key) const;

  const SecurityOptions options_;
  std::string node_key_, admin_key_;  // a master's: the role keys it checks (RoleKey)
  std::shared_ptr<TlsContext> server_tls_, client_tls_;
  mutable std::mutex mu_;
  mutable std::string data_key_;  // under mu_; "" until given
};

}  // namespace yb::net
