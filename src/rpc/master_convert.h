// Conversions between the master's value types (api/master_api.h) and their messages
// (proto/master.proto), shared by the server and client halves of the master's RPC.
#pragma once

#include <vector>

#include "api/master_api.h"
#include "master.pb.h"

namespace yb::rpc {

CallContext FromPb(const pb::Context& c);
void ToPb(const CallContext& c, pb::Context* out);
PlacementConfig FromPb(const pb::ReplicateConfig& c);
void ToPb(const PlacementConfig& c, pb::ReplicateConfig* out);
SegmentMount FromPb(const pb::Segment& s);
void ToPb(const SegmentMount& s, pb::Segment* out);
void ToPb(const SegmentDesc& s, pb::Segment* out);  // a listing's: without incarnation and grant key
SegmentUsage FromPb(const pb::SegmentUsage& u);
void ToPb(const SegmentUsage& u, pb::SegmentUsage* out);
GrantedReplica FromPb(const pb::Replica& r);
void ToPb(const GrantedReplica& r, pb::Replica* out);
// The one decoder of a wire status: a code this build does not know is INTERNAL_ERROR, message kept.
Status FromPb(const pb::Status& s);
void ToPb(const Status& s, pb::Status* out);
// A grant's wire bytes: an empty field is no grant, as is one that does not decode (owners refuse it).
Grant GrantFromPb(const std::string& bytes);
void GrantToPb(const Grant& g, std::string* out);
ObjectInfo FromPb(const pb::ObjectInfo& o);
void ToPb(const Result<ObjectInfo>& o, pb::ObjectInfo* out);
OffloadTask FromPb(const pb::OffloadTask& t);
void ToPb(const OffloadTask& t, pb::OffloadTask* out);
OffloadResult FromPb(const pb::OffloadResult& r);
void ToPb(const OffloadResult& r, pb::OffloadResult* out);
RepairTask FromPb(const pb::RepairTask& t);
void ToPb(const RepairTask& t, pb::RepairTask* out);
RepairResult FromPb(const pb::RepairResult& r);
void ToPb(const RepairResult& r, pb::RepairResult* out);
TaskId FromPb(const pb::TaskId& p);
void ToPb(const TaskId& id, pb::TaskId* out);

template <typename Field, typename T = decltype(FromPb(std::declval<const typename Field::value_type&>()))>
std::vector<T> FromPbList(const Field& field) {
  std::vector<T> out;
  out.reserve(field.size());
  for (const auto& m : field) out.push_back(FromPb(m));
  return out;
}

}  // namespace yb::rpc
