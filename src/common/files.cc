#include "common/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "common/log.h"

namespace yb {

Result<std::string> ReadWholeFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    return Status(err == ENOENT ? Code::kFileNotFound : Code::kFileOpenFail,
                  "cannot open " + path + ": " + std::strerror(err));
  }
  std::string out;
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return Status(Code::kFileReadFail, "cannot read " + path + ": " + std::strerror(err));
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

Status WriteAll(int fd, std::string_view data, const std::string& path) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status(Code::kFileWriteFail, "cannot write " + path + ": " + std::strerror(errno));
    data.remove_prefix(static_cast<size_t>(n));
  }
  return Status::OK();
}

uint64_t FreeBytes(const std::string& path, const FaultHook& fault) {
  if (Injected(fault, "space", path) != 0) return 0;
  struct statvfs st {};
  if (::statvfs(path.c_str(), &st) != 0) return UINT64_MAX;
  return static_cast<uint64_t>(st.f_bavail) * st.f_frsize;
}

Status SyncDir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Status(Code::kFileOpenFail, "cannot open " + dir + ": " + std::strerror(errno));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  return rc == 0 ? Status::OK() : Status(Code::kFileWriteFail, "cannot sync " + dir + ": " + std::strerror(err));
}

Status MakePrivateDir(const std::string& dir, const std::string& marker) {
  if (::mkdir(dir.c_str(), 0700) == 0) return Status::OK();
  if (errno != EEXIST) return Status(Code::kFileOpenFail, "cannot create " + dir + ": " + std::strerror(errno));
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return Status(Code::kFileOpenFail, dir + " is not a directory");
  }
  if ((st.st_mode & 077) == 0) return Status::OK();
  struct stat ours {};
  const bool mine =
      !marker.empty() && (st.st_mode & S_ISVTX) == 0 && ::stat((dir + "/" + marker).c_str(), &ours) == 0;
  if (mine && ::chmod(dir.c_str(), 0700) == 0) {
    YB_LOG_WARN("{} could be entered by other users (mode {:o}): made private (0700)", dir, st.st_mode & 0777);
    return Status::OK();
  }
  YB_LOG_WARN("{} may be entered by other users (mode {:o}) and is not this component's alone: give it a "
              "directory of its own (it is made 0700), or chmod 700 this one",
              dir, st.st_mode & 07777);
  return Status::OK();
}

}  // namespace yb
