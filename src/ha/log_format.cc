#include "ha/log_format.h"

#include <fcntl.h>
#include <unistd.h>
#include <xxhash.h>

#include <cerrno>
#include <cstring>

namespace yb::ha {
namespace {

void Put32(std::string& out, uint32_t v) {
  char b[4];
  std::memcpy(b, &v, 4);
  out.append(b, 4);
}
void Put64(std::string& out, uint64_t v) {
  char b[8];
  std::memcpy(b, &v, 8);
  out.append(b, 8);
}
uint32_t Get32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
uint64_t Get64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

}  // namespace

void AppendFrame(uint64_t seq, std::string_view payload, std::string& out) {
  Put32(out, kFrameMagic);
  Put32(out, static_cast<uint32_t>(payload.size()));
  Put64(out, seq);
  Put64(out, XXH3_64bits_withSeed(payload.data(), payload.size(), seq));
  out.append(payload.data(), payload.size());
}

std::optional<Frame> FrameReader::Next() {
  if (!clean_ || pos_ == data_.size()) return std::nullopt;
  if (data_.size() - pos_ < kFrameHeader) {
    clean_ = false;
    return std::nullopt;
  }
  const char* h = data_.data() + pos_;
  const uint32_t len = Get32(h + 4);
  if (Get32(h) != kFrameMagic || len > kMaxPayload || data_.size() - pos_ - kFrameHeader < len) {
    clean_ = false;
    return std::nullopt;
  }
  Frame f{Get64(h + 8), data_.substr(pos_ + kFrameHeader, len)};
  if (XXH3_64bits_withSeed(f.payload.data(), f.payload.size(), f.seq) != Get64(h + 16)) {
    clean_ = false;
    return std::nullopt;
  }
  pos_ += kFrameHeader + len;
  return f;
}

namespace {
std::string Padded(uint64_t n) {
  std::string s = std::to_string(n);
  return std::string(s.size() < 20 ? 20 - s.size() : 0, '0') + s;
}
}  // namespace

std::string LogFileName(uint64_t first_seq) { return "log-" + Padded(first_seq) + ".ybl"; }
std::string SnapshotFileName(uint64_t seq) { return "snap-" + Padded(seq) + ".ybs"; }

std::optional<uint64_t> ParseFileName(std::string_view name, std::string_view prefix, std::string_view suffix) {
  if (name.size() <= prefix.size() + suffix.size() || name.substr(0, prefix.size()) != prefix ||
      name.substr(name.size() - suffix.size()) != suffix) {
    return std::nullopt;
  }
  std::string_view digits = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  uint64_t v = 0;
  for (char c : digits) {
    if (c < '0' || c > '9' || v > (UINT64_MAX - 9) / 10) return std::nullopt;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  return v;
}

}  // namespace yb::ha
