// The Python binding: yuebing.MooncakeDistributedStore with the method names, arguments, defaults
// and return conventions of Mooncake's class (int statuses: 0 or a negative Mooncake code; bytes
// for get, empty on a miss). It converts arguments and calls yb::Client; the GIL is released while
// bytes move. Buffers are integer addresses (which must lie in a registered buffer) or
// buffer-protocol objects (numpy arrays, bytearray, memoryview).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/units.h"
#include "yuebing/client.h"
#include "yuebing/embedded.h"

namespace py = pybind11;

namespace {

constexpr int kInvalidParams = -600;

struct PyReplicateConfig {
  size_t replica_num = 1;
  bool with_soft_pin = false;
  bool with_hard_pin = false;
  std::vector<std::string> preferred_segments;
  std::string preferred_segment;  // deprecated single form
  bool prefer_alloc_in_same_node = false;

  yb::ReplicateConfig ToCpp() const {
    yb::ReplicateConfig c;
    c.replica_num = replica_num == 0 ? 1 : replica_num;
    c.with_soft_pin = with_soft_pin;
    c.with_hard_pin = with_hard_pin;
    c.preferred_segments = preferred_segments;
    if (!preferred_segment.empty()) c.preferred_segments.insert(c.preferred_segments.begin(), preferred_segment);
    c.prefer_local = prefer_alloc_in_same_node;
    return c;
  }
};

// A caller's memory: an integer address (must be registered) or a buffer-protocol object.
struct Memory {
  void* ptr = nullptr;
  uint64_t size = 0;
  std::optional<py::buffer_info> info;  // keeps the object's buffer exported
};

// One replica as get_replica_desc reports it.
struct PyReplicaDescriptor {
  yb::ReplicaDesc d;
  static const char* KindName(yb::ReplicaKind k) {
    switch (k) {
      case yb::ReplicaKind::kMemory:
        return "MEMORY";
      case yb::ReplicaKind::kLocalDisk:
        return "LOCAL_DISK";
      default:
        return "DISK";
    }
  }
  static const char* StatusName(yb::ReplicaStatus s) {
    switch (s) {
      case yb::ReplicaStatus::kProcessing:
        return "PROCESSING";
      case yb::ReplicaStatus::kComplete:
        return "COMPLETE";
      case yb::ReplicaStatus::kFailed:
        return "FAILED";
      default:
        return "REMOVED";
    }
  }
};

// What Mooncake's Python setup() assumes for arguments left out, where it differs from a C++
// client's defaults (ClientConfig): it contributes 16 MiB, and looks for a master on this host.
constexpr uint64_t kPyGlobalSegmentSize = 16ULL << 20;
constexpr const char* kPyMasterServerAddr = "127.0.0.1:50051";

class Store {
 public:
  int Setup(const std::string& local_hostname, const std::string& metadata_server, uint64_t global_segment_size,
            uint64_t local_buffer_size, const std::string& protocol, const std::string& rdma_devices,
            const std::string& master_server_addr, const py::object& engine, bool enable_ssd_offload,
            const std::string& ssd_offload_path, const std::string& tenant_id) {
    if (client_) return Error(yb::Status(yb::Code::kInvalidParams, "setup: this store is already set up"));
    if (!engine.is_none()) {
      return Error(yb::Status(yb::Code::kNotSupported, "setup: a shared transfer engine object is not supported"));
    }
    yb::ClientConfig c;
    yb::ApplyEnvironment(c, [](const char* name) { return std::getenv(name); });  // as Mooncake's users set it
    c.enable_offload = enable_ssd_offload;
    c.ssd.path = ssd_offload_path;
    c.local_hostname = local_hostname;
    c.metadata_server = metadata_server;
    c.global_segment_size = global_segment_size;
    c.local_buffer_size = local_buffer_size;
    c.protocol = protocol;
    c.device_name = rdma_devices;
    c.master_server_addr = master_server_addr;
    if (tenant_id != "default") c.tenant = tenant_id;  // else YB_TENANT's, if set
    // What setup(dict) gave beyond the positional arguments: used once.
    if (!zone_.empty()) c.zone = zone_;
    if (enable_checksum_) c.enable_checksum = *enable_checksum_;
    for (const auto& [field, value] : security_) *field(c) = value;
    zone_.clear();
    enable_checksum_.reset();
    security_.clear();
    yb::Result<std::unique_ptr<yb::Client>> r(yb::Status(yb::Code::kInternal, ""));
    {
      py::gil_scoped_release unlocked;
      yb::EnableEmbeddedMaster();
      r = yb::Client::Connect(c);
    }
    if (!r.ok()) return Error(r.status());
    client_ = std::move(r).value();
    return 0;
  }

  int SetupFromDict(const py::dict& d) {
    auto str = [&](const char* k, const std::string& def) {
      return d.contains(k) ? py::str(d[k]).cast<std::string>() : def;
    };
    auto size = [&](const char* k, uint64_t def) -> std::optional<uint64_t> {
      if (!d.contains(k)) return def;
      py::object v = d[k];
      if (py::isinstance<py::int_>(v)) return v.cast<uint64_t>();
      auto parsed = yb::ParseSize(py::str(v).cast<std::string>());
      if (!parsed.ok()) return std::nullopt;
      return *parsed;
    };
    auto gss = size("global_segment_size", kPyGlobalSegmentSize);
    auto lbs = size("local_buffer_size", yb::ClientConfig{}.local_buffer_size);
    if (!gss || !lbs) throw py::value_error("setup: global_segment_size / local_buffer_size must be bytes or \"4 GB\"");
    std::string master = str("master_server_address", str("master_server_addr", kPyMasterServerAddr));
    zone_ = str("zone", "");
    if (d.contains("enable_checksum")) enable_checksum_ = py::bool_(d["enable_checksum"]).cast<bool>();
    // Security (docs/security.md): as yb-client's flags, over YB_AUTH_SECRET_FILE and YB_TLS_*.
    security_.clear();
    for (const auto& [key, field] : kSecurityKeys) {
      if (d.contains(key)) security_.emplace_back(field, py::str(d[key]).cast<std::string>());
    }
    return Setup(str("local_hostname", "localhost"), str("metadata_server", "P2PHANDSHAKE"), *gss, *lbs,
                 str("protocol", "tcp"), str("device_name", str("rdma_devices", "")), master, py::none(),
                 d.contains("enable_ssd_offload") && py::bool_(d["enable_ssd_offload"]).cast<bool>(),
                 str("ssd_offload_path", ""), str("tenant_id", "default"));
  }

  int Close() {
    if (!client_) return 0;
    py::gil_scoped_release unlocked;
    client_.reset();
    return 0;
  }

  int HealthCheck() {
    if (!client_) return kInvalidParams;
    py::gil_scoped_release unlocked;
    return client_->HealthCheck().mooncake_code();
  }

  int Put(const std::string& key, const py::buffer& value, const PyReplicateConfig& cfg) {
    yb::Client& c = Ready();
    py::buffer_info info = value.request();
    uint64_t n = static_cast<uint64_t>(info.size * info.itemsize);
    py::gil_scoped_release unlocked;
    return c.Put(key, info.ptr, n, cfg.ToCpp()).mooncake_code();
  }

  py::bytes Get(const std::string& key) {
    yb::Client& c = Ready();
    yb::Result<std::string> r(yb::Status(yb::Code::kInternal, ""));
    {
      py::gil_scoped_release unlocked;
      r = c.Get(key);
    }
    return r.ok() ? py::bytes(*r) : py::bytes();
  }

  int PutBatch(const std::vector<std::string>& keys, const std::vector<py::buffer>& values,
               const PyReplicateConfig& cfg) {
    yb::Client& c = Ready();
    if (keys.size() != values.size()) throw py::value_error("put_batch: keys and values differ in length");
    std::vector<py::buffer_info> infos;
    std::vector<std::vector<yb::Slice>> slices;
    for (const auto& v : values) {
      infos.push_back(v.request());
      slices.push_back({{infos.back().ptr, static_cast<uint64_t>(infos.back().size * infos.back().itemsize)}});
    }
    std::vector<yb::Status> res;
    {
      py::gil_scoped_release unlocked;
      res = c.BatchPut(keys, slices, cfg.ToCpp());
    }
    for (const auto& s : res) {
      if (!s.ok()) return s.mooncake_code();
    }
    return 0;
  }

  std::vector<py::bytes> GetBatch(const std::vector<std::string>& keys) {
    yb::Client& c = Ready();
    std::vector<yb::Result<std::string>> res;
    {
      py::gil_scoped_release unlocked;
      res = c.BatchGet(keys);
    }
    std::vector<py::bytes> out;
    for (const auto& r : res) out.push_back(r.ok() ? py::bytes(*r) : py::bytes());
    return out;
  }

  int PutFrom(const std::string& key, const py::object& buffer, uint64_t size, const PyReplicateConfig& cfg) {
    yb::Client& c = Ready();
    Memory m = ToMemory(buffer, size, false, "put_from");
    py::gil_scoped_release unlocked;
    return c.Put(key, m.ptr, size, cfg.ToCpp()).mooncake_code();
  }

  int64_t GetInto(const std::string& key, const py::object& buffer, uint64_t size) {
    yb::Client& c = Ready();
    Memory m = ToMemory(buffer, size, true, "get_into");
    py::gil_scoped_release unlocked;
    auto r = c.Get(key, m.ptr, size);
    return r.ok() ? static_cast<int64_t>(*r) : r.status().mooncake_code();
  }

  std::vector<int> BatchPutFrom(const std::vector<std::string>& keys, const std::vector<py::object>& buffers,
                                const std::vector<uint64_t>& sizes, const PyReplicateConfig& cfg) {
    std::vector<std::vector<py::object>> multi;
    std::vector<std::vector<uint64_t>> multi_sizes;
    Lengths(keys.size(), buffers.size(), sizes.size(), "batch_put_from");
    for (size_t i = 0; i < keys.size(); ++i) {
      multi.push_back({buffers[i]});
      multi_sizes.push_back({sizes[i]});
    }
    return BatchPutFromMulti(keys, multi, multi_sizes, cfg);
  }

  std::vector<int64_t> BatchGetInto(const std::vector<std::string>& keys, const std::vector<py::object>& buffers,
                                    const std::vector<uint64_t>& sizes) {
    std::vector<std::vector<py::object>> multi;
    std::vector<std::vector<uint64_t>> multi_sizes;
    Lengths(keys.size(), buffers.size(), sizes.size(), "batch_get_into");
    for (size_t i = 0; i < keys.size(); ++i) {
      multi.push_back({buffers[i]});
      multi_sizes.push_back({sizes[i]});
    }
    return BatchGetIntoMulti(keys, multi, multi_sizes, false);
  }

  std::vector<int> BatchPutFromMulti(const std::vector<std::string>& keys,
                                     const std::vector<std::vector<py::object>>& all_buffers,
                                     const std::vector<std::vector<uint64_t>>& all_sizes,
                                     const PyReplicateConfig& cfg) {
    yb::Client& c = Ready();
    Lengths(keys.size(), all_buffers.size(), all_sizes.size(), "batch_put_from_multi_buffers");
    std::vector<Memory> keep;
    auto slices = ToSlices(all_buffers, all_sizes, false, "batch_put_from_multi_buffers", keep);
    std::vector<yb::Status> res;
    {
      py::gil_scoped_release unlocked;
      res = c.BatchPut(keys, slices, cfg.ToCpp());
    }
    std::vector<int> out;
    for (const auto& s : res) out.push_back(s.mooncake_code());
    return out;
  }

  std::vector<int64_t> BatchGetIntoMulti(const std::vector<std::string>& keys,
                                         const std::vector<std::vector<py::object>>& all_buffers,
                                         const std::vector<std::vector<uint64_t>>& all_sizes, bool) {
    yb::Client& c = Ready();
    Lengths(keys.size(), all_buffers.size(), all_sizes.size(), "batch_get_into_multi_buffers");
    std::vector<Memory> keep;
    auto slices = ToSlices(all_buffers, all_sizes, true, "batch_get_into_multi_buffers", keep);
    std::vector<yb::Result<uint64_t>> res;
    {
      py::gil_scoped_release unlocked;
      res = c.BatchGet(keys, slices);
    }
    std::vector<int64_t> out;
    for (const auto& r : res) out.push_back(r.ok() ? static_cast<int64_t>(*r) : r.status().mooncake_code());
    return out;
  }

  int IsExist(const std::string& key) {
    yb::Client& c = Ready();
    py::gil_scoped_release unlocked;
    auto r = c.IsExist(key);
    return r.ok() ? (*r ? 1 : 0) : r.status().mooncake_code();
  }

  std::vector<int> BatchIsExist(const std::vector<std::string>& keys) {
    yb::Client& c = Ready();
    std::vector<yb::Result<bool>> res;
    {
      py::gil_scoped_release unlocked;
      res = c.BatchIsExist(keys);
    }
    std::vector<int> out;
    for (const auto& r : res) out.push_back(r.ok() ? (*r ? 1 : 0) : r.status().mooncake_code());
    return out;
  }

  // Where a key's replicas are, memory or disk; empty on a miss.
  std::vector<PyReplicaDescriptor> GetReplicaDesc(const std::string& key) {
    yb::Client& c = Ready();
    yb::Result<yb::Client::QueryResult> q(yb::Status(yb::Code::kInternal, ""));
    {
      py::gil_scoped_release unlocked;
      q = c.Query(key);
    }
    std::vector<PyReplicaDescriptor> out;
    if (q.ok()) {
      for (const auto& r : q->replicas) out.push_back(PyReplicaDescriptor{r});
    }
    return out;
  }

  std::map<std::string, std::vector<PyReplicaDescriptor>> BatchGetReplicaDesc(const std::vector<std::string>& keys) {
    std::map<std::string, std::vector<PyReplicaDescriptor>> out;
    for (const auto& k : keys) out[k] = GetReplicaDesc(k);
    return out;
  }

  int64_t GetSize(const std::string& key) {
    yb::Client& c = Ready();
    py::gil_scoped_release unlocked;
    auto r = c.GetSize(key);
    return r.ok() ? static_cast<int64_t>(*r) : r.status().mooncake_code();
  }

  int Remove(const std::string& key, bool force) {
    yb::Client& c = Ready();
    py::gil_scoped_release unlocked;
    return c.Remove(key, force).mooncake_code();
  }

  int64_t RemoveByRegex(const std::string& pattern, bool force) {
    yb::Client& c = Ready();
    py::gil_scoped_release unlocked;
    auto r = c.RemoveByRegex(pattern, force);
    return r.ok() ? static_cast<int64_t>(*r) : r.status().mooncake_code();
  }

  int64_t RemoveAll(bool force) {
    yb::Client& c = Ready();
    py::gil_scoped_release unlocked;
    auto r = c.RemoveAll(force);
    return r.ok() ? static_cast<int64_t>(*r) : r.status().mooncake_code();
  }

  std::vector<int> BatchRemove(const std::vector<std::string>& keys, bool force) {
    yb::Client& c = Ready();
    std::vector<yb::Status> res;
    {
      py::gil_scoped_release unlocked;
      res = c.BatchRemove(keys, force);
    }
    std::vector<int> out;
    for (const auto& s : res) out.push_back(s.mooncake_code());
    return out;
  }

  int RegisterBuffer(const py::object& buffer, uint64_t size) {
    yb::Client& c = Ready();
    void* p = nullptr;
    if (py::isinstance<py::int_>(buffer)) {
      p = reinterpret_cast<void*>(buffer.cast<uintptr_t>());
    } else if (py::isinstance<py::buffer>(buffer)) {
      py::buffer_info info = buffer.cast<py::buffer>().request();
      if (static_cast<uint64_t>(info.size * info.itemsize) < size) {
        throw py::value_error("register_buffer: size exceeds the buffer");
      }
      p = info.ptr;
    } else {
      throw py::type_error("register_buffer: buffer_ptr must be an int address or a buffer object");
    }
    return c.RegisterBuffer(p, size).mooncake_code();
  }

  int UnregisterBuffer(const py::object& buffer) {
    yb::Client& c = Ready();
    void* p = nullptr;
    if (py::isinstance<py::int_>(buffer)) {
      p = reinterpret_cast<void*>(buffer.cast<uintptr_t>());
    } else if (py::isinstance<py::buffer>(buffer)) {
      p = buffer.cast<py::buffer>().request().ptr;
    } else {
      throw py::type_error("unregister_buffer: buffer_ptr must be an int address or a buffer object");
    }
    return c.UnregisterBuffer(p).mooncake_code();
  }

  std::string GetHostname() { return Ready().hostname(); }

 private:
  static int Error(const yb::Status& st) {
    py::module_::import("logging").attr("getLogger")("yuebing").attr("error")(st.ToString());
    return st.mooncake_code();
  }

  yb::Client& Ready() {
    if (!client_) throw std::runtime_error("MooncakeDistributedStore is not set up: call setup() first");
    return *client_;
  }

  static void Lengths(size_t keys, size_t buffers, size_t sizes, const char* what) {
    if (keys != buffers || keys != sizes) {
      throw py::value_error(std::string(what) + ": keys, buffers and sizes differ in length");
    }
  }

  Memory ToMemory(const py::object& buffer, uint64_t size, bool writable, const char* what) {
    Memory m;
    m.size = size;
    if (py::isinstance<py::int_>(buffer)) {
      m.ptr = reinterpret_cast<void*>(buffer.cast<uintptr_t>());
      if (!client_->IsRegistered(m.ptr, size)) {
        throw py::value_error(std::string(what) + ": address " + std::to_string(buffer.cast<uintptr_t>()) +
                              " with size " + std::to_string(size) +
                              " is not inside a registered buffer (call register_buffer first)");
      }
      return m;
    }
    if (!py::isinstance<py::buffer>(buffer)) {
      throw py::type_error(std::string(what) + ": buffer must be an int address or a buffer object");
    }
    m.info = buffer.cast<py::buffer>().request(writable);
    uint64_t have = static_cast<uint64_t>(m.info->size * m.info->itemsize);
    if (size > have) {
      throw py::value_error(std::string(what) + ": size " + std::to_string(size) + " exceeds the buffer's " +
                            std::to_string(have) + " bytes");
    }
    m.ptr = m.info->ptr;
    return m;
  }

  std::vector<std::vector<yb::Slice>> ToSlices(const std::vector<std::vector<py::object>>& all_buffers,
                                               const std::vector<std::vector<uint64_t>>& all_sizes, bool writable,
                                               const char* what, std::vector<Memory>& keep) {
    std::vector<std::vector<yb::Slice>> out;
    for (size_t i = 0; i < all_buffers.size(); ++i) {
      if (all_buffers[i].size() != all_sizes[i].size()) {
        throw py::value_error(std::string(what) + ": buffers and sizes of key " + std::to_string(i) +
                              " differ in length");
      }
      std::vector<yb::Slice> slices;
      for (size_t j = 0; j < all_buffers[i].size(); ++j) {
        keep.push_back(ToMemory(all_buffers[i][j], all_sizes[i][j], writable, what));
        slices.push_back({keep.back().ptr, all_sizes[i][j]});
      }
      out.push_back(std::move(slices));
    }
    return out;
  }

  std::unique_ptr<yb::Client> client_;
  std::string zone_;  // setup(dict)'s "zone" (else YB_ZONE)
  std::optional<bool> enable_checksum_;
  // setup(dict)'s security keys, set over what the environment gave.
  using Field = std::string* (*)(yb::ClientConfig&);
  static constexpr std::pair<const char*, Field> kSecurityKeys[] = {
      {"auth_secret_file", [](yb::ClientConfig& c) { return &c.auth_secret_file; }},
      {"tls_cert", [](yb::ClientConfig& c) { return &c.tls_cert; }},
      {"tls_key", [](yb::ClientConfig& c) { return &c.tls_key; }},
      {"tls_ca", [](yb::ClientConfig& c) { return &c.tls_ca; }},
  };
  std::vector<std::pair<Field, std::string>>
      security_;  // setup(dict)'s "enable_checksum" (else YB_ENABLE_CHECKSUM, else on)
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
  py::class_<PyReplicaDescriptor>(m, "ReplicaDescriptor")
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
  py::class_<PyReplicateConfig>(m, "ReplicateConfig")
      .def(py::init<>())
      .def_readwrite("replica_num", &PyReplicateConfig::replica_num)
      .def_readwrite("with_soft_pin", &PyReplicateConfig::with_soft_pin)
      .def_readwrite("with_hard_pin", &PyReplicateConfig::with_hard_pin)
      .def_readwrite("preferred_segments", &PyReplicateConfig::preferred_segments)
      .def_readwrite("preferred_segment", &PyReplicateConfig::preferred_segment)
      .def_readwrite("prefer_alloc_in_same_node", &PyReplicateConfig::prefer_alloc_in_same_node)
      .def("__repr__", [](const PyReplicateConfig& c) {
        return "ReplicateConfig(replica_num=" + std::to_string(c.replica_num) +
               ", with_soft_pin=" + (c.with_soft_pin ? "True" : "False") +
               ", with_hard_pin=" + (c.with_hard_pin ? "True" : "False") + ")";
      });
  using PR = PyReplicateConfig;
  py::class_<Store>(m, "MooncakeDistributedStore")
      .def(py::init<>())
      .def("setup", &Store::Setup, py::arg("local_hostname"), py::arg("metadata_server"),
           py::arg("global_segment_size") = kPyGlobalSegmentSize,
           py::arg("local_buffer_size") = yb::ClientConfig{}.local_buffer_size, py::arg("protocol") = "tcp",
           py::arg("rdma_devices") = "", py::arg("master_server_addr") = kPyMasterServerAddr,
           py::arg("engine") = py::none(), py::arg("enable_ssd_offload") = false, py::arg("ssd_offload_path") = "",
           py::arg("tenant_id") = "default")
      .def("setup", &Store::SetupFromDict, py::arg("config"))
      .def("close", &Store::Close)
      .def("health_check", &Store::HealthCheck)
      .def("put", &Store::Put, py::arg("key"), py::arg("value"), py::arg("config") = PR())
      .def("get", &Store::Get, py::arg("key"))
      .def("put_batch", &Store::PutBatch, py::arg("keys"), py::arg("values"), py::arg("config") = PR())
      .def("get_batch", &Store::GetBatch, py::arg("keys"))
      .def("put_from", &Store::PutFrom, py::arg("key"), py::arg("buffer_ptr"), py::arg("size"),
           py::arg("config") = PR())
      .def("get_into", &Store::GetInto, py::arg("key"), py::arg("buffer_ptr"), py::arg("size"))
      .def("batch_put_from", &Store::BatchPutFrom, py::arg("keys"), py::arg("buffer_ptrs"), py::arg("sizes"),
           py::arg("config") = PR())
      .def("batch_get_into", &Store::BatchGetInto, py::arg("keys"), py::arg("buffer_ptrs"), py::arg("sizes"))
      .def("batch_put_from_multi_buffers", &Store::BatchPutFromMulti, py::arg("keys"), py::arg("all_buffer_ptrs"),
           py::arg("all_sizes"), py::arg("config") = PR())
      .def("batch_get_into_multi_buffers", &Store::BatchGetIntoMulti, py::arg("keys"), py::arg("all_buffer_ptrs"),
           py::arg("all_sizes"), py::arg("prefer_alloc_in_same_node") = false)
      .def("is_exist", &Store::IsExist, py::arg("key"))
      .def("batch_is_exist", &Store::BatchIsExist, py::arg("keys"))
      .def("get_size", &Store::GetSize, py::arg("key"))
      .def("get_replica_desc", &Store::GetReplicaDesc, py::arg("key"))
      .def("batch_get_replica_desc", &Store::BatchGetReplicaDesc, py::arg("keys"))
      .def("remove", &Store::Remove, py::arg("key"), py::arg("force") = false)
      .def("remove_by_regex", &Store::RemoveByRegex, py::arg("regex_pattern"), py::arg("force") = false)
      .def("remove_all", &Store::RemoveAll, py::arg("force") = false)
      .def("batch_remove", &Store::BatchRemove, py::arg("keys"), py::arg("force") = false)
      .def("register_buffer", &Store::RegisterBuffer, py::arg("buffer_ptr"), py::arg("size"))
      .def("unregister_buffer", &Store::UnregisterBuffer, py::arg("buffer_ptr"))
      .def("get_hostname", &Store::GetHostname);
}
