// Small file helpers shared by the SSD tier and the metadata log. Errors are FILE_* codes naming
// the path (FILE_NOT_FOUND for a file that does not exist).
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "yuebing/status.h"

namespace yb {

// Fault injection for tests (a failing or full device): called before a write, sync, open or read
// with the operation ("write", "sync", "open", "read") and the file; a non-zero return is the errno
// the operation fails with. Empty in production.
using FaultHook = std::function<int(std::string_view op, const std::string& path)>;
inline int Injected(const FaultHook& fault, std::string_view op, const std::string& path) {
  return fault ? fault(op, path) : 0;
}

// Bytes a non-root process may still write to the file system holding `path` (statvfs), or
// UINT64_MAX when it cannot be told; 0 when `fault` fails "space" (a test's full disk).
uint64_t FreeBytes(const std::string& path, const FaultHook& fault = {});

Result<std::string> ReadWholeFile(const std::string& path);
// Writes all of `data` to `fd` (retrying short writes and EINTR).
Status WriteAll(int fd, std::string_view data, const std::string& path);
// Makes the names in `dir` (files created, renamed or removed) durable.
Status SyncDir(const std::string& dir);
// A directory only its owner may enter (0700), for the metadata log and the SSD tier (grant keys,
// values): created so. One that exists and is looser is made private (logged) only when it is
// ours, holding `marker` (a file this component writes there; "": never) and not sticky; any other (a shared
// directory such as /tmp or a mount's root that an operator named) is left as it is, with a
// warning to give the component a directory of its own. FILE_OPEN_FAIL naming it.
Status MakePrivateDir(const std::string& dir, const std::string& marker);
// The mode of files written in such a directory.
inline constexpr unsigned kPrivateFileMode = 0600;

}  // namespace yb
