# Bad input for the part-3 variants' knobs (palsgd, mtdao, osp, oldsgd, dreamddp's filling) and the
# learning rate: a knob of another algorithm, out-of-range or malformed values, an explicit lr of 0;
# each exits 2 naming the flag, before any worker starts and before the database is created.
source "$(dirname "$0")/common.bash"

base=(run --dataset "$SMALL" --steps 5 --batch 16 --db t.db)
expect_error "--pull-prob: applies to --algo palsgd" "$BIN" "${base[@]}" --algo localsgd --pull-prob 0.2
expect_error "--pull-alpha: applies to --algo overlap-local\|palsgd" "$BIN" "${base[@]}" --algo localsgd --pull-alpha 0.2
expect_error "--delay: applies to --algo dasgd\|palsgd" "$BIN" "${base[@]}" --algo cocod --delay 1
expect_error "--pull-prob: must be in \[0, 1\]" "$BIN" "${base[@]}" --algo palsgd --pull-prob 1.5
expect_error "--pull-alpha: must be in \[0, 1\]" "$BIN" "${base[@]}" --algo palsgd --pull-alpha -0.1
expect_error "--delay: must be in 0..H" "$BIN" "${base[@]}" --algo palsgd --period 4 --delay 5
expect_error "--period-m: applies to --algo mtdao" "$BIN" "${base[@]}" --algo localsgd --period-m 8
expect_error "--period-v: applies to --algo mtdao" "$BIN" "${base[@]}" --algo ssgd --period-v 16
expect_error "--betas: applies to --algo mtdao" "$BIN" "${base[@]}" --algo diloco --betas 0.9,0.99
expect_error "--betas: 'x' is not a number" "$BIN" "${base[@]}" --algo mtdao --betas 0.9,x
expect_error "--betas: each decay must be in \[0, 1\)" "$BIN" "${base[@]}" --algo mtdao --betas 0.9,1
expect_error "--period-m: must be in 0..1000000" "$BIN" "${base[@]}" --algo mtdao --period-m -2
expect_error "--period-v: applies to --optimizer adamw only" "$BIN" "${base[@]}" --algo mtdao --optimizer sgd --period-v 4
expect_error "--beta1: is replaced by --betas" "$BIN" "${base[@]}" --algo mtdao --betas 0.9,0.99 --beta1 0.8
expect_error "--momentum: is replaced by --betas" "$BIN" "${base[@]}" --algo mtdao --optimizer sgd --betas 0.9,0.99 --momentum 0.9
expect_error "--compress: applies to the all-reduce variants .* not mtdao" "$BIN" "${base[@]}" --algo mtdao --compress topk:0.1
expect_error "--osp-fraction: applies to --algo osp" "$BIN" "${base[@]}" --algo ssgd --osp-fraction 0.5
expect_error "--osp-select: applies to --algo osp" "$BIN" "${base[@]}" --algo ssgd --osp-select static
expect_error "--osp-fraction: must be in \(0, 1\]" "$BIN" "${base[@]}" --algo osp --osp-fraction 0
expect_error "--osp-fraction: must be in \(0, 1\]" "$BIN" "${base[@]}" --algo osp --osp-fraction 1.5
expect_error "--osp-select: unknown rule 'top'" "$BIN" "${base[@]}" --algo osp --osp-select top
expect_error "--compress: applies to the all-reduce variants .* not osp" "$BIN" "${base[@]}" --algo osp --compress qsgd:bits=4
expect_error "--period: applies to --algo" "$BIN" "${base[@]}" --algo osp --period 2
expect_error "--gossip-overlap: applies to --algo oldsgd" "$BIN" "${base[@]}" --algo dpsgd --gossip-overlap false
expect_error "--period: applies to --algo .*oldsgd" "$BIN" "${base[@]}" --algo dpsgd --period 2
expect_error "--period: must be in 1..1000000 \(got 0\)" "$BIN" "${base[@]}" --algo oldsgd --period 0
expect_error "--compress: applies to the all-reduce variants .* not oldsgd" "$BIN" "${base[@]}" --algo oldsgd --compress topk:0.1
expect_error "--dreamddp-fill: applies to --algo dreamddp" "$BIN" "${base[@]}" --algo localsgd --dreamddp-fill false
expect_error "--lr must be positive \(got 0\)" "$BIN" "${base[@]}" --lr 0
printf 'lr = 0.0\n' > zero.toml
expect_error "zero.toml: key 'lr' must be positive" "$BIN" "${base[@]}" --config zero.toml
[ ! -e t.db ] || fail "a rejected run created the database"
echo PASS
