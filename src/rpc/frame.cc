#include "rpc/frame.h"

#include <cstring>

namespace yb::rpc {
namespace {
void Put32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint32_t Get32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 | static_cast<uint32_t>(p[2]) << 16 |
         static_cast<uint32_t>(p[3]) << 24;
}
}  // namespace

void EncodeHeader(const FrameHeader& h, uint8_t out[kHeaderSize]) {
  Put32(out, kMagic);
  Put32(out + 4, h.body_len);
  out[8] = static_cast<uint8_t>(h.kind);
  out[9] = h.flags;
  out[10] = static_cast<uint8_t>(h.method);
  out[11] = static_cast<uint8_t>(h.method >> 8);
  Put32(out + 12, h.request_id);
}

std::optional<FrameHeader> DecodeHeader(const uint8_t in[kHeaderSize], uint32_t max_body) {
  if (Get32(in) != kMagic) return std::nullopt;
  FrameHeader h;
  h.body_len = Get32(in + 4);
  if (h.body_len > max_body) return std::nullopt;
  if (in[8] != static_cast<uint8_t>(FrameKind::kRequest) && in[8] != static_cast<uint8_t>(FrameKind::kResponse)) {
    return std::nullopt;
  }
  h.kind = static_cast<FrameKind>(in[8]);
  h.flags = in[9];
  h.method = static_cast<uint16_t>(in[10] | (in[11] << 8));
  h.request_id = Get32(in + 12);
  return h;
}

std::string EncodeFrame(const FrameHeader& h, const std::string& body) {
  std::string out(kHeaderSize + body.size(), '\0');
  FrameHeader hh = h;
  hh.body_len = static_cast<uint32_t>(body.size());
  EncodeHeader(hh, reinterpret_cast<uint8_t*>(out.data()));
  std::memcpy(out.data() + kHeaderSize, body.data(), body.size());
  return out;
}

std::optional<size_t> ScanFrames(std::string_view in, uint32_t max_body, FrameKind kind,
                                 const std::function<void(const FrameHeader&, std::string_view body)>& on_frame) {
  size_t pos = 0;
  while (in.size() - pos >= kHeaderSize) {
    auto h = DecodeHeader(reinterpret_cast<const uint8_t*>(in.data() + pos), max_body);
    if (!h || h->kind != kind) return std::nullopt;
    if (in.size() - pos - kHeaderSize < h->body_len) break;  // incomplete: wait for the rest
    on_frame(*h, in.substr(pos + kHeaderSize, h->body_len));
    pos += kHeaderSize + h->body_len;
  }
  return pos;
}

}  // namespace yb::rpc
