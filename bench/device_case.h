// yb-bench --device_memory (device_case.cc).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <vector>

#include "yuebing/client.h"

namespace yb_bench {

// Put and get GB/s of values in GPU memory against host memory, alternating windows, per size.
nlohmann::json DeviceBench(const yb::ClientConfig& config, double seconds, const std::vector<uint64_t>& sizes);

}  // namespace yb_bench
