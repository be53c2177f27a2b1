#include "rpc/master_convert.h"

#include <cstring>

#include "common/grant.h"
#include "common/status_wire.h"

namespace yb::rpc {

CallContext FromPb(const pb::Context& c) {
  CallContext out{ClientId{c.client_hi(), c.client_lo()}, static_cast<TenantIndex>(c.tenant())};
  if (c.token().size() == out.token.size()) std::memcpy(out.token.data(), c.token().data(), out.token.size());
  return out;
}

void ToPb(const CallContext& c, pb::Context* out) {
  out->set_client_hi(c.client.hi);
  out->set_client_lo(c.client.lo);
  out->set_tenant(c.tenant);
  if (c.has_token()) {
    out->set_token(reinterpret_cast<const char*>(c.token.data()), c.token.size());
  } else {
    out->clear_token();
  }
}

PlacementConfig FromPb(const pb::ReplicateConfig& c) {
  PlacementConfig r;
  r.replica_num = c.replica_num();
  r.with_soft_pin = c.with_soft_pin();
  r.with_hard_pin = c.with_hard_pin();
  r.preferred_segments.assign(c.preferred_segments().begin(), c.preferred_segments().end());
  r.group_ids.assign(c.group_ids().begin(), c.group_ids().end());
  r.avoid_segments.assign(c.avoid_segments().begin(), c.avoid_segments().end());
  r.prefer_local = c.prefer_local();
  return r;
}

void ToPb(const PlacementConfig& c, pb::ReplicateConfig* out) {
  out->set_replica_num(static_cast<uint32_t>(c.replica_num));
  out->set_with_soft_pin(c.with_soft_pin);
  out->set_with_hard_pin(c.with_hard_pin);
  out->set_prefer_local(c.prefer_local);
  for (const auto& s : c.preferred_segments) out->add_preferred_segments(s);
  for (const auto& g : c.group_ids) out->add_group_ids(g);
  for (SegmentId s : c.avoid_segments) out->add_avoid_segments(s);
}

SegmentMount FromPb(const pb::Segment& s) {
  return SegmentMount{
      {s.id(), s.name(), s.base(), s.size(), s.endpoint(), s.zone(), s.host_id()}, s.incarnation(), s.grant_key()};
}

void ToPb(const SegmentDesc& s, pb::Segment* out) {
  out->set_id(s.id);
  out->set_name(s.name);
  out->set_base(s.base);
  out->set_size(s.size);
  out->set_endpoint(s.endpoint);
  out->set_zone(s.zone);
  out->set_host_id(s.host_id);
}

void ToPb(const SegmentMount& s, pb::Segment* out) {
  ToPb(static_cast<const SegmentDesc&>(s), out);
  out->set_incarnation(s.incarnation);
  if (!s.grant_key.empty()) out->set_grant_key(s.grant_key);
}

SegmentUsage FromPb(const pb::SegmentUsage& p) {
  SegmentUsage u;
  u.desc = FromPb(p.desc());
  u.owner = ClientId{p.owner_hi(), p.owner_lo()};
  u.capacity = p.capacity();
  u.allocated = p.allocated();
  u.allocations = p.allocations();
  u.free_regions = p.free_regions();
  u.largest_free_region = p.largest_free_region();
  u.fragmentation = p.fragmentation();
  u.draining = p.draining();
  return u;
}

void ToPb(const SegmentUsage& u, pb::SegmentUsage* p) {
  ToPb(u.desc, p->mutable_desc());
  p->set_owner_hi(u.owner.hi);
  p->set_owner_lo(u.owner.lo);
  p->set_capacity(u.capacity);
  p->set_allocated(u.allocated);
  p->set_allocations(u.allocations);
  p->set_free_regions(u.free_regions);
  p->set_largest_free_region(u.largest_free_region);
  p->set_fragmentation(u.fragmentation);
  p->set_draining(u.draining);
}

Grant GrantFromPb(const std::string& bytes) {
  Grant g;
  if (!bytes.empty()) (void)DecodeGrant(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), &g);
  return g;
}
void GrantToPb(const Grant& g, std::string* out) {
  if (g.access != GrantAccess::kNone) *out = EncodeGrant(g);
}

GrantedReplica FromPb(const pb::Replica& r) {
  return GrantedReplica{
      {static_cast<ReplicaKind>(r.kind()), static_cast<ReplicaStatus>(r.status()), r.segment(), r.offset(), r.size()},
      GrantFromPb(r.grant())};
}

void ToPb(const GrantedReplica& r, pb::Replica* p) {
  p->set_kind(static_cast<uint32_t>(r.kind));
  p->set_status(static_cast<uint32_t>(r.status));
  p->set_segment(r.segment);
  p->set_offset(r.offset);
  p->set_size(r.size);
  GrantToPb(r.grant, p->mutable_grant());
}

Status FromPb(const pb::Status& s) { return DecodeStatus(s.code(), s.message()); }

void ToPb(const Status& s, pb::Status* out) {
  out->set_code(EncodeCode(s.code()));
  if (!s.ok()) out->set_message(s.message());
}

ObjectInfo FromPb(const pb::ObjectInfo& o) {
  ObjectInfo info;
  info.size = o.size();
  if (o.has_checksum()) info.checksum = o.checksum();
  info.replicas = FromPbList(o.replicas());
  info.read_pin = o.read_pin();
  return info;
}

void ToPb(const Result<ObjectInfo>& o, pb::ObjectInfo* out) {
  ToPb(o.status(), out->mutable_status());
  if (!o.ok()) return;
  for (const auto& r : o->replicas) ToPb(r, out->add_replicas());
  out->set_size(o->size);
  out->set_has_checksum(o->checksum.has_value());
  out->set_checksum(o->checksum.value_or(0));
  out->set_read_pin(o->read_pin);
}

OffloadTask FromPb(const pb::OffloadTask& p) {
  OffloadTask t;
  t.disk_key = p.disk_key();
  t.object_id = p.object_id();
  t.drop = p.drop();
  if (t.drop) return t;
  t.segment = p.segment();
  t.offset = p.offset();
  t.size = p.size();
  if (p.has_checksum()) t.checksum = p.checksum();
  return t;
}

void ToPb(const OffloadTask& t, pb::OffloadTask* p) {
  p->set_disk_key(t.disk_key);
  p->set_object_id(t.object_id);
  if (t.drop) {
    p->set_drop(true);
    return;
  }
  p->set_segment(t.segment);
  p->set_offset(t.offset);
  p->set_size(t.size);
  p->set_has_checksum(t.checksum.has_value());
  p->set_checksum(t.checksum.value_or(0));
}

OffloadResult FromPb(const pb::OffloadResult& p) {
  OffloadResult r{p.disk_key(), p.object_id(), FromPb(p.status()), std::nullopt};
  if (r.status.ok() && p.has_checksum()) r.checksum = p.checksum();
  return r;
}

void ToPb(const OffloadResult& r, pb::OffloadResult* p) {
  p->set_disk_key(r.disk_key);
  p->set_object_id(r.object_id);
  ToPb(r.status, p->mutable_status());
  p->set_has_checksum(r.checksum.has_value());
  p->set_checksum(r.checksum.value_or(0));
}

RepairTask FromPb(const pb::RepairTask& p) {
  RepairTask t{p.task_id(), p.size(), p.source(), p.source_offset(), p.target(), p.target_offset(), std::nullopt};
  if (p.has_checksum()) t.checksum = p.checksum();
  t.source_grant = GrantFromPb(p.source_grant());
  return t;
}

void ToPb(const RepairTask& t, pb::RepairTask* p) {
  p->set_task_id(t.task_id);
  p->set_size(t.size);
  p->set_source(t.source);
  p->set_source_offset(t.source_offset);
  p->set_target(t.target);
  p->set_target_offset(t.target_offset);
  p->set_has_checksum(t.checksum.has_value());
  p->set_checksum(t.checksum.value_or(0));
  GrantToPb(t.source_grant, p->mutable_source_grant());
}

RepairResult FromPb(const pb::RepairResult& p) { return RepairResult{p.task_id(), FromPb(p.status())}; }

void ToPb(const RepairResult& r, pb::RepairResult* p) {
  p->set_task_id(r.task_id);
  ToPb(r.status, p->mutable_status());
}

TaskId FromPb(const pb::TaskId& p) { return TaskId{p.hi(), p.lo()}; }

void ToPb(const TaskId& id, pb::TaskId* out) {
  out->set_hi(id.hi);
  out->set_lo(id.lo);
}

}  // namespace yb::rpc
