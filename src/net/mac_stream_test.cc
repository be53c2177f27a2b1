// Integrity on the wire without TLS (issue 30 item 7): records of the bytes with a MAC each; any
// change on the way ends the connection before a changed byte reaches the reader.
#include "net/mac_stream.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace yb::net {
namespace {

struct Pair {
  int fd[2] = {-1, -1};
  Pair() {
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fd), 0);
    for (int f : fd) {
      ::fcntl(f, F_SETFL, ::fcntl(f, F_GETFL) | O_NONBLOCK);
      int small = 4096;  // the socket takes records in part: every resume path runs
      ::setsockopt(f, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
      ::setsockopt(f, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
    }
  }
  ~Pair() {
    for (int f : fd) ::close(f);
  }
};

WireKeys Keys(bool server, const std::string& secret = "the-secret-0123456789") {
  Nonce s{}, c{};
  s[0] = 1;
  c[0] = 2;
  return DeriveWireKeys(secret, s, c, "team-a", server);
}

// Reads from `in` until `want` bytes came, or it fails; sends `out` meanwhile in pieces of the
// caller's choosing, resending the unaccepted rest as TLS's rule says.
std::string Pump(Stream& writer, Stream& reader, const std::string& out, size_t want, std::mt19937& rng,
                 int* read_error = nullptr) {
  std::string got;
  size_t sent = 0;
  char buf[100000];
  for (int spins = 0; spins < 1000000 && got.size() < want; ++spins) {
    if (sent < out.size()) {
      // All that is left (a caller sends again what was not taken, as TLS wants), cut at random
      // places into up to three pieces, as a frame's header and body would come.
      std::vector<iovec> iov;
      size_t at = sent;
      for (int i = 0; i < 3 && at < out.size(); ++i) {
        size_t len = i == 2 ? out.size() - at : std::min<size_t>(out.size() - at, 1 + rng() % 150000);
        iov.push_back(iovec{const_cast<char*>(out.data() + at), len});
        at += len;
      }
      ssize_t w = writer.Send(iov.data(), iov.size());
      if (w > 0) sent += static_cast<size_t>(w);
      if (w < 0) {
        EXPECT_TRUE(errno == EAGAIN || errno == EWOULDBLOCK) << std::strerror(errno);
      }
    }
    ssize_t r = reader.Recv(buf, 1 + rng() % sizeof(buf));
    if (r > 0) got.append(buf, static_cast<size_t>(r));
    if (r == 0) break;
    if (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
      if (read_error) *read_error = errno;
      break;
    }
  }
  return got;
}

TEST(MacStreamTest, BytesArriveExactThroughPartialWritesAndRecordsOfEverySize) {
  Pair p;
  auto writer = MakeMacStream(MakePlainStream(p.fd[0]), Keys(false));
  auto reader = MakeMacStream(MakePlainStream(p.fd[1]), Keys(true));
  std::mt19937 rng(7);
  std::string data(3 * kMaxMacRecord + 12345, '\0');
  for (auto& ch : data) ch = static_cast<char>(rng());
  EXPECT_EQ(Pump(*writer, *reader, data, data.size(), rng), data);
  // And back the other way, on the same connection.
  std::string small = "a frame";
  EXPECT_EQ(Pump(*reader, *writer, small, small.size(), rng), small);
}

// What a host on the path might do to the records, each caught before a byte is handed out.
TEST(MacStreamTest, AChangedDroppedReplayedOrForeignRecordEndsTheConnection) {
  const std::string record_bytes(5000, 'x');
  for (int attack = 0; attack < 5; ++attack) {
    Pair a, b;  // writer -> a -> (the path) -> b -> reader
    auto writer = MakeMacStream(MakePlainStream(a.fd[0]), Keys(false));
    auto reader = MakeMacStream(MakePlainStream(b.fd[1]),
                                attack == 4 ? Keys(true, "another-secret-012345") : Keys(true));
    // Two records on the wire.
    std::string wire;
    for (int i = 0; i < 2; ++i) {
      ASSERT_EQ(writer->Send(record_bytes.data(), 100), 100);
      char buf[8192];
      ssize_t r;
      while ((r = ::read(a.fd[1], buf, sizeof(buf))) > 0) wire.append(buf, static_cast<size_t>(r));
    }
    const size_t one = 4 + 100 + kMacTagSize;
    ASSERT_EQ(wire.size(), 2 * one);
    std::string path = wire;
    if (attack == 0) path[10] ^= 1;                                   // a byte changed
    if (attack == 1) path = wire.substr(one);                         // the first record dropped
    if (attack == 2) path = wire.substr(0, one) + wire.substr(0, one);  // replayed
    if (attack == 3) path[0] = 99;                                    // its length changed
    ASSERT_EQ(::write(b.fd[0], path.data(), path.size()), static_cast<ssize_t>(path.size()));
    char buf[1000];
    ssize_t r = reader->Recv(buf, sizeof(buf));
    if (attack == 2) {  // the first, genuine record passes; its replay does not
      EXPECT_EQ(r, 100);
      r = reader->Recv(buf, sizeof(buf));
    }
    EXPECT_EQ(r, -1) << "attack " << attack;
    EXPECT_EQ(errno, EPROTO) << "attack " << attack;
  }
}

TEST(MacStreamTest, ARecordCutShortIsNotACleanEnd) {
  Pair a;
  auto writer = MakeMacStream(MakePlainStream(a.fd[0]), Keys(false));
  ASSERT_EQ(writer->Send("hello", 5), 5);
  char wire[64];
  ssize_t n = ::read(a.fd[1], wire, sizeof(wire));
  ASSERT_EQ(n, 4 + 5 + 16);
  Pair b;
  auto reader = MakeMacStream(MakePlainStream(b.fd[1]), Keys(true));
  ASSERT_EQ(::write(b.fd[0], wire, 10), 10);
  ::shutdown(b.fd[0], SHUT_WR);
  char buf[16];
  EXPECT_EQ(reader->Recv(buf, sizeof(buf)), -1);
  EXPECT_EQ(errno, EPROTO);
}

TEST(MacStreamTest, EachDirectionHasItsOwnKey) {
  const WireKeys server = Keys(true), client = Keys(false);
  EXPECT_EQ(server.send, client.recv);
  EXPECT_EQ(server.recv, client.send);
  EXPECT_NE(server.send, server.recv);  // a record cannot be sent back to its writer as the peer's
}

}  // namespace
}  // namespace yb::net
