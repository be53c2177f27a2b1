// The one place a Status crosses a wire: a code travels as its enum value (yuebing/status.h says
// the values are stable), and a value this build does not know decodes as INTERNAL_ERROR with the
// number in the message, never as an out-of-range enum. The master's RPC, the RPC frame's error
// replies and the transfer protocol all decode through DecodeStatus.
#pragma once

#include <cstdint>
#include <string>

#include "yuebing/status.h"

namespace yb {

inline uint32_t EncodeCode(Code c) { return static_cast<uint32_t>(c); }

inline Status DecodeStatus(uint32_t wire, std::string message) {
  if (wire == 0) return Status::OK();
  if (wire >= static_cast<uint32_t>(kNumCodes)) {
    return Status(Code::kInternal, "unknown status code " + std::to_string(wire) + " from peer: " + message);
  }
  return Status(static_cast<Code>(wire), std::move(message));
}

}  // namespace yb
