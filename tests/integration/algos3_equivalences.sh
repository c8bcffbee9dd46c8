# Equivalences of the part-3 variants (palsgd, mtdao, osp, oldsgd; docs/algorithms.md) on real MPI
# ranks (2, and 4 where the topology matters) and on the sim backend (same code, virtual clock):
#  - palsgd with --pull-prob 0 or --pull-alpha 0 = localsgd (bit-identical); with --delay d and no
#    pulls = dasgd --delay d (bit-identical, also with --compress); with pulls it differs;
#  - mtdao with the moments kept local (--period-m 0 --period-v 0) = localsgd with the same
#    optimizer (AdamW, SGD with momentum: bit-identical); every period 1 with SGD and momentum =
#    ssgd within 1e-5; its default periods differ from localsgd;
#  - osp --osp-fraction 1 = ssgd bit-identical (with momentum); f < 1 differs, stays close, the
#    recorded bytes split into its two stages as the formula says, and the replicas are identical
#    after the last correction (consensus 0) but not while stage 2 is in flight;
#  - oldsgd --period 1 --gossip-overlap false = dpsgd and oldsgd --period 1 = dpsgd --dpsgd-delay 1,
#    bit-identical, on a 4-rank ring; oldsgd --period 4 differs and sends 1/4 of the bytes;
#  - the sim backend gives the same parameters as MPI (palsgd with pulls, mtdao, osp f < 1: bit-identical on
#    2 ranks; oldsgd on 4 ranks to 1e-6, the final average's summation order).
source "$(dirname "$0")/common.bash"

# 64 steps, no untimed warm-up: every period divides the run, so the recorded bytes per step are
# the formulas exactly.
common=(--workers 2 --dataset "$SMALL" --steps 64 --warmup 0 --batch 32 --seed 11 --db t.db --eval-every 20)
run() {
  local out="$1"
  shift
  "$BIN" run "${common[@]}" "$@" --save-params "$out" > "$out.txt" 2>&1 || { cat "$out.txt"; fail "run failed: $*"; }
}
same() { cmp "$1" "$2" || fail "$3"; echo "ok: $3"; }
differ() { if cmp -s "$1" "$2"; then fail "$3"; fi; echo "ok: $3"; }

# --- palsgd ---
run local4.bin --algo localsgd --period 4 --lr 0.05
run pal_p0.bin --algo palsgd --period 4 --pull-prob 0 --lr 0.05
same pal_p0.bin local4.bin "palsgd --pull-prob 0 = localsgd"
run pal_a0.bin --algo palsgd --period 4 --pull-prob 0.5 --pull-alpha 0 --lr 0.05
same pal_a0.bin local4.bin "palsgd --pull-alpha 0 = localsgd"
run dasgd2.bin --algo dasgd --period 4 --delay 2 --lr 0.05
run pal_d2.bin --algo palsgd --period 4 --delay 2 --pull-prob 0 --lr 0.05
same pal_d2.bin dasgd2.bin "palsgd --delay 2 without pulls = dasgd --delay 2"
run dasgd2q.bin --algo dasgd --period 4 --delay 2 --lr 0.05 --compress qsgd:bits=4
run pal_d2q.bin --algo palsgd --period 4 --delay 2 --pull-prob 0 --lr 0.05 --compress qsgd:bits=4
same pal_d2q.bin dasgd2q.bin "palsgd --delay 2 --compress qsgd:bits=4 without pulls = dasgd with the same"
run pal_q.bin --algo palsgd --period 4 --delay 2 --pull-prob 0.5 --lr 0.05 --compress qsgd:bits=4
differ pal_q.bin dasgd2q.bin "compressed palsgd with pulls differs from compressed dasgd"
run pal.bin --algo palsgd --period 4 --delay 2 --pull-prob 0.5 --pull-alpha 0.5 --lr 0.05
differ pal.bin dasgd2.bin "palsgd with pulls differs from dasgd"
expect_bytes palsgd 804 # 3216 (one 2-rank all-reduce of 804 floats) / H
run pal_sim.bin --algo palsgd --period 4 --delay 2 --pull-prob 0.5 --pull-alpha 0.5 --lr 0.05 --backend sim
same pal_sim.bin pal.bin "palsgd on sim = palsgd on MPI"
run pal_sim0.bin --algo palsgd --period 4 --pull-prob 0 --lr 0.05 --backend sim
same pal_sim0.bin local4.bin "palsgd --pull-prob 0 on sim = localsgd on MPI"

# --- mtdao ---
run adam_local.bin --algo localsgd --period 4 --optimizer adamw --lr 0.005
run mt_local.bin --algo mtdao --period 4 --period-m 0 --period-v 0 --lr 0.005
same mt_local.bin adam_local.bin "mtdao with local moments (AdamW) = localsgd --optimizer adamw"
run sgdm_local.bin --algo localsgd --period 4 --momentum 0.9 --lr 0.02
run mt_sgdm.bin --algo mtdao --optimizer sgd --period 4 --period-m 0 --momentum 0.9 --lr 0.02
same mt_sgdm.bin sgdm_local.bin "mtdao with local velocity (SGD, momentum) = localsgd"
run ssgd_m.bin --algo ssgd --momentum 0.9 --lr 0.02
run mt_every.bin --algo mtdao --optimizer sgd --period 1 --period-m 1 --momentum 0.9 --lr 0.02
compare_params mt_every.bin ssgd_m.bin 1e-5 || fail "mtdao with every period 1 (SGD, momentum) differs from ssgd"
run mt.bin --algo mtdao --period 4 --period-m 8 --period-v 16 --lr 0.005
differ mt.bin adam_local.bin "mtdao averaging the moments differs from localsgd"
# 3216/4 + 3216/8 + 3216/16 = 804 + 402 + 201
expect_bytes mtdao 1407
run mt2.bin --algo mtdao --period 4 --period-m 8 --period-v 16 --betas 0.9,0.99 --lr 0.005
differ mt2.bin mt.bin "mtdao with two time scales differs from one"
expect_bytes "mtdao two momenta" 1809 # 804 + 2·402 + 201
run mt_sim.bin --algo mtdao --period 4 --period-m 8 --period-v 16 --betas 0.9,0.99 --lr 0.005 --backend sim
same mt_sim.bin mt2.bin "mtdao on sim = mtdao on MPI"

# --- osp ---
run osp1.bin --algo osp --osp-fraction 1 --momentum 0.9 --lr 0.02
same osp1.bin ssgd_m.bin "osp --osp-fraction 1 = ssgd (momentum)"
run osp.bin --algo osp --osp-fraction 0.25 --momentum 0.9 --lr 0.02
differ osp.bin ssgd_m.bin "osp f=0.25 differs from ssgd"
compare_params osp.bin ssgd_m.bin 0.05 || fail "osp f=0.25 is far from ssgd"
# Stage 1: ⌈0.25·804⌉ = 201 floats (804 bytes on 2 ranks), stage 2: 603 floats (2412 bytes), recorded
# where it is waited for: the first step 804, the others 3216, the last (63) 804 + 2·2412.
ido=$(last_run_id osp.bin.txt)
[ "$(sql t.db "select group_concat(distinct bytes_sent) from steps where run_id=$ido and step=0")" = 804.0 ] ||
  fail "osp: step 0 should record stage 1 only (804 bytes): $(sql t.db "select bytes_sent from steps where run_id=$ido and step=0")"
[ "$(sql t.db "select count(*) from steps where run_id=$ido and step between 1 and 62 and bytes_sent != 3216")" = 0 ] ||
  fail "osp: a middle step does not record stage 1 + the previous stage 2 (3216 bytes)"
[ "$(sql t.db "select group_concat(distinct bytes_sent) from steps where run_id=$ido and step=63")" = 5628.0 ] ||
  fail "osp: the last step should record 804 + 2·2412 bytes"
[ "$(sql t.db "select sum(overlap_s) > 0 from steps where run_id=$ido")" = 1 ] || fail "osp: stage 2 was not in flight"
# The correction makes the replicas identical again once stage 2 has arrived: at the end (the last
# step waits for it) the consensus distance is 0; between steps (stage 2 in flight) it is not.
[ "$(sql t.db "select consensus_distance from evals where run_id=$ido and step=64")" = 0.0 ] ||
  fail "osp: replicas differ after the last correction"
[ "$(sql t.db "select min(consensus_distance) > 0 from evals where run_id=$ido and step in (20, 40, 60)")" = 1 ] ||
  fail "osp: replicas identical while stage 2 was in flight (was the local gradient used?)"
run osp_static.bin --algo osp --osp-fraction 0.25 --osp-select static --momentum 0.9 --lr 0.02
differ osp_static.bin osp.bin "osp --osp-select static differs from magnitude"
run osp_sim.bin --algo osp --osp-fraction 0.25 --momentum 0.9 --lr 0.02 --backend sim
same osp_sim.bin osp.bin "osp on sim = osp on MPI"

# --- oldsgd: 4 ranks on a ring (two neighbours each, W = 1/3) ---
common=(--workers 4 --topology ring --dataset "$SMALL" --steps 64 --warmup 0 --batch 32 --seed 11 --db t.db --eval-every 20
  --lr 0.05)
run dp.bin --algo dpsgd
run old1.bin --algo oldsgd --period 1 --gossip-overlap false
same old1.bin dp.bin "oldsgd --period 1 --gossip-overlap false = dpsgd (4-rank ring)"
run dp1.bin --algo dpsgd --dpsgd-delay 1
run old1o.bin --algo oldsgd --period 1
same old1o.bin dp1.bin "oldsgd --period 1 (overlapped) = dpsgd --dpsgd-delay 1 (4-rank ring)"
run old4.bin --algo oldsgd --period 4
differ old4.bin dp.bin "oldsgd --period 4 differs from dpsgd"
# Two neighbours · 3216 bytes per round, 15 rounds in 64 steps (the round launched at the last
# sync step is not: the run ends there), each recorded where it is waited for.
ido=$(last_run_id old4.bin.txt)
[ "$(sql t.db "select count(*) || ' ' || sum(bytes_sent) from steps where run_id=$ido and rank=0 and bytes_sent > 0")" = "15 96480.0" ] ||
  fail "oldsgd H=4: expected 15 rounds of 6432 bytes on rank 0, got $(sql t.db "select count(*) || ' ' || sum(bytes_sent) from steps where run_id=$ido and rank=0 and bytes_sent > 0")"
[ "$(sql t.db "select sum(overlap_s) > 0 from steps where run_id=$ido")" = 1 ] || fail "oldsgd: no gossip in flight"
run old4b.bin --algo oldsgd --period 4 --gossip-overlap false
differ old4b.bin old4.bin "oldsgd blocking differs from overlapped"
# The saved model is the average over the 4 ranks, whose all-reduce sums in another order on MPI
# than on the sim (dpsgd itself differs by the same 1.8e-8 there): 1e-6.
run old4_sim.bin --algo oldsgd --period 4 --backend sim
compare_params old4_sim.bin old4.bin 1e-6 || fail "oldsgd on sim differs from oldsgd on MPI (4-rank ring)"
echo PASS
