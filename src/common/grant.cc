#include "common/grant.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <chrono>
#include <cstring>
#include <random>

namespace yb {
namespace {

constexpr char kDomain[4] = {'Y', 'B', 'G', '1'};  // what the hash input is, so no other use of a key collides

// One SipHash context per thread, keyed anew for each grant (about 0.2 us): no lock, no allocation.
class Mac {
 public:
  Mac() {
    if (EVP_MAC* m = EVP_MAC_fetch(nullptr, "SIPHASH", nullptr)) {
      ctx_ = EVP_MAC_CTX_new(m);
      EVP_MAC_free(m);  // the context holds its own reference
    }
  }
  ~Mac() { EVP_MAC_CTX_free(ctx_); }
  Mac(const Mac&) = delete;
  Mac& operator=(const Mac&) = delete;

  bool Compute(std::string_view key, const uint8_t* head, size_t head_len, std::string_view tail,
               std::array<uint8_t, 16>& out) {
    if (!ctx_ || key.size() != kGrantKeySize) return false;
    size_t size = out.size();
    OSSL_PARAM params[] = {OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_SIZE, &size), OSSL_PARAM_construct_end()};
    size_t written = 0;
    return EVP_MAC_init(ctx_, reinterpret_cast<const unsigned char*>(key.data()), key.size(), params) == 1 &&
           EVP_MAC_update(ctx_, head, head_len) == 1 &&
           (tail.empty() ||
            EVP_MAC_update(ctx_, reinterpret_cast<const unsigned char*>(tail.data()), tail.size()) == 1) &&
           EVP_MAC_final(ctx_, out.data(), &written, out.size()) == 1 && written == out.size();
  }

 private:
  EVP_MAC_CTX* ctx_ = nullptr;
};

bool ComputeMac(std::string_view key, SegmentId segment, const Grant& g, std::string_view object,
                std::array<uint8_t, 16>& out) {
  uint8_t head[4 + 8 + 1 + 8 + 8 + 8];
  uint8_t* p = head;
  std::memcpy(p, kDomain, 4);
  p += 4;
  std::memcpy(p, &segment, 8);
  p += 8;
  *p++ = static_cast<uint8_t>(g.access);
  std::memcpy(p, &g.offset, 8);
  p += 8;
  std::memcpy(p, &g.length, 8);
  p += 8;
  std::memcpy(p, &g.expires_ms, 8);
  return KeyedMac(key, head, sizeof(head), object, out);
}

std::string_view AccessName(GrantAccess a) {
  switch (a) {
    case GrantAccess::kRead:
      return "read";
    case GrantAccess::kWrite:
      return "write";
    case GrantAccess::kReadObject:
      return "object read";
    case GrantAccess::kNone:
      break;
  }
  return "none";
}

}  // namespace

bool KeyedMac(std::string_view key, const uint8_t* head, size_t head_len, std::string_view tail,
              std::array<uint8_t, 16>& out) {
  thread_local Mac mac;
  return mac.Compute(key, head, head_len, tail, out);
}

std::string NewGrantKey() {
  std::string key(kGrantKeySize, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(key.data()), static_cast<int>(key.size())) != 1) {
    // No entropy from OpenSSL (it has never happened on Linux): the kernel's, through random_device.
    std::random_device rd;
    for (auto& c : key) c = static_cast<char>(rd());
  }
  return key;
}

int64_t WallMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Grant MintGrant(std::string_view key, SegmentId segment, GrantAccess access, uint64_t offset, uint64_t length,
                int64_t expires_ms, std::string_view object) {
  Grant g{access, offset, length, expires_ms, {}};
  if (access == GrantAccess::kNone || !ComputeMac(key, segment, g, object, g.mac)) return Grant{};
  return g;
}

Status CheckGrant(std::string_view key, SegmentId segment, const Grant& grant, GrantAccess access, uint64_t offset,
                  uint64_t length, int64_t now_ms, std::string_view object) {
  auto refuse = [&](std::string why) {
    return Status(Code::kIllegalClient, std::string(AccessName(access)) + " of segment " + std::to_string(segment) +
                                            " [" + std::to_string(offset) + ", +" + std::to_string(length) +
                                            "): " + why);
  };
  if (grant.access == GrantAccess::kNone) return refuse("no grant");
  if (grant.access != access) return refuse("the grant is for " + std::string(AccessName(grant.access)));
  if (offset < grant.offset || length > grant.length || offset - grant.offset > grant.length - length) {
    return refuse("outside the granted range [" + std::to_string(grant.offset) + ", +" + std::to_string(grant.length) +
                  ")");
  }
  if (now_ms > grant.expires_ms) {
    // In unsigned arithmetic: a forged expiry far in the past must not overflow the subtraction.
    const uint64_t ago = static_cast<uint64_t>(now_ms) - static_cast<uint64_t>(grant.expires_ms);
    return refuse("the grant expired " + std::to_string(ago) + " ms ago");
  }
  std::array<uint8_t, 16> want{};
  if (!ComputeMac(key, segment, grant, object, want)) return refuse("the segment has no grant key");
  if (CRYPTO_memcmp(want.data(), grant.mac.data(), want.size()) != 0) return refuse("the grant is forged");
  return Status::OK();
}

void EncodeGrant(const Grant& g, uint8_t out[kGrantWireSize]) {
  std::memset(out, 0, kGrantWireSize);
  out[0] = static_cast<uint8_t>(g.access);
  std::memcpy(out + 8, &g.offset, 8);
  std::memcpy(out + 16, &g.length, 8);
  std::memcpy(out + 24, &g.expires_ms, 8);
  std::memcpy(out + 32, g.mac.data(), 16);
}

std::string EncodeGrant(const Grant& g) {
  std::string s(kGrantWireSize, '\0');
  EncodeGrant(g, reinterpret_cast<uint8_t*>(s.data()));
  return s;
}

bool DecodeGrant(const uint8_t* in, size_t len, Grant* g) {
  *g = Grant{};
  if (len != kGrantWireSize || in[0] > static_cast<uint8_t>(GrantAccess::kReadObject)) return false;
  g->access = static_cast<GrantAccess>(in[0]);
  std::memcpy(&g->offset, in + 8, 8);
  std::memcpy(&g->length, in + 16, 8);
  std::memcpy(&g->expires_ms, in + 24, 8);
  std::memcpy(g->mac.data(), in + 32, 16);
  return true;
}

}  // namespace yb
