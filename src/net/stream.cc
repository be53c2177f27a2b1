#include "net/stream.h"

#include <sys/socket.h>

#include <cerrno>

namespace yb::net {
namespace {

class PlainStream final : public Stream {
 public:
  explicit PlainStream(int fd) : Stream(fd) {}
  ssize_t Recv(void* buf, size_t n) override {
    for (;;) {
      ssize_t r = ::recv(fd_, buf, n, 0);
      if (r >= 0 || errno != EINTR) return r;
    }
  }
  ssize_t Send(const iovec* iov, size_t count) override {
    msghdr msg{};
    msg.msg_iov = const_cast<iovec*>(iov);
    msg.msg_iovlen = count;
    for (;;) {
      ssize_t r = ::sendmsg(fd_, &msg, MSG_NOSIGNAL);
      if (r >= 0 || errno != EINTR) return r;
    }
  }
};

}  // namespace

std::unique_ptr<Stream> MakePlainStream(int fd) { return std::make_unique<PlainStream>(fd); }

}  // namespace yb::net
