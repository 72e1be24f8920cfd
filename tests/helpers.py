"""Helpers shared by the tests.

Output is checked with readers nobody here wrote: tensorboard's own Python
event loader (``EventFileLoader``) and protos, besides summarylib's reader.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest


def tb_events(path: str | os.PathLike[str]) -> list:
    """Events of one file as written, parsed by TensorBoard's own reader and protos.

    This is TensorBoard's ``LegacyEventFileLoader``: its record reader and ``Event`` parsing,
    without the migrations its ``EventFileLoader`` then applies (which fill in ``data_class``
    and rewrite legacy values), so tests see the bytes we wrote.
    """
    from tensorboard.backend.event_processing import event_file_loader

    return list(event_file_loader.LegacyEventFileLoader(os.fspath(path)).Load())


def tb_loaded_events(path: str | os.PathLike[str]) -> list:
    """Events of one file as TensorBoard's Python loader hands them to its multiplexer
    (``EventFileLoader``: migrated to tensors with ``data_class`` set)."""
    from tensorboard.backend.event_processing import event_file_loader

    return list(event_file_loader.EventFileLoader(os.fspath(path)).Load())


def tb_scalar_points(path: str | os.PathLike[str]) -> dict[str, list[tuple[int, float, float]]]:
    """``{tag: [(step, wall_time, value)]}`` of one file, decoded with TensorBoard's code."""
    from tensorboard.util import tensor_util

    out: dict[str, list[tuple[int, float, float]]] = {}
    for ev in tb_loaded_events(path):
        if ev.HasField("summary"):
            for v in ev.summary.value:
                value = tensor_util.make_ndarray(v.tensor).item()
                out.setdefault(v.tag, []).append((ev.step, ev.wall_time, value))
    return out


def record_payloads(data: bytes, *, whole: bool = True) -> list[bytes]:
    """The payloads of the TFRecords in ``data``, in order (checksums are not checked:
    the readers under test do that). ``whole``: ``data`` must end at a record boundary;
    otherwise a torn last record is left out."""
    import struct

    out, pos = [], 0
    while pos + 12 <= len(data):
        (n,) = struct.unpack_from("<Q", data, pos)
        if not whole and pos + 16 + n > len(data):
            break
        out.append(data[pos + 12 : pos + 12 + n])
        pos += n + 16
    if whole:
        assert pos == len(data), f"{len(data) - pos} bytes after the last whole record"
    return out


def only_file(logdir: str | os.PathLike[str]) -> Path:
    files = [p for p in Path(logdir).iterdir() if "tfevents" in p.name]
    assert len(files) == 1, files
    return files[0]


def wait_until(predicate: Callable[[], bool], timeout: float = 10.0) -> bool:
    """Poll ``predicate`` until true or ``timeout`` (bounded, never hangs a test)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()


@contextmanager
def torch_warns_always() -> Iterator[None]:
    """torch warns once per process for some warnings; make every call warn."""
    torch = pytest.importorskip("torch")
    before = torch.is_warn_always_enabled()
    torch.set_warn_always(True)
    try:
        yield
    finally:
        torch.set_warn_always(before)


def tb_directory_watcher(directory: str | os.PathLike[str]) -> object:
    """TensorBoard's Python ``DirectoryWatcher`` on one run directory, as its multiplexer
    builds it: files in name order, each read through ``EventFileLoader``, and never a file
    that sorts before the one being read. Call ``.Load()`` once per reload."""
    from tensorboard.backend.event_processing import (
        directory_watcher,
        event_file_loader,
        io_wrapper,
    )

    return directory_watcher.DirectoryWatcher(
        os.fspath(directory), event_file_loader.EventFileLoader, io_wrapper.IsSummaryEventsFile
    )


def ancestors(view: object, name: str) -> list[str]:
    """The groups above node ``name`` of a graph view (``view.nodes[n].parent``),
    innermost first, the root's empty name left out."""
    nodes = view.nodes  # type: ignore[attr-defined]
    chain = []
    parent = nodes[name].parent
    while parent:
        chain.append(parent)
        parent = nodes[parent].parent
    return chain


def io_callbacks(jaxpr: Any) -> list[Any]:
    """The ``io_callback`` equations of a jaxpr, those of its sub-jaxprs (loop and
    ``cond`` bodies) included: what crosses to the host is their operands."""
    from jax.extend import core as jax_core

    found = []
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "io_callback":
            found.append(eqn)
        for sub in jax_core.jaxprs_in_params(eqn.params):
            found.extend(io_callbacks(getattr(sub, "jaxpr", sub)))
    return found


def summary_op_inputs() -> tuple[Callable[..., Any], list[list[tuple[int, ...]]]]:
    """A torch.compile backend that runs the graph as traced and records, for each
    ``summarylib::summary`` op in it, the shapes of the tensors it takes; and that record."""
    seen: list[list[tuple[int, ...]]] = []

    def backend(gm: Any, example_inputs: Any) -> Any:
        for node in gm.graph.nodes:
            if node.op == "call_function" and "summarylib.summary" in str(node.target):
                tensors = node.args[2] if len(node.args) > 2 else node.kwargs["values"]
                seen.append([tuple(t.meta["example_value"].shape) for t in tensors])
        return gm.forward

    return backend, seen


def assert_columns_are_nodes(cols: Any, raws: list[Any]) -> None:
    """Every node of the graph view's source columns ``cols`` (``read_source``) is what
    the record-per-node reader made of it: ``raws[j]`` (name, op, device, attributes,
    output shapes, XLA attributes, inputs)."""
    assert len(cols.names) == len(raws)
    for j, raw in enumerate(raws):
        assert (cols.names[j], cols.ops[j], cols.devices[j]) == (raw.name, raw.op, raw.device)
        attrs, shapes, xla = cols.records[int(cols.rec[j])]
        assert (list(attrs.items()), shapes, xla) == (list(raw.attrs.items()), raw.shapes,
                                                      raw.xla)
        assert cols.inputs(j) == raw.inputs
