// MacStream: integrity for a connection that proved the secret but runs without TLS
// (docs/security.md, "Integrity on the wire").
//
// After the handshake (auth.h) both ends derive two keys from the key the proof used and the two
// nonces (one per direction), and every byte either sends goes in records:
//
//   u32 length (<= kMaxMacRecord, little-endian) | length bytes | 16-byte tag
//
// The tag is AES-128-GMAC (AES-GCM over no plaintext, OpenSSL) of the length and the bytes, under
// the direction's key, with the record's sequence number as the nonce: a byte changed, a record
// dropped, replayed, reordered or moved to the other direction or another connection fails the
// check, and the stream reports EPROTO (the connection ends). Bytes are handed to the reader only
// once their record checked. Nothing is encrypted: that is TLS's job.
//
// Send follows TLS's partial-write rule: after a short count or EAGAIN, the caller sends the same
// remaining bytes again (a record whose tag is computed may be on the wire only in part).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string_view>

#include "net/auth.h"
#include "net/stream.h"

namespace yb::net {

inline constexpr size_t kMaxMacRecord = 64 << 10;
inline constexpr size_t kMacTagSize = 16;

struct WireKeys {
  std::array<uint8_t, 16> send{};
  std::array<uint8_t, 16> recv{};
};

// The keys of one connection's two directions, as the server (`server_side`) or the client uses
// them: from the key the proof was made with, the nonces and the name it gave.
WireKeys DeriveWireKeys(std::string_view key, const Nonce& server, const Nonce& client, std::string_view name,
                        bool server_side);

std::unique_ptr<Stream> MakeMacStream(std::unique_ptr<Stream> inner, const WireKeys& keys);

}  // namespace yb::net
