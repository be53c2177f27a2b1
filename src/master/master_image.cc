#include "master/master_image.h"

#include <algorithm>

#include "common/grant.h"
#include "common/hash.h"

namespace yb {

void MasterImage::NoteGone(const std::string& table_key, const pb::LogRecord& r) {
  // Only a reason a miss can give (a damaged or future value is not remembered).
  const uint32_t why = r.gone_reason();
  if (why <= static_cast<uint32_t>(MissReason::kPutInProgress) || why >= kMissReasonCount) return;
  gone.Note(HashKey(table_key), static_cast<MissReason>(why), r.gone_wall_ms());
}

void MasterImage::TakeSnapshotState(MasterImage&& loaded) {
  GoneKeys keep = std::move(gone);
  *this = std::move(loaded);
  gone = std::move(keep);
}

namespace {

// The map's entry is found or made (its key copied) before the record's message, which holds the
// key, is moved into it.
template <typename V>
void Keep(InlineKeyMap<V>& map, const std::string& key, V* message) {
  map.emplace(HashedKey(key), V()).first->second = std::move(*message);
}
template <typename Map, typename Key, typename V>
void Keep(Map& map, const Key& key, V* message) {
  map[key] = std::move(*message);
}

}  // namespace

void MasterImage::Apply(pb::LogRecord&& r) {
  switch (r.change_case()) {
    case pb::LogRecord::kObject:
      next_object_id = std::max(next_object_id, r.object().object_id() + 1);
      Keep(objects, r.object().key(), r.mutable_object());
      break;
    case pb::LogRecord::kObjectGone:
      objects.erase(HashedKey(r.object_gone()));
      NoteGone(r.object_gone(), r);
      break;
    case pb::LogRecord::kPublished:
      next_object_id = std::max(next_object_id, r.published().object_id() + 1);
      pending.erase(HashedKey(r.published().key()));
      Keep(objects, r.published().key(), r.mutable_published());
      break;
    case pb::LogRecord::kPending:
      Keep(pending, r.pending().key(), r.mutable_pending());
      break;
    case pb::LogRecord::kPendingGone:
      pending.erase(HashedKey(r.pending_gone()));
      NoteGone(r.pending_gone(), r);
      break;
    case pb::LogRecord::kAway:
      if (r.away().copies().empty()) {
        away.erase(HashedKey(r.away().key()));
      } else {
        Keep(away, r.away().key(), r.mutable_away());
      }
      break;
    case pb::LogRecord::kSegment:
      Keep(segments, r.segment().id(), r.mutable_segment());
      break;
    case pb::LogRecord::kSegmentGone:
      segments.erase(r.segment_gone());
      holds.erase(holds.lower_bound({r.segment_gone(), 0}), holds.lower_bound({r.segment_gone() + 1, 0}));
      break;
    case pb::LogRecord::kHold:
      Keep(holds, std::make_pair(r.hold().segment(), r.hold().offset()), r.mutable_hold());
      if (holds.size() >= holds_prune_at) {  // a standby applies holds for ever: forget the lapsed ones
        PruneHolds(WallMs());
        holds_prune_at = std::max<size_t>(1024, 2 * holds.size());
      }
      break;
    case pb::LogRecord::kTenant:
      Keep(tenants, r.tenant().index(), r.mutable_tenant());
      break;
    case pb::LogRecord::kTask:
      Keep(tasks, std::make_pair(r.task().id().hi(), r.task().id().lo()), r.mutable_task());
      break;
    case pb::LogRecord::kTaskGone:
      tasks.erase({r.task_gone().hi(), r.task_gone().lo()});
      break;
    case pb::LogRecord::kIdentityKey:
      identity_key = r.identity_key();
      break;
    case pb::LogRecord::CHANGE_NOT_SET:
      break;
  }
}

void MasterImage::Emit(const std::function<void(const pb::LogRecord&)>& emit) const {
  pb::LogRecord rec;
  if (!identity_key.empty()) {
    rec.set_identity_key(identity_key);
    emit(rec);
  }
  for (const auto& [index, t] : tenants) {
    *rec.mutable_tenant() = t;
    emit(rec);
  }
  for (const auto& [id, s] : segments) {
    *rec.mutable_segment() = s;
    emit(rec);
  }
  const int64_t wall = WallMs();
  for (const auto& [at, h] : holds) {
    if (h.until_wall_ms() <= wall) continue;
    *rec.mutable_hold() = h;
    emit(rec);
  }
  for (const auto& [key, o] : objects) {
    *rec.mutable_object() = o;
    emit(rec);
  }
  for (const auto& [key, p] : pending) {
    *rec.mutable_pending() = p;
    emit(rec);
  }
  for (const auto& [key, a] : away) {
    *rec.mutable_away() = a;
    emit(rec);
  }
  for (const auto& [id, t] : tasks) {
    *rec.mutable_task() = t;
    emit(rec);
  }
}

void MasterImage::PruneHolds(int64_t wall_ms) {
  std::erase_if(holds, [&](const auto& e) { return e.second.until_wall_ms() <= wall_ms; });
}

std::string MasterImage::Summary() const {
  return std::to_string(objects.size()) + " objects, " + std::to_string(pending.size()) + " unfinished Puts, " +
         std::to_string(segments.size()) + " segments, " + std::to_string(tenants.size()) + " tenants, " +
         std::to_string(tasks.size()) + " copy and move tasks, " + std::to_string(gone.size()) +
         " reasons for gone keys";
}

}  // namespace yb
