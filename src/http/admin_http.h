// The HTTP side of our daemons (yb-master, yb-client): an endpoint served by cpp-httplib on a thread
// of its own, and the Prometheus text format their /metrics pages are written in.
#pragma once

#include <httplib.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <thread>

#include "common/histogram.h"
#include "common/resolve.h"
#include "net/security.h"

namespace yb::http {

class AdminHttp {
 public:
  AdminHttp() = default;
  AdminHttp(const AdminHttp&) = delete;
  AdminHttp& operator=(const AdminHttp&) = delete;
  ~AdminHttp() { Stop(); }

  // Add the handlers here before Start().
  httplib::Server& server() { return server_; }

  // Binds address:port (port 0: one the kernel picks, then port()) and serves on a thread; false (logged, naming `who`)
  // when it cannot bind. `loopback_only` (protected mode without a secret, net/security.h): a request from another host
  // is answered 403 with what to do, and nothing else.
  bool Start(std::string_view who, const std::string& address, int port, bool loopback_only) {
    if (loopback_only) {
      server_.set_pre_routing_handler([](const httplib::Request& req, httplib::Response& res) {
        if (IsAddressOfThisHost(req.remote_addr)) return httplib::Server::HandlerResponse::Unhandled;
        res.status = 403;
        res.set_content(net::ProtectedModeRefusal(req.remote_addr) + "\n", "text/plain");
        return httplib::Server::HandlerResponse::Handled;
      });
    }
    port_ = port == 0 ? server_.bind_to_any_port(address) : (server_.bind_to_port(address, port) ? port : -1);
    if (port_ < 0) {
      spdlog::error("{}: cannot serve HTTP on {}:{} (in use, or not an address of this host)", who, address, port);
      return false;
    }
    thread_ = std::thread([this] {
      server_.listen_after_bind();
      ended_ = true;
    });
    // httplib's stop() does nothing before the accept loop runs: a Stop() that came first would be
    // lost and its join would wait forever (a daemon refusing a later flag hung on its way out).
    while (!server_.is_running() && !ended_) std::this_thread::yield();
    return true;
  }

  // The port bound by Start().
  int port() const { return port_; }

  // Stops serving and waits for the thread (requests in progress finish first).
  void Stop() {
    if (!thread_.joinable()) return;
    server_.stop();
    thread_.join();
  }

 private:
  httplib::Server server_;
  std::thread thread_;
  int port_ = -1;
  std::atomic<bool> ended_{false};  // listen_after_bind returned
};

// Builds a page in Prometheus' text exposition format (version 0.0.4).
class PrometheusText {
 public:
  static constexpr const char* kContentType = "text/plain; version=0.0.4";

  void Gauge(std::string_view name, std::string_view help, uint64_t value) { One("gauge", name, help, value); }
  void Counter(std::string_view name, std::string_view help, uint64_t value) { One("counter", name, help, value); }

  // A metric with several samples, told apart by their labels: Family() once, then Sample() each.
  void Family(std::string_view type, std::string_view name, std::string_view help) {
    out_ += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
  }
  // `labels` as Prometheus writes them inside the braces, e.g. op="Put" (empty for none).
  void Sample(std::string_view name, std::string_view labels, uint64_t value) {
    if (labels.empty()) {
      out_ += fmt::format("{} {}\n", name, value);
    } else {
      out_ += fmt::format("{}{{{}}} {}\n", name, labels, value);
    }
  }

  // `v` as a label value: backslash, double quote and newline escaped.
  static std::string Label(std::string_view v) {
    std::string out;
    for (char c : v) {
      if (c == '\n') {
        out += "\\n";
        continue;
      }
      if (c == '\\' || c == '"') out += '\\';
      out += c;
    }
    return out;
  }

  // One histogram's samples (after Family("histogram", name, ...)): its buckets in seconds, sum
  // and count; `labels` as for Sample (empty for none).
  void Histogram(std::string_view name, std::string_view labels, const LatencyHistogram& h) {
    const std::string sep = labels.empty() ? "" : ",";
    for (size_t b = 0; b < kLatencyBoundsUs.size(); ++b) {
      Sample(fmt::format("{}_bucket", name),
             fmt::format("{}{}le=\"{}\"", labels, sep, static_cast<double>(kLatencyBoundsUs[b]) / 1e6), h.at_most(b));
    }
    const uint64_t count = h.count();
    Sample(fmt::format("{}_bucket", name), fmt::format("{}{}le=\"+Inf\"", labels, sep), count);
    const std::string braces = labels.empty() ? "" : fmt::format("{{{}}}", labels);
    out_ += fmt::format("{}_sum{} {}\n", name, braces, static_cast<double>(h.total_micros()) / 1e6);
    out_ += fmt::format("{}_count{} {}\n", name, braces, count);
  }

  const std::string& text() const { return out_; }

 private:
  void One(std::string_view type, std::string_view name, std::string_view help, uint64_t value) {
    Family(type, name, help);
    Sample(name, {}, value);
  }

  std::string out_;
};

}  // namespace yb::http
