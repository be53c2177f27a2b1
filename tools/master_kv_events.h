// yb-master's KV event flags (Mooncake's names) and the publisher they start (master/kv_events.h).
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <memory>
#include <string>

#include "master/kv_events.h"
#include "master/master_image.h"
#include "net/security.h"

namespace yb::tools {

struct KvEventsFlags {
  bool enable = false;
  KvEventsConfig config;
  std::string replay_endpoint;  // --kv_events_replay_endpoint ("": none)
  // Mooncake's deprecated block envelope (it stamps none of them on events either): accepted so
  // its command lines start us, and ignored.
  std::string model_name, tenant_id = "default", additional_salt, lora_name;
  uint32_t block_size = 0, dp_rank = 0;
};

void AddKvEventsFlags(CLI::App& app, KvEventsFlags& f);

// The publisher the flags ask for, its socket bound: null when KV events are off. INVALID_PARAMS
// saying why when they are asked for and cannot be served (the endpoint does not bind, or it would
// publish every key to other hosts from a master in protected mode without a secret).
// `default_backend_id` names the stream when --kv_events_backend_id is not given.
Result<std::unique_ptr<KvEvents>> StartKvEvents(const KvEventsFlags& f, const std::string& default_backend_id,
                                                const net::Security& security);

// The replay endpoint (KvReplaySocket), served from the metadata log in `log_dir`: a request for
// everything after position P is answered with the events of the records after it up to the
// log's released position (the media each record changed, as the live events give them); one for
// a snapshot, or after what the log still holds (a snapshot replaced it), with vLLM's
// AllBlocksCleared and a stored event for every object's every medium, as of that position.
class KvEventReplay {
 public:
  // Null when no replay endpoint is asked for; INVALID_PARAMS saying why when it cannot be served.
  static Result<std::unique_ptr<KvEventReplay>> Start(const KvEventsFlags& f, const KvEvents* events,
                                                      std::string log_dir, std::function<uint64_t()> released,
                                                      const net::Security& security);
  // Answers one request, if one comes within `timeout_ms`. False: nothing more to do at once.
  bool ServeOnce(int timeout_ms);
  uint64_t answered() const { return answered_; }

 private:
  KvEventReplay() = default;
  void Answer(const KvReplaySocket::Request& r);
  bool Send(const KvReplaySocket::Request& r, std::vector<KvEvent>& batch);

  KvEventsConfig config_;
  std::string log_dir_;
  std::function<uint64_t()> released_;
  std::unique_ptr<KvReplaySocket> socket_;
  uint64_t answered_ = 0;
  uint64_t next_event_id_ = 0;
};

}  // namespace yb::tools
