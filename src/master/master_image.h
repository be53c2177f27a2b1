// MasterImage: the master's durable state as plain records, keyed as the log keys them: the
// tenants, the mounted segments, and per table key its object, its unfinished Put and its away
// disk copies. Applying a log record (proto/metalog.proto) replaces the state of what it names, so
// an image built from a snapshot and the log after it, or kept by a standby that applies the
// leader's records as they arrive, equals the master's state at the last record. A MasterService
// is built from one at start (MasterService::Load) and writes one out for a snapshot.
// Not thread-safe: one owner at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "master/gone_keys.h"
#include "master/inline_key_map.h"
#include "metalog.pb.h"
#include "yuebing/types.h"

namespace yb {

struct MasterImage {
  std::map<uint32_t, pb::LogTenant> tenants;  // by index
  std::map<SegmentId, pb::LogSegment> segments;
  // By table key. The maps the master's own table uses (inline_key_map.h): a standby applying
  // batches of Puts spent a third of its time in std::unordered_map's lookups and rehashes.
  InlineKeyMap<pb::LogObject> objects;
  InlineKeyMap<pb::LogPending> pending;
  InlineKeyMap<pb::LogAway> away;
  std::map<std::pair<uint64_t, uint64_t>, pb::LogTask> tasks;  // copy and move tasks, by id
  uint64_t next_object_id = 1;  // above every object id seen
  std::string identity_key;     // what callers' tokens are signed with ("" before the first)
  // Freed ranges held until their grants lapse (LogHold), by (segment, offset); lapsed ones are
  // dropped now and then, and by Load.
  std::map<std::pair<SegmentId, uint64_t>, pb::LogHold> holds;
  size_t holds_prune_at = 1024;
  void PruneHolds(int64_t wall_ms);
  // Why keys went, as the records that removed them say (timed in Unix milliseconds), for the miss
  // reasons of a master built from this image (MasterService::Load). Not in snapshots: what it
  // holds is kept when a snapshot replaces the rest (TakeSnapshotState). Its capacity is set by
  // the image's owner (yb-master's --miss_reason_keys; 0, the default: none).
  GoneKeys gone{0};

  // Replaces this image with `loaded` (a snapshot's), keeping what `gone` remembers.
  void TakeSnapshotState(MasterImage&& loaded);

  // Applies one record, taking what it keeps out of `r` (parse the next one into it).
  void Apply(pb::LogRecord&& r);
  // The same for a record the caller keeps (copied).
  void Apply(const pb::LogRecord& r) { Apply(pb::LogRecord(r)); }
  // Calls `emit` with records that rebuild this image when applied to an empty one (a snapshot's
  // contents, as MasterService::WriteImage writes them).
  void Emit(const std::function<void(const pb::LogRecord&)>& emit) const;
  // Human-readable counts, for logs.
  std::string Summary() const;

 private:
  void NoteGone(const std::string& table_key, const pb::LogRecord& r);
};

}  // namespace yb
