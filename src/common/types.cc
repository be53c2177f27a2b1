#include "yuebing/types.h"

#include <cstdio>
#include <random>

namespace yb {

std::string ClientId::ToString() const {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%016llx%016llx", static_cast<unsigned long long>(hi),
                static_cast<unsigned long long>(lo));
  return buf;
}

ClientId ClientId::Random() {
  std::random_device rd;
  std::mt19937_64 gen((static_cast<uint64_t>(rd()) << 32) ^ rd());
  ClientId id{gen(), gen()};
  if (id.empty()) id.lo = 1;
  return id;
}

}  // namespace yb
