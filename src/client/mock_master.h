// MockMaster: a scripted MasterApi (gmock) for client-side tests.
#pragma once

#include <gmock/gmock.h>

#include <optional>
#include <string>
#include <vector>

#include "api/master_api.h"

namespace yb::testing {

// Only the virtual calls: the single-key helpers of MasterApi arrive here as batches of one.
class MockMaster : public MasterApi {
 public:
  using MasterApi::BatchPutStart;  // and its helper form without a WriteMode
  MOCK_METHOD(Result<CallContext>, RegisterClient, (const ClientRegistration&), (override));
  using MasterApi::Ping;
  MOCK_METHOD(Result<PingResponse>, Ping, (const CallContext&, const PingState&), (override));
  MOCK_METHOD(Status, UnregisterClient, (const CallContext&), (override));
  MOCK_METHOD(Status, MountSegments, (const CallContext&, const std::vector<SegmentMount>&), (override));
  MOCK_METHOD(Status, UnmountSegment, (const CallContext&, SegmentId), (override));
  MOCK_METHOD(Result<std::vector<SegmentUsage>>, ListSegments, (), (override));
  MOCK_METHOD(std::vector<Result<std::vector<GrantedReplica>>>, BatchPutStart,
              (const CallContext&, const Keys&, const std::vector<uint64_t>&, const PlacementConfig&, WriteMode),
              (override));
  MOCK_METHOD(std::vector<Status>, BatchPutEnd,
              (const CallContext&, const Keys&, const std::vector<std::optional<uint64_t>>&), (override));
  MOCK_METHOD(std::vector<Status>, BatchPutRevoke, (const CallContext&, const Keys&), (override));
  MOCK_METHOD(std::vector<Result<ObjectInfo>>, BatchGetReplicaList, (const CallContext&, const Keys&, bool),
              (override));
  MOCK_METHOD(std::vector<Status>, BatchReadEnd, (const CallContext&, const Keys&, const std::vector<uint64_t>&),
              (override));
  MOCK_METHOD(std::vector<Result<bool>>, BatchExistKey, (const CallContext&, const Keys&), (override));
  MOCK_METHOD(std::vector<Result<MissInfo>>, BatchWhyMissing, (const CallContext&, const Keys&), (override));
  MOCK_METHOD(std::vector<Status>, BatchRemove, (const CallContext&, const Keys&, bool), (override));
  MOCK_METHOD(Result<uint64_t>, RemoveWhere, (const CallContext&, const std::optional<std::string>&, bool), (override));
  MOCK_METHOD(Result<std::vector<OffloadTask>>, OffloadFetch, (const CallContext&, uint32_t), (override));
  MOCK_METHOD(std::vector<Status>, OffloadDone, (const CallContext&, const std::vector<OffloadResult>&), (override));
  MOCK_METHOD(Result<uint64_t>, DrainSegment, (const CallContext&, SegmentId), (override));
  MOCK_METHOD(Status, UndrainSegment, (const CallContext&, SegmentId), (override));
  MOCK_METHOD(Result<std::vector<RepairTask>>, RepairFetch, (const CallContext&, uint32_t), (override));
  MOCK_METHOD(std::vector<Status>, RepairDone, (const CallContext&, const std::vector<RepairResult>&), (override));
  MOCK_METHOD(Result<Keys>, BatchReplicaClear, (const CallContext&, const Keys&, const std::string&), (override));
  MOCK_METHOD(Result<TaskId>, CreateTask, (const CallContext&, const TaskSpec&), (override));
  MOCK_METHOD(Result<TaskInfo>, QueryTask, (const CallContext&, const TaskId&), (override));
  MOCK_METHOD(std::vector<Status>, AddDiskReplicas, (const CallContext&, SegmentId, const std::vector<DiskObject>&),
              (override));
  MOCK_METHOD(std::vector<Status>, DropDiskReplicas, (const CallContext&, const Keys&), (override));
};

}  // namespace yb::testing
