#include "storage/memory_device.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace yb::storage {
namespace {

Status Failed(Code code, const std::string& what, const std::string& where, int err) {
  return Status(code, what + " " + where + ": " + std::strerror(err));
}

}  // namespace

int MemoryDevice::Enter(std::chrono::milliseconds latency, std::string_view op, const std::string& name) const {
  if (options_.clock && latency.count() > 0) options_.clock->SleepUntil(options_.clock->NowMs() + latency.count());
  return Injected(options_.fault, op, Where(name));
}

uint64_t MemoryDevice::UsedLocked() const {
  uint64_t used = 0;
  for (const auto& [name, content] : files_) used += content.size();
  return used;
}

Result<std::vector<std::string>> MemoryDevice::List() const {
  MutexLock lock(mu_);
  std::vector<std::string> out;
  for (const auto& [name, content] : files_) out.push_back(name);
  return out;
}

Status MemoryDevice::WriteDurable(const std::string& name, const std::vector<std::string_view>& parts) {
  if (int err = Enter(options_.write_latency, "write", name)) {
    return Failed(Code::kFileWriteFail, "cannot write", Where(name), err);
  }
  std::string content;
  for (auto part : parts) content.append(part);
  {
    MutexLock lock(mu_);
    auto it = files_.find(name);
    const uint64_t others = UsedLocked() - (it == files_.end() ? 0 : it->second.size());
    if (others + content.size() > options_.capacity) {
      // What fit is written, as a full disk leaves a partial file.
      content.resize(options_.capacity > others ? options_.capacity - others : 0);
      files_[name] = std::move(content);
      return Failed(Code::kFileWriteFail, "cannot write", Where(name), ENOSPC);
    }
    files_[name] = std::move(content);
  }
  if (int err = Injected(options_.fault, "sync", Where(name))) {
    return Failed(Code::kFileWriteFail, "cannot sync", Where(name), err);
  }
  return Status::OK();
}

Status MemoryDevice::AppendDurable(const std::string& name, std::string_view data) {
  if (int err = Enter(options_.write_latency, "write", name)) {
    return Failed(Code::kFileWriteFail, "cannot append to", Where(name), err);
  }
  MutexLock lock(mu_);
  if (UsedLocked() + data.size() > options_.capacity) {
    return Failed(Code::kFileWriteFail, "cannot append to", Where(name), ENOSPC);
  }
  files_[name].append(data);
  return Status::OK();
}

Status MemoryDevice::ReadAt(const std::string& name, uint64_t offset, void* buffer, uint64_t size) const {
  const int err = Enter(options_.read_latency, "read", name);
  MutexLock lock(mu_);
  auto it = files_.find(name);
  if (it == files_.end()) return Failed(Code::kFileOpenFail, "cannot open", Where(name), ENOENT);
  if (err) return Failed(Code::kFileReadFail, "cannot read", Where(name), err);
  const std::string& content = it->second;
  if (offset > content.size() || content.size() - offset < size) {
    return Status(Code::kFileReadFail, "short read from " + Where(name));
  }
  std::memcpy(buffer, content.data() + offset, size);
  return Status::OK();
}

Result<std::string> MemoryDevice::ReadAll(const std::string& name) const {
  if (int err = Enter(options_.read_latency, "open", name)) {
    return Failed(Code::kFileOpenFail, "cannot open", Where(name), err);
  }
  MutexLock lock(mu_);
  auto it = files_.find(name);
  if (it == files_.end()) return Status(Code::kFileNotFound, Where(name) + " does not exist");
  return it->second;
}

Result<uint64_t> MemoryDevice::Size(const std::string& name) const {
  MutexLock lock(mu_);
  auto it = files_.find(name);
  if (it == files_.end()) return Status(Code::kFileNotFound, Where(name) + " does not exist");
  return static_cast<uint64_t>(it->second.size());
}

Status MemoryDevice::Rename(const std::string& from, const std::string& to) {
  if (int err = Enter(options_.write_latency, "write", to)) {
    return Failed(Code::kFileWriteFail, "cannot rename", Where(from), err);
  }
  MutexLock lock(mu_);
  auto it = files_.find(from);
  if (it == files_.end()) return Failed(Code::kFileWriteFail, "cannot rename", Where(from), ENOENT);
  std::string content = std::move(it->second);
  files_.erase(it);
  files_[to] = std::move(content);
  return Status::OK();
}

void MemoryDevice::Remove(const std::vector<std::string>& names) {
  MutexLock lock(mu_);
  for (const auto& name : names) files_.erase(name);
}

uint64_t MemoryDevice::FreeBytes() const {
  if (Injected(options_.fault, "space", Where("")) != 0) return 0;
  MutexLock lock(mu_);
  const uint64_t used = UsedLocked();
  return options_.capacity > used ? options_.capacity - used : 0;
}

bool MemoryDevice::Damage(const std::string& name, uint64_t offset) {
  MutexLock lock(mu_);
  auto it = files_.find(name);
  if (it == files_.end() || offset >= it->second.size()) return false;
  it->second[offset] = static_cast<char>(~it->second[offset]);
  return true;
}

std::string MemoryDevice::Content(const std::string& name) const {
  MutexLock lock(mu_);
  auto it = files_.find(name);
  return it == files_.end() ? std::string() : it->second;
}

bool MemoryDevice::Exists(const std::string& name) const {
  MutexLock lock(mu_);
  return files_.count(name) != 0;
}

void MemoryDevice::Put(const std::string& name, std::string content) {
  MutexLock lock(mu_);
  files_[name] = std::move(content);
}

}  // namespace yb::storage
