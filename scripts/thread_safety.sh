#!/usr/bin/env bash
# Clang's thread-safety analysis (-Wthread-safety) over the master, its log and etcd client, the client's
# membership, leader following and device-memory path, whose locks all carry annotations
# (src/common/thread_annotations.h). GCC builds the project; clang only checks here.
set -euo pipefail
cd "$(dirname "$0")/.."
CXX=${YB_CLANG:-clang++}
if ! command -v "$CXX" >/dev/null; then
  echo "thread_safety.sh: $CXX not found (scripts/install_deps.sh installs clang)" >&2
  exit 1
fi
# The master includes generated protobuf headers: those of the build that test.sh made first.
GEN="${YB_BUILD_DIR:-build}/proto"
if [ ! -f "$GEN/metalog.pb.h" ]; then
  echo "thread_safety.sh: $GEN/metalog.pb.h not found: build first (cmake --build build)" >&2
  exit 1
fi
status=0
for f in src/master/*.cc src/ha/*.cc src/etcd/*.cc src/client/device_memory.cc src/client/client_io.cc src/client/membership.cc \
  src/client/leader_follower.cc; do
  case "$f" in *_test.cc) continue ;; esac
  # shellcheck disable=SC2046  # the flags cpp-httplib is built with (its TLS client), split as words
  "$CXX" -std=c++20 -fsyntax-only -Wthread-safety -Werror=thread-safety -DASIO_STANDALONE \
    $(pkg-config --cflags cpp-httplib) -Iinclude -Isrc -I"$GEN" "$f" || status=1
done
if [ "$status" = 0 ]; then echo "thread-safety analysis: clean"; fi
exit "$status"
