#include "transfer/shm/shm_server.h"

#include <openssl/crypto.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <fcntl.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <vector>

#include "common/log.h"
#include "common/unix_socket.h"
#include "transfer/shm/shm_wire.h"

namespace yb::shm {

std::string SocketName(const std::string& endpoint) { return "yuebing-shm:" + endpoint; }

namespace {

void SetTimeouts(int fd, int ms) {
  timeval tv{ms / 1000, (ms % 1000) * 1000};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

}  // namespace

ShmServer::ShmServer(std::shared_ptr<LocalSegmentRegistry> served, Options options)
    : served_(std::move(served)), options_(std::move(options)) {}

ShmServer::~ShmServer() { Stop(); }

Status ShmServer::Start() {
  listen_fd_ = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) return Status(Code::kInternal, std::string("same-host socket: ") + std::strerror(errno));
  sockaddr_un addr;
  const socklen_t len = AbstractUnixAddress(SocketName(options_.endpoint), &addr);
  if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 || listen(listen_fd_, 64) != 0 ||
      pipe2(stop_fd_, O_CLOEXEC) != 0) {
    Status st(Code::kInternal,
              "same-host socket '" + SocketName(options_.endpoint) + "': " + std::string(std::strerror(errno)));
    Stop();
    return st;
  }
  thread_ = Worker("yb-shm-serve", [this] { Serve(); });
  return Status::OK();
}

void ShmServer::Stop() {
  if (thread_.running()) {
    (void)!write(stop_fd_[1], "x", 1);
    thread_.Join();
  }
  for (int* fd : {&listen_fd_, &stop_fd_[0], &stop_fd_[1]}) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
  }
}

void ShmServer::Serve() {
  // The connections of peers that mapped a segment stay open, as a sign of this process's life:
  // when it dies the kernel closes them, and the peers stop writing into its memory (a write there
  // would be acknowledged and lost with it). Each is closed when its peer closes it.
  std::vector<pollfd> fds = {{listen_fd_, POLLIN, 0}, {stop_fd_[0], POLLIN, 0}};
  auto close_all = [&] {
    for (size_t i = 2; i < fds.size(); ++i) close(fds[i].fd);
  };
  for (;;) {
    if (poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      YB_LOG_ERROR("same-host socket: poll failed: {}", std::strerror(errno));
      return close_all();
    }
    if (fds[1].revents) return close_all();
    for (size_t i = 2; i < fds.size();) {
      if (fds[i].revents == 0) {
        ++i;
        continue;
      }
      close(fds[i].fd);  // the peer went (or sent what it should not): it maps nothing through it
      fds[i] = fds.back();
      fds.pop_back();
    }
    if (!(fds[0].revents & POLLIN)) continue;
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    SetTimeouts(fd, 1000);  // a peer that stalls holds up the others this long at most
    if (Answer(fd) && fds.size() < kMaxPeers + 2) {
      fds.push_back({fd, POLLIN, 0});
    } else {
      close(fd);
    }
  }
}

bool ShmServer::Answer(int fd) {
  auto refuse = [&](const char* why) {
    if (uint64_t n = refused_.fetch_add(1) + 1; LogOccurrence(n)) {
      YB_LOG_WARN("same-host transfers: refused a peer ({}; {} so far): it goes over TCP", why, n);
    }
  };
  if (!SameUserPeer(fd)) {
    Reply r;
    r.code = static_cast<int32_t>(Code::kIllegalClient);
    refuse("another user");  // counted before the peer can hear of it
    const std::string out = EncodeReply(r);
    (void)!send(fd, out.data(), out.size(), MSG_NOSIGNAL);
    return false;
  }
  const net::Nonce mine = net::NewNonce();
  const std::string hello = EncodeHello(mine);
  if (send(fd, hello.data(), hello.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(hello.size())) return false;
  char buf[kAskSize + 1];
  const ssize_t n = recv(fd, buf, sizeof(buf), 0);
  auto ask = n > 0 ? DecodeAsk(std::string_view(buf, static_cast<size_t>(n))) : std::nullopt;
  if (!ask) {
    refuse("a malformed request");
    return false;
  }
  Reply r;
  const std::string key = options_.data_key ? options_.data_key() : std::string();
  const net::Mac want = ProofOf(key, false, mine, ask->nonce, ask->segment);
  if (!key.empty() && CRYPTO_memcmp(want.data(), ask->mac.data(), want.size()) != 0) {
    r.code = static_cast<int32_t>(Code::kIllegalClient);
    refuse("a wrong proof of the data-plane key");
  } else {
    LocalSegment seg = served_->Find(ask->segment);
    if (!seg.base || !seg.region || seg.region->fd() < 0) {
      r.code = static_cast<int32_t>(Code::kSegmentNotFound);  // not ours, or not in shareable memory
    } else {
      r.region_size = seg.region->size();
      r.offset = static_cast<uint64_t>(seg.base - seg.region->data());
      r.size = seg.size;
      r.grant_key = seg.grant_key;
      r.mac = ProofOf(key, true, mine, ask->nonce, ask->segment);
    }
    const std::string out = EncodeReply(r);
    if (r.code == 0) given_.fetch_add(1);  // counted before the peer can use it
    const bool sent = SendWithFd(fd, out, r.code == 0 ? seg.region->fd() : -1);
    if (!sent && r.code == 0) given_.fetch_sub(1);
    return sent && r.code == 0;
  }
  const std::string out = EncodeReply(r);
  (void)!send(fd, out.data(), out.size(), MSG_NOSIGNAL);
  return false;
}

}  // namespace yb::shm
