// The RPC frame decoder (rpc/frame.h): a byte stream cut into frames as a server and a client read
// them. Every frame handed out lies within the input, and what is taken is a whole number of frames.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "rpc/frame.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace yb::rpc;
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  for (FrameKind kind : {FrameKind::kRequest, FrameKind::kResponse}) {
    for (uint32_t max_body : {uint32_t{64}, kDefaultMaxBody}) {
      size_t seen = 0;
      auto taken = ScanFrames(in, max_body, kind, [&](const FrameHeader& h, std::string_view body) {
        if (h.kind != kind || body.size() != h.body_len || body.size() > max_body) std::abort();
        if (body.data() < in.data() || body.data() + body.size() > in.data() + in.size()) std::abort();
        seen += kHeaderSize + body.size();
      });
      if (taken && (*taken != seen || *taken > size)) std::abort();
    }
  }
  if (size >= kHeaderSize) {
    if (auto h = DecodeHeader(data, kDefaultMaxBody)) {  // what decodes encodes back to the same bytes
      uint8_t again[kHeaderSize];
      EncodeHeader(*h, again);
      for (size_t i = 0; i < kHeaderSize; ++i) {
        if (again[i] != data[i]) std::abort();
      }
    }
  }
  return 0;
}
