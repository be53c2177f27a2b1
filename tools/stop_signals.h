// The daemons stop on SIGTERM or SIGINT: BlockStopSignals() before any thread starts (so that
// only the caller's sigwait/sigtimedwait sees them), then wait on the returned set.
#pragma once

#include <signal.h>

namespace yb::tools {

inline sigset_t BlockStopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

}  // namespace yb::tools
