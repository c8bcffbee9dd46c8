#!/usr/bin/env python3
"""tools/export_fabric.py: --spawn 2 on gloo over loopback, the alpha-beta fits, the file's checks.

Skips (unittest.skipUnless) where torch is not importable; CI installs python3-torch."""
import copy
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tools"))

try:
    import torch  # noqa: F401
    import torch.distributed as dist
    HAVE_GLOO = dist.is_available() and dist.is_gloo_available()
except ImportError:
    HAVE_GLOO = False

import export_fabric as ef  # noqa: E402  (standard library at import time)


class Fits(unittest.TestCase):
    def test_exact_line_is_recovered(self):
        pts = [(x, 1e-5 + 2e-9 * x) for x in (4, 8, 16, 32, 64)]
        a, b = ef.fit_alpha_beta(pts)
        self.assertAlmostEqual(a, 1e-5, delta=1e-12)
        self.assertAlmostEqual(b, 2e-9, delta=1e-15)

    def test_negative_slope_is_held_at_zero(self):
        a, b = ef.fit_alpha_beta([(4, 3e-5), (8, 2e-5), (16, 1e-5)])
        self.assertEqual(b, 0.0)
        self.assertAlmostEqual(a, 2e-5)

    def test_segments_cover_the_sizes(self):
        sizes = ef.sizes_up_to(4 << 20)
        self.assertEqual((sizes[0], sizes[-1], len(sizes)), (4, 4 << 20, 21))
        coll = [{"op": "allreduce", "bytes": s, "time_s": 1e-5 + 1e-9 * s} for s in sizes]
        fits = ef.fits_for(coll)
        self.assertEqual(fits[0]["min_bytes"], 4)
        self.assertEqual(fits[-1]["max_bytes"], 4 << 20)
        for f, g in zip(fits, fits[1:]):
            self.assertEqual(f["max_bytes"], g["min_bytes"])  # consecutive segments share an end point


@unittest.skipUnless(HAVE_GLOO, "torch with gloo is not importable (apt-get install python3-torch)")
class SpawnTwoRanks(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "fabric.json")
            r = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "export_fabric.py"), "--spawn", "2",
                                "--backend", "gloo", "--max-size", str(4 << 20), "--reps", "8", "--warmup", "2",
                                "-o", out], capture_output=True, text=True, timeout=500)
            cls.stderr = r.stderr
            cls.rc = r.returncode
            cls.d = json.load(open(out)) if r.returncode == 0 else None

    def setUp(self):
        self.assertEqual(self.rc, 0, self.stderr)

    def test_file_is_valid(self):
        ef.validate_fabric_file(self.d)
        self.assertEqual((self.d["backend"], self.d["world_size"], self.d["hosts"]), ("gloo", 2, 1))

    def test_allreduce_grows_with_size(self):
        ar = sorted((c["bytes"], c["time_s"]) for c in self.d["collectives"] if c["op"] == "allreduce")
        self.assertEqual(ar[0][0], 4)
        self.assertEqual(ar[-1][0], 4 << 20)
        self.assertTrue(all(t > 0 for _, t in ar))
        self.assertGreater(ar[-1][1], ar[0][1])  # 4 MiB takes longer than 4 B (overall, not monotonic)

    def test_ops_and_fits_present(self):
        ops = {c["op"] for c in self.d["collectives"]}
        self.assertTrue({"allreduce", "allgather", "broadcast", "sendrecv"} <= ops, ops)
        for c in self.d["collectives"]:
            self.assertLessEqual(c["time_min_s"], c["time_s"])
            self.assertLessEqual(c["time_s"], c["time_max_s"])
            # The repetitions' interquartile range / median: within what min..max allows.
            self.assertGreaterEqual(c["spread"], 0.0)
            self.assertLessEqual(c["spread"], (c["time_max_s"] - c["time_min_s"]) / c["time_s"] * 1.001 + 1e-6)
        for op in ops:
            self.assertTrue(any(f["op"] == op for f in self.d["fits"]), op)
        if "reduce_scatter" not in ops:
            self.assertTrue(any(n.startswith("reduce_scatter:") for n in self.d["notes"]), self.d["notes"])

    def test_rejects_broken_files(self):
        for what, fn in {"wrong version": lambda d: d.update(version=2),
                         "unknown op": lambda d: d["collectives"][0].update(op="all_reduce"),
                         "negative time": lambda d: d["collectives"][0].update(time_s=-1.0),
                         "negative spread": lambda d: d["collectives"][0].update(spread=-0.1),
                         "missing fits": lambda d: d.pop("fits")}.items():
            with self.subTest(what):
                d = copy.deepcopy(self.d)
                fn(d)
                with self.assertRaises(ValueError):
                    ef.validate_fabric_file(d)


class ExampleFile(unittest.TestCase):
    def test_committed_example_validates(self):
        with open(os.path.join(ROOT, "tests", "data", "cost_files", "fabric_gloo.json")) as f:
            d = ef.validate_fabric_file(json.load(f))
        self.assertEqual(max(c["bytes"] for c in d["collectives"]), 4 << 20)


if __name__ == "__main__":
    unittest.main()
