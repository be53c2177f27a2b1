// iperf3 for yb-bench: the machine's loopback bandwidth, the reference of its transfer figures.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

namespace yb::bench {

// iperf3 on loopback: one server process for the run, and a client per measurement. A
// measurement next to the one it is compared with is what makes a ratio meaningful on a VM whose
// speed changes from one minute to the next.
class Iperf3 {
 public:
  static constexpr uint16_t kPort = 5399;
  // The error, or "" once the server accepts connections.
  std::string Start() {
    if (std::system("command -v iperf3 >/dev/null 2>&1") != 0) return "iperf3 not installed";
    pid_ = fork();
    if (pid_ < 0) return "fork failed";
    if (pid_ == 0) {
      int null = open("/dev/null", O_WRONLY);
      dup2(null, 1);
      dup2(null, 2);
      const std::string port = std::to_string(kPort);
      execlp("iperf3", "iperf3", "-s", "-B", "127.0.0.1", "-p", port.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    for (int i = 0; i < 100; ++i) {  // up to ~5 s for the server to listen
      if (Listening()) return "";
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return "iperf3 server did not start";
  }
  ~Iperf3() {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    waitpid(pid_, nullptr, 0);
  }
  // One stream's loopback bandwidth in GB/s (received side), or a negative value on failure.
  // `amount` is iperf3's: "-t 3" (seconds) or "-n 512M" (bytes).
  double Measure(const std::string& amount) const {
    if (pid_ <= 0) return -1;
    std::string cmd = "iperf3 -c 127.0.0.1 -p " + std::to_string(kPort) + " " + amount + " -J 2>/dev/null";
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) return -1;
    std::string out;
    char buf[4096];
    while (size_t r = fread(buf, 1, sizeof(buf), p)) out.append(buf, r);
    pclose(p);
    try {
      return nlohmann::json::parse(out)["end"]["sum_received"]["bits_per_second"].get<double>() / 8e9;
    } catch (...) {
      return -1;
    }
  }

 private:
  static bool Listening() {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(kPort);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bool ok = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
    close(fd);
    return ok;
  }
  pid_t pid_ = -1;
};

}  // namespace yb::bench
