#include "client/dummy_server.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>
#include <vector>

#include "client/client_internal.h"
#include "common/grant.h"
#include "common/log.h"
#include "common/unix_socket.h"
#include "dummy.pb.h"
#include "rpc/master_convert.h"
#include "rpc/master_server.h"

namespace yb {

std::string DummyRpcSocket(uint16_t port) { return "@yuebing-dummy:" + std::to_string(port); }
std::string DummyMemorySocket(uint16_t port) { return "yuebing-dummy-mem:" + std::to_string(port); }

namespace {

// The memory exchange (SOCK_SEQPACKET): dummy -> real "YBDM" | u64 size, with the memfd;
// real -> dummy "YBDR" | i32 code | u64 token (0 with an error code).
constexpr size_t kRegionAsk = 12;
constexpr size_t kRegionAnswer = 16;
constexpr size_t kMaxRegionsPerDummy = 65536;

std::string Answer(int32_t code, uint64_t token) {
  std::string out(kRegionAnswer, '\0');
  std::memcpy(out.data(), "YBDR", 4);
  std::memcpy(out.data() + 4, &code, 4);
  std::memcpy(out.data() + 8, &token, 8);
  return out;
}

uint64_t NewToken() {
  static thread_local std::mt19937_64 rng(std::random_device{}());
  uint64_t t = 0;
  while (t == 0) t = rng();
  return t;
}

}  // namespace

DummyServer::DummyServer(Client& real, Options options)
    : real_(real),
      options_(options),
      engine_(ClientInternal::engine(real)),
      served_(ClientInternal::served(real)) {}

Result<std::unique_ptr<DummyServer>> DummyServer::Start(Client& real, Options options) {
  if (options.port == 0) return Status(Code::kInvalidParams, "dummy clients: the real client serves no port");
  std::unique_ptr<DummyServer> s(new DummyServer(real, options));
  rpc::RpcServer::Options ro;
  ro.address = DummyRpcSocket(options.port);
  ro.threads = std::max(1, options.threads);
  s->rpc_ = std::make_unique<rpc::RpcServer>(ro);
  rpc::RegisterMasterService(*s->rpc_, ClientInternal::master(real));
  DummyServer* self = s.get();
  s->rpc_->Register(kDummyHello, [self](const net::Peer&, std::string_view body, std::string& reply) {
    pb::DummyHelloRequest req;
    if (!req.ParseFromArray(body.data(), static_cast<int>(body.size()))) {
      return Status(Code::kInvalidParams, "malformed hello");
    }
    pb::DummyHelloResponse resp;
    resp.set_hostname(self->real_.hostname());
    resp.set_version(kDummyProtocolVersion);
    resp.set_segments_shared(self->options_.segments_shared);
    if (self->options_.segments_shared) resp.set_data_key(ClientInternal::data_key(self->real_));
    YB_LOG_INFO("dummy client (pid {}) connected", req.pid());
    resp.AppendToString(&reply);
    return Status::OK();
  });
  s->rpc_->Register(kDummyRelay, [self](const net::Peer&, std::string_view body, std::string& reply) {
    return self->Relay(body, reply);
  });
  YB_RETURN_IF_ERROR(s->rpc_->Start());

  s->mem_fd_ = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  sockaddr_un addr;
  const socklen_t len = AbstractUnixAddress(DummyMemorySocket(options.port), &addr);
  if (s->mem_fd_ < 0 || bind(s->mem_fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
      listen(s->mem_fd_, 64) != 0 || pipe2(s->stop_fd_, O_CLOEXEC) != 0) {
    Status st(Code::kInternal, "dummy clients: socket '" + DummyMemorySocket(options.port) +
                                   "': " + std::string(std::strerror(errno)));
    s->Stop();
    return st;
  }
  s->mem_thread_ = Worker("yb-dummy-mem", [self] { self->ServeMemory(); });
  YB_LOG_INFO("serving dummy clients of this host at @{} (setup_dummy(..., \"<host>:{}\"))",
              DummyRpcSocket(options.port).substr(1), options.port);
  return s;
}

DummyServer::~DummyServer() { Stop(); }

void DummyServer::Stop() {
  if (rpc_) rpc_->Stop();
  if (mem_thread_.running()) {
    (void)!write(stop_fd_[1], "x", 1);
    mem_thread_.Join();
  }
  for (int* fd : {&mem_fd_, &stop_fd_[0], &stop_fd_[1]}) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
  }
  MutexLock lock(mu_);
  regions_.clear();
}

uint64_t DummyServer::regions() const {
  MutexLock lock(mu_);
  return regions_.size();
}

std::shared_ptr<MappedRegion> DummyServer::Region(uint64_t token) const {
  MutexLock lock(mu_);
  auto it = regions_.find(token);
  return it == regions_.end() ? nullptr : it->second.region;
}

Status DummyServer::Relay(std::string_view body, std::string& reply) {
  pb::RelayBatch batch;
  if (!batch.ParseFromArray(body.data(), static_cast<int>(body.size()))) {
    return Status(Code::kInvalidParams, "malformed relay");
  }
  const size_t n = static_cast<size_t>(batch.requests_size());
  std::vector<Status> results(n);
  std::vector<TransferRequest> reqs;
  std::vector<size_t> which;  // reqs[j] answers results[which[j]]
  std::vector<std::shared_ptr<MappedRegion>> held;  // mapped until the transfers end
  std::vector<std::string> keys(n);
  reqs.reserve(n);
  const int64_t now = WallMs(options_.wall_clock);
  for (size_t i = 0; i < n; ++i) {
    const pb::RelayRequest& r = batch.requests(static_cast<int>(i));
    if (r.op() > static_cast<uint32_t>(TransferRequest::Op::kReadObject)) {
      results[i] = Status(Code::kInvalidParams, "unknown relay operation");
      continue;
    }
    auto region = Region(r.region());
    if (!region) {
      results[i] = Status(Code::kInvalidParams, "relay into memory the dummy did not register with its real client");
      continue;
    }
    if (r.region_offset() > region->size() || r.length() > region->size() - r.region_offset()) {
      results[i] = Status(Code::kInvalidParams, "relay past the end of the dummy's region");
      continue;
    }
    TransferRequest t;
    t.op = static_cast<TransferRequest::Op>(r.op());
    t.segment = r.segment();
    t.offset = r.offset();
    t.local = region->data() + r.region_offset();
    t.length = r.length();
    t.grant = rpc::GrantFromPb(r.grant());
    t.land_within_grant = r.land_within_grant();
    if (t.op == TransferRequest::Op::kReadObject) {
      keys[i] = r.key();
      t.key = &keys[i];
    }
    // Our own segments are moved by memcpy, which trusts its caller: the dummy's grant is checked
    // here as the transfer server checks a peer's.
    if (t.op != TransferRequest::Op::kReadObject) {
      LocalSegment own = served_ ? served_->Find(t.segment) : LocalSegment{};
      if (own.base) {
        const GrantAccess access = t.op == TransferRequest::Op::kWrite ? GrantAccess::kWrite : GrantAccess::kRead;
        Status ok = CheckGrant(own.grant_key, t.segment, t.grant, access, t.offset, t.length, now);
        if (!ok.ok()) {
          refused_.fetch_add(1, std::memory_order_relaxed);
          results[i] = ok;
          continue;
        }
      }
    }
    held.push_back(std::move(region));
    which.push_back(i);
    reqs.push_back(t);
  }
  relays_.fetch_add(1, std::memory_order_relaxed);
  if (!reqs.empty()) {
    auto done = engine_->Submit(reqs);
    for (size_t j = 0; j < done.size(); ++j) {
      if (done[j].ok()) relayed_bytes_.fetch_add(reqs[j].length, std::memory_order_relaxed);
      results[which[j]] = std::move(done[j]);
    }
  }
  pb::RelayResponse resp;
  for (const Status& st : results) rpc::ToPb(st, resp.add_results());
  resp.AppendToString(&reply);
  return Status::OK();
}

void DummyServer::ServeMemory() {
  std::vector<pollfd> fds = {{mem_fd_, POLLIN, 0}, {stop_fd_[0], POLLIN, 0}};
  auto end = [&](size_t i) {
    DropRegionsOf(fds[i].fd);
    close(fds[i].fd);
    dummies_.fetch_sub(1, std::memory_order_relaxed);
    fds[i] = fds.back();
    fds.pop_back();
  };
  for (;;) {
    if (poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      YB_LOG_ERROR("dummy clients: poll failed: {}", std::strerror(errno));
      break;
    }
    if (fds[1].revents) break;
    for (size_t i = 2; i < fds.size();) {
      if (fds[i].revents == 0) {
        ++i;
      } else if ((fds[i].revents & POLLIN) && TakeRegion(fds[i].fd)) {
        ++i;
      } else {
        end(i);  // the dummy left or died: its memory goes once no transfer uses it
      }
    }
    if (!(fds[0].revents & POLLIN)) continue;
    int fd = accept4(mem_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    if (!SameUserPeer(fd)) {
      refused_.fetch_add(1, std::memory_order_relaxed);
      YB_LOG_WARN("dummy clients: refused a process of another user");
      const std::string out = Answer(static_cast<int32_t>(Code::kIllegalClient), 0);
      (void)!send(fd, out.data(), out.size(), MSG_NOSIGNAL);
      close(fd);
      continue;
    }
    timeval tv{1, 0};  // a dummy that stalls mid-message holds up the others this long at most
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    fds.push_back({fd, POLLIN, 0});
    dummies_.fetch_add(1, std::memory_order_relaxed);
  }
  for (size_t i = fds.size(); i-- > 2;) end(i);
}

bool DummyServer::TakeRegion(int conn) {
  std::string msg;
  int fd = -1;
  if (!RecvWithFd(conn, msg, kRegionAsk, &fd)) return false;
  uint64_t size = 0;
  if (msg.size() != kRegionAsk || msg.compare(0, 4, "YBDM") != 0 || fd < 0) {
    if (fd >= 0) close(fd);
    const std::string out = Answer(static_cast<int32_t>(Code::kInvalidParams), 0);
    (void)!send(conn, out.data(), out.size(), MSG_NOSIGNAL);
    return false;
  }
  std::memcpy(&size, msg.data() + 4, 8);
  size_t mine = 0;
  {
    MutexLock lock(mu_);
    for (const auto& [t, h] : regions_) mine += h.conn == conn;
  }
  std::shared_ptr<MappedRegion> region;
  if (mine < kMaxRegionsPerDummy) region = MappedRegion::MapShared(fd, size);  // takes fd
  else close(fd);
  if (!region) {
    const std::string out = Answer(static_cast<int32_t>(Code::kInvalidParams), 0);
    (void)!send(conn, out.data(), out.size(), MSG_NOSIGNAL);
    return true;  // the dummy hears why; the connection stays
  }
  const uint64_t token = NewToken();
  {
    MutexLock lock(mu_);
    regions_[token] = Held{std::move(region), conn};
  }
  const std::string out = Answer(0, token);
  return send(conn, out.data(), out.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(out.size());
}

void DummyServer::DropRegionsOf(int conn) {
  std::vector<std::shared_ptr<MappedRegion>> gone;  // unmapped outside the lock
  MutexLock lock(mu_);
  for (auto it = regions_.begin(); it != regions_.end();) {
    if (it->second.conn == conn) {
      gone.push_back(std::move(it->second.region));
      it = regions_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace yb
