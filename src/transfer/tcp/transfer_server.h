// TransferServer: serves reads and writes of the segments this client owns, over TCP (wire.h).
//
// Every request is checked against its segment: an unknown segment or a range outside it is
// refused with an error and no byte outside is read or written (a refused write also closes the
// connection, since its payload is not consumed). One thread per connection, blocking I/O: data
// goes straight between the socket and segment memory. It also serves whole-object reads of the
// LOCAL_DISK replicas its SSD tier holds (registered with LocalSegmentRegistry::AddDisk).
// Thread-safe; Start/Stop from one thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "transfer/local_segments.h"
#include "transfer/tcp/wire.h"
#include "yuebing/status.h"

namespace yb::tcp {

struct WireRequest;

class TransferServer {
 public:
  struct Options {
    std::string address = "0.0.0.0";
    uint16_t port = 0;                      // 0: any free port
    uint64_t max_request = kDefaultMaxRequest;  // longest single request
    uint64_t max_object_read = 1ULL << 30;  // largest object read from the SSD tier at once
    int max_connections = 256;
    // Called (on the accepting thread) after each failed accept, before the pause that follows it
    // (10 ms, doubling up to 1 s while accepts keep failing, e.g. out of file descriptors).
    std::function<void()> on_accept_failed;
  };

  TransferServer(std::shared_ptr<LocalSegmentRegistry> served, Options options);
  ~TransferServer();
  Status Start();
  void Stop();
  uint16_t port() const { return port_; }
  uint64_t refused_requests() const { return refused_.load(); }

 private:
  struct Impl;
  template <typename Socket>
  void Serve(Socket& s);
  template <typename Socket, typename Answer, typename Flush>
  bool ServeObjectRead(Socket& s, const WireRequest& req, std::vector<uint8_t>& in, size_t& len, size_t& pos,
                       Answer& answer, Flush& flush);
  std::unique_ptr<Impl> impl_;
  std::shared_ptr<LocalSegmentRegistry> served_;
  Options options_;
  uint16_t port_ = 0;
  std::atomic<uint64_t> refused_{0};
};

}  // namespace yb::tcp
