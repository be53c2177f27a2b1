#!/usr/bin/env bash
# Starts a yb-master and one yb-client (the storage) on 127.0.0.1, runs yb-bench against them
# from a third process, prints its JSON, and stops what it started.
# Usage: bench/cluster_bench.sh [build dir] [yb-bench flags...]; YB_MASTER_FLAGS sets yb-master flags.
# The master keeps its metadata log in a temporary directory (synced, as by default);
# YB_BENCH_LOG=off runs it without one (--metadata_dir ""), for the same-run comparison.
# YB_BENCH_SAME_HOST=off starts the storage client with --same_host_transfers false: yb-bench then
# moves its bytes over loopback TCP instead of through the storage client's memory.
# YB_BENCH_DUMMY=1 runs yb-bench's put/get cases as a dummy client of the storage client (setup_dummy:
# every call served by it through its Unix sockets, values in memory it maps).
# YB_BENCH_STANDBY=1 runs it as the leader of two masters under a temporary etcd (--enable_ha), with
# one hot standby that must have each change before it is answered.
# YB_BENCH_SECRET=1 gives the master, the storage client and yb-bench a shared secret (each
# connection proves it, each client holds an identity token): the event-loop cases, whose callers
# cannot prove it, are then skipped and say so.
# yb-bench exits 1 when any case failed calls or measured nothing (listed under "failures").
# Each master RPC case also reports the CPU time the master, the storage daemon and the standby
# (if any) spent per pair or key (cpu_us_per_op).
# YB_BENCH_METRICS_PORT serves the (lone) master's /metrics on that port while it runs.
# By default the master serves RPC on one thread: on a 2-core machine shared by the master, the
# storage daemon and the callers, a second RPC thread competes with the callers for the cores
# instead of adding capacity (docs/performance.md, "Tried and not kept"). With yb-bench's
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
CLIENT="" MASTER="" STANDBY="" ETCD_PID=""
trap 'kill $CLIENT $MASTER $STANDBY $ETCD_PID 2>/dev/null; wait 2>/dev/null; rm -rf "$LOG"' EXIT
SECRET=()
if [[ ${YB_BENCH_SECRET:-0} == 1 ]]; then
  head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$LOG/secret"
  chmod 600 "$LOG/secret"
  SECRET=(--auth_secret_file "$LOG/secret")
  export YB_AUTH_SECRET_FILE="$LOG/secret"
fi
# Waits up to a minute for `$2...` to succeed, else says what `$1` was and shows the logs: a
# daemon that did not start (its port taken) made the run wait for ever. (Faulting 3 GB of huge
# pages in can take the storage client seconds.)
answers() { curl -s "$1" | grep -q "$2"; }
wait_for() {
  local what=$1
  shift
  for _ in $(seq 600); do
    "$@" && return 0
    sleep 0.1
  done
  echo "$what: not within a minute" >&2
  cat "$LOG"/*.log >&2
  exit 1
}
if [[ ${YB_BENCH_STANDBY:-0} == 1 ]]; then
  EP=$((PORT + 7)) PP=$((PORT + 8)) HTTP=$((PORT + 9))
  etcd --data-dir "$LOG/etcd" --listen-client-urls "http://127.0.0.1:$EP" --advertise-client-urls "http://127.0.0.1:$EP" \
    --listen-peer-urls "http://127.0.0.1:$PP" --initial-advertise-peer-urls "http://127.0.0.1:$PP" \
    --initial-cluster "default=http://127.0.0.1:$PP" >"$LOG/etcd.log" 2>&1 &
  ETCD_PID=$!
  wait_for "etcd to answer" answers "http://127.0.0.1:$EP/health" true
  HA=(--enable_ha true --etcd_endpoints "127.0.0.1:$EP" --cluster_id bench)
  "$BIN/yb-master" --rpc_address 127.0.0.1 --rpc_port "$PORT" --metrics_port "$HTTP" "${HA[@]}" "${META[@]}" \
    "${SECRET[@]}" ${YB_MASTER_FLAGS:-$MASTER_FLAGS} >"$LOG/master.log" 2>&1 &
  MASTER=$!
  wait_for "the first master to lead" answers "http://127.0.0.1:$HTTP/health?format=json" '"leader"'
  "$BIN/yb-master" --rpc_address 127.0.0.1 --rpc_port $((PORT + 1)) --metrics_port 0 "${HA[@]}" \
    --metadata_dir "$LOG/standby" "${SECRET[@]}" ${YB_MASTER_FLAGS:-$MASTER_FLAGS} >"$LOG/standby.log" 2>&1 &
  STANDBY=$!
  wait_for "the standby to be counted" answers "http://127.0.0.1:$HTTP/health?format=json" '"in_sync": true'
else
  "$BIN/yb-master" --rpc_address 127.0.0.1 --rpc_port "$PORT" --metrics_port "${YB_BENCH_METRICS_PORT:-0}" "${META[@]}" "${SECRET[@]}" \
    ${YB_MASTER_FLAGS:-$MASTER_FLAGS} >"$LOG/master.log" 2>&1 &
  MASTER=$!
fi
CLIENT_PORT=$((PORT + 2))
DUMMY=()
[[ ${YB_BENCH_DUMMY:-0} == 1 ]] && DUMMY=(--real_client "127.0.0.1:$CLIENT_PORT")
"$BIN/yb-client" --host 127.0.0.1 --port "$CLIENT_PORT" --local_hostname storage --master_server_address "127.0.0.1:$PORT" \
  --global_segment_size ${YB_BENCH_SEGMENT:-3GB} "${SECRET[@]}" --same_host_transfers "$([[ ${YB_BENCH_SAME_HOST:-on} == off ]] && echo false || echo true)" \
  >"$LOG/client.log" 2>&1 &
CLIENT=$!
mounted() { [[ $("$BIN/yb" --master "127.0.0.1:$PORT" "${SECRET[@]}" segments 2>/dev/null || true) == *storage* ]]; }
wait_for "the storage client to mount its memory" mounted
CPU_OF=(--cpu_of "master=$MASTER" --cpu_of "storage=$CLIENT")
[[ -n $STANDBY ]] && CPU_OF+=(--cpu_of "standby=$STANDBY")
"$BIN/yb-bench" --master "127.0.0.1:$PORT" --master_pid "$MASTER" "${CPU_OF[@]}" "${DUMMY[@]}" "$@"
