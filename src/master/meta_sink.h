// MetaSink: where the master's changes go to be made durable (the metadata log, src/ha/meta_log.h).
//
// The master appends one record (proto/metalog.proto) for every change to what readers can see or
// to where bytes live, from the one place each kind of change is made: the object table's
// accessor (objects, unfinished Puts, away copies), the SegmentManager (mounts) and the
// TenantRegistry. A record is appended while the lock that orders its change is held, so records
// of one key, one segment or one tenant reach the log in the order their changes were made. An
// implementation must therefore be quick and call nothing back.
#pragma once

#include "metalog.pb.h"
#include "yuebing/status.h"

namespace yb {

class MetaSink {
 public:
  virtual ~MetaSink() = default;
  virtual void Append(const pb::LogRecord& record) = 0;
  // Whether changes are taken now: an error (saying why) while the sink cannot make them durable;
  // the master then refuses every change and goes on serving reads.
  virtual Status Writable() const { return Status::OK(); }
};

}  // namespace yb
