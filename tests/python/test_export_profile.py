#!/usr/bin/env python3
"""tools/export_profile.py: timing recovery, FLOP and byte counts, layer order, schema validation.

Skips (unittest.skipUnless) where torch is not importable; CI installs python3-torch."""
import copy
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tools"))

try:
    import torch
    import torch.nn as nn
    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False

import export_profile as ep  # noqa: E402  (standard library at import time)

FAST = dict(iterations=20, warmup=2, device_probe_size=64, measure_overhead=False, log=lambda m: None,
            min_time_s=0.0)


def _sleeping_layer(fwd_s, bwd_s):
    class Sleep(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, w):
            time.sleep(fwd_s)
            ctx.save_for_backward(x, w)
            return x * w

        @staticmethod
        def backward(ctx, g):
            x, w = ctx.saved_tensors
            time.sleep(bwd_s)
            return g * w, (g * x).sum().reshape(w.shape)

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.ones(1))

        def forward(self, x):
            return Sleep.apply(x, self.w)

    return Layer()


def _mse_batch(b):
    return torch.randn(b, 4), torch.randn(b, 4)


@unittest.skipUnless(HAVE_TORCH, "torch is not importable (apt-get install python3-torch)")
class SleepingModules(unittest.TestCase):
    # Tolerance: the larger of 25 % and 5 ms. time.sleep overshoots by the scheduler's wake-up
    # latency (tens of microseconds idle, a few milliseconds on a loaded 2-core machine), and
    # the hooks add their own overhead (tens of microseconds per module); the median of 20
    # iterations removes isolated preemptions. A wrong attribution (forward for backward, a
    # missed layer, two layers' time in one) is off by >= 10 ms, well outside.
    def near(self, got, want, what):
        tol = max(0.25 * want, 0.005)
        self.assertLess(abs(got - want), tol, "%s: measured %.4f s, slept %.4f s" % (what, got, want))

    def check(self, backward_hooks):
        model = nn.Sequential()
        model.add_module("a", _sleeping_layer(0.020, 0.040))  # input needs no gradient
        model.add_module("b", _sleeping_layer(0.010, 0.030))  # input needs one
        d = ep.profile_model(model, _mse_batch, [2], nn.MSELoss(), backward_hooks=backward_hooks, **FAST)
        a, b = d["batches"][0]["layers"]
        print("\n%s hooks: a forward %.4f backward %.4f ready %.4f; b forward %.4f backward %.4f ready %.4f"
              % (backward_hooks, a["forward"]["median_s"], a["backward"]["median_s"], a["grad_ready_s"],
                 b["forward"]["median_s"], b["backward"]["median_s"], b["grad_ready_s"]), file=sys.stderr)
        self.near(a["forward"]["median_s"], 0.020, "a forward")
        self.near(a["backward"]["median_s"], 0.040, "a backward")
        self.near(b["forward"]["median_s"], 0.010, "b forward")
        self.near(b["backward"]["median_s"], 0.030, "b backward")
        # backward runs b then a: b's gradients are ready after ~30 ms, a's after ~70 ms
        self.near(b["grad_ready_s"], 0.030, "b grad ready")
        self.near(a["grad_ready_s"], 0.070, "a grad ready")
        e = d["batches"][0]
        self.near(e["step"]["median_s"], 0.100, "step")
        self.assertLess(abs(e["unattributed_s"]), 0.01)

    def test_module_hooks(self):
        self.check("module")

    def test_tensor_hooks(self):
        self.check("tensor")

    def test_in_place_fallback(self):
        # torch 1.13's full backward hooks refuse an in-place op on a hooked module's output;
        # "auto" falls back to tensor hooks and still times the sleeping layer
        msgs = []
        model = nn.Sequential(_sleeping_layer(0.010, 0.020), nn.ReLU(inplace=True), nn.Linear(4, 4))
        d = ep.profile_model(model, _mse_batch, [2], nn.MSELoss(), **dict(FAST, log=msgs.append))
        self.assertEqual([l["name"] for l in d["batches"][0]["layers"]], ["0", "1", "2"])
        self.near(d["batches"][0]["layers"][0]["backward"]["median_s"], 0.020, "backward after fallback")
        if msgs:  # only where the module hooks failed (torch 1.13 does)
            self.assertIn("falling back to tensor hooks", msgs[0])

    def test_module_called_twice(self):
        class Twice(nn.Module):
            def __init__(self):
                super().__init__()
                self.s = _sleeping_layer(0.010, 0.020)

            def forward(self, x):
                return self.s(self.s(x))

        d = ep.profile_model(Twice(), _mse_batch, [2], nn.MSELoss(), **FAST)
        (s,) = d["batches"][0]["layers"]
        self.assertEqual(s["calls"], 2)
        self.near(s["forward"]["median_s"], 0.020, "two forward calls summed")
        self.near(s["backward"]["median_s"], 0.040, "two backward calls summed")


@unittest.skipUnless(HAVE_TORCH, "torch is not importable (apt-get install python3-torch)")
class Counts(unittest.TestCase):
    def test_linear_flops_and_bytes(self):
        m = nn.Linear(100, 50)
        x = torch.randn(8, 100)
        f, b = ep.layer_flops(m, (x,), m(x))
        self.assertEqual(f, 2 * 8 * 100 * 50 + 8 * 50)
        self.assertEqual(b, 2 * f)
        m2 = nn.Linear(100, 50, bias=False)
        x3 = torch.randn(2, 3, 100)  # leading dimensions all count as rows
        self.assertEqual(ep.layer_flops(m2, (x3,), m2(x3))[0], 2 * 6 * 100 * 50)
        d = ep.profile_model(nn.Sequential(m), lambda n: (torch.randn(n, 100), torch.randn(n, 50)), [8],
                             nn.MSELoss(), **FAST)
        (l,) = d["batches"][0]["layers"]
        self.assertEqual(l["parameters"], 100 * 50 + 50)
        self.assertEqual(l["parameter_bytes"], 4 * (100 * 50 + 50))
        self.assertEqual(l["forward_flops"], 2 * 8 * 100 * 50 + 8 * 50)
        self.assertEqual(l["activation_bytes"], 8 * 50 * 4)

    def test_conv2d_flops_and_bytes(self):
        m = nn.Conv2d(6, 8, (3, 5), stride=2, padding=1, groups=2)
        x = torch.randn(4, 6, 11, 13)
        y = m(x)
        _, cout, hout, wout = y.shape
        f, b = ep.layer_flops(m, (x,), y)
        self.assertEqual(f, 2 * 4 * 8 * hout * wout * (6 // 2) * 3 * 5 + 4 * 8 * hout * wout)
        self.assertEqual(b, 2 * f)
        d = ep.profile_model(nn.Sequential(m, nn.Flatten()),
                             lambda n: (torch.randn(n, 6, 11, 13), torch.randn(n, 8 * hout * wout)), [4],
                             nn.MSELoss(), **FAST)
        conv, flat = d["batches"][0]["layers"]
        self.assertEqual(conv["parameters"], 8 * 3 * 3 * 5 + 8)
        self.assertEqual(conv["parameter_bytes"], 4 * conv["parameters"])
        self.assertEqual(conv["forward_flops"], f)
        self.assertEqual(conv["activation_bytes"], y.numel() * 4)
        self.assertIsNone(flat["forward_flops"])
        self.assertIsNone(flat["grad_ready_s"])
        self.assertIsNotNone(conv["grad_ready_s"])

    def test_other_types_have_no_flops(self):
        m = nn.BatchNorm1d(3)
        x = torch.randn(4, 3)
        self.assertEqual(ep.layer_flops(m, (x,), m(x)), (None, None))


@unittest.skipUnless(HAVE_TORCH, "torch is not importable (apt-get install python3-torch)")
class OrderAndSchema(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        class Net(nn.Module):  # registration order differs from execution order
            def __init__(self):
                super().__init__()
                self.late = nn.Linear(16, 4)
                self.act = nn.Tanh()
                self.early = nn.Linear(8, 16)
                self.scale = nn.Parameter(torch.ones(4))  # owned by the root: a layer of its own

            def forward(self, x):
                return self.late(self.act(self.early(x))) * self.scale

        torch.manual_seed(0)
        cls.d = ep.profile_model(Net(), lambda n: (torch.randn(n, 8), torch.randn(n, 4)), [16, 4, 8],
                                 nn.MSELoss(), model_name="net", **FAST)

    def test_execution_order(self):
        for e in self.d["batches"]:
            self.assertEqual([l["name"] for l in e["layers"]], ["(root)", "early", "act", "late"])
        self.assertEqual([e["batch"] for e in self.d["batches"]], [4, 8, 16])

    def test_parameter_totals(self):
        layers = self.d["batches"][0]["layers"]
        self.assertEqual(sum(l["parameters"] for l in layers), self.d["parameters"])
        self.assertEqual(self.d["parameters"], 8 * 16 + 16 + 16 * 4 + 4 + 4)
        self.assertEqual(sum(l["parameter_bytes"] for l in layers), self.d["parameter_bytes"])
        self.assertEqual(self.d["parameter_bytes"], 4 * self.d["parameters"])

    def test_validates_and_round_trips(self):
        ep.validate_cost_file(self.d)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "net.json")
            ep.write_cost_file(self.d, path)
            with open(path) as f:
                back = json.load(f)
        ep.validate_cost_file(back)
        self.assertEqual(back["format"], "dsgd-model-cost")
        self.assertEqual(back["version"], 1)
        self.assertNotIn("gradient_noise_scale", back)

    def test_a_model_without_buffers_records_none(self):
        self.assertEqual(self.d["buffers"], [])

    def test_buffers_are_grouped_by_dtype(self):
        # BatchNorm1d(6): running_mean and running_var (float32), num_batches_tracked (int64);
        # the root's float64 buffer: one group per dtype, in order of first appearance in
        # model.buffers() (the root's own before its children's).
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 6)
                self.bn = nn.BatchNorm1d(6)
                self.register_buffer("table", torch.zeros(5, dtype=torch.float64))

            def forward(self, x):
                return self.bn(self.fc(x)) + self.table.sum().float()

        self.assertEqual(ep.buffer_groups(Net()), [{"dtype": "float64", "tensors": 1, "bytes": 5 * 8},
                                                   {"dtype": "float32", "tensors": 2, "bytes": 2 * 6 * 4},
                                                   {"dtype": "int64", "tensors": 1, "bytes": 8}])

    def test_model_pass_is_timed(self):
        mp = self.d["model_pass"]
        self.assertEqual(mp["samples"], 10)
        # A pass over 228 floats: positive, and far below a whole step of the smallest batch.
        self.assertGreater(mp["median_s"], 0.0)
        self.assertLess(mp["median_s"], self.d["batches"][0]["step"]["median_s"])

    def test_step_times_are_kept(self):
        for e in self.d["batches"]:
            st = e["step"]
            self.assertEqual(len(st["times_s"]), st["samples"])
            self.assertAlmostEqual(statistics.median(st["times_s"]), st["median_s"], places=12)

    def test_min_time_adds_iterations(self):
        d = ep.profile_model(nn.Linear(8, 4), lambda n: (torch.randn(n, 8), torch.randn(n, 4)), [4], nn.MSELoss(),
                             **dict(FAST, iterations=3, min_time_s=0.05))
        st = d["batches"][0]["step"]
        self.assertGreater(st["samples"], 3)  # a step of microseconds: many more than 3 for 50 ms
        self.assertGreaterEqual(sum(st["times_s"]), 0.05)
        self.assertEqual(d["batches"][0]["iterations"], 3)  # the hooked iterations stay as asked

    def test_rejects_broken_files(self):
        def broken(fn):
            d = copy.deepcopy(self.d)
            fn(d)
            return d

        l0 = lambda d: d["batches"][0]["layers"][1]  # noqa: E731
        cases = {
            "missing field": lambda d: d["batches"][0].pop("step"),
            "missing layer field": lambda d: l0(d).pop("backward"),
            "missing version": lambda d: d.pop("version"),
            "negative time": lambda d: l0(d)["forward"].update(median_s=-1e-3),
            "NaN time": lambda d: d["batches"][0]["optimizer"].update(median_s=math.nan),
            "infinite spread": lambda d: l0(d)["backward"].update(spread=math.inf),
            "wrong version": lambda d: d.update(version=2),
            "version as text": lambda d: d.update(version="1"),
            "wrong format": lambda d: d.update(format="something-else"),
            "bytes do not add up": lambda d: d.update(parameter_bytes=d["parameter_bytes"] + 4),
            "parameters do not add up": lambda d: d.update(parameters=d["parameters"] - 1),
            "layers differ between batches": lambda d: d["batches"][1]["layers"].reverse(),
            "batches unsorted": lambda d: d["batches"].reverse(),
            "zero samples": lambda d: l0(d)["forward"].update(samples=0),
            "bool as count": lambda d: l0(d).update(calls=True),
            "negative model pass": lambda d: d["model_pass"].update(median_s=-1e-6),
            "model pass without samples": lambda d: d["model_pass"].pop("samples"),
            "step times not one per sample": lambda d: d["batches"][0]["step"]["times_s"].pop(),
            "negative step time": lambda d: d["batches"][0]["step"]["times_s"].__setitem__(0, -1e-6),
            "buffers not a list": lambda d: d.update(buffers={"float32": 8}),
            "buffer dtype twice": lambda d: d.update(buffers=[{"dtype": "float32", "tensors": 1, "bytes": 4}] * 2),
            "buffer group without tensors": lambda d: d.update(buffers=[{"dtype": "int64", "tensors": 0,
                                                                         "bytes": 0}]),
            "negative buffer bytes": lambda d: d.update(buffers=[{"dtype": "int64", "tensors": 1, "bytes": -8}]),
            "bad noise scale": lambda d: d.update(gradient_noise_scale={"b_simple": 1.0, "batch_small": 8,
                                                                        "batch_big": 8, "samples": 3}),
        }
        for what, fn in cases.items():
            with self.subTest(what):
                with self.assertRaises(ValueError):
                    ep.validate_cost_file(broken(fn))
        # null where allowed, and a negative unattributed time, are fine
        ok = broken(lambda d: (l0(d).update(grad_ready_s=None, forward_flops=None),
                               d["batches"][0].update(unattributed_s=-1e-4)))
        ep.validate_cost_file(ok)


@unittest.skipUnless(HAVE_TORCH, "torch is not importable (apt-get install python3-torch)")
class Threads(unittest.TestCase):
    def test_set_threads_sets_openblas_too(self):
        # In a fresh process: torch.set_num_threads alone leaves an OpenBLAS that torch runs on
        # at the host's cores; set_threads sets both (or reports that no OpenBLAS is loaded).
        code = ("import json, sys, torch; sys.path.insert(0, %r); import export_profile as ep; "
                "on = ep.set_threads(torch, 1); "
                "print(json.dumps({'set': on, 'torch': torch.get_num_threads(), "
                "'blas': [lib.openblas_get_num_threads() for lib in ep._loaded_openblas()]}))"
                % os.path.join(ROOT, "tools"))
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        d = json.loads(r.stdout)
        self.assertEqual(d["torch"], 1)
        self.assertEqual(d["set"], bool(d["blas"]))
        self.assertEqual(d["blas"], [1] * len(d["blas"]))


@unittest.skipUnless(HAVE_TORCH, "torch is not importable (apt-get install python3-torch)")
class CommandLine(unittest.TestCase):
    def test_mlp_example_with_noise_scale(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "mlp.json")
            r = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "export_profile.py"), "--model", "mlp",
                                "--batches", "16,64", "--iterations", "20", "--noise-scale", "-o", out],
                               capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(out) as f:
                d = ep.validate_cost_file(json.load(f))
        self.assertEqual(d["parameters"], 784 * 256 + 256 + 256 * 10 + 10)
        self.assertEqual([l["name"] for l in d["batches"][0]["layers"]], ["fc1", "relu1", "fc2"])
        self.assertGreater(d["device"]["peak_flops"], 0)
        self.assertGreater(d["device"]["memory_bandwidth_bytes_per_s"], 0)
        self.assertGreater(d["hook_overhead_s"], 0)
        g = d["gradient_noise_scale"]
        self.assertEqual((g["batch_small"], g["batch_big"]), (16, 64))
        self.assertGreater(g["b_simple"], 0)

    def test_processes_time_the_first_while_the_others_step(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "mlp.json")
            r = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "export_profile.py"), "--model", "mlp",
                                "--batches", "8,16", "--iterations", "5", "--min-time", "0.1", "--threads", "1",
                                "--processes", "2", "-o", out], capture_output=True, text=True, timeout=600)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(out) as f:
                d = ep.validate_cost_file(json.load(f))
        self.assertEqual(d["processes"], 2)
        for e in d["batches"]:
            self.assertGreaterEqual(sum(e["step"]["times_s"]), 0.1)

    def test_gpt_example_is_the_small_gpt_and_trains(self):
        model, make_batch, loss_fn, name = ep.build_example("gpt")
        d, v, s, layers = 128, 256, 64, 2
        per_block = 2 * 2 * d + (d * 3 * d + 3 * d) + (d * d + d) + (d * 4 * d + 4 * d) + (4 * d * d + d)
        self.assertEqual(sum(p.numel() for p in model.parameters()), v * d + s * d + layers * per_block + 2 * d + d * v)
        self.assertEqual(name, "gpt-l2-d128-s64")
        # every buffer is one gloo can broadcast (DDP broadcasts buffers at construction)
        self.assertTrue(all(b.dtype in (torch.float32, torch.int64) for b in model.buffers()))
        torch.manual_seed(0)
        x, y = make_batch(4)
        self.assertEqual((tuple(x.shape), tuple(y.shape)), ((4, s), (4, s)))
        self.assertTrue(torch.equal(x[:, 1:], y[:, :-1]))  # targets are the next tokens
        # causal: the first position's logits do not depend on later tokens
        x2 = x.clone()
        x2[:, 1:] = (x2[:, 1:] + 1) % v
        self.assertTrue(torch.allclose(model(x)[:, 0], model(x2)[:, 0]))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        first = None
        for _ in range(30):
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            first = first if first is not None else loss.item()
        self.assertLess(loss.item(), 0.8 * first)  # one batch, fitted: the task is learnable

    def test_help_points_to_the_module(self):
        r = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "export_profile.py"), "--help"],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0)
        self.assertIn("profile_model", r.stdout)


class ExampleFile(unittest.TestCase):
    """The committed example (tests/data/cost_files/mlp.json) stays valid (no torch needed)."""

    def test_committed_example_validates(self):
        with open(os.path.join(ROOT, "tests", "data", "cost_files", "mlp.json")) as f:
            d = json.load(f)
        ep.validate_cost_file(d)
        self.assertEqual([e["batch"] for e in d["batches"]], [16, 32, 64])
        self.assertEqual(d["parameters"], 203530)
        # Written by this exporter: every optional field it writes is there.
        self.assertEqual(d["buffers"], [])
        self.assertIn("model_pass", d)
        for e in d["batches"]:
            self.assertEqual(len(e["step"]["times_s"]), e["step"]["samples"])


if __name__ == "__main__":
    unittest.main()
