#!/usr/bin/env bash
# Fuzzes every decoder a peer or an operator feeds (tests/fuzz): builds the targets with clang,
# libFuzzer, ASan and UBSan in build-fuzz/, then runs each for YB_FUZZ_SECONDS (default 300) on two
# jobs, starting from its seed corpus (tests/fuzz/corpus/<target>, copied; the copy grows). A crash,
# leak or sanitizer report stops the run with the input saved as build-fuzz/crash-*; save such an
# input into the seed corpus once fixed, so that the test suite's replay catches it again.
# YB_FUZZ_MERGE=1 merges what the run found into the seed corpus (minimized). Targets: all, or
# those named as arguments.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
seconds=${YB_FUZZ_SECONDS:-300}
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(fuzz_rpc_frame fuzz_master_requests fuzz_transfer_wire fuzz_auth fuzz_bucket_meta
                                     fuzz_metalog fuzz_config)
cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DYB_FUZZ=ON -DYB_BUILD_TESTS=OFF -DYB_BUILD_BENCH=OFF -DYB_BUILD_PYTHON=OFF >/dev/null
cmake --build build-fuzz -j"$(nproc)" --target "${targets[@]}"
status=0
for t in "${targets[@]}"; do
  work="build-fuzz/corpus/$t"
  mkdir -p "$work"
  cp -n tests/fuzz/corpus/"$t"/* "$work"/ 2>/dev/null || true
  echo "== $t: ${seconds}s =="
  if ! (cd build-fuzz && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        ./bin/"$t" -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=4096 \
        -print_final_stats=1 "corpus/$t" 2>&1 | tail -n 25); then
    status=1
  fi
  if [ "${PIPESTATUS[0]:-0}" != 0 ]; then status=1; fi
  if [ "${YB_FUZZ_MERGE:-0}" = 1 ]; then
    mkdir -p "build-fuzz/merged/$t"
    (cd build-fuzz && ./bin/"$t" -merge=1 "merged/$t" "corpus/$t" >/dev/null 2>&1)
    rm -f tests/fuzz/corpus/"$t"/*
    cp build-fuzz/merged/"$t"/* tests/fuzz/corpus/"$t"/
  fi
done
ls build-fuzz/crash-* build-fuzz/leak-* build-fuzz/timeout-* 2>/dev/null && status=1
exit "$status"
