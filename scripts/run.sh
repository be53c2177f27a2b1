#!/usr/bin/env bash
# The main job: installs what is needed, builds, and runs the in-process store demo.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DYB_BUILD_TESTS=OFF
cmake --build build -j"$(nproc)"
exec build/bin/yb-demo "$@"
