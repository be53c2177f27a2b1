// ConnectDummy: a client of the real client of this host (dummy_server.h), with no master address
// and no network connection of its own. Its master is the real client's RPC socket (every master
// call forwarded). Its transports: the same-host one, for segments of this host whose owners share
// them (proving, with a secret, the data-plane key the real client gave it in the hello), and the
// relay for the rest: the real client moves those bytes between the pool and this process's shared memory
// (shm/shared_memory.h). Memory the real client cannot see (a caller's own) is staged through the
// local buffer, which is shared memory.
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <unordered_map>

#include "client/client_internal.h"
#include "client/dummy_server.h"
#include "client/segment_directory.h"
#include "common/grant.h"
#include "common/host_identity.h"
#include "common/log.h"
#include "common/segment_name.h"
#include "common/unix_socket.h"
#include "dummy.pb.h"
#include "rpc/channel.h"
#include "rpc/master_client.h"
#include "rpc/master_convert.h"
#include "transfer/shm/shared_memory.h"
#include "transfer/shm/shm_transport.h"

namespace yb {
namespace {

// A relayed batch waits for the real client as long as a master call does, plus the time its bytes
// take at 50 MB/s (the slowest path it may take: TCP to another host, busy).
std::chrono::milliseconds RelayDeadline(std::chrono::milliseconds base, uint64_t bytes) {
  return base + std::chrono::milliseconds(bytes / (50ULL << 10));
}

class RelayTransport final : public Transport {
 public:
  RelayTransport(std::shared_ptr<rpc::RpcChannel> channel, uint16_t port, std::chrono::milliseconds timeout)
      : channel_(std::move(channel)), port_(port), timeout_(timeout) {}
  std::string_view kind() const override { return "relay"; }
  ~RelayTransport() override {
    if (mem_ >= 0) close(mem_);
  }

  bool Reaches(SegmentId) const override { return true; }
  bool ReachesLocal(const void* p, uint64_t n) const override {
    return n == 0 || shm::SharedMemory::Process().Find(p, n).has_value();
  }

  std::vector<Status> Submit(const std::vector<TransferRequest>& batch) override {
    std::vector<Status> out(batch.size());
    DropIfClosed();
    pb::RelayBatch msg;
    std::vector<size_t> sent;
    uint64_t bytes = 0;
    for (size_t i = 0; i < batch.size(); ++i) {
      const TransferRequest& r = batch[i];
      auto found = shm::SharedMemory::Process().Find(r.local, r.length);
      if (!found) {
        out[i] = Status(Code::kInvalidParams, "memory the real client cannot see (not from its shared memory)");
        continue;
      }
      auto token = Token(*found);
      if (!token.ok()) {
        out[i] = token.status();
        continue;
      }
      if (r.op == TransferRequest::Op::kWrite && r.checksum) r.checksum->Moved(r.object_pos, r.local, r.length);
      pb::RelayRequest* q = msg.add_requests();
      q->set_op(static_cast<uint32_t>(r.op));
      q->set_segment(r.segment);
      q->set_offset(r.offset);
      q->set_region(*token);
      q->set_region_offset(found->offset);
      q->set_length(r.length);
      if (r.grant.access != GrantAccess::kNone) q->set_grant(EncodeGrant(r.grant));
      q->set_land_within_grant(r.land_within_grant);
      if (r.key) q->set_key(*r.key);
      sent.push_back(i);
      bytes += r.length;
    }
    if (sent.empty()) return out;
    auto reply = channel_->Call(kDummyRelay, msg.SerializeAsString(), RelayDeadline(timeout_, bytes));
    pb::RelayResponse resp;
    if (reply.ok() && (!resp.ParseFromString(*reply) || resp.results_size() != static_cast<int>(sent.size()))) {
      reply = Status(Code::kRpcFail, "malformed relay answer from the real client");
    }
    for (size_t j = 0; j < sent.size(); ++j) {
      const size_t i = sent[j];
      out[i] = reply.ok() ? rpc::FromPb(resp.results(static_cast<int>(j))) : reply.status();
      const TransferRequest& r = batch[i];
      if (out[i].ok() && r.op != TransferRequest::Op::kWrite) {
        if (r.checksum) r.checksum->Moved(r.object_pos, r.local, r.length);
        if (r.landed) r.landed->Landed(r.object_pos, r.local, r.length);
      }
    }
    if (!reply.ok()) Forget();  // the real client may have restarted: its tokens are gone with it
    return out;
  }

 private:
  // The real client's token for the region, handing it the region's memfd the first time.
  Result<uint64_t> Token(const shm::SharedMemory::Found& f) {
    MutexLock lock(mu_);
    if (auto it = tokens_.find(f.id); it != tokens_.end() && it->second.region.lock() == f.region) {
      return it->second.token;
    }
    if (mem_ < 0) {
      mem_ = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
      sockaddr_un addr;
      const socklen_t len = AbstractUnixAddress(DummyMemorySocket(port_), &addr);
      timeval tv{5, 0};
      setsockopt(mem_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
      setsockopt(mem_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
      if (mem_ < 0 || connect(mem_, reinterpret_cast<sockaddr*>(&addr), len) != 0) {
        const std::string why = std::strerror(errno);
        if (mem_ >= 0) close(mem_);
        mem_ = -1;
        return Status(Code::kTransferFail, "no real client at port " + std::to_string(port_) + " of this host: " + why);
      }
      tokens_.clear();
    }
    std::string ask(12, '\0');
    std::memcpy(ask.data(), "YBDM", 4);
    const uint64_t size = f.region->size();
    std::memcpy(ask.data() + 4, &size, 8);
    std::string answer;
    int none = -1;
    if (!SendWithFd(mem_, ask, f.region->fd()) || !RecvWithFd(mem_, answer, 16, &none) || answer.size() != 16 ||
        answer.compare(0, 4, "YBDR") != 0) {
      if (none >= 0) close(none);
      close(mem_);
      mem_ = -1;
      tokens_.clear();
      return Status(Code::kTransferFail, "the real client did not take this process's memory");
    }
    int32_t code = 0;
    uint64_t token = 0;
    std::memcpy(&code, answer.data() + 4, 4);
    std::memcpy(&token, answer.data() + 8, 8);
    if (code != 0) {
      return Status(static_cast<Code>(code), "the real client refused this process's memory");
    }
    tokens_[f.id] = Held{f.region, token};
    return token;
  }
  // The real client never speaks first on the memory connection: a readable one has ended (it
  // restarted, and knows none of our tokens any more).
  void DropIfClosed() {
    MutexLock lock(mu_);
    if (mem_ < 0) return;
    pollfd p{mem_, POLLIN, 0};
    if (poll(&p, 1, 0) == 0) return;
    close(mem_);
    mem_ = -1;
    tokens_.clear();
  }
  void Forget() {
    MutexLock lock(mu_);
    if (mem_ >= 0) close(mem_);
    mem_ = -1;
    tokens_.clear();
  }

  const std::shared_ptr<rpc::RpcChannel> channel_;
  const uint16_t port_;
  const std::chrono::milliseconds timeout_;
  struct Held {
    std::weak_ptr<MappedRegion> region;  // a freed and reused id is not mistaken for its successor
    uint64_t token = 0;
  };
  Mutex mu_;
  int mem_ GUARDED_BY(mu_) = -1;  // the memory connection: its end tells the real client we left
  std::unordered_map<uint64_t, Held> tokens_ GUARDED_BY(mu_);  // by region id
};

}  // namespace

void* AllocateSharedMemory(uint64_t size) { return shm::SharedMemory::Process().Allocate(size); }
Status FreeSharedMemory(void* ptr) { return shm::SharedMemory::Process().Free(ptr); }

Result<std::unique_ptr<Client>> ConnectDummy(const ClientConfig& config) {
  auto hp = ParseHostPort(config.real_client);
  if (!hp.ok()) {
    return Status(Code::kInvalidParams, "setup_dummy: server_address '" + config.real_client +
                                            "' is not host:port (the real client's, e.g. 127.0.0.1:50052)");
  }
  const uint16_t port = hp->second;
  const std::string socket = DummyRpcSocket(port);
  const auto timeout = std::chrono::milliseconds(config.rpc_timeout_ms);
  auto channel = std::make_shared<rpc::RpcChannel>(socket, 0, rpc::RpcChannel::Options{});
  pb::DummyHelloRequest hello;
  hello.set_pid(static_cast<uint32_t>(getpid()));
  // A real client opens its dummy sockets once its memory is mounted (faulting in gigabytes takes
  // seconds): one started beside this process may not serve yet. Asked again until the call's
  // deadline, as a master not yet up would be.
  struct Plumbing {
    RealClock clock;
    std::shared_ptr<rpc::RpcChannel> channel;
    std::shared_ptr<MasterApi> master;
    std::shared_ptr<SegmentDirectory> directory;
  };
  auto plumbing = std::make_shared<Plumbing>();
  const Clock& clock = plumbing->clock;
  const TimeMs give_up = clock.NowMs() + static_cast<TimeMs>(config.rpc_timeout_ms);
  auto said = channel->Call(kDummyHello, hello.SerializeAsString(), timeout);
  for (bool told = false; !said.ok() && said.status().code() == Code::kRpcFail && clock.NowMs() < give_up;) {
    if (!told) {
      YB_LOG_INFO("setup_dummy: no real client at port {} of this host yet; waiting up to {} ms", port,
                  config.rpc_timeout_ms);
      told = true;
    }
    clock.SleepUntil(std::min(give_up, clock.NowMs() + 100));
    channel = std::make_shared<rpc::RpcChannel>(socket, 0, rpc::RpcChannel::Options{});  // no backoff of the last
    said = channel->Call(kDummyHello, hello.SerializeAsString(), timeout);
  }
  pb::DummyHelloResponse who;
  if (!said.ok()) {
    return Status(said.status().code(),
                  "setup_dummy: no real client serves dummies at port " + std::to_string(port) +
                      " of this host (run yb-client --port " + std::to_string(port) +
                      " here; a dummy reaches it through a Unix socket, never the network): " + said.status().message());
  }
  if (!who.ParseFromString(*said) || who.version() != kDummyProtocolVersion) {
    return Status(Code::kRpcFail, "setup_dummy: the real client at port " + std::to_string(port) +
                                      " speaks another version of the dummy protocol");
  }
  // What the master is reached through: the real client's socket, every method forwarded.
  plumbing->channel = channel;
  plumbing->master = std::make_shared<rpc::MasterClient>(socket, 0, timeout);
  auto engine = std::make_shared<TransferEngine>();
  auto relay = std::make_shared<RelayTransport>(channel, port, timeout);
  if (config.same_host_transfers && who.segments_shared()) {
    // The pool's segments on this host (the real client's first) are mapped here and moved by one
    // memcpy of this process, as any process of the host moves them; the rest goes through the relay.
    plumbing->directory = std::make_shared<SegmentDirectory>(*plumbing->master, plumbing->clock);
    auto directory = plumbing->directory;
    shm::ShmTransport::Options o;
    if (!who.data_key().empty()) o.data_key = [key = who.data_key()] { return key; };
    o.host_of = [directory](SegmentId s) { return directory->HostOf(s); };
    o.my_host = HostIdentity();
    engine->AddTransport(std::make_shared<shm::ShmTransport>([directory](SegmentId s) { return directory->Resolve(s); },
                                                             relay, o));
  }
  engine->AddTransport(relay);
  ClientConfig effective = config;
  effective.local_hostname = who.hostname() + "/dummy-" + std::to_string(getpid());
  effective.master_server_addr = socket;  // what its logs name: the master is reached through it
  ClientParts parts;
  parts.master = plumbing->master;
  parts.local_segments = std::make_shared<LocalSegmentRegistry>();
  parts.engine = engine;
  parts.keepalive = plumbing;
  auto client = ClientInternal::Create(effective, std::move(parts));
  if (!client.ok()) return client;
  YB_LOG_INFO("dummy client '{}' of the real client at port {} of this host", effective.local_hostname, port);
  return client;
}

}  // namespace yb
