#include "storage/storage_engine.h"

#include <xxhash.h>

#include <algorithm>
#include <cstring>

#include "common/checksum.h"
#include "common/files.h"
#include "common/log.h"

namespace yb::storage {
namespace {

constexpr uint32_t kMetaMagic = 0x4D424259;  // "YBBM"
// Version 2: an entry's checksum is the object's (common/checksum.h). Version 1's was XXH3-64 of
// the whole value (the same for values up to 64 KiB); its buckets are still read.
constexpr uint32_t kMetaVersion = 2;
constexpr uint32_t kMetaVersionWholeXxh3 = 1;
constexpr uint32_t kForgottenMagic = 0x46424259;  // "YBBF": one record of the forgotten log
const std::string kForgotten = "forgotten.log";
const std::string kForgottenTmp = "forgotten.log.tmp";

template <typename T>
void Append(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof(v));
}

template <typename T>
bool Take(std::string_view in, size_t& pos, T* v) {
  if (pos > in.size() || in.size() - pos < sizeof(T)) return false;
  std::memcpy(v, in.data() + pos, sizeof(T));
  pos += sizeof(T);
  return true;
}

}  // namespace

StorageEngine::StorageEngine(StorageConfig config)
    : config_(std::move(config)),
      device_(config_.device ? config_.device : MakeFileDevice(config_.path, config_.fault)) {}

std::string StorageEngine::DataName(uint64_t id) { return "bucket-" + std::to_string(id) + ".data"; }
std::string StorageEngine::MetaName(uint64_t id) { return "bucket-" + std::to_string(id) + ".meta"; }

void StorageEngine::DeleteFiles(uint64_t id) const {
  device_->Remove({DataName(id), MetaName(id), MetaName(id) + ".tmp"});
}

Result<std::vector<std::pair<std::string, StorageEngine::Entry>>> StorageEngine::LoadMeta(uint64_t id) const {
  auto meta = device_->ReadAll(MetaName(id));
  if (!meta.ok()) return meta.status();
  const std::string& m = *meta;
  auto corrupt = [&](const char* why) {
    return Status(Code::kChecksumMismatch, device_->Where(MetaName(id)) + ": " + why);
  };
  if (m.size() < 20) return corrupt("too short");
  uint64_t trailer;
  std::memcpy(&trailer, m.data() + m.size() - 8, 8);
  if (XXH3_64bits(m.data(), m.size() - 8) != trailer) return corrupt("checksum does not match");
  // Every field is read from the body, never from the trailer after it (a file whose checksum
  // matches is still what someone wrote: a damaged or crafted one must not be read past its end).
  const std::string_view body(m.data(), m.size() - 8);
  size_t pos = 0;
  uint32_t magic, version, count;
  if (!Take(body, pos, &magic) || !Take(body, pos, &version) || !Take(body, pos, &count) || magic != kMetaMagic ||
      (version != kMetaVersion && version != kMetaVersionWholeXxh3)) {
    return corrupt("bad header");
  }
  auto data_size = device_->Size(DataName(id));
  if (!data_size.ok()) return corrupt("its data file is missing");
  std::vector<std::pair<std::string, Entry>> out;
  for (uint32_t i = 0; i < count; ++i) {
    uint32_t klen;
    Entry e{id, 0, 0, 0, version == kMetaVersionWholeXxh3};
    if (!Take(body, pos, &klen) || body.size() - pos < klen) return corrupt("truncated entry");
    std::string key(body.substr(pos, klen));
    pos += klen;
    if (!Take(body, pos, &e.offset) || !Take(body, pos, &e.size) || !Take(body, pos, &e.checksum))
      return corrupt("truncated entry");
    const uint64_t file_size = *data_size;
    if (e.size > file_size || e.offset > file_size - e.size) return corrupt("entry beyond the data file");
    out.emplace_back(std::move(key), e);
  }
  return out;
}

Result<std::vector<StoredObject>> StorageEngine::Open() {
  if (config_.path.empty() && !config_.device) return Status(Code::kInvalidParams, "storage path is empty");
  auto policy = MakeBucketPolicy(config_.eviction_policy);
  if (!policy.ok()) return policy.status();
  policy_ = std::move(policy).value();
  if (config_.low_watermark > config_.high_watermark || config_.high_watermark > 1.0 || config_.low_watermark < 0) {
    return Status(Code::kInvalidParams, "need 0 <= low watermark <= high watermark <= 1");
  }
  YB_RETURN_IF_ERROR(device_->Prepare());
  auto names = device_->List();
  if (!names.ok()) return Status(Code::kInvalidParams, "storage directory: " + names.status().message());
  std::map<uint64_t, std::pair<bool, bool>> seen;  // id -> (data, meta)
  for (const std::string& name : *names) {
    uint64_t id = 0;
    char kind[16] = {};
    if (std::sscanf(name.c_str(), "bucket-%lu.%15s", &id, kind) != 2) continue;
    std::string k = kind;
    if (k == "data") seen[id].first = true;
    if (k == "meta") seen[id].second = true;
    if (k == "meta.tmp") seen[id];  // an interrupted write: removed below
  }
  std::vector<StoredObject> recovered;
  bool log_intact = true;
  device_->Remove({kForgottenTmp});  // an interrupted rewrite: the log itself is whole
  std::unordered_map<std::string, uint64_t> forgotten = LoadForgotten(&log_intact);
  MutexLock lock(mu_);
  for (const auto& [id, files] : seen) {
    next_id_ = std::max(next_id_, id + 1);
    auto entries =
        files.first && files.second
            ? LoadMeta(id)
            : Result<std::vector<std::pair<std::string, Entry>>>(Status(Code::kChecksumMismatch, "incomplete"));
    if (!entries.ok()) {
      YB_LOG_WARN("storage: dropping bucket {}: {}", id, entries.status().ToString());
      DeleteFiles(id);
      continue;
    }
    Bucket b;
    b.id = id;
    for (auto& [key, e] : *entries) {
      b.bytes += e.size;
      b.keys.push_back(key);
      auto f = forgotten.find(key);
      if (f != forgotten.end() && id <= f->second) continue;  // forgotten: removed or replaced
      index_[key] = e;  // buckets load in id order: a later value of a key replaces an earlier one
    }
    used_ += b.bytes;
    buckets_.emplace(id, std::move(b));
  }
  // Records about buckets that are all gone are no longer needed; a torn tail is cut off.
  const size_t before = forgotten.size();
  const uint64_t oldest = buckets_.empty() ? next_id_ : buckets_.begin()->first;
  std::erase_if(forgotten, [&](const auto& r) { return r.second < oldest; });
  if (!log_intact || forgotten.size() != before) {
    Status st = WriteForgotten(forgotten);
    if (!st.ok()) YB_LOG_WARN("storage: cannot rewrite the forgotten log: {}", st.ToString());
  }
  for (const auto& [key, e] : index_) recovered.push_back({key, e.size, e.bucket, e.checksum});
  YB_LOG_INFO("storage: {} buckets, {} objects recovered from {}", buckets_.size(), recovered.size(),
              device_->Where(""));
  return recovered;
}

Status StorageEngine::WriteBucket(uint64_t id, const std::vector<Value>& values, size_t from, size_t to,
                                  std::vector<Entry>* written) {
  std::vector<std::string_view> parts;
  std::string meta;
  Append(meta, kMetaMagic);
  Append(meta, kMetaVersion);
  Append(meta, static_cast<uint32_t>(to - from));
  uint64_t off = 0;
  for (size_t i = from; i < to; ++i) {
    parts.push_back(values[i].data);
    Entry e{id, off, values[i].data.size(), ObjectChecksum(values[i].data.data(), values[i].data.size()), false};
    Append(meta, static_cast<uint32_t>(values[i].key.size()));
    meta += values[i].key;
    Append(meta, e.offset);
    Append(meta, e.size);
    Append(meta, e.checksum);
    written->push_back(e);
    off += e.size;
  }
  Append(meta, XXH3_64bits(meta.data(), meta.size()));
  Status st = device_->WriteDurable(DataName(id), parts);
  if (st.ok()) st = device_->WriteDurable(MetaName(id) + ".tmp", {meta});
  if (st.ok()) st = device_->Rename(MetaName(id) + ".tmp", MetaName(id));  // the bucket exists from here
  if (!st.ok()) DeleteFiles(id);
  return st;
}

Status StorageEngine::Put(const std::vector<Value>& values, size_t* stored, std::vector<uint64_t>* checksums) {
  if (stored) *stored = 0;
  if (checksums) checksums->clear();
  uint64_t total = 0;
  for (const auto& v : values) {
    if (v.key.empty()) return Status(Code::kInvalidKey, "empty key");
    total += v.data.size();
  }
  {
    MutexLock lock(mu_);
    if (used_ + total > config_.total_size_limit) {
      return Status(Code::kNoAvailableHandle, "storage " + device_->Where("") + " is full (" + std::to_string(used_) +
                                                  " of " + std::to_string(config_.total_size_limit) +
                                                  " bytes used): evict buckets first");
    }
  }
  for (size_t from = 0; from < values.size();) {
    size_t to = from;
    uint64_t bytes = 0;
    while (to < values.size() && to - from < config_.bucket_keys_limit &&
           (to == from || bytes + values[to].data.size() <= config_.bucket_size_limit)) {
      bytes += values[to++].data.size();
    }
    uint64_t id;
    {
      MutexLock lock(mu_);
      id = next_id_++;
    }
    std::vector<Entry> written;
    YB_RETURN_IF_ERROR(WriteBucket(id, values, from, to, &written));
    MutexLock lock(mu_);
    Bucket b;
    b.id = id;
    b.bytes = bytes;
    b.last_read = ++read_clock_;
    for (size_t i = from; i < to; ++i) {
      index_[values[i].key] = written[i - from];
      b.keys.push_back(values[i].key);
      if (checksums) checksums->push_back(written[i - from].checksum);
    }
    used_ += bytes;
    buckets_.emplace(id, std::move(b));
    from = to;
    if (stored) *stored = to;
  }
  return Status::OK();
}

Result<uint64_t> StorageEngine::Read(const std::string& key, void* buffer, uint64_t size) {
  Entry e;
  std::shared_ptr<SharedMutex> readers;
  {
    MutexLock lock(mu_);
    auto it = index_.find(key);
    if (it == index_.end()) return Status(Code::kObjectNotFound, "key not on this SSD tier");
    e = it->second;
    auto& b = buckets_.at(e.bucket);
    b.last_read = ++read_clock_;
    readers = b.readers;
  }
  if (size < e.size) return Status(Code::kBufferOverflow, "buffer smaller than the object");
  ReaderLock reading(*readers);  // eviction deletes the files only after this ends
  YB_RETURN_IF_ERROR(device_->ReadAt(DataName(e.bucket), e.offset, buffer, e.size));
  if ((e.whole_xxh3 ? Xxh3(buffer, e.size) : ObjectChecksum(buffer, e.size)) != e.checksum) {
    return Status(Code::kChecksumMismatch, "object at offset " + std::to_string(e.offset) + " of " +
                                               device_->Where(DataName(e.bucket)) + " is damaged (checksum mismatch)");
  }
  return e.size;
}

bool StorageEngine::Contains(const std::string& key) const {
  MutexLock lock(mu_);
  return index_.count(key) != 0;
}

std::vector<StoredObject> StorageEngine::List() const {
  MutexLock lock(mu_);
  std::vector<StoredObject> out;
  out.reserve(index_.size());
  for (const auto& [key, e] : index_) out.push_back({key, e.size, e.bucket, e.checksum});
  return out;
}

namespace {
void AppendForgotten(std::string& out, const std::string& key, uint64_t bucket) {
  const size_t start = out.size();
  Append(out, kForgottenMagic);
  Append(out, static_cast<uint32_t>(key.size()));
  out.append(key);
  Append(out, bucket);
  Append(out, XXH3_64bits(out.data() + start, out.size() - start));
}
}  // namespace

Status StorageEngine::Forget(const std::vector<std::string>& keys) {
  std::string records;
  {
    MutexLock lock(mu_);
    for (const auto& key : keys) {
      auto it = index_.find(key);
      if (it == index_.end()) continue;  // never stored, or forgotten already (recorded then)
      AppendForgotten(records, key, it->second.bucket);
      index_.erase(it);
    }
  }
  if (records.empty()) return Status::OK();
  return device_->AppendDurable(kForgotten, records);
}

std::unordered_map<std::string, uint64_t> StorageEngine::LoadForgotten(bool* intact) const {
  std::unordered_map<std::string, uint64_t> out;
  *intact = true;
  auto data = device_->ReadAll(kForgotten);
  if (!data.ok()) {
    // None yet, or unreadable: then it is left as it is (a rewrite would lose its records).
    if (data.status().code() != Code::kFileNotFound) YB_LOG_WARN("storage: {}", data.status().ToString());
    return out;
  }
  // A record: magic, key length, key, bucket, then the XXH3-64 of those fields.
  auto take = [&data](size_t& pos, std::string* key, uint64_t* bucket) {
    const size_t start = pos;
    uint32_t magic = 0, klen = 0;
    uint64_t sum = 0;
    if (!Take(*data, pos, &magic) || magic != kForgottenMagic || !Take(*data, pos, &klen) ||
        data->size() - pos < klen) {
      return false;
    }
    key->assign(*data, pos, klen);
    pos += klen;
    if (!Take(*data, pos, bucket)) return false;
    const uint64_t expect = XXH3_64bits(data->data() + start, pos - start);
    return Take(*data, pos, &sum) && sum == expect;
  };
  std::string key;
  uint64_t bucket = 0;
  for (size_t pos = 0; pos < data->size();) {
    if (!take(pos, &key, &bucket)) {
      *intact = false;
      YB_LOG_WARN("storage: {} ends in a torn or damaged record; the records before it hold",
                  device_->Where(kForgotten));
      break;
    }
    uint64_t& b = out[key];
    b = std::max(b, bucket);
  }
  return out;
}

Status StorageEngine::WriteForgotten(const std::unordered_map<std::string, uint64_t>& records) const {
  std::string data;
  for (const auto& [key, bucket] : records) AppendForgotten(data, key, bucket);
  YB_RETURN_IF_ERROR(device_->WriteDurable(kForgottenTmp, {data}));
  return device_->Rename(kForgottenTmp, kForgotten);
}

std::vector<std::string> StorageEngine::LiveKeysLocked(const Bucket& b) const {
  std::vector<std::string> out;
  for (const auto& k : b.keys) {
    auto it = index_.find(k);
    if (it != index_.end() && it->second.bucket == b.id) out.push_back(k);
  }
  return out;
}

std::vector<uint64_t> StorageEngine::PickEvictions(uint64_t incoming) const {
  MutexLock lock(mu_);
  double limit = static_cast<double>(config_.total_size_limit);
  double used = static_cast<double>(used_ + incoming);
  if (used <= config_.high_watermark * limit) return {};
  std::vector<BucketStats> order;
  order.reserve(buckets_.size());
  for (const auto& [id, b] : buckets_) order.push_back({id, b.bytes, b.last_read});
  if (policy_) policy_->Order(order);  // none before Open: id order
  std::vector<uint64_t> out;
  double left = used;
  for (const BucketStats& b : order) {
    if (left <= config_.low_watermark * limit) break;
    out.push_back(b.id);
    left -= static_cast<double>(b.bytes);
  }
  return out;
}

Status StorageEngine::EvictBucket(uint64_t id,
                                  const std::function<Status(const std::vector<std::string>&)>& tell_master) {
  std::vector<std::string> keys;
  {
    MutexLock lock(mu_);
    auto it = buckets_.find(id);
    if (it == buckets_.end()) return Status(Code::kObjectNotFound, "no bucket " + std::to_string(id));
    keys = LiveKeysLocked(it->second);
  }
  Status told = keys.empty() ? Status::OK() : tell_master(keys);
  if (!told.ok()) {
    YB_LOG_WARN("storage: keeping bucket {}: the master could not be told: {}", id, told.ToString());
    return told;
  }
  std::shared_ptr<SharedMutex> readers;
  uint64_t bytes = 0;
  {
    MutexLock lock(mu_);
    auto it = buckets_.find(id);
    if (it == buckets_.end()) return Status::OK();
    for (const auto& k : LiveKeysLocked(it->second)) index_.erase(k);
    readers = it->second.readers;
    bytes = it->second.bytes;
    buckets_.erase(it);
    used_ -= bytes;
  }
  WriterLock wait_for_readers(*readers);
  DeleteFiles(id);
  return Status::OK();
}

uint64_t StorageEngine::used_bytes() const {
  MutexLock lock(mu_);
  return used_;
}

size_t StorageEngine::object_count() const {
  MutexLock lock(mu_);
  return index_.size();
}

size_t StorageEngine::bucket_count() const {
  MutexLock lock(mu_);
  return buckets_.size();
}

}  // namespace yb::storage
