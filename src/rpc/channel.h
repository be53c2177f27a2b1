// RpcChannel: the client end of one connection to an RpcServer.
//
// Call() sends a request and waits for its reply until a deadline (RPC_TIMEOUT after it). Many
// threads may call at once: requests are pipelined on the one connection and a reader thread
// hands each reply to its caller by request id. A broken connection fails the calls in flight with
// RPC_FAIL; the next call reconnects, no sooner than an exponential backoff (100 ms doubling to
// 5 s) allows. Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

#include "rpc/frame.h"
#include "yuebing/status.h"

namespace yb::rpc {

class RpcChannel {
 public:
  struct Options {
    std::chrono::milliseconds connect_timeout{2000};
    std::chrono::milliseconds backoff_min{100};
    std::chrono::milliseconds backoff_max{5000};
    uint32_t max_body = kDefaultMaxBody;
  };

  RpcChannel(std::string host, uint16_t port, Options options);
  RpcChannel(std::string host, uint16_t port) : RpcChannel(std::move(host), port, Options{}) {}
  ~RpcChannel();
  RpcChannel(const RpcChannel&) = delete;
  RpcChannel& operator=(const RpcChannel&) = delete;

  Result<std::string> Call(uint16_t method, const std::string& body, std::chrono::milliseconds deadline);
  // Sends a request without waiting for (or keeping) its reply. OK once the request is written.
  Status Send(uint16_t method, const std::string& body, std::chrono::milliseconds connect_deadline);
  const std::string& target() const { return target_; }

 private:
  struct Connection;
  Status EnsureConnected(std::unique_lock<std::mutex>& lock, std::chrono::milliseconds budget);
  void ReadLoop(std::shared_ptr<Connection> conn);
  void FailAll(const std::shared_ptr<Connection>& conn, const Status& why);

  std::string host_;
  uint16_t port_;
  std::string target_;
  Options options_;
  std::mutex mu_;  // guards everything below
  std::shared_ptr<Connection> conn_;
  std::chrono::steady_clock::time_point next_attempt_{};
  std::chrono::milliseconds backoff_;
  uint32_t next_id_ = 1;
};

}  // namespace yb::rpc
