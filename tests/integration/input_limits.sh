# Input limits: values that used to hang, overflow, crash or die
# with a bare std::bad_alloc are refused with exit 2 and one message naming the flag or
# file, the value and the range; nothing is allocated or written first.
source "$(dirname "$0")/common.bash"

R=("$BIN" run --db t.db --steps 10 --batch 16 --dataset "$SMALL")
# Ranges, the same for flags and config files (docs/cli.md).
expect_error "--seed: must be a non-negative integer \(got -1\)" "${R[@]}" --seed -1
expect_error "--epochs: must be in \[0, 1e\+06\] \(got 1e\+18\)" "$BIN" run --db t.db --dataset "$SMALL" --epochs 1e18
expect_error "--batch: must be in 1\.\.16777216 \(got 3000000000\)" "${R[@]}" --batch 3000000000
expect_error "--lr: must be > 0 \(got nan\)" "${R[@]}" --lr nan
expect_error "--weight-decay: must be in \[0, 1000\] \(got inf\)" "${R[@]}" --weight-decay inf
printf 'batch = 3000000000\n' > huge.toml
expect_error "--batch: must be in 1\.\.16777216 \(got 3000000000\)" "$BIN" run --db t.db --config huge.toml --steps 2
printf 'seed = -1\n' > neg.toml
expect_error "key 'seed' has the wrong type" "$BIN" run --db t.db --config neg.toml --steps 2
# Network and stragglers.
expect_error "--bandwidth 1bps: .* outside the range of an emulated link, 1 kbit/s to 10 Tbit/s" "${R[@]}" --bandwidth 1bps
expect_error "--bandwidth 1e-30bps: .* outside the range" "${R[@]}" --bandwidth 1e-30bps
expect_error "--latency 1e20s: must be at most 60 s" "${R[@]}" --bandwidth 1Gbps --latency 1e20s
expect_error "delay 1e30ms: must be at most 3600 s" "${R[@]}" --straggler fixed:rank=0,delay=1e30ms
# Config files: a 50,000-part dotted key (stack overflow in the TOML parser), duplicate keys.
python3 -c "print('a' + '.a' * 50000 + ' = 1')" > dotted.toml
expect_error "dotted.toml:1: more than 64 dots on one line" "$BIN" run --db t.db --config dotted.toml
printf '{"batch": 8, "batch": 64}\n' > dup.json
expect_error "dup.json: key 'batch' appears more than once" "$BIN" run --db t.db --config dup.json
[ ! -e t.db ] || fail "a refused run created the database"
# Memory: a batch larger than the shard is refused before its buffer is allocated; a LIBSVM
# file with one stray index of 2e9 (a 48 GB model in 6 copies) is refused by the loader.
expect_error "--batch 10000000 is larger than each worker's shard" "${R[@]}" --batch 10000000
avail_kb=$(awk '/^MemAvailable:/ {print $2}' /proc/meminfo)
if [ "${avail_kb:-0}" -lt 48000000 ]; then
  printf '1 1:1 3:0.5\n-1 2:1\n1 1:0.5\n-1 2000000000:1\n' > stray.svm
  for _ in $(seq 1 20); do printf '1 1:1\n-1 2:1\n' >> stray.svm; done
  start=$(date +%s)
  expect_error "stray.svm:4: feature index 2000000000 makes a model of 2000000000 features x 1 output\(s\): 8 GB per copy" \
    "$BIN" run --db t.db --steps 2 --batch 2 --dataset libsvm:stray.svm
  [ $(($(date +%s) - start)) -lt 20 ] || fail "the refusal took more than 20 s"
else
  echo "skip: this machine has the memory for a 2e9-feature model"
fi
echo "input limits: ok"
