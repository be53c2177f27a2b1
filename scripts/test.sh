#!/usr/bin/env bash
# The whole test suite: installs what is needed, builds, runs every test, then the unit and
# multi-process tests again under AddressSanitizer + UndefinedBehaviorSanitizer (all but those
# marked plain_only). Set YB_SKIP_SANITIZERS=1 to skip that second pass, YB_TSAN=1 to add a
# ThreadSanitizer pass. After the first pass: clang's thread-safety analysis
# (scripts/thread_safety.sh) and the house rules (scripts/check_house.py). Each stage's heading
# says how long the suite has run.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
jobs=$(nproc)
# A stage's heading, with how long the suite has run.
stage() { echo "== $1 ($((SECONDS / 60)) min $((SECONDS % 60)) s in) =="; }
# The slowest multi-process tests of a ctest run (pytest's --durations, from ctest's log): where the
# suite's time goes, in the CI log.
slowest() {
  echo "-- slowest cluster tests ($1)"
  sed -n '/slowest [0-9]* durations/,/^$/p' "$1/Testing/Temporary/LastTest.log" 2>/dev/null || true
}

# Line tables only (-g1): stack traces and sanitizer reports keep their files and lines, and each
# build compiles about a third faster than with full debug information (-g). Unity builds (16
# sources of a target compiled as one unit): each header is parsed once per unit rather than once
# per file, which halves a build from scratch. Each library source still compiles on its own in the
# thread-safety stage, so a missing include still fails the suite.
unity=(-DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=16)
stage "build (RelWithDebInfo, -g1, unity)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DYB_BUILD_TESTS=ON -DYB_BUILD_BENCH=ON -DYB_SANITIZE= \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" "${unity[@]}"
cmake --build build -j"$jobs"

# The sanitizer build runs beside the first pass's tests, at the lowest CPU priority (nice 19), in
# its own process group (stopped if the suite stops early). The multi-process tests mostly wait on
# daemons and timeouts: the plain ctest kept one core of two busy (433 s of CPU in 419 s,
# 2026-12-05), and the build takes the idle one without slowing them, since a test's process
# that wakes takes the CPU from a nice-19 compiler at once. Its log is printed when it is waited for.
asan_pid=
if [ "${YB_SKIP_SANITIZERS:-0}" != 1 ]; then
  mkdir -p build-asan
  stage "build (ASan + UBSan, -O1 -g1, unity) started beside the tests at nice 19 (log: build-asan/build.log)"
  setsid nice -n 19 bash -c '
    echo 19 >"/proc/$$/autogroup" 2>/dev/null || true
    cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DYB_SANITIZE=address -DYB_BUILD_TESTS=ON -DYB_BUILD_BENCH=OFF \
      -DYB_PYTHON_PACKAGE_DIR="$PWD/build/python" -DCMAKE_CXX_FLAGS_DEBUG="-g1" "$@" &&
      cmake --build build-asan -j"'"$jobs"'"' asan-build "${unity[@]}" >build-asan/build.log 2>&1 &
  asan_pid=$!
  # setsid gives it a session, and with the kernel's autogroups (sched_autogroup_enabled) a CPU
  # group of its own that would share the CPU equally with the tests' whatever its nice: that
  # group's nice is set too, from inside, once it is in it (set from here, it could land on the
  # suite's own group before setsid ran; the file is absent where autogroups are not built in).
  trap '[ -n "$asan_pid" ] && kill -- -"$asan_pid" 2>/dev/null || true' EXIT
fi

stage "tests"
ctest --test-dir build --output-on-failure -j"$jobs"
slowest build
stage "thread-safety analysis (clang)"
scripts/thread_safety.sh
stage "house rules: seams, docs of the present (scripts/check_house.py)"
scripts/check_house.py

if [ "${YB_SKIP_SANITIZERS:-0}" != 1 ]; then
  stage "waiting for the ASan + UBSan build"
  build_ok=0
  wait "$asan_pid" || build_ok=$?
  asan_pid=
  cat build-asan/build.log
  if [ "$build_ok" != 0 ]; then
    echo "the ASan + UBSan build failed (exit $build_ok): its log is above" >&2
    exit 1
  fi
  stage "tests under ASan + UBSan"
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir build-asan --output-on-failure -j"$jobs"
  slowest build-asan
fi

if [ "${YB_TSAN:-0}" = 1 ]; then
  stage "build (TSan)"
  cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DYB_SANITIZE=thread -DYB_BUILD_TESTS=ON -DYB_BUILD_BENCH=OFF \
    -DYB_PYTHON_PACKAGE_DIR="$PWD/build/python"
  cmake --build build-tsan -j"$jobs"
  stage "tests under TSan"
  TSAN_OPTIONS=halt_on_error=1 ctest --test-dir build-tsan --output-on-failure -j"$jobs"
fi
