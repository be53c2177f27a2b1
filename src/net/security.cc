#include "net/security.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "common/log.h"
#include "common/resolve.h"
#include "net/mac_stream.h"

namespace yb::net {
namespace {

using Clock = std::chrono::steady_clock;

// Waits until `fd` is ready for `events` or `deadline`; false at the deadline.
bool WaitFor(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd p{fd, events, 0};
    const int n = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1000)));
    if (n > 0) return true;
    if (n < 0 && errno != EINTR) return true;  // the next I/O call reports the error
  }
}

// Refusals are logged the 1st, 2nd, 4th, ... time: a peer retrying in a loop does not flood the log.
void LogRefusal(const std::string& peer, const std::string& why) {
  static std::atomic<uint64_t> refused{0};
  if (uint64_t n = ++refused; LogOccurrence(n)) {
    YB_LOG_WARN("connection from {} refused: {} ({} refused so far)", peer, why, n);
  }
}

}  // namespace

std::string ProtectedModeRefusal(std::string_view peer) {
  return fmt::format(
      "refused {}: this server runs in protected mode (no --auth_secret_file) and serves only its own host. "
      "Give every process the cluster's secret (--auth_secret_file, YB_AUTH_SECRET_FILE), or start the server "
      "with --protected_mode false to serve any peer without one",
      peer);
}

// A connection a protected server will not serve: sends it the refusal, then reads and drops what
// it sends until it closes (so that the refusal is not lost to a reset) or the deadline passes.
class RefusalSession final : public LoopSession {
 public:
  RefusalSession(int fd, std::string why, std::chrono::milliseconds linger)
      : fd_(fd), out_(EncodeRefusal(why)), deadline_(SteadyNowMs() + std::max<int64_t>(linger.count(), 1)) {}
  uint32_t Interest() const override { return out_.empty() ? uint32_t{EPOLLIN} : uint32_t{EPOLLOUT}; }
  bool OnEvents(uint32_t events) override {
    if (events & (EPOLLHUP | EPOLLERR)) return false;
    while (!out_.empty()) {
      const ssize_t n = ::send(fd_, out_.data(), out_.size(), MSG_NOSIGNAL);
      if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK;
      out_.erase(0, static_cast<size_t>(n));
      if (out_.empty()) ::shutdown(fd_, SHUT_WR);
    }
    char buf[4096];
    for (;;) {
      const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
      if (n == 0) return false;
      if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK;
    }
  }
  bool WaitsOnPeer() const override { return true; }
  int64_t DeadlineMs() const override { return deadline_; }

 private:
  const int fd_;
  std::string out_;
  const int64_t deadline_;
};

// A server's connection until its handshake is done, then the session `make` gave, to which it
// hands everything. Runs on its event loop's thread only.
class HandshakeSession final : public LoopSession {
 public:
  HandshakeSession(std::shared_ptr<const Security> sec, Plane plane, int fd, std::string peer,
                   Security::SessionFactory make)
      : sec_(std::move(sec)), plane_(plane), fd_(fd), make_(std::move(make)) {
    peer_.address = std::move(peer);
    if (sec_->server_tls_) {
      tls_ = std::make_unique<TlsHandshake>(*sec_->server_tls_, fd_);
      state_ = State::kTls;
    } else {
      stream_ = MakePlainStream(fd_);
      Hello();
    }
    if (const auto t = sec_->options().handshake_timeout; t.count() > 0) deadline_ = SteadyNowMs() + t.count();
  }

  uint32_t Interest() const override {
    if (inner_) return inner_->Interest();
    return want_write_ ? uint32_t{EPOLLOUT} : uint32_t{EPOLLIN};
  }
  bool OnEvents(uint32_t events) override {
    if (inner_) return inner_->OnEvents(events);
    if (events & (EPOLLHUP | EPOLLERR)) {
      LogRefusal(peer_.address, "it closed the connection during the handshake");
      return false;
    }
    return Advance();
  }
  bool WaitsOnPeer() const override { return inner_ ? inner_->WaitsOnPeer() : true; }
  void OnStalled(int64_t idle_ms) override {
    if (inner_) return inner_->OnStalled(idle_ms);
    LogRefusal(peer_.address, "its handshake did not finish in time (idle for " + std::to_string(idle_ms) + " ms)");
  }
  int64_t DeadlineMs() const override { return inner_ ? inner_->DeadlineMs() : deadline_; }
  bool Buffered() const override { return inner_ ? inner_->Buffered() : stream_ && stream_->Buffered(); }
  LoopSession* Inner() override { return inner_ ? inner_->Inner() : nullptr; }

 private:
  enum class State { kTls, kProof, kAnswer, kRefuse };

  void Hello() {
    nonce_ = NewNonce();
    out_ = EncodeHello({nonce_, sec_->auth(), sec_->MacsOn(*stream_)});
    want_write_ = true;  // the client speaks only once it has the hello
    // Without a secret there is nothing to prove: ready once the hello is out.
    state_ = sec_->auth() ? State::kProof : State::kAnswer;
  }

  // Sends what is pending; false on a broken connection.
  bool Flush() {
    while (!out_.empty()) {
      ssize_t n = stream_->Send(out_.data(), out_.size());
      if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
          want_write_ = true;
          return true;
        }
        return false;
      }
      out_.erase(0, static_cast<size_t>(n));
    }
    want_write_ = false;
    return true;
  }

  bool Advance() {
    if (state_ == State::kTls) {
      switch (tls_->Advance()) {
        case TlsHandshake::Step::kWantRead:
          want_write_ = false;
          return true;
        case TlsHandshake::Step::kWantWrite:
          want_write_ = true;
          return true;
        case TlsHandshake::Step::kFailed:
          LogRefusal(peer_.address, tls_->error());
          return false;
        case TlsHandshake::Step::kDone:
          stream_ = tls_->Finish();
          tls_.reset();
          Hello();
          break;
      }
    }
    if (!Flush()) return false;
    if (!out_.empty()) return true;
    if (state_ == State::kRefuse) return false;  // its answer went out
    if (state_ == State::kProof) {
      if (!ReadProof()) return false;
      if (!Flush()) return false;
      if (!out_.empty() || state_ == State::kProof) return true;
      if (state_ == State::kRefuse) return false;
    }
    // Done: the session proper takes the stream over (in MAC'd records, without TLS).
    if (peer_.authenticated && sec_->MacsOn(*stream_)) stream_ = MakeMacStream(std::move(stream_), wire_keys_);
    inner_ = make_(std::move(stream_), peer_);
    if (!inner_) return false;
    ShareLoopId(*inner_);
    return true;  // input that came along (TLS records held in the stream) is offered by the loop (Buffered)
  }

  // Reads the proof; when whole, checks it and queues the answer.
  bool ReadProof() {
    char buf[512];
    for (;;) {
      size_t need = 8;
      if (in_.size() >= 8) {
        auto size = ProofSize(in_);
        if (!size) {
          LogRefusal(peer_.address, "it sent no authentication proof (is it configured with the cluster's secret?)");
          return false;
        }
        need = *size;
      }
      if (in_.size() >= need) break;
      ssize_t n = stream_->Recv(buf, std::min(sizeof(buf), need - in_.size()));
      if (n == 0) {
        LogRefusal(peer_.address, "it closed the connection before proving itself");
        return false;
      }
      if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK;
      in_.append(buf, static_cast<size_t>(n));
    }
    auto proof = DecodeProof(in_);
    in_.clear();
    if (!proof) {
      LogRefusal(peer_.address, "a malformed authentication proof");
      return false;
    }
    std::string key;
    auto role = sec_->Check(plane_, nonce_, *proof, &key);
    if (!role) {
      LogRefusal(peer_.address, proof->name.empty()        ? "a wrong secret"
                                : proof->name.starts_with("@") ? "a wrong key for the role '" + proof->name + "'"
                                                               : "a wrong secret for tenant '" + proof->name + "'");
      out_ = EncodeAnswer(false, Role::kCluster, "", nonce_, *proof);
      state_ = State::kRefuse;
      return true;
    }
    peer_.authenticated = true;
    peer_.role = *role;
    peer_.tenant = proof->name;
    out_ = EncodeAnswer(true, *role, key, nonce_, *proof);
    wire_keys_ = DeriveWireKeys(key, nonce_, proof->client, proof->name, /*server_side=*/true);
    state_ = State::kAnswer;
    return true;
  }

  const std::shared_ptr<const Security> sec_;
  const Plane plane_;
  const int fd_;
  const Security::SessionFactory make_;
  Peer peer_;
  State state_ = State::kAnswer;
  std::unique_ptr<TlsHandshake> tls_;
  std::unique_ptr<Stream> stream_;
  Nonce nonce_{};
  WireKeys wire_keys_;
  std::string in_, out_;
  bool want_write_ = false;
  int64_t deadline_ = 0;  // the handshake's (SteadyNowMs), 0: none
  std::unique_ptr<LoopSession> inner_;
};

Result<std::shared_ptr<Security>> Security::Create(SecurityOptions options) {
  if (!options.tenant_secrets.empty() && options.secret.empty()) {
    return Status(Code::kInvalidParams, "tenant secrets need a cluster secret too (--auth_secret_file)");
  }
  std::shared_ptr<Security> s(new Security(std::move(options)));
  if (s->auth() && !s->claimed_role()) {
    s->node_key_ = RoleKey(s->options_.secret, Role::kNode);
    s->admin_key_ = RoleKey(s->options_.secret, Role::kAdmin);
  }
  const TlsFiles& t = s->options_.tls;
  if (t.enabled()) {
    if (!t.cert.empty()) {
      auto server = TlsContext::Create(t, /*server=*/true);
      if (!server.ok()) return server.status();
      s->server_tls_ = std::move(server).value();
    }
    auto client = TlsContext::Create(t, /*server=*/false);
    if (!client.ok()) return client.status();
    s->client_tls_ = std::move(client).value();
  }
  return s;
}

std::shared_ptr<Security> Security::None() {
  static const std::shared_ptr<Security> none(new Security(SecurityOptions{}));
  return none;
}

std::string Security::admin_token() const {
  if (!auth()) return "";
  if (auto role = claimed_role()) return *role == Role::kAdmin ? AdminToken(options_.secret) : "";
  return AdminToken(admin_key_);
}

std::string Security::data_key() const {
  std::lock_guard lock(mu_);
  if (!data_key_.empty()) return data_key_;
  return auth() ? DataPlaneKey(options_.secret) : std::string();
}

void Security::SetDataKey(std::string key) const {
  std::lock_guard lock(mu_);
  data_key_ = std::move(key);
}

std::optional<Role> Security::Check(Plane plane, const Nonce& server, const Proof& proof, std::string* key) const {
  if (plane == Plane::kData) {
    *key = data_key();
    if (ProofValid(*key, server, proof)) return Role::kCluster;
    return std::nullopt;
  }
  // A role key's proof names the role it claims; the cluster secret's proves anything.
  for (auto [role, role_key] : {std::pair{Role::kNode, &node_key_}, std::pair{Role::kAdmin, &admin_key_}}) {
    if (proof.name != ClaimOf(role)) continue;
    if (role_key->empty() || !ProofValid(*role_key, server, proof)) return std::nullopt;
    *key = *role_key;
    return role;
  }
  if (ProofValid(options_.secret, server, proof)) {
    *key = options_.secret;
    return Role::kCluster;
  }
  if (auto it = options_.tenant_secrets.find(proof.name); it != options_.tenant_secrets.end()) {
    if (ProofValid(it->second, server, proof)) {
      *key = it->second;
      return Role::kTenant;
    }
  }
  return std::nullopt;
}

std::unique_ptr<LoopSession> Security::Accept(Plane plane, int fd, std::string peer,
                                              const SessionFactory& make) const {
  if (loopback_only() && !IsAddressOfThisHost(peer)) {
    std::string why = ProtectedModeRefusal(peer);
    LogRefusal(peer, "protected mode serves only this host without a secret (--auth_secret_file, or "
                     "--protected_mode false)");
    return std::make_unique<RefusalSession>(fd, std::move(why), options_.handshake_timeout);
  }
  if (!server_tls_ && !auth()) {
    Peer p;
    p.address = std::move(peer);
    return make(MakePlainStream(fd), std::move(p));
  }
  return std::make_unique<HandshakeSession>(shared_from_this(), plane, fd, std::move(peer), make);
}

Result<std::unique_ptr<Stream>> Security::Connect(Plane plane, int fd, const std::string& target,
                                                  const std::string& tenant, Clock::time_point deadline) const {
  if (!client_tls_ && !auth()) return MakePlainStream(fd);
  const Code broken = plane == Plane::kControl ? Code::kRpcFail : Code::kTransferFail;
  const int flags = ::fcntl(fd, F_GETFL);
  ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  struct Restore {
    int fd, flags;
    ~Restore() { ::fcntl(fd, F_SETFL, flags); }
  } restore{fd, flags};
  std::unique_ptr<Stream> stream;
  if (client_tls_) {
    TlsHandshake hs(*client_tls_, fd);
    for (;;) {
      auto step = hs.Advance();
      if (step == TlsHandshake::Step::kDone) break;
      if (step == TlsHandshake::Step::kFailed) return Status(broken, target + ": " + hs.error());
      if (!WaitFor(fd, step == TlsHandshake::Step::kWantWrite ? POLLOUT : POLLIN, deadline)) {
        return Status(plane == Plane::kControl ? Code::kRpcTimeout : broken,
                      target + ": the TLS handshake did not finish in time (does it serve TLS?)");
      }
    }
    stream = hs.Finish();
  } else {
    stream = MakePlainStream(fd);
  }

  // Exactly `n` bytes, by the deadline.
  auto read_exactly = [&](size_t n, std::string* out) -> Status {
    char buf[256];
    while (out->size() < n) {
      ssize_t r = stream->Recv(buf, std::min(sizeof(buf), n - out->size()));
      if (r > 0) {
        out->append(buf, static_cast<size_t>(r));
        continue;
      }
      if (r == 0) return Status(broken, target + " closed the connection");
      if (errno != EAGAIN && errno != EWOULDBLOCK) return Status(broken, target + ": " + std::strerror(errno));
      if (!stream->Buffered() && !WaitFor(fd, POLLIN, deadline)) {
        return Status(plane == Plane::kControl ? Code::kRpcTimeout : broken, target + ": no answer in time");
      }
    }
    return Status::OK();
  };
  auto write_all = [&](const std::string& data) -> Status {
    size_t off = 0;
    while (off < data.size()) {
      ssize_t w = stream->Send(data.data() + off, data.size() - off);
      if (w > 0) {
        off += static_cast<size_t>(w);
        continue;
      }
      if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
        return Status(broken, target + ": " + std::strerror(errno));
      }
      if (!WaitFor(fd, POLLOUT, deadline)) return Status(broken, target + ": it does not read");
    }
    return Status::OK();
  };

  std::string hello_bytes;
  if (Status st = read_exactly(kHelloSize, &hello_bytes); !st.ok()) {
    return Status(st.code(), st.message() + (client_tls_ ? " (was our certificate refused?)"
                                                         : " (no hello from it: does it run without "
                                                           "--auth_secret_file, or with TLS this client is not "
                                                           "given, or is it another service?)"));
  }
  auto hello = DecodeHello(hello_bytes);
  if (!hello) {
    if (Refusal r = DecodeRefusal(hello_bytes); r.is_refusal) {
      // The rest of its text, as far as it came before the server closed.
      std::string more;
      (void)read_exactly(kMaxRefusalText, &more);
      r = DecodeRefusal(hello_bytes + more);
      return Status(Code::kIllegalClient, target + ": " + (r.complete ? r.text : "refused this connection"));
    }
    return Status(broken, target + " said something else than our hello");
  }
  if (hello->proof_wanted != auth()) {
    return Status(Code::kIllegalClient,
                  hello->proof_wanted
                      ? target + " asks for authentication: give this client the cluster's secret "
                                 "(--auth_secret_file, YB_AUTH_SECRET_FILE)"
                      : target + " asks for no proof (it runs without --auth_secret_file): not trusted with ours");
  }
  if (!auth()) return stream;
  if (hello->wire_macs != MacsOn(*stream)) {
    return Status(Code::kIllegalClient,
                  target + (hello->wire_macs ? " puts a MAC on every frame and this client does not"
                                             : " puts no MAC on frames and this client does") +
                      ": give both the same --wire_macs (YB_WIRE_MACS), or TLS to both");
  }
  const Nonce* server_nonce = &hello->nonce;
  const Nonce client_nonce = NewNonce();
  const std::string key = plane == Plane::kControl ? options_.secret : data_key();
  const auto role = claimed_role();
  const std::string name = plane == Plane::kData ? std::string() : role ? ClaimOf(*role) : tenant;
  YB_RETURN_IF_ERROR(write_all(EncodeProof(key, *server_nonce, client_nonce, name)));
  std::string answer_bytes;
  YB_RETURN_IF_ERROR(read_exactly(kAnswerSize, &answer_bytes));
  auto answer = DecodeAnswer(answer_bytes);
  if (!answer) return Status(broken, target + " answered our proof with something else");
  if (!answer->accepted) {
    return Status(Code::kIllegalClient,
                  target + " refused our proof: " +
                      (plane == Plane::kData ? std::string("not this cluster's data-plane key")
                                             : "not this cluster's secret" +
                                                   (name.empty() ? std::string() : " nor tenant '" + name + "''s")) +
                      " (--auth_secret_file / YB_AUTH_SECRET_FILE)");
  }
  if (!AnswerValid(key, *server_nonce, client_nonce, name, *answer)) {
    return Status(Code::kIllegalClient, target + " accepted our proof without proving it knows the secret: refused");
  }
  if (MacsOn(*stream)) {
    stream = MakeMacStream(std::move(stream), DeriveWireKeys(key, *server_nonce, client_nonce, name, false));
  }
  return stream;
}

}  // namespace yb::net
