#include "net/tls.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

#include "common/log.h"

namespace yb::net {
namespace {

class TlsStream final : public Stream {
 public:
  TlsStream(int fd, SSL* ssl) : Stream(fd), ssl_(ssl) {}
  ~TlsStream() override { SSL_free(ssl_); }

  ssize_t Recv(void* buf, size_t n) override {
    ERR_clear_error();
    const int r = SSL_read(ssl_, buf, static_cast<int>(std::min<size_t>(n, INT_MAX)));
    if (r > 0) return r;
    return Failed(r, /*reading=*/true);
  }

  ssize_t Send(const iovec* iov, size_t count) override {
    ssize_t total = 0;
    for (size_t i = 0; i < count; ++i) {
      const auto* p = static_cast<const char*>(iov[i].iov_base);
      size_t left = iov[i].iov_len;
      while (left > 0) {
        ERR_clear_error();
        const int w = SSL_write(ssl_, p, static_cast<int>(std::min<size_t>(left, INT_MAX)));
        if (w <= 0) return total > 0 ? total : Failed(w, /*reading=*/false);
        total += w;
        p += w;
        left -= static_cast<size_t>(w);
      }
    }
    return total;
  }

  bool Buffered() const override { return SSL_pending(ssl_) > 0; }
  bool encrypted() const override { return true; }

 private:
  // The result of a failed SSL_read / SSL_write as recv(2) / sendmsg(2) would say it.
  ssize_t Failed(int r, bool reading) {
    switch (SSL_get_error(ssl_, r)) {
      case SSL_ERROR_ZERO_RETURN:  // the peer closed the session
        if (reading) return 0;
        errno = EPIPE;
        return -1;
      case SSL_ERROR_WANT_READ:
      case SSL_ERROR_WANT_WRITE:
        errno = EAGAIN;
        return -1;
      case SSL_ERROR_SYSCALL:
        if (errno == 0) {  // the socket ended without a close_notify
          if (reading) return 0;
          errno = EPIPE;
        }
        return -1;
      default:
        ERR_clear_error();
        errno = EPROTO;  // a record that does not decrypt or verify
        return -1;
    }
  }

  SSL* ssl_;
};

}  // namespace

std::string TlsErrors() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out.empty() ? "no reason given" : out;
}

Result<std::shared_ptr<TlsContext>> TlsContext::Create(const TlsFiles& files, bool server) {
  auto bad = [](const std::string& what) { return Status(Code::kInvalidParams, "TLS: " + what + ": " + TlsErrors()); };
  if (server && (files.cert.empty() || files.key.empty())) {
    return Status(Code::kInvalidParams, "TLS: a server needs both --tls_cert and --tls_key");
  }
  if (files.cert.empty() != files.key.empty()) {
    return Status(Code::kInvalidParams, "TLS: --tls_cert and --tls_key go together");
  }
  ERR_clear_error();
  SSL_CTX* ctx = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method());
  if (!ctx) return bad("cannot make a context");
  std::shared_ptr<TlsContext> out(new TlsContext(ctx, server));
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION);
#ifdef SSL_OP_ENABLE_KTLS
  // Records encrypted and decrypted by the kernel (kTLS) where it has them (CONFIG_TLS, the "tls"
  // TCP ULP) for the cipher agreed: one copy fewer per byte, and no user-space crypto on the send
  // path. OpenSSL falls back to user-space TLS by itself where it cannot (Finish() logs which).
  SSL_CTX_set_options(ctx, SSL_OP_ENABLE_KTLS);
#endif
  if (!files.cert.empty()) {
    if (SSL_CTX_use_certificate_chain_file(ctx, files.cert.c_str()) != 1) return bad("certificate " + files.cert);
    if (SSL_CTX_use_PrivateKey_file(ctx, files.key.c_str(), SSL_FILETYPE_PEM) != 1) return bad("key " + files.key);
    if (SSL_CTX_check_private_key(ctx) != 1) return bad("key " + files.key + " does not match " + files.cert);
  }
  if (!files.ca.empty()) {
    if (SSL_CTX_load_verify_locations(ctx, files.ca.c_str(), nullptr) != 1) return bad("CA " + files.ca);
  } else if (!server) {
    SSL_CTX_set_default_verify_paths(ctx);
  }
  if (server) {
    // Mutual TLS when a CA is given: a client must present a certificate it signed.
    SSL_CTX_set_verify(ctx, files.ca.empty() ? SSL_VERIFY_NONE : SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT,
                       nullptr);
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  } else {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  }
  return out;
}

TlsContext::~TlsContext() { SSL_CTX_free(ctx_); }

SSL* TlsContext::NewSsl(int fd) const {
  SSL* ssl = SSL_new(ctx_);
  if (!ssl) return nullptr;
  SSL_set_fd(ssl, fd);
  server_ ? SSL_set_accept_state(ssl) : SSL_set_connect_state(ssl);
  return ssl;
}

TlsHandshake::TlsHandshake(const TlsContext& ctx, int fd) : fd_(fd), ssl_(ctx.NewSsl(fd)) {}

TlsHandshake::~TlsHandshake() { SSL_free(ssl_); }

TlsHandshake::Step TlsHandshake::Advance() {
  if (!ssl_) {
    error_ = "cannot start a TLS session: " + TlsErrors();
    return Step::kFailed;
  }
  ERR_clear_error();
  const int r = SSL_do_handshake(ssl_);
  if (r == 1) return Step::kDone;
  switch (SSL_get_error(ssl_, r)) {
    case SSL_ERROR_WANT_READ:
      return Step::kWantRead;
    case SSL_ERROR_WANT_WRITE:
      return Step::kWantWrite;
    case SSL_ERROR_SYSCALL:
      if (errno == EAGAIN || errno == EWOULDBLOCK) return Step::kWantRead;
      error_ = errno == 0 ? "the peer closed the connection during the TLS handshake (does it use TLS?)"
                          : std::string("TLS handshake: ") + std::strerror(errno);
      return Step::kFailed;
    default: {
      std::string why = TlsErrors();
      if (long v = SSL_get_verify_result(ssl_); v != X509_V_OK) {
        why = std::string("certificate not accepted: ") + X509_verify_cert_error_string(v) + " (" + why + ")";
      }
      error_ = "TLS handshake failed: " + why;
      return Step::kFailed;
    }
  }
}

std::unique_ptr<Stream> TlsHandshake::Finish() {
  SSL* ssl = ssl_;
  ssl_ = nullptr;
#ifdef SSL_OP_ENABLE_KTLS
  YB_LOG_DEBUG("TLS on fd {}: kernel TLS for sending {}, for receiving {}", fd_,
               BIO_get_ktls_send(SSL_get_wbio(ssl)) ? "on" : "off", BIO_get_ktls_recv(SSL_get_rbio(ssl)) ? "on" : "off");
#endif
  return std::make_unique<TlsStream>(fd_, ssl);
}

}  // namespace yb::net
