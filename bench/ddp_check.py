#!/usr/bin/python3
"""The simulator's prediction for a user's own model against real PyTorch on this machine.

For each model (default: an MLP, which has no native workload here, and ResNet-20) this script
  1. measures the fabric as PyTorch sees it (tools/export_fabric.py --spawn N, gloo on loopback),
  2. exports the model's cost file at two batch sizes (tools/export_profile.py, 1 thread, in N
     processes at once, as the real run's N ranks share this host),
  3. runs it for real on N processes (1 thread each; --processes, default 2):
     DistributedDataParallel, and Local SGD (a plain model whose parameters are all-reduced and
     averaged every H steps; --periods, default H = 1, 4, 16), at three batch sizes: the cost
     file's largest (measured) and 2x and 4x that (extrapolated),
  4. predicts each configuration with `dsgd-bench run --workload profile:FILE --fabric FABRIC
     --backend sim --timing-only true` (DDP as ssgd with overlap and DDP's buckets, 1 MiB first and
     25 MiB after, and its broadcast of the model's buffers before each forward),
and prints one line per configuration (measured median and best step, predicted step, error)
and the ranking's Kendall tau; for a model with buffers (BatchNorm), DDP's broadcast of them
timed alone after each DDP run against the simulator's charge for it. Interleaving: each round exports the model again (2.), runs every
configuration once and predicts it from that round's file; the rounds repeat (--rounds); the
measured figure is the median over rounds of each round's mean step, the predicted one the
median over rounds of each round's prediction (a host whose speed drifts over minutes compares
each prediction with runs measured beside its own profile).

  python3 bench/ddp_check.py --bench build/dsgd-bench --out /tmp/ddp [--models mlp,resnet20]
      [--rounds 3] [--steps 30] [--batch 16] [--processes 2] [--periods 1,4,16]

More processes than cores (--processes 4 on a 2-core host) is a legitimate check of the
prediction, not of a cluster: the exporter measures each step while the other processes step
beside it, so the file holds the shared cores' speed, and the fabric is measured by as many
processes.

A slow network: run it under scripts/netns-cluster.sh (root), which puts two "hosts" in two
network namespaces joined by a shaped veth link, and pass --netns: rank 0 of every run (and of
the fabric measurement) starts in namespace a, rank 1 in namespace b (`ip netns exec`), gloo
over the veth, so the fabric, DDP and Local SGD all cross the shaped link:

  scripts/netns-cluster.sh --rate 100mbit -- python3 bench/ddp_check.py --netns --out /tmp/ddp_slow

Targets (on a quiet machine): every predicted step within 10 % of the measured median; the
ranking kept (Kendall tau >= 0.8, the same best configuration); at 2x and 4x the measured batch
within 15 %. Needs python3-torch (scripts/install-deps.sh --bench-extras or --tests).
"""
import argparse
import json
import os
import socket
import sqlite3
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = os.path.join(os.path.dirname(HERE), "tools")
sys.path.insert(0, TOOLS)


# DDP's bucket sizes: bucket_cap_mb (MiB, ours), and the first bucket's 1 MiB
# (torch.distributed._DEFAULT_FIRST_BUCKET_BYTES); dsgd-bench's --bucket-mb counts 1e6 bytes.
DDP_BUCKET_CAP_MB = 25
DDP_FIRST_BUCKET_BYTES = 1 << 20


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def netns_peer():
    """(namespace of host b, address of host a) under scripts/netns-cluster.sh, else None."""
    peer, addr = os.environ.get("DSGD_NETNS_PEER"), os.environ.get("DSGD_NETNS_ADDR")
    return (peer, addr) if peer and addr else None


def launch_pair(argv, port):
    """Runs `python3 argv` as ranks 0 (here, namespace a) and 1 (namespace b) of a 2-process
    torch.distributed job on host a's address; raises when either fails."""
    peer, addr = netns_peer()
    procs = []
    for rank in (0, 1):
        env = dict(os.environ, MASTER_ADDR=addr, MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE="2",
                   LOCAL_RANK="0", GLOO_SOCKET_IFNAME="eth0")  # one thread each: main() set it
        prefix = [] if rank == 0 else ["ip", "netns", "exec", peer]
        procs.append(subprocess.Popen(prefix + [sys.executable] + argv, env=env, stdout=subprocess.DEVNULL))
    codes = [p.wait() for p in procs]
    if any(codes):
        raise RuntimeError("%s: ranks exited with %s" % (" ".join(argv[:2]), codes))


def worker(rank, world, port, model_name, variant, period, batch, warmup, steps, result_path):
    import torch
    import torch.distributed as dist
    import export_profile

    export_profile.set_threads(torch, 1)  # torch's threads and OpenBLAS's, as the export has them
    if port:  # else MASTER_ADDR/MASTER_PORT come from launch_pair
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(1)
    model, make_batch, loss_fn, _ = export_profile.build_example(model_name)
    if variant == "ddp":
        model = torch.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=DDP_BUCKET_CAP_MB)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.SGD(params, lr=0.01, momentum=0.9)
    inputs, targets = make_batch(batch)
    times = []
    dist.barrier()
    for step in range(warmup + steps):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(inputs), targets)
        loss.backward()
        opt.step()
        if variant == "localsgd" and (step + 1) % period == 0:
            # One all-reduce of the whole model, as the simulator's localsgd does.
            flat = torch._utils._flatten_dense_tensors([p.data for p in params])
            dist.all_reduce(flat)
            flat /= world
            for p, q in zip(params, torch._utils._unflatten_dense_tensors(flat, [p.data for p in params])):
                p.data.copy_(q)
        times.append(time.perf_counter() - t0)
    timed = torch.tensor(times[warmup:], dtype=torch.float64)
    dist.all_reduce(timed)  # the ranks' mean per step
    timed /= world
    result = {"steps_s": timed.tolist()}
    buffers = list(model.buffers())
    if variant == "ddp" and buffers:
        # DDP's broadcast of the buffers before each forward, timed alone: the call DDP makes
        # (one coalesced broadcast per dtype from rank 0, 250 MiB buckets), 50 times.
        bcast = []
        for _ in range(50):
            t0 = time.perf_counter()
            dist._broadcast_coalesced(dist.group.WORLD, buffers, 250 * 1024 * 1024, 0)
            bcast.append(time.perf_counter() - t0)
        result["broadcast_s"] = statistics.median(bcast)
    if rank == 0:
        with open(result_path, "w") as f:
            json.dump(result, f)
    dist.destroy_process_group()


def measure(world, model, variant, period, batch, warmup, steps, out):
    path = os.path.join(out, "measured.json")
    if netns_peer():
        launch_pair([os.path.abspath(__file__), "--worker", json.dumps(
            [model, variant, period, batch, warmup, steps, path])], free_port())
    else:
        import torch.multiprocessing as mp

        mp.spawn(worker, args=(world, free_port(), model, variant, period, batch, warmup, steps, path), nprocs=world)
    with open(path) as f:
        return json.load(f)  # {"steps_s": [...], "broadcast_s": DDP's buffer broadcast alone, when timed}


def predict(bench, db, cost, fabric, world, variant, period, batch, warmup, steps, extra=()):
    # DDP: buckets of 25 MiB in backward order, the first closing at 1 MiB (DDP's
    # _DEFAULT_FIRST_BUCKET_BYTES), and the buffers broadcast before each forward.
    algo = ["--algo", "ssgd", "--overlap", "true", "--bucket-mb", str(DDP_BUCKET_CAP_MB * 2**20 / 1e6),
            "--first-bucket-mb", str(DDP_FIRST_BUCKET_BYTES / 1e6)] \
        if variant == "ddp" else ["--algo", "localsgd", "--period", str(period)]
    cmd = [bench, "run", "--workload", "profile:" + cost, "--fabric", fabric, "--backend", "sim",
           "--timing-only", "true", "--workers", str(world), "--batch", str(batch), "--steps", str(warmup + steps),
           "--warmup", str(warmup), "--db", db] + algo + list(extra)
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    run_id = int(out.strip().splitlines()[-1].split("=")[1])
    with sqlite3.connect(db) as c:
        return c.execute("SELECT avg(step_s) FROM steps WHERE run_id = ? AND timed", (run_id,)).fetchone()[0]


def kendall_tau(xs, ys):
    n, s = len(xs), 0
    for i in range(n):
        for j in range(i + 1, n):
            a, b = xs[i] - xs[j], ys[i] - ys[j]
            s += (a * b > 0) - (a * b < 0)
    return s / (n * (n - 1) / 2) if n > 1 else 1.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bench", default="build/dsgd-bench")
    ap.add_argument("--out", default="/tmp/ddp_check")
    ap.add_argument("--models", default="mlp,resnet20")
    ap.add_argument("--batch", type=int, default=16, help="the cost file's largest batch (also half of it)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--periods", default="1,4,16",
                    help="the Local SGD periods H besides DDP (default 1,4,16; H = 1 averages the parameters "
                         "after every step, with no overlap)")
    ap.add_argument("--processes", type=int, default=2,
                    help="ranks of every real run, of the fabric measurement and of the export (default 2)")
    ap.add_argument("--netns", action="store_true",
                    help="ranks in the two namespaces of scripts/netns-cluster.sh (run under it)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)  # one rank of a --netns run (JSON arguments)
    args = ap.parse_args()
    if args.worker:
        worker(int(os.environ["RANK"]), 2, 0, *json.loads(args.worker))
        return
    if args.netns and not netns_peer():
        ap.error("--netns runs under scripts/netns-cluster.sh (root): "
                 "scripts/netns-cluster.sh --rate 100mbit -- python3 bench/ddp_check.py --netns ...")
    try:
        periods = [int(h) for h in args.periods.split(",")]
    except ValueError:
        periods = []
    if not periods or min(periods) < 1:
        ap.error("--periods H[,H...]: whole numbers >= 1, e.g. 1,4,16")
    if args.processes < 2:
        ap.error("--processes N: N >= 2 (a data-parallel run)")
    if args.netns and args.processes != 2:
        ap.error("--netns runs 2 processes, one in each namespace (leave --processes out)")
    if not args.netns and netns_peer():
        ap.error("under scripts/netns-cluster.sh pass --netns (else both ranks stay in one namespace)")
    os.makedirs(args.out, exist_ok=True)
    bench = os.path.abspath(args.bench)
    # One thread per process everywhere: the export, the fabric and the real runs' ranks (started
    # from here, they inherit it). OpenBLAS reads these when it loads; torch.set_num_threads does
    # not govern it (export_profile.set_threads).
    os.environ.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    fabric = os.path.join(args.out, "fabric.json")
    if args.netns:
        # Over the shaped link, what DDP and Local SGD use (the all-reduce, DDP's buffer broadcast).
        launch_pair([os.path.join(TOOLS, "export_fabric.py"), "--ops", "allreduce,broadcast", "--max-size", str(8 << 20),
                     "--reps", "10", "-o", fabric], free_port())
    else:
        subprocess.run([sys.executable, os.path.join(TOOLS, "export_fabric.py"), "--spawn", str(args.processes),
                        "-o", fabric],
                       check=True, capture_output=True)
    db = os.path.join(args.out, "predictions.db")
    if os.path.exists(db):
        os.remove(db)
    b0 = args.batch
    variants = [("ddp", 1)] + [("localsgd", h) for h in periods]
    configs = [(v, h, b) for b in (b0, 2 * b0, 4 * b0) for v, h in variants]
    rows, broadcasts, model_bytes = [], [], {}
    for model in args.models.split(","):
        means = {c: [] for c in configs}
        preds = {c: [] for c in configs}
        best = {c: float("inf") for c in configs}
        for r in range(args.rounds):
            # Each round exports the model again, right before its measurements, and predicts
            # from that file: the host's speed drifts over minutes, so a prediction is compared
            # with runs measured beside its own profile (as N processes at once: the real run's
            # N ranks share this host's cores and memory).
            cost = os.path.join(args.out, "%s_round%d.json" % (model, r))
            subprocess.run([sys.executable, os.path.join(TOOLS, "export_profile.py"), "--model", model, "--threads",
                            "1", "--processes", str(args.processes), "--batches", "%d,%d" % (b0 // 2, b0), "--iterations", "30",
                            "-o", cost], check=True, capture_output=True)
            with open(cost) as f:
                model_bytes[model] = json.load(f)["parameter_bytes"]
            for c in configs:
                result = measure(args.processes, model, c[0], c[1], c[2], args.warmup, args.steps, args.out)
                per_step = result["steps_s"]
                means[c].append(statistics.fmean(per_step))
                if "broadcast_s" in result:
                    # The broadcast as predicted: the step with it minus without, no jitter.
                    step_of = lambda on: predict(bench, db, cost, fabric, args.processes, c[0], c[1], c[2],
                                                 args.warmup, args.steps, ["--compute-jitter", "off",
                                                                           "--broadcast-buffers", on])
                    broadcasts.append((model, c[2], result["broadcast_s"], step_of("true") - step_of("false")))
                best[c] = min(best[c], min(per_step))
                preds[c].append(predict(bench, db, cost, fabric, args.processes, c[0], c[1], c[2], args.warmup,
                                        args.steps))
        for c in configs:
            m, p = statistics.median(means[c]), statistics.median(preds[c])
            rows.append((model, c, m, min(means[c]), max(means[c]), best[c], p, min(preds[c]), max(preds[c])))
    print("%-9s %-12s %5s %11s %20s %10s %11s %20s %7s" % ("model", "variant", "batch", "meas(ms)",
                                                           "rounds [min,max]", "best step", "pred(ms)",
                                                           "rounds [min,max]", "error"))
    for model, (v, h, b), m, lo, hi, bs, p, plo, phi in rows:
        name = "ddp" if v == "ddp" else "localsgd H=%d" % h
        print("%-9s %-12s %5d %11.3f %20s %10.3f %11.3f %20s %+6.1f%%" % (model, name, b, 1e3 * m,
              "[%.3f, %.3f]" % (1e3 * lo, 1e3 * hi), 1e3 * bs, 1e3 * p, "[%.3f, %.3f]" % (1e3 * plo, 1e3 * phi),
              100 * (p - m) / m))
    for model in args.models.split(","):
        mine = [r for r in rows if r[0] == model]
        tau = kendall_tau([r[2] for r in mine], [r[6] for r in mine])
        same_best = min(mine, key=lambda r: r[2])[1] == min(mine, key=lambda r: r[6])[1]
        errs = sorted(abs(r[6] - r[2]) / r[2] for r in mine)
        print("%s: Kendall tau %.2f over %d configurations; same best: %s; |error| median %.1f %%, worst %.1f %%"
              % (model, tau, len(mine), "yes" if same_best else "no", 100 * statistics.median(errs),
                 100 * errs[-1]))
    with open(fabric) as f:
        allreduce = sorted((c["bytes"], c["time_s"], c.get("spread")) for c in json.load(f)["collectives"]
                           if c["op"] == "allreduce")
    for model, size in model_bytes.items():
        # The fabric points the prediction of a whole-model all-reduce reads, and how widely
        # their repetitions spread: a prediction cannot be closer than its fabric is repeatable.
        near = [p for p in allreduce if p[0] <= size][-1:] + [p for p in allreduce if p[0] > size][:1]
        print("%s: the fabric's all-reduce near the model's %.0f KB: %s (median, spread = interquartile range / "
              "median; the simulator warns above 30 %%)" % (model, size / 1e3, ", ".join(
                  "%.0f KB %.3f ms %s" % (b / 1e3, 1e3 * t, "%.0f %%" % (100 * sp) if sp is not None else "spread ?")
                  for b, t, sp in near)))
    for model in args.models.split(","):
        mine = [b for b in broadcasts if b[0] == model]
        if mine:
            print("%s: DDP's buffer broadcast alone (per round and batch): measured median %.3f ms [%.3f, %.3f], "
                  "predicted %.3f ms" % (model, 1e3 * statistics.median(b[2] for b in mine),
                                         1e3 * min(b[2] for b in mine), 1e3 * max(b[2] for b in mine),
                                         1e3 * statistics.median(b[3] for b in mine)))
    print("%d processes; load average now: %s; outputs in %s" % (args.processes, open("/proc/loadavg").read().split()[:3],
                                                                 args.out))


if __name__ == "__main__":
    main()
