"""A ~10k-node graph: time to build, convert and write it, and its size against TensorFlow's.

Run: ``python bench/graph_size.py [--blocks 245] [--reps 7]``. Prints one markdown table.

The graph is transformer-like (per block: attention with q/k/v projections, layer norms, an
MLP; parameters as ``Const``; every node with output shapes and a device), built with
``GraphBuilder``; 245 blocks give about 10,000 nodes. Measured, alternating within each
repetition (medians):

* ours: ``GraphBuilder`` construction, then ``write_graph`` + writer ``close()``;
* floor: the same structure as a ``GraphDef`` built directly with protobuf, the way
  TensorFlow's ``as_graph_def(add_shapes=True)`` writes it (names, inputs, devices, the
  same attrs, ``T``, ``_output_shapes``, and a ``value`` tensor with dtype and shape on
  each ``Const``), framed by hand and written synchronously (``floor.RecordFile``).

Sizes compare our serialized ``GraphDef`` with that TensorFlow-style one. TensorFlow would
also store every weight inside its ``Const`` values; the floor leaves them out, so the size
comparison is against a lower bound of TensorFlow's.
"""

from __future__ import annotations

import argparse
import gc
import shutil
import statistics
import struct
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from systems import load_floor  # noqa: E402
from tensorboard.compat.proto import graph_pb2 as tb_graph  # noqa: E402
from tensorboard.compat.proto import types_pb2 as tb_types  # noqa: E402

import summarylib as sl  # noqa: E402
import summarylib.graph as sg  # noqa: E402
from summarylib.graph import Graph, GraphBuilder, TensorSpec  # noqa: E402

F32 = "float32"
TIMES = "\u00d7"  # the multiplication sign


def spec(*shape: int | None) -> TensorSpec:
    return TensorSpec(shape, F32)


def build(blocks: int) -> Graph:
    """A transformer-like graph of about 41 nodes per block."""
    b = GraphBuilder(device="/device:CPU:0")
    h = b.placeholder((None, 128, 512), F32, name="input")
    init = b.no_op("init")
    for i in range(blocks):
        with b.name_scope(f"layer{i}"):
            skip = h
            with b.name_scope("attn"):
                heads = []
                for n in ("q", "k", "v"):
                    w = b.const(spec(512, 512), name=f"{n}_proj/weight")
                    bias = b.const(spec(512), name=f"{n}_proj/bias")
                    t = b.op("aten::linear", [h, w, bias], name=f"{n}_proj/linear",
                             outputs=spec(None, 128, 512))
                    t = b.op("aten::view", [t], name=f"{n}_proj/view",
                             outputs=spec(None, 128, 8, 64))
                    t = b.op("aten::transpose", [t], name=f"{n}_proj/transpose",
                             outputs=spec(None, 8, 128, 64), attrs={"dim0": 1, "dim1": 2})
                    heads.append(t)
                kt = b.op("aten::transpose", [heads[1]], outputs=spec(None, 8, 64, 128))
                s = b.op("aten::matmul", [heads[0], kt], outputs=spec(None, 8, 128, 128))
                s = b.op("aten::mul", [s, b.const(0.125, name="scale")],
                         outputs=spec(None, 8, 128, 128))
                p = b.op("aten::softmax", [s], outputs=spec(None, 8, 128, 128), attrs={"dim": -1})
                o = b.op("aten::matmul", [p, heads[2]], outputs=spec(None, 8, 128, 64))
                o = b.op("aten::transpose", [o], outputs=spec(None, 128, 8, 64))
                o = b.op("aten::reshape", [o], outputs=spec(None, 128, 512))
                w = b.const(spec(512, 512), name="out_proj/weight")
                o = b.op("aten::linear", [o, w], name="out_proj/linear",
                         outputs=spec(None, 128, 512))
            with b.control_dependencies([init]):
                h = b.op("aten::add", [o, skip], outputs=spec(None, 128, 512))
            h = _layer_norm(b, "ln1", h)
            skip = h
            with b.name_scope("mlp"):
                for j, (cin, cout) in enumerate([(512, 2048), (2048, 512)]):
                    w = b.const(spec(cout, cin), name=f"fc{j}/weight")
                    bias = b.const(spec(cout), name=f"fc{j}/bias")
                    h = b.op("aten::linear", [h, w, bias], name=f"fc{j}/linear",
                             outputs=spec(None, 128, cout))
                    if j == 0:
                        h = b.op("aten::gelu", [h], outputs=spec(None, 128, cout))
                        h = b.op("aten::dropout", [h], outputs=spec(None, 128, cout),
                                 attrs={"p": 0.1, "train": False})
            h = b.op("aten::add", [h, skip], outputs=spec(None, 128, 512))
            h = _layer_norm(b, "ln2", h)
    return b.graph


def _layer_norm(b: GraphBuilder, scope: str, h: Any) -> Any:
    with b.name_scope(scope):
        gamma = b.const(spec(512), name="weight")
        beta = b.const(spec(512), name="bias")
        return b.op("aten::layer_norm", [h, gamma, beta], outputs=spec(None, 128, 512),
                    attrs={"eps": 1e-5})


def tensorflow_style(g: Graph) -> tb_graph.GraphDef:
    """``g`` as TensorFlow's ``as_graph_def(add_shapes=True)`` would write it (no weights)."""
    gd = tb_graph.GraphDef()
    gd.versions.producer = 1882
    for n in g:
        nd = gd.node.add(name=n.name, op=n.op, device=n.device)
        nd.input.extend(n.inputs)
        nd.input.extend("^" + c for c in n.control_inputs)
        for key, v in n.attrs.items():
            if isinstance(v, bool):
                nd.attr[key].b = v
            elif isinstance(v, int):
                nd.attr[key].i = v
            elif isinstance(v, float):
                nd.attr[key].f = v
            elif isinstance(v, str):
                nd.attr[key].s = v.encode()
        if n.op == "Const":
            t = nd.attr["value"].tensor
            t.dtype = tb_types.DT_FLOAT
            for d in n.outputs[0].shape:
                t.tensor_shape.dim.add(size=d)
            if "value" in n.attrs:
                t.tensor_content = n.attrs["value"].tobytes()
        elif n.outputs:
            nd.attr["T"].type = tb_types.DT_FLOAT
        for o in n.outputs:
            s = nd.attr["_output_shapes"].list.shape.add()
            for d in o.shape:
                s.dim.add(size=-1 if d is None else d)
    return gd


def ours(logdir: str, blocks: int) -> tuple[float, float]:
    t0 = time.perf_counter()
    g = build(blocks)
    t1 = time.perf_counter()
    w = sl.create_file_writer(logdir)
    with w.as_default():
        sg.write_graph(g)
    w.close()
    return t1 - t0, time.perf_counter() - t1


def floor(logdir: str, g: Graph, floor_mod: Any) -> float:
    t0 = time.perf_counter()
    data = tensorflow_style(g).SerializeToString()
    out = floor_mod.RecordFile(logdir)
    out.write(b"\x09" + struct.pack("<d", time.time()) + floor_mod.length_delimited(b"\x22", data))
    out.close()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--blocks", type=int, default=245, help="blocks (~41 nodes each)")
    ap.add_argument("--reps", type=int, default=7)
    opts = ap.parse_args()
    floor_mod = load_floor()

    g = build(opts.blocks)
    edges = sum(len(n.inputs) + len(n.control_inputs) for n in g)
    ours_bytes = len(g.to_bytes())
    tf_bytes = len(tensorflow_style(g).SerializeToString())
    builds: list[float] = []
    writes: list[float] = []
    floors: list[float] = []
    for _ in range(opts.reps):
        for system in ("ours", "floor"):
            d = tempfile.mkdtemp(prefix="graph_size_")
            gc.collect()
            if system == "ours":
                b, w = ours(d, opts.blocks)
                builds.append(b)
                writes.append(w)
            else:
                floors.append(floor(d, g, floor_mod))
            shutil.rmtree(d)
    t0 = time.perf_counter()
    issues = [i for i in sg.check(g) if i.severity != "info"]
    lint_s = time.perf_counter() - t0

    med = statistics.median
    print(f"{len(g):,} nodes, {edges:,} edges, {opts.reps} repetitions (medians)\n")
    print("| measure | value |")
    print("|---|---|")
    print(f"| build with GraphBuilder | {med(builds) * 1e3:.0f} ms |")
    print(f"| write_graph + close() | {med(writes) * 1e3:.0f} ms |")
    print(f"| build + write + close | {(med(builds) + med(writes)) * 1e3:.0f} ms |")
    print(f"| floor: protobuf GraphDef TF-style + raw write (graph prebuilt) "
          f"| {med(floors) * 1e3:.0f} ms |")
    print(f"| write ÷ floor | {med(writes) / med(floors):.2f}{TIMES} |")
    print(f"| GraphDef bytes: ours / TF-style (no weights) | {ours_bytes:,} / {tf_bytes:,} "
          f"= {ours_bytes / tf_bytes:.2f}{TIMES} |")
    print(f"| check(): {len(issues)} warnings or errors | {lint_s * 1e3:.0f} ms |")


if __name__ == "__main__":
    main()
