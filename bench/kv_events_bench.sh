#!/usr/bin/env bash
# What KV events cost the write path, in one run: PutStart+PutEnd (single-key over 1, 16 and 64
# connections, and batches of 128; cluster_bench.sh's master cases) with the events off, on with no
# subscriber (the master's own cost: the events are made, encoded and handed to ZeroMQ, which drops
# them), and on with a subscriber attached (`yb events` on the same machine, its lines counted to
# show it received them), alternated `rounds` times. Prints one JSON object: each setting's rates per round, the median ratio of on to
# off per case, and the events the subscriber received.
# Usage: bench/kv_events_bench.sh [build dir] [rounds] [seconds per case]
set -euo pipefail
BUILD=${1:-build}
ROUNDS=${2:-2}
SECS=${3:-2}
cd "$(dirname "$0")/.."
OUT=$(mktemp -d)
SUB=""
trap 'kill $SUB 2>/dev/null; rm -rf "$OUT"' EXIT
EP="tcp://127.0.0.1:${YB_KV_EVENTS_BENCH_PORT:-50757}"
for r in $(seq "$ROUNDS"); do
  bench/cluster_bench.sh "$BUILD" --seconds "$SECS" --skip_iperf --skip_data --meta_cases PutStart >"$OUT/off-$r.json"
  YB_MASTER_FLAGS="--rpc_thread_num 1 --enable_kv_events --kv_events_bind_endpoint $EP" \
    bench/cluster_bench.sh "$BUILD" --seconds "$SECS" --skip_iperf --skip_data --meta_cases PutStart \
    >"$OUT/on_unwatched-$r.json"
  "$BUILD/bin/yb" events --endpoint "$EP" >"$OUT/events-$r.txt" 2>&1 &
  SUB=$!
  YB_MASTER_FLAGS="--rpc_thread_num 1 --enable_kv_events --kv_events_bind_endpoint $EP" \
    bench/cluster_bench.sh "$BUILD" --seconds "$SECS" --skip_iperf --skip_data --meta_cases PutStart >"$OUT/on-$r.json"
  sleep 0.5
  kill $SUB 2>/dev/null || true
  wait $SUB 2>/dev/null || true
  SUB=""
done
python3 - "$OUT" "$ROUNDS" <<'PY'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
runs = {s: [json.load(open(f"{out}/{s}-{r}.json"))["master_rpc_ops_per_s"] for r in range(1, rounds + 1)]
        for s in ("off", "on_unwatched", "on")}
result = {"rates": {}, "median_ratio_on_to_off": {}, "median_ratio_on_unwatched_to_off": {},
          "events_received": [sum(1 for _ in open(f"{out}/events-{r}.txt")) for r in range(1, rounds + 1)]}
for op, cases in runs["off"][0].items():
    for case in cases:
        name = f"{op}/{case}"
        by = {s: [round(r[op][case]) for r in rs] for s, rs in runs.items()}
        result["rates"][name] = by
        for s, key in (("on", "median_ratio_on_to_off"), ("on_unwatched", "median_ratio_on_unwatched_to_off")):
            ratios = [a / b for a, b in zip(by[s], by["off"]) if b]
            result[key][name] = round(statistics.median(ratios), 2) if ratios else None
print(json.dumps(result, indent=1))
PY
