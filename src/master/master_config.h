// MasterConfig: every knob of the master, with Mooncake's defaults. Filled by tools/ from flags or
// a config file; components only read it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "yuebing/types.h"

namespace yb {

struct MasterConfig {
  // Segments one client may have mounted at once (a node mounts its memory in chunks of
  // segment_chunk_size: 1 GiB each by default); one more is refused, so no client takes every
  // slot of the master's table (65,536).
  uint32_t max_segments_per_client = 4096;
  int64_t default_kv_lease_ttl_ms = 10'000;          // lease granted to a reader
  int64_t default_kv_soft_pin_ttl_ms = 30 * 60'000;  // soft pin lifetime, renewed by reads
  bool allow_evict_soft_pinned_objects = true;
  double eviction_ratio = 0.05;                 // share of capacity one eviction frees
  double eviction_high_watermark_ratio = 0.90;  // usage that starts eviction
  int64_t client_ttl_sec = 10;                  // silence before a client is declared dead
  // Liveness judged fairly: when the master's own liveness check (every 200 ms in yb-master) has
  // not run for longer than this, the master itself was paused, swapped out or starved, and the
  // clients' silence over that time says nothing of them: every client gets a fresh client_ttl
  // instead of being judged. 0 turns it off (a test that steps the clock by whole TTLs).
  int64_t liveness_max_gap_ms = 1000;
  // How long the threads that receive the clients' calls have not turned, in ms (yb-master: its
  // RPC server's event loops). Over liveness_max_gap_ms counts as a gap too: the master was not
  // receiving. Null: not watched.
  std::function<int64_t()> receive_stall_ms;
  // A client declared dead keeps its segments suspended for this long (no reads, no new replicas,
  // repair waits): back with the same memory by then (a partition healed, a process resumed), it
  // keeps every replica; else they are dropped and repaired. -1: client_ttl_sec; 0: dropped at once.
  int64_t client_grace_sec = -1;
  // A client silent for longer than this (its heartbeats, each second, stopped arriving: cut off
  // from the master, or paused) is not declared dead yet, but its segments take no new replicas
  // until it is heard again: a writer could not be sure they still exist by its PutEnd.
  // -1: half the client_ttl, within 2-3 s.
  int64_t client_quiet_ms = -1;
  // How long a client's report that it cannot reach a segment (PingState::unreachable, sent each
  // second while it lasts) keeps the segment from readers and writers.
  int64_t unreachable_report_ms = 3000;
  std::string allocation_strategy = "random";   // random | free_ratio_first
  int64_t put_start_discard_timeout_sec = 30;   // after this another writer may take over
  int64_t put_start_release_timeout_sec = 600;  // after this the space is reclaimed
  uint64_t allocation_alignment = 64;           // bytes; every replica offset is aligned
  size_t object_shards = 1024;
  uint64_t random_seed = 0;  // 0: from std::random_device
  // SSD tier (only towards clients that registered one).
  bool enable_offload = false;        // eager: queue each object for offload at PutEnd
  bool offload_on_evict = false;      // eviction moves objects down instead of dropping them
  bool offload_force_evict = false;   // with a full offload queue, evict (drop) anyway
  size_t offload_queue_limit = 4096;  // objects queued or in flight per client
  // Disk copies remembered after their owner went away (dead or unmounted), so that copies of keys
  // removed or rewritten meanwhile are refused when the owner comes back. About 120 bytes beside the
  // key each.
  size_t disk_away_copies_limit = 1'000'000;
  // Keys whose last departure (removed, evicted, lost, Put refused...) the master remembers, to say
  // why a read missed (MissReason; GoneKeys::kBytesPerKey bytes each). 0: none.
  size_t miss_reason_keys = 1'000'000;
  // Re-replication: bytes per second copied into new replicas of objects that lost one with a
  // segment (0: off), and how long a client has to report a copy before it is given up and redone.
  uint64_t repair_bandwidth = 256ULL << 20;
  int64_t repair_task_timeout_sec = 30;
  // Copy and move tasks (MasterApi::CreateTask): how long one may take before it fails (Mooncake's
  // DEFAULT_PROCESSING_TASK_TIMEOUT_SEC); counted again from a restart or failover.
  int64_t task_timeout_sec = 300;
  // Lifetime of the grants (capabilities, docs/security.md) handed out with replicas: a read's, and a
  // write's (at most put_start_discard_timeout_sec, so that a writer taken over cannot write after).
  int64_t grant_ttl_sec = 60;
  // Tenants are bound to their own secrets (yb-master --tenant_secrets_file), so a tenant's caller
  // may read and write only its own tenant's objects: a freed range is then not handed to another
  // tenant while a grant for it may still be valid (GrantHold; docs/security.md). Without it every
  // caller may reach every tenant's objects and nothing is held.
  bool hold_freed_ranges = false;
  // Byte quotas of tenants, as the operator configures them (--tenant_quotas); set at start, over
  // what the metadata log kept.
  std::map<std::string, uint64_t> tenant_quotas;
  // Bytes of a key at most (the RPC server bounds batches: rpc/master_server.h).
  uint32_t max_key_length = kMaxKeyLength;
};

}  // namespace yb
