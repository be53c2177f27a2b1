#!/usr/bin/env bash
# Two engine instances share one store: the first computes a prompt and saves its K/V blocks, the
# second gets a prompt with the same 256-token prefix, loads those blocks and computes the rest.
# Usage: examples/paged_attention/demo.sh [build dir]   (starts and stops its own small cluster)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=$(cd "${1:-$HERE/../../build}" && pwd)
PORT=${YB_DEMO_PORT:-50751}
LOG=$(mktemp -d)
"$BUILD/bin/yb-master" --rpc_address 127.0.0.1 --rpc_port "$PORT" --metrics_port 0 --metadata_dir "$LOG/meta" >"$LOG/m.log" 2>&1 &
M=$!
trap 'kill $C $M 2>/dev/null; wait 2>/dev/null; rm -rf "$LOG"' EXIT
"$BUILD/bin/yb-client" --host 127.0.0.1 --port 0 --local_hostname gpu-node --master_server_address "127.0.0.1:$PORT" \
  --global_segment_size 256MB >"$LOG/c.log" 2>&1 &
C=$!
for _ in $(seq 100); do
  out=$("$BUILD/bin/yb" --master "127.0.0.1:$PORT" segments 2>/dev/null || true)
  [[ $out == *gpu-node* ]] && break
  sleep 0.1
done
export PYTHONPATH="$BUILD/python${PYTHONPATH:+:$PYTHONPATH}"
echo "instance A (cold store):"
/usr/bin/python3 "$HERE/engine.py" --master "127.0.0.1:$PORT" --prompt-seed 1
echo "instance B (shares a 256-token prefix with A):"
/usr/bin/python3 "$HERE/engine.py" --master "127.0.0.1:$PORT" --prompt-seed 2
