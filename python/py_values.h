// The values the Python binding hands to and takes from Python (yuebing_py.cc): Mooncake's return
// codes, ReplicateConfig and replica descriptors, buffer-protocol views of caller memory, and the
// owned bytes get_buffer answers.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "yuebing/client.h"

namespace yb::py_values {

namespace py = pybind11;

// ---- Mooncake's return conventions: codes, not exceptions; errors logged on "yuebing".
inline constexpr int kInvalidParams = -600;  // INVALID_PARAMS
// health_check's answers, as Mooncake's.
inline constexpr int kHealthy = 0;
inline constexpr int kNotInitialized = 1;
inline constexpr int kMasterUnreachable = 2;

inline void LogError(const std::string& message) {
  py::module_::import("logging").attr("getLogger")("yuebing").attr("error")(message);
}

inline int Error(const yb::Status& st) {
  LogError(st.ToString());
  return st.mooncake_code();
}

inline std::vector<int> Codes(const std::vector<yb::Status>& res) {
  std::vector<int> out;
  out.reserve(res.size());
  for (const auto& s : res) out.push_back(s.mooncake_code());
  return out;
}

inline int64_t SizeOrCode(const yb::Result<uint64_t>& r) {
  return r.ok() ? static_cast<int64_t>(*r) : r.status().mooncake_code();
}

// Mooncake's SoftPinAction: what a write does to the object's soft pin.
enum class SoftPinAction : uint8_t { kPreserve = 0, kEnable = 1, kDisable = 2 };

struct PyReplicateConfig {
  size_t replica_num = 1;
  bool with_soft_pin = false;
  bool with_hard_pin = false;
  std::vector<std::string> preferred_segments;
  std::string preferred_segment;  // deprecated single form
  bool prefer_alloc_in_same_node = false;
  SoftPinAction soft_pin_action = SoftPinAction::kPreserve;
  // With ENABLE only (else the write answers -600, as Mooncake's); the pin lasts the master's
  // --default_kv_soft_pin_ttl whatever it says.
  std::optional<uint64_t> soft_pin_ttl_ms;
  // Mooncake's routing groups, one per key of a write (None: none): a group's objects go first to
  // the segment its last one went to, where they fit (the master's GroupHomes).
  std::optional<std::vector<std::string>> group_ids;

  yb::ReplicateConfig ToCpp() const {
    yb::ReplicateConfig c;
    c.replica_num = replica_num == 0 ? 1 : replica_num;  // a zeroed config means the default, as NULL does
    c.with_soft_pin =
        soft_pin_action == SoftPinAction::kEnable || (soft_pin_action == SoftPinAction::kPreserve && with_soft_pin);
    // Mooncake refuses a TTL with PRESERVE or DISABLE (INVALID_PARAMS): so does the write.
    c.soft_pin_ttl_ms = soft_pin_ttl_ms;
    if (soft_pin_ttl_ms && soft_pin_action != SoftPinAction::kEnable) c.with_soft_pin = false;
    c.with_hard_pin = with_hard_pin;
    c.preferred_segments = preferred_segments;
    if (!preferred_segment.empty()) c.preferred_segments.insert(c.preferred_segments.begin(), preferred_segment);
    c.prefer_local = prefer_alloc_in_same_node;
    if (group_ids) c.group_ids = *group_ids;
    return c;
  }
};

// The bytes of a buffer-protocol object, held for as long as this lives (release with the GIL).
class ByteView {
 public:
  ByteView(const py::handle& obj, bool writable, const char* what) {
    if (PyObject_GetBuffer(obj.ptr(), &view_, writable ? PyBUF_WRITABLE : PyBUF_SIMPLE) != 0) {
      PyErr_Clear();
      throw py::type_error(std::string(what) + ": expected an int address or a C-contiguous" +
                           (writable ? " writable" : "") + " bytes-like object, got " +
                           std::string(py::str(py::type::handle_of(obj).attr("__name__"))));
    }
    held_ = true;
  }
  ByteView(ByteView&& o) noexcept : view_(o.view_), held_(o.held_) { o.held_ = false; }
  ByteView(const ByteView&) = delete;
  ByteView& operator=(const ByteView&) = delete;
  ByteView& operator=(ByteView&&) = delete;
  ~ByteView() {
    if (held_) PyBuffer_Release(&view_);
  }
  void* data() const { return view_.buf; }
  uint64_t size() const { return static_cast<uint64_t>(view_.len); }

 private:
  Py_buffer view_{};
  bool held_ = false;
};

// A caller's memory: an integer address, or a buffer-protocol object. `code` is not 0 when it
// cannot be used (logged): the call (or that key of a batch) answers it.
struct Memory {
  void* ptr = nullptr;
  uint64_t size = 0;
  std::optional<ByteView> view;
  int code = 0;
};

// Bytes that get_buffer returned (yb::Client::GetView), exported through the buffer protocol: the
// pool's own bytes in place, pinned while the handle lives and read-only to Python, or a copy,
// owned here and writable as Mooncake's are.
class BufferHandle {
 public:
  explicit BufferHandle(yb::ObjectView view) : view_(std::move(view)) {}
  char* ptr() const { return static_cast<char*>(const_cast<void*>(view_.data)); }
  uint64_t size() const { return view_.size; }
  bool in_place() const { return view_.in_place; }

 private:
  yb::ObjectView view_;
};

// Mooncake's buffer descriptor: where a memory replica's bytes are, as its holder serves them.
struct PyBufferDescriptor {
  uint64_t size = 0;
  uint64_t buffer_address = 0;  // in the holder's address space (its segment's base + offset)
  std::string transport_endpoint;
};
struct PyMemoryDescriptor {
  PyBufferDescriptor buffer_descriptor;
};
struct PyDiskDescriptor {
  std::string file_path;  // "": a holder's SSD tier keeps it in its buckets, not a file of its own
  uint64_t object_size = 0;
};

// One replica as get_replica_desc reports it.
struct PyReplicaDescriptor {
  yb::ReplicaDesc d;
  PyMemoryDescriptor memory;  // a memory replica's, with its holder's endpoint and address
  PyDiskDescriptor disk;
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

}  // namespace yb::py_values
