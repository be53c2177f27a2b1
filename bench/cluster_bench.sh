#!/usr/bin/env bash
# Starts a yb-master and one yb-client (the storage) on 127.0.0.1, runs yb-bench against them
# from a third process, prints its JSON, and stops what it started.
# Usage: bench/cluster_bench.sh [build dir] [yb-bench flags...]; YB_MASTER_FLAGS sets yb-master flags.
# The master keeps its metadata log in a temporary directory (synced, as by default);
# YB_BENCH_LOG=off runs it without one (--metadata_dir ""), for the same-run comparison.
# By default the master serves RPC on one thread: on a 2-core machine shared by the master, the
# storage daemon and the callers, a second RPC thread competes with the callers for the cores
# instead of adding capacity (docs/performance.md has the comparison). With yb-bench's
# --per_cpu_callers (a caller thread pinned to each CPU) the master runs a serving thread pinned to
# each CPU instead (--rpc_pin_threads), so that each connection is served on its caller's CPU.
set -euo pipefail
BUILD=${1:-build}
shift || true
BIN="$BUILD/bin"
PORT=${YB_BENCH_PORT:-50651}
LOG=$(mktemp -d)
MASTER_FLAGS="--rpc_thread_num 1"
[[ " $* " == *" --per_cpu_callers "* ]] && MASTER_FLAGS="--rpc_thread_num $(nproc) --rpc_pin_threads"
META=(--metadata_dir "$LOG/meta")
[[ ${YB_BENCH_LOG:-on} == off ]] && META=(--metadata_dir "")
"$BIN/yb-master" --rpc_address 127.0.0.1 --rpc_port "$PORT" --metrics_port 0 "${META[@]}" ${YB_MASTER_FLAGS:-$MASTER_FLAGS} >"$LOG/master.log" 2>&1 &
MASTER=$!
trap 'kill $CLIENT $MASTER 2>/dev/null; wait 2>/dev/null; rm -rf "$LOG"' EXIT
"$BIN/yb-client" --host 127.0.0.1 --port 0 --local_hostname storage --master_server_address "127.0.0.1:$PORT" \
  --global_segment_size 3GB >"$LOG/client.log" 2>&1 &
CLIENT=$!
for _ in $(seq 600); do  # up to a minute: faulting 3 GB of huge pages in can take seconds
  out=$("$BIN/yb" --master "127.0.0.1:$PORT" segments 2>/dev/null || true)
  [[ $out == *storage* ]] && break
  sleep 0.1
done
[[ $out == *storage* ]] || { echo "storage client did not mount:" >&2; cat "$LOG"/*.log >&2; exit 1; }
"$BIN/yb-bench" --master "127.0.0.1:$PORT" --master_pid "$MASTER" "$@"
