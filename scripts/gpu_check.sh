#!/usr/bin/env bash
# The device-memory cases (tests/cluster/device_cases.py: the vLLM, SGLang and C API replays and
# every address-taking call, with their buffers in GPU memory) against the machine's own CUDA driver
# and GPU, then yb-bench's device-against-host figures. For a machine that has a GPU: the test
# suite runs the same cases on the fake driver (tests/fake_cuda) everywhere.
#   scripts/gpu_check.sh [build-dir]      exit 77: no GPU or no driver here
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "${1:-$ROOT/build}" && pwd)
if ! ldconfig -p | grep -q 'libcuda.so.1'; then
  echo "gpu_check: no CUDA driver (libcuda.so.1) on this machine: nothing to check" >&2
  exit 77
fi
if command -v nvidia-smi >/dev/null; then nvidia-smi -L; fi
cd "$ROOT/tests/cluster"
YB_REAL_CUDA=1 YB_BIN_DIR="$BUILD/bin" PYTHONPATH="$BUILD/python" \
  /usr/bin/python3 -m pytest -q -p no:cacheprovider -rfE device_cases.py
cd "$ROOT"
bench/cluster_bench.sh "$BUILD" --skip_meta --skip_iperf --skip_data --device_memory --seconds 4
