#!/usr/bin/env bash
# The main job: installs what is needed, builds, starts a yb-master and two yb-client daemons on
# 127.0.0.1, writes objects through one client process and reads them through another, prints a
# summary, and stops what it started. Extra arguments go to yb-cluster-demo (e.g. --objects 200).
# YB_DEMO=inprocess runs the single-process demo (yb-demo) instead.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release -DYB_BUILD_TESTS=OFF -DYB_BUILD_BENCH=OFF >/dev/null
cmake --build build-release -j"$(nproc)"
BIN=build-release/bin
if [ "${YB_DEMO:-cluster}" = inprocess ]; then exec "$BIN/yb-demo"; fi

RPC=${YB_RPC_PORT:-50051}
HTTP=${YB_METRICS_PORT:-9003}
LOG=$(mktemp -d)
pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$LOG"; }
trap cleanup EXIT
# The demo's cluster goes away at the end: so does the master's metadata log (a master started by
# hand keeps it in yb-master.data where it starts).
"$BIN/yb-master" --rpc_address 127.0.0.1 --rpc_port "$RPC" --metrics_address 127.0.0.1 --metrics_port "$HTTP" \
  --metadata_dir "$LOG/meta" >"$LOG/master.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do
  curl -sf "http://127.0.0.1:$HTTP/health" >/dev/null && break
  sleep 0.1
done
for n in 1 2; do
  "$BIN/yb-client" --host 127.0.0.1 --port 0 --local_hostname "node-$n" --master_server_address "127.0.0.1:$RPC" \
    --global_segment_size 256MB --local_buffer_size 16MB >"$LOG/node-$n.log" 2>&1 &
  pids+=($!)
done
for _ in $(seq 100); do
  out=$("$BIN/yb" --master "127.0.0.1:$RPC" segments 2>/dev/null || true)
  [[ $out == *node-1* && $out == *node-2* ]] && break
  sleep 0.1
done
[[ $out == *node-1* && $out == *node-2* ]] || { echo "the cluster did not come up:"; cat "$LOG"/*.log; exit 1; }
echo "Yuebing cluster on 127.0.0.1: yb-master :$RPC (metrics :$HTTP), yb-client node-1 and node-2 (256 MiB each)"
"$BIN/yb-cluster-demo" --master "127.0.0.1:$RPC" --role write "$@"
"$BIN/yb-cluster-demo" --master "127.0.0.1:$RPC" --role read "$@"
echo
"$BIN/yb" --master "127.0.0.1:$RPC" segments
echo
curl -s "http://127.0.0.1:$HTTP/metrics" | grep -E '^yb_master_(keys|allocated_bytes|capacity_bytes|live_clients) ' || true
echo "stopping the cluster"
