// The TCP transport tests' fixture: a transfer server on 127.0.0.1 serving segment 5 (16 MiB
// between guard pages), transports to it, and grants minted as the master mints them.
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <asio.hpp>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

#include "common/clock.h"
#include "common/test_util.h"
#include "transfer/tcp/tcp_transport.h"
#include "transfer/tcp/transfer_server.h"
#include "transfer/tcp/wire.h"
#include "yuebing/client.h"

namespace yb::tcp {

using namespace std::chrono_literals;

// The test segment's grant key, and grants minted with it as the master would.
const std::string kKey(kGrantKeySize, 'K');
inline GrantAccess AccessOf(TransferRequest::Op op) {
  switch (op) {
    case TransferRequest::Op::kRead:
      return GrantAccess::kRead;
    case TransferRequest::Op::kWrite:
      return GrantAccess::kWrite;
    case TransferRequest::Op::kReadObject:
      return GrantAccess::kReadObject;
  }
  return GrantAccess::kNone;
}
inline Grant GrantFor(const TransferRequest& r, int64_t ttl_ms = 60'000) {
  return MintGrant(kKey, r.segment, AccessOf(r.op), r.offset, r.length, WallMs() + ttl_ms, r.key ? *r.key : "");
}

// One Submit on `t`, each request without a grant given the grant of exactly its range, as the
// master's replicas carry: the tests that are not about grants stay as they were.
struct Grants {
  Transport& t;
  std::vector<Status> Submit(std::vector<TransferRequest> batch) {
    for (auto& r : batch) {
      if (r.grant.access == GrantAccess::kNone) r.grant = GrantFor(r);
    }
    return t.Submit(batch);
  }
};

// The same as a transport of its own.
class Granting final : public Transport {
 public:
  explicit Granting(std::unique_ptr<Transport> inner) : inner_(std::move(inner)) {}
  bool Reaches(SegmentId s) const override { return inner_->Reaches(s); }
  std::vector<Status> Submit(const std::vector<TransferRequest>& batch) override {
    return Grants{*inner_}.Submit(batch);
  }

 private:
  std::unique_ptr<Transport> inner_;
};

class TcpTransportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    region_ = MappedRegion::Map(kGuard * 2 + kSeg);
    std::memset(region_->data(), 0xEE, region_->size());
    served_ = std::make_shared<LocalSegmentRegistry>();
    served_->Add(5, LocalSegment{region_, region_->data() + kGuard, kSeg, kKey});
    TransferServer::Options o;
    o.address = "127.0.0.1";
    o.max_request = 4 << 20;
    server_ = std::make_unique<TransferServer>(served_, o);
    ASSERT_TRUE(server_->Start().ok());
    std::string ep = "127.0.0.1:" + std::to_string(server_->port());
    TcpTransport::Options to;
    to.slice_size = 256 << 10;
    auto resolve = [ep](SegmentId s) -> std::optional<std::string> {
      if (s == 5 || s == 6) return ep;  // 6: a segment the server does not own
      return std::nullopt;
    };
    raw_ = std::make_unique<TcpTransport>(resolve, to);
    transport_ = std::make_unique<Granting>(std::make_unique<TcpTransport>(resolve, to));
  }

  // Another server of the same segments on 127.0.0.1, its options changed by `tweak`.
  std::unique_ptr<TransferServer> StartServer(const std::function<void(TransferServer::Options&)>& tweak) {
    TransferServer::Options o;
    o.address = "127.0.0.1";
    tweak(o);
    auto server = std::make_unique<TransferServer>(served_, o);
    EXPECT_TRUE(server->Start().ok());
    return server;
  }

  // Stops the server, and returns a transport on `clock` that finds segment 5 at its port (and no
  // other segment anywhere).
  std::unique_ptr<TcpTransport> StopServer(const Clock& clock) {
    const std::string ep = "127.0.0.1:" + std::to_string(server_->port());
    server_->Stop();
    TcpTransport::Options o;
    o.clock = &clock;
    return std::make_unique<TcpTransport>(
        [ep](SegmentId s) -> std::optional<std::string> {
          if (s == 5) return ep;
          return std::nullopt;
        },
        o);
  }

  bool GuardsIntact() const {
    for (uint64_t i = 0; i < kGuard; ++i) {
      if (region_->data()[i] != 0xEE || region_->data()[kGuard + kSeg + i] != 0xEE) return false;
    }
    return true;
  }

  static constexpr uint64_t kSeg = 16 << 20;
  static constexpr uint64_t kGuard = 4096;
  std::shared_ptr<MappedRegion> region_;
  std::shared_ptr<LocalSegmentRegistry> served_;
  std::unique_ptr<TransferServer> server_;
  std::unique_ptr<TcpTransport> raw_;     // sends requests as they are, grants and all
  std::unique_ptr<Transport> transport_;  // grants each request its own range
};

using Op = TransferRequest::Op;

// A raw connection to a transfer server, for the tests that look at connections themselves.
class RawConn {
 public:
  explicit RawConn(uint16_t port) : sock_(io_) { sock_.connect({asio::ip::make_address("127.0.0.1"), port}); }
  // Sends a request header and its payload, if any; a request without a grant gets the grant of
  // its range (an object read's names the payload, its key).
  void Send(WireRequest req, const std::string& payload = "") {
    if (req.grant.access == GrantAccess::kNone) {
      if (req.op == kOpReadObject) {
        req.grant = MintGrant(kKey, req.segment, GrantAccess::kReadObject, 0, req.length, WallMs() + 60'000, payload);
      } else {
        req.grant = MintGrant(kKey, req.segment, req.op == kOpRead ? GrantAccess::kRead : GrantAccess::kWrite,
                              req.offset, req.length, WallMs() + 60'000);
      }
    }
    uint8_t hdr[kRequestSize];
    req.Encode(hdr);
    asio::write(sock_, std::vector<asio::const_buffer>{asio::buffer(hdr), asio::buffer(payload)});
  }
  void SendBytes(const std::string& bytes) { asio::write(sock_, asio::buffer(bytes)); }
  // Reads one answer and its data; nullopt when the server closed the connection.
  std::optional<std::pair<Code, std::string>> Answer() {
    uint8_t hdr[kResponseSize];
    asio::error_code ec;
    asio::read(sock_, asio::buffer(hdr), ec);
    WireResponse resp;
    if (ec || !resp.Decode(hdr)) return std::nullopt;
    std::string data(resp.length, '\0');
    asio::read(sock_, asio::buffer(data), ec);
    if (ec) return std::nullopt;
    return std::pair{static_cast<Code>(resp.code), data};
  }
  // Reads `n` bytes of segment 5 from `offset`: a round trip that shows the connection is served.
  std::optional<std::string> Read(uint64_t offset, uint64_t n) {
    Send({kOpRead, 5, offset, n, {}});
    auto a = Answer();
    if (!a || a->first != Code::kOk) return std::nullopt;
    return a->second;
  }

 private:
  asio::io_context io_;
  asio::ip::tcp::socket sock_;
};

}  // namespace yb::tcp
