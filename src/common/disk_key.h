// The key an object has in a client's SSD tier: its tenant's name (length-prefixed) then its key.
// Tenant indices are the master's and change across restarts; names do not, so a restarted client
// registers its disk objects under the right tenant.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace yb {

// Tenant names longer than 255 bytes cannot have disk keys.
inline constexpr size_t kMaxTenantNameForDisk = 255;

inline std::string DiskKey(std::string_view tenant, std::string_view key) {
  std::string out;
  out.reserve(1 + tenant.size() + key.size());
  out.push_back(static_cast<char>(static_cast<unsigned char>(tenant.size())));
  out.append(tenant);
  out.append(key);
  return out;
}

// {tenant, key}, or nothing when `disk_key` is malformed.
inline std::optional<std::pair<std::string_view, std::string_view>> SplitDiskKey(std::string_view disk_key) {
  if (disk_key.empty()) return std::nullopt;
  size_t n = static_cast<unsigned char>(disk_key[0]);
  if (disk_key.size() < 2 + n) return std::nullopt;  // a key has at least one byte
  return std::make_pair(disk_key.substr(1, n), disk_key.substr(1 + n));
}

}  // namespace yb
