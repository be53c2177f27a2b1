// MetaLog: the master's metadata log, in a directory of its own (yb-master's --metadata_dir).
//
// The master appends a record for each change (MetaSink, master/meta_sink.h). Flush() writes what
// has been appended to the current log file: the RPC server's threads call it after each batch of
// calls (ReplyGate::Flush), so a batch costs one write and no hand-off to another thread. Syncer
// threads sync the file (fdatasync) over and over, each sync covering every record written before
// it began: group commit, and no write waits for a sync in progress. At kAlways there are two, so
// that a record written while one sync is in flight starts the next at once (its answer waits one
// sync, not the rest of the one in flight and then another). They also write what other threads
// appended (background steps) and nobody flushed. A change is acknowledged only once its
// record is released, which the durability level decides (Options::durability):
//   - kProcess (yb-master's default): every record once written to the file, so it outlives a
//     killed master process; the syncer syncs at least every sync_interval, so a power loss of the
//     machine loses at most that much;
//   - kAlways: an unfinished Put's reservation (PutStart) once written (its writer, who is copying
//     into the space, keeps it), every other change once synced: it then outlives the machine.
// Either way, with standbys counted (SetReplicated) a record is released only once each has it.
// Callers learn what to wait for through tickets: Append notes on the calling thread the last
// record it appended, TakeTicket() returns and resets that, and the RPC server holds the reply to
// a call until its ticket is released (ReplyGate, rpc/server.h), while it goes on serving others.
//
// Snapshots bound replay: Snapshot() switches to a new log file at sequence number P, writes the
// master's whole state (MasterService::WriteImage, visited while serving, one shard at a time) to
// snap-P, and then deletes the log files before it. Records are absolute states, so the records
// after P that a snapshot's dump already saw are harmless to apply again.
//
// Open() recovers the directory: the newest intact snapshot, then the log records after it, in
// order, until the first torn or corrupt frame or a gap in the numbering; the file is cut there
// (and later ones removed), what was cut is logged. A directory is used by one process at a time
// (an flock on its LOCK file).
//
// Failures degrade, never stop the process. A write, sync or new file that fails (ENOSPC, EIO), or
// free space under min_free_bytes, fails the log: Writable() then answers FILE_WRITE_FAIL, which
// the master gives every change while it serves reads; nothing more is written, and records
// appended meanwhile (background steps, calls already admitted) wait in memory, their replies
// held. Maintain(), each second, then compacts: a snapshot of the master's state covers every
// record appended, whatever the files before it hold (a torn tail, a sync that may have lost pages),
// and deletes the log before it, winning its space back. Once one is written and the space is
// there, the log goes on in a new file and what it held is released. A crash meanwhile recovers
// what was acknowledged (the records after the failure were not). Opened on a full disk, the log
// starts failed: a restart comes up read-only.
//
// Thread-safe. Append and the tickets are called from the master's threads (holding the lock of
// the change they record: Append never blocks on I/O); the writer thread runs release callbacks,
// which must be quick.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/files.h"
#include "common/thread_annotations.h"
#include "common/worker.h"
#include "master/master_image.h"
#include "master/meta_sink.h"
#include "yuebing/status.h"

namespace yb::ha {

class MetaLog final : public MetaSink {
 public:
  struct Options {
    std::string dir;
    enum class Durability { kProcess, kAlways };
    Durability durability = Durability::kAlways;
    bool sync = true;                            // fdatasync at all (false only for tests of replay)
    // kProcess: the syncer syncs at most this often, at least this often while records are unsynced.
    // kAlways: records no answer waits for (a PutStart's, a background step's) are synced within it.
    std::chrono::milliseconds sync_interval{10};
    uint64_t file_bytes = 64ULL << 20;           // a log file closes at this size and the next begins
    uint64_t snapshot_log_bytes = 256ULL << 20;  // log written since the last snapshot that calls for one
    // Below this many free bytes on the directory's file system the log fails (and compacts) before
    // a write can fail for want of space: room for a snapshot. 0: only when a write fails.
    uint64_t min_free_bytes = 32ULL << 20;
    FaultHook fault;  // tests: a failing or full device
  };
  // What a thread must wait for: the last record it appended, and whether it must be synced (or
  // only written). seq 0: nothing.
  struct Ticket {
    uint64_t seq = 0;
    bool sync = false;
  };
  struct Stats {
    uint64_t records = 0;  // appended since start
    uint64_t bytes = 0;    // framed bytes written since start
    uint64_t rounds = 0;   // writes (each of what was appended since the one before)
    uint64_t syncs = 0;    // syncs, and the time they took
    uint64_t sync_us = 0;
    uint64_t last_seq = 0;      // of the last record appended
    uint64_t synced_seq = 0;    // every record up to it is synced
    uint64_t snapshot_seq = 0;  // of the last snapshot
    uint64_t snapshots = 0;     // taken since start
    uint64_t last_snapshot_ms = 0;
    uint64_t log_bytes_since_snapshot = 0;
    uint64_t recovered_records = 0;  // replayed at start
    uint64_t cut_bytes = 0;          // of a torn or corrupt tail cut at start
    bool failed = false;             // no change is taken (Writable())
    std::string failure;             // why, while failed
    uint64_t failures = 0;           // times the log failed since start
    uint64_t free_bytes = 0;         // on the directory's file system, at the last Maintain()
  };

  // Opens (creating it if missing) and recovers the directory into `image`, then starts the writer.
  static Result<std::unique_ptr<MetaLog>> Open(const Options& options, MasterImage* image);
  ~MetaLog() override;  // writes and syncs what was appended, then stops
  MetaLog(const MetaLog&) = delete;
  MetaLog& operator=(const MetaLog&) = delete;

  uint64_t Append(const pb::LogRecord& record) override;
  // `then` runs under the log's lock (it must be quick, take only leaf locks and call nothing back).
  uint64_t AppendThen(const pb::LogRecord& record, Appended& then) override;
  // OK, or (failed) FILE_WRITE_FAIL saying why no change is taken.
  Status Writable() const override;
  bool failed() const { return failed_.load(std::memory_order_acquire); }

  // This thread's ticket since it last took one.
  static Ticket TakeTicket();
  bool Released(Ticket t) const;
  // A ticket whose release releases every ticket up to `t`'s record too.
  Ticket Cover(Ticket t) const { return Ticket{t.seq, t.sync || options_.durability == Options::Durability::kAlways}; }
  // Writes what has been appended (a no-op when nothing has). Any thread.
  void Flush();
  // Blocks until `t` is released (flushing first).
  void Wait(Ticket t);
  // Runs `fn` (on the writer thread, or at once on this one if `t` is released) once `t` is.
  void WhenReleased(Ticket t, std::function<void()> fn);

  // ---- replication (ha/replication.h)
  // The leader: every record up to `floor` is on each standby it counts; a ticket is released only
  // once its record is at or below it too. UINT64_MAX (the default): no standby is counted.
  void SetReplicated(uint64_t floor);
  uint64_t written_seq() const { return written_seq_.load(std::memory_order_acquire); }
  // Waits until a record after `after` is written, or for `timeout`; the written level then.
  uint64_t WaitWritten(uint64_t after, std::chrono::milliseconds timeout);
  uint64_t last_seq() const;
  // Every record up to it is released: written (kProcess) or synced (kAlways), and on each counted
  // standby. What the KV events publish up to: a leader that dies loses nothing published.
  uint64_t released_seq() const;
  // A standby: appends frames the leader shipped (their numbers follow the last record's); they
  // are written when this returns.
  Status AppendFrames(std::string_view frames);
  // A standby: the log becomes the leader's snapshot `contents` (a snap file's bytes) as of `seq`,
  // and goes on from `seq` + 1; everything it held before is removed.
  Status ReplaceWithSnapshot(uint64_t seq, std::string_view contents);
  // The files of the log in order, for the leader's shipping: the newest snapshot's number (0: none)
  // and the log files after it.
  std::string SnapshotPath(uint64_t seq) const;
  uint64_t latest_snapshot() const { return snapshot_seq_.load(std::memory_order_acquire); }

  // Writes a snapshot now: `write_image` gets a function to call with each record of the state.
  using ImageWriter = std::function<void(const std::function<void(const pb::LogRecord&)>& emit)>;
  Status Snapshot(const ImageWriter& write_image, uint64_t next_object_id);
  // A snapshot if snapshot_log_bytes of log were written since the last (the scheduler's step).
  Status SnapshotIfDue(const ImageWriter& write_image, uint64_t next_object_id);
  bool SnapshotDue() const { return since_snapshot_.load(std::memory_order_relaxed) >= options_.snapshot_log_bytes; }
  // The master's step, each second: watches the free space (failing the log below min_free_bytes),
  // takes a snapshot when one is due, and while failed compacts and resumes (see the class comment).
  void Maintain(const ImageWriter& write_image, uint64_t next_object_id);

  Stats stats() const;
  const std::string& dir() const { return options_.dir; }
  // "process" or "always" (yb-master's --metadata_durability).
  const char* durability() const {
    return options_.durability == Options::Durability::kAlways ? "always" : "process";
  }
  std::chrono::milliseconds sync_interval() const { return options_.sync_interval; }

 private:
  uint64_t AppendLocked(const pb::LogRecord& record, Appended* then);
  explicit MetaLog(Options options);
  Status Recover(MasterImage* image);
  Status OpenFile(uint64_t first_seq) REQUIRES(write_mu_);
  // Flush, with write_mu_ held; `rotate`: then go on in a new file. While failed nothing is
  // written: without `rotate` the records stay appended; with it they are dropped, for the snapshot
  // being taken covers them.
  Status FlushLocked(bool rotate) REQUIRES(write_mu_);
  // The log fails (see the class comment) for `cause`; resumes.
  void Fail(const Status& cause);
  void Resume();
  // A write, sync or open for writing, failing as the fault hook says.
  Status Write(int fd, std::string_view data, const std::string& path) const;
  Result<int> OpenForWrite(const std::string& path, int flags) const;
  // FILE_WRITE_FAIL when less than min_free_bytes is free under the directory (free_bytes_ is set).
  Status CheckSpace();
  // Closes the earlier files unsynced: a snapshot vouches for what they held. With fd_mu_ held.
  void CloseRetiringLocked() REQUIRES(fd_mu_);
  Status Sync(int fd, const std::string& path) const;
  void SyncerLoop();
  // Records written and not synced, nor covered by a sync begun.
  bool Unsynced() const REQUIRES(mu_);
  // Whether a sync is wanted now: always, but at kAlways only while an answer or a thread waits for
  // one (else records are synced within sync_interval).
  bool SyncWanted() const REQUIRES(mu_);
  // One sync covering every record written before it begins: the files before the current one (it
  // closes them), then the current one through a descriptor of its own, so that syncs overlap.
  Status SyncUpTo();
  // Publishes the levels and runs the callbacks they release.
  void Fire(uint64_t written, uint64_t synced);

  const Options options_;
  int lock_fd_ = -1;
  // Lock order: snapshot_mu_, write_mu_, fd_mu_, mu_.
  Mutex write_mu_;  // one writer at a time; held while the current file changes
  // The current file: the writer's (under write_mu_); the syncer syncs it under fd_mu_, and the
  // writer changes it under both, so either lock reads it (the writer reads it with FileOf()).
  Mutex fd_mu_;
  int fd_ GUARDED_BY(fd_mu_) = -1;
  std::string file_path_ GUARDED_BY(fd_mu_);  // of fd_
  std::vector<int> retiring_ GUARDED_BY(fd_mu_);  // earlier files, written and not yet synced
  uint64_t file_first_seq_ GUARDED_BY(write_mu_) = 1;  // the first record the current file holds
  uint64_t file_written_ GUARDED_BY(write_mu_) = 0;
  // The current file, as its writer reads it (write_mu_ held: it changes only under both locks).
  std::pair<int, const std::string*> FileOf() const REQUIRES(write_mu_) NO_THREAD_SAFETY_ANALYSIS {
    return {fd_, &file_path_};
  }

  mutable Mutex mu_;
  std::condition_variable_any done_cv_;  // callers wait for releases, snapshots for a rotation
  std::string buf_ GUARDED_BY(mu_);      // frames appended and not yet taken by the writer
  static constexpr size_t kSpareBytes = 8u << 20;
  std::string spare_ GUARDED_BY(write_mu_);  // the last round's buffer, for the next
  uint64_t next_seq_ GUARDED_BY(mu_) = 1;
  bool stop_ GUARDED_BY(mu_) = false;
  int idle_syncers_ GUARDED_BY(mu_) = 0;  // syncers waiting for work
  int sync_waiters_ GUARDED_BY(mu_) = 0;  // threads in Wait() for a synced ticket
  // The highest record a sync begun (in flight or done) covers: a syncer takes on only records
  // past it, so a record written while a sync is in flight starts the next sync at once.
  uint64_t covering_ GUARDED_BY(mu_) = 0;
  int blocked_ GUARDED_BY(mu_) = 0;           // threads in Wait()

  std::multimap<uint64_t, std::function<void()>> on_written_ GUARDED_BY(mu_), on_synced_ GUARDED_BY(mu_);
  std::atomic<uint64_t> written_seq_{0};
  std::atomic<uint64_t> synced_seq_{0};
  std::atomic<uint64_t> replicated_{UINT64_MAX};
  std::condition_variable_any sync_cv_;  // the syncer waits for writes; the writer (rotating) for syncs

  Mutex snapshot_mu_;  // one snapshot at a time
  std::atomic<uint64_t> records_{0}, bytes_{0}, rounds_{0}, snapshots_{0}, snapshot_seq_{0}, last_snapshot_ms_{0};
  std::atomic<uint64_t> since_snapshot_{0};
  std::atomic<uint64_t> syncs_{0}, sync_us_{0};
  uint64_t recovered_records_ = 0, cut_bytes_ = 0;
  std::atomic<bool> failed_{false};
  Status failure_ GUARDED_BY(mu_);  // while failed_
  std::atomic<uint64_t> failures_{0}, free_bytes_{0};
  uint64_t maintain_failed_rounds_ = 0;  // Maintain() rounds since the log failed (its caller's thread)
  // kAlways: two, so that a sync begins as soon as a record is written, while another is in flight
  // (what a synced answer waits is then one sync, not the rest of the one in flight and a whole
  // next one). kProcess: one, at most every sync_interval.
  std::vector<Worker> syncers_;
};

// A snapshot file's contents (its frames, the header first) as an image; false when they are not
// intact or not of snapshot `seq`.
bool LoadSnapshotContents(std::string_view contents, uint64_t seq, MasterImage* image, uint64_t* records);

// Reads the log directory `dir` without changing it (its master may be writing it): `image`
// becomes the state as of `from` (the newest intact snapshot at or before it, then the records up
// to it), and `each` is called with every record after `from` up to `upto`, in order, with `image`
// the state before that record (it is applied after). FILE_NOT_FOUND when the directory no longer holds
// the state as of `from` (a later snapshot replaced what it was built from) or not every record up
// to `upto` (a file removed meanwhile, or not written yet).
Status ReadLogRange(const std::string& dir, uint64_t from, uint64_t upto, MasterImage* image,
                    const std::function<void(uint64_t seq, const pb::LogRecord& record)>& each);

}  // namespace yb::ha
