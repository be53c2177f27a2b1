// yb-bench --session_layers (session_case.cc).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>

#include "yuebing/client.h"

namespace yb_bench {

// A layer-wise load through a get session against plain batch gets of the same bytes per layer.
nlohmann::json SessionBench(const yb::ClientConfig& config, int layers, int keys, uint64_t page);

}  // namespace yb_bench
