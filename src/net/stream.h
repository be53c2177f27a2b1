// Stream: the bytes of a connected socket, as they are (a plain stream) or through TLS (tls.h).
//
// Our servers' sessions and our clients' connections read and write through a Stream, so that TLS
// is a choice made where a connection starts (security.h), not in each of them. A stream never
// owns its socket: the event loop or the connection that holds the descriptor closes it. Recv and
// Send behave as recv(2) and sendmsg(2) on the socket: a byte count; 0 from Recv at the end of the
// peer's stream; -1 with errno set, EAGAIN when nothing can move now (a non-blocking socket, or a
// blocking one's SO_RCVTIMEO / SO_SNDTIMEO). Not thread-safe: one reader and one writer at a time,
// never both at once for a TLS stream.
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

#include <cstddef>
#include <memory>

namespace yb::net {

class Stream {
 public:
  explicit Stream(int fd) : fd_(fd) {}
  virtual ~Stream() = default;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  int fd() const { return fd_; }
  virtual ssize_t Recv(void* buf, size_t n) = 0;
  // At most IOV_MAX entries.
  virtual ssize_t Send(const iovec* iov, size_t count) = 0;
  ssize_t Send(const void* buf, size_t n) {
    iovec v{const_cast<void*>(buf), n};
    return Send(&v, 1);
  }
  // Input already taken off the socket and held in the stream (TLS records decrypted ahead of the
  // reader): the socket's readiness does not show it, so an event loop must offer it again.
  virtual bool Buffered() const { return false; }
  virtual bool encrypted() const { return false; }

 protected:
  const int fd_;
};

// The socket's bytes as they are.
std::unique_ptr<Stream> MakePlainStream(int fd);

}  // namespace yb::net
