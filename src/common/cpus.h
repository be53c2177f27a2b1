// The CPUs this process may run on, and pinning a thread to one of them: for serving threads
// that keep a connection on the CPU receiving its packets (LoopGroup::Options::pin_to_cpus).
#pragma once

#include <pthread.h>

#include <vector>

namespace yb {

// The CPUs in this process's affinity mask, ascending; empty if it cannot be read.
std::vector<int> AllowedCpus();

// Pins `thread` to `cpu`; 0 or the error number.
int PinThread(pthread_t thread, int cpu);

}  // namespace yb
