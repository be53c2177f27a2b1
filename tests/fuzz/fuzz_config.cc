// The master's configuration parsers (tools/config_file.h): a config file's text applied to
// flags of each kind yb-master has, and the --tenant_quotas list; then the tenant secrets file
// (net/auth.h). Bad input is an error naming what is wrong, never a crash.
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "config_file.h"
#include "flags.h"
#include "net/auth.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  CLI::App app;
  int port = 50051;
  double ratio = 0.9;
  bool flag = false;
  std::string name;
  uint64_t bytes = 0;
  int64_t ttl = 10;
  app.add_option("--rpc_port", port)->check(CLI::Range(1, 65535));
  app.add_option("--eviction_ratio", ratio)->check(CLI::Range(0.0, 1.0));
  app.add_option("--enable_ha", flag);
  app.add_option("--cluster_id", name);
  app.add_option("--client_ttl", ttl)->check(CLI::Range(int64_t{1}, int64_t{86400}));
  yb::tools::AddSizeOption(app, "--metadata_snapshot_bytes", bytes, "size");
  (void)yb::tools::ApplyConfigText(app, text, "fuzz");
  std::map<std::string, uint64_t> quotas;
  (void)yb::tools::ParseTenantQuotas(text, &quotas);
  static const std::string path =
      (std::filesystem::temp_directory_path() / ("yb-fuzz-tenants-" + std::to_string(getpid()))).string();
  std::ofstream(path, std::ios::trunc) << text;
  (void)yb::net::ReadTenantSecrets(path);
  return 0;
}
