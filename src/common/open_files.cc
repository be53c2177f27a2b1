#include "common/open_files.h"

#include <sys/resource.h>

#include <cerrno>

#include <cstring>
#include <fstream>

#include "common/log.h"

namespace yb {

OpenFileLimit RaiseOpenFileLimit() {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0) return {};
  OpenFileLimit out{lim.rlim_cur, lim.rlim_cur};
  rlim_t target = lim.rlim_max;
  if (target == RLIM_INFINITY) {  // the kernel still bounds it by fs.nr_open
    uint64_t nr_open = 1 << 20;
    std::ifstream("/proc/sys/fs/nr_open") >> nr_open;
    target = nr_open;
  }
  if (target <= lim.rlim_cur) return out;
  lim.rlim_cur = target;
  if (setrlimit(RLIMIT_NOFILE, &lim) == 0) {
    out.now = target;
    YB_LOG_INFO("open descriptors: soft limit raised from {} to {}", out.before, out.now);
  } else {
    YB_LOG_WARN("open descriptors: cannot raise the soft limit of {} to {}: {}", out.before, target, strerror(errno));
  }
  return out;
}

}  // namespace yb
