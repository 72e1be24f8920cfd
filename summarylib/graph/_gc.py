"""``gc_paused()``: building and serializing large graphs without cyclic-GC passes."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["gc_paused"]

_gc_lock = threading.Lock()
_gc_pauses = 0  # nested or concurrent gc_paused() blocks
_gc_resume = False  # whether the last block to end turns the collector back on


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while a capture adapter builds a graph.

    Building a graph of 10k nodes allocates a few hundred thousand containers (pending
    nodes, attr dicts, input lists), which keeps triggering collections, and a full
    collection walks every object alive, the model's included: measured, one full
    collection took 0.21-0.27 s of CPU during the fx conversion of a 10k-node torch
    model; with the pause none runs there or in the write after it (nor on the JAX MLP
    of bench/graph_compare.py, as long as one block covers the whole build: with a gap,
    the deferred full collection ran in the write instead). Nothing built here is cyclic
    garbage that must go at once; a graph the caller keeps is still walked by later
    collections. Only our own conversion is paused, never the framework's tracing
    (torch.export makes cyclic garbage for seconds). The collector runs again when the
    block ends; nested and concurrent blocks are counted, and a collector that was
    already off stays off.
    """
    global _gc_pauses, _gc_resume
    with _gc_lock:
        if _gc_pauses == 0:
            _gc_resume = gc.isenabled()
            gc.disable()
        _gc_pauses += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_pauses -= 1
            if _gc_pauses == 0 and _gc_resume:
                gc.enable()
