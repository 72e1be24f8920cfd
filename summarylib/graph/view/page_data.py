"""``view_to_page_data``: a :class:`GraphView` as the compact data the HTML page decodes.

The page (``assets/viewer.js``) must open graphs of a million nodes, so the view is not one
JSON object per node (about 500 bytes per op) but columns: integer arrays indexed by node,
by base edge, by metaedge and by embedding, and tables of the distinct strings, shape
lists and attribute dicts they point into. The columns are packed into binary blobs
(the tree with the tables' JSON; the other columns in chunks of rows; the edges and
histograms), each compressed with zlib (the browser's ``DecompressionStream
("deflate")`` reads it) and base64-encoded. The page decodes each once and makes
objects only for the nodes of the groups that are open.

The returned dict (format ``summarylib.graph.page``, version 3)::

    {"format", "version", "options", "stats": {"ops", "edges", "groups"},
     "nodes": N, "devices": [sorted devices of ops], "has_time": bool,
     "templates": [[id, member count, first member name], ...],
     "tables_bytes": n, "later_bytes": n, "strings_first": n,
     "columns": {name: [dtype, byte offset, length, blob]},
     "blob": base64(zlib(tables JSON, padding, columns of blob 0)),
     "chunk_rows": R, "chunk_columns": {name: [dtype, "node" | "me"]},
     "chunk_index": [[me_lo, me_hi, start, length], ...],
     "chunks": the chunks' base64(zlib(columns, each padded)), one after the other,
     "later": base64(zlib({"text": the rest of the strings} JSON, padding, columns of blob 1)),
     "head": {"rows", "dtypes", "columns", "strings", "shapes", "attrs", "names",
              "panels", "series", "xla"} or None,
     "near_index": {"rows", "groups", "edges", "tables_bytes",
                    "columns": {name: [dtype, byte offset, length]}} or None,
     "near": base64(zlib(near tables JSON, padding, near columns)) or ""}

Nodes are numbered breadth-first from the root (0), children in the view's order, so the
children of a group are consecutive and the parent of every node comes before it: the
column ``nchild`` alone gives both (``first child = 1 + sum of nchild before``). Per node:
``kind`` (bit 0-1: 0 op, 1 metanode, 2 series; bit 2: a vertical series), ``label`` (a
string index: the last component of the name; the full name is the name of the nearest
ancestor that is not a series, ``/``, the label, except the nodes listed in the tables'
``names``), ``type`` (op type, or a series' op; -1), ``device``, ``attrs`` and ``shapes``
(table indices; -1 for groups), ``card`` and ``depth`` (groups), ``template`` (index in
``templates``; -1), ``nme`` (metaedges of the group), ``nhist``/``ndev`` (entries of the
op and device histograms). Per metaedge, in each group's order: ``me_v``, ``me_w`` (child
positions in the group), ``me_reg``, ``me_ctl``, ``me_ref``, ``me_size`` (float64 unless
every size fits int32), ``me_shapes``. Per histogram entry: ``hist_key`` (string index),
``hist_val``; likewise ``dev_key``/``dev_val``. Per base edge, in the view's order:
``e_src``, ``e_dst`` (node index, or ``-1 - k`` for the k-th of the tables' ``extra``
names), ``e_slot``, ``e_flags`` (bit 0 control, bit 1 ref). Per embedding: ``emb_host``,
``emb_flags`` (bit 0 an out embedding, bit 1 the name is relative to the host's parent
scope), ``emb_name``, ``emb_op``, ``emb_shapes``. ``time`` (float64, NaN for none) when
any op has a compute time. Each integer column is stored in the narrowest type that
holds its values (``uint8``, ``int8``, ``uint16``, ``int16`` or ``int32``). The first
blob holds the tree: ``kind``, ``nchild``, ``label`` and ``nme`` of every node (what
finds a node by name, and searches) and ``str_len``, after the tables. The other
per-node columns (``type`` to ``template``, ``time``) and the metaedge columns are in
chunks: chunk ``k`` holds the node rows ``k * chunk_rows`` up to ``(k + 1) *
chunk_rows`` (``chunk_rows`` is ``CHUNK_ROWS``) and the metaedge rows ``me_lo:me_hi`` of
those nodes, compressed on its own, its columns in ``chunk_columns``' order, each
aligned to 8 bytes, its base64 text ``chunks[start:start + length]``; so the page
inflates first the chunks that a click waits for (the rows of the group, of its children
and of the groups above it). The columns of base edges, embeddings and histogram entries
(and ``nhist``, ``ndev``) are in the second blob, ``later``, which the page inflates
after the chunks. The string table (the distinct strings) holds first the
``strings_first`` strings that the first blob's and the chunks' columns use (labels, op
types, devices), then the others (embedded constants' names, histogram keys), each part
numbered by first use in node order; it is one JSON string per blob, ``text`` in the
first blob's tables and in the second blob's (its JSON comes first, ``later_bytes``
long), cut by the column ``str_len`` (each entry's length in UTF-16 code units,
JavaScript's), so that the page parses one string, not hundreds of thousands, and the
first blob carries no more of them than it uses. The other tables: ``shapes`` (lists of
shapes), ``attrs`` (dicts), ``names`` ([[node, full name]]), ``extra``, ``panels``
([[node, in names, out names]]), ``series`` ([[node, ids]]), ``xla`` ([[node,
cluster]]).

``head`` is what drawing the top level needs, in plain JSON, so that the page draws it
before it has read, inflated or parsed the blobs: the first ``rows`` rows (the root and
its children) of the per-node columns ``kind`` to ``nme`` and the root's rows of the
metaedge columns (``columns``, lists of numbers, in the types ``dtypes`` names), and of
the tables only the entries those rows point to, as ``[index, entry]`` pairs
(``strings``, ``shapes``, ``attrs``) or the tables' rows for those nodes (``names``,
``panels``, ``series``, ``xla``). Its indices are the blob's: the page reads the head
with the same code and swaps in the whole columns when they are inflated. None when the
top level has more than ``HEAD_ROWS`` children or metaedges.

``near`` is the same for the first levels of the tree, compressed like the blobs: the
first ``rows`` rows of the head's per-node columns, where ``rows`` is the end of the
deepest level of the tree (the root's children are level 1) that is level 2 or deeper and
ends within ``NEAR_ROWS`` rows and half the nodes; the first ``edges`` rows of the head's
metaedge columns, the metaedges of the first ``groups`` nodes (the levels above the last:
every group among them has its children and metaedges in the near part); and the tables'
entries for those rows, as in the head but for the strings: the first entries of the
string table, up to the last one those rows use, as in the blob (``text`` and
``str_len``). The table JSON comes first, ``tables_bytes`` long; ``columns`` is the
directory of the columns after it, in the same dtypes as the blob's. The page reads it as soon
as its block is parsed, before the blobs, so that a click on a group of the top level (or
one level further down) is answered without waiting for the first blob. None (and ``""``)
when the top level's grandchildren end beyond that bound.
"""

from __future__ import annotations

import base64
import json
import math
import zlib
from typing import Any

import numpy as np

from summarylib.graph._gc import gc_paused
from summarylib.graph.view.model import GraphView, GroupNode, OpNode

__all__ = ["FORMAT", "VERSION", "encode_columns", "view_to_page_data"]

FORMAT = "summarylib.graph.page"
VERSION = 3

_KIND_OP, _KIND_META, _KIND_SERIES, _VERTICAL = 0, 1, 2, 4


_INTS = [np.dtype(t) for t in ("uint8", "int8", "uint16", "int16", "int32")]
#: Most rows (nodes, or metaedges of the root) the head holds; a bigger top level is drawn
#: from the blob.
HEAD_ROWS = 10_000
#: Most node rows the near part holds (and never more than half the nodes): the levels of
#: the tree that fit, below the top level's grandchildren at least.
NEAR_ROWS = 150_000
#: The head's columns: per node, and per metaedge (the root's metaedges come first).
_HEAD_NODE = ("kind", "nchild", "label", "type", "device", "attrs", "shapes", "card",
              "depth", "template", "nme")
_HEAD_EDGE = ("me_v", "me_w", "me_reg", "me_ctl", "me_ref", "me_size", "me_shapes")
#: The columns of the second blob ("later").
_LATER = frozenset({"e_src", "e_dst", "e_slot", "e_flags", "emb_host", "emb_flags",
                    "emb_name", "emb_op", "emb_shapes", "nhist", "hist_key", "hist_val",
                    "ndev", "dev_key", "dev_val"})
#: The columns of the first blob: the tree (names and search need these only) and the
#: string table's lengths. The other columns come in chunks of rows.
_SKELETON = frozenset({"kind", "nchild", "label", "nme", "str_len"})
#: Node rows per chunk (and the metaedges of those nodes): a click on a group waits for
#: the chunks holding the group, its children and the groups above it only.
CHUNK_ROWS = 16_384


def _narrow(arr: np.ndarray) -> np.ndarray:
    """``arr`` little-endian in the narrowest integer type that holds its values (less
    for the page to inflate and hold); floats that are not all int32 integers as they
    are (float64). An empty column is uint8, whatever its type was (so the two routes
    to the page data, which may hold an empty column in different types, agree)."""
    if not arr.size:
        return np.zeros(0, np.dtype("<u1"))
    if (arr.dtype.kind == "f" and not (
            np.isfinite(arr).all() and (arr == np.round(arr)).all()
            and np.abs(arr).max() < 2**31)):
        return arr.astype(arr.dtype.newbyteorder("<"), copy=False)
    lo, hi = int(arr.min()), int(arr.max())
    for t in _INTS:
        info = np.iinfo(t)
        if info.min <= lo and hi <= info.max:
            return arr.astype(t.newbyteorder("<"), copy=False)
    raise ValueError(f"a column's values {lo}..{hi} do not fit in int32")


def view_to_page_data(view: GraphView, level: int = 1) -> dict[str, Any]:
    """``view`` as the page's compact data (see the module docstring); ``level`` is the
    zlib compression level (1-9)."""
    if not 1 <= level <= 9:
        raise ValueError(f"level must be 1-9, got {level!r}")
    with gc_paused():
        return _encode(view, level)


def _encode(view: GraphView, level: int) -> dict[str, Any]:
    nodes = view.nodes
    strings: dict[str, int] = {}
    shapes_ix: dict[tuple[Any, ...], int] = {}
    attrs_ix: dict[tuple[tuple[str, str], ...], int] = {}
    attrs_list: list[dict[str, str]] = []
    template_ix = {t: i for i, t in enumerate(view.templates)}

    def sid(s: str) -> int:
        i = strings.get(s)
        if i is None:
            i = strings[s] = len(strings)
        return i

    def shp(shapes: Any) -> int:
        key = tuple(shapes)
        i = shapes_ix.get(key)
        if i is None:
            i = shapes_ix[key] = len(shapes_ix)
        return i

    order: list[str] = [""]
    base_of: list[int] = [-1]  # the node whose name prefixes this one's (-1: none)
    kind: list[int] = []
    nchild: list[int] = []
    label: list[int] = []
    typ: list[int] = []
    device: list[int] = []
    attrs: list[int] = []
    shapes: list[int] = []
    card: list[int] = []
    depth: list[int] = []
    template: list[int] = []
    nme: list[int] = []
    nhist: list[int] = []
    ndev: list[int] = []
    hist_key: list[int] = []
    hist_val: list[int] = []
    dev_key: list[int] = []
    dev_val: list[int] = []
    me_v: list[int] = []
    me_w: list[int] = []
    me_reg: list[int] = []
    me_ctl: list[int] = []
    me_ref: list[int] = []
    me_size: list[float] = []
    me_shapes: list[int] = []
    emb_host: list[int] = []
    emb_flags: list[int] = []
    emb_name: list[int] = []
    emb_op: list[int] = []
    emb_shapes: list[int] = []
    times: list[float] = []
    names: list[list[Any]] = []
    panels: list[list[Any]] = []
    series: list[list[Any]] = []
    xla: list[list[Any]] = []
    devices: set[str] = set()
    has_time = False
    n_ops = 0
    nan = math.nan

    i = 0
    while i < len(order):
        name = order[i]
        node = nodes[name]
        b = base_of[i]
        cut = name.rfind("/")
        lab = name[cut + 1:]
        if i:
            want = lab if b == 0 else order[b] + "/" + lab
            if want != name:
                names.append([i, name])
        label.append(sid(lab))
        if type(node) is OpNode:
            n_ops += 1
            kind.append(_KIND_OP)
            nchild.append(0)
            typ.append(sid(node.op))
            dev = node.device
            if dev:
                devices.add(dev)
            device.append(sid(dev) if dev else -1)
            a = node.attrs
            if a:
                akey = tuple(a.items())
                ai = attrs_ix.get(akey)
                if ai is None:
                    ai = attrs_ix[akey] = len(attrs_list)
                    attrs_list.append(dict(a))
                attrs.append(ai)
            else:
                attrs.append(-1)
            shapes.append(shp(node.shapes))
            card.append(0)
            depth.append(0)
            template.append(-1)
            nme.append(0)
            nhist.append(0)
            ndev.append(0)
            t = node.compute_time_us
            if t is not None:
                has_time = True
            times.append(nan if t is None else float(t))
            if node.xla_cluster is not None:
                xla.append([i, node.xla_cluster])
            if node.in_embeddings or node.out_embeddings:
                scope = name[:cut + 1] if cut >= 0 else ""
                for flag, embs in ((0, node.in_embeddings), (1, node.out_embeddings)):
                    for e in embs:
                        emb_host.append(i)
                        if scope and e.name.startswith(scope) and "/" not in e.name[len(scope):]:
                            emb_flags.append(flag | 2)
                            emb_name.append(sid(e.name[len(scope):]))
                        else:
                            emb_flags.append(flag)
                            emb_name.append(sid(e.name))
                        emb_op.append(sid(e.op))
                        emb_shapes.append(shp(e.shapes))
        else:
            assert isinstance(node, GroupNode)
            is_series = node.kind == "series"
            kind.append((_KIND_SERIES | (_VERTICAL if node.series_vertical else 0))
                        if is_series else _KIND_META)
            kids = node.children
            nchild.append(len(kids))
            # Members of a series are named in the series' scope, not under its name.
            child_base = b if is_series else i
            order.extend(kids)
            base_of.extend([child_base] * len(kids))
            typ.append(sid(node.series_op) if is_series and node.series_op is not None else -1)
            device.append(-1)
            attrs.append(-1)
            shapes.append(-1)
            card.append(node.cardinality)
            depth.append(node.depth)
            tpl = node.template
            template.append(-1 if tpl is None else template_ix.get(tpl, -1))
            times.append(nan)
            mes = node.metaedges
            nme.append(len(mes))
            if mes:
                pos = {c: k for k, c in enumerate(kids)}
                for m in mes:
                    me_v.append(pos.get(m.v, -1))
                    me_w.append(pos.get(m.w, -1))
                    me_reg.append(m.regular)
                    me_ctl.append(m.control)
                    me_ref.append(m.ref)
                    me_size.append(m.size)
                    me_shapes.append(shp(m.shapes))
            oh = node.op_histogram
            nhist.append(len(oh))
            for k, v in oh.items():
                hist_key.append(sid(k))
                hist_val.append(v)
            dh = node.device_histogram
            ndev.append(len(dh))
            for k, v in dh.items():
                dev_key.append(sid(k))
                dev_val.append(v)
            sp = node.side_panel
            if sp.get("in") or sp.get("out"):
                panels.append([i, list(sp.get("in", [])), list(sp.get("out", []))])
            if is_series:
                series.append([i, list(node.series_ids)])
        i += 1

    index = {name: k for k, name in enumerate(order)}
    extra: dict[str, int] = {}

    def end(name: str) -> int:
        k = index.get(name)
        if k is not None:
            return k
        j = extra.get(name)
        if j is None:
            j = extra[name] = len(extra)
        return -1 - j

    edges = view.edges
    e_src = [end(e.src) for e in edges]
    e_dst = [end(e.dst) for e in edges]
    e_slot = [e.slot for e in edges]
    e_flags = [(1 if e.control else 0) | (2 if e.ref else 0) for e in edges]

    columns: list[tuple[str, np.ndarray]] = [
        ("kind", np.array(kind, np.uint8)),
        ("nchild", np.array(nchild, np.int32)),
        ("label", np.array(label, np.int32)),
        ("type", np.array(typ, np.int32)),
        ("device", np.array(device, np.int32)),
        ("attrs", np.array(attrs, np.int32)),
        ("shapes", np.array(shapes, np.int32)),
        ("card", np.array(card, np.int32)),
        ("depth", np.array(depth, np.int32)),
        ("template", np.array(template, np.int32)),
        ("nme", np.array(nme, np.int32)),
        ("nhist", np.array(nhist, np.int32)),
        ("ndev", np.array(ndev, np.int32)),
        ("hist_key", np.array(hist_key, np.int32)),
        ("hist_val", np.array(hist_val, np.int32)),
        ("dev_key", np.array(dev_key, np.int32)),
        ("dev_val", np.array(dev_val, np.int32)),
        ("me_v", np.array(me_v, np.int32)),
        ("me_w", np.array(me_w, np.int32)),
        ("me_reg", np.array(me_reg, np.int32)),
        ("me_ctl", np.array(me_ctl, np.int32)),
        ("me_ref", np.array(me_ref, np.int32)),
        ("me_size", np.array(me_size, np.float64)),
        ("me_shapes", np.array(me_shapes, np.int32)),
        ("e_src", np.array(e_src, np.int32)),
        ("e_dst", np.array(e_dst, np.int32)),
        ("e_slot", np.array(e_slot, np.int32)),
        ("e_flags", np.array(e_flags, np.uint8)),
        ("emb_host", np.array(emb_host, np.int32)),
        ("emb_flags", np.array(emb_flags, np.uint8)),
        ("emb_name", np.array(emb_name, np.int32)),
        ("emb_op", np.array(emb_op, np.int32)),
        ("emb_shapes", np.array(emb_shapes, np.int32)),
    ]
    if has_time:
        columns.append(("time", np.array(times, np.float64)))
    tables = {
        "strings": list(strings),
        "shapes": [[None if s is None else list(s) for s in key] for key in shapes_ix],
        "attrs": attrs_list,
        "names": names,
        "extra": list(extra),
        "panels": panels,
        "series": series,
        "xla": xla,
    }
    return encode_columns(
        columns, tables, level, options=dict(view.options),
        stats={"ops": n_ops, "edges": len(edges), "groups": len(order) - n_ops - 1},
        nodes=len(order), devices=sorted(devices), has_time=has_time,
        templates=[[t, len(m), m[0] if m else t] for t, m in view.templates.items()])


def encode_columns(columns: list[tuple[str, np.ndarray]], tables: dict[str, Any], level: int,
                   *, options: dict[str, Any], stats: dict[str, int], nodes: int,
                   devices: list[str], has_time: bool, templates: list[list[Any]],
                   ) -> dict[str, Any]:
    """The page data dict (see the module docstring) from its columns (in directory
    order) and tables: narrows, aligns, packs and compresses the two blobs, and makes
    the head."""
    return {
        "format": FORMAT, "version": VERSION,
        "options": options,
        "stats": stats,
        "nodes": nodes,
        "devices": devices,
        "has_time": has_time,
        "templates": templates,
        **_pack(dict(columns), tables, level),
    }


def _pack(columns: dict[str, np.ndarray], tables: dict[str, Any], level: int
          ) -> dict[str, Any]:
    """The columns and tables as the page reads them: ``tables_bytes``, ``columns`` (the
    directory), ``blob``, ``chunk_rows``, ``chunk_columns``, ``chunk_index``, ``chunks``,
    ``later``, ``head``, ``near_index`` and ``near`` (see the module docstring)."""
    # The strings that the first blob's columns use first (the rest, embedded constants'
    # names and histogram keys, go in the second blob), as one text and their lengths (a
    # column): the page parses one JSON string, not one per entry, and slices the
    # entries it shows.
    columns, strings, first = _strings_first(columns, tables["strings"])
    tables = dict(tables, strings=strings)
    blob_tables = {k: v for k, v in tables.items() if k != "strings"}
    blob_tables["text"] = first_text = "".join(strings[:first])
    later_text = "".join(strings[first:])
    # (One scan of each text tells whether every string is ASCII.)
    lengths = _string_lengths(strings, first_text.isascii() and later_text.isascii())
    # ASCII JSON: lone surrogates and every non-ASCII character stay \u escapes.
    tables_bytes = _ascii_json(blob_tables)
    later_bytes = _ascii_json({"text": later_text})
    narrowed = {cname: _narrow(arr) for cname, arr in columns.items()}
    narrowed["str_len"] = _narrow(lengths)
    # The first blob is the tree (what finds a node by name, and searches), the string
    # table and the tables; the rest of what opening groups needs comes in chunks of
    # CHUNK_ROWS rows, each inflated on its own, so that the page inflates first the
    # chunks that a click waits for; the second blob has the edges, embeddings and
    # histograms (for edges into open groups, cards and colours).
    skeleton = {c: a for c, a in narrowed.items() if c in _SKELETON}
    later = {c: a for c, a in narrowed.items() if c in _LATER}
    chunked = {c: a for c, a in narrowed.items() if c not in _SKELETON and c not in _LATER}
    directory, (blob, later_blob) = _blobs({**skeleton, **later}, [tables_bytes, later_bytes],
                                           lambda cname: 1 if cname in _LATER else 0, level)
    chunk_columns, chunk_index, chunks = _chunks(chunked, narrowed["nme"], level)
    near_index, near = _near(narrowed, tables, level)
    return {
        "tables_bytes": len(tables_bytes),
        "later_bytes": len(later_bytes),
        "strings_first": first,
        "columns": directory,
        "chunk_rows": CHUNK_ROWS,
        "chunk_columns": chunk_columns,
        "chunk_index": chunk_index,
        "head": _head(narrowed, tables),
        "near_index": near_index,
        "near": near,
        "blob": blob,
        "chunks": chunks,
        "later": later_blob,
    }


def _chunks(columns: dict[str, np.ndarray], nme: np.ndarray, level: int
            ) -> tuple[dict[str, list[str]], list[list[int]], str]:
    """The chunked columns: their directory ``{name: [dtype, "node" | "me"]}`` (in packing
    order), the index ``[[me_lo, me_hi, start, length]]`` (chunk ``k`` holds node rows
    ``k * CHUNK_ROWS`` up to the next chunk's and the metaedge rows ``me_lo:me_hi`` of
    those nodes, its base64 text ``start:start + length`` of the chunks' text) and that
    text: each chunk zlib-compressed and base64-encoded on its own, one after the other."""
    me_off = np.concatenate([[0], np.cumsum(nme, dtype=np.int64)])
    n = int(nme.size)
    directory = {c: [a.dtype.name, "me" if c.startswith("me_") else "node"]
                 for c, a in columns.items()}
    index: list[list[int]] = []
    texts: list[str] = []
    at = 0
    for lo in range(0, n, CHUNK_ROWS):
        hi = min(n, lo + CHUNK_ROWS)
        me_lo, me_hi = int(me_off[lo]), int(me_off[hi])
        parts: list[bytes] = []
        size = 0
        for cname, arr in columns.items():
            part = arr[me_lo:me_hi] if directory[cname][1] == "me" else arr[lo:hi]
            pad = -size % 8  # (typed arrays need aligned offsets)
            if pad:
                parts.append(b"\0" * pad)
                size += pad
            data = part.tobytes()
            parts.append(data)
            size += len(data)
        text = base64.b64encode(zlib.compress(b"".join(parts), level)).decode("ascii")
        index.append([me_lo, me_hi, at, len(text)])
        texts.append(text)
        at += len(text)
    return directory, index, "".join(texts)


#: The columns holding string indices: of the first blob, and of the second.
_FIRST_STRINGS = ("label", "type", "device")
_LATER_STRINGS = ("hist_key", "dev_key", "emb_name", "emb_op")


def _strings_first(columns: dict[str, np.ndarray], strings: list[str]
                   ) -> tuple[dict[str, np.ndarray], list[str], int]:
    """The columns and the string table renumbered so that the strings of the first
    blob's columns come first (each part in its former order), and how many they are."""
    n = len(strings)
    used = np.zeros(n, bool)
    for cname in _FIRST_STRINGS:
        col = np.asarray(columns[cname])
        used[col[col >= 0]] = True
    first = int(used.sum())
    if used[:first].all():  # (already so)
        return columns, strings, first
    order = np.concatenate([np.flatnonzero(used), np.flatnonzero(~used)])
    new = np.empty(n, np.int64)
    new[order] = np.arange(n)
    out = dict(columns)
    for cname in _FIRST_STRINGS + _LATER_STRINGS:
        col = np.asarray(columns[cname], np.int64)
        out[cname] = np.where(col >= 0, new[np.maximum(col, 0)], col)
    return out, [strings[i] for i in order.tolist()], first


def _string_lengths(strings: list[str], ascii: bool | None = None) -> np.ndarray:
    """The length of each string in UTF-16 code units (JavaScript's: a character beyond
    the BMP counts two; a lone surrogate, which JSON keeps as an escape, one).
    ``ascii``: whether every string is known to be ASCII (None: not known)."""
    if ascii is None:
        ascii = all(map(str.isascii, strings))
    if ascii:
        return np.fromiter(map(len, strings), np.int64, len(strings))
    return np.fromiter((len(x.encode("utf-16-le", "surrogatepass")) // 2 for x in strings),
                       np.int64, len(strings))


def _ascii_json(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=True, separators=(",", ":"),
                      allow_nan=False).encode("ascii")


def _blobs(columns: dict[str, np.ndarray], starts: list[bytes], part_of: Any, level: int
           ) -> tuple[dict[str, list[Any]], list[str]]:
    """The directory ``{name: [dtype, byte offset, length, blob]}`` of ``columns`` packed
    after ``starts[b]`` in blob ``part_of(name)`` (each aligned to 8 bytes: typed arrays
    need aligned offsets), and each blob compressed and base64-encoded."""
    blobs: list[list[bytes]] = [[s] for s in starts]
    offsets = [len(s) for s in starts]
    directory: dict[str, list[Any]] = {}
    for cname, arr in columns.items():
        part = part_of(cname)
        parts = blobs[part]
        pad = -offsets[part] % 8
        if pad:
            parts.append(b"\0" * pad)
            offsets[part] += pad
        directory[cname] = [arr.dtype.name, offsets[part], int(arr.size), part]
        data = arr.tobytes()
        parts.append(data)
        offsets[part] += len(data)
    return directory, [base64.b64encode(zlib.compress(b"".join(parts), level)).decode("ascii")
                       for parts in blobs]


def _level_ends(nchild: np.ndarray) -> list[int]:
    """The end row of each level of the tree (the root is level 0): nodes are numbered
    breadth-first, so level ``d + 1`` ends where the children of the rows before the end
    of level ``d`` end."""
    n = int(nchild.size)
    csum = np.concatenate([[0], np.cumsum(nchild, dtype=np.int64)])
    ends = [min(1, n)]
    while ends[-1] < n:
        nxt = 1 + int(csum[ends[-1]])
        if nxt <= ends[-1]:  # (not a tree: cannot happen for a view's columns)
            break
        ends.append(nxt)
    return ends


def _near(columns: dict[str, np.ndarray], tables: dict[str, Any], level: int
          ) -> tuple[dict[str, Any] | None, str]:
    """The near part: the first levels of the tree (at least down to the top level's
    grandchildren, at most ``NEAR_ROWS`` rows and half the nodes) as columns and the
    table entries they use, for the page to open groups before it has the first blob.
    ``(None, "")`` when even the top level's grandchildren are too many."""
    nchild = columns["nchild"]
    ends = _level_ends(nchild)
    cap = min(NEAR_ROWS, nchild.size // 2)
    deep = [d for d in range(2, len(ends)) if ends[d] <= cap]
    if not deep:
        return None, ""
    rows, groups = ends[deep[-1]], ends[deep[-1] - 1]
    edges = int(columns["nme"][:groups].sum())
    cut = {c: columns[c][:rows] for c in _HEAD_NODE}
    cut.update({c: columns[c][:edges] for c in _HEAD_EDGE})
    tab: dict[str, Any] = _prefix_tables(cut, tables, rows, strings=False)
    # The strings as in the blob, up to the last one these rows use (nearly all before
    # it are used: the table numbers them in node order).
    used = np.concatenate([np.asarray(cut[c], np.int64) for c in ("label", "type", "device")])
    count = int(used.max()) + 1 if used.size else 0
    tab["text"] = "".join(tables["strings"][:count])
    cut["str_len"] = columns["str_len"][:count]
    tables_bytes = _ascii_json(tab)
    directory, (blob,) = _blobs(cut, [tables_bytes], lambda cname: 0, level)
    return {"rows": rows, "groups": groups, "edges": edges, "tables_bytes": len(tables_bytes),
            "columns": {c: d[:3] for c, d in directory.items()}}, blob


def _prefix_tables(cut: dict[str, np.ndarray], tables: dict[str, Any], rows: int,
                   strings: bool = True) -> dict[str, list[Any]]:
    """The table entries that the first ``rows`` rows (``cut``: those rows of the node
    columns, and the metaedge rows of their groups) use: ``[index, entry]`` pairs of
    ``strings`` (unless not ``strings``), ``shapes`` and ``attrs``, and the rows of the
    tables keyed by node."""

    def used(table: list[Any], *keys: np.ndarray) -> list[list[Any]]:
        ix = np.unique(np.concatenate([np.asarray(k, np.int64) for k in keys]))
        return [[int(k), table[k]] for k in ix[ix >= 0].tolist()]

    def rows_of(table: list[list[Any]]) -> list[list[Any]]:
        # Tables keyed by node index, in node order: the first rows' come first.
        return [r for r in table if r[0] < rows]

    return {
        **({"strings": used(tables["strings"], cut["label"], cut["type"], cut["device"])}
           if strings else {}),
        "shapes": used(tables["shapes"], cut["shapes"], cut["me_shapes"]),
        "attrs": used(tables["attrs"], cut["attrs"]),
        "names": rows_of(tables["names"]),
        "panels": rows_of(tables["panels"]),
        "series": rows_of(tables["series"]),
        "xla": rows_of(tables["xla"]),
    }


def _head(columns: dict[str, np.ndarray], tables: dict[str, Any]) -> dict[str, Any] | None:
    """What drawing the top level needs, as plain JSON (see the module docstring), or None
    when the top level is too big to be worth a copy (the page then draws from the near
    part or the blob).

    The rows are the first rows of the columns (the root and its children, the root's
    metaedges), so the page can read them with the blob's indices and swap in the whole
    columns later; the tables hold only the entries those rows point to, by index.
    """
    nchild = columns["nchild"]
    rows = 1 + int(nchild[0]) if nchild.size else 0
    edges = int(columns["nme"][0]) if rows else 0
    if rows > HEAD_ROWS or edges > HEAD_ROWS:
        return None
    cut = {c: columns[c][:rows] for c in _HEAD_NODE}
    cut.update({c: columns[c][:edges] for c in _HEAD_EDGE})
    return {
        "rows": rows,
        "dtypes": {c: a.dtype.name for c, a in cut.items()},
        "columns": {c: a.tolist() for c, a in cut.items()},
        **_prefix_tables(cut, tables, rows),
    }
