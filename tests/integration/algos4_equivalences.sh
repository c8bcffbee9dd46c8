# Equivalences of lasgd, hogwild, pdasgd and --compress adatopk (docs/algorithms.md), on MPI
# ranks and on the simulator (same seed):
#  - lasgd --local-threads 1 = localsgd, bit-identical (2 and 4 MPI ranks; 4 simulated workers);
#  - hogwild --local-threads 1 --across ps = ps --ps-mode async (2 MPI ranks: 1 worker + 1
#    server; 4 simulated: 3 + 1), and --across gossip = dpsgd (2 MPI ranks; 4 simulated, ring);
#  - pdasgd --pd-staleness 0 = ssgd (2 and 4 MPI ranks; 4 simulated), and with S = 2 each
#    step stores staleness min(2, t) and the model differs; with S ≥ 1 the forward thread (MPI)
#    equals the simulator's inline forward passes bit for bit (SVM S = 2; ResNet-8 S = 1 with
#    BatchNorm and augmentation, and its evaluated accuracy);
#  - adatopk:budget=ρ on uniform links = topk:ρ (2 MPI ranks; 4 simulated), with topk's bytes;
#    on hier:2x2 with a 10x slower inter-group link the bytes per step follow the two-level
#    formula and the result differs from topk;
#  - with T = 2 threads, the simulator reproduces a run bit for bit (lasgd, hogwild), stores
#    the lockstep staleness (T−1)/2 = 0.5, and counts T·n·batch samples per step.
source "$(dirname "$0")/common.bash"

common=(--dataset "$SMALL" --steps 30 --batch 32 --lr 0.05 --seed 11 --db t.db --eval-every 10)
run() {
  local out="$1"
  shift
  "$BIN" run "${common[@]}" "$@" --save-params "$out" > "$out.txt" 2>&1 || { cat "$out.txt"; fail "run failed: $*"; }
}
same() { cmp "$1" "$2" || fail "$3"; }

"$BIN" run --workers 1 --algo ssgd "${common[@]}" > prof.out || fail "profile run failed"
sim=(--backend sim --profile-from "$(last_run_id prof.out)" --bandwidth 1Gbps --latency 50us)

# lasgd T = 1 = localsgd
for n in 2 4; do
  run "local$n.bin" --workers $n --algo localsgd --period 4
  run "lasgd$n.bin" --workers $n --algo lasgd --period 4 --local-threads 1
  same "local$n.bin" "lasgd$n.bin" "lasgd with one thread differs from localsgd on $n MPI ranks"
done
run slocal.bin --workers 4 --algo localsgd --period 4 "${sim[@]}"
run slasgd.bin --workers 4 --algo lasgd --period 4 --local-threads 1 "${sim[@]}"
same slocal.bin slasgd.bin "lasgd with one thread differs from localsgd on 4 simulated workers"

# hogwild T = 1 = ps async / dpsgd
run ps.bin --workers 2 --algo ps --ps-mode async
run hps.bin --workers 2 --algo hogwild --across ps --local-threads 1
same ps.bin hps.bin "hogwild --across ps with one thread differs from ps async (2 MPI ranks)"
run dp.bin --workers 2 --algo dpsgd
run hdp.bin --workers 2 --algo hogwild --across gossip --local-threads 1
same dp.bin hdp.bin "hogwild --across gossip with one thread differs from dpsgd (2 MPI ranks)"
run sps.bin --workers 4 --algo ps --ps-mode async "${sim[@]}"
run shps.bin --workers 4 --algo hogwild --across ps "${sim[@]}"
same sps.bin shps.bin "hogwild --across ps with one thread differs from ps async (4 simulated workers)"
run sdp.bin --workers 4 --algo dpsgd --topology ring "${sim[@]}"
run shdp.bin --workers 4 --algo hogwild --across gossip --topology ring "${sim[@]}"
same sdp.bin shdp.bin "hogwild --across gossip with one thread differs from dpsgd (4 simulated workers)"

# pdasgd S = 0 = ssgd
for n in 2 4; do
  run "ssgd$n.bin" --workers $n --algo ssgd
  run "pd$n.bin" --workers $n --algo pdasgd --pd-staleness 0
  same "ssgd$n.bin" "pd$n.bin" "pdasgd with staleness 0 differs from ssgd on $n MPI ranks"
done
run sssgd.bin --workers 4 --algo ssgd "${sim[@]}"
run spd.bin --workers 4 --algo pdasgd "${sim[@]}"
same sssgd.bin spd.bin "pdasgd with staleness 0 differs from ssgd on 4 simulated workers"
run pd2.bin --workers 2 --algo pdasgd --pd-staleness 2
if cmp -s pd2.bin ssgd2.bin; then fail "pdasgd with staleness 2 should differ from ssgd"; fi
P=$(last_run_id pd2.bin.txt)
bad=$(sql t.db "SELECT count(*) FROM steps WHERE run_id=$P AND staleness IS NOT min(2, step)")
[[ "$bad" == 0 ]] || fail "pdasgd: $bad steps whose stored staleness is not min(2, t)"
# The forward thread (MPI) and the simulator's inline passes compute the same numbers, also on
# ResNet-8 with BatchNorm and augmentation (the instances hand on their running statistics and
# augmentation counter).
run spd2.bin --workers 2 --algo pdasgd --pd-staleness 2 "${sim[@]}"
same pd2.bin spd2.bin "pdasgd S=2: 2 MPI ranks (forward thread) differ from 2 simulated workers (inline)"
resnet=(--workload resnet --model resnet8 --dataset "synthetic:shape=3x8x8,classes=4,n=256,test=64,noise=0.3"
  --augment true --steps 13 --batch 8 --lr 0.05 --momentum 0.9 --seed 11 --db t.db --eval-every 13)
"$BIN" run "${resnet[@]}" --workers 2 --algo pdasgd --pd-staleness 1 --save-params rpd_mpi.bin > rpd_mpi.txt 2>&1 ||
  { cat rpd_mpi.txt; fail "pdasgd on ResNet-8 (mpi) failed"; }
"$BIN" run "${resnet[@]}" --workers 2 --backend sim --profile-from "$(last_run_id rpd_mpi.txt)" --algo pdasgd \
  --pd-staleness 1 --save-params rpd_sim.bin > rpd_sim.txt 2>&1 || { cat rpd_sim.txt; fail "pdasgd on ResNet-8 (sim) failed"; }
same rpd_mpi.bin rpd_sim.bin "pdasgd S=1 on ResNet-8: 2 MPI ranks differ from 2 simulated workers"
acc_mpi=$(sql t.db "SELECT test_acc FROM evals WHERE run_id=$(last_run_id rpd_mpi.txt) AND step=13")
acc_sim=$(sql t.db "SELECT test_acc FROM evals WHERE run_id=$(last_run_id rpd_sim.txt) AND step=13")
[[ -n "$acc_mpi" && "$acc_mpi" == "$acc_sim" ]] || fail "pdasgd on ResNet-8: evaluated accuracy $acc_mpi (mpi) vs $acc_sim (sim)"

# adatopk on uniform links = topk at the budget
run topk2.bin --workers 2 --algo ssgd --compress topk:0.1
run ada2.bin --workers 2 --algo ssgd --compress adatopk:budget=0.1
same topk2.bin ada2.bin "adatopk on uniform links differs from topk (2 MPI ranks)"
tb=$(sql t.db "SELECT bytes_sent_per_step FROM summaries WHERE run_id=$(last_run_id topk2.bin.txt)")
ab=$(sql t.db "SELECT bytes_sent_per_step FROM summaries WHERE run_id=$(last_run_id ada2.bin.txt)")
[[ "$tb" == "$ab" ]] || fail "adatopk on uniform links sends $ab bytes per step, topk $tb"
run stopk.bin --workers 4 --algo ssgd --compress topk:0.1 "${sim[@]}"
run sada.bin --workers 4 --algo ssgd --compress adatopk:budget=0.1 "${sim[@]}"
same stopk.bin sada.bin "adatopk on uniform links differs from topk (4 simulated workers)"
# hier:2x2, inter 10x slower: k1 = ⌈0.1·804⌉ = 81 inside the group (1 peer), k2 = ⌈0.01·804⌉ = 9
# between groups (1 peer): (2−1)·8·81 + (2−1)·8·9 = 720 bytes per step (the SMALL model: 200·4 + 4).
hier=(--workers 4 --topology hier:2x2 --backend sim --profile-from "$(last_run_id prof.out)" --bandwidth 1Gbps
  --latency 50us --inter-bandwidth 100Mbps --inter-latency 1ms)
"$BIN" run "${common[@]}" "${hier[@]}" --algo ssgd --compress adatopk:budget=0.1 --save-params hada.bin > hada.txt 2>&1 ||
  { cat hada.txt; fail "adatopk on hier:2x2 failed"; }
hb=$(sql t.db "SELECT bytes_sent_per_step FROM summaries WHERE run_id=$(last_run_id hada.txt)")
[[ "$hb" == 720.0 || "$hb" == 720 ]] || fail "adatopk on hier:2x2 sends $hb bytes per step, expected 720"
"$BIN" run "${common[@]}" "${hier[@]}" --algo ssgd --compress topk:0.1 --save-params htopk.bin > htopk.txt 2>&1 ||
  fail "topk on hier:2x2 failed"
if cmp -s hada.bin htopk.bin; then fail "adatopk on a slow inter-group link should differ from topk"; fi

# Two threads on the simulator: reproducible, lockstep staleness, samples counted.
for algo in lasgd hogwild; do
  extra=()
  [[ $algo == lasgd ]] && extra=(--period 4)
  run "${algo}_t2a.bin" --workers 2 --algo "$algo" --local-threads 2 "${extra[@]}" "${sim[@]}"
  run "${algo}_t2b.bin" --workers 2 --algo "$algo" --local-threads 2 "${extra[@]}" "${sim[@]}"
  same "${algo}_t2a.bin" "${algo}_t2b.bin" "$algo with 2 threads: the same seed gave different models on the simulator"
done
if cmp -s lasgd_t2a.bin slasgd.bin; then fail "lasgd with 2 threads should differ from one thread"; fi
L=$(last_run_id lasgd_t2b.bin.txt)
st=$(sql t.db "SELECT printf('%.3f', staleness_mean) FROM summaries WHERE run_id=$L")
[[ "$st" == 0.500 ]] || fail "lasgd with 2 lockstep threads: staleness mean $st, expected 0.500"
S1=$(last_run_id slocal.bin.txt)
# throughput counts 2 threads x 2 workers x 32 samples per step: with the same step time as
# localsgd on 2 workers it would be twice localsgd's; here just check the configured streams.
cw=$(sql t.db "SELECT json_extract(config_json, '$.\"compute-workers\"') FROM runs WHERE id=$L")
[[ "$cw" == 4 ]] || fail "lasgd with 2 threads on 2 workers: compute-workers $cw, expected 4"
echo PASS
