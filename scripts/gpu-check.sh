#!/usr/bin/env bash
# The GPU check of dsgd-bench (docs/gpu.md), unattended, on a fresh machine with an NVIDIA GPU
# whose working tree is a copy of this repository. Budget: under 5 minutes on one H200 (an
# estimate: it has not run on a GPU yet). Steps, each with its own time limit; a failed step is
# reported in the table and the script goes on; the exit code is 1 if any step failed.
#   1. dependencies: scripts/install-deps.sh --tests (the GPU tests need GoogleTest), which runs
#      apt only when a package is missing (that needs Debian's apt mirrors; with no network a
#      missing package fails this step and the build says what);
#      the CUDA toolkit with cuBLAS, cuDNN and NCCL must be installed already (/usr/local/cuda).
#   2. build: $BUILD, default build-gpu/ (Release, CUDA for $DSGD_CUDA_ARCH, default 90 = H100/H200), only the
#      targets below, on every core.
#   3. GPU tests: test_cuda_kernels, test_vector_ops_cuda (every kernel against the CPU code, gradients
#      against finite differences; none may be skipped here); test_gpu_info, test_nccl_host and
#      test_nccl_communicator (host-side logic, also run in CI).
#   4. all-reduce sweep: `dsgd-bench calibrate --backend nccl` on every visible GPU (one rank per
#      GPU; buffers in GPU memory), nccl-tests' table (size, time, algbw, busbw) per collective.
#      With one GPU there is one rank (NCCL runs one rank per GPU) and the sweep, which needs a
#      peer, measures nothing: the step then checks only that the backend starts (MPI bootstrap,
#      ncclCommInitRank on 1 rank, device buffers) and the compute profile; it cannot show a link
#      bandwidth, busbw or the cost of a real ring (2+ GPUs: the NVLink/PCIe ring of the machine).
#   5. GPT step benchmark: bench_gpu_step at GPT-2 small (L12 d768 s1024 b8), TF32 and FP32,
#      with MFU against the GEMM peak measured on the same GPU at the same precision.
#      ResNet on the GPU is not implemented (the cuDNN layers exist and are tested, the model
#      does not): reported as such.
# Output: one table on stdout, and every log and JSON under $OUT (default ./gpu-check-out).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-./gpu-check-out}
mkdir -p "$OUT"
ARCH=${DSGD_CUDA_ARCH:-90}
BUILD=${BUILD:-build-gpu}  # the build directory (an existing one is reused, incrementally)
JOBS=$(nproc)
START=$(date +%s)
declare -a ROWS=()
FAILED=0

row() { ROWS+=("$(printf '%-34s %-8s %s' "$1" "$2" "$3")"); }
step() {  # step NAME LIMIT_S LOG COMMAND...: runs it with a time limit; returns its status
  local name=$1 limit=$2 log=$3
  shift 3
  echo "gpu-check: $name (limit ${limit}s) ..." >&2
  timeout --kill-after=10 "$limit" "$@" >"$log" 2>&1
  local rc=$?
  [[ $rc == 124 || $rc == 137 ]] && echo "gpu-check: $name ran past ${limit}s" >>"$log"
  return $rc
}
json_field() { sed -n "s/.*\"$2\": \"\{0,1\}\([^,\"}]*\)\"\{0,1\}[,}].*/\1/p" "$1" | head -1; }

# ---- 1. dependencies ---------------------------------------------------------------------------
if step "dependencies" 240 "$OUT/deps.log" bash scripts/install-deps.sh --tests; then
  row "dependencies" ok "$(tail -1 "$OUT/deps.log")"
else
  row "dependencies" FAILED "see $OUT/deps.log (apt needs a network; the build below may still work)"
  FAILED=1
fi
GPUS=0
if command -v nvidia-smi >/dev/null; then
  nvidia-smi >"$OUT/nvidia-smi.txt" 2>&1
  GPUS=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | wc -l)
  row "GPUs (nvidia-smi)" "$GPUS" "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)"
else
  row "GPUs (nvidia-smi)" "none" "nvidia-smi not found"
fi

# ---- 2. build ----------------------------------------------------------------------------------
TARGETS=(dsgd-bench test_cuda_kernels test_vector_ops_cuda test_gpu_info test_nccl_host test_nccl_communicator bench_gpu_step)
if step "configure" 120 "$OUT/configure.log" cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA_ARCHITECTURES="$ARCH" -DDSGD_BUILD_TESTS=ON -DDSGD_BUILD_BENCH=ON &&
  grep -q "CUDA + cuBLAS + cuDNN + NCCL.*: found" "$OUT/configure.log" &&
  step "build" 240 "$OUT/build.log" cmake --build "$BUILD" -j"$JOBS" --target "${TARGETS[@]}"; then
  row "build (sm_$ARCH, $JOBS jobs)" ok "$(($(date +%s) - START)) s since start"
else
  row "build (sm_$ARCH)" FAILED "see $OUT/configure.log and $OUT/build.log"
  FAILED=1
fi

# ---- 3. GPU tests ------------------------------------------------------------------------------
for t in test_cuda_kernels test_vector_ops_cuda test_gpu_info test_nccl_host test_nccl_communicator; do
  if [[ ! -x "$BUILD"/tests/$t ]]; then
    row "$t" FAILED "not built"
    FAILED=1
    continue
  fi
  step "$t" 120 "$OUT/$t.log" "$BUILD"/tests/$t --gtest_brief=1
  rc=$?
  passed=$(sed -n 's/.*\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$OUT/$t.log")
  skipped=$(sed -n 's/.*\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$OUT/$t.log")
  if [[ $rc == 0 && -z $skipped ]]; then
    row "$t" ok "${passed:-0} passed"
  elif [[ $rc == 0 ]]; then
    row "$t" SKIPPED "${passed:-0} passed, $skipped skipped (no usable GPU?): $(grep -m1 'no CUDA device' "$OUT/$t.log")"
    FAILED=1
  else
    row "$t" FAILED "see $OUT/$t.log: $(grep -c '^\[  FAILED  \]' "$OUT/$t.log") failed"
    FAILED=1
  fi
done

# ---- 4. all-reduce sweep through the backend table --------------------------------------------
RANKS=$((GPUS > 0 ? GPUS : 1))
if step "calibrate --backend nccl" 150 "$OUT/calibrate.log" "$BUILD"/dsgd-bench calibrate --backend nccl \
  --workers "$RANKS" --min-size 8 --max-size 256MiB --reps 5 --db "$OUT/gpu-check.db"; then
  if [[ $RANKS == 1 ]]; then
    row "all-reduce sweep (1 GPU)" ok "bootstrap + NCCL init on 1 rank only: no collective rows (see header)"
  else
    row "all-reduce sweep ($RANKS GPUs)" ok "$(grep -m1 -A0 'allreduce' "$OUT/calibrate.log" | head -c 60)...; table in $OUT/calibrate.log"
  fi
else
  row "all-reduce sweep ($RANKS rank(s))" FAILED "see $OUT/calibrate.log"
  FAILED=1
fi

# ---- 5. step benchmarks ------------------------------------------------------------------------
for prec in tf32 fp32; do
  js="$OUT/gpt2-small-$prec.json"
  if step "GPT-2 small step ($prec)" 150 "$js" "$BUILD"/bench_gpu_step --layers 12 --d-model 768 --heads 12 \
    --seq 1024 --batch 8 --vocab 256 --steps 10 --warmup 3 --precision "$prec"; then
    row "GPT-2 small L12 d768 s1024 b8 $prec" ok "$(printf 'step %s s, %s tok/s, %s TFLOP/s of %s peak, MFU %s' \
      "$(json_field "$js" step_median_s)" "$(json_field "$js" tokens_per_s)" "$(json_field "$js" model_tflops)" \
      "$(json_field "$js" peak_tflops)" "$(json_field "$js" mfu)")"
  else
    row "GPT-2 small step ($prec)" FAILED "see $js"
    FAILED=1
  fi
done
row "ResNet-18 CIFAR b128 step" "n/a" "not implemented on the GPU yet (docs/gpu.md)"

# ---- the table ---------------------------------------------------------------------------------
echo
printf '%-34s %-8s %s\n' "check" "result" "figures / where"
printf '%s\n' "${ROWS[@]}"
echo "gpu-check: $(($(date +%s) - START)) s in all; logs in $OUT"
exit $FAILED
