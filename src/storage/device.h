// Device: where the SSD tier keeps its files, a flat directory of named files (CacheLib navy's
// Device, for a tier that writes whole files): the StorageEngine sees only this. FileDevice is a
// directory of the file system; MemoryDevice (storage/memory_device.h) holds the files in memory
// and can add latency, fail operations and damage bytes, for tests.
//
// Names are plain file names inside the device ("bucket-3.data"). Errors are FILE_* codes whose
// message names the file (Where(name)) and the system error. Thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/files.h"
#include "yuebing/status.h"

namespace yb::storage {

class Device {
 public:
  virtual ~Device() = default;

  // Makes the directory ready (created, owner-only); FILE_OPEN_FAIL when it cannot be.
  virtual Status Prepare() = 0;
  // The names of the files there.
  virtual Result<std::vector<std::string>> List() const = 0;
  // Writes `parts`, in order, as the whole content of a new file `name` (one already there is
  // replaced) and makes the content durable; on failure the file may be left partly written.
  virtual Status WriteDurable(const std::string& name, const std::vector<std::string_view>& parts) = 0;
  // Appends `data` to `name` (created if absent) and makes it durable, its name included.
  virtual Status AppendDurable(const std::string& name, std::string_view data) = 0;
  // Reads `size` bytes at `offset` of `name`: FILE_OPEN_FAIL when it cannot be opened,
  // FILE_READ_FAIL when the read fails or comes short.
  virtual Status ReadAt(const std::string& name, uint64_t offset, void* buffer, uint64_t size) const = 0;
  // The whole file: FILE_NOT_FOUND when there is none.
  virtual Result<std::string> ReadAll(const std::string& name) const = 0;
  // The file's size: FILE_NOT_FOUND when there is none.
  virtual Result<uint64_t> Size(const std::string& name) const = 0;
  // Renames `from` to `to` (replacing it) and makes the new name durable.
  virtual Status Rename(const std::string& from, const std::string& to) = 0;
  // Removes the files (a missing one is no error) and makes that durable, as far as it can.
  virtual void Remove(const std::vector<std::string>& names) = 0;
  // Bytes that may still be written; 0 on a full device.
  virtual uint64_t FreeBytes() const = 0;
  // The file as messages name it ("/ssd/yb/bucket-3.data", "memory:bucket-3.data"); "": the device.
  virtual std::string Where(const std::string& name) const = 0;
};

// The files of directory `dir`. `fault` (tests: a failing or full disk) is asked before each
// write, sync, open and read, and for "space" by FreeBytes (common/files.h).
std::shared_ptr<Device> MakeFileDevice(std::string dir, FaultHook fault = {});

}  // namespace yb::storage
