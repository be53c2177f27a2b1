// Store: writes (py_store.h).
#include "py_store.h"

namespace yb::py_store {

int Store::Put(const std::string& key, const py::object& value, const PyReplicateConfig& cfg) {
  auto c = Ready("put");
  if (!c || NoStaging("put")) return kInvalidParams;
  ByteView v(value, false, "put");
  py::gil_scoped_release unlocked;
  return c->Put(key, v.data(), v.size(), cfg.ToCpp()).mooncake_code();
}

int Store::Upsert(const std::string& key, const py::object& value, const PyReplicateConfig& cfg) {
  auto c = Ready("upsert");
  if (!c || NoStaging("upsert")) return kInvalidParams;
  ByteView v(value, false, "upsert");
  py::gil_scoped_release unlocked;
  return c->Upsert(key, {{v.data(), v.size()}}, cfg.ToCpp()).mooncake_code();
}

int Store::PutParts(const std::string& key, const py::args& parts, const PyReplicateConfig& cfg, bool upsert) {
  const char* what = upsert ? "upsert_parts" : "put_parts";
  auto c = Ready(what);
  if (!c || NoStaging(what)) return kInvalidParams;
  std::vector<ByteView> views;
  std::vector<yb::Slice> slices;
  views.reserve(parts.size());
  for (const auto& p : parts) {
    views.emplace_back(p, false, what);
    if (views.back().size() > 0) slices.push_back({views.back().data(), views.back().size()});
  }
  py::gil_scoped_release unlocked;
  return (upsert ? c->Upsert(key, slices, cfg.ToCpp()) : c->Put(key, slices, cfg.ToCpp())).mooncake_code();
}

int Store::PutBatch(const std::vector<std::string>& keys, const std::vector<py::object>& values,
                    const PyReplicateConfig& cfg, bool upsert) {
  const char* what = upsert ? "upsert_batch" : "put_batch";
  auto c = Ready(what);
  if (!c || NoStaging(what)) return kInvalidParams;
  if (keys.size() != values.size()) return Invalid(std::string(what) + ": keys and values differ in length");
  std::vector<ByteView> views;
  std::vector<std::vector<yb::Slice>> slices;
  views.reserve(values.size());
  for (const auto& v : values) {
    views.emplace_back(v, false, what);
    slices.push_back({{views.back().data(), views.back().size()}});
  }
  std::vector<yb::Status> res;
  {
    py::gil_scoped_release unlocked;
    res = Write(*c, keys, slices, cfg, upsert);
  }
  for (const auto& s : res) {
    if (!s.ok()) return s.mooncake_code();
  }
  return 0;
}

int Store::PutFrom(const std::string& key, const py::object& buffer, uint64_t size, const PyReplicateConfig& cfg,
                   bool upsert) {
  const char* what = upsert ? "upsert_from" : "put_from";
  auto c = Ready(what);
  if (!c) return kInvalidParams;
  Memory m = ToMemory(buffer, size, false, what);
  if (m.code != 0) return m.code;
  py::gil_scoped_release unlocked;
  std::vector<yb::Slice> s{{m.ptr, size}};
  return (upsert ? c->Upsert(key, s, cfg.ToCpp()) : c->Put(key, s, cfg.ToCpp())).mooncake_code();
}

int Store::PutFromWithMetadata(const std::string& key, const py::object& buffer, const py::object& metadata,
                               uint64_t size, uint64_t metadata_size, const PyReplicateConfig& cfg) {
  auto c = Ready("put_from_with_metadata");
  if (!c) return kInvalidParams;
  Memory data = ToMemory(buffer, size, false, "put_from_with_metadata");
  Memory meta = ToMemory(metadata, metadata_size, false, "put_from_with_metadata");
  if (data.code != 0) return data.code;
  if (meta.code != 0) return meta.code;
  std::vector<yb::Slice> slices;
  if (metadata_size > 0) slices.push_back({meta.ptr, metadata_size});
  if (size > 0) slices.push_back({data.ptr, size});
  py::gil_scoped_release unlocked;
  return c->Put(key, slices, cfg.ToCpp()).mooncake_code();
}

std::vector<int> Store::BatchPutFrom(const std::vector<std::string>& keys, const std::vector<py::object>& buffers,
                                     const std::vector<uint64_t>& sizes, const PyReplicateConfig& cfg, bool upsert) {
  const char* what = upsert ? "batch_upsert_from" : "batch_put_from";
  if (!SameLength(keys.size(), buffers.size(), sizes.size(), what)) return Fill(keys.size());
  std::vector<std::vector<py::object>> multi;
  std::vector<std::vector<uint64_t>> multi_sizes;
  for (size_t i = 0; i < keys.size(); ++i) {
    multi.push_back({buffers[i]});
    multi_sizes.push_back({sizes[i]});
  }
  return WriteMulti(keys, multi, multi_sizes, cfg, upsert, what);
}

std::vector<int> Store::BatchPutFromMulti(const std::vector<std::string>& keys,
                                          const std::vector<std::vector<py::object>>& all_buffers,
                                          const std::vector<std::vector<uint64_t>>& all_sizes,
                                          const PyReplicateConfig& cfg) {
  return WriteMulti(keys, all_buffers, all_sizes, cfg, false, "batch_put_from_multi_buffers");
}

std::vector<int> Store::BatchUpsertFromMulti(const std::vector<std::string>& keys,
                                             const std::vector<std::vector<py::object>>& all_buffers,
                                             const std::vector<std::vector<uint64_t>>& all_sizes,
                                             const PyReplicateConfig& cfg) {
  return WriteMulti(keys, all_buffers, all_sizes, cfg, true, "batch_upsert_from_multi_buffers");
}

std::vector<yb::Status> Store::Write(yb::Client& c, const std::vector<std::string>& keys,
                                     const std::vector<std::vector<yb::Slice>>& slices, const PyReplicateConfig& cfg,
                                     bool upsert) {
  return upsert ? c.BatchUpsert(keys, slices, cfg.ToCpp()) : c.BatchPut(keys, slices, cfg.ToCpp());
}

std::vector<int> Store::WriteMulti(const std::vector<std::string>& keys,
                                   const std::vector<std::vector<py::object>>& all_buffers,
                                   const std::vector<std::vector<uint64_t>>& all_sizes, const PyReplicateConfig& cfg,
                                   bool upsert, const char* what) {
  auto c = Ready(what);
  if (!c) return Fill(keys.size());
  if (!SameLength(keys.size(), all_buffers.size(), all_sizes.size(), what)) return Fill(keys.size());
  std::vector<Memory> keep;
  std::vector<int> codes;
  auto slices = ToSlices(all_buffers, all_sizes, false, what, keep, codes);
  return Batched<int>(keys, slices, codes,
                      [&](const auto& k, const auto& s) { return Codes(Write(*c, k, s, cfg, upsert)); });
}

}  // namespace yb::py_store
