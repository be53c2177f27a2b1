// TcpTransport: reads and writes segments of other processes through their TransferServers.
//
// A segment's endpoint comes from a resolver (the client asks the master's segment list). Each
// endpoint has a pool of connections; a request is cut into slices (slice_size) and a batch's
// slices are spread over up to `parallel` connections, each pipelining its share. A failed
// connection fails its requests (TRANSFER_FAIL) and is dropped, except a pooled one its peer had
// closed before answering anything (the peer restarted while it idled; not a timeout): its slices go
// again once, on a new connection, and the endpoint's other idle connections are dropped.
//
// An endpoint that cannot be connected to (its node went away: refused, or no answer within
// connect_timeout, which bounds the host name's lookup too: common/resolve.h) is not tried again
// for a while, 100 ms after the first failure doubling to 2 s: meanwhile its requests fail at once
// (TRANSFER_FAIL, "unreachable"), so that a read moves on to its next replica without a connection
// attempt each, and a dead host costs a caller one connect_timeout per pause, not one per request.
// A connection that times out (no answer within io_timeout, or sent bytes unacknowledged for
// unacked_timeout: a host cut off or powered off sends no reset) counts as such a failure, and
// takes the endpoint's idle connections with it. Logged the 1st, 2nd, 4th, ... failure in a row,
// and when it is reached again. Probe() makes one such attempt on a thread of its own, so that a
// client learns that a holder it stopped reading from is back without a reader paying for it;
// while it is in flight, requests to that endpoint fail at once as during a pause.
// Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/backoff.h"
#include "common/clock.h"
#include "common/resolve.h"
#include "common/thread_annotations.h"
#include "common/thread_pool.h"
#include "net/security.h"
#include "transfer/tcp/wire.h"
#include "transfer/transport.h"

namespace yb::tcp {

class TcpTransport final : public Transport {
 public:
  std::string_view kind() const override { return "tcp"; }
  using Resolver = std::function<std::optional<std::string>(SegmentId)>;  // segment -> "host:port"
  struct Options {
    // 64 KiB, as Mooncake: with two connections per batch, a 1 MiB read came back ~12% sooner
    // than with 256 KiB slices (docs/performance.md).
    uint64_t slice_size = 64ULL << 10;
    int parallel = 2;  // connections one batch may use per endpoint
    int max_idle_per_endpoint = 8;
    // A pooled connection unused this long is closed: the pool does not keep descriptors open to
    // nodes that left (their endpoints are never asked for again) or that the cluster stopped using.
    std::chrono::milliseconds max_idle{60000};
    const Clock* clock = nullptr;  // for max_idle; null: the steady clock
    // The Unix-time clock a copy's landing is bounded by (land_within_grant), in milliseconds
    // (null: the system's, WallMs()).
    const Clock* wall_clock = nullptr;
    // A peer that stops answering (or reading) fails the transfer (TRANSFER_FAIL) after a wait
    // bounded by what is asked of it: io_floor plus the exchange's bytes at io_floor_bandwidth,
    // and io_timeout at most. A live server answers 64 KiB slices within milliseconds even when
    // busy; a stopped one (SIGSTOP, a swapped-out host) costs a read this long before it moves on
    // to the next replica, not a fixed 30 s.
    std::chrono::milliseconds io_timeout{30000};
    std::chrono::milliseconds io_floor{2000};
    uint64_t io_floor_bandwidth = 64ULL << 20;  // bytes per second
    // The wait an exchange of `bytes` may take between two signs of life of its peer.
    std::chrono::milliseconds IoBudget(uint64_t bytes) const;
    // A connection not made within this long fails the transfer: on a LAN a connection takes well
    // under a millisecond, and 3 s leaves room for two lost SYNs (the kernel resends after 1 s).
    std::chrono::milliseconds connect_timeout{3000};
    // A connection whose sent bytes stay unacknowledged this long fails (TCP_USER_TIMEOUT): its
    // host died or was cut off, and nothing else would tell before io_timeout. A live host
    // acknowledges within milliseconds even when its server is busy.
    std::chrono::milliseconds unacked_timeout{5000};
    // TLS and the data-plane key's proof at each new connection (null: neither).
    std::shared_ptr<const net::Security> security;

    static constexpr uint64_t kMinSlice = 4ULL << 10;
    static constexpr uint64_t kMaxSlice = kDefaultMaxRequest;  // what a transfer server accepts
    // Options with the slice size a client configured (`configured`, 0 for none) or else the one
    // Mooncake's users set in MC_SLICE_SIZE (`mc_slice_size`, the variable's value; empty when
    // unset). A configured size outside kMinSlice-kMaxSlice is an error (INVALID_PARAMS); a bad
    // MC_SLICE_SIZE is logged and the default kept, since an environment variable should not stop
    // a client.
    static Result<Options> WithSliceSize(uint64_t configured, std::string_view mc_slice_size);
  };

  TcpTransport(Resolver resolver, Options options);
  ~TcpTransport() override;
  bool Reaches(SegmentId segment) const override;
  std::vector<Status> Submit(const std::vector<TransferRequest>& batch) override;
  bool Unreachable(SegmentId segment) const override;
  void Probe(SegmentId segment) override;
  // Pooled connections, over every endpoint.
  size_t idle_connections() const;
  // Exchanges that ended because the peer stayed silent past their budget (IoBudget).
  uint64_t timeouts() const { return timeouts_.load(std::memory_order_relaxed); }

 private:
  struct Conn;
  struct Slice {
    size_t request;  // index in the batch
    TransferRequest piece;
  };
  // A pooled connection to `endpoint` (`*pooled` set) when `pooled` is given and one is idle, else a
  // new one; null with `*error` when it cannot connect.
  std::unique_ptr<Conn> Take(const std::string& endpoint, bool* pooled, Status* error);
  // A new connection to `endpoint`, its outcome recorded (NoteConnectLocked); null with `*error`.
  std::unique_ptr<Conn> Connect(const std::string& endpoint, Status* error);
  void Give(const std::string& endpoint, std::unique_ptr<Conn> c);
  // Runs slices (all to one endpoint) on one connection; failures go to `errors` by request.
  void RunSlices(const std::string& endpoint, const std::vector<Slice>& slices, std::vector<Status>& errors,
                 Mutex& errors_mu);
  // Sends the slices and reads their answers: OK when every answer came (refusals are in `errors`),
  // else the connection's failure; `*how` tells whether the peer had closed it before any answer
  // (a pooled connection that died while idle) or it timed out (a peer gone without a word).
  enum class ExchangeFailure { kOther, kClosedUnanswered, kTimedOut };
  Status Exchange(Conn& conn, const std::string& endpoint, const std::vector<Slice>& slices,
                  std::vector<Status>& errors, Mutex& errors_mu, ExchangeFailure* how);

  // Connection attempts that failed in a row, by endpoint, and when the next may be made.
  struct Unreached {
    Backoff pause{std::chrono::milliseconds(100), std::chrono::milliseconds(2000), 0, 0};
    uint64_t failures = 0;
    TimeMs retry_at = 0;
    std::string why;
  };
  // Whether `endpoint` may be connected to now; else `*error` says why not.
  bool MayConnectLocked(const std::string& endpoint, TimeMs now, Status* error) const REQUIRES(mu_);
  // Records the outcome of a connection attempt.
  void NoteConnectLocked(const std::string& endpoint, TimeMs now, const Status& result) REQUIRES(mu_);

  // Closes the pooled connections idle for longer than max_idle, and forgets the unreachable
  // endpoints nobody asked for in that long, at most once a second.
  void SweepIdleLocked(TimeMs now) REQUIRES(mu_);
  TimeMs Now() const;

  Resolver resolver_;
  NameResolver names_;
  Options options_;
  std::atomic<uint64_t> timeouts_{0};
  mutable Mutex mu_;
  std::unordered_map<std::string, std::vector<std::unique_ptr<Conn>>> idle_ GUARDED_BY(mu_);
  std::unordered_map<std::string, Unreached> unreachable_ GUARDED_BY(mu_);
  TimeMs last_sweep_ GUARDED_BY(mu_) = 0;
  std::unordered_set<std::string> probing_ GUARDED_BY(mu_);  // endpoints a Probe() is connecting to
  ThreadPool pool_;
  ThreadPool prober_{1};  // last: joined first, while what its probes use is still there
};

}  // namespace yb::tcp
