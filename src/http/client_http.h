// The HTTP side of a client (yb-client's --metrics_port, and the Python package's
// enable_client_http_server): /metrics in Prometheus text, /metrics/summary in a few plain lines,
// /health answering 200 while the master answers the client and serves from its memory, 503 else.
#pragma once

#include <httplib.h>

#include <functional>
#include <optional>
#include <string>

#include "yuebing/client.h"

namespace yb::http {

std::string ClientMetricsText(const ClientStats& s);
std::string ClientMetricsSummary(const ClientStats& s);

// `stats` gives the client's figures, or nothing while it is not connected yet (or closed).
void AddClientRoutes(httplib::Server& server, std::function<std::optional<ClientStats>()> stats);

}  // namespace yb::http
