#!/usr/bin/env python3
"""Write, inspect and annotate Chakra execution traces (docs/chakra.md).

dsgd-bench reads one rank's Chakra trace as a model's cost (--workload chakra:FILE). This tool
writes small traces from a JSON description (the tests' traces, or a hand-made model), adds
the batch size a trace was recorded at (a GlobalMetadata attribute "batch_size", a dsgd-bench
convention), and prints a trace's nodes. It uses the schema of workloads/chakra_et.proto,
which mirrors Chakra's et_def.proto, compiled on first use with protoc (Debian:
protobuf-compiler, python3-protobuf).

    python3 tools/chakra_trace.py write spec.json -o model.et
    python3 tools/chakra_trace.py set-batch trace.et --batch 32 -o trace32.et
    python3 tools/chakra_trace.py dump model.et

A spec (JSON):

    {"version": "0.0.4", "batch": 32,
     "nodes": [{"name": "fc1", "kind": "comp", "duration_us": 100},
               {"name": "fc1_backward", "kind": "comp", "duration_us": 210},
               {"name": "bucket0", "kind": "allreduce", "bytes": 803840, "duration_us": 600}]}

kind: comp, allreduce, or any collective of Chakra's CollectiveCommType in lower case
(allgather, reducescatter, broadcast, alltoall, barrier, ...), send, recv, memload,
memstore, metadata. Optional per node: "id" (default its position), "deps" (data
dependencies; default the previous node), "is_cpu_op" (bool), "num_ops" (int). "batch" may be
left out (the trace then records none).
"""
import argparse
import atexit
import gzip
import importlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

_HERE = os.path.dirname(os.path.abspath(__file__))
PROTO = os.path.join(_HERE, os.pardir, "workloads", "chakra_et.proto")
_schema = None

COLLECTIVES = {
    "allreduce": "ALL_REDUCE", "reduce": "REDUCE", "allgather": "ALL_GATHER", "gather": "GATHER",
    "scatter": "SCATTER", "broadcast": "BROADCAST", "alltoall": "ALL_TO_ALL",
    "reducescatter": "REDUCE_SCATTER", "reducescatterblock": "REDUCE_SCATTER_BLOCK", "barrier": "BARRIER",
}
NODE_TYPES = {"comp": "COMP_NODE", "send": "COMM_SEND_NODE", "recv": "COMM_RECV_NODE",
              "memload": "MEM_LOAD_NODE", "memstore": "MEM_STORE_NODE", "metadata": "METADATA_NODE"}


def schema():
    """The generated module of workloads/chakra_et.proto (protoc run once per process)."""
    global _schema
    if _schema is None:
        out = tempfile.mkdtemp(prefix="chakra_et_")
        atexit.register(shutil.rmtree, out, True)
        proto_dir = os.path.dirname(os.path.abspath(PROTO))
        subprocess.run(["protoc", f"--proto_path={proto_dir}", f"--python_out={out}", os.path.abspath(PROTO)],
                       check=True)
        sys.path.insert(0, out)
        try:
            _schema = importlib.import_module("chakra_et_pb2")
        finally:
            sys.path.remove(out)
    return _schema


def _varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(0x80 | b)
        else:
            out.append(b)
            return bytes(out)


def encode(messages):
    """The bytes of a trace: each message preceded by its length as a varint."""
    out = bytearray()
    for m in messages:
        body = m.SerializeToString()
        out += _varint(len(body)) + body
    return bytes(out)


def decode(data):
    """(GlobalMetadata, [Node]) of a trace's bytes (plain, not gzip)."""
    et = schema()
    pos, messages = 0, []
    while pos < len(data):
        n, shift = 0, 0
        while True:
            b = data[pos]
            pos += 1
            n |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                break
        if pos + n > len(data):
            raise ValueError(f"truncated message at byte {pos}")
        messages.append(data[pos:pos + n])
        pos += n
    if not messages:
        raise ValueError("empty trace")
    meta = et.GlobalMetadata()
    meta.ParseFromString(messages[0])
    nodes = []
    for m in messages[1:]:
        node = et.Node()
        node.ParseFromString(m)
        nodes.append(node)
    return meta, nodes


def read_trace(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return decode(data)


def _attr(name, **value):
    a = schema().AttributeProto(name=name)
    for k, v in value.items():
        setattr(a, k, v)
    return a


def metadata(version="0.0.4", batch=None):
    meta = schema().GlobalMetadata(version=version)
    if batch is not None:
        meta.attr.append(_attr("batch_size", int64_val=int(batch)))
    return meta


def build(spec):
    """The messages of the trace a spec describes (see the module's docstring)."""
    et = schema()
    messages = [metadata(spec.get("version", "0.0.4"), spec.get("batch"))]
    previous = None
    for i, d in enumerate(spec["nodes"]):
        kind = d["kind"]
        node = et.Node(id=int(d.get("id", i)), name=d.get("name", ""))
        node.duration_micros = int(d.get("duration_us", 0))
        if kind in COLLECTIVES:
            node.type = et.COMM_COLL_NODE
            node.attr.append(_attr("comm_type", int64_val=et.CollectiveCommType.Value(COLLECTIVES[kind])))
            node.attr.append(_attr("comm_size", int64_val=int(d.get("bytes", 0))))
        elif kind in NODE_TYPES:
            node.type = et.NodeType.Value(NODE_TYPES[kind])
            if kind in ("send", "recv"):
                node.attr.append(_attr("comm_size", int64_val=int(d.get("bytes", 0))))
        else:
            raise ValueError(f"node {i}: unknown kind {kind!r}")
        if "is_cpu_op" in d:
            node.attr.append(_attr("is_cpu_op", bool_val=bool(d["is_cpu_op"])))
        if "num_ops" in d:
            node.attr.append(_attr("num_ops", int64_val=int(d["num_ops"])))
        deps = d.get("deps", [] if previous is None else [previous])
        node.data_deps.extend(int(x) for x in deps)
        previous = node.id
        messages.append(node)
    return messages


def write_trace(spec, path):
    with open(path, "wb") as f:
        f.write(encode(build(spec)))


def set_batch(src, dst, batch):
    meta, nodes = read_trace(src)
    kept = [a for a in meta.attr if a.name != "batch_size"]
    del meta.attr[:]
    meta.attr.extend(kept)
    meta.attr.append(_attr("batch_size", int64_val=int(batch)))
    with open(dst, "wb") as f:
        f.write(encode([meta] + nodes))


def dump(path):
    et = schema()
    meta, nodes = read_trace(path)
    attrs = {a.name: getattr(a, a.WhichOneof("value")) for a in meta.attr if a.WhichOneof("value")}
    print(json.dumps({"version": meta.version, "attr": attrs}, default=str))
    for n in nodes:
        a = {x.name: getattr(x, x.WhichOneof("value")) for x in n.attr if x.WhichOneof("value")}
        if "comm_type" in a and isinstance(a["comm_type"], int) and n.type == et.COMM_COLL_NODE:
            a["comm_type"] = et.CollectiveCommType.Name(a["comm_type"])
        print(json.dumps({"id": n.id, "name": n.name, "type": et.NodeType.Name(n.type),
                          "duration_us": n.duration_micros, "data_deps": list(n.data_deps),
                          "ctrl_deps": list(n.ctrl_deps), "attr": a}, default=str))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("write", help="write the trace a JSON spec describes")
    w.add_argument("spec")
    w.add_argument("-o", "--output", required=True)
    b = sub.add_parser("set-batch", help="record the batch size a trace was recorded at")
    b.add_argument("trace")
    b.add_argument("--batch", type=int, required=True)
    b.add_argument("-o", "--output", required=True)
    d = sub.add_parser("dump", help="print a trace's metadata and nodes, one JSON object a line")
    d.add_argument("trace")
    a = p.parse_args(argv)
    if a.cmd == "write":
        with open(a.spec) as f:
            write_trace(json.load(f), a.output)
    elif a.cmd == "set-batch":
        if a.batch < 1:
            p.error("--batch must be positive")
        set_batch(a.trace, a.output, a.batch)
    else:
        dump(a.trace)


if __name__ == "__main__":
    main()
