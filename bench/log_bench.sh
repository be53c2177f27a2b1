#!/usr/bin/env bash
# The metadata log's cost, in one run: PutStart+PutEnd (single-key, over 1, 16 and 64 connections,
# and batches of 128) at each durability level: off (no log), process (the default: written before
# the answer, synced in the background), always (synced before the answer), and process and always
# as the leader of two masters under etcd with one hot standby, alternated `rounds` times. Prints one
# JSON object: each setting's rates per round, and the median ratio of each to the log off.
# Usage: bench/log_bench.sh [build dir] [rounds] [seconds per case]
set -euo pipefail
BUILD=${1:-build}
ROUNDS=${2:-2}
SECS=${3:-2}
cd "$(dirname "$0")/.."
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
for r in $(seq "$ROUNDS"); do
  run() {  # name, then environment assignments for cluster_bench.sh
    local name=$1
    shift
    env "$@" bench/cluster_bench.sh "$BUILD" --seconds "$SECS" --skip_iperf --skip_data --meta_cases PutStart \
      >"$OUT/$name-$r.json"
  }
  run off YB_BENCH_LOG=off
  run process YB_MASTER_FLAGS="--rpc_thread_num 1 --metadata_durability process"
  run always YB_MASTER_FLAGS="--rpc_thread_num 1 --metadata_durability always"
  run standby YB_BENCH_STANDBY=1 YB_MASTER_FLAGS="--rpc_thread_num 1 --metadata_durability process"
  run standby_always YB_BENCH_STANDBY=1 YB_MASTER_FLAGS="--rpc_thread_num 1 --metadata_durability always"
done
python3 - "$OUT" "$ROUNDS" <<'PY'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
runs = {s: [json.load(open(f"{out}/{s}-{r}.json"))["master_rpc_ops_per_s"] for r in range(1, rounds + 1)]
        for s in ("off", "process", "always", "standby", "standby_always")}
result = {"rates": {}, "median_ratio_to_off": {}}
for s, rs in runs.items():
    for op, cases in rs[0].items():
        for case in cases:
            name = f"{op}/{case}"
            result["rates"].setdefault(name, {})[s] = [round(r[op][case]) for r in rs]
for name, by in result["rates"].items():
    for s in ("process", "always", "standby", "standby_always"):
        ratios = [a / b for a, b in zip(by[s], by["off"]) if b]
        result["median_ratio_to_off"].setdefault(name, {})[s] = round(statistics.median(ratios), 2)
print(json.dumps(result, indent=1))
PY
