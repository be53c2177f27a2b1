// MetaSink: where the master's changes go to be made durable (the metadata log, src/ha/meta_log.h).
//
// The master appends one record (proto/metalog.proto) for every change to what readers can see or
// to where bytes live, from the one place each kind of change is made: the object table's
// accessor (objects, unfinished Puts, away copies), the SegmentManager (mounts) and the
// TenantRegistry. A record is appended while the lock that orders its change is held, so records
// of one key, one segment or one tenant reach the log in the order their changes were made. An
// implementation must therefore be quick and call nothing back.
#pragma once

#include <cstdint>

#include "metalog.pb.h"
#include "yuebing/status.h"

namespace yb {

class MetaSink {
 public:
  // What must see records in the order of their positions (the KV events, master/kv_events.h).
  class Appended {
   public:
    virtual ~Appended() = default;
    virtual void At(uint64_t position) = 0;
  };

  virtual ~MetaSink() = default;
  // The record's position in the log (1, 2, ...; 0: this sink keeps none).
  virtual uint64_t Append(const pb::LogRecord& record) = 0;
  // Appends and calls `then` with the position before any later record is appended, so that calls
  // made this way are in position order. Here: a sink without positions calls it after.
  virtual uint64_t AppendThen(const pb::LogRecord& record, Appended& then) {
    const uint64_t at = Append(record);
    then.At(at);
    return at;
  }
  // Whether changes are taken now: an error (saying why) while the sink cannot make them durable;
  // the master then refuses every change and goes on serving reads.
  virtual Status Writable() const { return Status::OK(); }
};

}  // namespace yb
