// The master's RPC methods, declared once. Each row of YB_MASTER_METHODS is one method: its wire
// id, its name, and its request and response messages (proto/master.proto). From the table come the
// MasterMethod enum, the names that metrics print, and the message types of each method
// (MethodTraits). The server half (master_server.cc) registers one handler per row, an overload of
// Serve() for the row's request type; the client half (master_client.cc) calls a method through
// Call<M>() with the row's types. So a new method is one row, its Serve() and its stub: a row
// without a Serve() overload does not compile.
//
// Wire ids are stable: append rows, never renumber (a retired id stays unused).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <string_view>

#include "master.pb.h"

namespace yb::rpc {

// X(id, Name, Request, Response)
#define YB_MASTER_METHODS(X)                                           \
  X(1, RegisterClient, RegisterClientRequest, RegisterClientResponse)  \
  X(2, Ping, PingRequest, PingResponse)                                \
  X(3, UnregisterClient, UnregisterClientRequest, StatusResponse)      \
  X(4, MountSegments, MountSegmentsRequest, StatusResponse)            \
  X(5, UnmountSegment, UnmountSegmentRequest, StatusResponse)          \
  X(6, ListSegments, ListSegmentsRequest, ListSegmentsResponse)        \
  X(7, PutStart, PutStartRequest, PutStartResponse)                    \
  X(8, PutEnd, PutEndRequest, StatusesResponse)                        \
  X(9, PutRevoke, KeysRequest, StatusesResponse)                       \
  X(10, GetReplicaList, GetReplicaListRequest, GetReplicaListResponse) \
  X(11, ReadEnd, ReadEndRequest, StatusesResponse)                     \
  X(12, ExistKey, KeysRequest, ExistKeyResponse)                       \
  X(13, Remove, RemoveRequest, StatusesResponse)                       \
  X(14, RemoveWhere, RemoveWhereRequest, RemoveWhereResponse)          \
  X(15, OffloadFetch, OffloadFetchRequest, OffloadFetchResponse)       \
  X(16, OffloadDone, OffloadDoneRequest, StatusesResponse)             \
  X(17, AddDiskReplicas, AddDiskReplicasRequest, StatusesResponse)     \
  X(18, DropDiskReplicas, DropDiskReplicasRequest, StatusesResponse)   \
  X(19, RepairFetch, RepairFetchRequest, RepairFetchResponse)          \
  X(20, RepairDone, RepairDoneRequest, StatusesResponse)               \
  X(21, DrainSegment, DrainSegmentRequest, DrainSegmentResponse)       \
  X(22, UndrainSegment, DrainSegmentRequest, StatusResponse)           \
  X(23, CreateTask, CreateTaskRequest, CreateTaskResponse)             \
  X(24, QueryTask, QueryTaskRequest, QueryTaskResponse)                \
  X(25, BatchReplicaClear, ReplicaClearRequest, ReplicaClearResponse)  \
  X(26, WhyMissing, KeysRequest, WhyMissingResponse)                   \
  X(27, PutCommit, PutCommitRequest, PutCommitResponse)

enum class MasterMethod : uint16_t {
#define YB_METHOD_ENUM(id, name, req, resp) k##name = id,
  YB_MASTER_METHODS(YB_METHOD_ENUM)
#undef YB_METHOD_ENUM
};

struct MethodRow {
  MasterMethod method;
  std::string_view name;
};

inline constexpr std::array kMasterMethods = {
#define YB_METHOD_ROW(id, name, req, resp) MethodRow{MasterMethod::k##name, #name},
    YB_MASTER_METHODS(YB_METHOD_ROW)
#undef YB_METHOD_ROW
};

// One past the largest wire id: arrays indexed by method id have this many entries.
inline constexpr uint16_t kMethodIdLimit = [] {
  uint16_t m = 0;
  for (const auto& row : kMasterMethods) m = std::max<uint16_t>(m, static_cast<uint16_t>(row.method));
  return static_cast<uint16_t>(m + 1);
}();

constexpr bool MethodIdsUnique() {
  for (size_t i = 0; i < kMasterMethods.size(); ++i) {
    for (size_t j = i + 1; j < kMasterMethods.size(); ++j) {
      if (kMasterMethods[i].method == kMasterMethods[j].method) return false;
    }
  }
  return true;
}
static_assert(MethodIdsUnique(), "two rows of YB_MASTER_METHODS share a wire id");

// Name of a method for metrics, e.g. "PutStart"; empty for unknown ids.
constexpr std::string_view MasterMethodName(uint16_t id) {
  for (const auto& row : kMasterMethods) {
    if (static_cast<uint16_t>(row.method) == id) return row.name;
  }
  return {};
}

// The request and response messages of a method.
template <MasterMethod M>
struct MethodTraits;
#define YB_METHOD_TRAITS(id, name, req, resp)  \
  template <>                                  \
  struct MethodTraits<MasterMethod::k##name> { \
    using Request = pb::req;                   \
    using Response = pb::resp;                 \
  };
YB_MASTER_METHODS(YB_METHOD_TRAITS)
#undef YB_METHOD_TRAITS

}  // namespace yb::rpc
