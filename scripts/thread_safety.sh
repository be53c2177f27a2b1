#!/usr/bin/env bash
# Clang's thread-safety analysis (-Wthread-safety) over the master, HA and etcd client, the client, the
# RPC layer, the transfer engine and the SSD tier, whose locks all carry annotations (src/common/thread_annotations.h).
# GCC builds the project; clang only checks here.
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
# Every source of the modules whose locks carry annotations, tests left out, checked nproc at a time.
files=$(ls src/master/*.cc src/ha/*.cc src/etcd/*.cc src/client/*.cc src/rpc/*.cc src/transfer/*.cc src/transfer/*/*.cc src/storage/*.cc |
  grep -v '_test\.cc$')
# The flags the libraries are built with: cpp-httplib's (its TLS client), and spdlog's and fmt's as
# compiled libraries (without them, spdlog's header-only implementation is parsed in every file: 2.7 s
# of a file's 4 s here).
# shellcheck disable=SC2046  # pkg-config's flags, split as words
if echo "$files" | xargs -P "$(nproc)" -n 4 "$CXX" -std=c++20 -fsyntax-only -Wthread-safety -Werror=thread-safety \
  -DASIO_STANDALONE $(pkg-config --cflags cpp-httplib spdlog fmt) -DFMT_SHARED -Iinclude -Isrc -I"$GEN"; then
  echo "thread-safety analysis: clean ($(echo "$files" | wc -l) files)"
else
  exit 1
fi
