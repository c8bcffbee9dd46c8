#!/usr/bin/python3
"""ResNet training step: dsgd-bench (bench_resnet) against PyTorch, same architectures, same run.

Times one training step (forward, backward, SGD with momentum 0.9) on a batch already in
memory, medians of --steps steps after --warmup untimed ones, at 1 and 2 threads, and prints
our time / PyTorch time per case with the goal, plus achieved GFLOP/s (convolutions and head,
multiply-add = 2, backward = 2x forward) against an SGEMM (1024^3) measured in the same run.
The PyTorch model is written here to match workloads/resnet.cpp exactly: bias-free 3x3 convs,
BatchNorm after each, projection (1x1 conv + BN) shortcuts where the shape changes, global
average pooling, linear head. Each measurement runs in its own process. Multi-threaded cases
run both sides in the same environment: OMP_WAIT_POLICY=PASSIVE and OPENBLAS_THREAD_TIMEOUT=4,
so that neither OpenMP's threads (PyTorch's, and oneDNN's and the layer loops' in ours) nor
OpenBLAS's spin on a core after their work while the other pool needs it (on this loaded
2-core machine, spinning made our 2-thread ResNet-20 step 10x slower).

Usage: bench/bench_resnet.py --bench build/bench/bench_resnet [--quick] [--threads 1,2] [--only resnet20]
       [--profile] [--rounds R]
"""
import argparse
import json
import os
import subprocess
import sys

CASES = [  # (label, model, batch, shape, goal)
    ("ResNet-18 CIFAR, batch 32, 3x32x32", "resnet18", 32, "3x32x32", 1.0),
    ("ResNet-20, batch 128, 1x28x28", "resnet20", 128, "1x28x28", 0.7),
]


def torch_step_times(model, batch, shape, threads, steps, warmup, profile=False):
    import time
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    torch.set_num_threads(threads)
    torch.manual_seed(1)

    class Unit(nn.Module):
        def __init__(self, cin, cout, k, stride, pad):
            super().__init__()
            self.conv = nn.Conv2d(cin, cout, k, stride, pad, bias=False)
            self.bn = nn.BatchNorm2d(cout)

        def forward(self, x):
            return self.bn(self.conv(x))

    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = Unit(cin, cout, 3, stride, 1)
            self.conv2 = Unit(cout, cout, 3, 1, 1)
            self.shortcut = Unit(cin, cout, 1, stride, 0) if stride != 1 or cin != cout else None

        def forward(self, x):
            out = self.conv2(F.relu(self.conv1(x)))
            return F.relu(out + (self.shortcut(x) if self.shortcut is not None else x))

    class ResNet(nn.Module):
        def __init__(self, cin, stem, widths, blocks, classes=10):
            super().__init__()
            self.stem = Unit(cin, stem, 3, 1, 1)
            layers, c = [], stem
            for s, (w, n) in enumerate(zip(widths, blocks)):
                for b in range(n):
                    layers.append(Block(c, w, 2 if s > 0 and b == 0 else 1))
                    c = w
            self.blocks = nn.Sequential(*layers)
            self.head = nn.Linear(c, classes)

        def forward(self, x):
            x = self.blocks(F.relu(self.stem(x)))
            return self.head(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))

    c, h, w = (int(v) for v in shape.split("x"))
    arch = {"resnet8": (16, [16, 32, 64], [1, 1, 1]), "resnet20": (16, [16, 32, 64], [3, 3, 3]),
            "resnet32": (16, [16, 32, 64], [5, 5, 5]), "resnet56": (16, [16, 32, 64], [9, 9, 9]),
            "resnet18": (64, [64, 128, 256, 512], [2, 2, 2, 2])}[model]
    net = ResNet(c, *arch)
    net.train()
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(batch, c, h, w)
    y = torch.randint(0, 10, (batch,))
    times = []
    for s in range(warmup + steps):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=False)
        loss = F.cross_entropy(net(x), y)
        loss.backward()
        opt.step()
        if s >= warmup:
            times.append(time.perf_counter() - t0)
    times.sort()
    if profile:  # the same steps again under PyTorch's profiler: self time per operator, to stderr
        with torch.autograd.profiler.profile() as prof:
            for s in range(steps):
                opt.zero_grad(set_to_none=False)
                F.cross_entropy(net(x), y).backward()
                opt.step()
        print(f"torch profile: {model} batch {batch}, {threads} thread(s), {steps} steps (totals, not per step)",
              file=sys.stderr)
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=18), file=sys.stderr)
    return {"impl": "torch", "median_s": times[len(times) // 2], "torch": torch.__version__,
            "params": sum(p.numel() for p in net.parameters())}


def thread_env(threads):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads),
               OPENBLAS_NUM_THREADS=str(threads))
    if threads > 1:
        env["OMP_WAIT_POLICY"] = "PASSIVE"
        env["OPENBLAS_THREAD_TIMEOUT"] = "4"
    return env


def run_torch(model, batch, shape, threads, steps, warmup, profile=False):
    env = thread_env(threads)
    r = subprocess.run([sys.executable, __file__, "--torch-case", model, str(batch), shape, str(threads),
                        str(steps), str(warmup), str(int(profile))], env=env, check=True, capture_output=True,
                       text=True)
    if profile:
        sys.stderr.write(r.stderr)
    return json.loads(r.stdout.strip().splitlines()[-1])


def run_ours(bench, model, batch, shape, threads, steps, warmup, profile=False):
    env = thread_env(threads)
    r = subprocess.run([bench, "--model", model, "--batch", str(batch), "--shape", shape, "--threads",
                        str(threads), "--steps", str(steps), "--warmup", str(warmup), "--profile", str(int(profile))],
                       env=env, check=True, capture_output=True, text=True)
    if profile:
        sys.stderr.write(r.stderr)
    return json.loads(r.stdout.strip().splitlines()[-1])


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--torch-case":
        m, b, sh, t, st, wu = sys.argv[2:8]
        prof = len(sys.argv) > 8 and sys.argv[8] == "1"
        print(json.dumps(torch_step_times(m, int(b), sh, int(t), int(st), int(wu), prof)))
        return 0
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", required=True, help="path to the bench_resnet program")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--only", default="", help="run only the cases whose model is in this list (resnet18,resnet20)")
    ap.add_argument("--profile", action="store_true",
                    help="also print both sides' per-kernel profiles (ours: bench_resnet --profile; PyTorch: "
                         "torch.autograd.profiler), measured after and apart from the timed steps")
    ap.add_argument("--rounds", type=int, default=1,
                    help="alternate ours and PyTorch this many times per case (fresh processes each) and report "
                         "the median of the per-round ratios: on a machine whose load swings, a ratio of two "
                         "runs a minute apart is noisier than that")
    ap.add_argument("--quick", action="store_true", help="resnet8 batch 16 only, 3 steps (a smoke test)")
    args = ap.parse_args()
    cases = [c for c in CASES if not args.only or c[1] in args.only.split(",")]
    if args.quick:
        cases = [("ResNet-8, batch 16, 3x32x32 (quick)", "resnet8", 16, "3x32x32", None)]
        args.steps, args.warmup, args.threads = 3, 1, "1"
    print(f"{'case':<38} {'thr':>3} {'ours ms':>9} {'torch ms':>9} {'ratio':>6} {'goal':>5} "
          f"{'GFLOP/s':>8} {'SGEMM':>7} {'%SGEMM':>6}")
    ok = True
    for label, model, batch, shape, goal in cases:
        for t in (int(v) for v in args.threads.split(",")):
            rounds = []
            for r in range(max(1, args.rounds)):
                o = run_ours(args.bench, model, batch, shape, t, args.steps, args.warmup, args.profile and r == 0)
                p = run_torch(model, batch, shape, t, args.steps, args.warmup, args.profile and r == 0)
                rounds.append((o["median_s"] / p["median_s"], o, p))
            rounds.sort(key=lambda x: x[0])
            ratio, ours, ref = rounds[len(rounds) // 2]  # the median round (the upper one of an even count)
            extra = "" if len(rounds) == 1 else "  rounds " + " ".join(f"{x[0]:.2f}" for x in rounds)
            print(f"{label:<38} {t:>3} {ours['median_s'] * 1e3:>9.1f} {ref['median_s'] * 1e3:>9.1f} {ratio:>6.2f} "
                  f"{goal if goal else '-':>5} {ours['gflops']:>8.1f} {ours['sgemm_gflops']:>7.1f} "
                  f"{100 * ours['gflops'] / ours['sgemm_gflops']:>5.0f}%  convs {ours.get('conv_backends', '?')} {ours.get('layout', '')}"
                  f"{extra}", flush=True)
            if not (ours["median_s"] > 0 and ref["median_s"] > 0):
                ok = False
    print("(ratio = our median step time / PyTorch's; medians of "
          f"{args.steps} steps after {args.warmup} warm-up; torch {ref.get('torch')})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
