#include "transfer/shm/shm_transport.h"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>

#include "common/checksum.h"
#include "common/grant.h"
#include "common/log.h"
#include "common/unix_socket.h"
#include "transfer/shm/shm_server.h"
#include "transfer/shm/shm_wire.h"

namespace yb::shm {

namespace {

constexpr uint64_t kPiece = 4ULL << 20;  // between two looks at the grant's expiry
// Writes through a memfd of at most kGathered bytes each are staged (Stage: checked and hashed) and
// written together (WriteStaged), at most kStagedBytes at a time (their bytes mostly still in the
// cache when the kernel copies them), in runs of at most kRunBytes.
constexpr uint64_t kGathered = 64ULL << 10;
constexpr uint64_t kStagedBytes = 4ULL << 20;
constexpr uint64_t kRunBytes = 1ULL << 20;
// A larger write through a memfd goes in calls of this many bytes, each hashed just before (it is
// still in the second-level cache when the kernel copies it): against one call per 64 KiB checksum
// chunk, same-host 1 MiB puts 2.58 / 3.02 / 2.82 / 3.52 GB/s against 2.48 / 2.97 / 2.47 / 3.00,
// 4 MiB 4.56 / 4.58 / 4.27 / 4.75 against 4.34 / 4.07 / 3.20 / 3.86 (four rounds alternated,
// 2026-12-05; 1 MiB calls did no better in another three).
constexpr uint64_t kMemfdStep = 256ULL << 10;

}  // namespace

ShmTransport::ShmTransport(Resolver resolver, std::shared_ptr<Transport> fallback, Options options)
    : resolver_(std::move(resolver)), fallback_(std::move(fallback)), options_(std::move(options)) {}

TimeMs ShmTransport::Now() const {
  return (options_.clock ? *options_.clock : SteadyClock()).NowMs();
}

int64_t ShmTransport::Wall() const { return WallMs(options_.wall_clock); }

ShmTransport::Mapped::~Mapped() {
  if (fd >= 0) close(fd);
  if (alive >= 0) close(alive);
}

bool ShmTransport::Mapped::OwnerAlive() const {
  pollfd p{alive, POLLIN, 0};
  return poll(&p, 1, 0) == 0;  // anything to read (EOF) or a hang-up: the owner closed it, or died
}

bool ShmTransport::Reaches(SegmentId segment) const { return Find(segment) != nullptr; }

bool ShmTransport::Unreachable(SegmentId /*segment*/) const { return false; }  // memory: there while mapped

void ShmTransport::Probe(SegmentId /*segment*/) {}

size_t ShmTransport::mapped_segments() const {
  MutexLock lock(mu_);
  return mapped_.size();
}

std::shared_ptr<const ShmTransport::Mapped> ShmTransport::Find(SegmentId segment) const {
  if (options_.host_of) {
    const std::string host = options_.host_of(segment);
    if (!host.empty() && host != options_.my_host) return nullptr;  // another host's: not worth a try
  }
  auto endpoint = resolver_(segment);
  const TimeMs now = Now();
  {
    MutexLock lock(mu_);
    if (now - last_sweep_ >= 1000) {  // segments the directory forgot: their memory goes
      last_sweep_ = now;
      std::erase_if(mapped_, [&](const auto& e) { return !resolver_(e.first).has_value(); });
      std::erase_if(not_here_, [&](const auto& e) { return e.second <= now; });
    }
    if (!endpoint) {
      mapped_.erase(segment);
      return nullptr;
    }
    if (auto it = mapped_.find(segment); it != mapped_.end()) {
      if (!it->second->dead.load(std::memory_order_relaxed)) return it->second;
      YB_LOG_INFO("the process serving segment {} at {} died: its memory is unmapped here", segment, *endpoint);
      mapped_.erase(it);
      not_here_[*endpoint] = now + options_.retry_ms;
      return nullptr;
    }
    for (const std::string& k : {*endpoint, *endpoint + "#" + std::to_string(segment)}) {
      if (auto it = not_here_.find(k); it != not_here_.end() && now < it->second) return nullptr;
    }
  }
  auto m = Attach(segment, *endpoint);
  MutexLock lock(mu_);
  if (!m.ok()) {
    // Not on this host, or refusing us (the endpoint), or not sharing this segment: TCP, and asked
    // again after a pause.
    const bool segment_only = m.status().code() == Code::kSegmentNotFound;
    not_here_[segment_only ? *endpoint + "#" + std::to_string(segment) : *endpoint] = now + options_.retry_ms;
    if (m.status().code() != Code::kSegmentNotFound && m.status().code() != Code::kTransferFail) {
      YB_LOG_WARN("same-host transfers with {}: {}; over TCP (asked again in {} ms)", *endpoint,
                  m.status().ToString(), options_.retry_ms);
    }
    return nullptr;
  }
  YB_LOG_DEBUG("segment {} of {} mapped for same-host transfers ({} bytes)", segment, *endpoint, m->size);
  return mapped_.emplace(segment, std::make_shared<const Mapped>(std::move(m).value())).first->second;
}

Result<ShmTransport::Mapped> ShmTransport::Attach(SegmentId segment, const std::string& endpoint) const {
  int sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (sock < 0) return Status(Code::kTransferFail, std::string("socket: ") + std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() {
      if (fd >= 0) close(fd);
    }
  } closer{sock};
  timeval tv{1, 0};  // an owner that does not answer at once (paused, busy) is left to TCP
  setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(sock, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  sockaddr_un addr;
  const socklen_t addr_len = AbstractUnixAddress(SocketName(endpoint), &addr);
  if (connect(sock, reinterpret_cast<sockaddr*>(&addr), addr_len) != 0) {
    return Status(Code::kTransferFail, "no same-host owner");  // another host's, most likely
  }
  if (!SameUserPeer(sock)) return Status(Code::kIllegalClient, "the socket's owner is another user");
  constexpr size_t kLongest = kAnswerBase + kMaxGrantKey + net::kMacSize;
  std::string msg;
  int fd = -1;
  const bool heard = RecvWithFd(sock, msg, kLongest, &fd);
  if (fd >= 0) close(fd);
  if (!heard) return Status(Code::kTransferFail, "the owner did not answer");
  auto hello = DecodeHello(msg);
  if (!hello) {
    auto reply = DecodeReply(msg);
    if (reply && reply->code != 0) return Status(static_cast<Code>(reply->code), "the owner refused us (our user)");
    return Status(Code::kTransferFail, "the owner's hello is malformed");
  }
  const std::string key = options_.data_key ? options_.data_key() : std::string();
  Ask ask{segment, net::NewNonce(), {}};
  ask.mac = ProofOf(key, false, *hello, ask.nonce, segment);
  const std::string out = EncodeAsk(ask);
  if (send(sock, out.data(), out.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(out.size())) {
    return Status(Code::kTransferFail, "the owner went away");
  }
  const bool answered = RecvWithFd(sock, msg, kLongest, &fd);
  struct FdCloser {
    int& fd;
    ~FdCloser() {
      if (fd >= 0) close(fd);
    }
  } fd_closer{fd};
  auto reply = answered ? DecodeReply(msg) : std::nullopt;
  if (!reply) return Status(Code::kTransferFail, "the owner's answer is malformed");
  if (reply->code != 0) {
    return Status(static_cast<Code>(reply->code), reply->code == static_cast<int32_t>(Code::kIllegalClient)
                                                      ? "the owner refused our proof (another cluster's secret?)"
                                                      : "the owner does not share this segment");
  }
  const net::Mac want = ProofOf(key, true, *hello, ask.nonce, segment);
  if (CRYPTO_memcmp(want.data(), reply->mac.data(), want.size()) != 0) {
    return Status(Code::kIllegalClient, "the socket's owner could not prove the data-plane key");
  }
  if (fd < 0 || reply->offset > reply->region_size || reply->size > reply->region_size - reply->offset) {
    return Status(Code::kTransferFail, "the owner's answer names no memory that fits");
  }
  // Writes go through the owner's memfd (WriteAt) where shmem has no huge pages: through the
  // mapping, every 4 KiB page of a fresh range would first fault in here (about 10 us each on a
  // VM: puts into fresh ranges ran at 0.36 GB/s against 2.8 so), where the kernel copies into the
  // owner's pages, faulted in at mount. With huge pages (shmem_enabled advise, as the mapping asks,
  // or always) a fault maps 2 MiB and memcpy into the mapping beats the kernel's copy (4 MiB puts
  // 1.2-1.4x). -1: through the mapping.
  const bool huge = ShmemHugePagesOn(
      options_.shmem_huge_pages_path.empty() ? ShmemHugePages() : ShmemHugePages(options_.shmem_huge_pages_path));
  const int kept = huge ? -1 : fcntl(fd, F_DUPFD_CLOEXEC, 0);
  auto region = MappedRegion::MapShared(fd, reply->region_size);
  fd = -1;  // taken
  if (!region) return Status(Code::kTransferFail, "mapping the owner's memory failed");
  Mapped m;
  m.base = region->data() + reply->offset;
  m.region = std::move(region);
  m.size = reply->size;
  m.grant_key = std::move(reply->grant_key);
  m.alive = sock;  // kept: its end is the owner's death
  m.fd = kept;
  m.fd_offset = reply->offset;
  closer.fd = -1;
  return m;
}

Status ShmTransport::WriteAt(const Mapped& m, uint64_t offset, std::vector<iovec> iov) const {
  size_t first = 0;  // the first iovec with bytes left
  while (first < iov.size()) {
    const int count = static_cast<int>(std::min<size_t>(iov.size() - first, IOV_MAX));
    const ssize_t w = pwritev(m.fd, iov.data() + first, count, static_cast<off_t>(m.fd_offset + offset));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      return Status(Code::kTransferFail, std::string("writing the owner's memory failed: ") + std::strerror(errno));
    }
    memfd_written_.fetch_add(static_cast<uint64_t>(w), std::memory_order_relaxed);
    memfd_writes_.fetch_add(1, std::memory_order_relaxed);
    offset += static_cast<uint64_t>(w);
    for (auto left = static_cast<size_t>(w); left > 0;) {  // past what went; a part of one stays
      const size_t n = std::min(left, iov[first].iov_len);
      iov[first].iov_base = static_cast<uint8_t*>(iov[first].iov_base) + n;
      iov[first].iov_len -= n;
      left -= n;
      if (iov[first].iov_len == 0) ++first;
    }
    while (first < iov.size() && iov[first].iov_len == 0) ++first;
  }
  return Status::OK();
}

Status ShmTransport::Admit(const TransferRequest& r, const Mapped& m) const {
  if (r.length > 0 && !r.local) return Status(Code::kInvalidParams, "null local buffer");
  if (r.offset > m.size || r.length > m.size - r.offset) {
    return Status(Code::kInvalidParams, "request outside segment " + std::to_string(r.segment));
  }
  const bool write = r.op == TransferRequest::Op::kWrite;
  return CheckGrant(m.grant_key, r.segment, r.grant, write ? GrantAccess::kWrite : GrantAccess::kRead, r.offset,
                    r.length, Wall());
}

Status ShmTransport::Stage(const TransferRequest& r, const Mapped& m) const {
  YB_RETURN_IF_ERROR(Admit(r, m));
  if (r.checksum) r.checksum->Moved(r.object_pos, r.local, r.length);
  return Status::OK();
}

void ShmTransport::WriteStaged(const std::vector<TransferRequest>& batch, const std::vector<Staged>& staged,
                               std::vector<Status>& out) const {
  if (staged.empty()) return;
  // By place: a batch's placements alternate between the allocator's regions (a batch of 4 KiB
  // puts lands at 0, 1 GiB, 2 GiB, 4 KiB, ...), and those adjacent in a segment go in one run.
  // Writes that overlap (no two Puts' are, but a caller's batch may) keep the batch's order.
  std::vector<Staged> sorted = staged;
  auto place = [&](const Staged& s) { return std::pair(reinterpret_cast<uintptr_t>(s.m), batch[s.index].offset); };
  std::stable_sort(sorted.begin(), sorted.end(), [&](const Staged& a, const Staged& b) { return place(a) < place(b); });
  bool overlap = false;
  for (size_t k = 1; k < sorted.size() && !overlap; ++k) {
    const TransferRequest& prev = batch[sorted[k - 1].index];
    overlap = sorted[k - 1].m == sorted[k].m && prev.offset + prev.length > batch[sorted[k].index].offset;
  }
  const std::vector<Staged>& order = overlap ? staged : sorted;
  for (size_t begin = 0; begin < order.size();) {
    const Mapped& m = *order[begin].m;
    const uint64_t start = batch[order[begin].index].offset;
    uint64_t end = start;
    int64_t expires = INT64_MAX;
    std::vector<iovec> iov;
    size_t k = begin;
    for (; k < order.size(); ++k) {
      const TransferRequest& r = batch[order[k].index];
      if (order[k].m != &m || r.offset != end || (k > begin && end - start + r.length > kRunBytes) ||
          iov.size() == IOV_MAX) {
        break;
      }
      iov.push_back(iovec{r.local, r.length});
      end += r.length;
      expires = std::min(expires, r.grant.expires_ms);
    }
    if (Wall() <= expires) {
      const Status st = WriteAt(m, start, std::move(iov));
      for (size_t q = begin; q < k; ++q) out[order[q].index] = st;
    } else {  // a grant lapsed since it was checked: not a byte of its request lands
      for (size_t q = begin; q < k; ++q) {
        const TransferRequest& r = batch[order[q].index];
        out[order[q].index] = Wall() > r.grant.expires_ms
                                  ? Status(Code::kTransferFail, "the grant of segment " + std::to_string(r.segment) +
                                                                    " lapsed before its bytes were written")
                                  : WriteAt(m, r.offset, {iovec{r.local, r.length}});
      }
    }
    begin = k;
  }
}

Status ShmTransport::Move(const TransferRequest& r, const Mapped& m) const {
  YB_RETURN_IF_ERROR(Admit(r, m));
  const bool write = r.op == TransferRequest::Op::kWrite;
  uint8_t* remote = m.base + r.offset;
  auto* local = static_cast<uint8_t*>(r.local);
  const bool bounded = write || r.land_within_grant;  // no byte lands past the grant
  uint64_t next_look = kPiece;
  for (uint64_t got = 0; got < r.length;) {
    const uint64_t at = r.object_pos + got;
    const uint64_t step = write && m.fd >= 0       ? std::min(r.length - got, kMemfdStep)
                          : r.checksum || r.landed ? std::min(r.length - got, kChecksumChunk - at % kChecksumChunk)
                                                   : std::min(r.length - got, kPiece);
    if (bounded && got >= next_look) {
      if (Wall() > r.grant.expires_ms) {
        return Status(Code::kTransferFail, "the grant of segment " + std::to_string(r.segment) +
                                               " lapsed halfway: not a byte more lands");
      }
      next_look = got + kPiece;
    }
    if (write && m.fd >= 0) {
      // Through the memfd where Attach chose it (no shmem huge pages), hashed first and copied by
      // the kernel from the cache.
      if (r.checksum) r.checksum->Moved(at, local + got, step);
      YB_RETURN_IF_ERROR(WriteAt(m, r.offset + got, {iovec{local + got, step}}));
    } else {
      // Through the mapping: a reader touches its pages once, and memcpy beats pread on them after
      // that. Copied and hashed in one pass.
      uint8_t* to = write ? remote + got : local + got;
      const uint8_t* from = write ? local + got : remote + got;
      if (r.checksum) {
        r.checksum->CopyMoved(at, to, from, step, /*hash_copy=*/!write);
      } else {
        CopyInSteps(to, from, step);
      }
      if (!write && r.landed) r.landed->Landed(at, local + got, step);
    }
    got += step;
  }
  return Status::OK();
}

const uint8_t* ShmTransport::View(const TransferRequest& r, std::shared_ptr<const void>* keep) {
  if (r.op != TransferRequest::Op::kRead) return nullptr;
  auto m = Find(r.segment);
  if (!m || r.offset > m->size || r.length > m->size - r.offset) return nullptr;
  if (!CheckGrant(m->grant_key, r.segment, r.grant, GrantAccess::kRead, r.offset, r.length, Wall()).ok()) {
    return nullptr;
  }
  *keep = m;  // the mapping stays while the view does, even once its owner is gone
  return m->base + r.offset;
}

std::vector<Status> ShmTransport::Submit(const std::vector<TransferRequest>& batch) {
  std::vector<Status> out(batch.size());
  std::vector<TransferRequest> elsewhere;
  std::vector<size_t> where;
  // Requests written through a mapping (index, into `written`), and the mappings written to.
  std::vector<std::pair<size_t, size_t>> wrote;
  std::vector<std::shared_ptr<const Mapped>> written;
  // A batch's requests mostly name one segment: its mapping looked up once.
  SegmentId last = 0;
  std::shared_ptr<const Mapped> last_mapped;
  // Small writes through memfds, staged (admitted and hashed), written once a request of another
  // kind comes, kStagedBytes are staged, or the batch ends (WriteStaged).
  std::vector<Staged> staged;
  uint64_t staged_bytes = 0;
  auto write_staged = [&] {
    WriteStaged(batch, staged, out);
    staged.clear();
    staged_bytes = 0;
  };
  for (size_t i = 0; i < batch.size(); ++i) {
    const TransferRequest& r = batch[i];
    if (r.op != TransferRequest::Op::kReadObject && (!last_mapped || r.segment != last)) {
      last = r.segment;
      last_mapped = Find(r.segment);
    }
    auto m = r.op == TransferRequest::Op::kReadObject || r.segment != last ? nullptr : last_mapped;
    if (!m) {  // an SSD tier read (served by its owner's process), or the mapping went meanwhile
      elsewhere.push_back(r);
      where.push_back(i);
      continue;
    }
    const bool gathered = r.op == TransferRequest::Op::kWrite && m->fd >= 0 && r.length <= kGathered;
    if (!gathered || staged_bytes >= kStagedBytes) write_staged();  // in order: what follows may overlap them
    if (gathered) {
      out[i] = Stage(r, *m);
      if (out[i].ok()) {
        staged.push_back({m.get(), i});
        staged_bytes += r.length;
      }
    } else {
      out[i] = Move(r, *m);
    }
    if (r.op == TransferRequest::Op::kWrite) {
      if (written.empty() || written.back() != m) written.push_back(m);
      wrote.emplace_back(i, written.size() - 1);
    }
  }
  write_staged();
  // Whether the owners of what was written lived once the bytes were in place, asked once per
  // mapping (a system call): a write that landed in memory nobody serves any more fails here, as
  // it would over TCP, and the mapping goes at the next lookup. An owner that dies after this is
  // one that died after the write, which the master's liveness handles as for any other holder.
  std::vector<bool> lived(written.size(), true);
  for (size_t k = 0; k < written.size(); ++k) {
    if (!written[k]->OwnerAlive()) {
      lived[k] = false;
      written[k]->dead.store(true, std::memory_order_relaxed);
    }
  }
  for (auto [i, k] : wrote) {
    if (!lived[k] && out[i].ok()) {
      out[i] = Status(Code::kTransferFail,
                      "the process serving segment " + std::to_string(batch[i].segment) + " died while it was written");
    }
  }
  if (!elsewhere.empty()) {
    if (!fallback_) {
      for (size_t i : where) out[i] = Status(Code::kTransferFail, "segment " + std::to_string(batch[i].segment) +
                                                                      " is not reachable on this host");
    } else {
      auto res = fallback_->Submit(elsewhere);
      for (size_t k = 0; k < res.size(); ++k) out[where[k]] = std::move(res[k]);
    }
  }
  return out;
}

}  // namespace yb::shm
