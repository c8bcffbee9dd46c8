# Bad input for the optimizer and SGD-variant knobs: a knob of another algorithm, H = 0,
# out-of-range values; each exits 2 naming the flag, before any worker starts.
source "$(dirname "$0")/common.bash"

expect_error() {
  local pattern="$1"
  shift
  set +e
  "$BIN" run --dataset "$SMALL" --steps 5 --batch 16 --db t.db "$@" > out.txt 2> err.txt
  local rc=$?
  set -e
  [ $rc -eq 2 ] || { cat out.txt err.txt; fail "expected exit 2, got $rc: $*"; }
  grep -Eq -e "$pattern" err.txt || { cat err.txt; fail "stderr does not match '$pattern': $*"; }
  echo "ok: $* -> $(head -n 1 err.txt)"
}

expect_error "--outer-lr: applies to --algo diloco only" --algo ssgd --outer-lr 0.5
expect_error "--outer-momentum: applies to --algo diloco" --algo localsgd --outer-momentum 0.5
expect_error "--post-local: applies to --algo localsgd" --algo cocod --post-local 10
expect_error "--delay: applies to --algo dasgd" --algo cocod --delay 2
expect_error "--pull-alpha: applies to --algo overlap-local" --algo dasgd --pull-alpha 0.2
expect_error "--bucket-mb: applies to --algo ssgd --overlap true" --algo ssgd --bucket-mb 25
# A knob of another algorithm given at its default value is refused too (it would be ignored).
expect_error "--period: applies to --algo localsgd" --algo ssgd --period 4
expect_error "--delay: applies to --algo dasgd" --algo localsgd --delay 0
expect_error "--dpsgd-delay: applies to --algo dpsgd" --algo ssgd --dpsgd-delay 0
expect_error "--zero-bits: applies to --algo zero" --algo dpsgd --zero-bits 32
expect_error "--period: must be at least 1" --algo diloco --period 0
expect_error "--period: must be at least 1" --algo cocod --period 0
expect_error "--delay: must be in 0..H" --algo dasgd --period 4 --delay 5
expect_error "--beta1: applies to --optimizer adamw" --beta1 0.8
expect_error "--momentum: applies to --optimizer sgd" --optimizer adamw --momentum 0.9
expect_error "--nesterov: needs momentum" --nesterov true
expect_error "--optimizer: unknown optimizer 'lamb'" --optimizer lamb
expect_error "--lr-schedule: unknown schedule" --lr-schedule linear
expect_error "--lr-step-every: must be at least 1" --lr-schedule step
expect_error "--lr-scaling: unknown rule" --lr-scaling cubic
expect_error "--outer-lr: must be > 0" --algo diloco --outer-lr 0
[ ! -e t.db ] || fail "a rejected run created the database"
echo PASS
