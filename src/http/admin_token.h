// Where a master without a secret keeps the admin token of its HTTP endpoints (made at its first
// start, 0600, in its private metadata directory), which `yb admin-token` reads.
#pragma once

#include <string>

namespace yb::http {

inline std::string AdminTokenPath(const std::string& metadata_dir) { return metadata_dir + "/admin-token"; }

}  // namespace yb::http
