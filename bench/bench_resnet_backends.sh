#!/bin/bash
# Convolution backend and BLAS choice by measurement (see bench_resnet_backends.cpp): builds
# the program twice, against OpenBLAS (+ oneDNN) and against BLIS, and runs both single-threaded.
# Usage: bench/bench_resnet_backends.sh [REPS]   (from the repository root; writes to /tmp)
set -euo pipefail
cd "$(dirname "$0")/.."
reps="${1:-5}"
out=$(mktemp -d)
flags=(-std=c++20 -O3 -march=native -I. -I/usr/include/x86_64-linux-gnu/openblas-pthread)
g++ "${flags[@]}" -DDSGD_BENCH_DNNL bench/bench_resnet_backends.cpp workloads/layers/conv2d.cpp \
  -o "$out/conv_openblas" -lopenblas -ldnnl
# conv2d.cpp sizes its (single-threaded here) loops with OpenBLAS's thread count: 1 for BLIS.
echo 'extern "C" int openblas_get_num_threads() { return 1; }' > "$out/one_thread.cpp"
g++ "${flags[@]}" bench/bench_resnet_backends.cpp workloads/layers/conv2d.cpp "$out/one_thread.cpp" \
  -o "$out/conv_blis" /usr/lib/x86_64-linux-gnu/libblis.so.4
OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 DNNL_VERBOSE=0 "$out/conv_openblas" "$reps" openblas
BLIS_NUM_THREADS=1 OMP_NUM_THREADS=1 "$out/conv_blis" "$reps" blis
rm -rf "$out"
