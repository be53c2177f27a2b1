// MockMaster: a scripted MasterApi (gmock) for client-side tests.
#pragma once

#include <gmock/gmock.h>

#include <optional>
#include <string>
#include <vector>

#include "master/master_api.h"

namespace yb::testing {

class MockMaster : public MasterApi {
 public:
  MOCK_METHOD(Result<TenantIndex>, RegisterClient, (const ClientRegistration&), (override));
  MOCK_METHOD(Result<PingResponse>, Ping, (const CallContext&), (override));
  MOCK_METHOD(Status, UnregisterClient, (const CallContext&), (override));
  MOCK_METHOD(Status, MountSegment, (const CallContext&, const SegmentDesc&), (override));
  MOCK_METHOD(Status, ReMountSegment, (const CallContext&, const std::vector<SegmentDesc>&), (override));
  MOCK_METHOD(Status, UnmountSegment, (const CallContext&, SegmentId), (override));
  MOCK_METHOD(Result<std::vector<SegmentUsage>>, ListSegments, (), (override));
  MOCK_METHOD(Result<std::vector<ReplicaDesc>>, PutStart,
              (const CallContext&, const std::string&, uint64_t, const ReplicateConfig&), (override));
  MOCK_METHOD(Result<std::vector<ReplicaDesc>>, UpsertStart,
              (const CallContext&, const std::string&, uint64_t, const ReplicateConfig&), (override));
  MOCK_METHOD(Status, PutEnd, (const CallContext&, const std::string&, std::optional<uint64_t>), (override));
  MOCK_METHOD(Status, PutRevoke, (const CallContext&, const std::string&), (override));
  MOCK_METHOD(Result<ObjectInfo>, GetReplicaList, (const CallContext&, const std::string&, bool), (override));
  MOCK_METHOD(Status, ReadEnd, (const CallContext&, const std::string&, uint64_t), (override));
  MOCK_METHOD(Result<bool>, ExistKey, (const CallContext&, const std::string&), (override));
  MOCK_METHOD(Status, Remove, (const CallContext&, const std::string&, bool), (override));
  MOCK_METHOD(Result<uint64_t>, RemoveByRegex, (const CallContext&, const std::string&, bool), (override));
  MOCK_METHOD(Result<uint64_t>, RemoveAll, (const CallContext&, bool), (override));
  MOCK_METHOD(Result<std::vector<OffloadTask>>, OffloadFetch, (const CallContext&, uint32_t), (override));
  MOCK_METHOD(std::vector<Status>, OffloadDone, (const CallContext&, const std::vector<OffloadResult>&), (override));
  MOCK_METHOD(std::vector<Status>, AddDiskReplicas, (const CallContext&, SegmentId, const std::vector<DiskObject>&),
              (override));
  MOCK_METHOD(std::vector<Status>, DropDiskReplicas, (const CallContext&, const std::vector<std::string>&), (override));
  MOCK_METHOD(std::vector<Result<std::vector<ReplicaDesc>>>, BatchPutStart,
              (const CallContext&, const std::vector<std::string>&, const std::vector<uint64_t>&,
               const ReplicateConfig&),
              (override));
  MOCK_METHOD(std::vector<Status>, BatchPutEnd,
              (const CallContext&, const std::vector<std::string>&, const std::vector<std::optional<uint64_t>>&),
              (override));
  MOCK_METHOD(std::vector<Status>, BatchPutRevoke, (const CallContext&, const std::vector<std::string>&), (override));
  MOCK_METHOD(std::vector<Result<ObjectInfo>>, BatchGetReplicaList,
              (const CallContext&, const std::vector<std::string>&, bool), (override));
  MOCK_METHOD(std::vector<Status>, BatchReadEnd,
              (const CallContext&, const std::vector<std::string>&, const std::vector<uint64_t>&), (override));
  MOCK_METHOD(std::vector<Result<bool>>, BatchExistKey, (const CallContext&, const std::vector<std::string>&),
              (override));
  MOCK_METHOD(std::vector<Status>, BatchRemove, (const CallContext&, const std::vector<std::string>&, bool),
              (override));
};

}  // namespace yb::testing
