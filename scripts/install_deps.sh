#!/usr/bin/env bash
# Installs every Debian 12 package Yuebing needs to build, test and benchmark.
# Safe to run again; needs root (or sudo).
set -euo pipefail
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
PKGS=(
  cmake g++ make pkg-config git
  libgtest-dev libgmock-dev libbenchmark-dev
  libspdlog-dev libfmt-dev libxxhash-dev libcli11-dev
  libasio-dev libprotobuf-dev protobuf-compiler libyaml-cpp-dev libcpp-httplib-dev nlohmann-json3-dev libre2-dev libssl-dev
  python3 python3-dev python3-pytest python3-numpy python3-torch pybind11-dev iproute2 iperf3 curl
  clang
  etcd-server etcd-client
  systemd
  python3-yaml python3-kubernetes
  libzmq3-dev cppzmq-dev libmsgpack-dev python3-zmq python3-msgpack
  chromium
)
missing=()
for p in "${PKGS[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi
