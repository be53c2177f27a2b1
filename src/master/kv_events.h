// KV events, as Mooncake's master publishes them: what the pool holds and drops, per key and medium,
// on a ZeroMQ PUB socket, for cache-aware routers (vLLM's, SGLang's, Dynamo's KV indexers).
//
// Each change of the media an object can be read from (object_table.h's MediaObserver: a Put
// published, a value removed or replaced, a replica lost with its node, evicted, offloaded to disk,
// repaired back into memory) becomes one event per medium gained ("stored") or lost ("removed"),
// queued under the key's shard lock and so in the order of that key's changes. A publishing step
// (run by the Scheduler) sends them in batches of up to 64, each batch one message of three frames:
// an empty topic, an 8-byte big-endian sequence number, and a msgpack array
// [timestamp_ms, [event, ...], dp_rank 0]; each event a map with Mooncake's field names (RFC #1527's
// and, by default, vLLM's legacy `type`/`block_hashes`/`parent_block_hash`). The queue holds at most
// `queue_capacity` events: past it the oldest is dropped, counted, and its batch's sequence number
// skipped, so a subscriber sees the gap.
//
// A key that is a decimal or 0x-hex 64-bit number (a block hash) is also given as `seq_hashes` and
// `block_hashes`; any other key only as `object_key` (with emit_object_key; without it, such an
// event is not published), counted as skipped_unparsed_keys, as Mooncake counts it.
#pragma once

#include <cstdint>
#include <deque>
#include <nlohmann/json.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/thread_annotations.h"
#include "master/object_table.h"
#include "yuebing/status.h"

// msgpack-c's decoded value (msgpack.h), for KvEventView.
struct msgpack_object;

namespace yb {

struct KvEventsConfig {
  std::string bind_endpoint = "tcp://127.0.0.1:5557";  // --kv_events_bind_endpoint
  std::string backend_id;                              // --kv_events_backend_id: names this pool's stream
  size_t queue_capacity = 65536;                       // --kv_events_queue_capacity (0: unbounded)
  bool emit_legacy_compat_fields = true;               // --kv_events_emit_legacy_compat
  bool emit_object_key = true;                         // --kv_events_emit_object_key
};

struct KvEvent {
  bool stored = true;  // else removed
  bool disk = false;   // medium "disk", else "cpu"
  std::string key;     // the caller's key
  std::string tenant;
  uint64_t position = 0;  // of the change's record in the metadata log (0: no log)
  bool cleared = false;   // vLLM's AllBlocksCleared (a snapshot's first event): the fields above unused
};

struct KvEventStats {
  uint64_t published_batches = 0;
  uint64_t published_events = 0;
  uint64_t dropped_events = 0;
  uint64_t skipped_unparsed_keys = 0;
  uint64_t queued = 0;         // waiting to be sent now
  uint64_t last_position = 0;  // of the last event sent
};

// Appends the events of a change of `key`'s media from `before` to `after` (ObjectMedia bits): a
// removed event for each medium lost, then a stored one for each gained (a value replaced on
// another medium is never shown on none). The live stream and the replay both make them here.
void AppendMediaEvents(std::string_view key, std::string_view tenant, uint8_t before, uint8_t after, uint64_t position,
                       std::vector<KvEvent>& out);

// The key as a block hash: a decimal or 0x-prefixed hex number that fits 64 bits, else nothing.
std::optional<uint64_t> BlockHashOfKey(std::string_view key);

// One batch as Mooncake encodes it: msgpack [timestamp_ms, [event map, ...], 0]. Event ids run from
// `first_event_id`; an event whose key is not a block hash is left out when the config does not emit
// object keys. `*skipped` counts the events whose key is not a block hash.
std::string EncodeKvEventBatch(const std::vector<KvEvent>& batch, uint64_t first_event_id, int64_t timestamp_ms,
                               const KvEventsConfig& config, uint64_t* events_encoded, uint64_t* skipped);

// A message's payload decoded (what a subscriber does): [timestamp_ms, [event map, ...], dp_rank]
// as JSON. INVALID_PARAMS when it is not msgpack of that shape, or a map repeats a field.
Result<nlohmann::json> DecodeKvEventBatch(std::string_view payload);

// One event of a payload read in place, with no JSON built (`yb events` prints a few fields of
// each: building every map was most of its CPU). Valid during ForEachKvEvent's call of `fn`.
class KvEventView {
 public:
  explicit KvEventView(const msgpack_object& map) : map_(map) {}
  // The field `name` if it is a string, else nothing.
  std::optional<std::string_view> Str(std::string_view name) const;

 private:
  const msgpack_object& map_;
};
// Calls `fn` with each event of a payload, in order, until it returns false. INVALID_PARAMS as
// DecodeKvEventBatch (a field given twice is not looked for: the first is read).
Status ForEachKvEvent(std::string_view payload, const std::function<bool(const KvEventView&)>& fn);

// Where batches go: a ZeroMQ PUB socket (BindKvEventSocket), or a test's recorder.
class KvEventSender {
 public:
  virtual ~KvEventSender() = default;
  // Sends one message: empty topic, `seq` (big-endian), `payload`. False if it was not sent.
  virtual bool Send(uint64_t seq, std::string_view payload) = 0;
};

// A PUB socket bound to `endpoint` (ZeroMQ's syntax, e.g. tcp://127.0.0.1:5557), send high-water
// mark 10,000 messages, no linger. INVALID_PARAMS naming the endpoint when it cannot be bound.
Result<std::unique_ptr<KvEventSender>> BindKvEventSocket(const std::string& endpoint);

// A SUB socket on a KV event endpoint (what `yb events` tails).
class KvEventSubscriber {
 public:
  struct Message {
    uint64_t seq = 0;
    std::string payload;  // [timestamp_ms, [event map, ...], dp_rank] in msgpack: DecodeKvEventBatch, ForEachKvEvent
  };
  // INVALID_PARAMS naming the endpoint when ZeroMQ refuses it (it connects in the background).
  static Result<std::unique_ptr<KvEventSubscriber>> Connect(const std::string& endpoint);
  virtual ~KvEventSubscriber() = default;
  // The next message, or nothing after `timeout_ms`; INVALID_PARAMS for a message that is not one
  // of three frames (its payload is decoded by the caller).
  virtual Result<std::optional<Message>> Receive(int timeout_ms) = 0;
};

// The replay endpoint's socket (ZeroMQ ROUTER): a subscriber (REQ or DEALER) sends one frame, the
// 8-byte big-endian log position it has applied everything up to (kReplaySnapshot: it asks for a
// snapshot); the answer is messages of two frames, an 8-byte big-endian position and a batch as
// the PUB socket sends it, then an end of two frames: the position the answer brings it up to, and
// an empty payload (vLLM's replay end marker).
class KvReplaySocket {
 public:
  static constexpr uint64_t kReplaySnapshot = UINT64_MAX;
  struct Request {
    std::vector<std::string> envelope;  // the peer's routing frames, and REQ's empty delimiter
    std::optional<uint64_t> position;   // none: the request was not 8 bytes
  };
  // INVALID_PARAMS naming the endpoint when it cannot be bound.
  static Result<std::unique_ptr<KvReplaySocket>> Bind(const std::string& endpoint);
  virtual ~KvReplaySocket() = default;
  // The next request, or nothing after `timeout_ms`.
  virtual std::optional<Request> Receive(int timeout_ms) = 0;
  // One message of the answer to `to`. False when the peer is gone.
  virtual bool Reply(const Request& to, uint64_t position, std::string_view payload) = 0;
};

class KvEvents final : public MediaObserver {
 public:
  // `unix_ms`: the wall clock the events are stamped with (milliseconds since 1970).
  KvEvents(KvEventsConfig config, std::unique_ptr<KvEventSender> sender, std::function<int64_t()> unix_ms);

  // MediaObserver: queues a stored event for each medium gained and a removed one for each lost.
  // `table_key` is the tenant's two bytes then the caller's key (InternalKey, master_service.h).
  // The events are made (MediaChanging, on this thread) and queued with their position (MediaChanged).
  void MediaChanging(std::string_view table_key, std::string_view tenant, uint8_t before, uint8_t after) override;
  void MediaChanged(uint64_t position) override;
  // Both steps at once (tests).
  void Changed(std::string_view table_key, std::string_view tenant, uint8_t before, uint8_t after, uint64_t position) {
    MediaChanging(table_key, tenant, before, after);
    MediaChanged(position);
  }

  // Events are sent only once the log has released their records (MetaLog::released_seq): a
  // leader that dies has published nothing its successor does not have. Unset: at once.
  void SetReleased(std::function<uint64_t()> released);

  // Sends one batch of what is queued and released (up to 64 events). True if more is ready: the
  // Scheduler's step runs it again at once.
  bool PublishOnce();

  KvEventStats stats() const;
  const KvEventsConfig& config() const { return config_; }

  static constexpr size_t kMaxBatch = 64;

 private:
  const KvEventsConfig config_;
  const std::unique_ptr<KvEventSender> sender_;
  const std::function<int64_t()> unix_ms_;
  std::function<uint64_t()> released_ GUARDED_BY(send_mu_);
  uint64_t last_position_ GUARDED_BY(send_mu_) = 0;
  // Lock order: send_mu_ (one batch at a time, sent in sequence order), then mu_ (a leaf, also
  // taken under a shard lock; nothing is called while it is held).
  mutable Mutex send_mu_;
  mutable Mutex mu_;
  std::deque<KvEvent> queue_ GUARDED_BY(mu_);
  uint64_t next_seq_ GUARDED_BY(mu_) = 0;  // the next batch's sequence number
  uint64_t dropped_ GUARDED_BY(mu_) = 0;
  uint64_t next_event_id_ GUARDED_BY(send_mu_) = 0;
  uint64_t batches_ GUARDED_BY(send_mu_) = 0;
  uint64_t events_ GUARDED_BY(send_mu_) = 0;
  uint64_t skipped_ GUARDED_BY(send_mu_) = 0;
  uint64_t send_failed_ GUARDED_BY(send_mu_) = 0;
};

}  // namespace yb
