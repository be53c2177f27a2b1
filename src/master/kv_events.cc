#include "master/kv_events.h"

#include <endian.h>
#include <msgpack.h>

#include <charconv>
#include <chrono>
#include <cstring>
#include <iterator>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "common/log.h"

namespace yb {
namespace {

// The msgpack C packer over an sbuffer it owns.
class Packer {
 public:
  Packer() {
    msgpack_sbuffer_init(&buf_);
    msgpack_packer_init(&pk_, &buf_, msgpack_sbuffer_write);
  }
  ~Packer() { msgpack_sbuffer_destroy(&buf_); }
  Packer(const Packer&) = delete;
  Packer& operator=(const Packer&) = delete;

  void Str(std::string_view s) {
    msgpack_pack_str(&pk_, s.size());
    msgpack_pack_str_body(&pk_, s.data(), s.size());
  }
  void Nil() { msgpack_pack_nil(&pk_); }
  void U64(uint64_t v) { msgpack_pack_uint64(&pk_, v); }
  void I64(int64_t v) { msgpack_pack_int64(&pk_, v); }
  void Array(size_t n) { msgpack_pack_array(&pk_, n); }
  void Map(size_t n) { msgpack_pack_map(&pk_, n); }
  // A key, then its value.
  void Field(std::string_view k, std::string_view v) {
    Str(k);
    Str(v);
  }
  void NilField(std::string_view k) {
    Str(k);
    Nil();
  }
  std::string Take() const { return std::string(buf_.data, buf_.size); }

 private:
  msgpack_sbuffer buf_;
  msgpack_packer pk_;
};

class ZmqSender final : public KvEventSender {
 public:
  ZmqSender() : socket_(context_, zmq::socket_type::pub) {}
  Status Bind(const std::string& endpoint) {
    try {
      socket_.set(zmq::sockopt::sndhwm, 10000);
      socket_.set(zmq::sockopt::linger, 0);
      socket_.bind(endpoint);
    } catch (const zmq::error_t& e) {
      return Status(Code::kInvalidParams, "cannot publish KV events on '" + endpoint + "': " + e.what());
    }
    return Status::OK();
  }
  bool Send(uint64_t seq, std::string_view payload) override {
    const uint64_t be = htobe64(seq);
    try {
      // A PUB socket never blocks: past its high-water mark a message is dropped for that subscriber.
      return socket_.send(zmq::message_t(), zmq::send_flags::sndmore | zmq::send_flags::dontwait) &&
             socket_.send(zmq::const_buffer(&be, sizeof(be)), zmq::send_flags::sndmore | zmq::send_flags::dontwait) &&
             socket_.send(zmq::const_buffer(payload.data(), payload.size()), zmq::send_flags::dontwait);
    } catch (const zmq::error_t& e) {
      YB_LOG_WARN("KV events: sending batch {}: {}", seq, e.what());
      return false;
    }
  }

 private:
  zmq::context_t context_{1};
  zmq::socket_t socket_;
};

class ZmqReplaySocket final : public KvReplaySocket {
 public:
  ZmqReplaySocket() : socket_(context_, zmq::socket_type::router) {}
  Status Bind(const std::string& endpoint) {
    try {
      socket_.set(zmq::sockopt::sndhwm, 0);            // an answer is sent whole, however long
      socket_.set(zmq::sockopt::router_mandatory, 1);  // a peer gone: the send fails, not drops
      socket_.set(zmq::sockopt::linger, 0);
      socket_.set(zmq::sockopt::sndtimeo, 5000);
      socket_.bind(endpoint);
    } catch (const zmq::error_t& e) {
      return Status(Code::kInvalidParams, "cannot serve KV event replay on '" + endpoint + "': " + e.what());
    }
    return Status::OK();
  }
  std::optional<Request> Receive(int timeout_ms) override {
    try {
      zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
      if (zmq::poll(&item, 1, std::chrono::milliseconds(timeout_ms)) == 0) return std::nullopt;
      std::vector<zmq::message_t> frames;
      if (!zmq::recv_multipart(socket_, std::back_inserter(frames), zmq::recv_flags::dontwait)) return std::nullopt;
      if (frames.size() < 2) return std::nullopt;
      Request r;
      for (size_t i = 0; i + 1 < frames.size(); ++i) r.envelope.push_back(frames[i].to_string());
      const zmq::message_t& body = frames.back();
      if (body.size() == sizeof(uint64_t)) {
        uint64_t be = 0;
        std::memcpy(&be, body.data(), sizeof(be));
        r.position = be64toh(be);
      }
      return r;
    } catch (const zmq::error_t& e) {
      YB_LOG_WARN("KV event replay: receiving: {}", e.what());
      return std::nullopt;
    }
  }
  bool Reply(const Request& to, uint64_t position, std::string_view payload) override {
    const uint64_t be = htobe64(position);
    try {
      for (const std::string& f : to.envelope) {
        if (!socket_.send(zmq::const_buffer(f.data(), f.size()), zmq::send_flags::sndmore)) return false;
      }
      return socket_.send(zmq::const_buffer(&be, sizeof(be)), zmq::send_flags::sndmore) &&
             socket_.send(zmq::const_buffer(payload.data(), payload.size()), zmq::send_flags::none);
    } catch (const zmq::error_t& e) {
      YB_LOG_WARN("KV event replay: answering: {}", e.what());
      return false;
    }
  }

 private:
  zmq::context_t context_{1};
  zmq::socket_t socket_;
};

class ZmqSubscriber final : public KvEventSubscriber {
 public:
  ZmqSubscriber() : socket_(context_, zmq::socket_type::sub) {}
  Status Connect(const std::string& endpoint) {
    try {
      socket_.set(zmq::sockopt::subscribe, "");
      socket_.set(zmq::sockopt::linger, 0);
      socket_.connect(endpoint);
    } catch (const zmq::error_t& e) {
      return Status(Code::kInvalidParams, "cannot subscribe to KV events at '" + endpoint + "': " + e.what());
    }
    return Status::OK();
  }
  Result<std::optional<Message>> Receive(int timeout_ms) override {
    zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
    if (zmq::poll(&item, 1, std::chrono::milliseconds(timeout_ms)) == 0) return std::optional<Message>();
    std::vector<zmq::message_t> frames;
    do {
      frames.emplace_back();
      if (!socket_.recv(frames.back(), zmq::recv_flags::none)) return Status(Code::kInternal, "receive failed");
    } while (socket_.get(zmq::sockopt::rcvmore));
    if (frames.size() != 3 || frames[1].size() != 8) {
      return Status(Code::kInvalidParams, "a KV event message of " + std::to_string(frames.size()) +
                                              " frames (topic, sequence, payload expected)");
    }
    uint64_t be = 0;
    std::memcpy(&be, frames[1].data(), sizeof(be));
    return std::optional<Message>(Message{be64toh(be), frames[2].to_string()});
  }

 private:
  zmq::context_t context_{1};
  zmq::socket_t socket_;
};

}  // namespace

Result<std::unique_ptr<KvEventSubscriber>> KvEventSubscriber::Connect(const std::string& endpoint) {
  auto s = std::make_unique<ZmqSubscriber>();
  YB_RETURN_IF_ERROR(s->Connect(endpoint));
  return std::unique_ptr<KvEventSubscriber>(std::move(s));
}

std::optional<uint64_t> BlockHashOfKey(std::string_view key) {
  int base = 10;
  if (key.size() > 2 && key[0] == '0' && (key[1] == 'x' || key[1] == 'X')) {
    key.remove_prefix(2);
    base = 16;
  }
  if (key.empty()) return std::nullopt;
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), v, base);
  if (ec != std::errc() || end != key.data() + key.size()) return std::nullopt;
  return v;
}

std::string EncodeKvEventBatch(const std::vector<KvEvent>& batch, uint64_t first_event_id, int64_t timestamp_ms,
                               const KvEventsConfig& config, uint64_t* events_encoded, uint64_t* skipped) {
  struct Item {
    const KvEvent* e;
    std::optional<uint64_t> hash;
  };
  std::vector<Item> items;
  items.reserve(batch.size());
  for (const KvEvent& e : batch) {
    auto hash = e.cleared ? std::optional<uint64_t>(0) : BlockHashOfKey(e.key);
    if (!hash) {
      ++*skipped;
      if (!config.emit_object_key) continue;  // nothing would name the block
    }
    items.push_back({&e, hash});
  }
  *events_encoded = items.size();
  if (items.empty()) return {};
  const bool legacy = config.emit_legacy_compat_fields;
  Packer p;
  p.Array(3);
  p.I64(timestamp_ms);
  p.Array(items.size());
  uint64_t id = first_event_id;
  for (const Item& it : items) {
    const KvEvent& e = *it.e;
    if (e.cleared) {  // vLLM's AllBlocksCleared, with our position
      p.Map(legacy ? 6 : 5);
      p.Str("event_id");
      p.U64(id++);
      p.Str("timestamp");
      p.I64(timestamp_ms);
      p.Field("event_type", "all_cleared");
      if (legacy) p.Field("type", "AllBlocksCleared");
      p.Field("backend_id", config.backend_id);
      p.Str("log_position");
      p.U64(e.position);
      continue;
    }
    // Mooncake's envelope: 13 fields, the legacy pair, object_key, and what a stored or removed
    // event adds.
    size_t fields = 13 + (legacy ? 2 : 0) + (config.emit_object_key ? 1 : 0);
    fields += e.stored ? 3 + (legacy ? 1 : 0) : 1;
    fields += e.position != 0 ? 1 : 0;
    p.Map(fields);
    p.Str("event_id");
    p.U64(id++);
    p.Str("timestamp");
    p.I64(timestamp_ms);
    p.Field("event_type", e.stored ? "stored" : "removed");
    if (legacy) p.Field("type", e.stored ? "BlockStored" : "BlockRemoved");
    // What a storage pool cannot know of a block (the registration of an indexer supplies it).
    p.NilField("model_name");
    p.NilField("block_size");
    p.NilField("additional_salt");
    p.NilField("lora_name");
    p.Field("tenant_id", e.tenant);
    p.Field("backend_id", config.backend_id);
    p.NilField("group_id");
    p.Field("medium", e.disk ? "disk" : "cpu");
    p.NilField("dp_rank");
    if (config.emit_object_key) p.Field("object_key", e.key);
    p.Str("seq_hashes");
    p.Array(it.hash ? 1 : 0);
    if (it.hash) p.U64(*it.hash);
    if (legacy) {
      p.Str("block_hashes");
      p.Array(it.hash ? 1 : 0);
      if (it.hash) p.I64(static_cast<int64_t>(*it.hash));  // vLLM's are signed
    }
    if (e.stored) {
      p.Str("base_block_idx");  // a pool's blocks stand alone: depth 0
      p.U64(0);
      p.NilField("parent_hash");
      p.NilField("token_ids");
      if (legacy) p.NilField("parent_block_hash");
    } else {
      p.NilField("base_block_idx");
    }
    if (e.position != 0) {  // ours: where the change is in the metadata log (replay, kv_events_replay)
      p.Str("log_position");
      p.U64(e.position);
    }
  }
  p.U64(0);  // the batch's dp_rank: a pool has none
  return p.Take();
}

namespace {

Status ToJson(const msgpack_object& o, int depth, nlohmann::json* out) {
  if (depth > 8) return Status(Code::kInvalidParams, "KV event message nested too deep");
  switch (o.type) {
    case MSGPACK_OBJECT_NIL: *out = nullptr; return Status::OK();
    case MSGPACK_OBJECT_BOOLEAN: *out = o.via.boolean; return Status::OK();
    case MSGPACK_OBJECT_POSITIVE_INTEGER: *out = o.via.u64; return Status::OK();
    case MSGPACK_OBJECT_NEGATIVE_INTEGER: *out = o.via.i64; return Status::OK();
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64: *out = o.via.f64; return Status::OK();
    case MSGPACK_OBJECT_STR: *out = std::string(o.via.str.ptr, o.via.str.size); return Status::OK();
    case MSGPACK_OBJECT_ARRAY: {
      *out = nlohmann::json::array();
      auto& items = out->get_ref<nlohmann::json::array_t&>();
      items.resize(o.via.array.size);  // filled in place: no element is built twice
      for (uint32_t i = 0; i < o.via.array.size; ++i) {
        YB_RETURN_IF_ERROR(ToJson(o.via.array.ptr[i], depth + 1, &items[i]));
      }
      return Status::OK();
    }
    case MSGPACK_OBJECT_MAP: {
      *out = nlohmann::json::object();
      auto& fields = out->get_ref<nlohmann::json::object_t&>();
      for (uint32_t i = 0; i < o.via.map.size; ++i) {
        const msgpack_object_kv& kv = o.via.map.ptr[i];
        if (kv.key.type != MSGPACK_OBJECT_STR) return Status(Code::kInvalidParams, "KV event field not named");
        // One lookup per field (a subscriber decodes every event: this is most of its work).
        auto [at, fresh] = fields.try_emplace(std::string(kv.key.via.str.ptr, kv.key.via.str.size));
        if (!fresh) return Status(Code::kInvalidParams, "KV event field '" + at->first + "' given twice");
        YB_RETURN_IF_ERROR(ToJson(kv.val, depth + 1, &at->second));
      }
      return Status::OK();
    }
    default: return Status(Code::kInvalidParams, "KV event message holds an unexpected msgpack type");
  }
}

// msgpack-c's unpacked value, freed with it.
class Unpacked {
 public:
  Unpacked() { msgpack_unpacked_init(&u_); }
  ~Unpacked() { msgpack_unpacked_destroy(&u_); }
  Unpacked(const Unpacked&) = delete;
  Unpacked& operator=(const Unpacked&) = delete;
  // The payload as [timestamp_ms, [event map, ...], dp_rank]: its events' array.
  Result<const msgpack_object*> Batch(std::string_view payload) {
    size_t off = 0;
    if (msgpack_unpack_next(&u_, payload.data(), payload.size(), &off) != MSGPACK_UNPACK_SUCCESS ||
        off != payload.size()) {
      return Status(Code::kInvalidParams, "KV event message is not one msgpack value");
    }
    const msgpack_object& o = u_.data;
    auto integer = [](const msgpack_object& x) {
      return x.type == MSGPACK_OBJECT_POSITIVE_INTEGER || x.type == MSGPACK_OBJECT_NEGATIVE_INTEGER;
    };
    if (o.type != MSGPACK_OBJECT_ARRAY || o.via.array.size != 3 || !integer(o.via.array.ptr[0]) ||
        o.via.array.ptr[1].type != MSGPACK_OBJECT_ARRAY) {
      return Status(Code::kInvalidParams, "KV event message is not [timestamp, [events], dp_rank]");
    }
    const msgpack_object& events = o.via.array.ptr[1];
    for (uint32_t i = 0; i < events.via.array.size; ++i) {
      if (events.via.array.ptr[i].type != MSGPACK_OBJECT_MAP) {
        return Status(Code::kInvalidParams, "KV event is not a map");
      }
    }
    return &events;
  }
  const msgpack_object& data() const { return u_.data; }

 private:
  msgpack_unpacked u_;
};

}  // namespace

Result<nlohmann::json> DecodeKvEventBatch(std::string_view payload) {
  Unpacked u;
  YB_RETURN_IF_ERROR(u.Batch(payload).status());
  nlohmann::json out;
  YB_RETURN_IF_ERROR(ToJson(u.data(), 0, &out));
  return out;
}

std::optional<std::string_view> KvEventView::Str(std::string_view name) const {
  for (uint32_t i = 0; i < map_.via.map.size; ++i) {
    const msgpack_object_kv& kv = map_.via.map.ptr[i];
    if (kv.key.type == MSGPACK_OBJECT_STR && std::string_view(kv.key.via.str.ptr, kv.key.via.str.size) == name) {
      if (kv.val.type != MSGPACK_OBJECT_STR) return std::nullopt;
      return std::string_view(kv.val.via.str.ptr, kv.val.via.str.size);
    }
  }
  return std::nullopt;
}

Status ForEachKvEvent(std::string_view payload, const std::function<bool(const KvEventView&)>& fn) {
  Unpacked u;
  auto events = u.Batch(payload);
  if (!events.ok()) return events.status();
  for (uint32_t i = 0; i < (*events)->via.array.size; ++i) {
    if (!fn(KvEventView((*events)->via.array.ptr[i]))) break;
  }
  return Status::OK();
}

Result<std::unique_ptr<KvReplaySocket>> KvReplaySocket::Bind(const std::string& endpoint) {
  auto s = std::make_unique<ZmqReplaySocket>();
  YB_RETURN_IF_ERROR(s->Bind(endpoint));
  return std::unique_ptr<KvReplaySocket>(std::move(s));
}

Result<std::unique_ptr<KvEventSender>> BindKvEventSocket(const std::string& endpoint) {
  auto s = std::make_unique<ZmqSender>();
  YB_RETURN_IF_ERROR(s->Bind(endpoint));
  return std::unique_ptr<KvEventSender>(std::move(s));
}

KvEvents::KvEvents(KvEventsConfig config, std::unique_ptr<KvEventSender> sender, std::function<int64_t()> unix_ms)
    : config_(std::move(config)), sender_(std::move(sender)), unix_ms_(std::move(unix_ms)) {}

void KvEvents::SetReleased(std::function<uint64_t()> released) {
  MutexLock send(send_mu_);
  released_ = std::move(released);
}

namespace {
// The events of the change this thread is making, between its two steps.
thread_local std::vector<KvEvent> tls_making;
}  // namespace

void AppendMediaEvents(std::string_view key, std::string_view tenant, uint8_t before, uint8_t after, uint64_t position,
                       std::vector<KvEvent>& out) {
  for (const bool stored : {false, true}) {
    for (const uint8_t m : {kMediaMemory, kMediaDisk}) {
      const bool had = before & m, has = after & m;
      if (had != has && has == stored) {
        out.push_back(KvEvent{stored, m == kMediaDisk, std::string(key), std::string(tenant), position});
      }
    }
  }
}

void KvEvents::MediaChanging(std::string_view table_key, std::string_view tenant, uint8_t before, uint8_t after) {
  tls_making.clear();
  AppendMediaEvents(table_key.size() >= 2 ? table_key.substr(2) : table_key, tenant, before, after, 0, tls_making);
}

void KvEvents::MediaChanged(uint64_t position) {
  MutexLock lock(mu_);
  for (KvEvent& e : tls_making) {
    e.position = position;
    if (config_.queue_capacity > 0 && queue_.size() >= config_.queue_capacity) {
      queue_.pop_front();
      ++dropped_;
      ++next_seq_;  // a gap in the sequence: subscribers see that they missed something
    }
    queue_.push_back(std::move(e));
  }
  tls_making.clear();
}

bool KvEvents::PublishOnce() {
  MutexLock send(send_mu_);
  std::vector<KvEvent> batch;
  uint64_t seq = 0;
  bool more = false;
  // Queued in position order (MediaObserver): what the log has released is a prefix.
  const uint64_t released = released_ ? released_() : UINT64_MAX;
  {
    MutexLock lock(mu_);
    size_t n = 0;
    while (n < std::min(queue_.size(), kMaxBatch) && queue_[n].position <= released) ++n;
    if (n == 0) return false;
    batch.assign(std::make_move_iterator(queue_.begin()), std::make_move_iterator(queue_.begin() + n));
    queue_.erase(queue_.begin(), queue_.begin() + n);
    more = !queue_.empty() && queue_.front().position <= released;
    seq = next_seq_;
  }
  last_position_ = std::max(last_position_, batch.back().position);
  uint64_t encoded = 0;
  const std::string payload = EncodeKvEventBatch(batch, next_event_id_, unix_ms_(), config_, &encoded, &skipped_);
  if (encoded == 0) return more;  // nothing in it could be named
  next_event_id_ += encoded;
  {
    MutexLock lock(mu_);
    ++next_seq_;  // this batch's number is taken, sent or not
  }
  if (sender_->Send(seq, payload)) {
    ++batches_;
    events_ += encoded;
  } else {
    send_failed_ += encoded;
  }
  return more;
}

KvEventStats KvEvents::stats() const {
  KvEventStats s;
  MutexLock send(send_mu_);
  s.published_batches = batches_;
  s.published_events = events_;
  s.skipped_unparsed_keys = skipped_;
  s.last_position = last_position_;
  MutexLock lock(mu_);
  s.dropped_events = dropped_ + send_failed_;
  s.queued = queue_.size();
  return s;
}

}  // namespace yb
