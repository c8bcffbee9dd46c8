# Bad input for the optimizer and SGD-variant knobs: a knob of another algorithm, H = 0,
# out-of-range values; each exits 2 naming the flag, before any worker starts.
source "$(dirname "$0")/common.bash"


expect_error "--outer-lr: applies to --algo diloco only" "$BIN" run --dataset "$SMALL" --steps 5 --batch 16 --db t.db --algo ssgd --outer-lr 0.5
expect_error "--outer-momentum: applies to --algo diloco" "$BIN" run --dataset "$SMALL" --steps 5 --batch 16 --db t.db --algo localsgd --outer-momentum 0.5
expect_error "--post-local: applies to --algo localsgd" "$BIN" run --dataset "$SMALL" --steps 5 --batch 16 --db t.db --algo cocod --post-local 10
expect_error "--delay: applies to --algo dasgd" "$BIN" run --dataset "$SMALL" --steps 5 --batch 16 --db t.db --algo cocod --delay 2
expect_error "--pull-alpha: applies to --algo overlap-local" "$BIN" run --dataset "$SMALL" --steps 5 --batch 16 --db t.db --algo dasgd --pull-alpha 0.2
expect_error "--bucket-mb: applies to --algo ssgd --overlap true" "$BIN" run --dataset "$SMALL" --steps 5 --batch 16 --db t.db --algo ssgd --bucket-mb 25
expect_error "--first-bucket-mb: applies to --algo ssgd --overlap true" "$BIN" run --dataset "$SMALL" --steps 5 --batch 16 --db t.db --algo ssgd --first-bucket-mb 1
# A knob of another algorithm given at its default value is refused too (it would be ignored).
expect_error "--period: applies to --algo localsgd" "$BIN" run --dataset "$SMALL" --steps 5 --batch 16 --db t.db --algo ssgd --period 4
expect_error "--delay: applies to --algo dasgd" "$BIN" run --dataset "$SMALL" --steps 5 --batch 16 --db t.db --algo localsgd --delay 0
expect_error "--dpsgd-delay: applies to --algo dpsgd" "$BIN" run --dataset "$SMALL" --steps 5 --batch 16 --db t.db --algo ssgd --dpsgd-delay 0
expect_error "--zero-bits: applies to --algo zero" "$BIN" run --dataset "$SMALL" --steps 5 --batch 16 --db t.db --algo dpsgd --zero-bits 32
expect_error "--period: must be in 1..1000000 \(got 0\)" "$BIN" run --dataset "$SMALL" --steps 5 --batch 16 --db t.db --algo diloco --period 0
expect_error "--period: must be in 1..1000000 \(got 0\)" "$BIN" run --dataset "$SMALL" --steps 5 --batch 16 --db t.db --algo cocod --period 0
expect_error "--delay: must be in 0..H" "$BIN" run --dataset "$SMALL" --steps 5 --batch 16 --db t.db --algo dasgd --period 4 --delay 5
expect_error "--beta1: applies to --optimizer adamw" "$BIN" run --dataset "$SMALL" --steps 5 --batch 16 --db t.db --beta1 0.8
expect_error "--momentum: applies to --optimizer sgd" "$BIN" run --dataset "$SMALL" --steps 5 --batch 16 --db t.db --optimizer adamw --momentum 0.9
expect_error "--nesterov: needs momentum" "$BIN" run --dataset "$SMALL" --steps 5 --batch 16 --db t.db --nesterov true
expect_error "--optimizer: unknown optimizer 'lamb'" "$BIN" run --dataset "$SMALL" --steps 5 --batch 16 --db t.db --optimizer lamb
expect_error "--lr-schedule: unknown schedule" "$BIN" run --dataset "$SMALL" --steps 5 --batch 16 --db t.db --lr-schedule linear
expect_error "--lr-step-every: must be at least 1" "$BIN" run --dataset "$SMALL" --steps 5 --batch 16 --db t.db --lr-schedule step
expect_error "--lr-scaling: unknown rule" "$BIN" run --dataset "$SMALL" --steps 5 --batch 16 --db t.db --lr-scaling cubic
expect_error "--outer-lr: must be in \(0, 1e\+12\] \(got 0\)" "$BIN" run --dataset "$SMALL" --steps 5 --batch 16 --db t.db --algo diloco --outer-lr 0
[ ! -e t.db ] || fail "a rejected run created the database"
echo PASS
