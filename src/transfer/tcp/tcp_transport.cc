#include "transfer/tcp/tcp_transport.h"

#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <unistd.h>

#include <array>
#include <asio.hpp>
#include <condition_variable>
#include <cstring>

#include "common/clock.h"
#include "common/log.h"
#include "common/segment_name.h"
#include "common/status_wire.h"
#include "common/units.h"
#include "transfer/tcp/wire.h"

namespace yb::tcp {

// A connected, blocking socket whose reads and writes are bounded by SO_RCVTIMEO / SO_SNDTIMEO.
struct TcpTransport::Conn {
  int fd = -1;
  std::unique_ptr<net::Stream> stream;   // over fd: TLS and the data-plane key's proof when on
  TimeMs idle_since = 0;                 // when it went back to the pool
  std::chrono::milliseconds io_wait{0};  // the socket's send and receive timeouts now
  Conn() = default;
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;
  ~Conn() {
    stream.reset();  // before its socket
    if (fd >= 0) ::close(fd);
  }
};

std::chrono::milliseconds TcpTransport::Options::IoBudget(uint64_t bytes) const {
  const uint64_t bw = std::max<uint64_t>(io_floor_bandwidth, 1);
  const auto for_bytes = std::chrono::milliseconds(static_cast<int64_t>(bytes / bw * 1000 + bytes % bw * 1000 / bw));
  return std::min(io_timeout, io_floor + for_bytes);
}

namespace {

// Write payloads hashed and queued between two sends, at most (while they stay in cache).
constexpr uint64_t kMaxQueuedHashed = 512 << 10;

// Sets both timeouts of a blocking socket (a peer silent this long fails the call).
void SetIoTimeouts(int fd, std::chrono::milliseconds wait) {
  timeval tv{static_cast<time_t>(wait.count() / 1000), static_cast<suseconds_t>(wait.count() % 1000 * 1000)};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

// Connects within `timeout`, name lookup included (a host that drops the SYNs, or a DNS server
// that does not answer, would otherwise hold the caller for minutes) and sets the connection up for
// transfers, with `io_timeout`.
Status ConnectTo(NameResolver& names, const std::string& endpoint, std::chrono::milliseconds timeout,
                 std::chrono::milliseconds io_timeout, std::chrono::milliseconds unacked_timeout, int* out) {
  auto hp = ParseHostPort(endpoint);
  if (!hp.ok()) return Status(Code::kTransferFail, "bad endpoint '" + endpoint + "'");
  const SteadyTime until = DeadlineIn(timeout);
  auto addresses = names.Resolve(hp->first, std::to_string(hp->second), until);
  if (!addresses.ok()) {
    return Status(Code::kTransferFail, "transfer server " + endpoint + ": " + addresses.status().message());
  }
  std::string why = "no address";
  int fd = -1;
  for (const SocketAddress& a : *addresses) {
    fd = ::socket(a.family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
      why = strerror(errno);
      continue;
    }
    int err = ::connect(fd, reinterpret_cast<const sockaddr*>(&a.addr), a.len) == 0 ? 0 : errno;
    if (err == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      int n;
      do {
        n = ::poll(&p, 1, static_cast<int>(MillisLeft(until)));
      } while (n < 0 && errno == EINTR);
      socklen_t len = sizeof(err);
      if (n == 0) {
        err = ETIMEDOUT;
      } else if (n < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) {
        err = errno;
      }
    }
    if (err != 0) {
      why = strerror(err);
      ::close(fd);
      fd = -1;
      continue;
    }
    break;
  }
  if (fd < 0) return Status(Code::kTransferFail, "cannot connect to transfer server " + endpoint + ": " + why);
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  // A peer that stops answering fails the transfer after `timeout`, never hangs it (each exchange
  // narrows it to what its bytes call for).
  SetIoTimeouts(fd, io_timeout);
  // A host that is gone acknowledges nothing: the kernel ends the connection (ETIMEDOUT) once what
  // was sent stays unacknowledged this long, instead of after io_timeout or its own ~15 minutes.
  unsigned user_timeout = static_cast<unsigned>(unacked_timeout.count());
  setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout, sizeof(user_timeout));
  int buf = 4 << 20;
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
  *out = fd;
  return Status::OK();
}

// Blocking I/O on a connection's descriptor, bounded by its SO_RCVTIMEO / SO_SNDTIMEO: a timeout
// comes back as asio::error::timed_out. (Asio's synchronous calls cannot be used for this: when the
// timeout fires they wait again, with no bound.)
asio::error_code LastError() {
  if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ETIMEDOUT) return asio::error::timed_out;
  return asio::error_code(errno, asio::system_category());
}

size_t RecvSome(net::Stream& s, uint8_t* into, size_t n, asio::error_code& ec) {
  for (;;) {
    ssize_t r = s.Recv(into, n);
    if (r > 0) return static_cast<size_t>(r);
    if (r == 0) {
      ec = asio::error::eof;
      return 0;
    }
    if (errno == EINTR) continue;
    ec = LastError();
    return 0;
  }
}

void RecvAll(net::Stream& s, uint8_t* into, size_t n, asio::error_code& ec) {
  while (n > 0) {
    size_t got = RecvSome(s, into, n, ec);
    if (ec) return;
    into += got;
    n -= got;
  }
}

// Sends every byte of `iov` (which it consumes).
void SendAll(net::Stream& s, std::vector<iovec>& iov, asio::error_code& ec) {
  size_t first = 0;
  while (first < iov.size()) {
    ssize_t r = s.Send(iov.data() + first, std::min<size_t>(iov.size() - first, IOV_MAX));
    if (r < 0) {
      if (errno == EINTR) continue;
      ec = LastError();
      return;
    }
    for (size_t left = static_cast<size_t>(r); left > 0 || (first < iov.size() && iov[first].iov_len == 0);) {
      iovec& v = iov[first];
      size_t take = std::min(left, v.iov_len);
      v.iov_base = static_cast<uint8_t*>(v.iov_base) + take;
      v.iov_len -= take;
      left -= take;
      if (v.iov_len == 0) ++first;
    }
  }
}

}  // namespace

Result<TcpTransport::Options> TcpTransport::Options::WithSliceSize(uint64_t configured,
                                                                   std::string_view mc_slice_size) {
  Options o;
  if (configured != 0) {
    if (configured < kMinSlice || configured > kMaxSlice) {
      return Status(Code::kInvalidParams, "transfer slice size " + std::to_string(configured) + " is outside " +
                                              std::to_string(kMinSlice) + "-" + std::to_string(kMaxSlice));
    }
    o.slice_size = configured;
    return o;
  }
  if (mc_slice_size.empty()) return o;
  auto size = ParseSize(mc_slice_size);
  if (!size.ok() || *size < kMinSlice || *size > kMaxSlice) {
    YB_LOG_WARN("MC_SLICE_SIZE='{}' is not a size in {}-{} bytes: using {} byte slices", mc_slice_size, kMinSlice,
                kMaxSlice, o.slice_size);
    return o;
  }
  o.slice_size = *size;
  YB_LOG_INFO("TCP transfers in slices of {} bytes (MC_SLICE_SIZE)", o.slice_size);
  return o;
}

TcpTransport::TcpTransport(Resolver resolver, Options options)
    : resolver_(std::move(resolver)), options_(options), pool_(std::max(1, options.parallel)) {}

TcpTransport::~TcpTransport() = default;

bool TcpTransport::Reaches(SegmentId segment) const { return resolver_(segment).has_value(); }

bool TcpTransport::Unreachable(SegmentId segment) const {
  auto endpoint = resolver_(segment);
  if (!endpoint) return false;
  MutexLock lock(mu_);
  return unreachable_.count(*endpoint) > 0;
}

void TcpTransport::Probe(SegmentId segment) {
  auto endpoint = resolver_(segment);
  if (!endpoint) return;
  {
    MutexLock lock(mu_);
    auto it = unreachable_.find(*endpoint);
    if (it == unreachable_.end() || Now() < it->second.retry_at || !probing_.insert(*endpoint).second) return;
  }
  prober_.Submit([this, endpoint = *endpoint] {
    Status error;
    auto c = Connect(endpoint, &error);  // records the outcome
    if (c) Give(endpoint, std::move(c));
    MutexLock lock(mu_);
    probing_.erase(endpoint);
  });
}

std::unique_ptr<TcpTransport::Conn> TcpTransport::Take(const std::string& endpoint, bool* pooled, Status* error) {
  {
    MutexLock lock(mu_);
    auto& idle = idle_[endpoint];
    if (pooled && !idle.empty()) {
      auto c = std::move(idle.back());
      idle.pop_back();
      *pooled = true;
      return c;
    }
    if (!MayConnectLocked(endpoint, Now(), error)) return nullptr;
  }
  return Connect(endpoint, error);
}

std::unique_ptr<TcpTransport::Conn> TcpTransport::Connect(const std::string& endpoint, Status* error) {
  auto c = std::make_unique<Conn>();
  const SteadyTime until = DeadlineIn(options_.connect_timeout);
  *error = ConnectTo(names_, endpoint, options_.connect_timeout, options_.io_timeout, options_.unacked_timeout, &c->fd);
  if (error->ok()) {
    const auto& security = options_.security ? options_.security : net::Security::None();
    auto stream = security->Connect(net::Plane::kData, c->fd, "transfer server " + endpoint, "", until);
    if (stream.ok()) {
      c->stream = std::move(stream).value();
    } else {
      *error = Status(stream.code() == Code::kIllegalClient ? Code::kIllegalClient : Code::kTransferFail,
                      stream.status().message());
    }
  }
  {
    MutexLock lock(mu_);
    NoteConnectLocked(endpoint, Now(), *error);
  }
  return error->ok() ? std::move(c) : nullptr;
}

bool TcpTransport::MayConnectLocked(const std::string& endpoint, TimeMs now, Status* error) const {
  auto it = unreachable_.find(endpoint);
  if (it == unreachable_.end()) return true;
  const Unreached& u = it->second;
  if (probing_.count(endpoint)) {  // a probe is trying it: a caller does not wait for the same answer
    *error = Status(Code::kTransferFail, "transfer server " + endpoint + " unreachable (" + u.why + "; " +
                                             std::to_string(u.failures) +
                                             " failed connection attempts in a row, a probe is trying it now)");
    return false;
  }
  if (now >= u.retry_at) return true;
  *error = Status(Code::kTransferFail,
                  "transfer server " + endpoint + " unreachable (" + u.why + "; " + std::to_string(u.failures) +
                      " failed connection attempts in a row, the next in " + std::to_string(u.retry_at - now) + " ms)");
  return false;
}

void TcpTransport::NoteConnectLocked(const std::string& endpoint, TimeMs now, const Status& result) {
  auto it = unreachable_.find(endpoint);
  if (result.ok()) {
    if (it == unreachable_.end()) return;
    YB_LOG_INFO("transfer server {} reachable again after {} failed connection attempts", endpoint,
                it->second.failures);
    unreachable_.erase(it);
    return;
  }
  if (it == unreachable_.end()) it = unreachable_.try_emplace(endpoint).first;
  Unreached& u = it->second;
  ++u.failures;
  u.why = result.message();
  const auto pause = u.pause.Next();
  u.retry_at = now + pause.count();
  // Once per state change (a library's caller reads its stderr): the attempts after, at debug level.
  if (u.failures == 1) {
    YB_LOG_WARN("{}: unreachable; its requests fail at once for the next {} ms, then it is tried again (said again "
                "only once it is back)",
                u.why, pause.count());
  } else {
    YB_LOG_DEBUG("{} ({} in a row): its requests fail at once for the next {} ms", u.why, u.failures, pause.count());
  }
}

void TcpTransport::Give(const std::string& endpoint, std::unique_ptr<Conn> c) {
  const TimeMs now = Now();
  c->idle_since = now;
  MutexLock lock(mu_);
  auto& idle = idle_[endpoint];
  if (static_cast<int>(idle.size()) < options_.max_idle_per_endpoint) idle.push_back(std::move(c));
  SweepIdleLocked(now);
}

TimeMs TcpTransport::Now() const {
  return (options_.clock ? *options_.clock : SteadyClock()).NowMs();
}

void TcpTransport::SweepIdleLocked(TimeMs now) {
  if (now - last_sweep_ < 1000) return;
  last_sweep_ = now;
  const TimeMs limit = options_.max_idle.count();
  for (auto it = idle_.begin(); it != idle_.end();) {
    auto& conns = it->second;  // oldest first: connections go back to the end and are taken from it
    size_t stale = 0;
    while (stale < conns.size() && now - conns[stale]->idle_since > limit) ++stale;
    conns.erase(conns.begin(), conns.begin() + static_cast<std::ptrdiff_t>(stale));
    it = conns.empty() ? idle_.erase(it) : std::next(it);
  }
  std::erase_if(unreachable_, [&](const auto& entry) { return now - entry.second.retry_at > limit; });
}

size_t TcpTransport::idle_connections() const {
  MutexLock lock(mu_);
  size_t n = 0;
  for (const auto& [ep, conns] : idle_) n += conns.size();
  return n;
}

void TcpTransport::RunSlices(const std::string& endpoint, const std::vector<Slice>& slices, std::vector<Status>& errors,
                             Mutex& errors_mu) {
  auto fail_all = [&](const Status& st) {
    MutexLock lock(errors_mu);
    for (const auto& s : slices) {
      if (errors[s.request].ok()) errors[s.request] = st;
    }
  };
  // A pooled connection may have died while idle (the peer restarted on the same address): when it
  // fails before any answer, the slices go again, once, on a new connection. Every request is
  // idempotent (a read, or a write of the same bytes to the same place), so that is safe.
  for (bool first = true;; first = false) {
    bool pooled = false;
    Status st;
    auto conn = Take(endpoint, first ? &pooled : nullptr, &st);
    if (!conn) return fail_all(st);
    ExchangeFailure how = ExchangeFailure::kOther;
    st = Exchange(*conn, endpoint, slices, errors, errors_mu, &how);
    if (st.ok()) return Give(endpoint, std::move(conn));
    if (how == ExchangeFailure::kTimedOut) {
      // No answer, or nothing acknowledged, for a timeout: its host is likely gone (cut off, or
      // down without a word). Its other connections would wait as long; new ones wait a pause.
      MutexLock lock(mu_);
      idle_.erase(endpoint);
      NoteConnectLocked(endpoint, Now(), st);
      return fail_all(st);
    }
    if (!(pooled && how == ExchangeFailure::kClosedUnanswered)) return fail_all(st);
    YB_LOG_DEBUG("pooled connection to {} failed before an answer ({}): retrying on a new one", endpoint,
                 st.message());
    MutexLock lock(mu_);
    idle_.erase(endpoint);  // its siblings idled as long: likely dead too
  }
}

Status TcpTransport::Exchange(Conn& conn, const std::string& endpoint, const std::vector<Slice>& slices,
                              std::vector<Status>& errors, Mutex& errors_mu, ExchangeFailure* how) {
  const int fd = conn.fd;
  asio::error_code ec;
  size_t answers = 0;
  uint64_t bytes = 0;
  for (const auto& s : slices) bytes += s.piece.length;
  if (const auto wait = options_.IoBudget(bytes); wait != conn.io_wait) {
    SetIoTimeouts(fd, wait);
    conn.io_wait = wait;
  }
  // A failure of `ec`: notes whether the peer had closed the connection before answering anything
  // (a timeout is not that: a hung peer is not retried), or timed out.
  auto failed = [&](std::string what) {
    if (ec == asio::error::timed_out) {
      *how = ExchangeFailure::kTimedOut;
      timeouts_.fetch_add(1, std::memory_order_relaxed);
    } else if (answers == 0 && (ec == asio::error::eof || ec == asio::error::connection_reset ||
                                ec == asio::error::broken_pipe || ec == asio::error::connection_aborted)) {
      *how = ExchangeFailure::kClosedUnanswered;
    }
    return Status(Code::kTransferFail, std::move(what));
  };
  // Pipelined: every request (with write payloads) in gathered writes, then every response in order.
  // A write's payload is hashed for its checksum just before it is queued (it is then in cache for
  // the kernel's copy), so what is queued between two sends stays small.
  std::vector<std::array<uint8_t, kRequestSize>> hdrs(slices.size());
  std::vector<iovec> out;
  uint64_t queued = 0;
  for (size_t k = 0; k < slices.size(); ++k) {
    const auto& p = slices[k].piece;
    if (p.op == TransferRequest::Op::kReadObject) {
      WireRequest{kOpReadObject, p.segment, p.key->size(), p.length, p.grant}.Encode(hdrs[k].data());
      out.push_back({hdrs[k].data(), kRequestSize});
      out.push_back({const_cast<char*>(p.key->data()), p.key->size()});
    } else {
      WireRequest{p.op == TransferRequest::Op::kRead ? kOpRead : kOpWrite, p.segment, p.offset, p.length, p.grant}
          .Encode(hdrs[k].data());
      out.push_back({hdrs[k].data(), kRequestSize});
      if (p.op == TransferRequest::Op::kWrite) {
        if (p.checksum) p.checksum->Moved(p.object_pos, p.local, p.length);
        out.push_back({p.local, p.length});
        if (p.checksum) queued += p.length;
      }
    }
    if (out.size() >= 64 || queued >= kMaxQueuedHashed || k + 1 == slices.size()) {
      SendAll(*conn.stream, out, ec);
      out.clear();
      queued = 0;
      if (ec) return failed("sending to " + endpoint + ": " + ec.message());
    }
  }
  // Responses through a buffer; read payloads go straight to their destination past what it holds.
  std::vector<uint8_t> in(64 << 10);
  size_t len = 0, pos = 0;
  auto fill = [&](size_t need) -> bool {  // at least `need` bytes buffered from pos
    while (len - pos < need) {
      if (pos > 0) {
        std::memmove(in.data(), in.data() + pos, len - pos);
        len -= pos;
        pos = 0;
      }
      size_t n = RecvSome(*conn.stream, in.data() + len, in.size() - len, ec);
      if (ec) return false;
      len += n;
    }
    return true;
  };
  for (const auto& s : slices) {
    WireResponse resp;
    if (!fill(kResponseSize) || !resp.Decode(in.data() + pos)) {
      auto buffered = [&] { return std::string_view(reinterpret_cast<const char*>(in.data()) + pos, len - pos); };
      if (net::Refusal r = net::DecodeRefusal(buffered()); !ec && r.is_refusal) {  // a protected server's word
        while (!r.complete && fill(len - pos + 1)) r = net::DecodeRefusal(buffered());
        return Status(Code::kIllegalClient,
                      "transfer server " + endpoint + ": " + (r.complete ? r.text : "refused this connection"));
      }
      if (!ec && std::memcmp(in.data() + pos, "YBAU", 4) == 0) {  // a server's hello (net/auth.h)
        return Status(Code::kIllegalClient, "transfer server " + endpoint +
                                                " asks for authentication: give this client the cluster's secret "
                                                "(auth_secret_file, YB_AUTH_SECRET_FILE)");
      }
      return failed("reading from " + endpoint + ": " + (ec ? ec.message() : "bad reply"));
    }
    pos += kResponseSize;
    ++answers;
    if (resp.code != 0) {
      {
        MutexLock lock(errors_mu);
        if (errors[s.request].ok())
          errors[s.request] = DecodeStatus(resp.code, "refused by transfer server " + endpoint);
      }
      if (s.piece.op == TransferRequest::Op::kWrite) {  // the server closed the connection
        return Status(Code::kTransferFail, "transfer server " + endpoint + " refused a write");
      }
      continue;
    }
    if (s.piece.op != TransferRequest::Op::kWrite) {
      if (resp.length != s.piece.length) return Status(Code::kTransferFail, "short read from " + endpoint);
      // Received a checksum chunk at a time, each hashed (and handed on) as it lands.
      auto* dst = static_cast<uint8_t*>(s.piece.local);
      ChecksumSink* sink = s.piece.checksum;
      LandingObserver* observer = s.piece.landed;
      for (uint64_t got = 0; got < s.piece.length;) {
        if (s.piece.land_within_grant && WallMs(options_.wall_clock) > s.piece.grant.expires_ms) {
          return Status(Code::kTransferFail, "a copy from " + endpoint + " outlived its grant: not a byte more lands");
        }
        const uint64_t at = s.piece.object_pos + got;
        const uint64_t step = sink || observer ? std::min(s.piece.length - got, kChecksumChunk - at % kChecksumChunk)
                                               : s.piece.length - got;
        const uint64_t have = std::min<uint64_t>(len - pos, step);
        std::memcpy(dst + got, in.data() + pos, have);
        pos += have;
        if (have < step) RecvAll(*conn.stream, dst + got + have, step - have, ec);
        if (ec) return failed("reading from " + endpoint + ": " + ec.message());
        if (sink) sink->Moved(at, dst + got, step);
        if (observer) observer->Landed(at, dst + got, step);
        got += step;
      }
    }
  }
  return Status::OK();
}

std::vector<Status> TcpTransport::Submit(const std::vector<TransferRequest>& batch) {
  std::vector<Status> out(batch.size());
  std::unordered_map<std::string, std::vector<Slice>> by_endpoint;
  for (size_t i = 0; i < batch.size(); ++i) {
    const auto& r = batch[i];
    if (r.length > 0 && !r.local) {
      out[i] = Status(Code::kInvalidParams, "null local buffer");
      continue;
    }
    if (r.op == TransferRequest::Op::kReadObject && (!r.key || r.key->empty() || r.key->size() > kMaxObjectKey)) {
      out[i] = Status(Code::kInvalidParams, "object read needs a key of 1-" + std::to_string(kMaxObjectKey) + " bytes");
      continue;
    }
    auto ep = resolver_(r.segment);
    if (!ep) {
      out[i] = Status(Code::kTransferFail, "no endpoint known for segment " + std::to_string(r.segment));
      continue;
    }
    auto& slices = by_endpoint[*ep];
    if (r.op == TransferRequest::Op::kReadObject) {  // a whole object: the server reads it in one piece
      slices.push_back({i, r});
      continue;
    }
    for (uint64_t off = 0; off < r.length || (off == 0 && r.length == 0); off += options_.slice_size) {
      uint64_t n = std::min(options_.slice_size, r.length - off);
      TransferRequest piece = r;
      piece.offset = r.offset + off;
      piece.local = static_cast<uint8_t*>(r.local) + off;
      piece.length = n;
      piece.object_pos = r.object_pos + off;
      slices.push_back({i, piece});
      if (r.length == 0) break;
    }
  }
  // Groups of slices, each run on its own connection; mixed reads and writes never share one.
  std::vector<std::pair<std::string, std::vector<Slice>>> groups;
  for (auto& [ep, slices] : by_endpoint) {
    int ways = std::max(1, std::min<int>(options_.parallel, static_cast<int>(slices.size())));
    std::vector<std::vector<Slice>> reads(ways), writes(ways);
    for (size_t k = 0; k < slices.size(); ++k) {
      auto& dst = slices[k].piece.op == TransferRequest::Op::kWrite ? writes : reads;
      dst[k % ways].push_back(slices[k]);
    }
    for (auto* set : {&reads, &writes}) {
      for (auto& g : *set) {
        if (!g.empty()) groups.emplace_back(ep, std::move(g));
      }
    }
  }
  Mutex errors_mu;
  Mutex done_mu;
  std::condition_variable_any done_cv;
  size_t remaining = groups.size();  // under done_mu
  for (size_t g = 1; g < groups.size(); ++g) {
    pool_.Submit([&, g] {
      RunSlices(groups[g].first, groups[g].second, out, errors_mu);
      MutexLock lock(done_mu);
      if (--remaining == 0) done_cv.notify_one();
    });
  }
  if (!groups.empty()) {
    RunSlices(groups[0].first, groups[0].second, out, errors_mu);
    MutexUniqueLock lock(done_mu);
    --remaining;
    while (remaining != 0) done_cv.wait(lock);
  }
  return out;
}

}  // namespace yb::tcp
