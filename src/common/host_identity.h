// Which host this process runs on, as peers compare it: "hostname/boot id". Two processes with the
// same identity may share memory (same kernel, same boot); a restarted host is another one.
#pragma once

#include <string>

namespace yb {

// Read once (the host name as gethostname gives it, /proc/sys/kernel/random/boot_id); a part that
// cannot be read is left empty.
const std::string& HostIdentity();

}  // namespace yb
