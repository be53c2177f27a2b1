// The Python binding: yuebing.MooncakeDistributedStore with the method names, arguments, defaults
// and return conventions of Mooncake's class (docs/compat.md): int statuses (0 or a negative
// Mooncake code), per-key codes in batch results, bytes for get (empty on a miss), None for a
// buffer that is not there. Exceptions only where Mooncake raises them: an argument of the wrong
// Python type. It converts arguments and calls yb::Client; the GIL is released while bytes move.
// This file binds the names; the calls are Store's (py_store.h), defined by concern beside it.
//
// Caller memory is an integer address (used as it is, as Mooncake does over TCP: registered
// buffers are the zero-copy path, other memory is staged) or a buffer-protocol object (numpy
// arrays, bytearray, memoryview, torch tensors through .numpy()), which must be C-contiguous.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "py_extra_calls.h"
#include "py_memory.h"
#include "py_store.h"
#include "py_values.h"
#include "setup_config.h"
#include "yuebing/client.h"

namespace py = pybind11;

namespace {

using namespace yb::py_values;  // NOLINT: the binding's own value types
using namespace yb::py_memory;  // NOLINT: caller memory as slices
using yb::py_store::Store;

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
