#!/usr/bin/env bash
# The whole test suite: installs what is needed, builds, runs every test, then the unit and
# multi-process tests again under AddressSanitizer + UndefinedBehaviorSanitizer, built by clang
# (all but those marked plain_only). Set YB_SKIP_SANITIZERS=1 to skip that second pass, YB_TSAN=1
# to add a ThreadSanitizer pass. After the first pass: the house rules (scripts/check_house.py);
# beside the sanitizer pass's tests: clang's thread-safety analysis (scripts/thread_safety.sh).
# Each stage's heading says how long the suite has run.
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
# generator DIR [CXX]: the builds' generator (and compiler) options. Ninja schedules every
# target's compiles together where Make finishes one target's before the next (the ASan client
# library from scratch: 165 s against 213 s, 2026-12-05); a directory configured with another
# generator or compiler is configured afresh.
generator() {
  local cache=$1/CMakeCache.txt fresh=""
  if [ -f "$cache" ]; then
    grep -qx 'CMAKE_GENERATOR:INTERNAL=Ninja' "$cache" || fresh=--fresh
    if [ -n "${2:-}" ] && ! grep -qx "CMAKE_CXX_COMPILER:FILEPATH=$(command -v "$2")" "$cache"; then fresh=--fresh; fi
  fi
  echo $fresh -G Ninja
}
# background LOG CMD...: runs CMD in the background at the lowest CPU priority (nice 19), in a
# process group of its own (stopped if the suite stops early), its output in LOG; sets bg_pid.
# setsid gives it a session, and with the kernel's autogroups (sched_autogroup_enabled) a CPU group
# of its own that would share the CPU equally with the tests' whatever its nice: that group's nice
# is set too, from inside, once it is in it (set from here, it could land on the suite's own group
# before setsid ran; the file is absent where autogroups are not built in). A test's process that
# wakes takes the CPU from it at once.
background() {
  local log=$1
  shift
  setsid nice -n 19 bash -c 'echo 19 >"/proc/$$/autogroup" 2>/dev/null || true; exec "$@"' background "$@" >"$log" 2>&1 &
  bg_pid=$!
}
# finish PID LOG WHAT: waits for a background stage, prints its log, and fails the suite if it failed.
finish() {
  local rc=0
  wait "$1" || rc=$?
  cat "$2"
  if [ "$rc" != 0 ]; then
    echo "$3 failed (exit $rc): its log is above" >&2
    exit 1
  fi
}
pids=()
stop_background() {
  local p
  for p in "${pids[@]}"; do kill -- -"$p" 2>/dev/null || true; done
}
trap stop_background EXIT

# The sanitizer build starts first, at nice 19, and takes what CPU the plain build and the first
# pass's tests leave: a build's links and the multi-process tests' waits on daemons and timeouts
# (the plain ctest kept one core of two busy: 433 s of CPU in 419 s, 2026-12-05).
# It is compiled by clang: the same tests under clang's ASan + UBSan (their reference
# implementation) and a second compiler's warnings, and it compiles the instrumented code in about
# half GCC's time (from scratch on 2 cores: 4:41 against 8:04, 2026-12-05).
if [ "${YB_SKIP_SANITIZERS:-0}" != 1 ]; then
  mkdir -p build-asan
  stage "build (clang, ASan + UBSan, -O1 -g1, unity) started beside the plain build and tests at nice 19 (log: build-asan/build.log)"
  # shellcheck disable=SC2046,SC2016  # generator's options, split as words; $@ is the inner bash's
  background build-asan/build.log bash -c '
    cmake -S . -B build-asan -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Debug \
      -DYB_SANITIZE=address -DYB_BUILD_TESTS=ON -DYB_BUILD_BENCH=OFF -DYB_UNIT_TEST_PER_CASE=OFF \
      -DYB_PYTHON_PACKAGE_DIR="$PWD/build/python" -DCMAKE_CXX_FLAGS_DEBUG="-g1" "$@" &&
      cmake --build build-asan -j"'"$jobs"'"' asan-build $(generator build-asan clang++) "${unity[@]}"
  asan_pid=$bg_pid
  pids+=("$asan_pid")
fi

stage "build (RelWithDebInfo, -g1, unity)"
# shellcheck disable=SC2046  # generator's options, split as words
cmake -S . -B build $(generator build) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DYB_BUILD_TESTS=ON -DYB_BUILD_BENCH=ON -DYB_SANITIZE= \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" "${unity[@]}"
cmake --build build -j"$jobs"

stage "tests"
ctest --test-dir build --output-on-failure -j"$jobs"
slowest build
stage "house rules: seams, docs of the present (scripts/check_house.py)"
scripts/check_house.py

if [ "${YB_SKIP_SANITIZERS:-0}" != 1 ]; then
  stage "waiting for the ASan + UBSan build"
  finish "$asan_pid" build-asan/build.log "the ASan + UBSan build"
  # Clang's thread-safety analysis (CPU only, about 3 core-minutes) runs beside the sanitizer
  # pass's tests, which left about a third of the CPU idle (2026-12-05, most of it while the last
  # long tests ran), rather than before them, where it took CPU from the build the suite waits for.
  stage "thread-safety analysis (clang) started beside the sanitizer tests at nice 19"
  background build/thread_safety.log scripts/thread_safety.sh
  tsa_pid=$bg_pid
  pids+=("$tsa_pid")
  stage "tests under ASan + UBSan"
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir build-asan --output-on-failure -j"$jobs"
  slowest build-asan
  stage "waiting for the thread-safety analysis (clang)"
  finish "$tsa_pid" build/thread_safety.log "the thread-safety analysis"
else
  stage "thread-safety analysis (clang)"
  scripts/thread_safety.sh
fi

if [ "${YB_TSAN:-0}" = 1 ]; then
  stage "build (TSan)"
  # shellcheck disable=SC2046  # generator's options, split as words
  cmake -S . -B build-tsan $(generator build-tsan) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DYB_SANITIZE=thread -DYB_BUILD_TESTS=ON -DYB_BUILD_BENCH=OFF \
    -DYB_PYTHON_PACKAGE_DIR="$PWD/build/python"
  cmake --build build-tsan -j"$jobs"
  stage "tests under TSan"
  TSAN_OPTIONS=halt_on_error=1 ctest --test-dir build-tsan --output-on-failure -j"$jobs"
fi
