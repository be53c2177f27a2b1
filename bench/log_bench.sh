#!/usr/bin/env bash
# The metadata log's cost, in one run: PutStart+PutEnd (single-key, over 1, 16 and 64 connections,
# and batches of 128) with the log off, on (synced, the default), on without syncs
# (--metadata_sync false), and on with one hot standby (two masters under etcd), alternated
# `rounds` times. Prints one JSON object: each setting's rates per round, and the median ratio of
# each to the log off.
# Usage: bench/log_bench.sh [build dir] [rounds] [seconds per case]
set -euo pipefail
BUILD=${1:-build}
ROUNDS=${2:-2}
SECS=${3:-2}
cd "$(dirname "$0")/.."
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
for r in $(seq "$ROUNDS"); do
  YB_BENCH_LOG=off bench/cluster_bench.sh "$BUILD" --seconds "$SECS" --skip_iperf --skip_data \
    --meta_cases PutStart >"$OUT/off-$r.json"
  bench/cluster_bench.sh "$BUILD" --seconds "$SECS" --skip_iperf --skip_data --meta_cases PutStart >"$OUT/on-$r.json"
  YB_MASTER_FLAGS="--rpc_thread_num 1 --metadata_sync false" bench/cluster_bench.sh "$BUILD" --seconds "$SECS" \
    --skip_iperf --skip_data --meta_cases PutStart >"$OUT/nosync-$r.json"
  YB_BENCH_STANDBY=1 bench/cluster_bench.sh "$BUILD" --seconds "$SECS" --skip_iperf --skip_data \
    --meta_cases PutStart >"$OUT/standby-$r.json"
done
python3 - "$OUT" "$ROUNDS" <<'PY'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
runs = {s: [json.load(open(f"{out}/{s}-{r}.json"))["master_rpc_ops_per_s"] for r in range(1, rounds + 1)]
        for s in ("off", "on", "nosync", "standby")}
result = {"rates": {}, "median_ratio_to_off": {}}
for s, rs in runs.items():
    for op, cases in rs[0].items():
        for case in cases:
            name = f"{op}/{case}"
            result["rates"].setdefault(name, {})[s] = [round(r[op][case]) for r in rs]
for name, by in result["rates"].items():
    for s in ("on", "nosync", "standby"):
        ratios = [a / b for a, b in zip(by[s], by["off"]) if b]
        result["median_ratio_to_off"].setdefault(name, {})[s] = round(statistics.median(ratios), 2)
print(json.dumps(result, indent=1))
PY
