// The Python binding: yuebing.MooncakeDistributedStore with the method names, arguments, defaults
// and return conventions of Mooncake's class (docs/compat.md): int statuses (0 or a negative
// Mooncake code), per-key codes in batch results, bytes for get (empty on a miss), None for a
// buffer that is not there. Exceptions only where Mooncake raises them: an argument of the wrong
// Python type. It converts arguments and calls yb::Client; the GIL is released while bytes move.
//
// Caller memory is an integer address (used as it is, as Mooncake does over TCP: registered
// buffers are the zero-copy path, other memory is staged) or a buffer-protocol object (numpy
// arrays, bytearray, memoryview, torch tensors through .numpy()), which must be C-contiguous.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "admin_http.h"
#include "client_http.h"
#include "py_extra_calls.h"
#include "py_memory.h"
#include "py_values.h"
#include "setup_config.h"
#include "common/units.h"
#include "yuebing/client.h"
#include "yuebing/embedded.h"

namespace py = pybind11;

namespace {

using namespace yb::py_values;  // NOLINT: the binding's own value types
using namespace yb::py_memory;  // NOLINT: caller memory as slices

class Store {
 public:
  ~Store() {
    py::gil_scoped_release unlocked;
    http_.reset();
    client_.reset();
  }

  int Setup(const std::string& local_hostname, const std::string& metadata_server, uint64_t global_segment_size,
            uint64_t local_buffer_size, const std::string& protocol, const std::string& rdma_devices,
            const std::string& master_server_addr, const py::object& engine, bool enable_ssd_offload,
            const std::string& ssd_offload_path, const std::string& tenant_id, bool enable_client_http_server,
            int client_http_port) {
    if (!engine.is_none()) {
      return Error(yb::Status(yb::Code::kNotSupported, "setup: a shared transfer engine object is not supported"));
    }
    yb::ClientConfig c = yb::py_setup::Config(local_hostname, metadata_server, global_segment_size, local_buffer_size,
                                              protocol, rdma_devices, master_server_addr, enable_ssd_offload,
                                              ssd_offload_path, tenant_id);
    yb::py_setup::Extras extras;
    extras.enable_client_http_server = enable_client_http_server;
    extras.client_http_port = client_http_port;
    return Connect(c, extras);
  }

  int SetupFromDict(const py::dict& d) {
    auto setup = yb::py_setup::FromDict(d);
    if (!setup.ok()) return Error(setup.status());
    return Connect(setup->config, setup->extras);
  }

  // Mooncake's setup_dummy: a client of the real client of this host (ClientConfig::real_client).
  // mem_pool_size is accepted and unused, as Mooncake's (buffers come from alloc_from_mem_pool).
  int SetupDummy(uint64_t mem_pool_size, uint64_t local_buffer_size, const std::string& server_address) {
    (void)mem_pool_size;
    yb::ClientConfig c;
    c.real_client = server_address;
    c.local_buffer_size = local_buffer_size;
    yb::ApplyEnvironment(c, [](const char* name) { return std::getenv(name); });
    return Connect(c, {});
  }

  int InitAll(const std::string& protocol, const std::string& device_name, uint64_t mount_segment_size) {
    return Setup("localhost", "P2PHANDSHAKE", mount_segment_size, yb::py_setup::kInitAllLocalBufferSize, protocol, device_name,
                 yb::py_setup::kPyMasterServerAddr, py::none(), false, "", "default", false, yb::py_setup::kPyClientHttpPort);
  }

  int Close() {
    std::shared_ptr<yb::Client> old = std::move(client_);
    std::unique_ptr<yb::tools::AdminHttp> http = std::move(http_);
    py::gil_scoped_release unlocked;
    http.reset();
    old.reset();  // the client leaves once calls still running on other threads are done
    return 0;
  }

  int HealthCheck() {
    auto c = client_;
    if (!c) return kNotInitialized;
    py::gil_scoped_release unlocked;
    return c->HealthCheck().ok() ? kHealthy : kMasterUnreachable;
  }

  // ---- writes

  int Put(const std::string& key, const py::object& value, const PyReplicateConfig& cfg) {
    auto c = Ready("put");
    if (!c || NoStaging("put")) return kInvalidParams;
    ByteView v(value, false, "put");
    py::gil_scoped_release unlocked;
    return c->Put(key, v.data(), v.size(), cfg.ToCpp()).mooncake_code();
  }

  int Upsert(const std::string& key, const py::object& value, const PyReplicateConfig& cfg) {
    auto c = Ready("upsert");
    if (!c || NoStaging("upsert")) return kInvalidParams;
    ByteView v(value, false, "upsert");
    py::gil_scoped_release unlocked;
    return c->Upsert(key, {{v.data(), v.size()}}, cfg.ToCpp()).mooncake_code();
  }

  // put_parts / upsert_parts: the parts, in order, as one object.
  int PutParts(const std::string& key, const py::args& parts, const PyReplicateConfig& cfg, bool upsert) {
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

  // put_batch / upsert_batch: one status for the batch (the first key's failure), as Mooncake's.
  int PutBatch(const std::vector<std::string>& keys, const std::vector<py::object>& values,
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

  int PutFrom(const std::string& key, const py::object& buffer, uint64_t size, const PyReplicateConfig& cfg,
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

  // The object is the metadata followed by the data, as Mooncake's put_from_with_metadata.
  int PutFromWithMetadata(const std::string& key, const py::object& buffer, const py::object& metadata, uint64_t size,
                          uint64_t metadata_size, const PyReplicateConfig& cfg) {
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

  std::vector<int> BatchPutFrom(const std::vector<std::string>& keys, const std::vector<py::object>& buffers,
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

  std::vector<int> BatchPutFromMulti(const std::vector<std::string>& keys,
                                     const std::vector<std::vector<py::object>>& all_buffers,
                                     const std::vector<std::vector<uint64_t>>& all_sizes,
                                     const PyReplicateConfig& cfg) {
    return WriteMulti(keys, all_buffers, all_sizes, cfg, false, "batch_put_from_multi_buffers");
  }

  std::vector<int> BatchUpsertFromMulti(const std::vector<std::string>& keys,
                                        const std::vector<std::vector<py::object>>& all_buffers,
                                        const std::vector<std::vector<uint64_t>>& all_sizes,
                                        const PyReplicateConfig& cfg) {
    return WriteMulti(keys, all_buffers, all_sizes, cfg, true, "batch_upsert_from_multi_buffers");
  }

  // ---- reads

  py::bytes Get(const std::string& key) {
    auto c = Ready("get");
    if (!c) return py::bytes();
    yb::Result<std::string> r(yb::Status(yb::Code::kInternal, ""));
    {
      py::gil_scoped_release unlocked;
      r = c->Get(key);
    }
    return r.ok() ? py::bytes(*r) : py::bytes();
  }

  std::vector<py::bytes> GetBatch(const std::vector<std::string>& keys) {
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

  // The object's bytes in memory the returned handle owns; None on a miss.
  py::object GetBuffer(const std::string& key) {
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

  py::list BatchGetBuffer(const std::vector<std::string>& keys) {
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

  int64_t GetInto(const std::string& key, const py::object& buffer, uint64_t size) {
    auto c = Ready("get_into");
    if (!c) return kInvalidParams;
    Memory m = ToMemory(buffer, size, true, "get_into");
    if (m.code != 0) return m.code;
    py::gil_scoped_release unlocked;
    return SizeOrCode(c->Get(key, m.ptr, size));
  }

  std::vector<int64_t> BatchGetInto(const std::vector<std::string>& keys, const std::vector<py::object>& buffers,
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

  std::vector<int64_t> BatchGetIntoMulti(const std::vector<std::string>& keys,
                                         const std::vector<std::vector<py::object>>& all_buffers,
                                         const std::vector<std::vector<uint64_t>>& all_sizes, bool) {
    return ReadMulti(keys, all_buffers, all_sizes, "batch_get_into_multi_buffers");
  }

  // Byte ranges of objects into caller buffers: for buffer i, key j of all_keys[i], fragment k
  // copies all_sizes[i][j][k] bytes from offset all_src_offsets[i][j][k] of the object to offset
  // all_dst_offsets[i][j][k] of buffer i. Each fragment answers its size or a negative code.
  // Every object is read once whole (staged), however many fragments name it.
  std::vector<std::vector<std::vector<int64_t>>> GetIntoRanges(
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
      const bool keys_match = top && all_dst_offsets[i].size() == nk && all_src_offsets[i].size() == nk &&
                              all_sizes[i].size() == nk;
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

  // ---- sessions: layer-wise loads and stores (DataPath's sessions)

  std::vector<int> GetSessionStart(const std::vector<std::string>& keys) {
    auto c = Ready("batch_get_session_start");
    if (!c) return Fill(keys.size());
    py::gil_scoped_release unlocked;
    return Codes(c->GetSessionStart(keys));
  }

  int GetSessionEnd(const std::vector<std::string>& keys) {
    auto c = Ready("batch_get_session_end");
    if (!c) return kInvalidParams;
    py::gil_scoped_release unlocked;
    c->GetSessionEnd(keys);
    return 0;
  }

  std::vector<int> PutSessionStart(const std::vector<std::string>& keys, const std::vector<uint64_t>& sizes,
                                   const PyReplicateConfig& cfg) {
    auto c = Ready("batch_put_session_start");
    if (!c) return Fill(keys.size());
    if (!SameLength(keys.size(), sizes.size(), sizes.size(), "batch_put_session_start")) return Fill(keys.size());
    yb::ReplicateConfig config = cfg.ToCpp();
    py::gil_scoped_release unlocked;
    return Codes(c->PutSessionStart(keys, sizes, config));
  }

  std::vector<int> PutSessionFinish(const std::vector<std::string>& keys, bool publish) {
    auto c = Ready(publish ? "batch_put_session_end" : "batch_put_session_revoke");
    if (!c) return Fill(keys.size());
    py::gil_scoped_release unlocked;
    return Codes(publish ? c->PutSessionEnd(keys) : c->PutSessionRevoke(keys));
  }
  std::vector<int> PutSessionEnd(const std::vector<std::string>& keys) { return PutSessionFinish(keys, true); }
  std::vector<int> PutSessionRevoke(const std::vector<std::string>& keys) { return PutSessionFinish(keys, false); }

  // The ranged calls: per key, its buffers, sizes and object offsets; the bytes moved or a code.
  std::vector<int> SessionRanges(const std::vector<std::string>& keys,
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
        codes[i] = Invalid(std::string(what) + ": buffers and offsets of key " + std::to_string(i) +
                           " differ in length");
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
  std::vector<int> GetIntoMultiBufferRanges(const std::vector<std::string>& keys,
                                            const std::vector<std::vector<py::object>>& all_buffers,
                                            const std::vector<std::vector<uint64_t>>& all_sizes,
                                            const std::vector<std::vector<uint64_t>>& all_src_offsets) {
    return SessionRanges(keys, all_buffers, all_sizes, all_src_offsets, true);
  }
  std::vector<int> PutFromMultiBufferRanges(const std::vector<std::string>& keys,
                                            const std::vector<std::vector<py::object>>& all_buffers,
                                            const std::vector<std::vector<uint64_t>>& all_sizes,
                                            const std::vector<std::vector<uint64_t>>& all_dst_offsets) {
    return SessionRanges(keys, all_buffers, all_sizes, all_dst_offsets, false);
  }

  // ---- metadata and removal

  int IsExist(const std::string& key) {
    auto c = Ready("is_exist");
    if (!c) return kInvalidParams;
    py::gil_scoped_release unlocked;
    auto r = c->IsExist(key);
    return r.ok() ? (*r ? 1 : 0) : r.status().mooncake_code();
  }

  std::vector<int> BatchIsExist(const std::vector<std::string>& keys) {
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

  // Where a key's replicas are, memory or disk; empty on a miss.
  std::vector<PyReplicaDescriptor> GetReplicaDesc(const std::string& key) {
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

  std::map<std::string, std::vector<PyReplicaDescriptor>> BatchGetReplicaDesc(const std::vector<std::string>& keys) {
    std::map<std::string, std::vector<PyReplicaDescriptor>> out;
    for (const auto& k : keys) out[k] = GetReplicaDesc(k);
    return out;
  }

  int64_t GetSize(const std::string& key) {
    auto c = Ready("get_size");
    if (!c) return kInvalidParams;
    py::gil_scoped_release unlocked;
    return SizeOrCode(c->GetSize(key));
  }

  int Remove(const std::string& key, bool force) {
    auto c = Ready("remove");
    if (!c) return kInvalidParams;
    py::gil_scoped_release unlocked;
    return c->Remove(key, force).mooncake_code();
  }

  int64_t RemoveByRegex(const std::string& pattern, bool force) {
    auto c = Ready("remove_by_regex");
    if (!c) return kInvalidParams;
    py::gil_scoped_release unlocked;
    return SizeOrCode(c->RemoveByRegex(pattern, force));
  }

  int64_t RemoveAll(bool force) {
    auto c = Ready("remove_all");
    if (!c) return kInvalidParams;
    py::gil_scoped_release unlocked;
    return SizeOrCode(c->RemoveAll(force));
  }

  std::vector<int> BatchRemove(const std::vector<std::string>& keys, bool force) {
    auto c = Ready("batch_remove");
    if (!c) return Fill(keys.size());
    std::vector<yb::Status> res;
    {
      py::gil_scoped_release unlocked;
      res = c->BatchRemove(keys, force);
    }
    return Codes(res);
  }

  // ---- registered memory

  int RegisterBuffer(const py::object& buffer, uint64_t size) {
    auto c = Ready("register_buffer");
    if (!c) return kInvalidParams;
    Memory m = ToMemory(buffer, size, false, "register_buffer");
    if (m.code != 0) return m.code;
    return c->RegisterBuffer(m.ptr, size).mooncake_code();
  }

  int UnregisterBuffer(const py::object& buffer) {
    auto c = Ready("unregister_buffer");
    if (!c) return kInvalidParams;
    Memory m = ToMemory(buffer, 0, false, "unregister_buffer");
    if (m.code != 0) return m.code;
    return c->UnregisterBuffer(m.ptr).mooncake_code();
  }

  std::string GetHostname() {
    auto c = Ready("get_hostname");
    return c ? c->hostname() : std::string();
  }

  // The client, or null (logged) when setup() has not succeeded or close() ran.
  std::shared_ptr<yb::Client> Ready(const char* what) {
    if (!client_) LogError(std::string(what) + ": the store is not set up (call setup() first)");
    return client_;
  }
  // The client without a word when there is none.
  std::shared_ptr<yb::Client> Current() const { return client_; }
  uint64_t local_buffer_size_ = 0;  // setup()'s (BufferPool's default bound)

 private:
  // What both setups configure: the environment first (as Mooncake's users set it: YB_*, MC_*),
  // then the arguments. tenant_id "default" leaves YB_TENANT's, if set.
  int Connect(const yb::ClientConfig& c, const yb::py_setup::Extras& extras) {
    if (client_) return Error(yb::Status(yb::Code::kInvalidParams, "setup: this store is already set up"));
    yb::Result<std::unique_ptr<yb::Client>> r(yb::Status(yb::Code::kInternal, ""));
    {
      py::gil_scoped_release unlocked;
      yb::EnableEmbeddedMaster();
      r = yb::Client::Connect(c);
    }
    if (!r.ok()) return Error(r.status());
    std::shared_ptr<yb::Client> client = std::move(r).value();
    if (extras.enable_client_http_server) {
      auto http = std::make_unique<yb::tools::AdminHttp>();
      std::weak_ptr<yb::Client> weak = client;
      yb::tools::AddClientRoutes(http->server(), [weak]() -> std::optional<yb::ClientStats> {
        auto c = weak.lock();
        if (!c) return std::nullopt;
        return c->Stats();
      });
      bool started = false;
      {
        py::gil_scoped_release unlocked;
        started = http->Start("MooncakeDistributedStore", extras.client_http_host, extras.client_http_port,
                              c.loopback_only());
      }
      if (!started) {
        {
          py::gil_scoped_release unlocked;
          client.reset();
        }
        return Error(yb::Status(yb::Code::kInvalidParams, "setup: cannot serve the client HTTP server on " +
                                                              extras.client_http_host + ":" +
                                                              std::to_string(extras.client_http_port)));
      }
      http_ = std::move(http);
    }
    client_ = std::move(client);
    local_buffer_size_ = c.local_buffer_size;
    return 0;
  }

  // Mooncake copies a Python value through the local buffer before it moves: set up with none
  // (local_buffer_size 0), such a write fails there (INVALID_PARAMS), and so it does here, though
  // ours would not need the buffer. Writes from registered memory (put_from, ...) are not affected.
  bool NoStaging(const char* what) const {
    if (local_buffer_size_ > 0) return false;
    LogError(std::string(what) + ": this store was set up with local_buffer_size 0, and a value given as a Python "
                                 "object is written through the local buffer (as Mooncake's): give setup() one, or "
                                 "write from a registered buffer (put_from)");
    return true;
  }

  static std::vector<int> Fill(size_t n) { return std::vector<int>(n, kInvalidParams); }
  static std::vector<int64_t> Fill64(size_t n) { return std::vector<int64_t>(n, kInvalidParams); }

  static bool SameLength(size_t keys, size_t buffers, size_t sizes, const char* what) {
    if (keys == buffers && keys == sizes) return true;
    LogError(std::string(what) + ": keys, buffers and sizes differ in length");
    return false;
  }

  static std::vector<yb::Status> Write(yb::Client& c, const std::vector<std::string>& keys,
                                       const std::vector<std::vector<yb::Slice>>& slices, const PyReplicateConfig& cfg,
                                       bool upsert) {
    return upsert ? c.BatchUpsert(keys, slices, cfg.ToCpp()) : c.BatchPut(keys, slices, cfg.ToCpp());
  }

  std::vector<int> WriteMulti(const std::vector<std::string>& keys,
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

  std::vector<int64_t> ReadMulti(const std::vector<std::string>& keys,
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

  std::shared_ptr<yb::Client> client_;
  std::unique_ptr<yb::tools::AdminHttp> http_;  // setup's enable_client_http_server
};

}  // namespace

PYBIND11_MODULE(_yuebing, m) {
  m.doc() = "Yuebing: a distributed KV-cache store with Mooncake's Python interface";
  // The library logs to stderr, warnings and worse unless asked: stdout belongs to the program.
  spdlog::set_default_logger(spdlog::stderr_logger_mt("yuebing"));
  spdlog::set_level(spdlog::level::warn);
  m.def(
      "set_log_level", [](const std::string& level) { spdlog::set_level(spdlog::level::from_str(level)); },
      py::arg("level"), "trace, debug, info, warn, error or off");
  // For the tensor helpers (_tensor.py), which must not touch GPU memory from the CPU.
  m.def(
      "_is_device_memory", [](uintptr_t ptr) { return yb::Client::IsDeviceMemory(reinterpret_cast<void*>(ptr)); },
      py::arg("ptr"), "whether the address is GPU memory (false without a CUDA driver)");
  m.def(
      "_read_memory",
      [](uintptr_t ptr, uint64_t size) -> py::object {
        std::string out(size, '\0');
        yb::Status st;
        {
          py::gil_scoped_release unlocked;
          st = yb::Client::CopyMemory(out.data(), reinterpret_cast<void*>(ptr), size);
        }
        if (!st.ok()) {
          LogError("reading " + std::to_string(size) + " bytes at an address: " + st.ToString());
          return py::none();
        }
        return py::bytes(out);
      },
      py::arg("ptr"), py::arg("size"), "a copy of the bytes at an address, host or GPU memory; None on an error");
  py::class_<PyBufferDescriptor>(m, "Descriptor")
      .def(py::init<>())
      .def_readwrite("size", &PyBufferDescriptor::size)
      .def_readwrite("buffer_address", &PyBufferDescriptor::buffer_address)
      .def_readwrite("transport_endpoint", &PyBufferDescriptor::transport_endpoint)
      .def("__repr__", [](const PyBufferDescriptor& d) {
        return "<Descriptor size=" + std::to_string(d.size) + " buffer_address=" + std::to_string(d.buffer_address) +
               " transport_endpoint=" + d.transport_endpoint + ">";
      });
  py::class_<PyMemoryDescriptor>(m, "MemoryDescriptor")
      .def_readwrite("buffer_descriptor", &PyMemoryDescriptor::buffer_descriptor);
  py::class_<PyDiskDescriptor>(m, "DiskDescriptor")
      .def_readwrite("file_path", &PyDiskDescriptor::file_path)
      .def_readwrite("object_size", &PyDiskDescriptor::object_size);
  py::class_<PyReplicaDescriptor>(m, "ReplicaDescriptor")
      .def(
          "get_memory_descriptor",
          [](const PyReplicaDescriptor& r) -> const PyMemoryDescriptor& {
            if (r.d.kind != yb::ReplicaKind::kMemory) throw std::runtime_error("not a memory replica");
            return r.memory;
          },
          py::return_value_policy::reference_internal)
      .def(
          "get_disk_descriptor",
          [](const PyReplicaDescriptor& r) -> const PyDiskDescriptor& {
            if (r.d.kind == yb::ReplicaKind::kMemory) throw std::runtime_error("not a disk replica");
            return r.disk;
          },
          py::return_value_policy::reference_internal)
      .def("is_memory_replica", [](const PyReplicaDescriptor& r) { return r.d.kind == yb::ReplicaKind::kMemory; })
      .def("is_disk_replica", [](const PyReplicaDescriptor& r) { return r.d.kind != yb::ReplicaKind::kMemory; })
      .def("is_local_disk_replica",
           [](const PyReplicaDescriptor& r) { return r.d.kind == yb::ReplicaKind::kLocalDisk; })
      .def_property_readonly("kind",
                             [](const PyReplicaDescriptor& r) { return PyReplicaDescriptor::KindName(r.d.kind); })
      .def_property_readonly("status",
                             [](const PyReplicaDescriptor& r) { return PyReplicaDescriptor::StatusName(r.d.status); })
      .def_property_readonly("segment", [](const PyReplicaDescriptor& r) { return r.d.segment; })
      .def_property_readonly("offset", [](const PyReplicaDescriptor& r) { return r.d.offset; })
      .def_property_readonly("size", [](const PyReplicaDescriptor& r) { return r.d.size; })
      .def("__repr__", [](const PyReplicaDescriptor& r) {
        return std::string("ReplicaDescriptor(") + PyReplicaDescriptor::KindName(r.d.kind) + ", " +
               PyReplicaDescriptor::StatusName(r.d.status) + ", segment=" + std::to_string(r.d.segment) +
               ", size=" + std::to_string(r.d.size) + ")";
      });
  py::enum_<SoftPinAction>(m, "SoftPinAction")
      .value("PRESERVE", SoftPinAction::kPreserve)
      .value("ENABLE", SoftPinAction::kEnable)
      .value("DISABLE", SoftPinAction::kDisable)
      .export_values();
  py::class_<PyReplicateConfig>(m, "ReplicateConfig")
      .def(py::init<>())
      .def_readwrite("replica_num", &PyReplicateConfig::replica_num)
      .def_readwrite("with_soft_pin", &PyReplicateConfig::with_soft_pin)
      .def_readwrite("with_hard_pin", &PyReplicateConfig::with_hard_pin)
      .def_readwrite("preferred_segments", &PyReplicateConfig::preferred_segments)
      .def_readwrite("preferred_segment", &PyReplicateConfig::preferred_segment)
      .def_readwrite("prefer_alloc_in_same_node", &PyReplicateConfig::prefer_alloc_in_same_node)
      .def_readwrite("soft_pin_action", &PyReplicateConfig::soft_pin_action)
      .def_readwrite("soft_pin_ttl_ms", &PyReplicateConfig::soft_pin_ttl_ms)
      .def_readwrite("group_ids", &PyReplicateConfig::group_ids)
      .def("__repr__", [](const PyReplicateConfig& c) {
        return "ReplicateConfig(replica_num=" + std::to_string(c.replica_num) +
               ", with_soft_pin=" + (c.with_soft_pin ? "True" : "False") +
               ", with_hard_pin=" + (c.with_hard_pin ? "True" : "False") + ", preferred_segment='" +
               c.preferred_segment +
               "', prefer_alloc_in_same_node=" + (c.prefer_alloc_in_same_node ? "True" : "False") + ")";
      });
  py::class_<BufferHandle, std::shared_ptr<BufferHandle>>(m, "BufferHandle", py::buffer_protocol())
      .def("ptr", [](BufferHandle& b) { return reinterpret_cast<uintptr_t>(b.ptr()); })
      .def("size", &BufferHandle::size)
      .def("__len__", &BufferHandle::size)
      .def_property_readonly("in_place", &BufferHandle::in_place,
                             "True: the pool's own bytes, pinned while this handle lives (read-only); "
                             "False: a copy (ours; YB_GET_BUFFER_IN_PLACE)")
      .def_buffer([](BufferHandle& b) {
        return py::buffer_info(b.ptr(), 1, py::format_descriptor<char>::format(), 1,
                               {static_cast<py::ssize_t>(b.size())}, {py::ssize_t{1}}, b.in_place());
      });
  using PR = PyReplicateConfig;
  using S = Store;
  // Mooncake's host memory allocator: memory a dummy's real client can see (yb::AllocateSharedMemory).
  struct HostMemAllocator {};
  py::class_<HostMemAllocator>(m, "MooncakeHostMemAllocator")
      .def(py::init<>())
      .def(
          "alloc", [](HostMemAllocator&, uint64_t size) { return reinterpret_cast<uintptr_t>(yb::AllocateSharedMemory(size)); },
          py::arg("size"), "The address of size bytes shared with a dummy's real client; 0 when they cannot be had")
      .def(
          "free",
          [](HostMemAllocator&, uintptr_t ptr) {
            yb::Status st = yb::FreeSharedMemory(reinterpret_cast<void*>(ptr));
            return st.ok() ? 0 : st.mooncake_code();
          },
          py::arg("ptr"), "0, or INVALID_PARAMS (-600) for an address alloc did not give");
  auto store = py::class_<Store>(m, "MooncakeDistributedStore");
  store
      .def(py::init<>())
      .def("setup", &S::Setup, py::arg("local_hostname"), py::arg("metadata_server"),
           py::arg("global_segment_size") = yb::py_setup::kPyGlobalSegmentSize,
           py::arg("local_buffer_size") = yb::ClientConfig{}.local_buffer_size, py::arg("protocol") = "tcp",
           py::arg("rdma_devices") = "", py::arg("master_server_addr") = yb::py_setup::kPyMasterServerAddr,
           py::arg("engine") = py::none(), py::arg("enable_ssd_offload") = false, py::arg("ssd_offload_path") = "",
           py::arg("tenant_id") = "default", py::arg("enable_client_http_server") = false,
           py::arg("client_http_port") = yb::py_setup::kPyClientHttpPort)
      .def("setup", &S::SetupFromDict, py::arg("config"))
      .def("setup_dummy", &S::SetupDummy, py::arg("mem_pool_size"), py::arg("local_buffer_size"),
           py::arg("server_address"),
           "A dummy client of the real client of this host (a yb-client serving transfers on the port of "
           "server_address, \"host:port\"): every call is served by it through a Unix socket")
      .def(
          "alloc_from_mem_pool",
          [](S&, uint64_t size) { return reinterpret_cast<uintptr_t>(yb::AllocateSharedMemory(size)); },
          py::arg("size"),
          "The address of size bytes that a dummy's real client moves bytes into directly (0 when they "
          "cannot be had); register them with register_buffer")
      .def("init_all", &S::InitAll, py::arg("protocol"), py::arg("device_name"),
           py::arg("mount_segment_size") = 16ULL << 20)
      .def("close", &S::Close)
      .def("health_check", &S::HealthCheck, "0 healthy, 1 not set up (or closed), 2 the master does not answer")
      .def(
          "put", [](S& s, const std::string& k, const py::object& v, const PR& c) { return s.Put(k, v, c); },
          py::arg("key"), py::arg("value"), py::arg("config") = PR())
      .def(
          "upsert", [](S& s, const std::string& k, const py::object& v, const PR& c) { return s.Upsert(k, v, c); },
          py::arg("key"), py::arg("value"), py::arg("config") = PR())
      .def(
          "put_parts",
          [](S& s, const std::string& k, const py::args& parts, const PR& c) { return s.PutParts(k, parts, c, false); },
          py::arg("key"), py::arg("config") = PR())
      .def(
          "upsert_parts",
          [](S& s, const std::string& k, const py::args& parts, const PR& c) { return s.PutParts(k, parts, c, true); },
          py::arg("key"), py::arg("config") = PR())
      .def(
          "put_batch",
          [](S& s, const std::vector<std::string>& k, const std::vector<py::object>& v, const PR& c) {
            return s.PutBatch(k, v, c, false);
          },
          py::arg("keys"), py::arg("values"), py::arg("config") = PR())
      .def(
          "upsert_batch",
          [](S& s, const std::vector<std::string>& k, const std::vector<py::object>& v, const PR& c) {
            return s.PutBatch(k, v, c, true);
          },
          py::arg("keys"), py::arg("values"), py::arg("config") = PR())
      .def("get", &S::Get, py::arg("key"))
      .def("get_batch", &S::GetBatch, py::arg("keys"))
      .def("get_buffer", &S::GetBuffer, py::arg("key"))
      .def("batch_get_buffer", &S::BatchGetBuffer, py::arg("keys"))
      .def(
          "put_from",
          [](S& s, const std::string& k, const py::object& b, uint64_t n, const PR& c) {
            return s.PutFrom(k, b, n, c, false);
          },
          py::arg("key"), py::arg("buffer_ptr"), py::arg("size"), py::arg("config") = PR())
      .def(
          "upsert_from",
          [](S& s, const std::string& k, const py::object& b, uint64_t n, const PR& c) {
            return s.PutFrom(k, b, n, c, true);
          },
          py::arg("key"), py::arg("buffer_ptr"), py::arg("size"), py::arg("config") = PR())
      .def("put_from_with_metadata", &S::PutFromWithMetadata, py::arg("key"), py::arg("buffer_ptr"),
           py::arg("metadata_buffer_ptr"), py::arg("size"), py::arg("metadata_size"), py::arg("config") = PR())
      .def("get_into", &S::GetInto, py::arg("key"), py::arg("buffer_ptr"), py::arg("size"))
      .def(
          "batch_put_from",
          [](S& s, const std::vector<std::string>& k, const std::vector<py::object>& b, const std::vector<uint64_t>& n,
             const PR& c) { return s.BatchPutFrom(k, b, n, c, false); },
          py::arg("keys"), py::arg("buffer_ptrs"), py::arg("sizes"), py::arg("config") = PR())
      .def(
          "batch_upsert_from",
          [](S& s, const std::vector<std::string>& k, const std::vector<py::object>& b, const std::vector<uint64_t>& n,
             const PR& c) { return s.BatchPutFrom(k, b, n, c, true); },
          py::arg("keys"), py::arg("buffer_ptrs"), py::arg("sizes"), py::arg("config") = PR())
      .def("batch_get_into", &S::BatchGetInto, py::arg("keys"), py::arg("buffer_ptrs"), py::arg("sizes"))
      .def("batch_put_from_multi_buffers", &S::BatchPutFromMulti, py::arg("keys"), py::arg("all_buffer_ptrs"),
           py::arg("all_sizes"), py::arg("config") = PR())
      // Not Mooncake's: the tensor upserts' batched path (yuebing/_tensor.py).
      .def("_batch_upsert_from_multi_buffers", &S::BatchUpsertFromMulti, py::arg("keys"), py::arg("all_buffer_ptrs"),
           py::arg("all_sizes"), py::arg("config") = PR())
      .def("batch_get_into_multi_buffers", &S::BatchGetIntoMulti, py::arg("keys"), py::arg("all_buffer_ptrs"),
           py::arg("all_sizes"), py::arg("prefer_alloc_in_same_node") = false)
      .def("get_into_ranges", &S::GetIntoRanges, py::arg("buffer_ptrs"), py::arg("all_keys"),
           py::arg("all_dst_offsets"), py::arg("all_src_offsets"), py::arg("all_sizes"))
      .def("batch_get_session_start", &S::GetSessionStart, py::arg("keys"))
      .def("batch_get_into_multi_buffer_ranges", &S::GetIntoMultiBufferRanges, py::arg("keys"),
           py::arg("all_buffer_ptrs"), py::arg("all_sizes"), py::arg("all_src_offsets"))
      .def("batch_get_session_end", &S::GetSessionEnd, py::arg("keys"))
      .def("batch_put_session_start", &S::PutSessionStart, py::arg("keys"), py::arg("sizes"),
           py::arg("config") = PR())
      .def("batch_put_from_multi_buffer_ranges", &S::PutFromMultiBufferRanges, py::arg("keys"),
           py::arg("all_buffer_ptrs"), py::arg("all_sizes"), py::arg("all_dst_offsets"))
      .def("batch_put_session_end", &S::PutSessionEnd, py::arg("keys"))
      .def("batch_put_session_revoke", &S::PutSessionRevoke, py::arg("keys"))
      .def("is_exist", &S::IsExist, py::arg("key"))
      .def("batch_is_exist", &S::BatchIsExist, py::arg("keys"))
      .def("get_size", &S::GetSize, py::arg("key"))
      .def("get_replica_desc", &S::GetReplicaDesc, py::arg("key"))
      .def("batch_get_replica_desc", &S::BatchGetReplicaDesc, py::arg("keys"))
      .def("remove", &S::Remove, py::arg("key"), py::arg("force") = false)
      .def("remove_by_regex", &S::RemoveByRegex, py::arg("regex_pattern"), py::arg("force") = false)
      .def("remove_all", &S::RemoveAll, py::arg("force") = false)
      .def("batch_remove", &S::BatchRemove, py::arg("keys"), py::arg("force") = false)
      .def("register_buffer", &S::RegisterBuffer, py::arg("buffer_ptr"), py::arg("size"))
      .def("unregister_buffer", &S::UnregisterBuffer, py::arg("buffer_ptr"))
      .def("get_hostname", &S::GetHostname);
  yb::py_extra_calls::Bind(m, store, [](S& s, const char* what) { return s.Ready(what); });
}
