#!/usr/bin/env bash
# Issue 22's same-run comparison: puts and gets of 64 KiB and 1 MiB values between two processes
# over TCP (bench/cluster_bench.sh: a master, one storage daemon, yb-bench as the caller), with
# checksums off, with checksums on (the default), with the cluster secret and no TLS, the MACs on
# every frame off (auth) and on (macs: issue 30 item 7), and with checksums, authentication and
# mutual TLS on, in alternating rounds. Grants are checked in every run (they cannot be turned off):
# yb-bench-master's BM_MintGrant and BM_CheckGrant give what they cost per replica and request.
# Prints each run's figures and the medians with their ratios to the run without checksums.
# Usage: bench/security_bench.sh [build dir] [rounds] [seconds per case]
set -euo pipefail
BUILD=${1:-build}
ROUNDS=${2:-3}
SECS=${3:-1.5}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
"$BUILD/bin/yb-make-test-certs" "$TMP"
head -c 32 /dev/urandom | base64 >"$TMP/secret"
chmod 600 "$TMP/secret"
ARGS=(--skip_meta --skip_iperf --seconds "$SECS" --value_sizes 64KB,1MB)
for r in $(seq "$ROUNDS"); do
  for cfg in off on auth macs secure; do
    case $cfg in
      off) out=$(bench/cluster_bench.sh "$BUILD" "${ARGS[@]}" --enable_checksum false) ;;
      on) out=$(bench/cluster_bench.sh "$BUILD" "${ARGS[@]}") ;;
      auth | macs)
        # The secret without TLS, with the MACs on every frame off (auth) and on (macs, the default).
        m=$([[ $cfg == macs ]] && echo true || echo false)
        out=$(YB_AUTH_SECRET_FILE="$TMP/secret" YB_WIRE_MACS=$m \
          YB_MASTER_FLAGS="--rpc_thread_num 1 --auth_secret_file $TMP/secret --wire_macs $m" \
          bench/cluster_bench.sh "$BUILD" "${ARGS[@]}")
        ;;
      secure)
        out=$(YB_AUTH_SECRET_FILE="$TMP/secret" YB_TLS_CERT="$TMP/server.pem" YB_TLS_KEY="$TMP/server.key" \
          YB_TLS_CA="$TMP/ca.pem" YB_MASTER_FLAGS="--rpc_thread_num 1 --auth_secret_file $TMP/secret \
          --tls_cert $TMP/server.pem --tls_key $TMP/server.key --tls_ca $TMP/ca.pem" \
          bench/cluster_bench.sh "$BUILD" "${ARGS[@]}")
        ;;
    esac
    printf '{"round": %s, "config": "%s", "result": %s}\n' "$r" "$cfg" "$(echo "$out" | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)))')" >>"$TMP/runs.jsonl"
  done
done
python3 - "$TMP/runs.jsonl" <<'PY'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
fig = {}  # (case, op, config) -> figures: GB/s for single values, ops/s for the 4 KiB batches
for r in runs:
    for row in r["result"]["put_get_over_tcp"]:
        case = f"{row['value_bytes']}" if "batch" not in row else f"4096x{row['batch']} {row['threads']}t"
        for op in ("put", "get"):
            v = row[op]["GBps"] if "GBps" in row[op] else row[op]["ops_per_s"]
            fig.setdefault((case, op, r["config"]), []).append(v)
unit = lambda case: "ops/s" if "x" in case else "GB/s"
for (case, op, cfg), v in sorted(fig.items()):
    print(f"{case:>12} {op} {cfg:>6}: " + " ".join(f"{x:.3g}" for x in v) + f"  median {statistics.median(v):.3g} {unit(case)}")
print("ratio of medians to checksums off (same runs):")
for case in sorted({k[0] for k in fig}):
    for op in ("put", "get"):
        base = statistics.median(fig[(case, op, "off")])
        for cfg in ("on", "auth", "macs", "secure"):
            print(f"{case:>12} {op} {cfg:>6}: {statistics.median(fig[(case, op, cfg)]) / base:.3f}")
print("ratio of medians, MACs on to off (both with the secret, no TLS; same runs):")
for case in sorted({k[0] for k in fig}):
    for op in ("put", "get"):
        print(f"{case:>12} {op}: {statistics.median(fig[(case, op, 'macs')]) / statistics.median(fig[(case, op, 'auth')]):.3f}")
PY
"$BUILD/bin/yb-bench-master" --benchmark_filter='Grant' 2>/dev/null | grep -E 'BM_(Mint|Check)Grant'
