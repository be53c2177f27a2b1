#!/usr/bin/env bash
# The whole test suite: installs what is needed, builds, runs every test, then runs the unit tests
# again under AddressSanitizer + UndefinedBehaviorSanitizer. Set YB_SKIP_SANITIZERS=1 to skip that
# second pass, YB_TSAN=1 to add a ThreadSanitizer pass. Clang's thread-safety analysis runs over the
# master after the first pass (scripts/thread_safety.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
jobs=$(nproc)

echo "== build (RelWithDebInfo) =="
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DYB_BUILD_TESTS=ON -DYB_BUILD_BENCH=ON -DYB_SANITIZE=
cmake --build build -j"$jobs"
echo "== tests =="
ctest --test-dir build --output-on-failure -j"$jobs"
echo "== thread-safety analysis (clang) =="
scripts/thread_safety.sh
echo "== house rules: seams, docs of the present (scripts/check_house.py) =="
scripts/check_house.py

if [ "${YB_SKIP_SANITIZERS:-0}" != 1 ]; then
  echo "== build (ASan + UBSan) =="
  cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DYB_SANITIZE=address -DYB_BUILD_TESTS=ON -DYB_BUILD_BENCH=OFF \
    -DYB_PYTHON_PACKAGE_DIR="$PWD/build/python"
  cmake --build build-asan -j"$jobs"
  echo "== tests under ASan + UBSan =="
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir build-asan --output-on-failure -j"$jobs"
fi

if [ "${YB_TSAN:-0}" = 1 ]; then
  echo "== build (TSan) =="
  cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DYB_SANITIZE=thread -DYB_BUILD_TESTS=ON -DYB_BUILD_BENCH=OFF \
    -DYB_PYTHON_PACKAGE_DIR="$PWD/build/python"
  cmake --build build-tsan -j"$jobs"
  echo "== tests under TSan =="
  TSAN_OPTIONS=halt_on_error=1 ctest --test-dir build-tsan --output-on-failure -j"$jobs"
fi
