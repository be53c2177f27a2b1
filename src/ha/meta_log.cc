#include "ha/meta_log.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "common/clock.h"
#include "common/files.h"
#include "common/log.h"
#include "ha/log_format.h"

namespace yb::ha {
namespace {

thread_local MetaLog::Ticket tls_ticket;
thread_local bool tls_flushes = false;  // this thread calls Flush() after what it appends

// A Put's reservation needs only to be written (see the class comment); everything else synced.
bool NeedsSync(const pb::LogRecord& r) { return r.change_case() != pb::LogRecord::kPending; }

struct DirFiles {
  std::vector<uint64_t> logs;       // first seq, ascending
  std::vector<uint64_t> snapshots;  // seq, ascending
};

DirFiles ListDir(const std::string& dir) {
  DirFiles out;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      std::string_view name = e->d_name;
      if (auto s = ParseFileName(name, "log-", ".ybl")) out.logs.push_back(*s);
      if (auto s = ParseFileName(name, "snap-", ".ybs")) out.snapshots.push_back(*s);
    }
    ::closedir(d);
  }
  std::sort(out.logs.begin(), out.logs.end());
  std::sort(out.snapshots.begin(), out.snapshots.end());
  return out;
}

// Reads a snapshot file into `image`; false (image untouched) when it is not intact.
bool LoadSnapshot(const std::string& path, uint64_t seq, MasterImage* image, uint64_t* records) {
  auto data = ReadWholeFile(path);
  return data.ok() && LoadSnapshotContents(*data, seq, image, records);
}

}  // namespace

bool LoadSnapshotContents(std::string_view contents, uint64_t seq, MasterImage* image, uint64_t* records) {
  FrameReader r(contents);
  auto first = r.Next();
  pb::SnapshotHeader header;
  if (!first || first->seq != seq ||
      !header.ParseFromArray(first->payload.data(), static_cast<int>(first->payload.size())) || header.seq() != seq) {
    return false;
  }
  MasterImage loaded;
  loaded.next_object_id = std::max<uint64_t>(1, header.next_object_id());
  pb::LogRecord rec;
  uint64_t n = 0;
  while (auto f = r.Next()) {
    if (f->seq != seq || !rec.ParseFromArray(f->payload.data(), static_cast<int>(f->payload.size()))) return false;
    loaded.Apply(std::move(rec));
    ++n;
  }
  if (!r.clean()) return false;
  image->TakeSnapshotState(std::move(loaded));
  *records = n;
  return true;
}

namespace {

// Loads the newest intact snapshot of `files` at or before `upto` into `image` (emptied first, what
// it remembers of gone keys kept): its sequence number, 0 if there is none.
uint64_t LoadNewestSnapshot(const std::string& dir, const DirFiles& files, uint64_t upto, MasterImage* image,
                            uint64_t* records) {
  image->TakeSnapshotState(MasterImage{});
  for (auto it = files.snapshots.rbegin(); it != files.snapshots.rend(); ++it) {
    if (*it > upto) continue;
    const std::string path = dir + "/" + SnapshotFileName(*it);
    if (LoadSnapshot(path, *it, image, records)) return *it;
    YB_LOG_ERROR("metadata log: snapshot {} is not intact; trying an older one", path);
  }
  return 0;
}

}  // namespace

Status ReadLogRange(const std::string& dir, uint64_t from, uint64_t upto, MasterImage* image,
                    const std::function<void(uint64_t seq, const pb::LogRecord& record)>& each) {
  const DirFiles files = ListDir(dir);
  uint64_t records = 0;
  const uint64_t base = LoadNewestSnapshot(dir, files, from, image, &records);
  uint64_t expect = base + 1;
  pb::LogRecord rec;
  for (size_t i = 0; i < files.logs.size() && expect <= upto; ++i) {
    if (i + 1 < files.logs.size() && files.logs[i + 1] <= expect) continue;  // wholly before
    if (files.logs[i] > expect) break;                                       // a gap: what it held was compacted away
    auto data = ReadWholeFile(dir + "/" + LogFileName(files.logs[i]));
    if (!data.ok())
      return Status(Code::kFileNotFound, "the metadata log changed while it was read: " + data.status().ToString());
    FrameReader r(*data);
    while (auto f = r.Next()) {
      if (f->seq < expect) continue;
      if (f->seq != expect || f->seq > upto) break;
      if (!rec.ParseFromArray(f->payload.data(), static_cast<int>(f->payload.size()))) {
        return Status(Code::kFileNotFound, "record " + std::to_string(f->seq) + " of the metadata log does not parse");
      }
      if (f->seq > from) each(f->seq, rec);
      image->Apply(std::move(rec));
      ++expect;
    }
  }
  if (expect <= from || expect <= upto) {
    return Status(Code::kFileNotFound, "the metadata log in " + dir + " holds records " + std::to_string(base + 1) +
                                           " to " + std::to_string(expect - 1) + ", not every one after " +
                                           std::to_string(from) + " up to " + std::to_string(upto));
  }
  return Status::OK();
}

MetaLog::MetaLog(Options options) : options_(std::move(options)) {}

Result<std::unique_ptr<MetaLog>> MetaLog::Open(const Options& options, MasterImage* image) {
  if (options.dir.empty()) return Status(Code::kInvalidParams, "metadata directory is empty");
  std::unique_ptr<MetaLog> log(new MetaLog(options));
  YB_RETURN_IF_ERROR(MakePrivateDir(options.dir, "LOCK"));  // it holds every segment's grant key
  const std::string lock_path = options.dir + "/LOCK";
  log->lock_fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, kPrivateFileMode);
  if (log->lock_fd_ < 0) return Status(Code::kFileOpenFail, "cannot open " + lock_path + ": " + std::strerror(errno));
  if (::flock(log->lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    return Status(Code::kFileOpenFail, "metadata directory " + options.dir + " is in use by another process");
  }
  YB_RETURN_IF_ERROR(log->Recover(image));
  // A full disk: the master comes up read-only, and Maintain() retries.
  Status st;
  {
    MutexLock w(log->write_mu_);
    uint64_t first;
    {
      MutexLock lock(log->mu_);
      first = log->next_seq_;
    }
    st = log->OpenFile(first);
  }
  if (st.ok()) st = log->CheckSpace();
  if (!st.ok()) log->Fail(st);
  const int syncers = options.durability == Options::Durability::kAlways ? 2 : 1;
  for (int i = 0; i < syncers; ++i) {
    log->syncers_.emplace_back("yb-log-sync", [raw = log.get()] { raw->SyncerLoop(); });
  }
  return log;
}

MetaLog::~MetaLog() {
  if (!syncers_.empty()) {
    Flush();
    {
      MutexLock lock(mu_);
      stop_ = true;  // the syncers sync what was written, then end
    }
    sync_cv_.notify_all();
    syncers_.clear();  // joins them
  }
  for (int old : retiring_) ::close(old);
  if (fd_ >= 0) ::close(fd_);
  if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the flock
}

Status MetaLog::Recover(MasterImage* image) {
  DirFiles files = ListDir(options_.dir);
  uint64_t snapshot_records = 0;
  const uint64_t base = LoadNewestSnapshot(options_.dir, files, UINT64_MAX, image, &snapshot_records);
  if (base == 0 && !files.snapshots.empty()) {
    YB_LOG_ERROR("metadata log: no intact snapshot in {}; replaying the log alone", options_.dir);
  }
  uint64_t expect = base + 1, replayed = 0;
  bool cut = false;
  pb::LogRecord rec;
  for (size_t i = 0; i < files.logs.size(); ++i) {
    const std::string path = options_.dir + "/" + LogFileName(files.logs[i]);
    if (cut) {  // after a cut, nothing is taken: the numbering would have a gap
      auto size = ReadWholeFile(path);
      cut_bytes_ += size.ok() ? size->size() : 0;
      ::unlink(path.c_str());
      YB_LOG_ERROR("metadata log: {} removed: it follows a torn or corrupt record", path);
      continue;
    }
    // A file wholly before the snapshot: only its successor's first number tells.
    if (i + 1 < files.logs.size() && files.logs[i + 1] <= expect) continue;
    auto data = ReadWholeFile(path);
    if (!data.ok()) return data.status();
    FrameReader r(*data);
    size_t good = 0;
    while (auto f = r.Next()) {
      if (f->seq < expect) {  // already in the snapshot
        good = r.good_bytes();
        continue;
      }
      if (f->seq != expect || !rec.ParseFromArray(f->payload.data(), static_cast<int>(f->payload.size()))) {
        cut = true;
        break;
      }
      image->Apply(std::move(rec));
      ++expect;
      ++replayed;
      good = r.good_bytes();
    }
    if (!r.clean()) cut = true;
    if (cut) {
      cut_bytes_ += data->size() - good;
      if (::truncate(path.c_str(), static_cast<off_t>(good)) != 0) {
        return Status(Code::kFileWriteFail, "cannot cut " + path + ": " + std::strerror(errno));
      }
      YB_LOG_WARN("metadata log: {} cut at byte {} of {}: a torn or corrupt record (a write the crash interrupted)",
                  path, good, data->size());
    }
  }
  {
    MutexLock lock(mu_);  // nothing else runs yet: for the analysis
    next_seq_ = expect;
  }
  written_seq_ = synced_seq_ = expect - 1;
  snapshot_seq_ = base;
  recovered_records_ = replayed;
  YB_LOG_INFO("metadata log {}: snapshot at {} ({} records) and {} log records replayed: {}", options_.dir, base,
              snapshot_records, replayed, image->Summary());
  return Status::OK();
}

Status MetaLog::Write(int fd, std::string_view data, const std::string& path) const {
  if (int err = Injected(options_.fault, "write", path)) {
    return Status(Code::kFileWriteFail, "cannot write " + path + ": " + std::strerror(err));
  }
  return WriteAll(fd, data, path);
}

Status MetaLog::Sync(int fd, const std::string& path) const {
  int err = Injected(options_.fault, "sync", path);
  if (err == 0 && ::fdatasync(fd) != 0) err = errno;
  return err == 0 ? Status::OK() : Status(Code::kFileWriteFail, "cannot sync " + path + ": " + std::strerror(err));
}

Result<int> MetaLog::OpenForWrite(const std::string& path, int flags) const {
  const int injected = Injected(options_.fault, "open", path);
  const int fd = injected ? -1 : ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | flags, kPrivateFileMode);
  if (fd < 0) {
    return Status(Code::kFileOpenFail, "cannot open " + path + ": " + std::strerror(injected ? injected : errno));
  }
  return fd;
}

Status MetaLog::CheckSpace() {
  const uint64_t free = FreeBytes(options_.dir, options_.fault);
  free_bytes_ = free;
  if (options_.min_free_bytes == 0 || free >= options_.min_free_bytes) return Status::OK();
  return Status(Code::kFileWriteFail, "only " + std::to_string(free) + " bytes are free under " + options_.dir +
                                          " (below " + std::to_string(options_.min_free_bytes) +
                                          ", kept for a snapshot)");
}

void MetaLog::CloseRetiringLocked() {
  for (int old : retiring_) ::close(old);
  retiring_.clear();
}

Status MetaLog::OpenFile(uint64_t first_seq) {
  const std::string path = options_.dir + "/" + LogFileName(first_seq);
  auto opened = OpenForWrite(path, O_APPEND);
  if (!opened.ok()) return opened.status();
  const int fd = *opened;
  struct stat st {};
  ::fstat(fd, &st);
  {
    // The file before goes to the syncer, which syncs and closes it with its next sync.
    MutexLock fd_lock(fd_mu_);
    if (fd_ >= 0) {
      if (options_.sync && !failed()) {
        retiring_.push_back(fd_);
      } else {
        ::close(fd_);
      }
      if (failed()) CloseRetiringLocked();  // the snapshot being taken vouches for what they held
    }
    fd_ = fd;
    file_path_ = path;
  }
  file_first_seq_ = first_seq;
  file_written_ = static_cast<uint64_t>(st.st_size);
  return SyncDir(options_.dir);  // the new file's name is durable
}

uint64_t MetaLog::Append(const pb::LogRecord& record) { return AppendLocked(record, nullptr); }

uint64_t MetaLog::AppendThen(const pb::LogRecord& record, Appended& then) { return AppendLocked(record, &then); }

uint64_t MetaLog::AppendLocked(const pb::LogRecord& record, Appended* then) {
  thread_local std::string payload;
  payload.clear();
  record.AppendToString(&payload);
  const bool sync = options_.durability == Options::Durability::kAlways && NeedsSync(record);
  uint64_t seq;
  bool first;
  {
    MutexLock lock(mu_);
    seq = next_seq_++;
    first = buf_.empty();
    AppendFrame(seq, payload, buf_);
    if (then) then->At(seq);
  }
  // A thread that does not flush its own appends (a background step) leaves them to the syncer.
  if (first && !tls_flushes) {
    MutexLock lock(mu_);
    sync_cv_.notify_one();
  }
  tls_ticket.seq = seq;
  tls_ticket.sync = tls_ticket.sync || sync;
  records_.fetch_add(1, std::memory_order_relaxed);
  return seq;
}

MetaLog::Ticket MetaLog::TakeTicket() {
  Ticket t = tls_ticket;
  tls_ticket = Ticket{};
  return t;
}

bool MetaLog::Released(Ticket t) const {
  if (t.seq == 0) return true;
  return (t.sync ? synced_seq_ : written_seq_).load(std::memory_order_acquire) >= t.seq &&
         replicated_.load(std::memory_order_acquire) >= t.seq;
}

void MetaLog::SetReplicated(uint64_t floor) {
  replicated_.store(floor, std::memory_order_release);
  Fire(0, 0);  // what the floor releases now
}

uint64_t MetaLog::WaitWritten(uint64_t after, std::chrono::milliseconds timeout) {
  MutexUniqueLock lock(mu_);
  ++blocked_;
  done_cv_.wait_for(lock, timeout, [&] {
    mu_.AssertHeld();  // the wait holds it whenever it asks
    return stop_ || written_seq_.load(std::memory_order_acquire) > after;
  });
  --blocked_;
  return written_seq_.load(std::memory_order_acquire);
}

uint64_t MetaLog::released_seq() const {
  const auto& level = options_.durability == Options::Durability::kAlways ? synced_seq_ : written_seq_;
  return std::min(level.load(std::memory_order_acquire), replicated_.load(std::memory_order_acquire));
}

uint64_t MetaLog::last_seq() const {
  MutexLock lock(mu_);
  return next_seq_ - 1;
}

std::string MetaLog::SnapshotPath(uint64_t seq) const { return options_.dir + "/" + SnapshotFileName(seq); }

Status MetaLog::Writable() const {
  if (!failed()) return Status::OK();
  MutexLock lock(mu_);
  return Status(Code::kFileWriteFail,
                "the master's metadata log cannot be written (" + failure_.message() +
                    "): it refuses changes until it can again, and serves reads meanwhile");
}

void MetaLog::Fail(const Status& cause) {
  {
    MutexLock lock(mu_);
    if (failed_.load(std::memory_order_relaxed)) return;
    failure_ = cause;
    failed_.store(true, std::memory_order_release);
  }
  failures_.fetch_add(1, std::memory_order_relaxed);
  YB_LOG_ERROR(
      "metadata log {}: {}. The master refuses every change from now on and goes on serving reads; it compacts "
      "the log and takes changes again by itself once the directory takes writes (free space there, or mend the "
      "disk)",
      options_.dir, cause.ToString());
}

void MetaLog::Resume() {
  {
    MutexLock lock(mu_);
    failed_.store(false, std::memory_order_release);
    failure_ = Status::OK();
    covering_ = synced_seq_.load(std::memory_order_relaxed);  // no sync taken before is relied on
    sync_cv_.notify_all();                                    // the syncers wait for nothing while failed
  }
  YB_LOG_WARN("metadata log {}: writable again: the master takes changes ({} bytes free)", options_.dir,
              free_bytes_.load());
}

Status MetaLog::AppendFrames(std::string_view frames) {
  // A standby's log that failed takes nothing until the leader ships it a snapshot: the records
  // held in memory would not be in the image it applies.
  YB_RETURN_IF_ERROR(Writable());
  {
    MutexLock lock(mu_);
    FrameReader r(frames);
    const uint64_t first = next_seq_;
    uint64_t expect = first;
    while (auto f = r.Next()) {
      if (f->seq != expect) {
        return Status(Code::kInvalidParams,
                      "shipped record " + std::to_string(f->seq) + " where " + std::to_string(expect) + " comes next");
      }
      ++expect;
    }
    if (!r.clean()) return Status(Code::kInvalidParams, "shipped frames are torn or corrupt");
    buf_.append(frames.data(), frames.size());
    next_seq_ = expect;
    records_.fetch_add(expect - first, std::memory_order_relaxed);
  }
  Flush();
  return Writable();
}

Status MetaLog::ReplaceWithSnapshot(uint64_t seq, std::string_view contents) {
  MutexLock one(snapshot_mu_);
  MutexLock w(write_mu_);
  if (seq != 0) {  // 0: the leader's log starts at its first record, with no snapshot before it
    const std::string path = SnapshotPath(seq), tmp = path + ".tmp";
    auto opened = OpenForWrite(tmp, O_TRUNC);
    if (!opened.ok()) return opened.status();
    const int fd = *opened;
    Status st = Write(fd, contents, tmp);
    if (st.ok() && options_.sync) st = Sync(fd, tmp);
    ::close(fd);
    if (!st.ok()) ::unlink(tmp.c_str());
    if (st.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
      st = Status(Code::kFileWriteFail, "cannot rename " + tmp);
    }
    if (!st.ok()) return st;
  }
  // Everything else goes: the leader's history replaces ours from here on.
  DirFiles files = ListDir(options_.dir);
  for (uint64_t s : files.snapshots) {
    if (s != seq) ::unlink((options_.dir + "/" + SnapshotFileName(s)).c_str());
  }
  for (uint64_t l : files.logs) ::unlink((options_.dir + "/" + LogFileName(l)).c_str());
  {
    MutexLock lock(mu_);
    buf_.clear();
    next_seq_ = seq + 1;
    written_seq_.store(seq, std::memory_order_release);
    synced_seq_.store(seq, std::memory_order_release);
  }
  snapshot_seq_ = seq;
  since_snapshot_ = 0;
  {
    MutexLock fd_lock(fd_mu_);  // what they held was removed above
    CloseRetiringLocked();
  }
  YB_RETURN_IF_ERROR(OpenFile(seq + 1));
  YB_RETURN_IF_ERROR(SyncDir(options_.dir));
  if (failed()) Resume();  // the leader's history, written whole
  return Status::OK();
}

void MetaLog::Wait(Ticket t) {
  if (Released(t)) return;
  Flush();
  MutexUniqueLock lock(mu_);
  ++blocked_;
  if (t.sync) {
    ++sync_waiters_;
    if (idle_syncers_ > 0) sync_cv_.notify_one();  // a sync is wanted now
  }
  done_cv_.wait(lock, [&] { return Released(t); });
  if (t.sync) --sync_waiters_;
  --blocked_;
}

void MetaLog::WhenReleased(Ticket t, std::function<void()> fn) {
  {
    MutexLock lock(mu_);
    if (!Released(t)) {  // checked under mu_: the writer fires under it after publishing
      (t.sync ? on_synced_ : on_written_).emplace(t.seq, std::move(fn));
      if (t.sync && idle_syncers_ > 0 && Unsynced()) sync_cv_.notify_one();  // a sync is wanted now
      return;
    }
  }
  fn();
}

void MetaLog::Fire(uint64_t written, uint64_t synced) {
  std::vector<std::function<void()>> due;
  {
    MutexLock lock(mu_);
    // Each level only moves up (the writer and the syncer each publish their own).
    if (written > written_seq_.load(std::memory_order_relaxed)) written_seq_.store(written, std::memory_order_release);
    if (synced > synced_seq_.load(std::memory_order_relaxed)) synced_seq_.store(synced, std::memory_order_release);
    // What is released: written (or synced) and, with standbys counted, on each of them.
    const uint64_t floor = replicated_.load(std::memory_order_acquire);
    written = std::min(written_seq_.load(std::memory_order_relaxed), floor);
    synced = std::min(synced_seq_.load(std::memory_order_relaxed), floor);
    for (auto* waiters : {&on_written_, &on_synced_}) {
      const uint64_t level = waiters == &on_written_ ? written : synced;
      auto end = waiters->upper_bound(level);
      for (auto it = waiters->begin(); it != end; ++it) due.push_back(std::move(it->second));
      waiters->erase(waiters->begin(), end);
    }
    // Wake-ups cost a system call each: only for a thread that waits (most rounds have none).
    if (blocked_ > 0) done_cv_.notify_all();
    if (idle_syncers_ > 0 && options_.sync && Unsynced() && SyncWanted()) sync_cv_.notify_one();
  }
  for (auto& fn : due) fn();
}

void MetaLog::Flush() {
  tls_flushes = true;
  {
    MutexLock lock(mu_);
    // Nothing buffered, and nothing taken from the buffer by a syncer still writing it (its
    // records, this thread's among them, are written once it is done: waited for below).
    if (buf_.empty() && written_seq_.load(std::memory_order_acquire) + 1 >= next_seq_) return;
  }
  MutexLock w(write_mu_);
  (void)FlushLocked(false);
}

Status MetaLog::FlushLocked(bool rotate) {
  const bool failed = this->failed();
  if (failed && !rotate) return Writable();  // held in memory until a compaction covers them
  // The buffer written last time takes the appends' place, its capacity kept: appending into a
  // fresh string each round cost a dozen reallocations per batch, and large frees that made malloc
  // consolidate its free lists.
  std::string out = std::move(spare_);
  out.clear();
  uint64_t last;
  {
    MutexLock lock(mu_);
    out.swap(buf_);
    last = next_seq_ - 1;
  }
  const auto [fd, path] = FileOf();
  if (!out.empty() && !failed) {
    if (Status st = Write(fd, out, *path); !st.ok()) {
      // A torn tail goes (what was written before stays); the records wait in memory, first.
      if (::ftruncate(fd, static_cast<off_t>(file_written_)) != 0) {
        YB_LOG_WARN("metadata log: cannot cut {} back to {} bytes: {}", *path, file_written_,
                    std::strerror(errno));
      }
      {
        MutexLock lock(mu_);
        out.append(buf_);
        buf_.swap(out);
      }
      Fail(st);
      return st;
    }
    file_written_ += out.size();
    bytes_.fetch_add(out.size(), std::memory_order_relaxed);
    since_snapshot_.fetch_add(out.size(), std::memory_order_relaxed);
    rounds_.fetch_add(1, std::memory_order_relaxed);
    // Written: a reservation survives the process now. The syncer takes it from here.
    Fire(last, options_.sync ? 0 : last);
  }
  if (out.capacity() <= kSpareBytes) spare_ = std::move(out);
  if (!rotate && file_written_ < options_.file_bytes) return Status::OK();
  // Failed, each compaction tried starts a file: one it left empty goes first.
  if (failed && file_written_ == 0 && file_first_seq_ <= last) ::unlink(path->c_str());
  // A new file from `last` + 1 on; the syncer syncs the old one with its next round.
  if (Status st = OpenFile(last + 1); !st.ok()) {
    Fail(st);
    return st;
  }
  return Status::OK();
}

Status MetaLog::SyncUpTo() {
  int fd = -1;
  std::string path;
  {
    // The files before the current one first (a record in them precedes every record here).
    MutexLock fd_lock(fd_mu_);
    while (!retiring_.empty()) {
      YB_RETURN_IF_ERROR(Sync(retiring_.front(), "a closed log file of " + options_.dir));
      ::close(retiring_.front());
      retiring_.erase(retiring_.begin());
    }
    // A descriptor of its own: the writer may retire the current one, and another syncer close
    // it, while this sync runs (the file stays open through this one).
    fd = ::dup(fd_);
    if (fd < 0) return Status(Code::kFileWriteFail, "cannot sync " + file_path_ + ": " + std::strerror(errno));
    path = file_path_;
  }
  Status st = Sync(fd, path);
  ::close(fd);
  return st;
}

bool MetaLog::Unsynced() const {
  return written_seq_.load(std::memory_order_relaxed) >
         std::max(synced_seq_.load(std::memory_order_relaxed), covering_);
}

bool MetaLog::SyncWanted() const {
  return options_.durability != Options::Durability::kAlways || !on_synced_.empty() || sync_waiters_ > 0;
}

void MetaLog::SyncerLoop() {
  MutexUniqueLock lock(mu_);
  // kAlways: a sync begins when an answer waits for one (a record nobody waits for, such as a
  // PutStart's or a background step's, waits for the next, or for sync_interval): an answer's
  // record then finds a syncer idle and waits for one sync of its own, not for the end of one in
  // flight for records nobody needed synced yet.
  const bool on_demand = options_.durability == Options::Durability::kAlways;
  for (;;) {
    ++idle_syncers_;
    // While failed nothing is written or synced (a compaction takes over).
    auto ready = [&] {
      mu_.AssertHeld();
      return stop_ || (!failed() && (!buf_.empty() || (Unsynced() && SyncWanted())));
    };
    bool interval_passed = false;
    if (on_demand) {
      while (!sync_cv_.wait_for(lock, options_.sync_interval, ready)) {
        if (!failed() && Unsynced()) {
          interval_passed = true;
          break;
        }
      }
    } else {
      sync_cv_.wait(lock, ready);
    }
    --idle_syncers_;
    if (stop_ && failed()) return;  // what it holds is lost with the process, as never acknowledged
    const bool unflushed = !buf_.empty();
    lock.unlock();
    if (unflushed) {  // a background step's records: nobody else writes them
      MutexLock w(write_mu_);
      (void)FlushLocked(false);
    }
    const uint64_t target = written_seq_.load(std::memory_order_acquire);
    lock.lock();
    // Records another syncer's sync already covers are left to it; on demand, records nobody waits
    // for are left for sync_interval (or the stop).
    const bool mine = target > std::max(synced_seq_.load(std::memory_order_relaxed), covering_) &&
                      (SyncWanted() || interval_passed || stop_);
    if (mine) covering_ = target;
    lock.unlock();
    if (options_.sync && !failed() && mine) {
      const int64_t t0 = MonotonicMicros();
      const Status st = SyncUpTo();
      if (!st.ok()) {  // what the sync covered may be lost: only a snapshot vouches for it now
        Fail(st);
        lock.lock();
        covering_ = synced_seq_.load(std::memory_order_relaxed);  // nothing past it is covered
        continue;
      }
      syncs_.fetch_add(1, std::memory_order_relaxed);
      sync_us_.fetch_add(MicrosSince(t0), std::memory_order_relaxed);
      // fdatasync makes durable what was written before it began, whatever other syncs still run:
      // a later target that ends first releases the earlier ones' records too (levels only rise).
      Fire(0, target);
      lock.lock();
      if (options_.durability == Options::Durability::kProcess) {
        // Nobody waits for a sync: one per interval covers what was written meanwhile, and leaves
        // the disk (and the cores) to the answers.
        const auto rest = std::chrono::duration_cast<std::chrono::microseconds>(options_.sync_interval) -
                          std::chrono::microseconds(MicrosSince(t0));
        sync_cv_.wait_for(lock, rest, [&] {
          mu_.AssertHeld();
          return stop_;
        });
      }
    } else {
      lock.lock();
      // Taken but not synced (failed meanwhile): not covered after all.
      if (mine && options_.sync) covering_ = synced_seq_.load(std::memory_order_relaxed);
    }
    // At the end: once what was written is synced, or covered by another syncer's sync in flight.
    if (stop_ && buf_.empty() &&
        std::max(synced_seq_.load(std::memory_order_relaxed), covering_) >= written_seq_.load()) {
      return;
    }
  }
}

Status MetaLog::Snapshot(const ImageWriter& write_image, uint64_t next_object_id) {
  MutexLock one(snapshot_mu_);
  const int64_t t0 = MonotonicMicros();
  uint64_t base;
  const bool was_failed = failed();
  {
    // Every record up to `base` goes to the files before the new one (or, failed, nowhere: the
    // snapshot alone vouches for them); the dump below starts after this, so it reflects all of them.
    MutexLock w(write_mu_);
    YB_RETURN_IF_ERROR(FlushLocked(/*rotate=*/true));
    base = file_first_seq_ - 1;
  }
  const std::string path = options_.dir + "/" + SnapshotFileName(base);
  const std::string tmp = path + ".tmp";
  auto opened = OpenForWrite(tmp, O_TRUNC);
  if (!opened.ok()) return opened.status();
  const int fd = *opened;
  std::string out, payload;
  pb::SnapshotHeader header;
  header.set_seq(base);
  header.set_next_object_id(next_object_id);
  header.SerializeToString(&payload);
  AppendFrame(base, payload, out);
  Status st;
  uint64_t records = 0;
  write_image([&](const pb::LogRecord& rec) {
    payload.clear();
    rec.AppendToString(&payload);
    AppendFrame(base, payload, out);
    ++records;
    if (out.size() >= (4u << 20) && st.ok()) {
      st = Write(fd, out, tmp);
      out.clear();
    }
  });
  if (st.ok()) st = Write(fd, out, tmp);
  if (st.ok()) st = Sync(fd, tmp);
  ::close(fd);
  if (st.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    st = Status(Code::kFileWriteFail, "cannot rename " + tmp + ": " + std::strerror(errno));
  }
  if (st.ok()) st = SyncDir(options_.dir);
  if (!st.ok()) {
    ::unlink(tmp.c_str());
    // A failed log's compactions report through Maintain (once in a while, not each second).
    if (!was_failed) YB_LOG_ERROR("metadata log: snapshot at {} failed: {}", base, st.ToString());
    return st;
  }
  // Named before what it replaces goes: a reader of the log (a standby's shipper, a replay of
  // events) that finds the records it wants gone finds this snapshot, never the one before it. (Named
  // after, a shipper in that moment shipped the old snapshot and went round again at once, for nothing.)
  snapshot_seq_.store(base, std::memory_order_release);
  // What the snapshot covers is no longer needed: older snapshots, and the log files before the
  // rotation (every one of them starts at or below `base`, the current file after it).
  DirFiles files = ListDir(options_.dir);
  for (uint64_t s : files.snapshots) {
    if (s < base) ::unlink((options_.dir + "/" + SnapshotFileName(s)).c_str());
  }
  for (uint64_t l : files.logs) {
    if (l <= base) ::unlink((options_.dir + "/" + LogFileName(l)).c_str());
  }
  (void)SyncDir(options_.dir);
  if (was_failed || failed()) {
    // Every record up to `base` is in the snapshot: durable, whatever the files held. Released
    // now (after the files before it are gone: a standby's shipper finds the snapshot instead).
    {
      MutexLock fd_lock(fd_mu_);
      CloseRetiringLocked();
    }
    Fire(base, base);
  }
  const auto ms = MicrosSince(t0) / 1000;
  snapshots_.fetch_add(1, std::memory_order_relaxed);
  last_snapshot_ms_ = static_cast<uint64_t>(ms);
  since_snapshot_ = 0;
  YB_LOG_INFO("metadata log: snapshot at {} ({} records) in {} ms", base, records, ms);
  return Status::OK();
}

Status MetaLog::SnapshotIfDue(const ImageWriter& write_image, uint64_t next_object_id) {
  if (!SnapshotDue()) return Status::OK();
  return Snapshot(write_image, next_object_id);
}

void MetaLog::Maintain(const ImageWriter& write_image, uint64_t next_object_id) {
  Status space = CheckSpace();
  if (!failed()) {
    if (space.ok()) {
      maintain_failed_rounds_ = 0;
      (void)SnapshotIfDue(write_image, next_object_id);
      return;
    }
    Fail(space);
  }
  // Failed: a snapshot covers what was appended and deletes the log before it.
  const bool say = maintain_failed_rounds_++ % 30 == 0;  // the first round, then every 30th
  if (last_seq() > snapshot_seq_.load()) {
    if (Status st = Snapshot(write_image, next_object_id); !st.ok()) {
      if (say) YB_LOG_WARN("metadata log {}: still failing ({}); changes stay refused", options_.dir, st.ToString());
      return;
    }
    space = CheckSpace();
  }
  if (!space.ok()) {
    if (say) YB_LOG_WARN("metadata log {}: compacted, and still {}: changes stay refused", options_.dir, space.message());
    return;
  }
  Resume();
}

MetaLog::Stats MetaLog::stats() const {
  Stats s;
  s.records = records_.load(std::memory_order_relaxed);
  s.bytes = bytes_.load(std::memory_order_relaxed);
  s.rounds = rounds_.load(std::memory_order_relaxed);
  s.syncs = syncs_.load(std::memory_order_relaxed);
  s.sync_us = sync_us_.load(std::memory_order_relaxed);
  {
    MutexLock lock(mu_);
    s.last_seq = next_seq_ - 1;
  }
  s.synced_seq = synced_seq_.load(std::memory_order_relaxed);
  s.snapshot_seq = snapshot_seq_.load(std::memory_order_relaxed);
  s.snapshots = snapshots_.load(std::memory_order_relaxed);
  s.last_snapshot_ms = last_snapshot_ms_.load(std::memory_order_relaxed);
  s.log_bytes_since_snapshot = since_snapshot_.load(std::memory_order_relaxed);
  s.recovered_records = recovered_records_;
  s.cut_bytes = cut_bytes_;
  s.failed = failed();
  if (s.failed) {
    MutexLock lock(mu_);
    s.failure = failure_.ToString();
  }
  s.failures = failures_.load(std::memory_order_relaxed);
  s.free_bytes = free_bytes_.load(std::memory_order_relaxed);
  return s;
}

}  // namespace yb::ha
