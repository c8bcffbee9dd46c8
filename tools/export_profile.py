#!/usr/bin/env python3
"""Export a "model cost file" (format dsgd-model-cost, version 1) for dsgd-bench from a PyTorch model.

dsgd-bench simulates distributed SGD on a virtual clock; for a user's own model it needs what
one training step costs per layer on the user's own hardware. This module measures it: per
batch size, per leaf module (in forward execution order) its forward and backward time
(medians over timed iterations, with an interquartile spread), when its parameter gradients
are ready during backward, its parameter count and bytes, FLOPs where a closed form is known
(Linear, Conv2d), its output (activation) bytes; the whole step, forward, backward and
optimizer times; the device's measured peak FLOP/s and memory bandwidth; one pass over the
parameters (a copy and a y <- y + a*x, after a training step); the per-module hook overhead;
optionally the gradient noise scale. docs/model-cost-file.md describes the file.

Real users import this module from their own training program (the command line only runs
built-in example models):

    import sys; sys.path.insert(0, "path/to/dsgd-bench/tools")
    import torch, export_profile
    model = MyModel()                                   # the unwrapped module (not DDP)
    def make_batch(b):                                  # one batch of b examples
        x, y = next(iter(torch.utils.data.DataLoader(my_dataset, batch_size=b, shuffle=True)))
        return x, y
    cost = export_profile.profile_model(model, make_batch, [32, 64, 128], torch.nn.CrossEntropyLoss(),
        optimizer_factory=lambda params: torch.optim.SGD(params, lr=0.1, momentum=0.9),
        model_name="my-model", noise_scale_batches=(32, 128))
    export_profile.write_cost_file(cost, "my-model.json")

Standard library and torch only. Works on torch 1.13 (Debian 12's python3-torch) and later:
newer features (full backward pre-hooks, torch.utils.flop_counter) are detected with hasattr
or import checks and used only where present.
"""
import argparse
import contextlib
import math
import os
import platform
import statistics
import sys
import time

FORMAT = "dsgd-model-cost"
VERSION = 1


# ----------------------------------------------------------------------------------------------
# Threads


def _loaded_openblas():
    """The OpenBLAS libraries this process has loaded (Linux: from /proc/self/maps), as ctypes
    handles that have openblas_set_num_threads; [] elsewhere or when there is none."""
    import ctypes

    try:
        with open("/proc/self/maps") as f:
            paths = sorted({line.split()[-1] for line in f if "blas" in line.rsplit("/", 1)[-1]})
    except OSError:
        return []
    libs = []
    for path in paths:
        if not path.startswith("/"):
            continue
        try:
            lib = ctypes.CDLL(path)
            lib.openblas_set_num_threads  # noqa: B018 (raises AttributeError when absent)
            libs.append(lib)
        except (OSError, AttributeError):
            continue
    return libs


def set_threads(torch, n):
    """torch.set_num_threads(n) and the same count for a BLAS torch does not govern.

    A torch built against a generic BLAS (Debian's python3-torch: BLAS_INFO=generic, which
    loads OpenBLAS through the libblas alternative) runs its matrix products on OpenBLAS's own
    thread pool, sized to the host's cores whatever torch.set_num_threads says. Two ranks of 1
    torch thread each on a 2-core host then run 4 threads, whose spinning slows small products
    by up to 2x; a cost file exported with one count predicts runs that have the other badly.
    Returns whether an OpenBLAS was set as well."""
    torch.set_num_threads(n)
    libs = _loaded_openblas()  # torch links its BLAS: loaded with `import torch`
    for lib in libs:
        lib.openblas_set_num_threads(int(n))
    return bool(libs)


# ----------------------------------------------------------------------------------------------
# Statistics


def summarize(samples):
    """{"median_s", "spread", "samples"} of a list of seconds: spread = interquartile range / median."""
    xs = sorted(float(v) for v in samples)
    if not xs:
        raise ValueError("summarize: no samples")
    med = statistics.median(xs)
    spread = 0.0
    if len(xs) >= 2 and med > 0:
        q1, _, q3 = statistics.quantiles(xs, n=4, method="inclusive")
        spread = (q3 - q1) / med
    return {"median_s": max(0.0, med), "spread": max(0.0, spread), "samples": len(xs)}


# ----------------------------------------------------------------------------------------------
# Clocks: CPU (perf_counter_ns) and CUDA (events, resolved after one synchronize per iteration)


class _CpuClock:
    def mark(self):
        return time.perf_counter_ns()

    def resolve(self, ref, tokens):
        """Seconds from ref to each token (after the iteration)."""
        return [(t - ref) * 1e-9 for t in tokens]

    def sync(self):
        pass


class _CudaClock:
    def __init__(self, torch):
        self.torch = torch

    def mark(self):
        ev = self.torch.cuda.Event(enable_timing=True)
        ev.record()
        return ev

    def resolve(self, ref, tokens):
        return [ref.elapsed_time(ev) * 1e-3 for ev in tokens]

    def sync(self):
        self.torch.cuda.synchronize()


def _make_clock(torch, device):
    return _CudaClock(torch) if device.type == "cuda" else _CpuClock()


# ----------------------------------------------------------------------------------------------
# FLOPs and sizes


def _tensors(obj):
    """The tensors in a module's input or output (a tensor, or tuples/lists/dicts of them)."""
    import torch

    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, (tuple, list)):
        return [t for o in obj for t in _tensors(o)]
    if isinstance(obj, dict):
        return [t for o in obj.values() for t in _tensors(o)]
    return []


def layer_flops(module, inputs, output):
    """(forward_flops, backward_flops) of one call in closed form, or (None, None) for other types.

    nn.Linear: forward 2*N*in*out (+ N*out with a bias), N = rows of the input (all leading dims).
    nn.Conv2d: forward 2*B*Cout*Hout*Wout*(Cin/groups)*kh*kw (+ B*Cout*Hout*Wout with a bias).
    Backward = 2 x forward for both (gradient of the input + gradient of the weight)."""
    import torch.nn as nn

    ins = _tensors(inputs)
    outs = _tensors(output)
    if not ins or not outs:
        return None, None
    x, y = ins[0], outs[0]
    if isinstance(module, nn.Linear):
        n = x.numel() // module.in_features
        f = 2 * n * module.in_features * module.out_features
        if module.bias is not None:
            f += n * module.out_features
        return f, 2 * f
    if isinstance(module, nn.Conv2d):
        if y.dim() == 4:
            b, cout, hout, wout = y.shape
        else:  # unbatched (C, H, W)
            b, (cout, hout, wout) = 1, y.shape
        kh, kw = module.kernel_size
        f = 2 * b * cout * hout * wout * (module.in_channels // module.groups) * kh * kw
        if module.bias is not None:
            f += b * cout * hout * wout
        return f, 2 * f
    return None, None


def _output_bytes(output):
    return sum(t.numel() * t.element_size() for t in _tensors(output))


# ----------------------------------------------------------------------------------------------
# Device


def _cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown cpu"


def measure_device(device=None, matmul_size=2048, copy_bytes=256 << 20, repeats=5):
    """{"kind", "name", "peak_flops", "memory_bandwidth_bytes_per_s"}, MEASURED here: the best of
    `repeats` float32 matmuls of matmul_size^3 (2*n^3 FLOPs) after one warm-up, and the best of
    `repeats` copies of a copy_bytes float32 tensor (bytes read + bytes written per second)."""
    import torch

    device = torch.device(device or "cpu")
    clock = _make_clock(torch, device)
    n = int(matmul_size)
    a = torch.randn(n, n, device=device)
    b = torch.randn(n, n, device=device)

    def best(fn):
        fn()  # warm-up
        clock.sync()
        times = []
        for _ in range(repeats):
            t0 = clock.mark()
            fn()
            t1 = clock.mark()
            clock.sync()
            times.append(clock.resolve(t0, [t1])[0])
        return min(t for t in times if t > 0) if any(t > 0 for t in times) else float("nan")

    t_mm = best(lambda: torch.mm(a, b))
    del a, b
    numel = max(1, int(copy_bytes) // 4)
    src = torch.empty(numel, device=device).fill_(1.0)
    dst = torch.empty_like(src)
    t_cp = best(lambda: dst.copy_(src))
    if device.type == "cuda":
        name = torch.cuda.get_device_name(device)
    else:
        name = _cpu_name()
    return {"kind": device.type, "name": name,
            "peak_flops": 2.0 * n ** 3 / t_mm,
            "memory_bandwidth_bytes_per_s": 2.0 * numel * 4 / t_cp}


# ----------------------------------------------------------------------------------------------
# The hooks


def _has_full_backward_pre_hook(module):
    return hasattr(module, "register_full_backward_pre_hook")


class _Recorder:
    """Installs timing hooks on the profiled modules and collects one iteration's marks.

    Forward: a forward pre-hook and a forward hook per module mark the start and end of each call.
    Backward start (the gradient of the module's output is ready): the full backward pre-hook
    where torch has it (>= 2.0), else a tensor hook on the module's output (register_hook).
    Backward end: the full backward hook (the gradient of the module's input is ready) when an
    input required a gradient, and the parameter (accumulate-grad) tensor hooks: the end is the
    later of the two, so a first layer, whose input needs no gradient and whose full backward
    hook fires as its backward starts, still ends when its weight gradient is computed.
    In mode "tensor" (the fallback when full backward hooks cannot be used, e.g. with in-place
    operations on a module's output under torch 1.13) the end is a tensor hook on the inputs."""

    def __init__(self, torch, modules, clock, mode):
        self.torch = torch
        self.modules = modules  # [(name, module, is_leaf)]
        self.clock = clock
        self.mode = mode  # "module" or "tensor"
        self.handles = []
        self.active = False
        self.order = []  # module names in first-forward execution order
        self.order_set = set()
        self.is_leaf = {n: leaf for n, _, leaf in modules}
        self.first_call_info = {}  # name -> {"flops": (f, b), "activation_bytes": n}
        self.capture_info = False
        self.reset()

    def reset(self):
        self.fwd = {}  # name -> [(start, end)]
        self.bw_start = {}  # name -> [t]
        self.bw_end = {}  # name -> [t]
        self.param_done = {}  # name -> [t]
        self.open_calls = {}  # name -> [start tokens]
        self.calls_with_grad = {}  # name -> number of calls whose input required grad
        self.info = {}

    def _mark(self):
        return self.clock.mark()

    def install(self):
        seen_params = set()
        for name, m, is_leaf in self.modules:
            self.handles.append(m.register_forward_pre_hook(self._pre_hook(name)))
            self.handles.append(m.register_forward_hook(self._fwd_hook(name, m)))
            use_full = self.mode == "module" and is_leaf
            if use_full:
                if _has_full_backward_pre_hook(m):
                    self.handles.append(m.register_full_backward_pre_hook(self._bw_pre_hook(name)))
                self.handles.append(m.register_full_backward_hook(self._bw_hook(name)))
            for p in m.parameters(recurse=False):
                if p.requires_grad and id(p) not in seen_params:
                    seen_params.add(id(p))
                    self.handles.append(p.register_hook(self._param_hook(name)))

    def remove(self):
        for h in self.handles:
            h.remove()
        self.handles = []

    # forward
    def _pre_hook(self, name):
        def hook(module, inputs):
            if not self.active:
                return None
            if name not in self.order_set:
                self.order.append(name)
                self.order_set.add(name)
            self.open_calls.setdefault(name, []).append(self._mark())
            grad_in = [t for t in _tensors(inputs) if t.requires_grad]
            if grad_in:
                self.calls_with_grad[name] = self.calls_with_grad.get(name, 0) + 1
                if self.mode == "tensor" or not self.is_leaf[name]:
                    # backward end: the gradient of the first input that needs one
                    grad_in[0].register_hook(self._tensor_end_hook(name))
            return None

        return hook

    def _fwd_hook(self, name, module):
        def hook(mod, inputs, output):
            if not self.active:
                return None
            t = self._mark()
            start = self.open_calls[name].pop()
            self.fwd.setdefault(name, []).append((start, t))
            outs = [o for o in _tensors(output) if o.requires_grad]
            if outs and not (self.mode == "module" and self.is_leaf[name] and _has_full_backward_pre_hook(module)):
                outs[0].register_hook(self._tensor_start_hook(name))
            if self.capture_info:
                f, b = layer_flops(module, inputs, output)
                info = self.info.setdefault(name, {"forward_flops": None, "backward_flops": None,
                                                   "activation_bytes": 0})
                if f is not None:
                    info["forward_flops"] = (info["forward_flops"] or 0) + f
                    info["backward_flops"] = (info["backward_flops"] or 0) + b
                info["activation_bytes"] += _output_bytes(output)
            return None

        return hook

    # backward: each hook stamps the time into one of the tables (looked up when it fires, as
    # reset() replaces them)
    def _stamper(self, table, name):
        def hook(*_):
            if self.active:
                getattr(self, table).setdefault(name, []).append(self._mark())
            return None

        return hook

    def _bw_pre_hook(self, name):  # module full backward pre-hook: backward of the module starts
        return self._stamper("bw_start", name)

    def _tensor_start_hook(self, name):  # tensor hook on the module's output's gradient
        return self._stamper("bw_start", name)

    def _bw_hook(self, name):  # module full backward hook: its input's gradient is done
        return self._stamper("bw_end", name)

    def _tensor_end_hook(self, name):  # tensor hook on the module's input's gradient
        return self._stamper("bw_end", name)

    def _param_hook(self, name):  # a parameter's gradient is done
        return self._stamper("param_done", name)


def _backward_durations(starts, ends, param_done, calls_with_grad):
    """Seconds of backward for one module in one iteration, from its marks (already in seconds)."""
    starts = sorted(starts)
    ends = sorted(ends) if calls_with_grad else []
    pdone = max(param_done) if param_done else None
    if not starts:
        return 0.0
    if len(starts) == 1:
        cand = list(ends) + ([pdone] if pdone is not None else [])
        cand = [e for e in cand if e >= starts[0]]
        return (max(cand) - starts[0]) if cand else 0.0
    # several calls: pair each start with the first unused end after it (backward runs the
    # calls in reverse order, so the intervals do not nest); a call without an end (its
    # input needed no gradient) ends when the parameter gradients are done
    total, used = 0.0, set()
    for s in starts:
        e = next((i for i, v in enumerate(ends) if i not in used and v >= s), None)
        if e is not None:
            used.add(e)
            total += ends[e] - s
        elif pdone is not None and pdone >= s:
            total += pdone - s
    return total


# ----------------------------------------------------------------------------------------------
# Module selection


def _profiled_modules(model):
    """[(name, module, is_leaf)]: every leaf module (with or without parameters), and the non-leaf
    modules that own parameters directly (their time is made exclusive of their children)."""
    out = []
    for name, m in model.named_modules():
        children = list(m.children())
        own = list(m.parameters(recurse=False))
        if not children:
            out.append((name or type(m).__name__.lower(), m, True))
        elif own:
            out.append((name or "(root)", m, False))
    return out


# ----------------------------------------------------------------------------------------------
# Hook overhead


def measure_hook_overhead(n_modules=100, iterations=30, warmup=5, device=None, mode=None):
    """Seconds of hook overhead per module and training step (forward + backward): a chain of
    n_modules nn.Identity-like modules timed with and without the profiler's hooks; the difference
    of the medians divided by n_modules (clamped at 0)."""
    import torch
    import torch.nn as nn

    device = torch.device(device or "cpu")
    clock = _make_clock(torch, device)

    class Pass(nn.Module):  # identity that keeps the autograd graph (x * 1 is a real node)
        def forward(self, x):
            return x * 1.0

    model = nn.Sequential(*[Pass() for _ in range(n_modules)]).to(device)
    x = torch.randn(16, 16, device=device, requires_grad=True)

    def run(rec):
        times = []
        for i in range(warmup + iterations):
            if rec is not None:
                rec.reset()
                rec.active = True
            clock.sync()
            t0 = clock.mark()
            model(x).sum().backward()
            t1 = clock.mark()
            clock.sync()
            if rec is not None:
                rec.active = False
            if i >= warmup:
                times.append(clock.resolve(t0, [t1])[0])
        return statistics.median(times)

    base = run(None)
    rec = _Recorder(torch, _profiled_modules(model), clock, mode or "module")
    rec.install()
    try:
        hooked = run(rec)
    finally:
        rec.remove()
    return max(0.0, (hooked - base) / n_modules)


# ----------------------------------------------------------------------------------------------
# Gradient noise scale


def _grad_sq_norm(torch, model):
    s = 0.0
    for p in model.parameters():
        if p.grad is not None:
            s += float(p.grad.detach().double().pow(2).sum())
    return s


def estimate_noise_scale(model, make_batch, loss_fn, batch_small, batch_big, samples=10, device=None):
    """The "simple" gradient noise scale B_simple = tr(Sigma) / |G|^2 (McCandlish et al. 2018,
    appendix A), from squared gradient norms at two batch sizes, each averaged over `samples`
    batches before combining:
        |G|^2    ~ (B_big |G_big|^2 - B_small |G_small|^2) / (B_big - B_small)
        tr(Sigma) ~ (|G_small|^2 - |G_big|^2) / (1/B_small - 1/B_big)
    loss_fn must average over the examples (reduction "mean"). Returns the cost file's
    "gradient_noise_scale" dict, or None when the estimate of |G|^2 or tr(Sigma) is not positive
    (too few samples for this model: the estimators are noisy)."""
    import torch

    bs, bb = int(batch_small), int(batch_big)
    if not 0 < bs < bb:
        raise ValueError("estimate_noise_scale: need 0 < batch_small < batch_big")
    device = torch.device(device or "cpu")
    g_small, g_big = [], []
    for _ in range(int(samples)):
        for b, acc in ((bs, g_small), (bb, g_big)):
            x, y = make_batch(b)
            x, y = _to(x, device), _to(y, device)
            model.zero_grad(set_to_none=True)
            loss_fn(model(x), y).backward()
            acc.append(_grad_sq_norm(torch, model))
    model.zero_grad(set_to_none=True)
    gs, gb = statistics.fmean(g_small), statistics.fmean(g_big)
    g2 = (bb * gb - bs * gs) / (bb - bs)
    tr = (gs - gb) / (1.0 / bs - 1.0 / bb)
    if not (g2 > 0 and tr > 0 and math.isfinite(g2) and math.isfinite(tr)):
        return None
    return {"b_simple": tr / g2, "batch_small": bs, "batch_big": bb, "samples": int(samples)}


# ----------------------------------------------------------------------------------------------
# The profile


def _to(obj, device):
    import torch

    if isinstance(obj, torch.Tensor):
        return obj.to(device)
    if isinstance(obj, (tuple, list)):
        return type(obj)(_to(o, device) for o in obj)
    if isinstance(obj, dict):
        return {k: _to(v, device) for k, v in obj.items()}
    return obj


def _call_model(model, inputs):
    if isinstance(inputs, (tuple, list)):
        return model(*inputs)
    if isinstance(inputs, dict):
        return model(**inputs)
    return model(inputs)


def _flop_counter_total(torch, model, inputs, targets, loss_fn):
    """Forward + backward FLOPs of one step by torch.utils.flop_counter.FlopCounterMode (torch >= 2.1),
    or None where it does not exist."""
    try:
        from torch.utils import flop_counter  # noqa: F401
    except ImportError:
        return None
    if not hasattr(flop_counter, "FlopCounterMode"):
        return None
    try:
        mode = flop_counter.FlopCounterMode(display=False)
    except TypeError:
        mode = flop_counter.FlopCounterMode()
    with mode:
        loss_fn(_call_model(model, inputs), targets).backward()
    model.zero_grad(set_to_none=True)
    return int(mode.get_total_flops())


def _input_shape(inputs):
    ts = _tensors(inputs)
    return list(ts[0].shape[1:]) if ts else []


def profile_model(model, make_batch, batch_sizes, loss_fn, optimizer_factory=None, iterations=20,
                  warmup=5, device=None, model_name="model", noise_scale_batches=None,
                  noise_scale_samples=10, backward_hooks="auto", device_probe_size=2048,
                  measure_overhead=True, log=None, on_batch=None, min_time_s=1.0):
    """Measures `model` and returns the cost-file dict (format dsgd-model-cost, version 1).

    make_batch(b) -> (inputs, targets): called once per batch size (the same batch is reused by
    every iteration of that size, so data loading is not timed). inputs is a tensor, or a tuple
    of positional arguments, or a dict of keyword arguments. loss_fn(output, targets) -> scalar.
    optimizer_factory(params) -> optimizer; default SGD(lr=0.01, momentum=0.9).
    A step = zero_grad (not timed), forward + loss, loss.backward(), optimizer.step().
    `warmup` untimed steps, then `iterations` timed ones, per batch size; the whole step
    without hooks (the file's step, forward, backward and optimizer) is timed over at least
    min_time_s seconds of steps (more iterations when they are shorter).
    noise_scale_batches=(b_small, b_big) adds "gradient_noise_scale" (noise_scale_samples pairs).
    backward_hooks: "module" (full backward hooks), "tensor" (tensor hooks only) or "auto"
    (module, falling back to tensor when the first step raises with the module hooks).
    device_probe_size: the matmul size of the peak FLOP/s measurement (None skips the device
    measurement and records 0 for both figures: for tests only).
    on_batch(b): called before the steps of each batch size are run (the command line's
    --processes keeps its other processes stepping at that batch)."""
    import torch

    log = log or (lambda msg: print(msg, file=sys.stderr))
    if device is None:
        device = next((p.device for p in model.parameters()), torch.device("cpu"))
    device = torch.device(device)
    batch_sizes = sorted(set(int(b) for b in batch_sizes))
    if not batch_sizes or batch_sizes[0] < 1:
        raise ValueError("profile_model: batch sizes must be positive integers")
    if iterations < 1 or warmup < 0 or not 0 <= min_time_s < float("inf"):
        raise ValueError("profile_model: iterations >= 1, warmup >= 0, 0 <= min_time_s < inf")
    model.to(device)
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = (optimizer_factory or (lambda ps: torch.optim.SGD(ps, lr=0.01, momentum=0.9)))(params)
    clock = _make_clock(torch, device)
    modules = _profiled_modules(model)
    if backward_hooks not in ("auto", "module", "tensor"):
        raise ValueError("backward_hooks: auto, module or tensor")
    mode = "module" if backward_hooks in ("auto", "module") else "tensor"
    if mode == "module" and not hasattr(torch.nn.Module, "register_full_backward_hook"):
        log("export_profile: this torch has no full backward hooks (torch < 1.8); tensor hooks used")
        mode = "tensor"

    def new_recorder(mode):
        rec = _Recorder(torch, modules, clock, mode)
        rec.install()
        return rec

    rec = new_recorder(mode)
    fc_total = None
    batches = []
    layer_names = None
    try:
        for bi, b in enumerate(batch_sizes):
            if on_batch:
                on_batch(b)
            inputs, targets = make_batch(b)
            inputs, targets = _to(inputs, device), _to(targets, device)
            if bi == 0:
                in_shape = _input_shape(inputs)
                fc_total = _flop_counter_total(torch, model, inputs, targets, loss_fn)
            per_iter = []  # dicts per timed iteration
            info = None
            for it in range(warmup + iterations):
                optimizer.zero_grad(set_to_none=True)
                rec.reset()
                rec.capture_info = info is None
                rec.active = True
                try:
                    s0, (s1, s2, s3) = _timed_step(model, inputs, targets, loss_fn, optimizer, clock)
                except RuntimeError as e:
                    rec.active = False
                    if backward_hooks == "auto" and rec.mode == "module" and bi == 0 and it == 0:
                        log("export_profile: full backward hooks failed (%s); falling back to tensor hooks"
                            % str(e).splitlines()[0])
                        rec.remove()
                        rec = new_recorder("tensor")
                        optimizer.zero_grad(set_to_none=True)
                        continue
                    raise
                rec.active = False
                if info is None:
                    info = rec.info
                    rec.capture_info = False
                if layer_names is None:
                    layer_names = list(rec.order)
                if it < warmup:
                    continue
                sec = lambda toks: clock.resolve(s0, toks)  # noqa: E731
                f0, f1, b1, o1 = 0.0, *sec([s1, s2, s3])
                row = {"step": o1 - f0, "forward": f1 - f0, "backward": b1 - f1, "optimizer": o1 - b1,
                       "fwd": {}, "bwd": {}, "ready": {}, "calls": {}}
                for name in layer_names:
                    calls = rec.fwd.get(name, [])
                    row["calls"][name] = len(calls)
                    flat = sec([t for c in calls for t in c])
                    row["fwd"][name] = sum(flat[i + 1] - flat[i] for i in range(0, len(flat), 2))
                    starts = sec(rec.bw_start.get(name, []))
                    ends = sec(rec.bw_end.get(name, []))
                    pd = sec(rec.param_done.get(name, []))
                    row["bwd"][name] = max(0.0, _backward_durations(starts, ends, pd,
                                                                    rec.calls_with_grad.get(name, 0)))
                    row["ready"][name] = (max(pd) - f1) if pd else None
                _make_exclusive(row, modules, layer_names)
                per_iter.append(row)
            entry = _batch_entry(b, iterations, per_iter, info, layer_names, modules)
            # The whole step, forward, backward and optimizer again without hooks: the hooks'
            # own cost (hook_overhead_s per module) is in the hooked figures, not in training.
            rec.remove()
            plain = _time_plain(model, inputs, targets, loss_fn, optimizer, clock, warmup, iterations, min_time_s)
            entry.update(plain)
            entry["unattributed_s"] = (plain["step"]["median_s"]
                                       - sum(l["forward"]["median_s"] + l["backward"]["median_s"]
                                             for l in entry["layers"])
                                       - plain["optimizer"]["median_s"])
            rec = new_recorder(rec.mode)
            batches.append(entry)
    finally:
        rec.active = False
        rec.remove()
        optimizer.zero_grad(set_to_none=True)
    # The model pass, hooks removed, at the largest batch (its inputs are the last made).
    model_pass = measure_model_pass(model, inputs, targets, loss_fn, optimizer, clock, params)

    unseen = [n for n, m, _ in modules if n not in layer_names and any(True for _ in m.parameters(recurse=False))]
    if unseen:
        log("export_profile: modules with parameters that never ran in forward (not counted): "
            + ", ".join(unseen))
    if device_probe_size:
        dev = measure_device(device, matmul_size=device_probe_size)
    else:
        dev = {"kind": device.type, "name": torch.cuda.get_device_name(device) if device.type == "cuda"
               else _cpu_name(), "peak_flops": 0.0, "memory_bandwidth_bytes_per_s": 0.0}
    overhead = measure_hook_overhead(device=device, mode=rec.mode) if measure_overhead else 0.0
    dtype = next((p.dtype for p in model.parameters()), torch.float32)
    flops_source = "closed form (Linear, Conv2d)"
    if fc_total is not None:
        flops_source += ("; torch.utils.flop_counter.FlopCounterMode: %d FLOPs per step (forward + "
                         "backward) at batch %d" % (fc_total, batch_sizes[0]))
    first = batches[0]["layers"]
    d = {
        "format": FORMAT,
        "version": VERSION,
        "model": model_name,
        "framework": "pytorch",
        "framework_version": torch.__version__.split("+")[0],
        "dtype": str(dtype).replace("torch.", ""),
        "device": dev,
        "input_shape": in_shape,
        "parameters": sum(l["parameters"] for l in first),
        "parameter_bytes": sum(l["parameter_bytes"] for l in first),
        "flops_source": flops_source,
        "hook_overhead_s": overhead,
        "batches": batches,
    }
    if model_pass is not None:
        d["model_pass"] = model_pass
    d["buffers"] = buffer_groups(model)
    if noise_scale_batches:
        gns = estimate_noise_scale(model, make_batch, loss_fn, noise_scale_batches[0], noise_scale_batches[1],
                                   samples=noise_scale_samples, device=device)
        if gns is None:
            log("export_profile: gradient noise scale not estimated (|G|^2 or tr(Sigma) estimate not "
                "positive); try more samples or larger batches")
        else:
            d["gradient_noise_scale"] = gns
    validate_cost_file(d)
    return d


def _timed_step(model, inputs, targets, loss_fn, optimizer, clock):
    """One step (forward + loss, backward, optimizer); its start mark and the marks after each part."""
    clock.sync()
    s0 = clock.mark()
    loss = loss_fn(_call_model(model, inputs), targets)
    s1 = clock.mark()
    loss.backward()
    s2 = clock.mark()
    optimizer.step()
    s3 = clock.mark()
    clock.sync()
    return s0, [s1, s2, s3]


def measure_model_pass(model, inputs, targets, loss_fn, optimizer, clock, params, repeats=10):
    """{"median_s", "spread", "samples"} of one elementwise pass over the parameters as one flat
    vector (what a synchronisation algorithm's copy of the model to send, its mix or its average
    costs): the mean of a copy of the parameters into a flat buffer and a y <- y + a*x over it,
    each timed right after an (untimed) training step, which leaves the caches as training does;
    `repeats` of each (median of their means)."""
    import torch

    total = sum(p.numel() for p in params)
    if total == 0:
        return None
    ref = params[0]
    flat = torch.empty(total, dtype=ref.dtype, device=ref.device)
    other = torch.zeros_like(flat)

    def after_step(fn):
        optimizer.zero_grad(set_to_none=True)
        _timed_step(model, inputs, targets, loss_fn, optimizer, clock)
        clock.sync()
        with torch.no_grad():
            t0 = clock.mark()
            fn()
            t1 = clock.mark()
        clock.sync()
        return clock.resolve(t0, [t1])[0]

    copies = [after_step(lambda: torch.cat([p.detach().reshape(-1) for p in params], out=flat))
              for _ in range(repeats)]
    axpys = [after_step(lambda: other.add_(flat, alpha=0.5)) for _ in range(repeats)]
    optimizer.zero_grad(set_to_none=True)
    return summarize([(c + a) / 2.0 for c, a in zip(copies, axpys)])


def _time_plain(model, inputs, targets, loss_fn, optimizer, clock, warmup, iterations, min_time_s=0.0):
    """step / forward / backward / optimizer stats of steps without hooks: `iterations` of them,
    more until their steps add up to min_time_s (a host whose speed changes from second to
    second, as one shared with other processes, is sampled over that time, not one moment)."""
    rows = []
    it, timed = 0, 0.0
    while it < warmup + iterations or timed < min_time_s:
        optimizer.zero_grad(set_to_none=True)
        s0, marks = _timed_step(model, inputs, targets, loss_fn, optimizer, clock)
        if it >= warmup:
            f1, b1, o1 = clock.resolve(s0, marks)
            rows.append({"step": o1, "forward": f1, "backward": b1 - f1, "optimizer": o1 - b1})
            timed += o1
        it += 1
    out = {key: summarize([r[key] for r in rows]) for key in ("step", "forward", "backward", "optimizer")}
    # Each iteration's step in order: the distribution the simulator's compute jitter draws from.
    out["step"]["times_s"] = [max(0.0, float(r["step"])) for r in rows]
    return out


def _make_exclusive(row, modules, layer_names):
    """Non-leaf modules with their own parameters: subtract their profiled descendants' times."""
    for name, _, leaf in modules:
        if leaf or name not in row["fwd"]:
            continue
        prefix = "" if name == "(root)" else name + "."
        kids = [n for n in layer_names if n != name and n.startswith(prefix)]
        for key in ("fwd", "bwd"):
            row[key][name] = max(0.0, row[key][name] - sum(row[key][k] for k in kids))


def _batch_entry(b, iterations, per_iter, info, layer_names, modules):
    by_name = {n: m for n, m, _ in modules}
    counted = set()
    layers = []
    for name in layer_names:
        m = by_name[name]
        own = [p for p in m.parameters(recurse=False) if id(p) not in counted]
        counted.update(id(p) for p in own)
        ready = [r["ready"][name] for r in per_iter if r["ready"][name] is not None]
        li = info.get(name, {}) if info else {}
        layers.append({
            "name": name,
            "type": type(m).__name__,
            "calls": per_iter[0]["calls"][name],
            "parameters": sum(p.numel() for p in own),
            "parameter_bytes": sum(p.numel() * p.element_size() for p in own),
            "forward": summarize([r["fwd"][name] for r in per_iter]),
            "backward": summarize([r["bwd"][name] for r in per_iter]),
            "forward_flops": li.get("forward_flops"),
            "backward_flops": li.get("backward_flops"),
            "activation_bytes": li.get("activation_bytes"),
            "grad_ready_s": max(0.0, statistics.median(ready)) if ready and own else None,
        })
    entry = {"batch": b, "iterations": iterations}
    for key in ("step", "forward", "backward", "optimizer"):
        entry[key] = summarize([r[key] for r in per_iter])
    entry["unattributed_s"] = (entry["step"]["median_s"]
                               - sum(l["forward"]["median_s"] + l["backward"]["median_s"] for l in layers)
                               - entry["optimizer"]["median_s"])
    entry["layers"] = layers
    return entry


# ----------------------------------------------------------------------------------------------
# Validation and output


class CostFileError(ValueError):
    pass


def buffer_groups(model):
    """The model's buffers (BatchNorm's running statistics and counters, a registered mask) by
    dtype, in order of first appearance: [{"dtype", "tensors", "bytes"}]. PyTorch DDP broadcasts
    them from rank 0 before every forward (broadcast_buffers=True, its default), one coalesced
    broadcast per dtype."""
    groups = {}
    for b in model.buffers():
        g = groups.setdefault(str(b.dtype).replace("torch.", ""), [0, 0])
        g[0] += 1
        g[1] += b.numel() * b.element_size()
    return [{"dtype": k, "tensors": v[0], "bytes": v[1]} for k, v in groups.items()]


def validate_cost_file(d):
    """Raises CostFileError (a ValueError) naming the first problem; returns d when it is a valid
    version-1 cost file: required fields and types, finite non-negative times and counts, the
    version, layers identical across batch entries, totals equal to the sums over layers."""

    def fail(msg):
        raise CostFileError("cost file: " + msg)

    def is_int(v):
        return isinstance(v, int) and not isinstance(v, bool)

    def is_num(v):
        return (is_int(v) or isinstance(v, float)) and math.isfinite(v)

    def need(obj, key, where, kind, nullable=False, nonneg=True):
        if not isinstance(obj, dict):
            fail("%s: not an object" % where)
        if key not in obj:
            fail("%s: missing field '%s'" % (where, key))
        v = obj[key]
        if v is None and nullable:
            return v
        ok = {"int": is_int, "num": is_num, "str": lambda x: isinstance(x, str),
              "list": lambda x: isinstance(x, list), "dict": lambda x: isinstance(x, dict)}[kind](v)
        if not ok:
            fail("%s.%s: expected %s, got %r" % (where, key, kind, v))
        if kind in ("int", "num") and nonneg and v < 0:
            fail("%s.%s: negative (%r)" % (where, key, v))
        return v

    def timing(obj, key, where):
        t = need(obj, key, where, "dict")
        need(t, "median_s", where + "." + key, "num")
        need(t, "spread", where + "." + key, "num")
        if need(t, "samples", where + "." + key, "int") < 1:
            fail("%s.%s.samples: must be >= 1" % (where, key))

    if not isinstance(d, dict):
        fail("not a JSON object")
    if need(d, "format", "top", "str") != FORMAT:
        fail("format must be '%s', got %r" % (FORMAT, d["format"]))
    if "version" not in d:
        fail("top: missing field 'version'")
    if d["version"] != VERSION or not is_int(d["version"]):
        fail("unsupported version %r (this reader knows version %d)" % (d["version"], VERSION))
    for key in ("model", "framework", "framework_version", "dtype", "flops_source"):
        need(d, key, "top", "str")
    dev = need(d, "device", "top", "dict")
    if need(dev, "kind", "device", "str") not in ("cpu", "cuda"):
        fail("device.kind must be cpu or cuda, got %r" % dev["kind"])
    need(dev, "name", "device", "str")
    need(dev, "peak_flops", "device", "num")
    need(dev, "memory_bandwidth_bytes_per_s", "device", "num")
    shape = need(d, "input_shape", "top", "list")
    if not all(is_int(v) and v >= 0 for v in shape):
        fail("input_shape: non-negative integers expected")
    total_p = need(d, "parameters", "top", "int")
    total_b = need(d, "parameter_bytes", "top", "int")
    need(d, "hook_overhead_s", "top", "num")
    batches = need(d, "batches", "top", "list")
    if not batches:
        fail("batches: empty")
    ref = None
    prev = None
    for i, e in enumerate(batches):
        w = "batches[%d]" % i
        b = need(e, "batch", w, "int")
        if b < 1:
            fail("%s.batch: must be >= 1" % w)
        if prev is not None and b <= prev:
            fail("%s.batch: batch entries must be sorted by batch and distinct" % w)
        prev = b
        if need(e, "iterations", w, "int") < 1:
            fail("%s.iterations: must be >= 1" % w)
        for key in ("step", "forward", "backward", "optimizer"):
            timing(e, key, w)
        times = e["step"].get("times_s")
        if times is not None:
            if not isinstance(times, list) or len(times) != e["step"]["samples"]:
                fail("%s.step.times_s: one time per sample (%d) expected" % (w, e["step"]["samples"]))
            if not all(is_num(v) and v >= 0 for v in times):
                fail("%s.step.times_s: finite times >= 0 expected" % w)
        need(e, "unattributed_s", w, "num", nonneg=False)
        layers = need(e, "layers", w, "list")
        if not layers:
            fail("%s.layers: empty" % w)
        sig = []
        for j, l in enumerate(layers):
            lw = "%s.layers[%d]" % (w, j)
            name = need(l, "name", lw, "str")
            need(l, "type", lw, "str")
            if need(l, "calls", lw, "int") < 1:
                fail("%s.calls: must be >= 1" % lw)
            p = need(l, "parameters", lw, "int")
            pb = need(l, "parameter_bytes", lw, "int")
            timing(l, "forward", lw)
            timing(l, "backward", lw)
            for key in ("forward_flops", "backward_flops", "activation_bytes"):
                need(l, key, lw, "num", nullable=True)
            need(l, "grad_ready_s", lw, "num", nullable=True)
            sig.append((name, p, pb))
        if len(set(s[0] for s in sig)) != len(sig):
            fail("%s.layers: duplicate layer names" % w)
        if ref is None:
            ref = sig
        elif sig != ref:
            fail("%s.layers: names, order or parameter counts differ from batches[0]" % w)
    if sum(s[1] for s in ref) != total_p:
        fail("parameters (%d) != sum over layers (%d)" % (total_p, sum(s[1] for s in ref)))
    if sum(s[2] for s in ref) != total_b:
        fail("parameter_bytes (%d) != sum over layers (%d)" % (total_b, sum(s[2] for s in ref)))
    if "model_pass" in d:
        timing(d, "model_pass", "top")
    if "buffers" in d:
        seen = set()
        for i, g in enumerate(need(d, "buffers", "top", "list")):
            where = "buffers[%d]" % i
            dt = need(g, "dtype", where, "str")
            if dt in seen:
                fail("%s.dtype: %r comes twice (one entry per dtype)" % (where, dt))
            seen.add(dt)
            if need(g, "tensors", where, "int") < 1:
                fail("%s.tensors: must be >= 1" % where)
            need(g, "bytes", where, "int")
    if "gradient_noise_scale" in d:
        g = need(d, "gradient_noise_scale", "top", "dict")
        need(g, "b_simple", "gradient_noise_scale", "num")
        bs = need(g, "batch_small", "gradient_noise_scale", "int")
        bb = need(g, "batch_big", "gradient_noise_scale", "int")
        if not 0 < bs < bb:
            fail("gradient_noise_scale: need 0 < batch_small < batch_big")
        if need(g, "samples", "gradient_noise_scale", "int") < 1:
            fail("gradient_noise_scale.samples: must be >= 1")
    return d


def _round(obj, digits=4):
    """Floats to `digits` significant digits (keeps the files small and diff-friendly)."""
    if isinstance(obj, float):
        return float("%.*g" % (digits, obj)) if math.isfinite(obj) else obj
    if isinstance(obj, dict):
        return {k: _round(v, digits) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_round(v, digits) for v in obj]
    return obj


def write_cost_file(d, path):
    """Validates d and writes it as JSON (floats rounded to 4 significant digits); "-" is stdout."""
    import json

    validate_cost_file(d)
    text = json.dumps(_round(d), indent=1, allow_nan=False) + "\n"
    if path == "-":
        sys.stdout.write(text)
    else:
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, path)


# ----------------------------------------------------------------------------------------------
# Built-in example models (plain torch)


def build_example(name):
    """(model, make_batch, loss_fn, model_name) of a built-in example: mlp (784-256-10, inputs
    flattened 28x28), mlp3 (784-512-256-10), cnn (small CNN, 3x32x32), resnet20 (3x32x32), gpt
    (2 decoder blocks, d-model 128, 4 heads, 64 tokens, byte vocabulary)."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    def classification(shape, classes=10):
        # random inputs labelled by a fixed random linear "teacher", so that the task is
        # learnable and the gradient has a signal (the noise scale needs one)
        gen = torch.Generator().manual_seed(12345)
        teacher = torch.randn(math.prod(shape), classes, generator=gen)

        def make_batch(b):
            x = torch.randn(b, *shape)
            return x, (x.reshape(b, -1) @ teacher).argmax(dim=1)

        return make_batch

    if name in ("mlp", "mlp3"):
        widths = [784, 256, 10] if name == "mlp" else [784, 512, 256, 10]
        layers = []
        for i in range(len(widths) - 1):
            layers.append(("fc%d" % (i + 1), nn.Linear(widths[i], widths[i + 1])))
            if i < len(widths) - 2:
                layers.append(("relu%d" % (i + 1), nn.ReLU()))
        from collections import OrderedDict

        model = nn.Sequential(OrderedDict(layers))
        return model, classification([784]), nn.CrossEntropyLoss(), "mlp-" + "-".join(map(str, widths))
    if name == "cnn":
        model = nn.Sequential(
            nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(64 * 8 * 8, 128), nn.ReLU(), nn.Linear(128, 10))
        return model, classification([3, 32, 32]), nn.CrossEntropyLoss(), "cnn-3x32x32"
    if name == "resnet20":

        class Block(nn.Module):
            def __init__(self, cin, cout, stride):
                super().__init__()
                self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
                self.bn1 = nn.BatchNorm2d(cout)
                self.relu1 = nn.ReLU()
                self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
                self.bn2 = nn.BatchNorm2d(cout)
                self.relu2 = nn.ReLU()
                self.shortcut = None
                if stride != 1 or cin != cout:
                    self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                                  nn.BatchNorm2d(cout))

            def forward(self, x):
                out = self.bn2(self.conv2(self.relu1(self.bn1(self.conv1(x)))))
                return self.relu2(out + (self.shortcut(x) if self.shortcut is not None else x))

        class ResNet20(nn.Module):
            def __init__(self, classes=10):
                super().__init__()
                self.conv = nn.Conv2d(3, 16, 3, 1, 1, bias=False)
                self.bn = nn.BatchNorm2d(16)
                self.relu = nn.ReLU()
                blocks, c = [], 16
                for stage, w in enumerate((16, 32, 64)):
                    for i in range(3):
                        blocks.append(Block(c, w, 2 if stage > 0 and i == 0 else 1))
                        c = w
                self.blocks = nn.Sequential(*blocks)
                self.pool = nn.AdaptiveAvgPool2d(1)
                self.fc = nn.Linear(64, classes)

            def forward(self, x):
                x = self.blocks(self.relu(self.bn(self.conv(x))))
                return self.fc(torch.flatten(self.pool(x), 1))

        del F
        return ResNet20(), classification([3, 32, 32]), nn.CrossEntropyLoss(), "resnet20-3x32x32"
    if name == "gpt":
        # The shape of dsgd-bench's small GPT (--workload transformer --model gpt --layers 2
        # --d-model 128 --heads 4 --seq 64, byte vocabulary): pre-LayerNorm decoder blocks with
        # causal attention and a GELU MLP, learned positions, an untied head.
        D, H, S, V, L = 128, 4, 64, 256, 2

        class Attention(nn.Module):
            def __init__(self):
                super().__init__()
                self.qkv = nn.Linear(D, 3 * D)
                self.out = nn.Linear(D, D)
                # additive, in float: gloo cannot broadcast a bool buffer (DDP broadcasts buffers)
                self.register_buffer("mask", torch.full((S, S), float("-inf")).triu(1))

            def forward(self, x):
                b = x.shape[0]
                q, k, v = (t.view(b, S, H, D // H).transpose(1, 2) for t in self.qkv(x).split(D, dim=2))
                att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(D // H))
                att = F.softmax(att + self.mask, dim=-1)
                return self.out((att @ v).transpose(1, 2).contiguous().view(b, S, D))

        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.ln1 = nn.LayerNorm(D)
                self.attn = Attention()
                self.ln2 = nn.LayerNorm(D)
                self.fc = nn.Linear(D, 4 * D)
                self.gelu = nn.GELU()
                self.proj = nn.Linear(4 * D, D)

            def forward(self, x):
                x = x + self.attn(self.ln1(x))
                return x + self.proj(self.gelu(self.fc(self.ln2(x))))

        class GPT(nn.Module):
            def __init__(self):
                super().__init__()
                self.wte = nn.Embedding(V, D)
                self.wpe = nn.Embedding(S, D)
                self.blocks = nn.Sequential(*[Block() for _ in range(L)])
                self.lnf = nn.LayerNorm(D)
                self.head = nn.Linear(D, V, bias=False)
                self.register_buffer("pos", torch.arange(S))

            def forward(self, idx):
                return self.head(self.lnf(self.blocks(self.wte(idx) + self.wpe(self.pos))))

        # A fixed token stream with structure (each token mostly follows from the one before),
        # so that the next-token task is learnable; windows of S + 1 tokens at random offsets.
        gen = torch.Generator().manual_seed(12345)
        n = 1 << 16
        succ = torch.randint(0, V, (V,), generator=gen).tolist()
        noise = torch.randint(0, V, (n,), generator=gen).tolist()
        keep = (torch.rand(n, generator=gen) < 0.8).tolist()
        tokens = [0] * n
        for i in range(1, n):
            tokens[i] = succ[tokens[i - 1]] if keep[i] else noise[i]
        stream = torch.tensor(tokens, dtype=torch.long)

        def make_batch(b):
            starts = torch.randint(0, stream.numel() - S - 1, (b,))
            win = torch.stack([stream[s:s + S + 1] for s in starts.tolist()])
            return win[:, :-1], win[:, 1:]

        def loss_fn(logits, targets):
            return F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1))

        return GPT(), make_batch, loss_fn, "gpt-l%d-d%d-s%d" % (L, D, S)
    raise ValueError("unknown example model %r (mlp, mlp3, cnn, resnet20, gpt)" % name)


EXAMPLES = ("mlp", "mlp3", "cnn", "resnet20", "gpt")


def _profile_example(args, batches, result=None, current=None, ready=None):
    """The measuring process of main(): profiles the built-in example and puts its dict in
    `result`. With --processes N, `current` tells the other processes which batch to step at
    (0: stop) and `ready` is the barrier they meet at, warmed up, before the measurement."""
    import torch

    torch.manual_seed(args.seed)
    if args.threads:
        set_threads(torch, args.threads)
    model, make_batch, loss_fn, model_name = build_example(args.model)
    on_batch = None
    if current is not None:
        current.value = batches[0]
        ready.wait()

        def on_batch(b):
            current.value = b
    try:
        d = profile_model(model, make_batch, batches, loss_fn, iterations=args.iterations, warmup=args.warmup,
                          min_time_s=args.min_time,
                          device=args.device or "cpu", model_name=model_name,
                          noise_scale_batches=(batches[0], batches[-1]) if args.noise_scale else None,
                          noise_scale_samples=args.noise_samples, backward_hooks=args.backward_hooks,
                          log=lambda msg: print(msg, file=sys.stderr), on_batch=on_batch)
    finally:
        if current is not None:
            current.value = 0
    d["processes"] = args.processes
    if result is not None:
        result.put(d)
    return d


def _peer_steps(index, args, batches, current, ready):
    """Another process of --processes N: runs the example's training steps at the batch the
    measuring process is at (current.value) until it is 0, as another rank of the real job
    keeps this host's cores, caches and memory busy while the first one is timed."""
    import torch

    torch.manual_seed(args.seed + index)
    if args.threads:
        set_threads(torch, args.threads)
    device = torch.device(args.device or "cpu")
    model, make_batch, loss_fn, _ = build_example(args.model)
    model.to(device)
    model.train()
    optimizer = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.01, momentum=0.9)
    data = {}
    for b in batches:
        inputs, targets = make_batch(b)
        data[b] = (_to(inputs, device), _to(targets, device))
    for inputs, targets in data.values():  # warm-up
        optimizer.zero_grad(set_to_none=True)
        loss_fn(_call_model(model, inputs), targets).backward()
        optimizer.step()
    ready.wait()
    while True:
        b = current.value
        if b <= 0:
            break
        inputs, targets = data.get(b, data[batches[-1]])
        optimizer.zero_grad(set_to_none=True)
        loss_fn(_call_model(model, inputs), targets).backward()
        optimizer.step()
        if device.type == "cuda":
            torch.cuda.synchronize(device)


def main(argv=None):
    ap = argparse.ArgumentParser(
        prog="export_profile.py",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Writes a dsgd-bench model cost file (docs/model-cost-file.md) for one of the "
                    "built-in example models. For your own model, import this module from your "
                    "training program and call profile_model() and write_cost_file(): see the "
                    "example at the top of tools/export_profile.py (python3 -c 'import "
                    "export_profile; help(export_profile)' from tools/).",
        epilog="Example: python3 tools/export_profile.py --model mlp --batches 16,32,64 -o mlp.json\n\n"
               "From your own program:\n\n" + __doc__.split("program (the command line only runs\n"
                                                              "built-in example models):\n\n")[1]
                                                  .split("\n\nStandard library")[0])
    ap.add_argument("--model", default="mlp", choices=EXAMPLES, help="built-in example model (default mlp)")
    ap.add_argument("--batches", default="16,32,64", help="comma-separated batch sizes (default 16,32,64)")
    ap.add_argument("--iterations", type=int, default=20, help="timed iterations per batch size (default 20)")
    ap.add_argument("--min-time", type=float, default=1.0,
                    help="time the whole step over at least this many seconds per batch size (default 1; "
                         "more iterations than --iterations when steps are short)")
    ap.add_argument("--warmup", type=int, default=5, help="untimed warm-up iterations (default 5)")
    ap.add_argument("--device", default=None, help="cpu or cuda[:N] (default cpu)")
    ap.add_argument("--threads", type=int, default=None,
                    help="threads of torch and of the BLAS it runs on (torch.set_num_threads, and OpenBLAS's "
                         "own count where torch uses it; default: theirs)")
    ap.add_argument("--backward-hooks", default="auto", choices=("auto", "module", "tensor"),
                    help="how backward is timed (default auto: full backward hooks, tensor hooks if they fail)")
    ap.add_argument("--noise-scale", action="store_true",
                    help="also estimate the gradient noise scale B_simple between the smallest and "
                         "largest batch size")
    ap.add_argument("--noise-samples", type=int, default=10, help="batch pairs for --noise-scale (default 10)")
    ap.add_argument("--processes", type=int, default=1,
                    help="measure with N processes on this host, as N ranks of the real job share it "
                         "(default 1: alone): the first is timed while the others run the same training "
                         "steps at the batch it is measuring")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("-o", "--output", default="-", help="output file (default stdout)")
    args = ap.parse_args(argv)
    try:
        batches = sorted(set(int(v) for v in args.batches.split(",") if v.strip()))
    except ValueError:
        ap.error("--batches: comma-separated positive integers")
    if not batches or batches[0] < 1:
        ap.error("--batches: comma-separated positive integers")
    if args.iterations < 1 or args.warmup < 0:
        ap.error("--iterations >= 1, --warmup >= 0")
    if not args.min_time >= 0 or args.min_time == float("inf"):
        ap.error("--min-time: seconds, >= 0 and finite")
    if args.noise_scale and len(batches) < 2:
        ap.error("--noise-scale needs two different batch sizes in --batches")
    if args.processes < 1:
        ap.error("--processes >= 1")
    if args.processes == 1:
        d = _profile_example(args, batches)
    else:
        # N processes on this host at once (a host that runs N ranks of the real job: they
        # share its cores, caches and memory bandwidth): the first measures; the others step the
        # same model at the batch it is measuring from before its first timed step to its last.
        import queue
        import torch.multiprocessing as mp

        ctx = mp.get_context("spawn")
        result = ctx.Queue()
        current = ctx.Value("i", 0)
        ready = ctx.Barrier(args.processes, timeout=600)
        procs = [ctx.Process(target=_profile_example, args=(args, batches, result, current, ready))]
        procs += [ctx.Process(target=_peer_steps, args=(i, args, batches, current, ready))
                  for i in range(1, args.processes)]
        for p in procs:
            p.start()
        d = None
        while d is None and procs[0].is_alive():
            if any(p.exitcode not in (None, 0) for p in procs[1:]):
                ready.abort()  # a process that failed before the barrier: the first stops waiting
                break
            try:
                d = result.get(timeout=1)
            except queue.Empty:
                pass
        if d is None:
            try:
                d = result.get(timeout=1)
            except queue.Empty:
                pass
        current.value = 0
        for p in procs:
            p.join()
        if d is None or any(p.exitcode != 0 for p in procs):
            print("export_profile: a process of --processes failed", file=sys.stderr)
            return 1
    write_cost_file(d, args.output)
    e = d["batches"][-1]
    print("export_profile: %s, %d layers, %d parameters; batch %d: step %.3g s (forward %.3g, backward %.3g, "
          "optimizer %.3g, unattributed %.3g); hook overhead %.3g s per module; wrote %s"
          % (d["model"], len(e["layers"]), d["parameters"], e["batch"], e["step"]["median_s"],
             e["forward"]["median_s"], e["backward"]["median_s"], e["optimizer"]["median_s"],
             e["unattributed_s"], d["hook_overhead_s"], args.output), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
