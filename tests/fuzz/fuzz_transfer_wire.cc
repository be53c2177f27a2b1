// The data plane's wire decoder (transfer/tcp/wire.h) and the grant check a transfer server makes
// on what it decoded: no request whose grant was not minted under the segment's key passes.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common/grant.h"
#include "transfer/tcp/wire.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace yb;
  using namespace yb::tcp;
  static const std::string key(kGrantKeySize, 'k');
  if (size >= kRequestSize) {
    WireRequest r;
    if (r.Decode(data)) {
      const GrantAccess access = r.op == kOpRead    ? GrantAccess::kRead
                                 : r.op == kOpWrite ? GrantAccess::kWrite
                                                    : GrantAccess::kReadObject;
      const std::string object(reinterpret_cast<const char*>(data) + kRequestSize,
                               std::min<size_t>(size - kRequestSize, kMaxObjectKey));
      // A forged grant is refused, whatever its fields say.
      if (CheckGrant(key, r.segment, r.grant, access, r.offset, r.length, 0, object).ok()) {
        const Grant minted = MintGrant(key, r.segment, access, r.grant.offset, r.grant.length, r.grant.expires_ms, object);
        if (std::memcmp(minted.mac.data(), r.grant.mac.data(), minted.mac.size()) != 0) std::abort();
      }
      uint8_t again[kRequestSize];
      r.Encode(again);
      WireRequest back;
      if (!back.Decode(again) || back.segment != r.segment || back.offset != r.offset || back.length != r.length) {
        std::abort();
      }
    }
  }
  if (size >= kResponseSize) {
    WireResponse resp;
    (void)resp.Decode(data);
  }
  Grant g;
  (void)DecodeGrant(data, size, &g);
  return 0;
}
