// Store: metadata, removal and registered memory (py_store.h).
#include "py_store.h"

namespace yb::py_store {

int Store::IsExist(const std::string& key) {
  auto c = Ready("is_exist");
  if (!c) return kInvalidParams;
  py::gil_scoped_release unlocked;
  auto r = c->IsExist(key);
  return r.ok() ? (*r ? 1 : 0) : r.status().mooncake_code();
}

std::vector<int> Store::BatchIsExist(const std::vector<std::string>& keys) {
  auto c = Ready("batch_is_exist");
  if (!c) return Fill(keys.size());
  std::vector<yb::Result<bool>> res;
  {
    py::gil_scoped_release unlocked;
    res = c->BatchIsExist(keys);
  }
  std::vector<int> out;
  for (const auto& r : res) out.push_back(r.ok() ? (*r ? 1 : 0) : r.status().mooncake_code());
  return out;
}

std::vector<PyReplicaDescriptor> Store::GetReplicaDesc(const std::string& key) {
  std::vector<PyReplicaDescriptor> out;
  auto c = Ready("get_replica_desc");
  if (!c) return out;
  yb::Result<yb::Client::QueryResult> q(yb::Status(yb::Code::kInternal, ""));
  {
    py::gil_scoped_release unlocked;
    q = c->Query(key);
  }
  if (!q.ok()) return out;
  // Where each holder serves its segments, for the memory descriptors (one listing per call).
  std::map<yb::SegmentId, const yb::SegmentUsage*> by_id;
  yb::Result<std::vector<yb::SegmentUsage>> segments(std::vector<yb::SegmentUsage>{});
  {
    py::gil_scoped_release unlocked;
    segments = c->ListSegments();
  }
  if (segments.ok()) {
    for (const auto& u : *segments) by_id[u.desc.id] = &u;
  }
  for (const auto& r : q->replicas) {
    PyReplicaDescriptor d{r, {}, {}};
    if (r.kind == yb::ReplicaKind::kMemory) {
      d.memory.buffer_descriptor.size = r.size;
      if (auto it = by_id.find(r.segment); it != by_id.end()) {
        d.memory.buffer_descriptor.buffer_address = it->second->desc.base + r.offset;
        d.memory.buffer_descriptor.transport_endpoint = it->second->desc.endpoint;
      }
    } else {
      d.disk.object_size = r.size;
    }
    out.push_back(std::move(d));
  }
  return out;
}

std::map<std::string, std::vector<PyReplicaDescriptor>> Store::BatchGetReplicaDesc(
    const std::vector<std::string>& keys) {
  std::map<std::string, std::vector<PyReplicaDescriptor>> out;
  for (const auto& k : keys) out[k] = GetReplicaDesc(k);
  return out;
}

int64_t Store::GetSize(const std::string& key) {
  auto c = Ready("get_size");
  if (!c) return kInvalidParams;
  py::gil_scoped_release unlocked;
  return SizeOrCode(c->GetSize(key));
}

int Store::Remove(const std::string& key, bool force) {
  auto c = Ready("remove");
  if (!c) return kInvalidParams;
  py::gil_scoped_release unlocked;
  return c->Remove(key, force).mooncake_code();
}

int64_t Store::RemoveByRegex(const std::string& pattern, bool force) {
  auto c = Ready("remove_by_regex");
  if (!c) return kInvalidParams;
  py::gil_scoped_release unlocked;
  return SizeOrCode(c->RemoveByRegex(pattern, force));
}

int64_t Store::RemoveAll(bool force) {
  auto c = Ready("remove_all");
  if (!c) return kInvalidParams;
  py::gil_scoped_release unlocked;
  return SizeOrCode(c->RemoveAll(force));
}

std::vector<int> Store::BatchRemove(const std::vector<std::string>& keys, bool force) {
  auto c = Ready("batch_remove");
  if (!c) return Fill(keys.size());
  std::vector<yb::Status> res;
  {
    py::gil_scoped_release unlocked;
    res = c->BatchRemove(keys, force);
  }
  return Codes(res);
}

int Store::RegisterBuffer(const py::object& buffer, uint64_t size) {
  auto c = Ready("register_buffer");
  if (!c) return kInvalidParams;
  Memory m = ToMemory(buffer, size, false, "register_buffer");
  if (m.code != 0) return m.code;
  return c->RegisterBuffer(m.ptr, size).mooncake_code();
}

int Store::UnregisterBuffer(const py::object& buffer) {
  auto c = Ready("unregister_buffer");
  if (!c) return kInvalidParams;
  Memory m = ToMemory(buffer, 0, false, "unregister_buffer");
  if (m.code != 0) return m.code;
  return c->UnregisterBuffer(m.ptr).mooncake_code();
}

std::string Store::GetHostname() {
  auto c = Ready("get_hostname");
  return c ? c->hostname() : std::string();
}

}  // namespace yb::py_store
