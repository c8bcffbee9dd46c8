# Bad input for lasgd, hogwild, pdasgd and --compress adatopk: a knob given to another
# algorithm, a value out of range, an optimizer the variant cannot apply, an unusable
# --timing-only. Each fails with one message naming the flag (exit 2), and nothing is stored.
source "$(dirname "$0")/common.bash"

R=("$BIN" run --db t.db --steps 5 --batch 16 --dataset "$SMALL")
expect_error "--local-threads: applies to --algo lasgd\|hogwild only \(got --algo localsgd\)" "${R[@]}" --algo localsgd --local-threads 2
expect_error "--local-threads: applies to --algo lasgd\|hogwild only" "${R[@]}" --algo ssgd --local-threads 1
expect_error "--local-threads: must be in 1..64 \(got 0\)" "${R[@]}" --algo lasgd --local-threads 0
expect_error "--local-threads: must be in 1..64" "${R[@]}" --algo hogwild --local-threads 65
expect_error "--across: applies to --algo hogwild only" "${R[@]}" --algo dpsgd --across gossip
expect_error "--across: unknown exchange 'allreduce'" "${R[@]}" --algo hogwild --across allreduce
expect_error "--momentum: must be 0 with --algo hogwild" "${R[@]}" --algo hogwild --momentum 0.9
expect_error "--optimizer: adamw does not apply to --algo hogwild" "${R[@]}" --algo hogwild --optimizer adamw
expect_error "--ps-mode: applies to --algo ps only \(got --algo hogwild\)" "${R[@]}" --algo hogwild --ps-mode sync
expect_error "--period: applies to --algo .*lasgd.* only \(got --algo hogwild" "${R[@]}" --algo hogwild --period 4
expect_error "--compress: .*not hogwild" "${R[@]}" --algo hogwild --compress topk:0.1
expect_error "--compress: .*not lasgd: its model average is a plain all-reduce" "${R[@]}" --algo lasgd --compress topk:0.1
expect_error "--pd-staleness: applies to --algo pdasgd only" "${R[@]}" --algo ssgd --pd-staleness 1
expect_error "--pd-staleness: must be in 0..1000 \(got -1\)" "${R[@]}" --algo pdasgd --pd-staleness -1
# Each forward pass in flight holds a workload instance's activations: the memory preflight
# counts S + 1 of them and says so, before allocating any.
expect_error "for --batch 256 on 1002 workload instances\)" "$BIN" run --workload resnet \
  --dataset "synthetic:shape=3x32x32,classes=10,n=512,test=64" --batch 256 --steps 2 --db t.db --algo pdasgd \
  --pd-staleness 1000
grep -q "hint: .*or fewer workload instances per worker (1002 now: --local-threads, --pd-staleness + 1)" err.txt ||
  { cat err.txt; fail "the memory refusal does not say that the workload instances multiply the buffers"; }
expect_error "--compress adatopk:budget=0: budget must be in \(0, 1\]" "${R[@]}" --compress adatopk:budget=0
expect_error "--compress adatopk:budget=2: budget must be in \(0, 1\]" "${R[@]}" --compress adatopk:budget=2
expect_error "--compress adatopk:x: 'x' is not a number for budget" "${R[@]}" --compress adatopk:x
[[ ! -f t.db || "$(sqlite3 t.db 'SELECT count(*) FROM runs')" == 0 ]] || fail "a refused run was stored"
rm -f t.db
expect_error "--timing-only models .* only \(got hogwild\)" "$BIN" run --db t.db --backend sim --workers 2 --timing-only true \
  --algo hogwild --steps 5 --dataset "$SMALL"
expect_error "--timing-only models .* only \(got ssgd with --compress\)" "$BIN" run --db t.db --backend sim --workers 2 \
  --timing-only true --compress topk:0.1 --steps 5 --dataset "$SMALL"
# --timing-only is refused before the database is opened: not even an empty file.
[ ! -e t.db ] || fail "a refused --timing-only run created the database"
echo PASS
