// Byte sizes with units, as Mooncake accepts them: "4 GB", "512MB", "16mb", "1024".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "yuebing/status.h"

namespace yb {

// Parses a size; units KB/MB/GB/TB (and KiB.., K, M, G, T) are powers of 1024, as in Mooncake.
Result<uint64_t> ParseSize(std::string_view text);
// 1536 -> "1.50 KiB".
std::string FormatBytes(uint64_t bytes);

}  // namespace yb
