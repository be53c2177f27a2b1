// Authentication of a connection by challenge and response over a shared secret
// (docs/security.md): the secret itself never crosses the network.
//
// The exchange, after TLS when TLS is on, before anything else on the connection:
//
//   server -> client  hello   "YBAU" | u8 version (1) | u8 flags (1: a proof is wanted; 2: frames
//                             carry MACs after the exchange, mac_stream.h) | 2 pad
//                             | server nonce (16)
//   client -> server  proof   "YBAP" | u8 version | u8 pad | u16 name length | client nonce (16)
//                             | HMAC-SHA256(key, "yb-auth-client" 0 | server nonce | client nonce | name)
//                             | name
//   server -> client  answer  "YBAA" | u8 result (0 accepted, 1 refused) | u8 role | 2 pad
//                             | HMAC-SHA256(key, "yb-auth-server" 0 | server nonce | client nonce | name)
//
// Fresh nonces on both sides make each proof good for one connection only; the answer's MAC
// proves the server knows the key too (a client never talks to an impostor that merely accepts).
// With TLS and no secret the server still says hello (asking for no proof): the client learns at
// connect that the server took its certificate (TLS 1.3 tells a client that only when it reads).
// The name is the tenant a client speaks for; the key is the cluster secret or, with per-tenant
// secrets, that tenant's. Transfer servers check the data-plane key (DataPlaneKey).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "yuebing/status.h"

namespace yb::net {

inline constexpr size_t kNonceSize = 16;
inline constexpr size_t kMacSize = 32;
inline constexpr size_t kHelloSize = 24;
inline constexpr size_t kProofBase = 4 + 1 + 1 + 2 + kNonceSize + kMacSize;
inline constexpr size_t kAnswerSize = 8 + kMacSize;
inline constexpr size_t kMaxName = 256;
inline constexpr size_t kMinSecret = 16;

using Nonce = std::array<uint8_t, kNonceSize>;
using Mac = std::array<uint8_t, kMacSize>;

// What a connection proved, and so which calls it may make (docs/security.md, "Roles").
enum class Role : uint8_t {
  kCluster = 0,  // the cluster secret itself (the masters; anything), or the data-plane key
  kTenant = 1,   // one tenant's secret: its own objects only
  kNode = 2,     // a storage node's key: mounts memory, reports repairs, offloads and disk copies
  kAdmin = 3,    // an operator's key: drains, quotas, removals across tenants
};
std::string_view RoleName(Role role);

// A role's key, derived from the cluster secret, for the process that has that role only (it is
// given the key in its secret file, never the cluster secret): "yb-role:NAME:" then 64 hex digits.
// A process given such a key claims the role at every connection; the master checks it against
// the key it derives. kNode and kAdmin only.
std::string RoleKey(std::string_view cluster_secret, Role role);
// The role a secret file's contents claim: kNode or kAdmin for a role key, nullopt for a plain
// secret (the cluster's, or a tenant's).
std::optional<Role> RoleOfSecret(std::string_view secret);
// The name a role key's proof carries in place of a tenant ("@node", "@admin").
std::string ClaimOf(Role role);

// A secret file's bytes, less trailing newlines and spaces. INVALID_PARAMS for a file that cannot
// be read, holds fewer than kMinSecret bytes, or that its group or others may read or write (as
// ssh refuses a loose key: chmod 600 it).
Result<std::string> ReadSecretFile(const std::string& path, size_t min_size = kMinSecret);
// A tenant secrets file: YAML, one `tenant: secret` per line. INVALID_PARAMS naming the line, or
// for a file others may read (as above).
Result<std::map<std::string, std::string>> ReadTenantSecrets(const std::string& path);

// HMAC-SHA256 of `label`, a zero byte, then `parts`, under `key`.
Mac Hmac(std::string_view key, std::string_view label, std::initializer_list<std::string_view> parts);
// The key the data plane (transfer servers) checks: derived from the cluster secret, so every node
// has it, and given at registration to a client that proved a tenant's secret only.
std::string DataPlaneKey(std::string_view cluster_secret);
// The bearer token of the admin HTTP endpoints that change state, from the admin role's key (which
// the master derives from the cluster secret, and an operator is given).
std::string AdminToken(std::string_view admin_key);
Nonce NewNonce();

// ---- the leader's name in etcd (master_view)
// The value a leader writes under etcd key `view_key` (docs/security.md, "etcd"): its address,
// then, when the cluster has a secret, " yb-view1" and one MAC per key a caller may hold (the
// cluster secret, the node and admin role keys, each tenant's secret), each HMAC-SHA256 of the key
// and the address truncated to 16 bytes, in hex, in a random order. With no keys: the address
// alone, as Mooncake's master writes it.
std::string SignView(std::string_view address, std::string_view view_key, const std::vector<std::string>& keys);
// The address a master_view value names. With `key` (the caller's secret, cluster or role or
// tenant): only if a MAC under it is there (ILLEGAL_CLIENT otherwise: forged, or written by a
// master without the secret). Without: the address, signed or not.
Result<std::string> CheckView(std::string_view value, std::string_view view_key, std::string_view key);

// ---- the messages
struct Hello {
  Nonce nonce{};
  bool proof_wanted = false;
  bool wire_macs = false;  // after the exchange every byte goes in MAC'd records (mac_stream.h)
};
std::string EncodeHello(const Hello& hello);
std::optional<Hello> DecodeHello(std::string_view in);  // exactly kHelloSize bytes
std::string EncodeProof(std::string_view key, const Nonce& server, const Nonce& client, std::string_view name);
// A proof's parts; `size` is its whole length once its header is in (nullopt: not a proof).
struct Proof {
  Nonce client{};
  Mac mac{};
  std::string name;
};
std::optional<size_t> ProofSize(std::string_view header);  // at least 8 bytes
std::optional<Proof> DecodeProof(std::string_view in);     // exactly ProofSize bytes
bool ProofValid(std::string_view key, const Nonce& server, const Proof& proof);
std::string EncodeAnswer(bool accepted, Role role, std::string_view key, const Nonce& server, const Proof& proof);
struct Answer {
  bool accepted = false;
  Role role = Role::kCluster;
  Mac mac{};
};
std::optional<Answer> DecodeAnswer(std::string_view in);  // exactly kAnswerSize bytes
bool AnswerValid(std::string_view key, const Nonce& server, const Nonce& client, std::string_view name, const Answer& a);

// ---- refusal before any exchange
// A server that will not serve a connection at all (protected mode: no secret and a peer that is
// not on its host) says why before it closes, so that the client reports that instead of a broken
// connection:   "YBNO" | u16 text length (little-endian) | text
// A client finds it where it expected a hello, a reply frame or a transfer response.
inline constexpr size_t kMaxRefusalText = 1024;
std::string EncodeRefusal(std::string_view why);
struct Refusal {
  bool is_refusal = false;  // the bytes so far begin as a refusal does
  bool complete = false;    // and all of it is there: `text` holds it
  std::string text;
};
Refusal DecodeRefusal(std::string_view in);

}  // namespace yb::net
