#!/usr/bin/env python3
"""tools/chakra_trace.py: the committed example trace is what its spec writes, byte for byte;
traces round-trip through the schema; set-batch records a batch and keeps the nodes; the
command line writes and dumps.

Skips (unittest.skipUnless) without python3-protobuf or protoc; CI installs both."""
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TOOL = os.path.join(ROOT, "tools", "chakra_trace.py")
DATA = os.path.join(ROOT, "tests", "data", "chakra")
sys.path.insert(0, os.path.join(ROOT, "tools"))

try:
    import google.protobuf  # noqa: F401
    HAVE_PROTOBUF = shutil.which("protoc") is not None
except ImportError:
    HAVE_PROTOBUF = False

import chakra_trace as ct  # noqa: E402  (standard library at import time)


def spec():
    with open(os.path.join(DATA, "mlp3.json")) as f:
        return json.load(f)


@unittest.skipUnless(HAVE_PROTOBUF, "needs python3-protobuf and protoc")
class Traces(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()

    def tearDown(self):
        shutil.rmtree(self.dir)

    def test_the_committed_example_is_what_its_spec_writes(self):
        with open(os.path.join(DATA, "mlp3.et"), "rb") as f:
            committed = f.read()
        self.assertEqual(ct.encode(ct.build(spec())), committed,
                         "regenerate: python3 tools/chakra_trace.py write tests/data/chakra/mlp3.json "
                         "-o tests/data/chakra/mlp3.et")

    def test_round_trip(self):
        et = ct.schema()
        path = os.path.join(self.dir, "t.et")
        ct.write_trace(spec(), path)
        meta, nodes = ct.read_trace(path)
        self.assertEqual(meta.version, "0.0.4")
        self.assertEqual([(a.name, a.int64_val) for a in meta.attr], [("batch_size", 32)])
        self.assertEqual(len(nodes), 16)
        self.assertEqual([n.id for n in nodes], list(range(16)))
        self.assertEqual(list(nodes[0].data_deps), [])
        self.assertEqual(list(nodes[5].data_deps), [4])
        comp = [n.duration_micros for n in nodes if n.type == et.COMP_NODE]
        self.assertEqual(sum(comp), 508)
        colls = [n for n in nodes if n.type == et.COMM_COLL_NODE]
        self.assertEqual([{a.name: a.int64_val for a in n.attr} for n in colls],
                         [{"comm_type": et.ALL_REDUCE, "comm_size": b} for b in (5160, 131584, 803840)])
        # gzip, as Chakra's own reader accepts
        gz = os.path.join(self.dir, "t.et.gz")
        with open(path, "rb") as f, gzip.open(gz, "wb") as g:
            g.write(f.read())
        self.assertEqual(len(ct.read_trace(gz)[1]), 16)

    def test_set_batch_keeps_the_nodes(self):
        d = spec()
        del d["batch"]
        src, dst = os.path.join(self.dir, "a.et"), os.path.join(self.dir, "b.et")
        ct.write_trace(d, src)
        self.assertEqual(len(ct.read_trace(src)[0].attr), 0)
        ct.set_batch(src, dst, 64)
        meta, nodes = ct.read_trace(dst)
        self.assertEqual([(a.name, a.int64_val) for a in meta.attr], [("batch_size", 64)])
        self.assertEqual([n.SerializeToString() for n in nodes],
                         [n.SerializeToString() for n in ct.read_trace(src)[1]])
        ct.set_batch(dst, dst, 16)  # replaces, does not add
        self.assertEqual([(a.name, a.int64_val) for a in ct.read_trace(dst)[0].attr], [("batch_size", 16)])

    def test_unknown_kind_is_refused(self):
        with self.assertRaises(ValueError):
            ct.build({"nodes": [{"kind": "teleport"}]})

    def test_command_line(self):
        out = os.path.join(self.dir, "c.et")
        subprocess.run([sys.executable, TOOL, "write", os.path.join(DATA, "mlp3.json"), "-o", out], check=True)
        lines = subprocess.run([sys.executable, TOOL, "dump", out], check=True, capture_output=True,
                               text=True).stdout.splitlines()
        self.assertEqual(json.loads(lines[0])["attr"], {"batch_size": 32})
        ar = json.loads(lines[9])
        self.assertEqual((ar["name"], ar["type"], ar["attr"]["comm_type"], ar["attr"]["comm_size"]),
                         ("allreduce_fc3", "COMM_COLL_NODE", "ALL_REDUCE", 5160))


if __name__ == "__main__":
    unittest.main()
