#include "net/mac_stream.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <iterator>

namespace yb::net {
namespace {

// AES-128-GMAC under one key; a record's sequence number is its nonce.
class Gmac {
 public:
  explicit Gmac(const std::array<uint8_t, 16>& key) : ctx_(EVP_CIPHER_CTX_new()) {
    ok_ = ctx_ && EVP_EncryptInit_ex(ctx_, EVP_aes_128_gcm(), nullptr, key.data(), nullptr) == 1;
  }
  ~Gmac() { EVP_CIPHER_CTX_free(ctx_); }
  Gmac(const Gmac&) = delete;
  Gmac& operator=(const Gmac&) = delete;

  // The tag of `parts` as record `seq`. False if OpenSSL failed (the stream then fails).
  bool Tag(uint64_t seq, const iovec* parts, size_t n, uint8_t out[kMacTagSize]) {
    if (!ok_) return false;
    uint8_t iv[12] = {};
    std::memcpy(iv + 4, &seq, 8);
    int len = 0;
    if (EVP_EncryptInit_ex(ctx_, nullptr, nullptr, nullptr, iv) != 1) return false;
    for (size_t i = 0; i < n; ++i) {
      if (parts[i].iov_len == 0) continue;
      if (EVP_EncryptUpdate(ctx_, nullptr, &len, static_cast<const uint8_t*>(parts[i].iov_base),
                            static_cast<int>(parts[i].iov_len)) != 1) {
        return false;
      }
    }
    uint8_t none[16];
    return EVP_EncryptFinal_ex(ctx_, none, &len) == 1 &&
           EVP_CIPHER_CTX_ctrl(ctx_, EVP_CTRL_GCM_GET_TAG, kMacTagSize, out) == 1;
  }

 private:
  EVP_CIPHER_CTX* ctx_;
  bool ok_ = false;
};

constexpr size_t kHeader = 4;
constexpr size_t kMaxParts = 64;  // payload pieces of one record (an iovec array's)

class MacStream final : public Stream {
 public:
  MacStream(std::unique_ptr<Stream> inner, const WireKeys& keys)
      : Stream(inner->fd()),
        inner_(std::move(inner)),
        send_mac_(keys.send),
        recv_mac_(keys.recv),
        // Not zeroed: a page is touched only once bytes arrive in it, so the thousands of
        // connections a master serves cost what their frames fill, not two records each.
        in_(new uint8_t[kInSize]) {}

  ssize_t Send(const iovec* iov, size_t count) override {
    Cursor cur(iov, count);
    size_t consumed = 0;
    if (inflight_) {
      // The record begun last time: the caller's bytes start with its payload again.
      if (cur.left() < inflight_len_) {
        errno = EINVAL;
        return -1;
      }
      const ssize_t r = Continue(cur);
      if (r <= 0) return r;
      consumed = inflight_len_;
      inflight_ = false;
      cur.Skip(inflight_len_);
    }
    while (cur.left() > 0) {
      iovec parts[kMaxParts + 2];
      size_t n = 1;
      size_t len = 0;
      Cursor c = cur;
      while (n <= kMaxParts && len < kMaxMacRecord && c.left() > 0) {
        const size_t take = std::min(kMaxMacRecord - len, c.here());
        parts[n++] = iovec{const_cast<uint8_t*>(c.ptr()), take};
        len += take;
        c.Skip(take);
      }
      const uint32_t len32 = static_cast<uint32_t>(len);
      std::memcpy(header_, &len32, kHeader);
      parts[0] = iovec{header_, kHeader};
      if (!send_mac_.Tag(send_seq_++, parts, n, tag_)) {
        errno = EPROTO;
        return consumed > 0 ? static_cast<ssize_t>(consumed) : -1;
      }
      parts[n++] = iovec{tag_, kMacTagSize};
      const ssize_t w = inner_->Send(parts, n);
      const size_t wire = kHeader + len + kMacTagSize;
      if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
        return consumed > 0 ? static_cast<ssize_t>(consumed) : -1;
      }
      if (w < static_cast<ssize_t>(wire)) {
        // On the wire in part (or not at all): finished by the next call, with the same bytes.
        inflight_ = true;
        inflight_len_ = len;
        inflight_sent_ = w > 0 ? static_cast<size_t>(w) : 0;
        if (consumed > 0) return static_cast<ssize_t>(consumed);
        errno = EAGAIN;
        return -1;
      }
      consumed += len;
      cur.Skip(len);
    }
    return static_cast<ssize_t>(consumed);
  }

  ssize_t Recv(void* buf, size_t n) override {
    for (;;) {
      if (plain_ < plain_end_) {
        const size_t k = std::min(n, plain_end_ - plain_);
        std::memcpy(buf, in_.get() + plain_, k);
        plain_ += k;
        if (plain_ == plain_end_) start_ = plain_end_ + kMacTagSize;  // the record is spent
        return static_cast<ssize_t>(k);
      }
      const int whole = WholeRecord();
      if (whole < 0) {
        errno = EPROTO;
        return -1;
      }
      if (whole > 0) {
        if (!Open()) {
          errno = EPROTO;
          return -1;
        }
        continue;
      }
      if (start_ > 0 && (end_ == kInSize || start_ == end_)) {  // room for the rest of a record
        std::memmove(in_.get(), in_.get() + start_, end_ - start_);
        end_ -= start_;
        start_ = 0;
      }
      const ssize_t r = inner_->Recv(in_.get() + end_, kInSize - end_);
      if (r == 0) {
        if (end_ > start_) {  // the peer stopped halfway through a record: not a clean end
          errno = EPROTO;
          return -1;
        }
        return 0;
      }
      if (r < 0) return -1;
      end_ += static_cast<size_t>(r);
    }
  }

  bool Buffered() const override { return plain_ < plain_end_ || WholeRecord() != 0 || inner_->Buffered(); }

 private:
  // A position in the caller's iovec array.
  struct Cursor {
    Cursor(const iovec* v, size_t n) : iov(v), count(n) {
      for (size_t i = 0; i < n; ++i) remaining += v[i].iov_len;
    }
    const iovec* iov;
    size_t count;
    size_t off = 0;        // into iov[0]
    size_t remaining = 0;  // bytes from here to the end (kept, not summed again per record)
    size_t left() const { return remaining; }
    size_t here() {
      while (count > 0 && off == iov[0].iov_len) {
        ++iov;
        --count;
        off = 0;
      }
      return count > 0 ? iov[0].iov_len - off : 0;
    }
    const uint8_t* ptr() const { return static_cast<const uint8_t*>(iov[0].iov_base) + off; }
    void Skip(size_t k) {
      while (k > 0) {
        const size_t h = here();
        const size_t t = std::min(h, k);
        off += t;
        remaining -= t;
        k -= t;
        if (h == 0) break;
      }
    }
  };

  // Sends the rest of the record in flight; its payload is the caller's next inflight_len_ bytes.
  // The record's length when it is all out, else -1 (EAGAIN or the error).
  ssize_t Continue(Cursor cur) {
    iovec parts[kMaxParts + 2];
    size_t n = 0;
    size_t skip = inflight_sent_;
    bool fits = true;
    auto add = [&](const uint8_t* p, size_t len) {
      if (skip >= len) {
        skip -= len;
        return;
      }
      if (n == std::size(parts)) {
        fits = false;
        return;
      }
      parts[n++] = iovec{const_cast<uint8_t*>(p + skip), len - skip};
      skip = 0;
    };
    add(header_, kHeader);
    size_t len = 0;
    while (len < inflight_len_) {
      const size_t take = std::min(inflight_len_ - len, cur.here());
      add(cur.ptr(), take);
      len += take;
      cur.Skip(take);
    }
    add(tag_, kMacTagSize);
    if (!fits) {  // the same bytes in far more pieces than the first time: not a caller of ours
      errno = EINVAL;
      return -1;
    }
    const size_t wire = kHeader + inflight_len_ + kMacTagSize;
    const ssize_t w = inner_->Send(parts, n);
    if (w < 0) return -1;
    inflight_sent_ += static_cast<size_t>(w);
    if (inflight_sent_ < wire) {
      errno = EAGAIN;
      return -1;
    }
    return static_cast<ssize_t>(inflight_len_);
  }

  // 1: a whole record is buffered; 0: not yet; -1: its header is malformed.
  int WholeRecord() const {
    if (end_ - start_ < kHeader) return 0;
    uint32_t len;
    std::memcpy(&len, in_.get() + start_, kHeader);
    if (len == 0 || len > kMaxMacRecord) return -1;
    return end_ - start_ >= kHeader + len + kMacTagSize ? 1 : 0;
  }

  // Checks the whole record at start_ and makes its bytes the ones to hand out.
  bool Open() {
    uint32_t len;
    std::memcpy(&len, in_.get() + start_, kHeader);
    iovec part{in_.get() + start_, kHeader + len};
    uint8_t want[kMacTagSize];
    if (!recv_mac_.Tag(recv_seq_++, &part, 1, want)) return false;
    if (CRYPTO_memcmp(want, in_.get() + start_ + kHeader + len, kMacTagSize) != 0) return false;
    plain_ = start_ + kHeader;
    plain_end_ = plain_ + len;
    return true;
  }

  std::unique_ptr<Stream> inner_;
  Gmac send_mac_, recv_mac_;
  uint64_t send_seq_ = 0, recv_seq_ = 0;
  // The record being sent, when the socket took it only in part.
  bool inflight_ = false;
  size_t inflight_len_ = 0, inflight_sent_ = 0;
  uint8_t header_[kHeader] = {};
  uint8_t tag_[kMacTagSize] = {};
  // Received bytes [start_, end_); a checked record's payload [plain_, plain_end_) within them.
  static constexpr size_t kInSize = 2 * (kHeader + kMaxMacRecord + kMacTagSize);
  std::unique_ptr<uint8_t[]> in_;
  size_t start_ = 0, end_ = 0, plain_ = 0, plain_end_ = 0;
};

}  // namespace

WireKeys DeriveWireKeys(std::string_view key, const Nonce& server, const Nonce& client, std::string_view name,
                        bool server_side) {
  const std::string_view s(reinterpret_cast<const char*>(server.data()), server.size());
  const std::string_view c(reinterpret_cast<const char*>(client.data()), client.size());
  const Mac m = Hmac(key, "yb-wire-mac", {s, c, name});
  WireKeys k;
  std::array<uint8_t, 16> to_server, to_client;
  std::memcpy(to_server.data(), m.data(), 16);
  std::memcpy(to_client.data(), m.data() + 16, 16);
  k.send = server_side ? to_client : to_server;
  k.recv = server_side ? to_server : to_client;
  return k;
}

std::unique_ptr<Stream> MakeMacStream(std::unique_ptr<Stream> inner, const WireKeys& keys) {
  return std::make_unique<MacStream>(std::move(inner), keys);
}

}  // namespace yb::net
