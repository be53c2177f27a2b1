// The control-plane wire format. A frame is a fixed 16-byte header and a body:
//
//   u32 magic 'YBRP' | u32 body length | u8 kind (1 request, 2 response) | u8 flags |
//   u16 method | u32 request id | body (a protobuf message)
//
// little-endian. Many requests may be in flight on one connection; responses carry the request
// id and may come back in any order. A frame whose magic or kind is wrong, or whose body is
// longer than the receiver's limit, is malformed: the receiver closes the connection.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace yb::rpc {

inline constexpr uint32_t kMagic = 0x50524259;  // "YBRP"
inline constexpr size_t kHeaderSize = 16;
inline constexpr uint32_t kDefaultMaxBody = 64u << 20;

enum class FrameKind : uint8_t { kRequest = 1, kResponse = 2 };
// Response flag: the body is a Status (code:u8, message) instead of the method's reply: the method
// was unknown or its request did not parse.
inline constexpr uint8_t kFlagError = 1;

struct FrameHeader {
  uint32_t body_len = 0;
  FrameKind kind = FrameKind::kRequest;
  uint8_t flags = 0;
  uint16_t method = 0;
  uint32_t request_id = 0;
};

void EncodeHeader(const FrameHeader& h, uint8_t out[kHeaderSize]);
// nullopt when the header is malformed or the body exceeds max_body.
std::optional<FrameHeader> DecodeHeader(const uint8_t in[kHeaderSize], uint32_t max_body);
// A whole frame as bytes.
std::string EncodeFrame(const FrameHeader& h, const std::string& body);

// The complete frames of `kind` at the start of `in`, each handed to `on_frame` with its body, in
// order. Returns the bytes they took (what follows is an incomplete frame: wait for more), or
// nullopt at a malformed frame (a bad magic or kind, a body over `max_body`): close the connection.
// Memory follows the bytes that arrive: an incomplete frame's declared length reserves nothing.
std::optional<size_t> ScanFrames(std::string_view in, uint32_t max_body, FrameKind kind,
                                 const std::function<void(const FrameHeader&, std::string_view body)>& on_frame);

}  // namespace yb::rpc
