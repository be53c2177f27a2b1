#include "config_file.h"

#include <yaml-cpp/yaml.h>

#include "common/files.h"
#include "common/units.h"
#include "master/tenants.h"

namespace yb::tools {

Status ApplyConfigText(CLI::App& app, std::string_view text, const std::string& where) {
  auto bad = [&](const std::string& what) { return Status(Code::kInvalidParams, "config file " + where + ": " + what); };
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const std::exception& e) {
    return bad(e.what());
  }
  if (!root.IsMap()) return bad("must be a map of flag names to values");
  for (const auto& kv : root) {
    std::string key;
    std::string value;
    try {
      key = kv.first.as<std::string>();
      value = kv.second.as<std::string>();  // a list or a map is no flag's value
    } catch (const std::exception& e) {
      return bad(std::string("an entry is not `name: value` (") + e.what() + ")");
    }
    CLI::Option* opt = nullptr;
    try {
      opt = app.get_option("--" + key);
    } catch (const CLI::OptionNotFound&) {
      return bad("unknown key '" + key + "'");
    }
    if (opt->count() > 0) continue;  // set on the command line
    try {
      opt->clear();
      opt->add_result(value);
      opt->run_callback();
    } catch (const std::exception& e) {
      return bad("bad value for '" + key + "': " + e.what());
    }
  }
  return Status::OK();
}

Status ApplyConfigFile(CLI::App& app, const std::string& path) {
  auto text = ReadWholeFile(path);
  if (!text.ok()) return Status(Code::kInvalidParams, "cannot read config file " + path + ": " + text.status().message());
  return ApplyConfigText(app, *text, path);
}

Status ParseTenantQuotas(std::string_view spec, std::map<std::string, uint64_t>* out) {
  size_t pos = 0;
  while (pos < spec.size()) {
    size_t end = spec.find(',', pos);
    if (end == std::string_view::npos) end = spec.size();
    const std::string item(spec.substr(pos, end - pos));
    pos = end + 1;
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) return Status(Code::kInvalidParams, "'" + item + "' is not NAME=SIZE");
    const std::string value = item.substr(eq + 1);
    if (value == "none") {
      (*out)[item.substr(0, eq)] = TenantRegistry::kNoQuota;
      continue;
    }
    auto size = ParseSize(value);
    if (!size.ok()) return Status(Code::kInvalidParams, "'" + item + "': " + size.status().message());
    (*out)[item.substr(0, eq)] = *size;
  }
  return Status::OK();
}

}  // namespace yb::tools
