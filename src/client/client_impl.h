// Client::Impl: a client's two halves, membership (registration, heartbeat, re-mount, segments)
// and data path (reads, writes, staging, SSD tier), and what they run on.
#pragma once

#include <memory>

#include "client/client_internal.h"
#include "client/data_path.h"
#include "client/membership.h"
#include "client/repairer.h"
#include "common/histogram.h"
#include "common/scheduler.h"
#include "yuebing/client.h"

namespace yb {

struct Client::Impl {
  Impl(const ClientConfig& c, ClientParts p)
      : config(c),
        parts(std::move(p)),
        own_scheduler(parts.scheduler ? nullptr : std::make_unique<ThreadScheduler>()),
        scheduler(parts.scheduler ? *parts.scheduler : *own_scheduler),
        members(config, parts.master, parts.local_segments, parts.served, parts.endpoint, parts.engine),
        data(config, members, parts.engine, scheduler.clock()),
        repairer(members, parts.engine, parts.local_segments) {}

  const ClientConfig config;
  ClientParts parts;
  std::unique_ptr<ThreadScheduler> own_scheduler;
  Scheduler& scheduler;
  Membership members;
  DataPath data;
  Repairer repairer;
  // How long this client's get and put calls took (a batch is one call): ClientStats, /metrics.
  const std::shared_ptr<LatencyHistogram> get_durations = std::make_shared<LatencyHistogram>();
  const std::shared_ptr<LatencyHistogram> put_durations = std::make_shared<LatencyHistogram>();
};

}  // namespace yb
