// EtcdClient: the few etcd v3 calls leader election needs, through etcd's JSON gateway
// (POST /v3/kv/..., /v3/lease/...; keys and values base64 in the JSON) with cpp-httplib. Why the
// gateway and not gRPC: etcd serves it on its client port by default, it needs no generated code
// or gRPC runtime (Debian's grpc++ would be a large dependency for five calls), and each call here
// is one small request a few times a second.
//
// Endpoints are tried in turn: a call goes to the endpoint that last answered, and on a failure to
// the next, each within `timeout`. Errors are ETCD_OPERATION_ERROR naming the endpoint and what it
// said. Thread-safe (one call at a time).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/thread_annotations.h"
#include "yuebing/status.h"

namespace yb {

// The etcd calls the masters' election makes (EtcdClient; MemoryEtcd in tests).
class EtcdKv {
 public:
  struct Kv {
    std::string value;
    int64_t create_revision = 0;
    int64_t mod_revision = 0;
    int64_t lease = 0;
  };
  // Creates `key` = `value` attached to `lease` if it does not exist. Either way, the key as it is
  // after the call (ours when `won`).
  struct Claim {
    bool won = false;
    Kv current;
  };

  virtual ~EtcdKv() = default;
  // A lease of `ttl_sec`; its id.
  virtual Result<int64_t> Grant(int64_t ttl_sec) = 0;
  // Renews a lease: its remaining TTL in seconds; 0 when etcd no longer has it.
  virtual Result<int64_t> KeepAlive(int64_t lease) = 0;
  virtual Status Revoke(int64_t lease) = 0;
  virtual Result<std::optional<Kv>> Get(const std::string& key) = 0;
  virtual Result<Claim> PutIfAbsent(const std::string& key, const std::string& value, int64_t lease) = 0;
  // Replaces `key2`'s value, only while `key` is still the one created at `create_revision` (still
  // ours): false when etcd said it is not; ETCD_OPERATION_ERROR: not reached.
  virtual Result<bool> PutIfOwned(const std::string& key, int64_t create_revision, const std::string& key2,
                                  const std::string& value) = 0;
};

class EtcdClient final : public EtcdKv {
 public:
  struct Options {
    std::vector<std::pair<std::string, uint16_t>> endpoints;
    std::chrono::milliseconds timeout{1000};
    // TLS (etcd's --cert-file): the CA etcd's certificate is checked against (its name or address
    // too), and the certificate and key etcd's --client-cert-auth asks clients for. All empty:
    // plain HTTP.
    std::string tls_ca = {}, tls_cert = {}, tls_key = {};
    // etcd's own authentication (`etcdctl auth enable`): a user and its password. A token is asked
    // for at the first call and again when etcd says it is no longer valid.
    std::string user = {}, password = {};
    bool tls() const { return !tls_ca.empty() || !tls_cert.empty(); }
  };
  // How etcd is reached, from the flags or settings every entry point shares (TLS files; a user and
  // a file holding its password), endpoints left empty. INVALID_PARAMS for a certificate without
  // its key, a user without a password file (or the reverse), or a password file that cannot be
  // read or that others may read.
  static Result<Options> Access(std::string tls_ca, std::string tls_cert, std::string tls_key, std::string user,
                                const std::string& password_file);
  // "host:port;host:port", also with "etcd://" or "http://" before each (Mooncake's spellings).
  static Result<std::vector<std::pair<std::string, uint16_t>>> ParseEndpoints(const std::string& spec);

  explicit EtcdClient(Options options);

  Result<int64_t> Grant(int64_t ttl_sec) override;
  Result<int64_t> KeepAlive(int64_t lease) override;
  Status Revoke(int64_t lease) override;
  Result<std::optional<Kv>> Get(const std::string& key) override;
  Status Put(const std::string& key, const std::string& value, int64_t lease = 0);
  Status Delete(const std::string& key);
  Result<Claim> PutIfAbsent(const std::string& key, const std::string& value, int64_t lease) override;
  Result<bool> PutIfOwned(const std::string& key, int64_t create_revision, const std::string& key2,
                          const std::string& value) override;

 private:
  // POSTs `body` to `path` on an endpoint; the reply's JSON text.
  Result<std::string> Post(const std::string& path, const std::string& body);
  // One POST to one endpoint, with the token when there is one: its HTTP status and body, or why
  // there is none (status 0). Under mu_.
  struct Reply {
    int status = 0;
    std::string body;  // or the error
  };
  Reply PostTo(const std::string& host, uint16_t port, const std::string& path, const std::string& body) REQUIRES(mu_);
  // A token for options_.user from `host`.
  Status Authenticate(const std::string& host, uint16_t port) REQUIRES(mu_);

  Options options_;
  Mutex mu_;
  size_t current_ GUARDED_BY(mu_) = 0;
  std::string token_ GUARDED_BY(mu_);  // etcd's auth token
};

// Base64 (RFC 4648, with padding), as etcd's JSON gateway carries bytes.
std::string Base64Encode(std::string_view in);
std::optional<std::string> Base64Decode(std::string_view in);

}  // namespace yb
