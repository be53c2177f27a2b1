// Store: the state and calls behind yuebing.MooncakeDistributedStore (python/yuebing_py.cc binds
// it), defined by concern: setup and lifecycle (py_store_setup.cc), writes (py_store_writes.cc),
// reads and sessions (py_store_reads.cc), metadata, removal and registered memory
// (py_store_meta.cc). The conventions are the binding's: int statuses (0 or a negative Mooncake
// code), per-key codes in batch results, the GIL released while bytes move.
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "http/admin_http.h"
#include "py_memory.h"
#include "py_values.h"
#include "setup_config.h"
#include "yuebing/client.h"

namespace yb::py_store {

namespace py = pybind11;
// The binding's own value types and caller memory as slices, unqualified in its files.
using namespace yb::py_values;  // NOLINT
using namespace yb::py_memory;  // NOLINT

class Store {
 public:
  ~Store();

  int Setup(const std::string& local_hostname, const std::string& metadata_server, uint64_t global_segment_size,
            uint64_t local_buffer_size, const std::string& protocol, const std::string& rdma_devices,
            const std::string& master_server_addr, const py::object& engine, bool enable_ssd_offload,
            const std::string& ssd_offload_path, const std::string& tenant_id, bool enable_client_http_server,
            int client_http_port);

  int SetupFromDict(const py::dict& d);

  // Mooncake's setup_dummy: a client of the real client of this host (ClientConfig::real_client).
  // mem_pool_size is accepted and unused, as Mooncake's (buffers come from alloc_from_mem_pool).
  int SetupDummy(uint64_t mem_pool_size, uint64_t local_buffer_size, const std::string& server_address);

  int InitAll(const std::string& protocol, const std::string& device_name, uint64_t mount_segment_size);

  int Close();

  int HealthCheck();

  // ---- writes

  int Put(const std::string& key, const py::object& value, const PyReplicateConfig& cfg);

  int Upsert(const std::string& key, const py::object& value, const PyReplicateConfig& cfg);

  // put_parts / upsert_parts: the parts, in order, as one object.
  int PutParts(const std::string& key, const py::args& parts, const PyReplicateConfig& cfg, bool upsert);

  // put_batch / upsert_batch: one status for the batch (the first key's failure), as Mooncake's.
  int PutBatch(const std::vector<std::string>& keys, const std::vector<py::object>& values,
               const PyReplicateConfig& cfg, bool upsert);

  int PutFrom(const std::string& key, const py::object& buffer, uint64_t size, const PyReplicateConfig& cfg,
              bool upsert);

  // The object is the metadata followed by the data, as Mooncake's put_from_with_metadata.
  int PutFromWithMetadata(const std::string& key, const py::object& buffer, const py::object& metadata, uint64_t size,
                          uint64_t metadata_size, const PyReplicateConfig& cfg);

  std::vector<int> BatchPutFrom(const std::vector<std::string>& keys, const std::vector<py::object>& buffers,
                                const std::vector<uint64_t>& sizes, const PyReplicateConfig& cfg, bool upsert);

  std::vector<int> BatchPutFromMulti(const std::vector<std::string>& keys,
                                     const std::vector<std::vector<py::object>>& all_buffers,
                                     const std::vector<std::vector<uint64_t>>& all_sizes, const PyReplicateConfig& cfg);

  std::vector<int> BatchUpsertFromMulti(const std::vector<std::string>& keys,
                                        const std::vector<std::vector<py::object>>& all_buffers,
                                        const std::vector<std::vector<uint64_t>>& all_sizes,
                                        const PyReplicateConfig& cfg);

  // ---- reads

  py::bytes Get(const std::string& key);

  std::vector<py::bytes> GetBatch(const std::vector<std::string>& keys);

  // The object's bytes in memory the returned handle owns; None on a miss.
  py::object GetBuffer(const std::string& key);

  py::list BatchGetBuffer(const std::vector<std::string>& keys);

  int64_t GetInto(const std::string& key, const py::object& buffer, uint64_t size);

  std::vector<int64_t> BatchGetInto(const std::vector<std::string>& keys, const std::vector<py::object>& buffers,
                                    const std::vector<uint64_t>& sizes);

  std::vector<int64_t> BatchGetIntoMulti(const std::vector<std::string>& keys,
                                         const std::vector<std::vector<py::object>>& all_buffers,
                                         const std::vector<std::vector<uint64_t>>& all_sizes, bool);

  // Byte ranges of objects into caller buffers: for buffer i, key j of all_keys[i], fragment k
  // copies all_sizes[i][j][k] bytes from offset all_src_offsets[i][j][k] of the object to offset
  // all_dst_offsets[i][j][k] of buffer i. Each fragment answers its size or a negative code.
  // Every object is read once whole (staged), however many fragments name it.
  std::vector<std::vector<std::vector<int64_t>>> GetIntoRanges(
      const std::vector<py::object>& buffers, const std::vector<std::vector<std::string>>& all_keys,
      const std::vector<std::vector<std::vector<uint64_t>>>& all_dst_offsets,
      const std::vector<std::vector<std::vector<uint64_t>>>& all_src_offsets,
      const std::vector<std::vector<std::vector<uint64_t>>>& all_sizes);

  // ---- sessions: layer-wise loads and stores (DataPath's sessions)

  std::vector<int> GetSessionStart(const std::vector<std::string>& keys);

  int GetSessionEnd(const std::vector<std::string>& keys);

  std::vector<int> PutSessionStart(const std::vector<std::string>& keys, const std::vector<uint64_t>& sizes,
                                   const PyReplicateConfig& cfg);

  std::vector<int> PutSessionFinish(const std::vector<std::string>& keys, bool publish);
  std::vector<int> PutSessionEnd(const std::vector<std::string>& keys) { return PutSessionFinish(keys, true); }
  std::vector<int> PutSessionRevoke(const std::vector<std::string>& keys) { return PutSessionFinish(keys, false); }

  // The ranged calls: per key, its buffers, sizes and object offsets; the bytes moved or a code.
  std::vector<int> SessionRanges(const std::vector<std::string>& keys,
                                 const std::vector<std::vector<py::object>>& all_buffers,
                                 const std::vector<std::vector<uint64_t>>& all_sizes,
                                 const std::vector<std::vector<uint64_t>>& all_offsets, bool read);
  std::vector<int> GetIntoMultiBufferRanges(const std::vector<std::string>& keys,
                                            const std::vector<std::vector<py::object>>& all_buffers,
                                            const std::vector<std::vector<uint64_t>>& all_sizes,
                                            const std::vector<std::vector<uint64_t>>& all_src_offsets);
  std::vector<int> PutFromMultiBufferRanges(const std::vector<std::string>& keys,
                                            const std::vector<std::vector<py::object>>& all_buffers,
                                            const std::vector<std::vector<uint64_t>>& all_sizes,
                                            const std::vector<std::vector<uint64_t>>& all_dst_offsets);

  // ---- metadata and removal

  int IsExist(const std::string& key);

  std::vector<int> BatchIsExist(const std::vector<std::string>& keys);

  // Where a key's replicas are, memory or disk; empty on a miss.
  std::vector<PyReplicaDescriptor> GetReplicaDesc(const std::string& key);

  std::map<std::string, std::vector<PyReplicaDescriptor>> BatchGetReplicaDesc(const std::vector<std::string>& keys);

  int64_t GetSize(const std::string& key);

  int Remove(const std::string& key, bool force);

  int64_t RemoveByRegex(const std::string& pattern, bool force);

  int64_t RemoveAll(bool force);

  std::vector<int> BatchRemove(const std::vector<std::string>& keys, bool force);

  // ---- registered memory

  int RegisterBuffer(const py::object& buffer, uint64_t size);

  int UnregisterBuffer(const py::object& buffer);

  std::string GetHostname();

  // The client, or null (logged) when setup() has not succeeded or close() ran.
  std::shared_ptr<yb::Client> Ready(const char* what);
  // The client without a word when there is none.
  std::shared_ptr<yb::Client> Current() const { return client_; }
  uint64_t local_buffer_size_ = 0;  // setup()'s (BufferPool's default bound)

 private:
  // What both setups configure: the environment first (as Mooncake's users set it: YB_*, MC_*),
  // then the arguments. tenant_id "default" leaves YB_TENANT's, if set.
  int Connect(const yb::ClientConfig& c, const yb::py_setup::Extras& extras);

  // Mooncake copies a Python value through the local buffer before it moves: set up with none
  // (local_buffer_size 0), such a write fails there (INVALID_PARAMS), and so it does here, though
  // ours would not need the buffer. Writes from registered memory (put_from, ...) are not affected.
  bool NoStaging(const char* what) const;

  static std::vector<int> Fill(size_t n) { return std::vector<int>(n, kInvalidParams); }
  static std::vector<int64_t> Fill64(size_t n) { return std::vector<int64_t>(n, kInvalidParams); }

  static bool SameLength(size_t keys, size_t buffers, size_t sizes, const char* what);

  static std::vector<yb::Status> Write(yb::Client& c, const std::vector<std::string>& keys,
                                       const std::vector<std::vector<yb::Slice>>& slices, const PyReplicateConfig& cfg,
                                       bool upsert);

  std::vector<int> WriteMulti(const std::vector<std::string>& keys,
                              const std::vector<std::vector<py::object>>& all_buffers,
                              const std::vector<std::vector<uint64_t>>& all_sizes, const PyReplicateConfig& cfg,
                              bool upsert, const char* what);

  std::vector<int64_t> ReadMulti(const std::vector<std::string>& keys,
                                 const std::vector<std::vector<py::object>>& all_buffers,
                                 const std::vector<std::vector<uint64_t>>& all_sizes, const char* what);

  std::shared_ptr<yb::Client> client_;
  std::unique_ptr<yb::http::AdminHttp> http_;  // setup's enable_client_http_server
};

}  // namespace yb::py_store
