// Grants (docs/security.md): the capabilities a segment owner's transfer server checks before it
// moves a byte. The master mints one per replica it hands out, a keyed hash (SipHash-2-4, 128-bit,
// OpenSSL) over the segment, the access, the range, the expiry and, for an SSD tier read, the
// object's key, under the segment's key that its owner drew at mount. Only the master and the owner
// know that key, so no one else can make or widen a grant.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "common/internal_types.h"
#include "yuebing/status.h"
#include "yuebing/types.h"

namespace yb {

inline constexpr size_t kGrantKeySize = 16;
inline constexpr size_t kGrantWireSize = 48;  // EncodeGrant's bytes

// kGrantKeySize bytes from the system's secure random source.
std::string NewGrantKey();

// Unix time in milliseconds (grants expire on the wall clock: the master's and the owners' clocks
// must agree to well within a grant's lifetime, as NTP keeps them).
int64_t WallMs();
// `clock`'s time if given (a test's), else WallMs(): what a grant's expiry is judged by.
inline int64_t WallMs(const Clock* clock) { return clock ? clock->NowMs() : WallMs(); }

// A grant of `access` to [offset, offset + length) of `segment`, until `expires_ms`. `object`: the
// key an SSD tier read (kReadObject) names. A key of the wrong size mints an empty grant.
Grant MintGrant(std::string_view key, SegmentId segment, GrantAccess access, uint64_t offset, uint64_t length,
                int64_t expires_ms, std::string_view object = {});

// OK when `grant` was minted with `key` for `segment` and `access`, covers [offset, offset +
// length), and has not expired at `now_ms`; ILLEGAL_CLIENT saying why otherwise.
Status CheckGrant(std::string_view key, SegmentId segment, const Grant& grant, GrantAccess access, uint64_t offset,
                  uint64_t length, int64_t now_ms, std::string_view object = {});

// SipHash-2-4 (128-bit) of `head` then `tail` under a kGrantKeySize-byte key: what grants and the
// master's caller tokens are. False for a key of the wrong size. Each use puts its own 4-byte
// domain first in `head`, so that no two uses of one key collide.
bool KeyedMac(std::string_view key, const uint8_t* head, size_t head_len, std::string_view tail,
              std::array<uint8_t, 16>& out);

// Fixed-size little-endian form, for the RPC messages and the transfer wire:
//   u8 access | 7 pad | u64 offset | u64 length | i64 expires_ms | 16 mac
void EncodeGrant(const Grant& g, uint8_t out[kGrantWireSize]);
std::string EncodeGrant(const Grant& g);
// False for bytes of the wrong size or an unknown access (`g` is then empty).
bool DecodeGrant(const uint8_t* in, size_t len, Grant* g);

}  // namespace yb
