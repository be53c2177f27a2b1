#include "ha/replication.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "common/log.h"
#include "common/segment_name.h"
#include "ha.pb.h"
#include "ha/log_format.h"
#include "rpc/master_client.h"
#include "rpc/master_convert.h"

namespace yb::ha {
namespace {

std::vector<uint64_t> LogFiles(const std::string& dir) {
  std::vector<uint64_t> out;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      if (auto s = ParseFileName(e->d_name, "log-", ".ybl")) out.push_back(*s);
    }
    ::closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

rpc::RpcChannel::Options ChannelOptions(std::chrono::milliseconds timeout, std::shared_ptr<const net::Security> sec) {
  rpc::RpcChannel::Options o;
  o.connect_timeout = timeout;
  o.security = std::move(sec);
  o.tenant.clear();  // masters prove the cluster secret, for no tenant
  o.backoff_min = std::chrono::milliseconds(50);
  o.backoff_max = std::chrono::milliseconds(500);
  return o;
}

std::pair<std::string, uint16_t> HostPort(const std::string& address) {
  auto hp = ParseHostPort(address);
  return hp.ok() ? *hp : std::make_pair(address, uint16_t{0});
}

}  // namespace

uint64_t LogDigest(uint64_t digest, std::string_view bytes) {
  return bytes.empty() ? digest : XXH3_64bits_withSeed(bytes.data(), bytes.size(), digest);
}

// ---- LogTail

LogTail::~LogTail() {
  if (fd_ >= 0) ::close(fd_);
}

Status LogTail::OpenFileHolding(uint64_t seq) {
  std::vector<uint64_t> files = LogFiles(dir_);
  // The file holding `seq`: the last that starts at or before it.
  auto it = std::upper_bound(files.begin(), files.end(), seq);
  if (it == files.begin()) return Status(Code::kObjectNotFound, "record " + std::to_string(seq) + " is in no log file");
  const uint64_t first = *std::prev(it);
  if (fd_ >= 0) ::close(fd_);
  const std::string path = dir_ + "/" + LogFileName(first);
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) return Status(Code::kObjectNotFound, "cannot open " + path + ": " + std::strerror(errno));
  file_first_ = first;
  next_ = first;
  offset_ = 0;
  return Status::OK();
}

Result<uint64_t> LogTail::Read(uint64_t after, uint64_t up_to, size_t max_bytes, std::string& out) {
  if (up_to <= after) return after;
  if (fd_ < 0 || next_ != after + 1) YB_RETURN_IF_ERROR(OpenFileHolding(after + 1));
  uint64_t last = after;
  bool read_again = false;  // a file after a gap was seen: one more read of this one tells
  while (last < up_to && out.size() < max_bytes) {
    // Up to what is still wanted (64 KiB at least, so that a record longer than the rest of the
    // budget still goes in a batch of its own), into a buffer kept between calls: sized afresh for
    // each call, a batch of a few records cost the allocation and zeroing of max_bytes (4 MiB),
    // 18% of a leader's CPU with a standby. The kernel copies only what the file holds.
    const size_t want = std::max<size_t>(1 << 16, max_bytes - out.size());
    if (buf_.size() < want) buf_.resize(want);
    ssize_t n = ::pread(fd_, buf_.data(), want, static_cast<off_t>(offset_));
    if (n < 0) return Status(Code::kFileReadFail, std::string("reading the log: ") + std::strerror(errno));
    FrameReader r(std::string_view(buf_.data(), static_cast<size_t>(n)));
    size_t used = 0;
    bool progressed = false;
    while (auto f = r.Next()) {
      if (f->seq > up_to) break;
      if (f->seq != next_) return Status(Code::kInternal, "log file numbering jumps at " + std::to_string(f->seq));
      if (f->seq > after) {
        AppendFrame(f->seq, f->payload, out);
        last = f->seq;
      }
      ++next_;
      used = r.good_bytes();
      progressed = true;
      if (out.size() >= max_bytes) break;
    }
    offset_ += used;
    if (progressed) {
      read_again = false;
      continue;
    }
    // Nothing more in this file: the rest (if written already) is in the next one.
    std::vector<uint64_t> files = LogFiles(dir_);
    auto nxt = std::upper_bound(files.begin(), files.end(), file_first_);
    if (nxt == files.end()) break;  // not written yet
    if (*nxt != next_) {
      // The next file starts past what this one holds: records were never written (a log that
      // failed goes on after a snapshot that holds them). Read once more (this file may have grown
      // before the next began), then the snapshot it is.
      if (read_again) {
        return Status(Code::kObjectNotFound, "the log goes on at " + std::to_string(*nxt) + " after " +
                                                 std::to_string(next_ - 1) + ": a snapshot holds the records between");
      }
      read_again = true;
      continue;
    }
    YB_RETURN_IF_ERROR(OpenFileHolding(next_));
  }
  return last;
}

// ---- LogShipper

LogShipper::LogShipper(Options options, MetaLog& log, Hooks hooks)
    : options_(std::move(options)),
      clock_(options_.clock ? *options_.clock : SteadyClock()),
      log_(log),
      hooks_(std::move(hooks)),
      channel_(HostPort(options_.standby).first, HostPort(options_.standby).second,
               ChannelOptions(options_.call_timeout, options_.security)),
      tail_(log.dir()),
      last_follow_(clock_.NowMs()),
      resume_(options_.resume_from) {}

LogShipper::~LogShipper() { Stop(); }

void LogShipper::Stop() {
  stop_ = true;
  thread_.Join();
}

std::vector<LogShipper::Position> LogShipper::resume_points() const {
  if (snapshot_shipped_) return {Position{acked_.load(), digest_}};
  return resume_;
}

void LogShipper::Start() {
  thread_ = Worker("yb-log-ship", [this] { Loop(); });
}

uint64_t LogShipper::NextCall() {
  // One counter for every shipper of this process: a standby's next shipper numbers on from its last.
  static std::atomic<uint64_t> calls{0};
  return calls.fetch_add(1, std::memory_order_relaxed) + 1;
}

Result<pb::ApplyLogResponse> LogShipper::Send(const std::string& request) {
  auto reply = channel_.Call(static_cast<uint16_t>(HaMethod::kApplyLog), request, options_.call_timeout);
  if (!reply.ok()) return reply.status();
  pb::ApplyLogResponse resp;
  if (!resp.ParseFromString(*reply)) return Status(Code::kRpcFail, "ApplyLog reply does not parse");
  if (Status st = rpc::FromPb(resp.status()); !st.ok()) return st;
  return resp;
}

Result<uint64_t> LogShipper::Call(const std::string& request, uint64_t shipped_to) {
  auto answer = Send(request);
  if (!answer.ok()) return answer.status();
  const pb::ApplyLogResponse& resp = *answer;
  // A standby holds exactly what it was shipped, and proves it: an answer beyond that, or whose
  // digest is not that of the bytes shipped, is not taken (it would count a standby that lacks
  // acknowledged changes).
  if ((shipped_to != kAnyRecord && resp.last_seq() != shipped_to) || resp.digest() != digest_) {
    return Status(Code::kInvalidReplica, "the standby answered record " + std::to_string(resp.last_seq()) +
                                             (resp.digest() != digest_ ? " with a digest not of what it was shipped"
                                                                       : "") +
                                             " where it was shipped up to " + std::to_string(shipped_to));
  }
  return resp.last_seq();
}

void LogShipper::Drop() {
  if (sync_ == Sync::kOut) return;
  (void)hooks_.sync_changed(options_.standby, false);  // in force (etcd told) when it returns
  in_sync_ = false;
  sync_ = Sync::kOut;
}

void LogShipper::NoteAcked(uint64_t acked, uint64_t written) {
  acked_ = acked;
  hooks_.acked(options_.standby, acked);
  // Caught up with what was written when this batch was read: changes wait for it from now on.
  // Records answered before that moment may still be missing on it, so it is listed (may take
  // over) only once it has the last of them.
  if (sync_ == Sync::kOut && acked >= written) {
    join_seq_ = hooks_.caught_up(options_.standby);
    sync_ = Sync::kJoining;
  }
  if (sync_ == Sync::kJoining && acked >= join_seq_) {
    if (hooks_.sync_changed(options_.standby, true)) {
      sync_ = Sync::kInSync;
      in_sync_ = true;
      YB_LOG_INFO("replication: standby {} caught up at record {}: counted", options_.standby, acked);
    } else {
      sync_ = Sync::kOut;
    }
  }
}

LogShipper::Resumed LogShipper::TryResume() {
  pb::ApplyLogRequest q;  // no records: the standby answers where it stands
  q.set_epoch(options_.epoch);
  q.set_leader(options_.leader);
  q.set_call(NextCall());
  q.set_in_sync(false);
  auto answer = Send(q.SerializeAsString());
  if (!answer.ok()) {
    // No answer: asked again later. An answer that refuses (a new leader's first call must be a
    // snapshot; its log failed) is no place to go on from.
    if (IsUnavailable(answer.code())) return Resumed::kUnreachable;
    YB_LOG_INFO("replication: standby {} answers again ({}): shipped a snapshot", options_.standby,
                answer.status().ToString());
    return Resumed::kNo;
  }
  // At a position it was shipped, with the digest of exactly those bytes: what it holds is ours.
  for (const Position& p : resume_) {
    if (answer->last_seq() == p.seq && answer->digest() == p.digest) {
      acked_ = p.seq;
      digest_ = p.digest;
      YB_LOG_INFO("replication: standby {} answers again at record {}: shipped the log from there", options_.standby,
                  p.seq);
      return Resumed::kYes;
    }
  }
  YB_LOG_INFO("replication: standby {} answers again at record {}, not where it was shipped to: shipped a snapshot",
              options_.standby, answer->last_seq());
  return Resumed::kNo;
}

bool LogShipper::ShipSnapshot() {
  uint64_t seq = log_.latest_snapshot();
  std::string contents;
  while (seq != 0) {
    auto data = ReadWholeFile(log_.SnapshotPath(seq));
    if (data.ok()) {
      contents = std::move(*data);
      break;
    }
    // A newer snapshot replaced it while it was being opened: that one, at once.
    if (const uint64_t now = log_.latest_snapshot(); now != seq) {
      seq = now;
      continue;
    }
    YB_LOG_WARN("replication: cannot read snapshot {} for {}: {}", seq, options_.standby, data.status().ToString());
    return false;
  }
  if (hooks_.snapshot_begun) hooks_.snapshot_begun(options_.standby, seq);
  size_t pos = 0;
  do {
    const size_t n = std::min(options_.max_batch_bytes, contents.size() - pos);
    pb::ApplyLogRequest q;
    q.set_epoch(options_.epoch);
    q.set_leader(options_.leader);
    q.set_call(NextCall());
    q.set_in_sync(false);
    q.set_snapshot_begin(pos == 0);
    q.set_snapshot_seq(seq);
    q.set_snapshot_frames(contents.substr(pos, n));
    q.set_snapshot_done(pos + n == contents.size());
    if (pos == 0) digest_ = 0;
    digest_ = LogDigest(digest_, q.snapshot_frames());
    // Until the last part, a standby answers the record it had before (its log is replaced at the end).
    auto r = Call(q.SerializeAsString(), pos + n == contents.size() ? seq : kAnyRecord);
    if (!r.ok()) {
      YB_LOG_WARN("replication: shipping snapshot {} to {}: {}", seq, options_.standby, r.status().ToString());
      return false;
    }
    pos += n;
  } while (pos < contents.size());
  acked_ = seq;
  hooks_.acked(options_.standby, seq);
  return true;
}

void LogShipper::Loop() {
  YB_LOG_INFO("replication: shipping the log to standby {}", options_.standby);
  std::string frames;
  const TimeMs heartbeat = options_.heartbeat.count();
  TimeMs last_call = clock_.NowMs() - heartbeat;
  while (!stop_) {
    if (!snapshot_shipped_ && !resume_.empty()) {
      const Resumed r = TryResume();
      if (r == Resumed::kUnreachable) {
        Drop();
        clock_.SleepUntil(clock_.NowMs() + heartbeat);
        continue;
      }
      snapshot_shipped_ = r == Resumed::kYes;
      resume_.clear();
    }
    if (!snapshot_shipped_) {
      if (!ShipSnapshot()) {
        Drop();
        clock_.SleepUntil(clock_.NowMs() + heartbeat);
        continue;
      }
      snapshot_shipped_ = true;
    }
    const uint64_t written = log_.written_seq();
    frames.clear();
    auto read = tail_.Read(acked_, written, options_.max_batch_bytes, frames);
    if (!read.ok()) {
      if (read.code() == Code::kObjectNotFound) {  // a snapshot replaced what the standby needs next
        Drop();
        if (log_.latest_snapshot() > acked_) {
          snapshot_shipped_ = false;
          continue;
        }
        // No snapshot past what the standby has holds them yet (a failed log goes on after records
        // it never wrote, until its next snapshot): shipping the same one again would not help, and
        // went round at once, for ever. Look again each heartbeat.
        if (!waiting_for_snapshot_) {
          YB_LOG_WARN(
              "replication: the records after {} are in no log file and no newer snapshot holds them yet "
              "({}); standby {} waits for the next snapshot",
              acked_.load(), read.status().ToString(), options_.standby);
          waiting_for_snapshot_ = true;
        }
        clock_.SleepUntil(clock_.NowMs() + heartbeat);
        continue;
      }
      YB_LOG_WARN("replication: reading the log for {}: {}", options_.standby, read.status().ToString());
      clock_.SleepUntil(clock_.NowMs() + heartbeat);
      continue;
    }
    waiting_for_snapshot_ = false;
    const bool idle = frames.empty();
    if (idle && clock_.NowMs() - last_call < heartbeat) {
      log_.WaitWritten(acked_, options_.heartbeat);
      continue;
    }
    pb::ApplyLogRequest q;
    q.set_epoch(options_.epoch);
    q.set_leader(options_.leader);
    q.set_call(NextCall());
    q.set_in_sync(in_sync_.load());
    q.set_frames(frames);
    last_call = clock_.NowMs();
    const Position before{acked_.load(), digest_};
    digest_ = LogDigest(digest_, frames);
    auto r = Call(q.SerializeAsString(), *read);
    if (!r.ok()) {
      if (in_sync_) {
        YB_LOG_WARN("replication: standby {} did not answer ({}): no longer counted", options_.standby,
                    r.status().ToString());
      }
      Drop();
      // It holds what it had before this call, or with it (only its answer lost), or neither (it
      // lost what it had): asked which once it answers again (TryResume).
      snapshot_shipped_ = false;
      resume_ = {before};
      if (!frames.empty()) resume_.push_back(Position{*read, digest_});
      clock_.SleepUntil(clock_.NowMs() + heartbeat);
      continue;
    }
    NoteAcked(*r, written);
  }
}

// ---- LogApplier

Result<uint64_t> LogApplier::Apply(bool snapshot_begin, uint64_t snapshot_seq, std::string_view snapshot_frames,
                                   bool snapshot_done, std::string_view frames) {
  if (snapshot_begin) {
    snapshot_.clear();
    snapshot_seq_ = snapshot_seq;
    receiving_ = true;
    digest_ = 0;
  }
  if (receiving_) {
    snapshot_.append(snapshot_frames.data(), snapshot_frames.size());
    digest_ = LogDigest(digest_, snapshot_frames);
    if (!snapshot_done) return log_.last_seq();
    MasterImage image;
    uint64_t records = 0;
    if (snapshot_seq_ != 0 && !LoadSnapshotContents(snapshot_, snapshot_seq_, &image, &records)) {
      receiving_ = false;
      return Status(Code::kInvalidParams, "the shipped snapshot is not intact");
    }
    YB_RETURN_IF_ERROR(log_.ReplaceWithSnapshot(snapshot_seq_, snapshot_));
    image_.TakeSnapshotState(std::move(image));
    receiving_ = false;
    snapshot_.clear();
    YB_LOG_INFO("replication: snapshot {} received ({} records): {}", snapshot_seq_, records, image_.Summary());
  }
  if (!frames.empty()) {
    YB_RETURN_IF_ERROR(Append(frames).status());
    YB_RETURN_IF_ERROR(ApplyRecords(frames, image_));
  }
  return log_.last_seq();
}

Result<uint64_t> LogApplier::Append(std::string_view frames) {
  if (receiving_) return Status(Code::kInvalidParams, "records shipped before the snapshot was done");
  YB_RETURN_IF_ERROR(log_.AppendFrames(frames));
  digest_ = LogDigest(digest_, frames);
  return log_.last_seq();
}

Status LogApplier::ApplyRecords(std::string_view frames, MasterImage& image) {
  FrameReader r(frames);
  pb::LogRecord rec;
  while (auto f = r.Next()) {
    if (!rec.ParseFromArray(f->payload.data(), static_cast<int>(f->payload.size()))) {
      return Status(Code::kInvalidParams, "a shipped record does not parse");
    }
    image.Apply(std::move(rec));
  }
  return Status::OK();
}

Status LogApplier::SnapshotIfDue(const std::function<void()>& copied) {
  if (receiving_ || !log_.SnapshotDue()) return Status::OK();  // a snapshot being received replaces the log
  const uint64_t next_object_id = image_.next_object_id;
  return log_.Snapshot(
      [&](const auto& emit) {
        // Called once the log has moved to a new file: the image holds every record before it.
        GoneKeys gone = std::move(image_.gone);  // not in snapshots: not copied
        MasterImage copy = image_;
        image_.gone = std::move(gone);
        copied();
        copy.Emit(emit);
      },
      next_object_id);
}

}  // namespace yb::ha
