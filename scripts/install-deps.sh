#!/usr/bin/env bash
# Installs every Debian package dsgd-bench needs to build, run and test (idempotent).
# Run as root on Debian 12. Skips apt when everything is already installed.
#   --bench-extras   also what the side-by-side benchmarks compare against: PyTorch 1.13
#                    (bench/bench_resnet.py, bench/bench_gpt.py) and BLIS
#                    (bench/bench_resnet_backends.sh). Not needed to build or test.
# libdnnl-dev (oneDNN) is optional for the build (cmake -DDSGD_WITH_DNNL=OFF, or absent: every
# convolution on im2col + SGEMM) but installed by default: it is the faster convolution backend
# for most ResNet layers (workloads/layers/conv2d_dnnl.cpp).
# iproute2 (ip, tc): scripts/netns-cluster.sh and tests/integration/netns_two_hosts.sh.
# clang-format: the formatting check of scripts/test.sh. qemu-user: its portable pass on an
# emulated CPU without AVX. clang and libclang-rt-14-dev (libFuzzer, the sanitizer runtimes):
# the fuzz targets of tests/fuzz, which scripts/test.sh runs briefly (scripts/fuzz.sh).
set -euo pipefail

packages=(
  cmake g++ make pkg-config git ca-certificates
  libcli11-dev libfmt-dev nlohmann-json3-dev libtomlplusplus-dev
  libsqlite3-dev sqlite3 zlib1g-dev
  mpich libmpich-dev
  libopenblas-dev libeigen3-dev libdnnl-dev
  libgtest-dev libbenchmark-dev
  dataset-fashion-mnist fortunes
  jq iproute2 clang-format qemu-user clang libclang-rt-14-dev
  chromium python3
)
if [ "${1:-}" = "--bench-extras" ]; then
  packages+=(python3-torch python3-torchvision libblis-dev)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
