// The authentication handshake's decoders (net/auth.h): the hello, proof and answer a peer sends
// before anything else on a connection. A proof made without the key is never valid.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "net/auth.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace yb::net;
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  static const Nonce server = NewNonce();
  (void)DecodeHello(in.substr(0, kHelloSize));
  if (auto n = ProofSize(in); n && *n <= size) {
    if (auto proof = DecodeProof(in.substr(0, *n))) {
      if (proof->name.size() > kMaxName) std::abort();
      if (ProofValid("the-cluster-secret-0123456789", server, *proof)) std::abort();  // a random nonce each run
    }
  }
  (void)DecodeAnswer(in.substr(0, kAnswerSize));
  return 0;
}
