// The master's configuration beyond its flags: a YAML or JSON file of flag names and values
// (--config_path), and the --tenant_quotas list. Both parse what an operator wrote, so both are
// fuzzed (tests/fuzz/fuzz_config.cc).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "yuebing/status.h"

namespace yb::tools {

// Applies a config file's text: every key names a flag of `app`; flags given on the command line
// win. INVALID_PARAMS naming the key, for an unknown key or a value the flag refuses; `where`
// names the file in the message.
Status ApplyConfigText(CLI::App& app, std::string_view text, const std::string& where);
Status ApplyConfigFile(CLI::App& app, const std::string& path);

// "NAME=SIZE" items separated by commas; SIZE as "10GB" or bytes, or "none" (no quota).
Status ParseTenantQuotas(std::string_view spec, std::map<std::string, uint64_t>* out);

}  // namespace yb::tools
