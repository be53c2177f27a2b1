// Python calls bound beside the store class of yuebing_py.cc, with Mooncake's names and conventions
// (docs/compat.md): copy and move tasks (create_copy_task(key, targets) and
// create_move_task(key, source, target) answer (task id, code), the id a pair of ints (Mooncake's
// UUID), (0, 0) with a failure; query_task(task_id) answers (QueryTaskResponse or None, code);
// TaskType, TaskStatus and QueryTaskResponse are Mooncake's), batch_replica_clear(keys,
// segment_name="") answering the keys cleared ([] on any failure); memory mounted at run time
// (allocate_and_mount_segment(size, protocol, location) answering {"ret", "segment_ids" (strings),
// "allocated_size"}, mount_segment(path, size, offset, protocol, location) a file's range, answering
// {"ret", "segment_ids"}; unmount_and_free_segment / unmount_segment(segment_ids, grace_period_seconds)
// answering a code); get_offload_rpc_read_count(); and _local_buffer_size(), the default bound of a BufferPool
// (yuebing/_buffer_pool.py).
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "py_values.h"
#include "yuebing/client.h"

namespace yb::py_extra_calls {

namespace py = pybind11;
using Uuid = std::pair<uint64_t, uint64_t>;

struct QueryTaskResponse {
  Uuid id;
  TaskType type = TaskType::kCopy;
  TaskStatus status = TaskStatus::kPending;
  int64_t created_at_ms_epoch = 0;
  int64_t last_updated_at_ms_epoch = 0;
  Uuid assigned_client;
  std::string message;
};

inline py::tuple Created(const Result<TaskId>& id) {
  if (!id.ok()) return py::make_tuple(Uuid{0, 0}, py_values::Error(id.status()));
  return py::make_tuple(Uuid{id->hi, id->lo}, 0);
}

// Binds the types on `m` and the calls on the store class `cls`; `ready(store, what)` is the
// store's client, or null (logged) when it is not set up.
template <typename Cls, typename Ready>
void Bind(py::module_& m, Cls& cls, Ready ready) {
  using Store = typename Cls::type;
  py::enum_<TaskType>(m, "TaskType")
      .value("REPLICA_COPY", TaskType::kCopy)
      .value("REPLICA_MOVE", TaskType::kMove)
      .export_values();
  py::enum_<TaskStatus>(m, "TaskStatus")
      .value("PENDING", TaskStatus::kPending)
      .value("PROCESSING", TaskStatus::kProcessing)
      .value("SUCCESS", TaskStatus::kSuccess)
      .value("FAILED", TaskStatus::kFailed)
      .export_values();
  using Q = QueryTaskResponse;
  py::class_<Q>(m, "QueryTaskResponse")
      .def(py::init<>())
      .def_readonly("id", &Q::id)
      .def_readonly("type", &Q::type)
      .def_readonly("status", &Q::status)
      .def_readonly("created_at_ms_epoch", &Q::created_at_ms_epoch)
      .def_readonly("last_updated_at_ms_epoch", &Q::last_updated_at_ms_epoch)
      .def_readonly("assigned_client", &Q::assigned_client)
      .def_readonly("message", &Q::message)
      .def("__repr__", [](const Q& q) {
        return "QueryTaskResponse(id=(" + std::to_string(q.id.first) + ", " + std::to_string(q.id.second) +
               "), type=" + std::to_string(static_cast<int>(q.type)) +
               ", status=" + std::to_string(static_cast<int>(q.status)) +
               ", created_at=" + std::to_string(q.created_at_ms_epoch) +
               ", last_updated_at=" + std::to_string(q.last_updated_at_ms_epoch) + ", message=\"" + q.message +
               "\")";
      });
  cls.def(
         "create_copy_task",
         [ready](Store& s, const std::string& key, const std::vector<std::string>& targets) {
           auto c = ready(s, "create_copy_task");
           if (!c) return py::make_tuple(Uuid{0, 0}, py_values::kInvalidParams);
           Result<TaskId> id(Status(Code::kInternal, ""));
           {
             py::gil_scoped_release unlocked;
             id = c->CreateCopyTask(key, targets);
           }
           return Created(id);
         },
         py::arg("key"), py::arg("targets"))
      .def(
          "create_move_task",
          [ready](Store& s, const std::string& key, const std::string& source, const std::string& target) {
            auto c = ready(s, "create_move_task");
            if (!c) return py::make_tuple(Uuid{0, 0}, py_values::kInvalidParams);
            Result<TaskId> id(Status(Code::kInternal, ""));
            {
              py::gil_scoped_release unlocked;
              id = c->CreateMoveTask(key, source, target);
            }
            return Created(id);
          },
          py::arg("key"), py::arg("source"), py::arg("target"))
      .def(
          "query_task",
          [ready](Store& s, const Uuid& task_id) {
            auto c = ready(s, "query_task");
            if (!c) return py::make_tuple(py::none(), py_values::kInvalidParams);
            Result<TaskInfo> t(Status(Code::kInternal, ""));
            {
              py::gil_scoped_release unlocked;
              t = c->QueryTask(TaskId{task_id.first, task_id.second});
            }
            if (!t.ok()) return py::make_tuple(py::none(), py_values::Error(t.status()));
            Q q{{t->id.hi, t->id.lo}, t->type,    t->status, t->created_ms, t->updated_ms,
                {t->assigned_client.hi, t->assigned_client.lo}, t->message};
            return py::make_tuple(py::cast(q), 0);
          },
          py::arg("task_id"))
      .def(
          "batch_replica_clear",
          [ready](Store& s, const std::vector<std::string>& keys, const std::string& segment_name) {
            std::vector<std::string> out;
            auto c = ready(s, "batch_replica_clear");
            if (!c) return out;
            Result<std::vector<std::string>> cleared(Status(Code::kInternal, ""));
            {
              py::gil_scoped_release unlocked;
              cleared = c->BatchReplicaClear(keys, segment_name);
            }
            if (!cleared.ok()) {
              py_values::Error(cleared.status());
              return out;
            }
            return *cleared;
          },
          py::arg("keys"), py::arg("segment_name") = "")
      // Ours: why a key holds no object, as far as the master remembers: {"ret": 0 or a negative
      // code, "reason": "removed" (MissReasonName; "stored" if it is there), "age_ms": how long ago
      // (-1: not known), "message": "removed 12 s ago"}.
      .def(
          "get_miss_reason",
          [ready](Store& s, const std::string& key) {
            py::dict out;
            out["ret"] = py_values::kInvalidParams;
            out["reason"] = "";
            out["age_ms"] = -1;
            out["message"] = "";
            auto c = ready(s, "get_miss_reason");
            if (!c) return out;
            Result<MissInfo> w(Status(Code::kInternal, ""));
            {
              py::gil_scoped_release unlocked;
              w = c->WhyMissing(key);
            }
            if (!w.ok()) {
              out["ret"] = py_values::Error(w.status());
              out["message"] = w.status().message();
              return out;
            }
            out["ret"] = 0;
            out["reason"] = std::string(MissReasonName(w->reason));
            out["age_ms"] = w->age_ms;
            out["message"] = DescribeMiss(*w);
            return out;
          },
          py::arg("key"))
      .def("_local_buffer_size", [](const Store& s) { return s.local_buffer_size_; })  // for BufferPool
      // Objects read from an SSD tier so far (ClientStats::disk_reads); 0 before setup, as Mooncake.
      .def("get_offload_rpc_read_count", [](Store& s) -> int64_t {
        auto c = s.Current();
        return c ? static_cast<int64_t>(c->Stats().disk_reads) : 0;
      });
  // {"ret", "segment_ids" (strings)[, "allocated_size"]} of a mount, as Mooncake answers them.
  auto mounted = [](const Result<std::vector<SegmentId>>& ids, uint64_t size, bool with_size) {
    py::dict out;
    out["ret"] = ids.ok() ? 0 : py_values::Error(ids.status());
    py::list names;
    if (ids.ok()) {
      for (SegmentId id : *ids) names.append(std::to_string(id));
    }
    out["segment_ids"] = names;
    if (with_size) out["allocated_size"] = ids.ok() ? size : 0;
    return out;
  };
  cls.def(
         "allocate_and_mount_segment",
         [ready, mounted](Store& s, uint64_t size, const std::string& protocol, const std::string& location) {
           (void)protocol;  // transfers go as the store's do
           (void)location;
           auto c = ready(s, "allocate_and_mount_segment");
           if (!c) return mounted(Status(Code::kInvalidParams, "not set up"), size, true);
           Result<std::vector<SegmentId>> ids(Status(Code::kInternal, ""));
           {
             py::gil_scoped_release unlocked;
             ids = c->AllocateAndMountSegment(size);
           }
           return mounted(ids, size, true);
         },
         py::arg("size"), py::arg("protocol") = "tcp", py::arg("location") = "")
      .def(
          "mount_segment",
          [ready, mounted](Store& s, const std::string& path, uint64_t size, uint64_t offset,
                           const std::string& protocol, const std::string& location) {
            (void)protocol;
            (void)location;
            auto c = ready(s, "mount_segment");
            if (!c) return mounted(Status(Code::kInvalidParams, "not set up"), size, false);
            Result<std::vector<SegmentId>> ids(Status(Code::kInternal, ""));
            {
              py::gil_scoped_release unlocked;
              ids = c->MountFileSegment(path, offset, size);
            }
            return mounted(ids, size, false);
          },
          py::arg("path"), py::arg("size"), py::arg("offset") = 0, py::arg("protocol") = "tcp",
          py::arg("location") = "");
  auto unmount = [ready](Store& s, const std::vector<std::string>& segment_ids, uint64_t grace_period_seconds) {
    auto c = ready(s, "unmount_and_free_segment");
    if (!c) return py_values::kInvalidParams;
    std::vector<SegmentId> ids;
    for (const auto& text : segment_ids) {
      char* end = nullptr;
      const unsigned long long id = std::strtoull(text.c_str(), &end, 10);
      if (text.empty() || *end != '\0') {
        return py_values::Error(Status(Code::kInvalidParams, "segment id '" + text + "' is not a number"));
      }
      ids.push_back(id);
    }
    Status st;
    {
      py::gil_scoped_release unlocked;
      st = c->UnmountAndFreeSegments(ids, std::chrono::seconds(std::min<uint64_t>(grace_period_seconds, 86400)));
    }
    return st.ok() ? 0 : py_values::Error(st);
  };
  cls.def("unmount_and_free_segment", unmount, py::arg("segment_ids"), py::arg("grace_period_seconds") = 0)
      .def("unmount_segment", unmount, py::arg("segment_ids"), py::arg("grace_period_seconds") = 0);
}

}  // namespace yb::py_extra_calls
