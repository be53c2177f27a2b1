#include "common/cpus.h"

#include <sched.h>

#include <cerrno>

namespace yb {

std::vector<int> AllowedCpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  return cpus;
}

int PinThread(pthread_t thread, int cpu) {
  if (cpu < 0 || cpu >= CPU_SETSIZE) return EINVAL;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  return pthread_setaffinity_np(thread, sizeof(one), &one);
}

}  // namespace yb
