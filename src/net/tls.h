// TLS for our connections (OpenSSL): a context per process and role, a handshake that runs on a
// non-blocking socket step by step (a server's event loop) or to a deadline (a client), and the
// stream it leaves (stream.h).
//
// A server needs a certificate and its key; given a CA too, it asks each client for a certificate
// that CA signed (mutual TLS) and refuses a client without one. A client checks the server's
// certificate against the CA it is given (else the system's), but not the name in it: peers are
// addressed by IP address and port as often as by name, and the CA a cluster is given signs only
// its own members. Given a certificate and key, a client presents them. TLS 1.2 or later.
#pragma once

#include <memory>
#include <string>

#include "net/stream.h"
#include "yuebing/status.h"

typedef struct ssl_ctx_st SSL_CTX;
typedef struct ssl_st SSL;

namespace yb::net {

// PEM files, as --tls_cert, --tls_key, --tls_ca name them.
struct TlsFiles {
  std::string cert;
  std::string key;
  std::string ca;
  bool enabled() const { return !cert.empty() || !ca.empty(); }
};

class TlsContext {
 public:
  // INVALID_PARAMS naming the file and OpenSSL's reason when a file does not load.
  static Result<std::shared_ptr<TlsContext>> Create(const TlsFiles& files, bool server);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;
  bool server() const { return server_; }
  SSL* NewSsl(int fd) const;

 private:
  TlsContext(SSL_CTX* ctx, bool server) : ctx_(ctx), server_(server) {}
  SSL_CTX* ctx_;
  const bool server_;
};

// A handshake in progress on a socket; Advance() as the socket becomes ready.
class TlsHandshake {
 public:
  TlsHandshake(const TlsContext& ctx, int fd);
  ~TlsHandshake();
  TlsHandshake(const TlsHandshake&) = delete;
  TlsHandshake& operator=(const TlsHandshake&) = delete;
  enum class Step { kDone, kWantRead, kWantWrite, kFailed };
  Step Advance();
  // Why it failed (OpenSSL's reason), after kFailed.
  const std::string& error() const { return error_; }
  // After kDone: the stream over the finished session.
  std::unique_ptr<Stream> Finish();

 private:
  const int fd_;
  SSL* ssl_;
  std::string error_;
};

// OpenSSL's queued errors as text (and clears them).
std::string TlsErrors();

}  // namespace yb::net
