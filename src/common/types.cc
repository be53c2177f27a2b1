#include "yuebing/types.h"

#include <cstdio>
#include <utility>
#include <random>

namespace yb {

std::string ClientId::ToString() const {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%016llx%016llx", static_cast<unsigned long long>(hi),
                static_cast<unsigned long long>(lo));
  return buf;
}

namespace {
// 128 random bits, never all zero (which means "none" for both ids).
std::pair<uint64_t, uint64_t> RandomPair() {
  thread_local std::mt19937_64 gen([] {
    std::random_device rd;
    return (static_cast<uint64_t>(rd()) << 32) ^ rd();
  }());
  std::pair<uint64_t, uint64_t> p{gen(), gen()};
  if (p.first == 0 && p.second == 0) p.second = 1;
  return p;
}
}  // namespace

ClientId ClientId::Random() {
  auto [hi, lo] = RandomPair();
  return ClientId{hi, lo};
}

TaskId TaskId::Random() {
  auto [hi, lo] = RandomPair();
  return TaskId{hi, lo};
}

}  // namespace yb
