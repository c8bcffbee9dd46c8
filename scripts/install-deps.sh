#!/usr/bin/env bash
# Installs the Debian packages dsgd-bench needs (idempotent). Run as root on Debian 12.
# Skips apt when everything is already installed.
#   (no option)      what building and running dsgd-bench and dsgd-tune needs
#                    (scripts/quickstart.sh, scripts/build.sh): compiler, libraries, MPI,
#                    BLAS, and the datasets the quick start, the examples and the smoke suite
#                    use (Fashion-MNIST, fortunes).
#   --tests          also what scripts/test.sh needs: GoogleTest and Google Benchmark, python3,
#                    python3-protobuf (tools/chakra_trace.py: the Chakra trace tests),
#                    PyTorch 1.13 (python3-torch: tests/python, the tests of the cost-file
#                    exporters tools/export_profile.py and tools/export_fabric.py), jq,
#                    chromium (the HTML report tests), iproute2 (ip, tc:
#                    scripts/netns-cluster.sh and tests/integration/netns_two_hosts.sh),
#                    clang-format (the formatting check), qemu-user (the portable pass on an
#                    emulated CPU without AVX), clang and libclang-rt-14-dev (libFuzzer and the
#                    sanitizer runtimes: the fuzz targets of tests/fuzz, scripts/fuzz.sh).
#   --bench-extras   also what the side-by-side benchmarks compare against: PyTorch 1.13
#                    (bench/bench_resnet.py, bench/bench_gpt.py; --tests installs it too),
#                    torchvision and BLIS
#                    (bench/bench_resnet_backends.sh). Not needed to build or test.
# The options combine (--tests --bench-extras).
# Without libgtest-dev the build configures without the tests, and without libbenchmark-dev
# without the Google Benchmark programs of bench/ (CMake prints "not found" for each).
# libprotobuf-dev and protobuf-compiler are optional for the build (cmake -DDSGD_WITH_PROTOBUF=OFF,
# or absent: --workload chakra:FILE is refused, saying why) but installed by default: they read
# Chakra execution traces (docs/chakra.md). python3-protobuf (--tests) writes the test traces
# (tools/chakra_trace.py).
# libdnnl-dev (oneDNN) is optional for the build (cmake -DDSGD_WITH_DNNL=OFF, or absent: every
# convolution on im2col + SGEMM) but installed by default: it is the faster convolution backend
# for most ResNet layers (workloads/layers/conv2d_dnnl.cpp).
set -euo pipefail

packages=(
  cmake g++ make pkg-config git ca-certificates
  libcli11-dev libfmt-dev nlohmann-json3-dev libtomlplusplus-dev
  libsqlite3-dev sqlite3 zlib1g-dev
  mpich libmpich-dev
  libopenblas-dev libeigen3-dev libdnnl-dev
  libprotobuf-dev protobuf-compiler
  dataset-fashion-mnist fortunes
)
for arg in "$@"; do
  case "$arg" in
    --tests)
      packages+=(libgtest-dev libbenchmark-dev python3 python3-torch python3-protobuf jq chromium iproute2
                 clang-format qemu-user clang libclang-rt-14-dev) ;;
    --bench-extras)
      packages+=(python3-torch python3-torchvision libblis-dev) ;;
    *)
      echo "install-deps: unknown option '$arg' (use --tests, --bench-extras)" >&2
      exit 2 ;;
  esac
done

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
