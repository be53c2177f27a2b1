#include "common/host_identity.h"

#include <unistd.h>

#include <fstream>

namespace yb {

const std::string& HostIdentity() {
  static const std::string id = [] {
    char name[256] = {};
    if (gethostname(name, sizeof(name) - 1) != 0) name[0] = '\0';
    std::string boot;
    std::ifstream f("/proc/sys/kernel/random/boot_id");
    std::getline(f, boot);
    return std::string(name) + "/" + boot;
  }();
  return id;
}

}  // namespace yb
