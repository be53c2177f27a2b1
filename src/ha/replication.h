// Replication of the metadata log from the leader to its standbys (proto/ha.proto).
//
// LogTail reads the leader's log files back, frame by frame, as the log writes them. A LogShipper
// (one per standby, on a thread of its own) ships a standby the leader's newest snapshot and then
// every record after it, as it is written, with ApplyLog calls on the standby's RPC server; each
// answer acknowledges the records up to the standby's last. A standby that has caught up is
// counted, after which the leader answers a change only once every counted standby acknowledged
// its record; once it also has every change answered before that, the leader lists it in etcd as
// able to take over. A standby that fails to answer is no longer counted (taken off etcd's list
// first); when it answers again it is asked where it stands, and if that is a position it was
// shipped to (with the digest of exactly those bytes) it is shipped the log from there (it was
// paused or cut off), else a snapshot (it lost what it had). It is counted again once caught up.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/worker.h"
#include "ha/meta_log.h"
#include "rpc/channel.h"
#include "yuebing/status.h"

namespace yb::pb {
class ApplyLogResponse;
}  // namespace yb::pb

namespace yb::ha {

// Frames of a log directory after a given record, in order. Not thread-safe: one reader each.
class LogTail {
 public:
  explicit LogTail(std::string dir) : dir_(std::move(dir)) {}
  ~LogTail();
  // Appends to `out` the frames numbered after `after` up to `up_to`, about `max_bytes` of them at
  // most. Returns the number of the last frame appended (`after` when none is there yet).
  // OBJECT_NOT_FOUND when the record after `after` is in no file any more (a snapshot took its
  // place: ship the snapshot).
  Result<uint64_t> Read(uint64_t after, uint64_t up_to, size_t max_bytes, std::string& out);

 private:
  Status OpenFileHolding(uint64_t seq);
  const std::string dir_;
  int fd_ = -1;
  uint64_t file_first_ = 0;  // the first record of the open file
  uint64_t next_ = 0;        // the record at `offset_`
  uint64_t offset_ = 0;
  std::vector<char> buf_;  // what was read of the file: grows once to the batch budget (4 MiB), kept
};

// The replication calls, beside the master's own (rpc/master_methods.h) on the same server.
enum class HaMethod : uint16_t { kFollow = 100, kApplyLog = 101 };

// The running hash of shipped bytes both ends keep (ApplyLogResponse::digest): `bytes` after
// `digest` (0 when a snapshot begins); no bytes leave it as it is.
uint64_t LogDigest(uint64_t digest, std::string_view bytes);

class LogShipper {
 public:
  // Where a standby's log may stand: its last record, and the LogDigest of every byte shipped to
  // it since its snapshot began.
  struct Position {
    uint64_t seq = 0;
    uint64_t digest = 0;
  };
  struct Options {
    std::string standby;  // host:port
    uint64_t epoch = 0;
    std::string leader;  // our address, for the standby
    std::chrono::milliseconds call_timeout{1000};
    std::chrono::milliseconds heartbeat{200};  // an empty ApplyLog when there is nothing to ship
    size_t max_batch_bytes = 4u << 20;
    std::shared_ptr<const net::Security> security;  // of the connection to the standby (null: none)
    const Clock* clock = nullptr;                   // its waits and the last Follow (null: SteadyClock())
    // Where the standby may stand (a dropped shipper's resume_points()): if it answers at one of
    // them, it is shipped the log from there rather than a snapshot.
    std::vector<Position> resume_from;
  };
  // What the shipper tells its owner (HaMaster), on the shipper's thread:
  struct Hooks {
    // Every record up to `seq` is on the standby.
    std::function<void(const std::string& standby, uint64_t seq)> acked;
    // The standby has caught up with what was written when its last batch was read: from now on
    // every change waits for it too. Returns the last record answered without it (the log's last
    // record): the standby may be listed as able to take over once it has that one.
    std::function<uint64_t(const std::string& standby)> caught_up;
    // The standby has every record `caught_up` named (true), or failed to answer (false), or
    // stopped being shipped to. Returns once what this means is in force (etcd told): the shipper
    // goes on only then. For true, whether etcd took it (false: the standby is no longer counted).
    std::function<bool(const std::string& standby, bool in_sync)> sync_changed;
    // A snapshot (at record `seq`) begins to be shipped: the standby starts over from it. Optional.
    std::function<void(const std::string& standby, uint64_t seq)> snapshot_begun;
  };

  LogShipper(Options options, MetaLog& log, Hooks hooks);
  ~LogShipper();  // stops the thread
  void Start();
  // Stops the thread (the destructor does too); the owner may then read resume_points().
  void Stop();
  // Once stopped: where the standby may stand, for a later shipper to go on from (Options::
  // resume_from). Empty when it must start over from a snapshot.
  std::vector<Position> resume_points() const;
  const std::string& standby() const { return options_.standby; }
  bool in_sync() const { return in_sync_.load(); }
  uint64_t acked() const { return acked_.load(); }
  // The last time the standby asked to be shipped to (Follow); the owner drops silent ones.
  void Touch() { last_follow_ = clock_.NowMs(); }
  TimeMs last_follow() const { return last_follow_.load(); }

 private:
  void Loop();
  // Ships the snapshot; false on a failed call.
  bool ShipSnapshot();
  // One ApplyLog call; the standby's last record, which must be `shipped_to` (kAnyRecord: any, for a
  // part of a snapshot), with the digest of what was shipped. INVALID_REPLICA when it is not.
  static constexpr uint64_t kAnyRecord = UINT64_MAX;
  Result<uint64_t> Call(const std::string& request, uint64_t shipped_to);
  // One ApplyLog call, its answer as the standby gave it (an error status is the call's).
  Result<pb::ApplyLogResponse> Send(const std::string& request);
  // The number of the next call (ApplyLogRequest::call), increasing across this process's shippers.
  static uint64_t NextCall();
  // A standby whose calls failed (paused, cut off, its answer lost) may still hold exactly what it
  // was shipped: asked where it stands (an empty ApplyLog), at one of resume_, it goes on from
  // there. kUnreachable: it did not answer (asked again later); kNo: a snapshot it is.
  enum class Resumed { kYes, kNo, kUnreachable };
  Resumed TryResume();
  // Counting a standby has two steps: it waits for changes once it caught up (kJoining), and is
  // listed in etcd as able to take over only once it has every change answered without it.
  enum class Sync { kOut, kJoining, kInSync };
  void NoteAcked(uint64_t acked, uint64_t written);
  void Drop();

  const Options options_;
  const Clock& clock_;
  MetaLog& log_;
  const Hooks hooks_;
  rpc::RpcChannel channel_;
  LogTail tail_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> in_sync_{false};  // listed (Sync::kInSync)
  Sync sync_ = Sync::kOut;            // the shipper thread's
  uint64_t join_seq_ = 0;             // kJoining: listed once acked reaches it
  std::atomic<uint64_t> acked_{0};
  std::atomic<TimeMs> last_follow_;
  bool snapshot_shipped_ = false;
  // Not shipped to since a failed call (!snapshot_shipped_): where the standby may stand, the
  // position before that call and the one after it. The shipper thread's, then the owner's once stopped.
  std::vector<Position> resume_;
  bool waiting_for_snapshot_ = false;  // records gone with no newer snapshot: said once, looked for each heartbeat
  uint64_t digest_ = 0;  // LogDigest of what was shipped since the snapshot; the shipper thread's
  Worker thread_;
};

// The standby's half: applies what a leader ships, to its log and to the image it would serve
// from. Not thread-safe: the RPC server's one handler thread for ApplyLog calls it... and so a
// mutex guards it against the HaMaster reading the image at promotion.
class LogApplier {
 public:
  explicit LogApplier(MetaLog& log, MasterImage& image) : log_(log), image_(image) {}
  // Applies one ApplyLog request's content; the last record applied.
  Result<uint64_t> Apply(bool snapshot_begin, uint64_t snapshot_seq, std::string_view snapshot_frames,
                         bool snapshot_done, std::string_view frames);
  // The first half of applying records (not while a snapshot is being received): writes them to
  // the log and counts them in the digest; the last record written. The image takes them with
  // ApplyRecords, in the same order, which may come after the answer (Replica).
  Result<uint64_t> Append(std::string_view frames);
  // The second half: the records of `frames` (as Append wrote them) applied to `image`.
  static Status ApplyRecords(std::string_view frames, MasterImage& image);
  bool receiving() const { return receiving_; }
  // LogDigest of every byte applied since the snapshot began.
  uint64_t digest() const { return digest_; }
  // The standby's own snapshot, when its log calls for one (MetaLog::SnapshotDue), so that its log
  // and its replay at a restart stay bounded as the leader's do. The caller holds its locks over
  // this applier and its image, up to date with the log: the image is copied under them, at the
  // snapshot's position in the log, then `copied` is called (the caller lets them go) while the
  // copy is written, so that shipped records are not held up for long.
  Status SnapshotIfDue(const std::function<void()>& copied);

 private:
  MetaLog& log_;
  MasterImage& image_;
  std::string snapshot_;  // a snapshot being received (its frames so far)
  uint64_t snapshot_seq_ = 0;
  bool receiving_ = false;
  uint64_t digest_ = 0;
};

}  // namespace yb::ha
