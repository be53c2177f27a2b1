#include "common/units.h"

#include <cctype>
#include <cstdio>
#include <string>

namespace yb {

Result<uint64_t> ParseSize(std::string_view text) {
  size_t i = 0;
  auto skip_space = [&] {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  };
  skip_space();
  size_t start = i;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
  if (i == start) return Status(Code::kInvalidParams, "size '" + std::string(text) + "' has no number");
  double number = 0;
  try {
    number = std::stod(std::string(text.substr(start, i - start)));
  } catch (...) {
    return Status(Code::kInvalidParams, "size '" + std::string(text) + "' is not a number");
  }
  skip_space();
  std::string unit;
  for (; i < text.size(); ++i) {
    if (std::isspace(static_cast<unsigned char>(text[i]))) break;
    unit += static_cast<char>(std::tolower(static_cast<unsigned char>(text[i])));
  }
  skip_space();
  if (i != text.size()) return Status(Code::kInvalidParams, "size '" + std::string(text) + "' has trailing text");
  uint64_t mult = 1;
  if (unit.empty() || unit == "b") {
    mult = 1;
  } else if (unit == "k" || unit == "kb" || unit == "kib") {
    mult = 1ULL << 10;
  } else if (unit == "m" || unit == "mb" || unit == "mib") {
    mult = 1ULL << 20;
  } else if (unit == "g" || unit == "gb" || unit == "gib") {
    mult = 1ULL << 30;
  } else if (unit == "t" || unit == "tb" || unit == "tib") {
    mult = 1ULL << 40;
  } else {
    return Status(Code::kInvalidParams, "size '" + std::string(text) + "' has unknown unit '" + unit + "'");
  }
  double bytes = number * static_cast<double>(mult);
  if (bytes >= 1.8e19) return Status(Code::kInvalidParams, "size '" + std::string(text) + "' is too large");
  return static_cast<uint64_t>(bytes);
}

std::string FormatBytes(uint64_t bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  if (u == 0) {
    std::snprintf(buf, sizeof(buf), "%llu B", static_cast<unsigned long long>(bytes));
  } else {
    std::snprintf(buf, sizeof(buf), "%.2f %s", v, kUnits[u]);
  }
  return buf;
}

}  // namespace yb
