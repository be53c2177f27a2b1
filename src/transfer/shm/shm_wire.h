// The messages of the same-host exchange (shm_server.h), little-endian, and the MACs both sides
// compute. Internal to src/transfer/shm.
#pragma once

#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include "net/auth.h"

namespace yb::shm {

inline constexpr uint32_t kVersion = 1;
inline constexpr size_t kHelloSize = 4 + 4 + net::kNonceSize;
inline constexpr size_t kAskSize = 4 + 4 + 8 + net::kNonceSize + net::kMacSize;
inline constexpr size_t kAnswerBase = 4 + 4 + 8 + 8 + 8 + 2;
inline constexpr size_t kMaxGrantKey = 256;

struct Ask {
  uint64_t segment = 0;
  net::Nonce nonce{};
  net::Mac mac{};
};

struct Reply {
  int32_t code = 0;
  uint64_t region_size = 0;
  uint64_t offset = 0;  // of the segment in the region
  uint64_t size = 0;    // of the segment
  std::string grant_key;
  net::Mac mac{};
};

inline std::string_view View(const net::Nonce& n) { return {reinterpret_cast<const char*>(n.data()), n.size()}; }

// Who proves what: the asker, then the owner, over both nonces and the segment; zero without a key.
inline net::Mac ProofOf(std::string_view key, bool owner, const net::Nonce& server, const net::Nonce& client,
                        uint64_t segment) {
  if (key.empty()) return {};
  return net::Hmac(key, owner ? "yb-shm-server" : "yb-shm-client",
                   {View(server), View(client), std::string_view(reinterpret_cast<const char*>(&segment), 8)});
}

inline std::string EncodeHello(const net::Nonce& nonce) {
  std::string out(kHelloSize, '\0');
  std::memcpy(out.data(), "YBSH", 4);
  std::memcpy(out.data() + 4, &kVersion, 4);
  std::memcpy(out.data() + 8, nonce.data(), nonce.size());
  return out;
}

inline std::optional<net::Nonce> DecodeHello(std::string_view in) {
  uint32_t v = 0;
  if (in.size() != kHelloSize || in.substr(0, 4) != "YBSH") return std::nullopt;
  std::memcpy(&v, in.data() + 4, 4);
  if (v != kVersion) return std::nullopt;
  net::Nonce n{};
  std::memcpy(n.data(), in.data() + 8, n.size());
  return n;
}

inline std::string EncodeAsk(const Ask& a) {
  std::string out(kAskSize, '\0');
  std::memcpy(out.data(), "YBSA", 4);
  std::memcpy(out.data() + 4, &kVersion, 4);
  std::memcpy(out.data() + 8, &a.segment, 8);
  std::memcpy(out.data() + 16, a.nonce.data(), a.nonce.size());
  std::memcpy(out.data() + 16 + net::kNonceSize, a.mac.data(), a.mac.size());
  return out;
}

inline std::optional<Ask> DecodeAsk(std::string_view in) {
  uint32_t v = 0;
  if (in.size() != kAskSize || in.substr(0, 4) != "YBSA") return std::nullopt;
  std::memcpy(&v, in.data() + 4, 4);
  if (v != kVersion) return std::nullopt;
  Ask a;
  std::memcpy(&a.segment, in.data() + 8, 8);
  std::memcpy(a.nonce.data(), in.data() + 16, a.nonce.size());
  std::memcpy(a.mac.data(), in.data() + 16 + net::kNonceSize, a.mac.size());
  return a;
}

inline std::string EncodeReply(const Reply& r) {
  const uint16_t klen = static_cast<uint16_t>(std::min(r.grant_key.size(), kMaxGrantKey));
  std::string out(kAnswerBase + klen + net::kMacSize, '\0');
  char* p = out.data();
  std::memcpy(p, "YBSR", 4);
  std::memcpy(p + 4, &r.code, 4);
  std::memcpy(p + 8, &r.region_size, 8);
  std::memcpy(p + 16, &r.offset, 8);
  std::memcpy(p + 24, &r.size, 8);
  std::memcpy(p + 32, &klen, 2);
  std::memcpy(p + kAnswerBase, r.grant_key.data(), klen);
  std::memcpy(p + kAnswerBase + klen, r.mac.data(), r.mac.size());
  return out;
}

inline std::optional<Reply> DecodeReply(std::string_view in) {
  if (in.size() < kAnswerBase + net::kMacSize || in.substr(0, 4) != "YBSR") return std::nullopt;
  Reply r;
  uint16_t klen = 0;
  std::memcpy(&r.code, in.data() + 4, 4);
  std::memcpy(&r.region_size, in.data() + 8, 8);
  std::memcpy(&r.offset, in.data() + 16, 8);
  std::memcpy(&r.size, in.data() + 24, 8);
  std::memcpy(&klen, in.data() + 32, 2);
  if (klen > kMaxGrantKey || in.size() != kAnswerBase + klen + net::kMacSize) return std::nullopt;
  r.grant_key.assign(in.data() + kAnswerBase, klen);
  std::memcpy(r.mac.data(), in.data() + kAnswerBase + klen, r.mac.size());
  return r;
}

}  // namespace yb::shm
