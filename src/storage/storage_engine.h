// StorageEngine: a client's SSD tier over one directory (docs/ssd-tier.md).
//
// Objects are packed into buckets: `bucket-<id>.data` holds the values back to back and
// `bucket-<id>.meta` lists each object's key, offset, size and checksum (common/checksum.h), followed by a checksum
// of the list itself. A bucket is written data first (fsync), then its meta file under a temporary
// name (fsync), then renamed into place: a bucket without a valid meta file never existed. On Open()
// the engine scans the directory, deletes incomplete or corrupt buckets and reports the objects that
// survived. A read checks the object's checksum. Buckets are evicted whole (FIFO or LRU) between
// the high and low watermarks; the master is told first, and the files go only after the reads in
// flight on them end. Thread-safe.
//
// A key written again replaces its earlier value (the newest bucket wins, also on restart); a
// bucket's eviction reports and removes only the keys whose current value it holds.
// The client's Offloader (src/client/offloader.h) drives it: offload, registration, eviction.
// Its files live on a Device (storage/device.h: a directory, or memory in tests); which buckets go
// first is a BucketPolicy's choice (storage/bucket_policy.h).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/files.h"
#include "common/thread_annotations.h"
#include "storage/bucket_policy.h"
#include "storage/device.h"
#include "yuebing/status.h"
#include "yuebing/types.h"

namespace yb::storage {

// The user's settings (SsdTierConfig, yuebing/types.h), and the device for tests.
struct StorageConfig : SsdTierConfig {
  StorageConfig() = default;
  explicit StorageConfig(const SsdTierConfig& tier) : SsdTierConfig(tier) {}
  // Fault injection for tests (a failing device), before each write, sync and read of the
  // directory `path` (ignored when `device` is given).
  FaultHook fault;
  // Where the files live; null: the directory `path` (MakeFileDevice).
  std::shared_ptr<Device> device;
};

struct StoredObject {
  std::string key;
  uint64_t size = 0;
  uint64_t bucket = 0;
  uint64_t checksum = 0;  // the value's checksum (common/checksum.h)
};

class StorageEngine {
 public:
  explicit StorageEngine(StorageConfig config);
  // Scans the directory; returns the objects of every intact bucket. Incomplete or corrupt
  // buckets are deleted.
  Result<std::vector<StoredObject>> Open();

  struct Value {
    std::string key;
    std::string_view data;
  };
  // Writes the values as one or more new buckets, in order; all or nothing per bucket. `stored`
  // receives how many values (a prefix) are durable, also when a later bucket fails. Errors:
  // NO_AVAILABLE_HANDLE when the values do not fit under the size limit, FILE_WRITE_FAIL for I/O
  // errors (including a full disk); the message names the file and the system error.
  // `checksums`, when given, receives the checksum of each stored value (common/checksum.h).
  Status Put(const std::vector<Value>& values, size_t* stored = nullptr, std::vector<uint64_t>* checksums = nullptr);
  // Reads a whole object; CHECKSUM_MISMATCH when its bytes on disk are damaged.
  Result<uint64_t> Read(const std::string& key, void* buffer, uint64_t size);
  bool Contains(const std::string& key) const;
  // Every object in the index.
  std::vector<StoredObject> List() const;
  // Drops keys from the index (their bytes go with their buckets), durably: each is recorded in the
  // directory's `forgotten` log with the bucket it was in, so that a restart does not recover that
  // copy or an older one (a newer value in a later bucket survives). On error the keys are gone
  // from the index but may come back after a restart.
  Status Forget(const std::vector<std::string>& keys);
  Status Forget(const std::string& key) { return Forget(std::vector<std::string>{key}); }

  // Buckets to evict, in policy order, to bring usage (plus `incoming` bytes about to be written)
  // from above the high watermark to the low one.
  std::vector<uint64_t> PickEvictions(uint64_t incoming = 0) const;
  // Evicts one bucket: `tell_master` is called with its live keys first; if it fails, nothing changes.
  // Then waits for reads in flight on the bucket and deletes its files.
  Status EvictBucket(uint64_t bucket, const std::function<Status(const std::vector<std::string>&)>& tell_master);

  uint64_t used_bytes() const;
  size_t object_count() const;
  uint64_t total_size_limit() const { return config_.total_size_limit; }
  size_t bucket_count() const;
  Device& device() const { return *device_; }

 private:
  struct Entry {
    uint64_t bucket;
    uint64_t offset;
    uint64_t size;
    uint64_t checksum;
    bool whole_xxh3;  // a version 1 bucket's: XXH3-64 of the whole value
  };
  struct Bucket {
    uint64_t id = 0;
    uint64_t bytes = 0;
    uint64_t last_read = 0;  // LRU clock
    std::vector<std::string> keys;
    // Held shared by the reads in flight on the bucket, and exclusively by its eviction before the
    // files go.
    std::shared_ptr<SharedMutex> readers = std::make_shared<SharedMutex>();
  };

  static std::string DataName(uint64_t id);
  static std::string MetaName(uint64_t id);
  // Writes values[from, to) as bucket `id`; `written` receives their index entries.
  Status WriteBucket(uint64_t id, const std::vector<Value>& values, size_t from, size_t to,
                     std::vector<Entry>* written);
  Result<std::vector<std::pair<std::string, Entry>>> LoadMeta(uint64_t id) const;
  // The keys of a bucket whose index entry points into it.
  std::vector<std::string> LiveKeysLocked(const Bucket& b) const REQUIRES(mu_);
  void DeleteFiles(uint64_t id) const;
  // Reads the forgotten log: key -> the newest bucket whose copy of it is dead. `intact` is false
  // when its tail is torn or damaged (the records before it count, and the log wants a rewrite).
  std::unordered_map<std::string, uint64_t> LoadForgotten(bool* intact) const;
  // Rewrites the forgotten log with `records` (write to a temporary file, fsync, rename).
  Status WriteForgotten(const std::unordered_map<std::string, uint64_t>& records) const;

  StorageConfig config_;
  const std::shared_ptr<Device> device_;
  std::unique_ptr<BucketPolicy> policy_;  // from config_.eviction_policy, at Open
  mutable Mutex mu_;
  std::unordered_map<std::string, Entry> index_ GUARDED_BY(mu_);
  std::map<uint64_t, Bucket> buckets_ GUARDED_BY(mu_);  // by id: ascending id is write order
  uint64_t next_id_ GUARDED_BY(mu_) = 1;
  uint64_t used_ GUARDED_BY(mu_) = 0;
  uint64_t read_clock_ GUARDED_BY(mu_) = 0;
};

}  // namespace yb::storage
