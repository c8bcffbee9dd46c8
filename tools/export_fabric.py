#!/usr/bin/env python3
"""Export a "fabric file" (format dsgd-fabric, version 1) for dsgd-bench: the measured cost of
torch.distributed collectives on the user's own cluster and backend.

Measures all_reduce, all_gather, reduce_scatter (where the backend supports it), broadcast and a
send/recv ping-pong between ranks 0 and 1, over message sizes from 4 B to --max-size (doubling),
float32 buffers. Per (op, size): --warmup untimed repetitions, then --reps timed ones; each
repetition starts after a barrier, each rank times its own call (on CUDA: waits for the stream),
and the repetition's time is the slowest rank's (one all_reduce MAX of all repetitions' times
after the timed loop, so the exchange does not disturb what it measures). The file records the
median, minimum and maximum of those per-repetition times, and their spread (interquartile range
/ median: how far a prediction read from the median can be off; dsgd-bench warns above 30 %).
sendrecv: rank 0 sends, rank 1 receives and sends back; the time is half of rank 0's round trip;
the other ranks wait.

Then per op an alpha-beta fit, time = alpha_s + beta_s_per_byte * bytes, by least squares on each
segment of 5 consecutive sizes (a factor of 16 in size; consecutive segments share their end
point, the last segment may be shorter); a negative coefficient is refitted with it held at 0.

Launch, either:
  python3 tools/export_fabric.py --spawn 2 -o fabric.json        # N local processes, one command
  torchrun --nnodes 2 --nproc-per-node 4 ... tools/export_fabric.py -o fabric.json   # env://
Rank 0 writes the file. docs/model-cost-file.md describes it. Standard library and torch only.
"""
import argparse
import json
import math
import os
import socket
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_profile import summarize  # noqa: E402  (the spread as a cost file's timings have it)

FORMAT = "dsgd-fabric"
VERSION = 1
OPS = ("allreduce", "allgather", "reduce_scatter", "broadcast", "sendrecv")


def sizes_up_to(max_bytes, min_bytes=4):
    out, s = [], min_bytes
    while s <= max_bytes:
        out.append(s)
        s *= 2
    return out


def fit_alpha_beta(points):
    """Least-squares (alpha, beta) of t = alpha + beta * x over points [(x, t)], both >= 0."""
    n = len(points)
    if n == 1:
        return points[0][1], 0.0
    mx = sum(x for x, _ in points) / n
    mt = sum(t for _, t in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    beta = sum((x - mx) * (t - mt) for x, t in points) / sxx if sxx > 0 else 0.0
    alpha = mt - beta * mx
    if beta < 0:
        return max(0.0, mt), 0.0
    if alpha < 0:
        sx2 = sum(x * x for x, _ in points)
        return 0.0, max(0.0, sum(x * t for x, t in points) / sx2)
    return alpha, beta


def fits_for(collectives, segment=5):
    """Per op, the alpha-beta fits of consecutive segments of `segment` sizes sharing end points."""
    fits = []
    for op in OPS:
        pts = sorted((c["bytes"], c["time_s"]) for c in collectives if c["op"] == op)
        if not pts:
            continue
        i = 0
        while True:
            seg = pts[i:i + segment]
            if len(seg) < 2 and fits:
                break
            a, b = fit_alpha_beta(seg)
            fits.append({"op": op, "min_bytes": seg[0][0], "max_bytes": seg[-1][0], "alpha_s": a,
                         "beta_s_per_byte": b})
            if i + segment >= len(pts):
                break
            i += segment - 1
    return fits


def validate_fabric_file(d):
    """Raises ValueError naming the first problem; returns d when it is a valid version-1 fabric file."""

    def fail(msg):
        raise ValueError("fabric file: " + msg)

    def num(v):
        return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)

    if not isinstance(d, dict) or d.get("format") != FORMAT:
        fail("format must be '%s'" % FORMAT)
    if d.get("version") != VERSION:
        fail("unsupported version %r" % d.get("version"))
    for k in ("framework", "framework_version", "backend"):
        if not isinstance(d.get(k), str):
            fail("missing or non-string '%s'" % k)
    for k in ("world_size", "hosts"):
        if not isinstance(d.get(k), int) or d[k] < 1:
            fail("'%s' must be a positive integer" % k)
    if not isinstance(d.get("host_names"), list) or len(d["host_names"]) != d["hosts"]:
        fail("host_names must list 'hosts' names")
    for key, fields in (("collectives", ("bytes", "time_s", "time_min_s", "time_max_s", "iters")),
                        ("fits", ("min_bytes", "max_bytes", "alpha_s", "beta_s_per_byte"))):
        if not isinstance(d.get(key), list):
            fail("missing list '%s'" % key)
        for i, c in enumerate(d[key]):
            if c.get("op") not in OPS:
                fail("%s[%d].op: %r is not one of %s" % (key, i, c.get("op"), ", ".join(OPS)))
            for f in fields:
                if not num(c.get(f)) or c[f] < 0:
                    fail("%s[%d].%s: missing, negative or not finite" % (key, i, f))
            if key == "collectives" and "spread" in c and (not num(c["spread"]) or c["spread"] < 0):
                fail("collectives[%d].spread: negative or not finite" % i)
    if not isinstance(d.get("notes"), list) or not all(isinstance(n, str) for n in d["notes"]):
        fail("notes must be a list of strings")
    return d


def _round(obj, digits=4):
    if isinstance(obj, float):
        return float("%.*g" % (digits, obj))
    if isinstance(obj, dict):
        return {k: _round(v, digits) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_round(v, digits) for v in obj]
    return obj


# ----------------------------------------------------------------------------------------------
# The measurement (every rank)


def _measure(args, log):
    import torch
    import torch.distributed as dist

    rank, world = dist.get_rank(), dist.get_world_size()
    backend = dist.get_backend()
    cuda = backend == "nccl" or (args.device == "cuda")
    if cuda:
        local = int(os.environ.get("LOCAL_RANK", rank % max(1, torch.cuda.device_count())))
        torch.cuda.set_device(local)
        device = torch.device("cuda", local)
    else:
        device = torch.device("cpu")

    def sync():
        if cuda:
            torch.cuda.synchronize()

    notes = []
    # which variant of each op this torch has
    ag_tensor = getattr(dist, "all_gather_into_tensor", None) or getattr(dist, "_all_gather_base", None)
    rs_tensor = getattr(dist, "reduce_scatter_tensor", None) or getattr(dist, "_reduce_scatter_base", None)

    def op_fn(op, nbytes):
        """(callable doing one op, or None when the size does not fit the op)."""
        n = nbytes // 4
        if op == "allreduce":
            buf = torch.ones(n, device=device)
            return lambda: dist.all_reduce(buf)
        if op == "broadcast":
            buf = torch.ones(n, device=device)
            return lambda: dist.broadcast(buf, 0)
        if op == "allgather":
            if n % world or n < world:
                return None
            inp = torch.ones(n // world, device=device)
            if ag_tensor is not None:
                out = torch.empty(n, device=device)
                return lambda: ag_tensor(out, inp)
            outs = [torch.empty(n // world, device=device) for _ in range(world)]
            return lambda: dist.all_gather(outs, inp)
        if op == "reduce_scatter":
            if n % world or n < world:
                return None
            inp = torch.ones(n, device=device)
            out = torch.empty(n // world, device=device)
            if rs_tensor is not None:
                return lambda: rs_tensor(out, inp)
            ins = list(inp.chunk(world))
            return lambda: dist.reduce_scatter(out, ins)
        if op == "sendrecv":
            buf = torch.ones(n, device=device)

            def pingpong():
                if rank == 0:
                    dist.send(buf, 1)
                    dist.recv(buf, 1)
                elif rank == 1:
                    dist.recv(buf, 0)
                    dist.send(buf, 0)

            return pingpong
        raise ValueError(op)

    ops = [o for o in args.ops.split(",") if o]
    if "sendrecv" in ops and world < 2:
        ops.remove("sendrecv")
        notes.append("sendrecv: needs 2 ranks, skipped")

    def works(op):
        """Whether one small call of op works (a backend lacking it raises at the call, on every
        rank alike, so nothing hangs); the error's first line, or None."""
        try:
            op_fn(op, 4 * world)()
            sync()
            return None
        except (RuntimeError, NotImplementedError, AttributeError, ValueError) as e:
            return str(e).splitlines()[0][:120] if str(e) else type(e).__name__

    version = torch.__version__.split("+")[0]
    if "allgather" in ops:
        err = works("allgather") if ag_tensor is not None else "absent"
        if err is not None and ag_tensor is not None:
            notes.append("allgather: %s not supported by %s (%s), all_gather into a list used"
                         % (getattr(ag_tensor, "__name__", "all_gather_into_tensor"), backend, err))
            ag_tensor = None
        err = works("allgather") if ag_tensor is None else None
        if err is not None:
            ops.remove("allgather")
            notes.append("allgather: not supported by %s in torch %s, skipped (%s)" % (backend, version, err))
        elif ag_tensor is not None:
            notes.append("allgather: %s" % getattr(ag_tensor, "__name__", "all_gather_into_tensor"))
    if "reduce_scatter" in ops:
        err = works("reduce_scatter")
        if err is not None and rs_tensor is not None:
            rs_name = getattr(rs_tensor, "__name__", "reduce_scatter_tensor")
            rs_tensor = None
            err2 = works("reduce_scatter")
            if err2 is None:
                notes.append("reduce_scatter: %s not supported by %s (%s), reduce_scatter of a list used"
                             % (rs_name, backend, err))
            err = err2 if err2 is None else err
        if err is not None:
            ops.remove("reduce_scatter")
            notes.append("reduce_scatter: not supported by %s in torch %s, skipped (%s)" % (backend, version, err))
    # settle first (connections, thread pools, page faults): 100 small all-reduces, untimed
    warm = torch.ones(1024, device=device)
    for _ in range(100):
        dist.all_reduce(warm)
    sync()
    dist.barrier()

    collectives = []
    for op in ops:
        for nbytes in sizes_up_to(args.max_size):
            fn = op_fn(op, nbytes)
            if fn is None:
                continue
            # Iterations per repetition: enough back-to-back calls to last args.min_rep_time
            # (rank 0's estimate: the fastest of three single calls, shared), so one thread's
            # wake-up does not make a repetition; the time per call is the repetition's time over
            # its calls.
            single = []
            for _ in range(3):
                dist.barrier()
                t0 = time.perf_counter()
                fn()
                sync()
                single.append(time.perf_counter() - t0)
            one = torch.tensor([min(single)], dtype=torch.float64, device=device)
            dist.broadcast(one, 0)
            iters = int(min(1000, max(1, args.min_rep_time / max(float(one.item()), 1e-7))))
            times = []
            for r in range(args.warmup + args.reps):
                dist.barrier()
                sync()
                t0 = time.perf_counter()
                for _ in range(iters):
                    fn()
                sync()
                t = (time.perf_counter() - t0) / iters
                if op == "sendrecv":
                    t = t / 2 if rank == 0 else 0.0
                if r >= args.warmup:
                    times.append(t)
            tt = torch.tensor(times, dtype=torch.float64, device=device)
            dist.all_reduce(tt, op=dist.ReduceOp.MAX)
            slow = tt.cpu().tolist()
            collectives.append({"op": op, "bytes": nbytes, "time_s": statistics.median(slow),
                                "time_min_s": min(slow), "time_max_s": max(slow), "spread": summarize(slow)["spread"],
                                "iters": len(slow) * iters})
            if rank == 0 and args.verbose:
                log("export_fabric: %-14s %9d B  %.3g s" % (op, nbytes, collectives[-1]["time_s"]))
    names = [None] * world
    dist.all_gather_object(names, socket.gethostname())
    return collectives, notes, names, backend


def _worker(rank, world, port, args):
    os.environ.update({"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "RANK": str(rank),
                       "WORLD_SIZE": str(world), "LOCAL_RANK": str(rank)})
    _run_rank(args)


def _default_backend():
    import torch
    import torch.distributed as dist

    if torch.cuda.is_available() and dist.is_nccl_available():
        return "nccl"
    return "gloo"


def _run_rank(args):
    import torch
    import torch.distributed as dist

    log = lambda msg: print(msg, file=sys.stderr)  # noqa: E731
    backend = args.backend or _default_backend()
    if args.threads:
        torch.set_num_threads(args.threads)
    dist.init_process_group(backend, init_method="env://")
    try:
        collectives, notes, names, backend = _measure(args, log)
        if dist.get_rank() == 0:
            hosts = sorted(set(names))
            d = {"format": FORMAT, "version": VERSION, "framework": "pytorch",
                 "framework_version": torch.__version__.split("+")[0], "backend": backend,
                 "world_size": dist.get_world_size(), "hosts": len(hosts), "host_names": hosts,
                 "collectives": collectives, "fits": fits_for(collectives), "notes": notes}
            validate_fabric_file(d)
            text = json.dumps(_round(d), indent=1, allow_nan=False) + "\n"
            if args.output == "-":
                sys.stdout.write(text)
            else:
                with open(args.output + ".tmp", "w") as f:
                    f.write(text)
                os.replace(args.output + ".tmp", args.output)
                log("export_fabric: %s, %d ranks on %d host(s), %d measurements, wrote %s"
                    % (backend, d["world_size"], d["hosts"], len(collectives), args.output))
        dist.barrier()
    finally:
        dist.destroy_process_group()


def _free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(argv=None):
    ap = argparse.ArgumentParser(prog="export_fabric.py", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="Examples:\n  python3 tools/export_fabric.py --spawn 2 -o fabric.json\n"
                                        "  torchrun --nproc-per-node 2 tools/export_fabric.py -o fabric.json")
    ap.add_argument("--spawn", type=int, default=0, metavar="N",
                    help="start N local processes (127.0.0.1, a free port) instead of joining a "
                         "torchrun/env:// launch")
    ap.add_argument("--backend", default=None, help="gloo, nccl or mpi (default: nccl with CUDA, else gloo)")
    ap.add_argument("--device", default=None, choices=("cpu", "cuda"),
                    help="where the buffers live (default: cuda with nccl, else cpu)")
    ap.add_argument("--max-size", type=int, default=4 << 20, help="largest message in bytes (default 4 MiB)")
    ap.add_argument("--reps", type=int, default=30, help="timed repetitions per op and size (default 30)")
    ap.add_argument("--warmup", type=int, default=5, help="untimed repetitions first (default 5)")
    ap.add_argument("--min-rep-time", type=float, default=0.002,
                    help="seconds a repetition lasts at least: back-to-back calls, timed together (default 0.002)")
    ap.add_argument("--ops", default=",".join(OPS), help="comma-separated subset of " + ",".join(OPS))
    ap.add_argument("--threads", type=int, default=1, help="torch threads per process (default 1)")
    ap.add_argument("--verbose", action="store_true", help="print each measurement (rank 0)")
    ap.add_argument("-o", "--output", default="-", help="output file, written by rank 0 (default stdout)")
    args = ap.parse_args(argv)
    if args.max_size < 4 or args.reps < 1 or args.warmup < 0:
        ap.error("--max-size >= 4, --reps >= 1, --warmup >= 0")
    bad = [o for o in args.ops.split(",") if o and o not in OPS]
    if bad:
        ap.error("--ops: unknown %s (known: %s)" % (", ".join(bad), ", ".join(OPS)))
    if args.output != "-":
        args.output = os.path.abspath(args.output)
    if args.spawn:
        if args.spawn < 1:
            ap.error("--spawn N: N >= 1")
        import torch.multiprocessing as mp

        mp.spawn(_worker, args=(args.spawn, _free_port(), args), nprocs=args.spawn, join=True)
        return 0
    if "RANK" not in os.environ or "WORLD_SIZE" not in os.environ:
        ap.error("not launched by torchrun (RANK, WORLD_SIZE unset): use torchrun, or --spawn N on one machine")
    _run_rank(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
