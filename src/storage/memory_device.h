// MemoryDevice: the SSD tier's files in memory (storage/device.h), for tests: a device that takes
// time (each operation waits its latency on the given clock), fails (a FaultHook's errno, as the
// file device's; a capacity past which writes fail with ENOSPC) and damages bytes (Damage: what a
// bad sector returns). CacheLib navy's MockDevice plays this part. Thread-safe.
#pragma once

#include <chrono>
#include <map>
#include <string>

#include "common/clock.h"
#include "common/thread_annotations.h"
#include "storage/device.h"

namespace yb::storage {

class MemoryDevice final : public Device {
 public:
  struct Options {
    // Bytes its files may hold in all; a write past it fails with ENOSPC.
    uint64_t capacity = UINT64_MAX;
    // Each read (ReadAt, ReadAll) and each write (WriteDurable, AppendDurable, Rename) first waits
    // this long on `clock` (none: no wait).
    const Clock* clock = nullptr;
    std::chrono::milliseconds read_latency{0};
    std::chrono::milliseconds write_latency{0};
    // Asked as the file device asks it ("write", "sync", "open", "read", "space"), with
    // Where(name): a non-zero errno fails the operation.
    FaultHook fault;
  };

  MemoryDevice() : MemoryDevice(Options{}) {}
  explicit MemoryDevice(Options options) : options_(std::move(options)) {}

  Status Prepare() override { return Status::OK(); }
  Result<std::vector<std::string>> List() const override;
  Status WriteDurable(const std::string& name, const std::vector<std::string_view>& parts) override;
  Status AppendDurable(const std::string& name, std::string_view data) override;
  Status ReadAt(const std::string& name, uint64_t offset, void* buffer, uint64_t size) const override;
  Result<std::string> ReadAll(const std::string& name) const override;
  Result<uint64_t> Size(const std::string& name) const override;
  Status Rename(const std::string& from, const std::string& to) override;
  void Remove(const std::vector<std::string>& names) override;
  uint64_t FreeBytes() const override;
  std::string Where(const std::string& name) const override { return name.empty() ? "memory" : "memory:" + name; }

  // Tests: flips the bits of the byte at `offset` of `name` (false when there is no such byte).
  bool Damage(const std::string& name, uint64_t offset);
  // Tests: the file's content as it is now (empty when there is none), and whether it exists.
  std::string Content(const std::string& name) const;
  bool Exists(const std::string& name) const;
  // Tests: a file written as it is, with no latency or fault (a torn write left behind).
  void Put(const std::string& name, std::string content);

 private:
  // Waits `latency`, then asks the fault hook about `op` on `name`: its errno, or 0.
  int Enter(std::chrono::milliseconds latency, std::string_view op, const std::string& name) const;
  uint64_t UsedLocked() const REQUIRES(mu_);

  const Options options_;
  mutable Mutex mu_;
  std::map<std::string, std::string> files_ GUARDED_BY(mu_);
};

}  // namespace yb::storage
