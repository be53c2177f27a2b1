#include "transfer/tcp/transfer_server.h"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <thread>

#include "common/log.h"
#include "common/status_wire.h"
#include "transfer/memcpy_transport.h"

namespace yb::tcp {

namespace {

constexpr size_t kInputBuffer = 64 << 10;  // request headers and the small payloads that follow them
// A connection whose peer sends requests but does not read the answers stops being read when this
// many answers wait, or when answers holding this many bytes of their own (SSD tier reads) wait.
constexpr size_t kMaxQueuedAnswers = 65536;
constexpr uint64_t kMaxOwnedBytes = 64ULL << 20;
constexpr int kReadsPerEvent = 16;  // then the loop's other connections get their turn
constexpr int kMaxIov = 128;

}  // namespace

// One connection. A request is handled as soon as its header is in: a read is answered with a
// pointer into the segment (sent from there, the mapping held until it is), a write's payload is
// received straight into the segment and then acknowledged. Answers go out in request order, many
// per sendmsg.
class TransferServer::Session final : public LoopSession {
 public:
  Session(TransferServer& server, EventLoop& loop, std::unique_ptr<net::Stream> stream, std::string peer)
      : server_(server), loop_(loop), stream_(std::move(stream)), peer_(std::move(peer)) {}

  // Waiting on the peer: halfway through a request, or answers it does not read (an SSD read in
  // flight is our wait, not the peer's).
  bool WaitsOnPeer() const override { return phase_ != Phase::kDiskRead && (Halfway() || !out_.empty()); }
  void OnStalled(int64_t idle_ms) override {
    if (uint64_t n = ++server_.stalled_; LogOccurrence(n)) {
      YB_LOG_WARN("transfer server: {} moved no byte for {} ms {} ({} so far): closing the connection", peer_, idle_ms,
                  Halfway() ? "halfway through a request" : "with answers it does not read", n);
    }
  }

  bool Halfway() const { return phase_ == Phase::kPayload || phase_ == Phase::kObjectKey || in_len_ > in_pos_; }

  bool Buffered() const override { return Reading() && stream_->Buffered(); }

  uint32_t Interest() const override {
    return (Reading() ? uint32_t{EPOLLIN} : 0u) | (out_.empty() ? 0u : uint32_t{EPOLLOUT});
  }

  bool OnEvents(uint32_t events) override {
    if (events & (EPOLLHUP | EPOLLERR)) return false;  // the peer is gone: nobody reads the answers
    if ((events & EPOLLOUT) && !Flush()) return false;
    if ((events & EPOLLIN) && Reading() && !Receive()) return false;
    return Pump();
  }

  // On the loop's thread, when the SSD tier read this connection waits for is done.
  bool OnObjectRead(const Status& st, std::shared_ptr<uint8_t[]> data, uint64_t length) {
    phase_ = Phase::kRequest;
    if (st.ok()) {
      owned_bytes_ += length;
      const uint8_t* bytes = data.get();  // before `data` is moved into the answer
      Answer(Code::kOk, bytes, length, std::move(data), true);
      Count(server_.disk_reads_, server_.disk_read_bytes_, length);
    } else {
      if (st.code() != Code::kObjectNotFound) {
        YB_LOG_WARN("transfer server: object read of segment {} for {} failed: {}", segment_, peer_, st.ToString());
      }
      Answer(st.code());
    }
    return Pump();
  }

 private:
  enum class Phase {
    kRequest,    // waiting for a request header
    kPayload,    // receiving a write's payload into the segment
    kObjectKey,  // receiving the key of an SSD tier read
    kDiskRead,   // the SSD tier read runs; later requests wait
  };

  struct Pending {
    uint8_t header[kResponseSize];
    const uint8_t* data = nullptr;
    uint64_t length = 0;
    std::shared_ptr<const void> hold;  // the memory `data` points into
    bool owned = false;                // counts in owned_bytes_
  };

  bool Reading() const {
    return phase_ != Phase::kDiskRead && !closing_ && out_.size() < kMaxQueuedAnswers && owned_bytes_ < kMaxOwnedBytes;
  }

  void Answer(Code code, const uint8_t* data = nullptr, uint64_t length = 0, std::shared_ptr<const void> hold = {},
              bool owned = false) {
    Pending& p = out_.emplace_back();
    WireResponse{EncodeCode(code), data ? length : 0}.Encode(p.header);
    p.data = data;
    p.length = data ? length : 0;
    p.hold = std::move(hold);
    p.owned = owned;
  }

  void Refuse(const char* what) {
    if (uint64_t n = ++server_.refused_; LogOccurrence(n)) {
      YB_LOG_WARN("transfer server: {} from {}: closing the connection ({} requests refused so far)", what, peer_, n);
    }
    closing_ = true;  // what is already answered still goes out
  }

  // Reads what has arrived, a bounded number of times; false when the connection is to close.
  bool Receive() {
    for (int round = 0; round < kReadsPerEvent && Reading(); ++round) {
      uint8_t* into;
      size_t room;
      if (phase_ == Phase::kPayload) {
        // A write whose grant lapsed while its payload came in (its writer paused or cut off, the
        // range since given up by the master and held only until then): not a byte more lands.
        if (server_.Wall() > write_expires_ms_) {
          Answer(Code::kIllegalClient);
          Refuse("a write's grant lapsed before its payload was in");
          return true;
        }
        into = write_at_;
        room = write_left_;
      } else {
        if (!in_) in_.reset(new uint8_t[kInputBuffer]);
        if (in_pos_ > 0) {
          std::memmove(in_.get(), in_.get() + in_pos_, in_len_ - in_pos_);
          in_len_ -= in_pos_;
          in_pos_ = 0;
        }
        into = in_.get() + in_len_;
        room = kInputBuffer - in_len_;
        if (room == 0) break;  // nothing can be taken from it until answers drain
      }
      ssize_t n = stream_->Recv(into, room);
      if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
      if (n == 0) return false;  // the peer closed
      if (phase_ == Phase::kPayload) {
        write_at_ += n;
        write_left_ -= static_cast<uint64_t>(n);
        if (write_left_ == 0) FinishWrite();
      } else {
        in_len_ += static_cast<size_t>(n);
        Process();
      }
      // A short read took all there was: asking again would only find nothing (the set is
      // level-triggered, so more arriving is reported by the next wait).
      if (static_cast<size_t>(n) < room) break;
    }
    return true;
  }

  // Handles the buffered requests and sends answers, for as long as both make progress.
  bool Pump() {
    for (;;) {
      Process();
      if (!Flush()) return false;
      if (closing_) return !out_.empty();  // closes once the answers are out
      if (!Reading() || phase_ != Phase::kRequest || in_len_ - in_pos_ < kRequestSize) break;
    }
    if (in_ && in_pos_ == in_len_ && phase_ != Phase::kObjectKey) {
      in_.reset();  // an idle connection holds no buffer
      in_len_ = in_pos_ = 0;
    }
    return true;
  }

  void Process() {
    while (Reading()) {
      const size_t avail = in_len_ - in_pos_;
      if (phase_ == Phase::kObjectKey) {
        if (avail == 0) return;
        size_t take = std::min(avail, key_.size() - key_have_);
        std::memcpy(key_.data() + key_have_, in_.get() + in_pos_, take);
        key_have_ += take;
        in_pos_ += take;
        if (key_have_ == key_.size()) StartObjectRead();
        continue;
      }
      if (phase_ != Phase::kRequest || avail < kRequestSize) return;
      WireRequest req;
      if (!req.Decode(in_.get() + in_pos_)) return Refuse("malformed request");
      in_pos_ += kRequestSize;
      if (req.op == kOpReadObject) {
        if (req.offset == 0 || req.offset > kMaxObjectKey) return Refuse("object read with a bad key length");
        segment_ = req.segment;
        object_length_ = req.length;
        object_grant_ = req.grant;
        key_.assign(req.offset, '\0');
        key_have_ = 0;
        phase_ = Phase::kObjectKey;
        continue;
      }
      ServeSegment(req);
    }
  }

  void ServeSegment(const WireRequest& req) {
    LocalSegment seg = server_.served_->Find(req.segment);
    Status st;
    if (!seg.base) {
      st = Status(Code::kSegmentNotFound, "segment not served here");
    } else if (req.length > server_.options_.max_request) {
      st = Status(Code::kInvalidParams, "request too long");
    } else {
      TransferRequest probe{TransferRequest::Op::kRead, req.segment, req.offset, seg.base, req.length};
      st = CheckBounds(probe, seg.size);  // only the bounds are checked
      if (st.ok()) {
        st = CheckGrant(seg.grant_key, req.segment, req.grant,
                        req.op == kOpRead ? GrantAccess::kRead : GrantAccess::kWrite, req.offset, req.length, server_.Wall());
        if (!st.ok()) server_.refused_grants_.fetch_add(1, std::memory_order_relaxed);
      }
    }
    if (!st.ok()) {
      // Logged the 1st, 2nd, 4th, ... time: a peer with a stale view of the segments may send many.
      if (uint64_t n = ++server_.refused_; LogOccurrence(n)) {
        YB_LOG_WARN("transfer server: refused {} of segment {} [{}, +{}) from {}: {} ({} requests refused so far)",
                    req.op == kOpRead ? "read" : "write", req.segment, req.offset, req.length, peer_, st.ToString(), n);
      }
      Answer(st.code());
      if (req.op == kOpWrite) closing_ = true;  // its payload is not ours to read
      return;
    }
    uint8_t* at = seg.base + req.offset;
    if (req.op == kOpRead) {
      Answer(Code::kOk, at, req.length, std::move(seg.region));
      Count(server_.reads_, server_.read_bytes_, req.length);
      return;
    }
    uint64_t have = std::min<uint64_t>(in_len_ - in_pos_, req.length);
    if (have > 0) std::memcpy(at, in_.get() + in_pos_, have);
    in_pos_ += have;
    write_hold_ = std::move(seg.region);
    write_expires_ms_ = req.grant.expires_ms;
    write_at_ = at + have;
    write_left_ = req.length - have;
    write_length_ = req.length;
    if (write_left_ > 0) {
      phase_ = Phase::kPayload;  // the rest is received straight into the segment
    } else {
      FinishWrite();
    }
  }

  void FinishWrite() {
    write_hold_.reset();
    phase_ = Phase::kRequest;
    Answer(Code::kOk);
    Count(server_.writes_, server_.written_bytes_, write_length_);
  }

  static void Count(std::atomic<uint64_t>& ops, std::atomic<uint64_t>& bytes, uint64_t length) {
    ops.fetch_add(1, std::memory_order_relaxed);
    bytes.fetch_add(length, std::memory_order_relaxed);
  }

  // The key is in: the read goes to the disk pool, or is answered now when it cannot be served.
  void StartObjectRead() {
    key_have_ = 0;
    std::shared_ptr<ObjectReader> disk = server_.served_->FindDisk(segment_);
    Status st;
    if (!disk) {
      st = Status(Code::kObjectNotFound, "no SSD tier serves segment " + std::to_string(segment_));
    } else if (object_length_ > server_.options_.max_object_read) {
      st = Status(Code::kInvalidParams, "object read too long");
    } else {
      st = CheckGrant(server_.served_->Find(segment_).grant_key, segment_, object_grant_, GrantAccess::kReadObject, 0,
                      object_length_, server_.Wall(), key_);
      if (!st.ok()) {
        server_.refused_grants_.fetch_add(1, std::memory_order_relaxed);
        if (uint64_t n = ++server_.refused_; LogOccurrence(n)) {
          YB_LOG_WARN("transfer server: refused an object read from {}: {} ({} requests refused so far)", peer_,
                      st.ToString(), n);
        }
      }
    }
    if (!st.ok()) {
      phase_ = Phase::kRequest;
      Answer(st.code());
      return;
    }
    phase_ = Phase::kDiskRead;
    server_.disk_pool_->Submit(
        [loop = &loop_, id = loop_id(), disk = std::move(disk), key = std::move(key_), length = object_length_] {
          std::shared_ptr<uint8_t[]> data(new (std::nothrow) uint8_t[length]);
          Status st;
          if (!data) {
            st = Status(Code::kInternal, "no memory for an object read of " + std::to_string(length) + " bytes");
          } else if (auto n = disk->ReadObject(key, data.get(), length); !n.ok()) {
            st = n.status();
          } else if (*n != length) {
            st = Status(Code::kInvalidRead, "object size differs");
          }
          loop->RunOn(id, [st, data = std::move(data), length](LoopSession& s) mutable {
            return static_cast<Session&>(*s.Inner()).OnObjectRead(st, std::move(data), length);
          });
        });
    key_.clear();
  }

  // Sends what the socket takes of the answers; false on a broken connection.
  bool Flush() {
    while (!out_.empty()) {
      iovec iov[kMaxIov];
      int k = 0;
      size_t skip = out_off_;  // already sent of the first answer
      for (auto it = out_.begin(); it != out_.end() && k + 2 <= kMaxIov; ++it) {
        if (skip < kResponseSize) iov[k++] = {it->header + skip, kResponseSize - skip};
        const size_t data_skip = skip > kResponseSize ? skip - kResponseSize : 0;
        if (it->length > data_skip) iov[k++] = {const_cast<uint8_t*>(it->data) + data_skip, it->length - data_skip};
        skip = 0;
      }
      ssize_t n = stream_->Send(iov, static_cast<size_t>(k));
      if (n < 0) {
        if (errno == EINTR) continue;
        return errno == EAGAIN || errno == EWOULDBLOCK;  // the rest waits for EPOLLOUT
      }
      for (size_t left = static_cast<size_t>(n); left > 0;) {
        Pending& p = out_.front();
        const size_t rest = kResponseSize + p.length - out_off_;
        if (left < rest) {
          out_off_ += left;
          break;
        }
        left -= rest;
        if (p.owned) owned_bytes_ -= p.length;
        out_.pop_front();
        out_off_ = 0;
      }
    }
    return true;
  }

  TransferServer& server_;
  EventLoop& loop_;
  const std::unique_ptr<net::Stream> stream_;
  const std::string peer_;
  Phase phase_ = Phase::kRequest;
  bool closing_ = false;  // refused: send what is answered, then close
  std::unique_ptr<uint8_t[]> in_;
  size_t in_len_ = 0, in_pos_ = 0;
  // The write being received (kPayload).
  std::shared_ptr<MappedRegion> write_hold_;
  uint8_t* write_at_ = nullptr;
  uint64_t write_left_ = 0;
  uint64_t write_length_ = 0;
  int64_t write_expires_ms_ = 0;  // its grant's
  // The SSD tier read being received or run (kObjectKey, kDiskRead).
  SegmentId segment_ = 0;
  uint64_t object_length_ = 0;
  Grant object_grant_;
  std::string key_;
  size_t key_have_ = 0;
  std::deque<Pending> out_;
  size_t out_off_ = 0;  // bytes of out_.front() already sent
  uint64_t owned_bytes_ = 0;
};

TransferServer::TransferServer(std::shared_ptr<LocalSegmentRegistry> served, Options options)
    : served_(std::move(served)), options_(std::move(options)) {}

TransferServer::~TransferServer() { Stop(); }

Status TransferServer::Start() {
  LoopGroup::Options go;
  go.name = "transfer server";
  go.listen = {options_.address, options_.port, options_.on_accept_failed, options_.keepalive};
  go.threads =
      options_.threads > 0 ? options_.threads : std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 2, 8);
  go.max_connections = options_.max_connections;
  go.max_connections_per_peer = options_.max_connections_per_peer;
  go.stall_timeout_ms = options_.stall_timeout_ms;
  disk_pool_ = std::make_unique<ThreadPool>(std::max(1, options_.disk_threads));
  if (!options_.security) options_.security = net::Security::None();
  auto group = std::make_unique<LoopGroup>(std::move(go), [this](EventLoop& loop, int fd, std::string peer) {
    return options_.security->Accept(net::Plane::kData, fd, peer,
                                     [this, &loop, peer](std::unique_ptr<net::Stream> stream, net::Peer) {
                                       return std::make_unique<Session>(*this, loop, std::move(stream), peer);
                                     });
  });
  if (Status st = group->Start(); !st.ok()) {
    disk_pool_.reset();
    return st;
  }
  group_ = std::move(group);
  port_ = group_->port();
  return Status::OK();
}

TransferServerStats TransferServer::stats() const {
  auto get = [](const std::atomic<uint64_t>& v) { return v.load(std::memory_order_relaxed); };
  TransferServerStats s;
  s.open_connections = open_connections();
  s.refused_connections = refused_connections();
  s.stalled_connections = stalled_closed();
  s.accept_failures = group_ ? group_->accept_failures() : 0;
  s.refused_requests = get(refused_);
  s.refused_grants = get(refused_grants_);
  s.reads = get(reads_);
  s.read_bytes = get(read_bytes_);
  s.writes = get(writes_);
  s.written_bytes = get(written_bytes_);
  s.disk_reads = get(disk_reads_);
  s.disk_read_bytes = get(disk_read_bytes_);
  return s;
}

void TransferServer::Stop() {
  if (!group_) return;
  group_->Stop();      // no connection comes in; the loops close theirs and start no SSD tier read
  disk_pool_.reset();  // the running ones finish; their answers go nowhere (RunOn on a stopped loop)
  group_.reset();
}

}  // namespace yb::tcp
