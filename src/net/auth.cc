#include "net/auth.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <sys/stat.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstring>
#include <random>

#include "common/files.h"
#include "common/log.h"

namespace yb::net {
namespace {

constexpr char kHelloMagic[4] = {'Y', 'B', 'A', 'U'};
constexpr char kProofMagic[4] = {'Y', 'B', 'A', 'P'};
constexpr char kAnswerMagic[4] = {'Y', 'B', 'A', 'A'};
constexpr char kRefusalMagic[4] = {'Y', 'B', 'N', 'O'};
constexpr uint8_t kVersion = 1;

std::string_view View(const Nonce& n) { return {reinterpret_cast<const char*>(n.data()), n.size()}; }

Mac ClientMac(std::string_view key, const Nonce& server, const Nonce& client, std::string_view name) {
  return Hmac(key, "yb-auth-client", {View(server), View(client), name});
}

Mac ServerMac(std::string_view key, const Nonce& server, const Nonce& client, std::string_view name) {
  return Hmac(key, "yb-auth-server", {View(server), View(client), name});
}

std::string Hex(const Mac& m) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (uint8_t b : m) {
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 15]);
  }
  return out;
}

// A file of keys that its group or others may read or write is refused, as ssh refuses a loose key.
Status CheckPrivate(const std::string& path, std::string_view what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return Status::OK();  // read already: it went meanwhile
  if ((st.st_mode & 077) == 0) return Status::OK();
  return Status(Code::kInvalidParams, fmt::format("{} {} may be read or changed by others (mode {:o}): run `chmod 600 {}`",
                                                  what, path, st.st_mode & 0777, path));
}

}  // namespace

Result<std::string> ReadSecretFile(const std::string& path, size_t min_size) {
  auto data = ReadWholeFile(path);
  if (!data.ok()) return Status(Code::kInvalidParams, "secret file " + path + ": " + data.status().message());
  std::string s = std::move(*data);
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ' || s.back() == '\t')) s.pop_back();
  if (s.size() < min_size) {
    return Status(Code::kInvalidParams, "secret file " + path + " holds " + std::to_string(s.size()) +
                                            " bytes: a secret needs at least " + std::to_string(min_size) +
                                            " (e.g. `head -c 32 /dev/urandom | base64 > " + path + "`)");
  }
  YB_RETURN_IF_ERROR(CheckPrivate(path, "secret file"));
  return s;
}

Result<std::map<std::string, std::string>> ReadTenantSecrets(const std::string& path) {
  std::map<std::string, std::string> out;
  try {
    YAML::Node root = YAML::LoadFile(path);
    if (!root.IsMap()) return Status(Code::kInvalidParams, "tenant secrets file " + path + ": not `tenant: secret` lines");
    for (const auto& kv : root) {
      const std::string tenant = kv.first.as<std::string>();
      const std::string secret = kv.second.as<std::string>();
      if (tenant.empty() || tenant.size() > kMaxName) {
        return Status(Code::kInvalidParams, "tenant secrets file " + path + ": a tenant name of 1-256 bytes, not '" +
                                                tenant + "'");
      }
      if (secret.size() < kMinSecret) {
        return Status(Code::kInvalidParams, "tenant secrets file " + path + ": tenant '" + tenant +
                                                "' has a secret of fewer than " + std::to_string(kMinSecret) +
                                                " bytes");
      }
      out[tenant] = secret;
    }
  } catch (const YAML::Exception& e) {
    return Status(Code::kInvalidParams, "tenant secrets file " + path + ": " + e.what());
  }
  YB_RETURN_IF_ERROR(CheckPrivate(path, "tenant secrets file"));
  return out;
}

Mac Hmac(std::string_view key, std::string_view label, std::initializer_list<std::string_view> parts) {
  Mac out{};
  EVP_MAC* mac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
  EVP_MAC_CTX* ctx = mac ? EVP_MAC_CTX_new(mac) : nullptr;
  char digest[] = "SHA256";
  OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string("digest", digest, 0), OSSL_PARAM_construct_end()};
  size_t len = 0;
  const unsigned char zero = 0;
  bool ok = ctx && EVP_MAC_init(ctx, reinterpret_cast<const unsigned char*>(key.data()), key.size(), params) == 1 &&
            EVP_MAC_update(ctx, reinterpret_cast<const unsigned char*>(label.data()), label.size()) == 1 &&
            EVP_MAC_update(ctx, &zero, 1) == 1;
  for (std::string_view p : parts) {
    ok = ok && EVP_MAC_update(ctx, reinterpret_cast<const unsigned char*>(p.data()), p.size()) == 1;
  }
  ok = ok && EVP_MAC_final(ctx, out.data(), &len, out.size()) == 1 && len == out.size();
  EVP_MAC_CTX_free(ctx);
  EVP_MAC_free(mac);
  if (!ok) out.fill(0);  // a key nothing matches; never happens with OpenSSL's HMAC
  return out;
}

std::string DataPlaneKey(std::string_view cluster_secret) {
  const Mac m = Hmac(cluster_secret, "yb-data-plane-key", {});
  return std::string(reinterpret_cast<const char*>(m.data()), m.size());
}

std::string AdminToken(std::string_view admin_key) { return Hex(Hmac(admin_key, "yb-admin-token", {})); }

namespace {
constexpr std::string_view kViewTag = " yb-view1";
constexpr size_t kViewMacBytes = 16;

std::string ViewMac(std::string_view key, std::string_view view_key, std::string_view address) {
  return Hex(Hmac(key, "yb-master-view", {view_key, std::string_view("\0", 1), address})).substr(0, 2 * kViewMacBytes);
}
}  // namespace

std::string SignView(std::string_view address, std::string_view view_key, const std::vector<std::string>& keys) {
  std::string out(address);
  if (keys.empty()) return out;
  std::vector<std::string> macs;
  for (const auto& k : keys) macs.push_back(ViewMac(k, view_key, address));
  std::sort(macs.begin(), macs.end());  // sorted: which MAC is whose is not told by its place
  out += kViewTag;
  for (const auto& m : macs) out += " " + m;
  return out;
}

Result<std::string> CheckView(std::string_view value, std::string_view view_key, std::string_view key) {
  const size_t tag = value.find(kViewTag);
  const std::string_view address = value.substr(0, tag);
  if (key.empty()) return std::string(address);
  if (tag == std::string_view::npos) {
    return Status(Code::kIllegalClient, "etcd names leader '" + std::string(address.substr(0, 128)) +
                                            "' without a signature: this process has a secret, so it takes only a "
                                            "leader that signed its name with it (forged, or a master started "
                                            "without --auth_secret_file)");
  }
  const std::string want = ViewMac(key, view_key, address);
  std::string_view rest = value.substr(tag + kViewTag.size());
  bool found = false;
  while (!rest.empty()) {
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    const size_t end = std::min(rest.find(' '), rest.size());
    const std::string_view mac = rest.substr(0, end);
    found |= mac.size() == want.size() && CRYPTO_memcmp(mac.data(), want.data(), want.size()) == 0;
    rest.remove_prefix(end);
  }
  if (!found) {
    return Status(Code::kIllegalClient, "etcd names leader '" + std::string(address.substr(0, 128)) +
                                            "' with no signature under this process's secret: ignored (forged, or a "
                                            "master of another cluster)");
  }
  return std::string(address);
}

std::string_view RoleName(Role role) {
  switch (role) {
    case Role::kCluster:
      return "master";
    case Role::kTenant:
      return "tenant";
    case Role::kNode:
      return "node";
    case Role::kAdmin:
      return "admin";
  }
  return "?";
}

std::string RoleKey(std::string_view cluster_secret, Role role) {
  const std::string label = "yb-role-" + std::string(RoleName(role));
  return "yb-role:" + std::string(RoleName(role)) + ":" + Hex(Hmac(cluster_secret, label, {}));
}

std::optional<Role> RoleOfSecret(std::string_view secret) {
  for (Role r : {Role::kNode, Role::kAdmin}) {
    const std::string prefix = "yb-role:" + std::string(RoleName(r)) + ":";
    if (secret.starts_with(prefix) && secret.size() == prefix.size() + 2 * kMacSize) return r;
  }
  return std::nullopt;
}

std::string ClaimOf(Role role) { return "@" + std::string(RoleName(role)); }

Nonce NewNonce() {
  Nonce n{};
  if (RAND_bytes(n.data(), static_cast<int>(n.size())) != 1) {
    std::random_device rd;
    for (auto& b : n) b = static_cast<uint8_t>(rd());
  }
  return n;
}

std::string EncodeHello(const Hello& hello) {
  std::string out(kHelloSize, '\0');
  std::memcpy(out.data(), kHelloMagic, 4);
  out[4] = static_cast<char>(kVersion);
  out[5] = static_cast<char>((hello.proof_wanted ? 1 : 0) | (hello.wire_macs ? 2 : 0));
  std::memcpy(out.data() + 8, hello.nonce.data(), kNonceSize);
  return out;
}

std::optional<Hello> DecodeHello(std::string_view in) {
  if (in.size() != kHelloSize || std::memcmp(in.data(), kHelloMagic, 4) != 0 ||
      static_cast<uint8_t>(in[4]) != kVersion) {
    return std::nullopt;
  }
  Hello h;
  h.proof_wanted = (in[5] & 1) != 0;
  h.wire_macs = (in[5] & 2) != 0;
  std::memcpy(h.nonce.data(), in.data() + 8, kNonceSize);
  return h;
}

std::string EncodeProof(std::string_view key, const Nonce& server, const Nonce& client, std::string_view name) {
  std::string out(kProofBase, '\0');
  std::memcpy(out.data(), kProofMagic, 4);
  out[4] = static_cast<char>(kVersion);
  const auto len = static_cast<uint16_t>(name.size());
  std::memcpy(out.data() + 6, &len, 2);
  std::memcpy(out.data() + 8, client.data(), kNonceSize);
  const Mac m = ClientMac(key, server, client, name);
  std::memcpy(out.data() + 8 + kNonceSize, m.data(), kMacSize);
  out.append(name);
  return out;
}

std::optional<size_t> ProofSize(std::string_view header) {
  if (header.size() < 8 || std::memcmp(header.data(), kProofMagic, 4) != 0 ||
      static_cast<uint8_t>(header[4]) != kVersion) {
    return std::nullopt;
  }
  uint16_t len;
  std::memcpy(&len, header.data() + 6, 2);
  if (len > kMaxName) return std::nullopt;
  return kProofBase + len;
}

std::optional<Proof> DecodeProof(std::string_view in) {
  auto size = ProofSize(in);
  if (!size || in.size() != *size) return std::nullopt;
  Proof p;
  std::memcpy(p.client.data(), in.data() + 8, kNonceSize);
  std::memcpy(p.mac.data(), in.data() + 8 + kNonceSize, kMacSize);
  p.name.assign(in.substr(kProofBase));
  return p;
}

bool ProofValid(std::string_view key, const Nonce& server, const Proof& proof) {
  if (key.empty()) return false;
  const Mac want = ClientMac(key, server, proof.client, proof.name);
  return CRYPTO_memcmp(want.data(), proof.mac.data(), kMacSize) == 0;
}

std::string EncodeAnswer(bool accepted, Role role, std::string_view key, const Nonce& server, const Proof& proof) {
  std::string out(kAnswerSize, '\0');
  std::memcpy(out.data(), kAnswerMagic, 4);
  out[4] = static_cast<char>(accepted ? 0 : 1);
  out[5] = static_cast<char>(role);
  if (accepted) {
    const Mac m = ServerMac(key, server, proof.client, proof.name);
    std::memcpy(out.data() + 8, m.data(), kMacSize);
  }
  return out;
}

std::optional<Answer> DecodeAnswer(std::string_view in) {
  if (in.size() != kAnswerSize || std::memcmp(in.data(), kAnswerMagic, 4) != 0) return std::nullopt;
  Answer a;
  a.accepted = in[4] == 0;
  const auto role = static_cast<uint8_t>(in[5]);
  a.role = role <= static_cast<uint8_t>(Role::kAdmin) ? static_cast<Role>(role) : Role::kCluster;
  std::memcpy(a.mac.data(), in.data() + 8, kMacSize);
  return a;
}

bool AnswerValid(std::string_view key, const Nonce& server, const Nonce& client, std::string_view name,
                 const Answer& a) {
  const Mac want = ServerMac(key, server, client, name);
  return a.accepted && CRYPTO_memcmp(want.data(), a.mac.data(), kMacSize) == 0;
}

std::string EncodeRefusal(std::string_view why) {
  why = why.substr(0, kMaxRefusalText);
  std::string out(kRefusalMagic, 4);
  out.push_back(static_cast<char>(why.size() & 0xff));
  out.push_back(static_cast<char>(why.size() >> 8));
  out.append(why);
  return out;
}

Refusal DecodeRefusal(std::string_view in) {
  Refusal r;
  const size_t n = std::min<size_t>(in.size(), 4);
  if (n == 0 || in.substr(0, n) != std::string_view(kRefusalMagic, n)) return r;
  r.is_refusal = true;
  if (in.size() < 6) return r;
  const size_t len = static_cast<uint8_t>(in[4]) | static_cast<size_t>(static_cast<uint8_t>(in[5])) << 8;
  if (len > kMaxRefusalText) {
    r.is_refusal = false;  // not ours
    return r;
  }
  if (in.size() < 6 + len) return r;
  r.complete = true;
  r.text.assign(in.substr(6, len));
  return r;
}

}  // namespace yb::net
