#include "common/unix_socket.h"

#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstring>

namespace yb {

socklen_t AbstractUnixAddress(std::string_view name, sockaddr_un* addr) {
  std::memset(addr, 0, sizeof(*addr));
  addr->sun_family = AF_UNIX;
  const size_t n = std::min(name.size(), sizeof(addr->sun_path) - 1);
  std::memcpy(addr->sun_path + 1, name.data(), n);
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n);
}

bool SameUserPeer(int fd) {
  ucred cred{};
  socklen_t len = sizeof(cred);
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return false;
  return cred.uid == getuid() || cred.uid == 0;
}

bool SendWithFd(int sock, std::string_view msg, int fd) {
  iovec iov{const_cast<char*>(msg.data()), msg.size()};
  msghdr m{};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  if (fd >= 0) {
    m.msg_control = control;
    m.msg_controllen = sizeof(control);
    cmsghdr* c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof(int));
  }
  return sendmsg(sock, &m, MSG_NOSIGNAL) == static_cast<ssize_t>(msg.size());
}

bool RecvWithFd(int sock, std::string& out, size_t max, int* fd) {
  *fd = -1;
  out.resize(max + 1);  // one byte more: a longer message shows as truncated
  iovec iov{out.data(), out.size()};
  msghdr m{};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 4)] = {};
  m.msg_control = control;
  m.msg_controllen = sizeof(control);
  const ssize_t n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
  for (cmsghdr* c = n >= 0 ? CMSG_FIRSTHDR(&m) : nullptr; c; c = CMSG_NXTHDR(&m, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int got;
      std::memcpy(&got, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      if (*fd < 0) {
        *fd = got;
      } else {
        close(got);
      }
    }
  }
  if (n <= 0 || static_cast<size_t>(n) > max || (m.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
    return false;
  }
  out.resize(static_cast<size_t>(n));
  return true;
}

}  // namespace yb
