// Store: reads and the sessions of layer-wise loads and stores (py_store.h).
#include <algorithm>
#include <cstring>
#include <set>

#include "common/units.h"
#include "py_store.h"

namespace yb::py_store {

py::bytes Store::Get(const std::string& key) {
  auto c = Ready("get");
  if (!c) return py::bytes();
  yb::Result<std::string> r(yb::Status(yb::Code::kInternal, ""));
  {
    py::gil_scoped_release unlocked;
    r = c->Get(key);
  }
  return r.ok() ? py::bytes(*r) : py::bytes();
}

std::vector<py::bytes> Store::GetBatch(const std::vector<std::string>& keys) {
  auto c = Ready("get_batch");
  if (!c) return std::vector<py::bytes>(keys.size(), py::bytes());
  std::vector<yb::Result<std::string>> res;
  {
    py::gil_scoped_release unlocked;
    res = c->BatchGet(keys);
  }
  std::vector<py::bytes> out;
  for (const auto& r : res) out.push_back(r.ok() ? py::bytes(*r) : py::bytes());
  return out;
}

py::object Store::GetBuffer(const std::string& key) {
  auto c = Ready("get_buffer");
  if (!c) return py::none();
  yb::Result<yb::ObjectView> r(yb::Status(yb::Code::kInternal, ""));
  {
    py::gil_scoped_release unlocked;
    r = c->GetView(key);
  }
  if (!r.ok()) return py::none();
  return py::cast(std::make_shared<BufferHandle>(std::move(r).value()));
}

py::list Store::BatchGetBuffer(const std::vector<std::string>& keys) {
  py::list out;
  auto c = Ready("batch_get_buffer");
  std::vector<yb::Result<yb::ObjectView>> res;
  if (c) {
    py::gil_scoped_release unlocked;
    res = c->BatchGetView(keys);
  }
  for (size_t i = 0; i < keys.size(); ++i) {
    if (i < res.size() && res[i].ok()) {
      out.append(py::cast(std::make_shared<BufferHandle>(std::move(res[i]).value())));
    } else {
      out.append(py::none());
    }
  }
  return out;
}

int64_t Store::GetInto(const std::string& key, const py::object& buffer, uint64_t size) {
  auto c = Ready("get_into");
  if (!c) return kInvalidParams;
  Memory m = ToMemory(buffer, size, true, "get_into");
  if (m.code != 0) return m.code;
  py::gil_scoped_release unlocked;
  return SizeOrCode(c->Get(key, m.ptr, size));
}

std::vector<int64_t> Store::BatchGetInto(const std::vector<std::string>& keys, const std::vector<py::object>& buffers,
                                         const std::vector<uint64_t>& sizes) {
  if (!SameLength(keys.size(), buffers.size(), sizes.size(), "batch_get_into")) return Fill64(keys.size());
  std::vector<std::vector<py::object>> multi;
  std::vector<std::vector<uint64_t>> multi_sizes;
  for (size_t i = 0; i < keys.size(); ++i) {
    multi.push_back({buffers[i]});
    multi_sizes.push_back({sizes[i]});
  }
  return ReadMulti(keys, multi, multi_sizes, "batch_get_into");
}

std::vector<int64_t> Store::BatchGetIntoMulti(const std::vector<std::string>& keys,
                                              const std::vector<std::vector<py::object>>& all_buffers,
                                              const std::vector<std::vector<uint64_t>>& all_sizes, bool) {
  return ReadMulti(keys, all_buffers, all_sizes, "batch_get_into_multi_buffers");
}

std::vector<std::vector<std::vector<int64_t>>> Store::GetIntoRanges(
    const std::vector<py::object>& buffers, const std::vector<std::vector<std::string>>& all_keys,
    const std::vector<std::vector<std::vector<uint64_t>>>& all_dst_offsets,
    const std::vector<std::vector<std::vector<uint64_t>>>& all_src_offsets,
    const std::vector<std::vector<std::vector<uint64_t>>>& all_sizes) {
  const char* what = "get_into_ranges";
  // Mooncake's shape: one code per destination offset of each key of each buffer, each
  // INVALID_PARAMS until its fragment is read. Lists that differ at the top fail the whole call;
  // a key whose offsets and sizes differ in length fails alone (its codes stay).
  std::vector<std::vector<std::vector<int64_t>>> out(buffers.size());
  const bool top = all_keys.size() == buffers.size() && all_dst_offsets.size() == buffers.size() &&
                   all_src_offsets.size() == buffers.size() && all_sizes.size() == buffers.size();
  std::vector<std::vector<bool>> shaped(buffers.size());
  for (size_t i = 0; i < buffers.size(); ++i) {
    const size_t nk = i < all_keys.size() ? all_keys[i].size() : 0;
    out[i].resize(nk);
    shaped[i].assign(nk, false);
    const bool keys_match =
        top && all_dst_offsets[i].size() == nk && all_src_offsets[i].size() == nk && all_sizes[i].size() == nk;
    for (size_t j = 0; j < nk; ++j) {
      const size_t nf = i < all_dst_offsets.size() && j < all_dst_offsets[i].size() ? all_dst_offsets[i][j].size() : 0;
      out[i][j].assign(nf, kInvalidParams);
      shaped[i][j] = keys_match && all_src_offsets[i][j].size() == nf && all_sizes[i][j].size() == nf;
      if (!shaped[i][j]) {
        LogError(std::string(what) + ": buffer " + std::to_string(i) + ", key " + std::to_string(j) +
                 ": offsets and sizes differ in length");
      }
    }
  }
  if (!top) {
    LogError(std::string(what) + ": buffers, keys, offsets and sizes differ in length");
    return out;
  }
  auto c = Ready(what);
  if (!c) return out;
  // The memory each buffer must span: its furthest fragment end.
  std::vector<Memory> mem;
  mem.reserve(buffers.size());
  for (size_t i = 0; i < buffers.size(); ++i) {
    uint64_t end = 0;
    for (size_t j = 0; j < all_keys[i].size(); ++j) {
      if (!shaped[i][j]) continue;
      for (size_t k = 0; k < all_sizes[i][j].size(); ++k) {
        end = std::max(end, all_dst_offsets[i][j][k] + all_sizes[i][j][k]);
      }
    }
    mem.push_back(ToMemory(buffers[i], end, true, what));
  }
  std::vector<std::string> distinct;
  {
    std::set<std::string> seen;
    for (size_t i = 0; i < all_keys.size(); ++i) {
      for (size_t j = 0; j < all_keys[i].size(); ++j) {
        if (shaped[i][j] && seen.insert(all_keys[i][j]).second) distinct.push_back(all_keys[i][j]);
      }
    }
  }
  std::vector<yb::Result<std::string>> objects;
  {
    py::gil_scoped_release unlocked;
    objects = c->BatchGet(distinct);
    std::map<std::string, const yb::Result<std::string>*> by_key;
    for (size_t d = 0; d < distinct.size(); ++d) by_key[distinct[d]] = &objects[d];
    for (size_t i = 0; i < buffers.size(); ++i) {
      for (size_t j = 0; j < all_keys[i].size(); ++j) {
        if (!shaped[i][j]) continue;
        const yb::Result<std::string>& obj = *by_key[all_keys[i][j]];
        for (size_t k = 0; k < all_sizes[i][j].size(); ++k) {
          const uint64_t src = all_src_offsets[i][j][k], dst = all_dst_offsets[i][j][k], n = all_sizes[i][j][k];
          if (mem[i].code != 0) {
            out[i][j][k] = mem[i].code;
          } else if (!obj.ok()) {
            out[i][j][k] = obj.status().mooncake_code();
          } else if (src > obj->size() || n > obj->size() - src) {
            out[i][j][k] = kInvalidParams;  // past the object's end
          } else if (yb::Status span = c->CheckCallerMemory(static_cast<char*>(mem[i].ptr) + dst, n); !span.ok()) {
            out[i][j][k] = span.mooncake_code();  // past the end of the registered buffer it starts in
          } else {
            // The buffer may be a GPU's: the driver's copy, never a CPU store there.
            yb::Status copied = yb::Client::CopyMemory(static_cast<char*>(mem[i].ptr) + dst, obj->data() + src, n);
            out[i][j][k] = copied.ok() ? static_cast<int64_t>(n) : copied.mooncake_code();
          }
        }
      }
    }
  }
  return out;
}

std::vector<int> Store::GetSessionStart(const std::vector<std::string>& keys) {
  auto c = Ready("batch_get_session_start");
  if (!c) return Fill(keys.size());
  py::gil_scoped_release unlocked;
  return Codes(c->GetSessionStart(keys));
}

int Store::GetSessionEnd(const std::vector<std::string>& keys) {
  auto c = Ready("batch_get_session_end");
  if (!c) return kInvalidParams;
  py::gil_scoped_release unlocked;
  c->GetSessionEnd(keys);
  return 0;
}

std::vector<int> Store::PutSessionStart(const std::vector<std::string>& keys, const std::vector<uint64_t>& sizes,
                                        const PyReplicateConfig& cfg) {
  auto c = Ready("batch_put_session_start");
  if (!c) return Fill(keys.size());
  if (!SameLength(keys.size(), sizes.size(), sizes.size(), "batch_put_session_start")) return Fill(keys.size());
  yb::ReplicateConfig config = cfg.ToCpp();
  py::gil_scoped_release unlocked;
  return Codes(c->PutSessionStart(keys, sizes, config));
}

std::vector<int> Store::PutSessionFinish(const std::vector<std::string>& keys, bool publish) {
  auto c = Ready(publish ? "batch_put_session_end" : "batch_put_session_revoke");
  if (!c) return Fill(keys.size());
  py::gil_scoped_release unlocked;
  return Codes(publish ? c->PutSessionEnd(keys) : c->PutSessionRevoke(keys));
}

std::vector<int> Store::SessionRanges(const std::vector<std::string>& keys,
                                      const std::vector<std::vector<py::object>>& all_buffers,
                                      const std::vector<std::vector<uint64_t>>& all_sizes,
                                      const std::vector<std::vector<uint64_t>>& all_offsets, bool read) {
  const char* what = read ? "batch_get_into_multi_buffer_ranges" : "batch_put_from_multi_buffer_ranges";
  auto c = Ready(what);
  if (!c) return Fill(keys.size());
  if (!SameLength(keys.size(), all_buffers.size(), all_sizes.size(), what) ||
      !SameLength(keys.size(), all_offsets.size(), all_offsets.size(), what)) {
    return Fill(keys.size());
  }
  std::vector<Memory> keep;
  std::vector<int> codes;
  auto slices = ToSlices(all_buffers, all_sizes, read, what, keep, codes);
  std::vector<int> out(keys.size(), 0);
  std::vector<size_t> go;
  std::vector<std::string> go_keys;
  std::vector<std::vector<yb::Slice>> go_slices;
  std::vector<std::vector<uint64_t>> go_offsets;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (codes[i] == 0 && all_offsets[i].size() != all_buffers[i].size()) {
      codes[i] = Invalid(std::string(what) + ": buffers and offsets of key " + std::to_string(i) + " differ in length");
    }
    if (codes[i] != 0) {
      out[i] = codes[i];
      continue;
    }
    go.push_back(i);
    go_keys.push_back(keys[i]);
    go_slices.push_back(std::move(slices[i]));
    go_offsets.push_back(all_offsets[i]);
  }
  if (go.empty()) return out;
  std::vector<yb::Result<uint64_t>> res;
  {
    py::gil_scoped_release unlocked;
    res = read ? c->GetSessionRanges(go_keys, go_slices, go_offsets)
               : c->PutSessionRanges(go_keys, go_slices, go_offsets);
  }
  for (size_t k = 0; k < go.size(); ++k) out[go[k]] = static_cast<int>(SizeOrCode(res[k]));
  return out;
}

std::vector<int> Store::GetIntoMultiBufferRanges(const std::vector<std::string>& keys,
                                                 const std::vector<std::vector<py::object>>& all_buffers,
                                                 const std::vector<std::vector<uint64_t>>& all_sizes,
                                                 const std::vector<std::vector<uint64_t>>& all_src_offsets) {
  return SessionRanges(keys, all_buffers, all_sizes, all_src_offsets, true);
}

std::vector<int> Store::PutFromMultiBufferRanges(const std::vector<std::string>& keys,
                                                 const std::vector<std::vector<py::object>>& all_buffers,
                                                 const std::vector<std::vector<uint64_t>>& all_sizes,
                                                 const std::vector<std::vector<uint64_t>>& all_dst_offsets) {
  return SessionRanges(keys, all_buffers, all_sizes, all_dst_offsets, false);
}

std::vector<int64_t> Store::ReadMulti(const std::vector<std::string>& keys,
                                      const std::vector<std::vector<py::object>>& all_buffers,
                                      const std::vector<std::vector<uint64_t>>& all_sizes, const char* what) {
  auto c = Ready(what);
  if (!c) return Fill64(keys.size());
  if (!SameLength(keys.size(), all_buffers.size(), all_sizes.size(), what)) return Fill64(keys.size());
  std::vector<Memory> keep;
  std::vector<int> codes;
  auto slices = ToSlices(all_buffers, all_sizes, true, what, keep, codes);
  return Batched<int64_t>(keys, slices, codes, [&](const auto& k, const auto& s) {
    std::vector<int64_t> out;
    for (const auto& r : c->BatchGet(k, s)) out.push_back(SizeOrCode(r));
    return out;
  });
}

}  // namespace yb::py_store
