// yb: an operator's command line for a Yuebing cluster.
//   yb --master HOST:PORT put KEY (--file PATH | --value TEXT) [--replicas N]
//   yb --master HOST:PORT replicas KEY
//   yb --master HOST:PORT drain NAME [--timeout SEC]       (copies a node's objects elsewhere)
//   yb --master HOST:PORT undrain NAME                (the node takes new replicas again)
//   yb admin-token [--auth_secret_file F | --metadata_dir DIR]   (the master's HTTP admin token)
//   yb role-key --role node|admin --auth_secret_file F          (a role's key, from the cluster secret)
//   yb --master HOST:PORT get KEY [--out PATH]        (stdout by default)
//   yb --master HOST:PORT remove KEY [--force]
//   yb --master HOST:PORT exist KEY                   (prints 1 or 0)
//   yb --master HOST:PORT why KEY                     (why it holds no object: "removed 12 s ago", ...)
//   yb --master HOST:PORT segments                    (segments and their usage)
//   yb events [--endpoint tcp://HOST:PORT] [--count N] [--timeout SEC] [--json]   (tail the KV events)
//   yb [--master HOST:PORT] stats [--http HOST:PORT] [--json]   (the dashboard's numbers as text)
//   yb [--master HOST:PORT] top [--http HOST:PORT] [--interval SEC]   (the same, refreshed in place)
// Exit status: 0 on success, 1 on a store error (printed with Mooncake's code), 2 on bad usage.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>

#include "api/master_api.h"
#include "client/client_internal.h"
#include "client/leader_follower.h"
#include "client/membership.h"
#include "common/files.h"
#include "common/segment_name.h"
#include "common/units.h"
#include "flags.h"
#include "http/admin_token.h"
#include "net/security.h"
#include "rpc/master_client.h"
#include "yb_events.h"
#include "yb_stats.h"
#include "yuebing/client.h"

namespace {

int Fail(const yb::Status& st) {
  std::fprintf(stderr, "error %d %s\n", st.mooncake_code(), st.ToString().c_str());
  return 1;
}

const char* StatusName(yb::ReplicaStatus s) {
  switch (s) {
    case yb::ReplicaStatus::kProcessing:
      return "processing";
    case yb::ReplicaStatus::kComplete:
      return "complete";
    case yb::ReplicaStatus::kFailed:
      return "failed";
    case yb::ReplicaStatus::kRemoved:
      return "removed";
  }
  return "?";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"yb: put, get, remove and inspect objects of a Yuebing cluster"};
  app.fallthrough();  // the global options (--master, --auth_secret_file, ...) may follow the subcommand too
  yb::ClientConfig c;
  std::string master = yb::kDefaultMasterAddress, key, file, value, out;
  int replicas = 1;
  bool force = false;
  app.add_option("--master", master, "yb-master host:port, or etcd://host:port[;host:port] for the leader of several");
  app.add_option("--cluster_id", c.cluster_id, "with etcd://: the masters' --cluster_id")->capture_default_str();
  app.require_subcommand(1);
  auto* put = app.add_subcommand("put", "store a file or a string");
  put->add_option("key", key)->required();
  auto* src = put->add_option_group("source");
  src->add_option("--file", file, "read the value from this file");
  src->add_option("--value", value, "the value itself");
  src->require_option(1);
  put->add_option("--replicas", replicas, "copies on distinct nodes")->check(CLI::Range(1, 64));
  auto* get = app.add_subcommand("get", "fetch a value");
  get->add_option("key", key)->required();
  get->add_option("--out", out, "write to this file instead of stdout");
  auto* rm = app.add_subcommand("remove", "remove a key");
  rm->add_option("key", key)->required();
  rm->add_flag("--force", force, "even if leased");
  auto* exist = app.add_subcommand("exist", "print 1 if the key exists, else 0");
  exist->add_option("key", key)->required();
  auto* why = app.add_subcommand(
      "why", "say why a key holds no object (removed, evicted, lost with a node, Put refused...), as far as the "
             "master remembers");
  why->add_option("key", key)->required();
  auto* segs = app.add_subcommand("segments", "list segments and usage");
  auto* reps = app.add_subcommand("replicas", "list a key's replicas: where each is, and its state");
  auto* token = app.add_subcommand(
      "admin-token",
      "print the bearer token of the master's HTTP endpoints that change state: from --auth_secret_file (the "
      "cluster secret or the admin key), else the one a master without a secret keeps in its --metadata_dir");
  std::string metadata_dir = "yb-master.data";
  token->add_option("--metadata_dir", metadata_dir, "the master's metadata directory")->capture_default_str();
  auto* role_key = app.add_subcommand(
      "role-key", "print the key of a role, derived from the cluster secret (--auth_secret_file): give it to the "
                  "processes of that role in their --auth_secret_file (0600), instead of the cluster secret");
  std::string role = "node";
  role_key->add_option("--role", role, "node (yb-client daemons, storage) or admin (operators: drain, quotas)")
      ->check(CLI::IsMember({"node", "admin"}))
      ->capture_default_str();
  auto* undrain = app.add_subcommand("undrain", "end a drain: the node's segments take new replicas again");
  auto* drain = app.add_subcommand(
      "drain", "copy every object a storage node holds to other nodes, so that stopping it loses nothing");
  std::string node;
  int drain_timeout = 300;
  drain->add_option("name", node, "the node's segment name (as `segments` lists it), or its host")->required();
  drain->add_option("--timeout", drain_timeout, "seconds to wait at most")->check(CLI::PositiveNumber);
  undrain->add_option("name", node, "the node's segment name, or its host")->required();
  reps->add_option("key", key)->required();
  yb::tools::EventsOptions ev;
  auto* events = app.add_subcommand(
      "events", "tail the KV events a master publishes (yb-master --enable_kv_events): one line per event, "
                "\"SEQ stored|removed cpu|disk KEY tenant=T\"; a gap in the sequence is said on stderr");
  events->add_option("--endpoint", ev.endpoint, "the master's --kv_events_bind_endpoint")->capture_default_str();
  events->add_option("--count", ev.count, "stop after this many events (0: never)");
  events->add_option("--timeout", ev.timeout_s, "stop after this many seconds without a message (0: never)");
  events->add_flag("--json", ev.json, "print each event as the JSON object its msgpack map decodes to");
  yb::tools::StatsOptions so;
  auto* stats = app.add_subcommand("stats", "print the dashboard's numbers (a master's /dashboard.json) as text");
  auto* top = app.add_subcommand("top", "the dashboard's numbers in the terminal, refreshed until interrupted");
  for (auto* sub : {stats, top}) {
    sub->add_option("--http", so.http, "the master's metrics address host:port (default: --master's host, port 9003)");
  }
  stats->add_flag("--json", so.json, "print the feed itself");
  top->add_option("--interval", so.interval_s, "seconds between refreshes")->check(CLI::Range(0.1, 3600.0))
      ->capture_default_str();
  top->add_option("--iterations", so.iterations, "stop after this many refreshes (0: never)");
  app.add_option("--enable_checksum", c.enable_checksum,
                 "record a checksum with a put and check it on a get (YB_ENABLE_CHECKSUM)")
      ->capture_default_str();
  yb::tools::AddSecurityFlags(app, c.auth_secret_file, c.tls_cert, c.tls_key, c.tls_ca, c.wire_macs);
  yb::tools::AddEtcdFlags(app, c.etcd_tls_ca, c.etcd_tls_cert, c.etcd_tls_key, c.etcd_user, c.etcd_password_file);
  app.add_option("--tenant", c.tenant, "the tenant whose keys the commands name (YB_TENANT)")->capture_default_str();
  yb::ApplyEnvironment(c, [](const char* name) { return std::getenv(name); });  // flags given win
  CLI11_PARSE(app, argc, argv);
  spdlog::set_default_logger(spdlog::stderr_color_mt("yb"));  // stdout carries values
  spdlog::set_level(spdlog::level::warn);

  if (events->parsed()) return yb::tools::TailKvEvents(ev);
  if (stats->parsed() || top->parsed()) {
    if (so.http.empty()) {
      if (yb::LeaderFollower::IsEtcdAddress(master)) {
        std::fprintf(stderr, "with --master etcd://..., name the leader's metrics address: --http HOST:PORT\n");
        return 2;
      }
      so.http = master.substr(0, master.rfind(':')) + ":9003";
    }
    return stats->parsed() ? yb::tools::PrintStats(so) : yb::tools::Top(so);
  }
  if (token->parsed() || role_key->parsed()) {
    if (c.auth_secret_file.empty()) {
      if (role_key->parsed()) {
        std::fprintf(stderr, "role-key needs the cluster secret: --auth_secret_file (or YB_AUTH_SECRET_FILE)\n");
        return 2;
      }
      auto kept = yb::ReadWholeFile(yb::http::AdminTokenPath(metadata_dir));
      if (!kept.ok()) {
        std::fprintf(stderr,
                     "no --auth_secret_file, and %s (a master without a secret keeps its token there; "
                     "--metadata_dir names the master's directory)\n",
                     kept.status().message().c_str());
        return 1;
      }
      std::printf("%s", kept->c_str());
      return 0;
    }
    auto secret = yb::net::ReadSecretFile(c.auth_secret_file);
    if (!secret.ok()) return Fail(secret.status());
    const auto claimed = yb::net::RoleOfSecret(*secret);
    if (role_key->parsed()) {
      if (claimed) {
        std::fprintf(stderr, "%s holds a role's key, not the cluster secret\n", c.auth_secret_file.c_str());
        return 2;
      }
      std::printf("%s\n", yb::net::RoleKey(*secret, role == "admin" ? yb::net::Role::kAdmin : yb::net::Role::kNode)
                               .c_str());
      return 0;
    }
    yb::net::SecurityOptions o;
    o.secret = *secret;
    auto security = yb::net::Security::Create(std::move(o));
    if (!security.ok()) return Fail(security.status());
    const std::string admin = (*security)->admin_token();
    if (admin.empty()) {
      std::fprintf(stderr, "%s holds a node's key: the admin token comes from the cluster secret or the admin key\n",
                   c.auth_secret_file.c_str());
      return 2;
    }
    std::printf("%s\n", admin.c_str());
    return 0;
  }
  c.local_hostname = "yb-cli";
  c.master_server_addr = master;
  c.global_segment_size = 0;
  c.local_buffer_size = 0;
  if (segs->parsed() || drain->parsed() || undrain->parsed()) {
    // The master's segment list needs no client registration, so a script polling it does not add
    // a client to the master's live ones for every call.
    const auto timeout = std::chrono::milliseconds(c.rpc_timeout_ms);
    auto security = yb::ClientSecurity(c);
    if (!security.ok()) return Fail(security.status());
    const auto channel = yb::MasterChannel(c, *security);
    std::unique_ptr<yb::MasterApi> m;
    if (yb::LeaderFollower::IsEtcdAddress(master)) {
      auto etcd = yb::EtcdAccess(c);
      if (!etcd.ok()) return Fail(etcd.status());
      auto f = yb::LeaderFollower::Create(master, c.cluster_id, timeout, channel, *etcd);
      if (!f.ok()) return Fail(f.status());
      m = std::move(f).value();
    } else {
      auto mc = yb::rpc::MasterClient::Connect(master, timeout, channel);
      if (!mc.ok()) return Fail(mc.status());
      m = std::move(mc).value();
    }
    auto list = m->ListSegments();
    if (!list.ok()) return Fail(list.status());
    if (drain->parsed() || undrain->parsed()) {
      std::vector<yb::SegmentId> ids;
      for (const auto& u : *list) {
        if (yb::SegmentNameMatches(u.desc.name, node)) ids.push_back(u.desc.id);
      }
      if (ids.empty()) {
        std::fprintf(stderr, "no segment is named %s\n", node.c_str());
        return 2;
      }
      // A drain is a call of a registered client (the master checks who calls); it leaves after.
      auto ctx = m->RegisterClient({yb::ClientId::Random(), c.local_hostname, c.tenant});
      if (!ctx.ok()) return Fail(ctx.status());
      if (undrain->parsed()) {
        yb::Status st;
        for (yb::SegmentId id : ids) {
          if (st = m->UndrainSegment(*ctx, id); !st.ok()) break;
        }
        (void)m->UnregisterClient(*ctx);
        if (!st.ok()) return Fail(st);
        std::printf("%s takes new replicas again (%zu segments)\n", node.c_str(), ids.size());
        return 0;
      }
      uint64_t round = 0;
      yb::Status st = yb::DrainSegments(*m, *ctx, ids, std::chrono::seconds(drain_timeout), [&](uint64_t remaining) {
        if (remaining > 0 && round++ % 5 == 0) {
          std::fprintf(stderr, "%s: %llu objects still to be copied elsewhere\n", node.c_str(),
                       static_cast<unsigned long long>(remaining));
        }
      }, yb::SteadyClock());
      (void)m->UnregisterClient(*ctx);
      if (!st.ok()) return Fail(st);
      std::printf("%s drained (%zu segments): stopping it loses nothing\n", node.c_str(), ids.size());
      return 0;
    }
    std::printf("%-20s %-22s %-10s %-12s %-12s %-8s %s\n", "NAME", "ENDPOINT", "ZONE", "CAPACITY", "USED", "OBJECTS",
                "OWNER");
    for (const auto& u : *list) {
      std::printf("%-20s %-22s %-10s %-12s %-12s %-8llu %s\n", u.desc.name.c_str(), u.desc.endpoint.c_str(),
                  u.desc.zone.empty() ? "-" : u.desc.zone.c_str(), yb::FormatBytes(u.capacity).c_str(),
                  yb::FormatBytes(u.allocated).c_str(), static_cast<unsigned long long>(u.allocations),
                  u.owner.ToString().c_str());
    }
    return 0;
  }
  auto client = yb::Client::Connect(c);
  if (!client.ok()) return Fail(client.status());
  yb::Client& cl = **client;

  if (put->parsed()) {
    std::string data = value;
    if (!file.empty()) {
      std::ifstream in(file, std::ios::binary);
      if (!in) {
        std::fprintf(stderr, "cannot read %s\n", file.c_str());
        return 2;
      }
      data.assign(std::istreambuf_iterator<char>(in), {});
    }
    yb::ReplicateConfig rc;
    rc.replica_num = static_cast<size_t>(replicas);
    yb::Status st = cl.Put(key, data.data(), data.size(), rc);
    if (!st.ok()) return Fail(st);
    std::fprintf(stderr, "stored %s (%s)\n", key.c_str(), yb::FormatBytes(data.size()).c_str());
  } else if (get->parsed()) {
    auto v = cl.Get(key);
    if (!v.ok()) return Fail(v.status());
    if (out.empty()) {
      std::fwrite(v->data(), 1, v->size(), stdout);
    } else {
      std::ofstream o(out, std::ios::binary);
      o.write(v->data(), static_cast<std::streamsize>(v->size()));
      if (!o) {
        std::fprintf(stderr, "cannot write %s\n", out.c_str());
        return 2;
      }
    }
  } else if (rm->parsed()) {
    yb::Status st = cl.Remove(key, force);
    if (!st.ok()) return Fail(st);
  } else if (reps->parsed()) {
    auto q = cl.Query(key);
    if (!q.ok()) return Fail(q.status());
    auto list = cl.ListSegments();
    if (!list.ok()) return Fail(list.status());
    auto where = [&](yb::SegmentId id) -> std::string {
      for (const auto& u : *list) {
        if (u.desc.id == id) return u.desc.name + " (" + u.desc.endpoint + ")";
      }
      return "segment " + std::to_string(id);
    };
    size_t memory = 0;
    for (const auto& r : q->replicas) memory += r.kind == yb::ReplicaKind::kMemory ? 1 : 0;
    std::printf("%s: %s, %zu replicas (%zu in memory)\n", key.c_str(), yb::FormatBytes(q->size).c_str(),
                q->replicas.size(), memory);
    for (const auto& r : q->replicas) {
      std::printf("  %-6s %-10s %s\n", r.kind == yb::ReplicaKind::kMemory ? "memory" : "disk", StatusName(r.status),
                  where(r.segment).c_str());
    }
  } else if (exist->parsed()) {
    auto e = cl.IsExist(key);
    if (!e.ok()) return Fail(e.status());
    std::printf("%d\n", *e ? 1 : 0);
  } else if (why->parsed()) {
    auto w = cl.WhyMissing(key);
    if (!w.ok()) return Fail(w.status());
    std::printf("%s: %s (%s)\n", key.c_str(), yb::DescribeMiss(*w).c_str(),
                std::string(yb::MissReasonName(w->reason)).c_str());
  }
  return 0;
}
