"""A layered (Sugiyama-style) layout of boxes and edges, in an abstract frame.

:func:`arrange` places ``n`` boxes, given their sizes along the layers (``o``) and across
them (``r``), and directed edges between them: cycles broken by depth-first search,
longest-path layering (sources pulled up next to their consumers), dummy nodes on long
edges, a few barycentre sweeps to order each layer, then coordinates that align each box
with the median of its neighbours (isotonic regression per layer keeps the minimum gaps).
More than :data:`CHUNK` boxes are cut into chunks in topological order, each laid out on
its own and placed on a near-square grid; many boxes without edges go on a grid beside the
rest. The graph view's layout (``layout.py``) maps ``(o, r)`` to pixels per ``rankdir``.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["CHUNK", "NODE_SEP", "RANK_SEP", "Layered", "Point", "acyclic", "arrange"]

#: Most children one layered layout handles; bigger groups are laid out in chunks.
CHUNK = 240
#: Gap between neighbours in a layer, between layers, and the width a dummy node takes.
NODE_SEP = 14.0
RANK_SEP = 38.0
DUMMY_W = 8.0
#: Edges spanning more layers than this are drawn straight (no dummy nodes).
MAX_SPAN = 40
#: From this many children without edges in a group, they go on a grid of their own.
GRID_MIN = 8
#: Gap between chunks of a chunked group.
CHUNK_GAP = 60.0

Point = tuple[float, float]


def acyclic(n: int, edges: list[tuple[int, int]]) -> tuple[list[bool], list[int]]:
    """Back edges of a depth-first search (to reverse) and a topological order.

    The search starts from the nodes in their given order, so the result is deterministic.
    After reversing the back edges, the order is Kahn's, always taking the ready node that
    comes first in the given order: independent parts keep the children's order (the order
    of first appearance), where a reverse post-order would flip them.
    """
    out: list[list[int]] = [[] for _ in range(n)]
    for i, (a, _b) in enumerate(edges):
        out[a].append(i)
    state = [0] * n  # 0 new, 1 on the stack, 2 done
    back = [False] * len(edges)
    for s in range(n):
        if state[s]:
            continue
        state[s] = 1
        stack = [(s, 0)]
        while stack:
            v, k = stack[-1]
            ev = out[v]
            if k < len(ev):
                stack[-1] = (v, k + 1)
                e = ev[k]
                w = edges[e][1]
                if state[w] == 1:
                    back[e] = True
                elif state[w] == 0:
                    state[w] = 1
                    stack.append((w, 0))
            else:
                state[v] = 2
                stack.pop()
    indeg = [0] * n
    succ: list[list[int]] = [[] for _ in range(n)]
    for i, (a, b) in enumerate(edges):
        if a != b:
            if back[i]:
                a, b = b, a
            succ[a].append(b)
            indeg[b] += 1
    ready = [v for v in range(n) if not indeg[v]]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        v = heapq.heappop(ready)
        order.append(v)
        for w in succ[v]:
            indeg[w] -= 1
            if not indeg[w]:
                heapq.heappush(ready, w)
    return back, order


def _pav(desired: list[float], weights: list[float], seps: list[float]) -> list[float]:
    """Positions closest to ``desired`` (weighted least squares) keeping ``x[i+1] - x[i] >=
    seps[i]``: isotonic regression (pool adjacent violators) on the shifted targets."""
    n = len(desired)
    offs = [0.0] * n
    for i in range(1, n):
        offs[i] = offs[i - 1] + seps[i - 1]
    # Blocks of pooled values: [weight sum, weighted value sum, count].
    bw: list[float] = []
    bs: list[float] = []
    bc: list[int] = []
    for i in range(n):
        w = weights[i]
        bw.append(w)
        bs.append(w * (desired[i] - offs[i]))
        bc.append(1)
        while len(bw) > 1 and bs[-2] * bw[-1] > bs[-1] * bw[-2]:
            w2, s2, c2 = bw.pop(), bs.pop(), bc.pop()
            bw[-1] += w2
            bs[-1] += s2
            bc[-1] += c2
    out: list[float] = []
    i = 0
    for w, s, c in zip(bw, bs, bc, strict=True):
        v = s / w
        for _ in range(c):
            out.append(v + offs[i])
            i += 1
    return out


def _median(vals: list[float]) -> float:
    vals.sort()
    m = len(vals) // 2
    return vals[m] if len(vals) % 2 else (vals[m - 1] + vals[m]) / 2.0


@dataclass
class Layered:
    """Result of :func:`layered` in the abstract frame (o, r): centres, routes, extent."""

    o: list[float]
    r: list[float]
    routes: list[list[Point]]  # per edge, in the edge's direction, as (o, r) points
    extent_o: float
    extent_r: float
    chunks: int = 1


def _layered(sizes: list[tuple[float, float]], edges: list[tuple[int, int]]) -> Layered:
    """Lay out ``len(sizes)`` nodes of size (along layers, across layers) with ``edges``.

    Parallel and self edges are allowed (self edges get no route).
    """
    n = len(sizes)
    if n <= 1:
        w, h = sizes[0] if sizes else (0.0, 0.0)
        return Layered([w / 2.0] * n, [h / 2.0] * n, [[] for _ in edges], w, h)
    back, topo = acyclic(n, edges)
    # Oriented edges (a below b in the ranking), each distinct pair once.
    preds: list[list[int]] = [[] for _ in range(n)]
    succs: list[list[int]] = [[] for _ in range(n)]
    # A dict, not a set: its order (first occurrence) is the order dummy chains are made
    # in, and the viewer's JavaScript port (assets/layout.js) must follow the same order.
    seen: dict[tuple[int, int], None] = {}
    for i, (a, b) in enumerate(edges):
        if a == b:
            continue
        if back[i]:
            a, b = b, a
        if (a, b) not in seen:
            seen[(a, b)] = None
            preds[b].append(a)
            succs[a].append(b)
    rank = [0] * n
    for v in topo:
        if preds[v]:
            rank[v] = max(rank[u] for u in preds[v]) + 1
    # Longest-path layering puts every source in layer 0; a source feeding only late
    # consumers sits better just below its first consumer (shorter edges, fewer dummies).
    for v in reversed(topo):
        if not preds[v] and succs[v]:
            rank[v] = min(rank[s] for s in succs[v]) - 1
    nranks = max(rank) + 1

    # Proper layered graph: real nodes 0..n-1, then dummies; adjacency between layers.
    size_o = [s[0] for s in sizes]
    lrank = list(rank)
    up: list[list[int]] = [[] for _ in range(n)]  # neighbours in the layer above (rank+1)
    down: list[list[int]] = [[] for _ in range(n)]  # neighbours in the layer below
    chains: dict[tuple[int, int], list[int]] = {}
    budget = max(2000, 8 * n)
    for a, b in sorted(seen, key=lambda p: rank[p[1]] - rank[p[0]]):
        span = rank[b] - rank[a]
        if span <= 1 or span > MAX_SPAN or budget < span:
            if span == 1:
                up[a].append(b)
                down[b].append(a)
            continue
        budget -= span - 1
        prev = a
        chain: list[int] = []
        for k in range(rank[a] + 1, rank[b]):
            d = len(lrank)
            lrank.append(k)
            size_o.append(DUMMY_W)
            up.append([])
            down.append([])
            up[prev].append(d)
            down[d].append(prev)
            chain.append(d)
            prev = d
        up[prev].append(b)
        down[b].append(prev)
        chains[(a, b)] = chain
    total = len(lrank)

    # Initial order: topological position; a dummy follows its edge's source.
    key = [0.0] * total
    for i, v in enumerate(topo):
        key[v] = float(i)
    for (a, _b), chain in chains.items():
        for d in chain:
            key[d] = key[a] + 0.5
    layers: list[list[int]] = [[] for _ in range(nranks)]
    for v in range(total):
        layers[lrank[v]].append(v)
    pos = [0.0] * total
    for layer in layers:
        layer.sort(key=key.__getitem__)
        for i, v in enumerate(layer):
            pos[v] = float(i)

    # Barycentre sweeps: up the layers using the neighbours below, then down, twice.
    def sweep(order: Iterable[int], nb: list[list[int]]) -> None:
        for r in order:
            layer = layers[r]
            if len(layer) == 1:
                continue
            bary: dict[int, float] = {}
            for v in layer:
                ns = nb[v]
                bary[v] = sum(pos[u] for u in ns) / len(ns) if ns else pos[v]
            layer.sort(key=bary.__getitem__)
            for i, v in enumerate(layer):
                pos[v] = float(i)

    for _ in range(2):
        sweep(range(1, nranks), down)
        sweep(range(nranks - 2, -1, -1), up)

    # Coordinates along the layers: pack, then pull each node to the median of its
    # neighbours in the layer just placed, keeping minimum gaps (nodes without neighbours
    # there weigh little, so they move out of the way).
    o = [0.0] * total
    for layer in layers:
        x = 0.0
        for v in layer:
            o[v] = x + size_o[v] / 2.0
            x += size_o[v] + NODE_SEP

    def align(order: Iterable[int], nb: list[list[int]]) -> None:
        for r in order:
            layer = layers[r]
            if len(layer) == 1:
                ns = nb[layer[0]]
                if ns:
                    o[layer[0]] = _median([o[u] for u in ns])
                continue
            desired: list[float] = []
            weights: list[float] = []
            for v in layer:
                ns = nb[v]
                if ns:
                    desired.append(_median([o[u] for u in ns]))
                    weights.append(1.0 if v < n else 2.0)  # keep long edges straight
                else:
                    desired.append(o[v])
                    weights.append(0.05)
            seps = [
                (size_o[layer[i]] + size_o[layer[i + 1]]) / 2.0 + NODE_SEP
                for i in range(len(layer) - 1)
            ]
            for v, x in zip(layer, _pav(desired, weights, seps), strict=True):
                o[v] = x

    for _ in range(2):
        align(range(1, nranks), down)
        align(range(nranks - 2, -1, -1), up)
    lo = min(o[v] - size_o[v] / 2.0 for v in range(total))
    hi = max(o[v] + size_o[v] / 2.0 for v in range(total))
    o = [x - lo for x in o]

    # Across the layers: each layer as thick as its thickest node.
    thick = [0.0] * nranks
    for v in range(n):
        thick[rank[v]] = max(thick[rank[v]], sizes[v][1])
    centre = [0.0] * nranks
    y = 0.0
    for k in range(nranks):
        centre[k] = y + thick[k] / 2.0
        y += thick[k] + RANK_SEP
    extent_r = y - RANK_SEP
    r = [centre[lrank[v]] for v in range(total)]

    routes: list[list[Point]] = []
    for i, (a, b) in enumerate(edges):
        if a == b:
            routes.append([])
            continue
        rev = back[i]
        chain = chains.get((b, a) if rev else (a, b), [])
        pts = [(o[d], r[d]) for d in chain]
        if rev:
            pts.reverse()
        routes.append(pts)
    return Layered(o[:n], r[:n], routes, hi - lo, extent_r)


def _chunked(sizes: list[tuple[float, float]], edges: list[tuple[int, int]]) -> Layered:
    """Lay out a big group as chunks of :data:`CHUNK` children in topological order, on a
    near-square grid (rows across the layers); edges between chunks stay straight."""
    n = len(sizes)
    _back, topo = acyclic(n, edges)
    nchunks = -(-n // CHUNK)
    chunk_of = [0] * n
    local = [0] * n
    members: list[list[int]] = [[] for _ in range(nchunks)]
    for i, v in enumerate(topo):
        c = i // CHUNK
        chunk_of[v] = c
        local[v] = len(members[c])
        members[c].append(v)
    inner: list[list[tuple[int, int]]] = [[] for _ in range(nchunks)]
    inner_ids: list[list[int]] = [[] for _ in range(nchunks)]
    for i, (a, b) in enumerate(edges):
        if chunk_of[a] == chunk_of[b]:
            inner[chunk_of[a]].append((local[a], local[b]))
            inner_ids[chunk_of[a]].append(i)
    parts = [
        _layered([sizes[v] for v in members[c]], inner[c]) for c in range(nchunks)
    ]
    # Columns so that the whole is about as wide as tall (chunks of a chain are tall).
    mean_o = sum(p.extent_o for p in parts) / nchunks + CHUNK_GAP
    mean_r = sum(p.extent_r for p in parts) / nchunks + CHUNK_GAP
    cols = max(1, min(nchunks, round(math.sqrt(nchunks * mean_r / mean_o))))
    o = [0.0] * n
    r = [0.0] * n
    routes: list[list[Point]] = [[] for _ in edges]
    row_r = 0.0
    extent_o = 0.0
    for start in range(0, nchunks, cols):
        row = range(start, min(start + cols, nchunks))
        row_o = 0.0
        for c in row:
            part = parts[c]
            for v, x, y in zip(members[c], part.o, part.r, strict=True):
                o[v] = row_o + x
                r[v] = row_r + y
            for i, pts in zip(inner_ids[c], part.routes, strict=True):
                routes[i] = [(row_o + x, row_r + y) for x, y in pts]
            row_o += part.extent_o + CHUNK_GAP
        extent_o = max(extent_o, row_o - CHUNK_GAP)
        row_r += max(parts[c].extent_r for c in row) + CHUNK_GAP
    return Layered(o, r, routes, extent_o, row_r - CHUNK_GAP, nchunks)


def _grid(sizes: list[tuple[float, float]]) -> Layered:
    """Nodes without edges on a near-square grid, in order, row by row."""
    k = len(sizes)
    cell_o = max(s[0] for s in sizes) + NODE_SEP
    cell_r = max(s[1] for s in sizes) + NODE_SEP
    cols = max(1, min(k, round(math.sqrt(k * cell_r / cell_o))))
    rows = -(-k // cols)
    o = [(i % cols) * cell_o + cell_o / 2.0 for i in range(k)]
    r = [(i // cols) * cell_r + cell_r / 2.0 for i in range(k)]
    return Layered(o, r, [], cols * cell_o - NODE_SEP, rows * cell_r - NODE_SEP)


def arrange(sizes: list[tuple[float, float]], edges: list[tuple[int, int]]) -> Layered:
    """The layered layout of the nodes with edges; many nodes without any (a horizontal
    series, a scope of unrelated ops) go on a grid beside it instead of one endless
    layer."""
    linked = [False] * len(sizes)
    for a, b in edges:
        if a != b:
            linked[a] = linked[b] = True
    loose = [i for i, x in enumerate(linked) if not x]
    if len(loose) < GRID_MIN:
        return _layered(sizes, edges) if len(sizes) <= CHUNK else _chunked(sizes, edges)
    core = [i for i, x in enumerate(linked) if x]
    local = {v: k for k, v in enumerate(core)}
    core_edges = [(local[a], local[b]) for a, b in edges if a in local and b in local]
    part = (_layered if len(core) <= CHUNK else _chunked)([sizes[i] for i in core], core_edges)
    loose_part = _grid([sizes[i] for i in loose])
    shift = part.extent_o + CHUNK_GAP if core else 0.0
    o = [0.0] * len(sizes)
    r = [0.0] * len(sizes)
    for i, x, y in zip(core, part.o, part.r, strict=True):
        o[i], r[i] = x, y
    for i, x, y in zip(loose, loose_part.o, loose_part.r, strict=True):
        o[i], r[i] = shift + x, y
    routes: list[list[Point]] = []
    it = iter(part.routes)
    for a, b in edges:
        routes.append(next(it) if a in local and b in local else [])
    return Layered(o, r, routes, shift + loose_part.extent_o,
                   max(part.extent_r, loose_part.extent_r),
                    part.chunks)
