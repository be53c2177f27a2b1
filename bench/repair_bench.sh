#!/usr/bin/env bash
# Re-replication throughput beside a foreground read load (yb-repair-bench), in one run: a yb-master
# and four yb-client daemons on 127.0.0.1, 1 GiB of 1 MiB objects with two replicas, readers
# running, then one daemon killed (-9). Prints yb-repair-bench's JSON, once per repair bandwidth.
# Usage: bench/repair_bench.sh [build dir] [yb-repair-bench flags...]
# YB_REPAIR_BANDWIDTHS: the master's --repair_bandwidth values to run (default: "256MB 100GB",
# the default limit and effectively none). The output is a JSON array, one document per run.
set -euo pipefail
BUILD=${1:-build}
shift || true
BIN="$BUILD/bin"
DIR=$(mktemp -d)
PIDS=()
cleanup() { kill "${PIDS[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$DIR"; }
trap cleanup EXIT
sep="["
for bw in ${YB_REPAIR_BANDWIDTHS:-256MB 100GB}; do
  PORT=$((50700 + RANDOM % 200)) HTTP=$((51000 + RANDOM % 200))
  "$BIN/yb-master" --rpc_address 127.0.0.1 --rpc_port "$PORT" --metrics_address 127.0.0.1 --metrics_port "$HTTP" \
    --metadata_dir "" --client_ttl 2 --repair_bandwidth "$bw" >"$DIR/master.log" 2>&1 &
  PIDS=($!)
  for i in 0 1 2 3; do
    "$BIN/yb-client" --host 127.0.0.1 --port 0 --local_hostname "s$i" --master_server_address "127.0.0.1:$PORT" \
      --global_segment_size 1GB >"$DIR/s$i.log" 2>&1 &
    PIDS+=($!)
  done
  for _ in $(seq 600); do
    n=$("$BIN/yb" --master "127.0.0.1:$PORT" segments 2>/dev/null | grep -c '^s[0-9]' || true)
    [[ $n == 4 ]] && break
    sleep 0.1
  done
  [[ $n == 4 ]] || { echo "the storage daemons did not mount:" >&2; cat "$DIR"/*.log >&2; exit 1; }
  echo "$sep"
  sep=","
  "$BIN/yb-repair-bench" --master "127.0.0.1:$PORT" --master_http "127.0.0.1:$HTTP" --victim_pid "${PIDS[4]}" \
    --repair_bandwidth "$bw" "$@"
  kill "${PIDS[@]}" 2>/dev/null || true
  wait 2>/dev/null || true
done
echo "]"
