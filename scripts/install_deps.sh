#!/usr/bin/env bash
# Installs every Debian 12 package Yuebing needs to build, test and benchmark.
# `--build-only`: leaves out what only the tests and benchmarks use and that weighs most (Chromium
# for the dashboard's test, PyTorch, iperf3), as the container image's build stage does.
# Safe to run again; needs root (or sudo).
set -euo pipefail
BUILD_ONLY=0
[ "${1:-}" = "--build-only" ] && BUILD_ONLY=1
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
PKGS=(
  cmake ninja-build g++ make pkg-config git
  libgtest-dev libgmock-dev libbenchmark-dev
  libspdlog-dev libfmt-dev libxxhash-dev libcli11-dev
  libasio-dev libprotobuf-dev protobuf-compiler libyaml-cpp-dev libcpp-httplib-dev nlohmann-json3-dev libre2-dev libssl-dev
  python3 python3-dev python3-venv python3-pytest python3-pytest-xdist python3-numpy pybind11-dev iproute2 curl
  # clang: the sanitizer build, the thread-safety analysis, the fuzzers; its sanitizer runtimes;
  # llvm's llvm-symbolizer, which puts file and line into their reports.
  clang libclang-rt-14-dev llvm
  etcd-server etcd-client
  systemd
  python3-yaml python3-kubernetes
  libzmq3-dev cppzmq-dev libmsgpack-dev python3-zmq python3-msgpack
  # jemalloc, yb-master's allocator (tools/CMakeLists.txt says why).
  libjemalloc-dev
)
if [ "$BUILD_ONLY" = 0 ]; then
  PKGS+=(python3-torch iperf3 chromium)
fi
missing=()
for p in "${PKGS[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  $SUDO apt-get update -qq
  # Without the packages' recommendations: on a fresh Debian 12 they add 137 packages (42 MB to
  # fetch, 215 MB installed: avahi, CUPS helpers, udev, Qt, Samba's libraries, libtorch's headers)
  # that nothing here uses, on every CI run.
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
