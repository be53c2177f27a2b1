// yb-master's KV event flags (Mooncake's names) and the publisher they start (master/kv_events.h).
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "master/kv_events.h"
#include "net/security.h"

namespace yb::tools {

struct KvEventsFlags {
  bool enable = false;
  KvEventsConfig config;
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

}  // namespace yb::tools
