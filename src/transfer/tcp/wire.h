// The data plane's TCP wire format. A request is an 80-byte header, followed for a write by
// `length` bytes; a response is a 16-byte header, followed for a successful read by `length`
// bytes. Little-endian.
//
//   request:  u32 magic 'YBTX' | u8 op (1 read, 2 write, 3 read object) | 3 pad | u64 segment | u64 offset
//             | u64 length | grant (48 bytes, common/grant.h: the master's permission for the range)
//   response: u32 magic 'YBTR' | u32 code (yb::Code wire value) | u64 length
//
// "Read object" reads a LOCAL_DISK replica from the owner's SSD tier: `offset` carries the key's
// length (at most kMaxObjectKey), the key's bytes follow the header, and `length` is the object's size.
#pragma once

#include <cstdint>
#include <cstring>

#include "common/grant.h"

namespace yb::tcp {

inline constexpr uint32_t kRequestMagic = 0x58544259;   // "YBTX"
inline constexpr uint32_t kResponseMagic = 0x52544259;  // "YBTR"
inline constexpr size_t kRequestBase = 32;
inline constexpr size_t kRequestSize = kRequestBase + kGrantWireSize;
inline constexpr size_t kResponseSize = 16;
inline constexpr uint8_t kOpRead = 1;
inline constexpr uint8_t kOpWrite = 2;
inline constexpr uint8_t kOpReadObject = 3;
inline constexpr uint64_t kMaxObjectKey = 8192;
// The transfer server's default bound on one read or write request (a slice).
inline constexpr uint64_t kDefaultMaxRequest = 64ULL << 20;

struct WireRequest {
  uint8_t op = 0;
  uint64_t segment = 0;
  uint64_t offset = 0;
  uint64_t length = 0;
  Grant grant;

  void Encode(uint8_t out[kRequestSize]) const {
    std::memset(out, 0, kRequestBase);
    std::memcpy(out, &kRequestMagic, 4);
    out[4] = op;
    std::memcpy(out + 8, &segment, 8);
    std::memcpy(out + 16, &offset, 8);
    std::memcpy(out + 24, &length, 8);
    EncodeGrant(grant, out + kRequestBase);
  }
  bool Decode(const uint8_t in[kRequestSize]) {
    uint32_t magic;
    std::memcpy(&magic, in, 4);
    if (magic != kRequestMagic || in[4] < kOpRead || in[4] > kOpReadObject) return false;
    op = in[4];
    std::memcpy(&segment, in + 8, 8);
    std::memcpy(&offset, in + 16, 8);
    std::memcpy(&length, in + 24, 8);
    return DecodeGrant(in + kRequestBase, kGrantWireSize, &grant);
  }
};

struct WireResponse {
  uint32_t code = 0;
  uint64_t length = 0;

  void Encode(uint8_t out[kResponseSize]) const {
    std::memcpy(out, &kResponseMagic, 4);
    std::memcpy(out + 4, &code, 4);
    std::memcpy(out + 8, &length, 8);
  }
  bool Decode(const uint8_t in[kResponseSize]) {
    uint32_t magic;
    std::memcpy(&magic, in, 4);
    if (magic != kResponseMagic) return false;
    std::memcpy(&code, in + 4, 4);
    std::memcpy(&length, in + 8, 8);
    return true;
  }
};

}  // namespace yb::tcp
