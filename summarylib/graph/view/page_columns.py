"""``source_to_page_data``: a graph source straight to the page's columns, for big graphs.

:func:`~summarylib.graph.view.building.build_view` makes one Python object per op, per
base edge and per metaedge, and :func:`~summarylib.graph.view.page_data.view_to_page_data`
walks them again: at a million ops that is a minute of per-object Python. This module
computes the same page data (``page_data``'s format, equal column for column) with
integer ids and numpy arrays from the source onward: ops are numbered in TensorBoard's
order, groups are numbered as they are made, every node has one *unified* id (op ``j`` is
``j``, group ``k`` is ``n_ops + k``), children orders come from one stable sort by
(parent, creation key), metaedges from one ``np.unique`` over (child, child) keys, the
histograms from sorted (group, key) pairs, and the page's string and shape tables from
first occurrences in breadth-first order. Python loops remain only where the work is per
*distinct* thing (scopes, op types, shapes, template codes of the groups that share a
signature, the few groups that can have a side panel).

It applies every rule of the object pipeline (``normalize``, ``hierarchy``, ``series``,
``templates``, ``extraction``) for the graphs it accepts; for the rest
(:func:`source_to_page_data` returns None) the caller builds the view as before. A graph
is declined when it uses something this path does not reproduce: ``template_order=
"tensorboard"``, ``side_panel`` names, function libraries, duplicate or empty op names,
names starting with ``/``, names or op types that are JavaScript array indices, renames
that collide with other names, series names that collide with other names, or a numeric
suffix too long for int64.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from summarylib.graph._gc import gc_paused
from summarylib.graph.view.extraction import extract_group
from summarylib.graph.view.hierarchy import Tree
from summarylib.graph.view.model import Embedding, GroupNode, Metaedge, OpNode, Shape
from summarylib.graph.view.normalize import (
    REF_EDGES,
    _ARRAY_INDEX_RE,
    _graph_def,
    _Matcher,
    _Raw,
    _source_nodes,
    strict_name,
)
from summarylib.graph.view.options import ViewOptions
from summarylib.graph.view.page_data import encode_columns
from summarylib.graph.view.series import series_name, split_series_name
from summarylib.graph.view.templates import new_state

__all__ = ["source_to_page_data"]

_NOOP = "NoOp"


class _Declined(Exception):
    """The graph uses something this path does not reproduce (see the module docstring)."""


def source_to_page_data(source: Any, options: ViewOptions | Mapping[str, Any] | None = None,
                        level: int = 1) -> dict[str, Any] | None:
    """The page data of ``source`` (what ``view_to_page_data(build_view(source, options),
    level)`` returns), or None when the graph uses something this path does not reproduce
    (the module docstring lists it): then build the view.

    ``source``: an IR :class:`~summarylib.graph.Graph`, a ``GraphDef`` message or its
    serialized bytes (not a path: load it first). A source that is not a graph raises
    ValueError naming it, as ``build_view`` does.
    """
    if options is None:
        opts = ViewOptions()
    elif isinstance(options, ViewOptions):
        opts = options
    elif isinstance(options, Mapping):
        opts = ViewOptions().with_overrides(
            **{k: v for k, v in options.items() if k != "hidden_count"})
    else:
        raise TypeError(f"source_to_page_data: options must be a ViewOptions, "
                        f"got {type(options).__name__}")
    if not 1 <= level <= 9:
        raise ValueError(f"level must be 1-9, got {level!r}")
    if opts.template_order != "height" or opts.side_panel:
        return None
    from summarylib.graph.ir import Graph

    if not isinstance(source, Graph):
        gd = _graph_def(source)
        if gd.HasField("library") and len(gd.library.function):
            return None
        source = gd
    with gc_paused():
        try:
            return _Columns(source, opts).page_data(level)
        except _Declined:
            return None


def _split_runs(keys: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Run numbers of sorted members: a new run where the key changes or the id is not
    the previous id plus one."""
    if not keys.size:
        return np.zeros(0, np.int64)
    brk = np.ones(keys.size, bool)
    brk[1:] = (keys[1:] != keys[:-1]) | (ids[1:] != ids[:-1] + 1)
    return np.cumsum(brk) - 1


def _first_order(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct values in order of first occurrence, each element's index among them)."""
    uniq, first, inv = np.unique(values, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return uniq[order], rank[inv.reshape(-1)]


class _Columns:
    """The whole pipeline on integer ids (see the module docstring)."""

    def __init__(self, source: Any, opts: ViewOptions) -> None:
        self.opts = opts
        self.strings: dict[str, int] = {}
        self.shape_lists: dict[tuple[Shape, ...], int] = {}
        self.attr_dicts: dict[tuple[tuple[str, str], ...], int] = {}
        self.attr_list: list[dict[str, str]] = []
        self._normalize(source)
        self._hierarchy()
        if opts.series:
            self._op_series()
        self._children()
        self._metaedges()
        self.codes = new_state()
        self.template_of: dict[int, str] = {}
        self.templates = self._find_templates(None)
        if opts.series and opts.group_series:
            changed = self._group_series()
            if changed is not None:
                self.templates = self._find_templates(changed)
        self._side_panels()

    # --- interning ------------------------------------------------------------------

    def sid(self, s: str) -> int:
        i = self.strings.get(s)
        if i is None:
            i = self.strings[s] = len(self.strings)
        return i

    def shape_list(self, shapes: list[Shape] | tuple[Shape, ...]) -> int:
        key = tuple(shapes)
        i = self.shape_lists.get(key)
        if i is None:
            i = self.shape_lists[key] = len(self.shape_lists)
        return i

    # --- step 1: normalize ----------------------------------------------------------

    def _normalize(self, source: Any) -> None:
        opts = self.opts
        is_in = _Matcher(opts.embed_patterns("in"))
        is_out = _Matcher(opts.embed_patterns("out"))
        is_hidden = _Matcher(opts.hidden_ops, full=True)
        kind_of: dict[str, int] = {}
        regular: list[_Raw] = []
        in_emb: dict[str, _Raw] = {}
        out_emb: dict[str, _Raw] = {}
        outs_of: dict[str, list[_Raw]] = {}
        embedded_names: list[str] = []
        hidden = 0
        for raw in _source_nodes(source):
            op = raw.op
            kind = kind_of.get(op)
            if kind is None:
                if _ARRAY_INDEX_RE.match(op):
                    raise _Declined  # js_key_order of op types
                kind = kind_of[op] = (1 if is_hidden(op) else 2 if is_in(op)
                                      else 3 if is_out(op) else 0)
            if kind == 0:
                regular.append(raw)
            elif kind == 1:
                hidden += 1
            elif kind == 2:
                embedded_names.append(raw.name)
                in_emb[raw.name] = raw
            else:
                embedded_names.append(raw.name)
                out_emb[raw.name] = raw
                for name, _, _ in raw.inputs:
                    outs_of.setdefault(name, []).append(raw)
        self.hidden = hidden
        names = [r.name for r in regular]
        n = len(names)
        index = {name: j for j, name in enumerate(names)}
        if len(index) != n:
            raise _Declined  # duplicate names
        # The scopes of the original names: every proper "/" prefix.
        scopes: set[str] = set()
        for name in names:
            if not name or name[0] == "/":
                raise _Declined
            cut = name.rfind("/")
            while cut > 0:
                scope = name[:cut]
                if scope in scopes:
                    break
                scopes.add(scope)
                cut = scope.rfind("/")
        renamed: dict[str, str] = {}
        for name in names:
            if name in scopes:
                renamed[name] = strict_name(name)
        if embedded_names:
            # TensorBoard does not see the scopes of the alphabetically last name here.
            last = max(names) if names else ""
            for e in embedded_names:
                if e in scopes:
                    prefix = e + "/"
                    if last.startswith(prefix) and sum(
                            1 for x in names if x.startswith(prefix)) == 1:
                        continue
                    renamed[e] = strict_name(e)
        for shown in renamed.values():
            if shown in index or shown in scopes:
                raise _Declined  # normalize._resolve_conflicts
        if renamed:
            names = [renamed.get(x, x) for x in names]
            index = {name: j for j, name in enumerate(names)}
        for name in names:
            if "/" not in name and _ARRAY_INDEX_RE.match(name):
                raise _Declined  # JavaScript key order at the root
        self.renamed = renamed
        rn = renamed.get
        self.names = names
        self.n_ops = n
        sid, shape_list = self.sid, self.shape_list
        types = np.empty(n, np.int64)
        devices = np.full(n, -1, np.int64)
        attrs = np.full(n, -1, np.int64)
        shapes = np.empty(n, np.int64)
        attr_dicts, attr_list = self.attr_dicts, self.attr_list
        xla: dict[int, str] = {}
        for j, raw in enumerate(regular):
            types[j] = sid(raw.op)
            if raw.device:
                devices[j] = sid(raw.device)
            a = raw.attrs
            if a:
                akey = tuple(a.items())
                ai = attr_dicts.get(akey)
                if ai is None:
                    ai = attr_dicts[akey] = len(attr_list)
                    attr_list.append(dict(a))
                attrs[j] = ai
            shapes[j] = shape_list(raw.shapes)
            if raw.xla is not None:
                xla[j] = raw.xla
        self.types, self.devices, self.attrs, self.shapes, self.xla = (
            types, devices, attrs, shapes, xla)
        # Embeddings: (host, flag, name, op, shapes), in the host's in-then-out order.
        embs: dict[int, list[list[Any]]] = {}

        def embedding(raw: _Raw) -> Embedding:
            return Embedding(rn(raw.name, raw.name), raw.op, list(raw.shapes))

        src_l: list[int] = []
        dst_l: list[int] = []
        slot_l: list[int] = []
        flag_l: list[int] = []
        ref_ops = {op for op, _ in REF_EDGES}
        embedded = in_emb.keys() | out_emb.keys()
        get = index.get
        for j, raw in enumerate(regular):
            op = raw.op
            has_ref = op in ref_ops
            ins: list[Embedding] = []
            for i, (name, slot, control) in enumerate(raw.inputs):
                flag = (1 if control else 0) | (
                    2 if has_ref and (op, i) in REF_EDGES else 0)
                if name not in embedded:
                    s = get(rn(name, name) if renamed else name)
                    if s is not None and s != j:
                        src_l.append(s)
                        dst_l.append(j)
                        slot_l.append(slot)
                        flag_l.append(flag)
                    continue
                emb = in_emb.get(name)
                if emb is not None:
                    ins.append(embedding(emb))
                    for ename, eslot, econtrol in emb.inputs:
                        s = get(rn(ename, ename))
                        if s is not None and s != j:
                            src_l.append(s)
                            dst_l.append(j)
                            slot_l.append(eslot)
                            flag_l.append((1 if econtrol else 0) | (flag & 2))
                    continue
                summary = out_emb.get(name)
                if summary is not None:
                    for ename, _, _ in summary.inputs:
                        s = get(rn(ename, ename))
                        if s is not None and s != j:
                            src_l.append(s)
                            dst_l.append(j)
                            slot_l.append(slot)
                            flag_l.append(flag)
                    continue
                s = get(rn(name, name))
                if s is not None and s != j:
                    src_l.append(s)
                    dst_l.append(j)
                    slot_l.append(slot)
                    flag_l.append(flag)
            summaries = outs_of.get(raw.name)
            if ins or summaries:
                embs[j] = [[0, e] for e in ins] + [[1, embedding(s)] for s in summaries or ()]
        self.embs = embs
        self.e_src = np.array(src_l, np.int64)
        self.e_dst = np.array(dst_l, np.int64)
        self.e_slot = np.array(slot_l, np.int64)
        self.e_flags = np.array(flag_l, np.int64)

    # --- step 2: scope groups -------------------------------------------------------

    def _hierarchy(self) -> None:
        n = self.n_ops
        gid: dict[str, int] = {"": 0}
        gnames = [""]
        gparent = [-1]
        glevel = [0]
        gmade = [-1]  # the op before which the group was made (-1: the root)
        op_parent = np.empty(n, np.int64)
        for j, name in enumerate(self.names):
            cut = name.rfind("/")
            scope = name[:cut] if cut >= 0 else ""
            k = gid.get(scope)
            if k is None:
                missing = []
                while scope not in gid:
                    missing.append(scope)
                    cut = scope.rfind("/")
                    scope = scope[:cut] if cut >= 0 else ""
                above = gid[scope]
                for s in reversed(missing):
                    k = gid[s] = len(gnames)
                    gnames.append(s)
                    gparent.append(above)
                    glevel.append(glevel[above] + 1)
                    gmade.append(j)
                    above = k
            op_parent[j] = k
        self.gnames = gnames
        self.gparent = gparent
        self.gkind = [0] * len(gnames)  # 0 meta, 1 series
        self.series_op: dict[int, int] = {}
        self.series_ids: dict[int, list[int]] = {}
        self.op_parent = op_parent
        self.g_made = np.array(gmade, np.int64)
        g_level = np.array(glevel, np.int64)
        g_parent = np.array(gparent, np.int64)
        # (ancestor group, op) pairs, every level.
        ga: list[np.ndarray] = []
        oa: list[np.ndarray] = []
        ops = np.arange(n)
        cur = op_parent
        while ops.size:
            ga.append(cur)
            oa.append(ops)
            up = g_parent[cur]
            keep = up >= 0
            cur, ops = up[keep], ops[keep]
        pg = np.concatenate(ga) if ga else np.zeros(0, np.int64)
        po = np.concatenate(oa) if oa else np.zeros(0, np.int64)
        G = len(gnames)
        card = np.bincount(pg, minlength=G).astype(np.int64)
        height = g_level[op_parent[po]] - g_level[pg] + 1
        depth = np.ones(G, np.int64)
        np.maximum.at(depth, pg, height)
        self.card = list(card.tolist())
        self.depth = list(depth.tolist())
        self.hist = self._histogram(pg, po, self.types[po], G)
        dev = self.devices[po]
        has = dev >= 0
        self.dhist = self._histogram(pg[has], po[has], dev[has], G)

    @staticmethod
    def _histogram(pg: np.ndarray, po: np.ndarray, key: np.ndarray, G: int,
                   ) -> list[list[tuple[int, int]]]:
        """Per group, (key, count) in order of the key's first op: a dict filled op by
        op, as ``add_nodes`` does."""
        out: list[list[tuple[int, int]]] = [[] for _ in range(G)]
        if not pg.size:
            return out
        width = int(key.max()) + 1
        combo = pg * width + key
        order = np.lexsort((po, combo))
        c = combo[order]
        start = np.flatnonzero(np.r_[True, c[1:] != c[:-1]])
        counts = np.diff(np.r_[start, c.size])
        first_op = po[order][start]
        grp = c[start] // width
        keys = c[start] % width
        o2 = np.lexsort((first_op, grp))
        for g, k, v in zip(grp[o2].tolist(), keys[o2].tolist(), counts[o2].tolist(),
                           strict=True):
            out[g].append((k, v))
        return out

    def _new_group(self, name: str, parent: int, kind: int) -> int:
        k = len(self.gnames)
        self.gnames.append(name)
        self.gparent.append(parent)
        self.gkind.append(kind)
        self.card.append(0)
        self.depth.append(1)
        self.hist.append([])
        self.dhist.append([])
        return k

    # --- step 3: op series ----------------------------------------------------------

    def _op_series(self) -> None:
        n = self.n_ops
        min_size = self.opts.series_min_size
        empty = self.strings.get("")
        cand = np.ones(n, bool) if empty is None else self.types != empty
        js = np.flatnonzero(cand)
        names = self.names
        prefixes: dict[tuple[str, str], int] = {}
        pre = np.empty(js.size, np.int64)
        ids = np.empty(js.size, np.int64)
        for i, j in enumerate(js.tolist()):
            name = names[j]
            prefix, ident, suffix = split_series_name(name[name.rfind("/") + 1:])
            if ident >= 1 << 62:
                raise _Declined
            key = (prefix, suffix)
            p = prefixes.get(key)
            if p is None:
                p = prefixes[key] = len(prefixes)
            pre[i] = p
            ids[i] = ident
        parent = self.op_parent[js]
        typ = self.types[js]
        # Members sorted by (group, type, prefix, id), stable in op order.
        order = np.lexsort((js, ids, pre, typ, parent))
        keys = np.stack([parent[order], typ[order], pre[order]], axis=1)
        same = np.ones(order.size, bool)
        if order.size:
            same[1:] = (keys[1:] != keys[:-1]).any(axis=1)
        run = _split_runs(np.cumsum(same), ids[order])
        if not run.size:
            self.member_pos: dict[int, int] = {}
            return
        sizes = np.bincount(run)
        long_runs = np.flatnonzero(sizes >= min_size)
        if not long_runs.size:
            self.member_pos = {}
            return
        starts = np.r_[0, np.cumsum(sizes)[:-1]]
        # Creation order within a group: op type by its first op, then (prefix,
        # suffix) by its first op, then ascending id: first ops of each cluster.
        first_type: dict[tuple[int, int], int] = {}
        first_pre: dict[tuple[int, int, int], int] = {}
        for g, t, p, j in zip(parent.tolist(), typ.tolist(), pre.tolist(), js.tolist(),
                              strict=True):
            first_type.setdefault((g, t), j)
            first_pre.setdefault((g, t, p), j)
        prefix_of = {v: k for k, v in prefixes.items()}
        made = []
        for r in long_runs.tolist():
            s0 = int(starts[r])
            members = order[s0:s0 + int(sizes[r])]
            g, t, p = (int(parent[members[0]]), int(typ[members[0]]), int(pre[members[0]]))
            made.append((g, first_type[(g, t)], first_pre[(g, t, p)], int(ids[members[0]]),
                         t, p, members))
        made.sort(key=lambda m: m[:4])
        existing = set(self.names)
        existing.update(self.gnames)
        member_pos: dict[int, int] = {}
        strings = list(self.strings)
        for g, _, _, _, t, p, members in made:
            js_m = js[members]
            first = names[int(js_m[0])]
            scope = first[:first.rfind("/")] if "/" in first else ""
            prefix, suffix = prefix_of[p]
            idl = ids[members].tolist()
            name = series_name(scope, prefix, suffix, idl[0], idl[-1])
            if name in existing:
                raise _Declined
            existing.add(name)
            k = self._new_group(name, g, 1)
            self.series_op[k] = t
            self.series_ids[k] = idl
            self.card[k] = len(idl)
            self.hist[k] = [(t, len(idl))]
            dh: dict[int, int] = {}
            for j in js_m.tolist():
                self.op_parent[j] = k
                member_pos[j] = len(member_pos)
                d = int(self.devices[j])
                if d >= 0:
                    dh[d] = dh.get(d, 0) + 1
            self.dhist[k] = list(dh.items())
            del strings
            strings = []
        self.member_pos = member_pos

    # --- children ---------------------------------------------------------------------

    def _children(self) -> None:
        """Every group's children in the view's order, as unified ids."""
        n = self.n_ops
        G = len(self.gnames)
        made = self.g_made
        n0 = made.size  # scope groups; the rest are series, appended in creation order
        parent = np.empty(n + G, np.int64)
        key = np.empty(n + G, np.int64)
        sub = np.zeros(n + G, np.int64)
        parent[:n] = self.op_parent
        key[:n] = 2 * np.arange(n) + 1
        member = getattr(self, "member_pos", {})
        if member:
            mj = np.fromiter(member.keys(), np.int64, len(member))
            key[mj] = np.fromiter(member.values(), np.int64, len(member))
        gp = np.array(self.gparent, np.int64)
        parent[n:] = gp
        key[n:n + n0] = 2 * made
        big = 2 * n + 2
        key[n + n0:] = big + np.arange(G - n0)
        sub[n:] = np.arange(G)
        order = np.lexsort((sub, key, parent))
        order = order[parent[order] >= 0]  # not the root
        p = parent[order]
        counts = np.bincount(p, minlength=G)
        splits = np.cumsum(counts)[:-1]
        self.kids: list[np.ndarray] = np.split(order, splits)
        self.parent_u = parent  # group index of each unified id's parent (-1: root)

    # --- step 4: metaedges ------------------------------------------------------------

    def _ancestors(self, g: int) -> tuple[int, ...]:
        path = []
        while g >= 0:
            path.append(g)
            g = self.gparent[g]
        return tuple(reversed(path))

    def _metaedges(self) -> None:
        n = self.n_ops
        src, dst = self.e_src, self.e_dst
        ps = self.op_parent[src]
        pd = self.op_parent[dst]
        g = ps.copy()
        v = src.copy()
        w = dst.copy()
        diff = np.flatnonzero(ps != pd)
        if diff.size:
            G = len(self.gnames)
            pair = ps[diff] * G + pd[diff]
            upairs, inv = np.unique(pair, return_inverse=True)
            lg = np.empty(upairs.size, np.int64)
            lv = np.empty(upairs.size, np.int64)
            lw = np.empty(upairs.size, np.int64)
            anc: dict[int, tuple[int, ...]] = {}
            for i, pr in enumerate(upairs.tolist()):
                a_g, b_g = divmod(pr, G)
                a = anc.get(a_g) or anc.setdefault(a_g, self._ancestors(a_g))
                b = anc.get(b_g) or anc.setdefault(b_g, self._ancestors(b_g))
                m = min(len(a), len(b))
                k = 1
                while k < m and a[k] == b[k]:
                    k += 1
                if k == len(a):
                    lg[i], lv[i], lw[i] = a[-1], -1, n + b[k]
                elif k == len(b):
                    lg[i], lv[i], lw[i] = b[-1], n + a[k], -1
                else:
                    lg[i], lv[i], lw[i] = a[k - 1], n + a[k], n + b[k]
            inv = inv.reshape(-1)
            g[diff] = lg[inv]
            cv, cw = lv[inv], lw[inv]
            v[diff] = np.where(cv >= 0, cv, v[diff])
            w[diff] = np.where(cw >= 0, cw, w[diff])
        U = n + len(self.gnames)
        combo = v * U + w
        uniq, first, inv = np.unique(combo, return_index=True, return_inverse=True)
        inv = inv.reshape(-1)
        m = uniq.size
        control = (self.e_flags & 1).astype(bool)
        ref = (self.e_flags & 2).astype(bool)
        sizes = self._output_sizes()[src]
        me_size = np.bincount(inv, weights=sizes, minlength=m)
        me_ctl = np.bincount(inv, weights=control, minlength=m).astype(np.int64)
        me_reg = np.bincount(inv, minlength=m).astype(np.int64) - me_ctl
        me_ref = np.bincount(inv, weights=ref, minlength=m).astype(np.int64)
        me_g = g[first]
        # Distinct shapes of each metaedge's regular edges, in edge order.
        sh_list = self.shapes[src]
        empty = self.shape_lists.get(())
        take = ~control if empty is None else (~control) & (sh_list != empty)
        shapes_of: list[list[int]] = [[] for _ in range(m)]
        self.one_shapes: dict[tuple[int, int], int] = {}
        if take.any():
            idx = np.flatnonzero(take)
            lst = sh_list[idx]
            slot = self.e_slot[idx]
            pk = lst * (int(slot.max()) + 1) + slot
            upk, pinv = np.unique(pk, return_inverse=True)
            width = int(slot.max()) + 1
            shapes_by_id = list(self.shape_lists)
            shape_ids: dict[Shape, int] = {}
            self.shape_table: list[Shape] = []
            ushape = np.empty(upk.size, np.int64)
            for i, key in enumerate(upk.tolist()):
                li, sl = divmod(key, width)
                lst_shapes = shapes_by_id[li]
                shape = lst_shapes[sl] if sl < len(lst_shapes) else None
                si = shape_ids.get(shape)
                if si is None:
                    si = shape_ids[shape] = len(self.shape_table)
                    self.shape_table.append(shape)
                ushape[i] = si
            esh = ushape[pinv.reshape(-1)]
            mi = inv[idx]
            S = len(self.shape_table)
            pair = mi * S + esh
            up, pfirst = np.unique(pair, return_index=True)
            o = np.argsort(pfirst, kind="stable")
            up = up[o]
            mm, ss = np.divmod(up, S)
            o2 = np.argsort(mm, kind="stable")
            for a, b in zip(mm[o2].tolist(), ss[o2].tolist(), strict=True):
                shapes_of[a].append(b)
        else:
            self.shape_table = []
        # Per group, its metaedges in order of first edge.
        order = np.lexsort((first, me_g))
        G = len(self.gnames)
        counts = np.bincount(me_g, minlength=G)
        nonctl = np.zeros(G, bool)
        nonctl[me_g[me_reg > 0]] = True
        self.nonctl = nonctl
        mv, mw = np.divmod(uniq, U)
        self.me = {"v": mv[order], "w": mw[order], "reg": me_reg[order],
                   "ctl": me_ctl[order], "ref": me_ref[order], "size": me_size[order]}
        self.me_shapes = [shapes_of[i] for i in order.tolist()]
        starts = np.r_[0, np.cumsum(counts)]
        self.me_start = starts
        #: Groups whose metaedges were rebuilt in Python (group series): index -> list.
        self.me_override: dict[int, list[Metaedge]] = {}

    def _output_sizes(self) -> np.ndarray:
        sizes_by_list = np.empty(len(self.shape_lists), np.float64)
        for i, key in enumerate(self.shape_lists):
            if not key:
                sizes_by_list[i] = 1
                continue
            total = 0
            for shape in key:
                if shape is None:
                    total += 1
                    continue
                size = 1
                for d in shape:
                    if d is not None and d != -1:
                        size *= d
                total += size
            sizes_by_list[i] = total
        return sizes_by_list[self.shapes]

    def metaedges_of(self, g: int) -> list[tuple[int, int, int, int, int, float, list[Shape]]]:
        """Group ``g``'s metaedges: (v, w, regular, control, ref, size, shapes)."""
        over = self.me_override.get(g)
        if over is not None:
            return [(int(m.v), int(m.w), m.regular, m.control, m.ref, m.size,
                     list(m.shapes)) for m in over]
        if g >= self.me_start.size - 1:
            return []
        a, b = int(self.me_start[g]), int(self.me_start[g + 1])
        me = self.me
        table = self.shape_table
        return [(v, w, r, c, f, s, [table[k] for k in self.me_shapes[i]])
                for i, v, w, r, c, f, s in zip(
                    range(a, b), me["v"][a:b].tolist(), me["w"][a:b].tolist(),
                    me["reg"][a:b].tolist(), me["ctl"][a:b].tolist(),
                    me["ref"][a:b].tolist(), me["size"][a:b].tolist(), strict=True)]

    def n_metaedges(self, g: int) -> int:
        over = self.me_override.get(g)
        if over is not None:
            return len(over)
        if g >= self.me_start.size - 1:
            return 0
        return int(self.me_start[g + 1] - self.me_start[g])

    def me_flags(self, g: int) -> list[tuple[int, int, int]]:
        """(v, w, 1 regular | 2 control) of group ``g``'s metaedges (unified ids)."""
        over = self.me_override.get(g)
        if over is not None:
            return [(int(m.v), int(m.w), (1 if m.regular else 0) | (2 if m.control else 0))
                    for m in over]
        if g >= self.me_start.size - 1:
            return []
        a, b = int(self.me_start[g]), int(self.me_start[g + 1])
        me = self.me
        f = (me["reg"][a:b] > 0).astype(np.int64) | ((me["ctl"][a:b] > 0) * 2)
        return list(zip(me["v"][a:b].tolist(), me["w"][a:b].tolist(), f.tolist(),
                        strict=True))

    # --- step 5: templates (smallest subtree first) -----------------------------------

    def _signature(self, g: int) -> str:
        strings = self._string_list()
        hist = sorted((strings[k], v) for k, v in self.hist[g])
        ops = ",".join(f"{k}={v}" for k, v in hist)
        return (f"depth={self.depth[g]} |V|={len(self.kids[g])} "
                f"|E|={self.n_metaedges(g)} [ops] {ops}")

    def _string_list(self) -> list[str]:
        cached = getattr(self, "_strings_cache", None)
        if cached is None or len(cached) != len(self.strings):
            cached = self._strings_cache = list(self.strings)
        return cached

    def _label(self, u: int) -> int:
        codes = self.codes
        n = self.n_ops
        if u < n:
            return int(codes.code(("op", self._string_list()[int(self.types[u])])))
        g = u - n
        if self.gkind[g] == 0:
            return int(codes.code(("meta", codes.of[g])))
        kids = self.kids[g]
        inner: Any
        if not len(kids):
            inner = None
        elif kids[0] < n:
            inner = self._string_list()[int(self.types[kids[0]])]
        else:
            inner = self._label(int(kids[0]))
        return int(codes.code(("series", len(kids), inner)))

    def _group_code(self, g: int, sig: str) -> int:
        n = self.n_ops
        kids = self.kids[g].tolist()
        pos = {u: i for i, u in enumerate(kids)}
        labels = [self._label(u) for u in kids]
        edges = tuple((pos[v], pos[w], f) for v, w, f in self.me_flags(g))
        c = int(self.codes.group_code(sig, labels, edges))
        self.codes.of[g] = c
        del n
        return c

    def _find_templates(self, changed: set[int] | None) -> dict[str, list[str]]:
        codes = self.codes
        fresh = changed is None
        changed = set() if changed is None else changed
        metas = [g for g in range(len(self.gnames)) if self.gkind[g] == 0]
        levels: dict[int, list[int]] = {}
        for g in metas:
            levels.setdefault(self.depth[g], []).append(g)
        out: dict[str, list[str]] = {}
        ids: dict[int, str] = {}
        for depth in sorted(levels):
            buckets: dict[str, list[int]] = {}
            for g in levels[depth]:
                buckets.setdefault(self._signature(g), []).append(g)
            for sig, members in buckets.items():
                if len(members) == 1:
                    g = members[0]
                    if fresh or g in changed or g not in codes.of:
                        codes.of[g] = codes.code(("unique", self.gnames[g]))
                        codes.unique.add(g)
                    continue
                classes: dict[int, list[int]] = {}
                for g in members:
                    if fresh or g in changed or g in codes.unique or g not in codes.of:
                        if not fresh and g in codes.unique:
                            p = self.gparent[g]
                            while p >= 0:
                                changed.add(p)
                                p = self.gparent[p]
                        codes.unique.discard(g)
                        self._group_code(g, sig)
                    classes.setdefault(codes.of[g], []).append(g)
                for k, gs in enumerate(classes.values()):
                    if len(gs) >= 2:
                        tid = f"{sig}[{k}]"
                        out[tid] = [self.gnames[x] for x in gs]
                        for x in gs:
                            ids[x] = tid
        self.template_of = ids
        return out

    # --- step 6: series of groups -----------------------------------------------------

    def _group_series(self) -> set[int] | None:
        n = self.n_ops
        min_size = self.opts.series_min_size
        existing: set[str] | None = None
        made: list[int] = []
        for g in [x for x in range(len(self.gnames)) if self.gkind[x] == 0]:
            clusters: dict[str, list[int]] = {}
            for u in self.kids[g].tolist():
                if u >= n and self.gkind[u - n] == 0:
                    tid = self.template_of.get(u - n)
                    if tid:
                        clusters.setdefault(tid, []).append(u - n)
            for members in clusters.values():
                if len(members) < min_size:
                    continue
                for prefix, suffix, run in _long_group_runs(self.gnames, members, min_size):
                    if existing is None:
                        existing = set(self.names)
                        existing.update(self.gnames)
                    made.append(self._make_group_series(g, prefix, suffix, run, existing))
        if not made:
            return None
        changed: set[int] = set()
        for s in made:
            p = self.gparent[s]
            while p >= 0 and p not in changed:
                changed.add(p)
                p = self.gparent[p]
        return changed

    def _make_group_series(self, g: int, prefix: str, suffix: str,
                           run: list[tuple[int, int]], existing: set[str]) -> int:
        n = self.n_ops
        first = self.gnames[run[0][1]]
        scope = first[:first.rfind("/")] if "/" in first else ""
        name = series_name(scope, prefix, suffix, run[0][0], run[-1][0])
        if name in existing:
            raise _Declined
        existing.add(name)
        s = self._new_group(name, g, 1)
        self.series_op[s] = self.sid("group")
        self.series_ids[s] = [i for i, _ in run]
        hist: dict[int, int] = {}
        dh: dict[int, int] = {}
        members = [m for _, m in run]
        for m in members:
            self.gparent[m] = s
            self.card[s] += self.card[m]
            for k, v in self.hist[m]:
                hist[k] = hist.get(k, 0) + v
            for k, v in self.dhist[m]:
                dh[k] = dh.get(k, 0) + v
            self.depth[s] = max(self.depth[s], self.depth[m] + 1)
        self.hist[s] = list(hist.items())
        self.dhist[s] = list(dh.items())
        mset = {n + m for m in members}
        kids = [u for u in self.kids[g].tolist() if u not in mset]
        kids.append(n + s)
        self.kids[g] = np.array(kids, np.int64)
        self.kids.append(np.array([n + m for m in members], np.int64))
        self.nonctl = np.append(self.nonctl, False)
        # Re-bundle g's metaedges around the series (series._rebundle).
        old = [Metaedge(v, w, r, c, f, s_, sh)  # type: ignore[arg-type]
               for v, w, r, c, f, s_, sh in self.metaedges_of(g)]
        inner: list[Metaedge] = []
        new: dict[tuple[int, int], Metaedge] = {}
        su = n + s
        for me in old:
            v, w = int(me.v), int(me.w)  # type: ignore[call-overload]
            vin, win = v in mset, w in mset
            if vin and win:
                inner.append(me)
                if me.regular:
                    self.nonctl[s] = True
                continue
            key = (su if vin else v, su if win else w)
            if key == (v, w):
                new[key] = me
                continue
            merged = new.get(key)
            if merged is None:
                merged = new[key] = Metaedge(key[0], key[1])  # type: ignore[arg-type]
            merged.regular += me.regular
            merged.control += me.control
            merged.ref += me.ref
            merged.size += me.size
            for shape in me.shapes:
                if shape not in merged.shapes:
                    merged.shapes.append(shape)
        self.me_override[g] = list(new.values())
        self.me_override[s] = inner
        return s

    # --- step 7: side panels ----------------------------------------------------------

    def _side_panels(self) -> None:
        """Side panels of the metanodes that can have one; the rest are empty lists.

        A group gets a non-empty panel only through a ``NoOp`` child, at least 15
        children (the degree rule), a child with more than 4 control-only metaedges, or
        a child without metaedges holding embeddings on one side only; only those
        groups are run through ``extraction.extract_group``.
        """
        n = self.n_ops
        G = len(self.gnames)
        self.panels: dict[int, dict[str, list[str]]] = {}
        noop = self.strings.get(_NOOP)
        has_emb = np.zeros(n, np.int8)  # bit 0 in, bit 1 out
        for j, lst in self.embs.items():
            for flag, _ in lst:
                has_emb[j] |= 1 << flag
        one_side = (has_emb == 1) | (has_emb == 2)
        # Unified ids of "scope/(scope)" ops whose parent is that scope, by group.
        for g in range(G):
            if self.gkind[g] != 0:
                continue
            kids = self.kids[g]
            run = len(kids) >= 15
            if not run and noop is not None:
                ops = kids[kids < n]
                run = bool((self.types[ops] == noop).any())
                if not run:
                    for u in kids[kids >= n].tolist():
                        if self._root_op_is(u - n, noop):
                            run = True
                            break
            flags = None
            if not run:
                flags = self.me_flags(g)
                deg: dict[int, int] = {}
                touched: set[int] = set()
                for v, w, f in flags:
                    touched.add(v)
                    touched.add(w)
                    if not f & 1:
                        deg[v] = deg.get(v, 0) + 1
                        deg[w] = deg.get(w, 0) + 1
                run = any(d > 4 for d in deg.values())
                if not run:
                    ops = kids[kids < n]
                    cand = ops[one_side[ops]]
                    run = any(u not in touched for u in cand.tolist())
            if run:
                self.panels[g] = self._extract(g)

    def _root_op_is(self, g: int, type_id: int) -> bool:
        name = self.gnames[g]
        j = self._op_index().get(f"{name}/({name.rsplit('/', 1)[-1]})")
        return (j is not None and int(self.op_parent[j]) == g
                and int(self.types[j]) == type_id)

    def _op_index(self) -> dict[str, int]:
        idx = getattr(self, "_op_index_cache", None)
        if idx is None:
            idx = self._op_index_cache = {name: j for j, name in enumerate(self.names)}
        return idx

    def _extract(self, g: int) -> dict[str, list[str]]:
        """``extract_group`` on a tree of group ``g``, its children and their root ops."""
        n = self.n_ops
        strings = self._string_list()
        tree = Tree()
        gname = self.gnames[g]
        node = GroupNode(gname)
        tree.nodes[gname] = node
        tree.kids[gname] = {}
        tree.metaedges[gname] = {}

        def name_of(u: int) -> str:
            return self.names[u] if u < n else self.gnames[u - n]

        for u in self.kids[g].tolist():
            name = name_of(u)
            if u < n:
                op = OpNode(name, strings[int(self.types[u])], parent=gname)
                for flag, e in self.embs.get(u, ()):
                    (op.out_embeddings if flag else op.in_embeddings).append(e)
                tree.nodes[name] = op
            else:
                k = u - n
                tree.nodes[name] = GroupNode(name, kind="series" if self.gkind[k] else "meta",
                                             parent=gname)
                if not self.gkind[k]:
                    root = f"{name}/({name.rsplit('/', 1)[-1]})"
                    j = self._op_index().get(root)
                    if j is not None:
                        p = int(self.op_parent[j])
                        tree.nodes[root] = OpNode(root, strings[int(self.types[j])],
                                                  parent=self.gnames[p])
            tree.kids[gname][name] = None
        for v, w, f in self.me_flags(g):
            key = (name_of(v), name_of(w))
            tree.metaedges[gname][key] = Metaedge(key[0], key[1], regular=f & 1)
        return extract_group(tree, node, set(), self.opts.auto_extract)

    # --- the page -------------------------------------------------------------------

    def page_data(self, level: int) -> dict[str, Any]:
        return _encode(self, level)


def _long_group_runs(gnames: list[str], members: list[int], min_size: int,
                     ) -> list[tuple[str, str, list[tuple[int, int]]]]:
    """series._long_runs on group indices: [(prefix, suffix, [(id, group), ...])]."""
    candidates: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for m in members:
        name = gnames[m]
        prefix, ident, suffix = split_series_name(name[name.rfind("/") + 1:])
        candidates.setdefault((prefix, suffix), []).append((ident, m))
    out: list[tuple[str, str, list[tuple[int, int]]]] = []
    for (prefix, suffix), items in candidates.items():
        if len(items) < 2:
            continue
        items.sort(key=lambda t: t[0])
        run = [items[0]]
        for item in items[1:]:
            if item[0] == run[-1][0] + 1:
                run.append(item)
                continue
            if len(run) >= min_size:
                out.append((prefix, suffix, run))
            run = [item]
        if len(run) >= min_size:
            out.append((prefix, suffix, run))
    return out


_KIND_OP, _KIND_META, _KIND_SERIES, _VERTICAL = 0, 1, 2, 4


def _encode(c: _Columns, level: int) -> dict[str, Any]:
    """The page data of the columns (``page_data._encode``'s output, computed per
    column)."""
    n = c.n_ops
    G = len(c.gnames)
    # Breadth-first order of unified ids from the root.
    order_parts = [np.array([n], np.int64)]
    frontier = [0]
    while frontier:
        nxt: list[np.ndarray] = [c.kids[g] for g in frontier]
        if not nxt:
            break
        cat = np.concatenate(nxt) if nxt else np.zeros(0, np.int64)
        if not cat.size:
            break
        order_parts.append(cat)
        frontier = (cat[cat >= n] - n).tolist()
    order = np.concatenate(order_parts)
    N = order.size
    pos = np.empty(n + G, np.int64)
    pos[order] = np.arange(N)
    is_op = order < n
    ops_at = order[is_op]
    grp_at = order[~is_op] - n
    # Labels and their strings.
    names_ = c.names
    gnames = c.gnames
    label_text = [""] * N
    full = [""] * N
    for i, u in enumerate(order.tolist()):
        name = names_[u] if u < n else gnames[u - n]
        full[i] = name
        label_text[i] = name[name.rfind("/") + 1:]
    del full
    return _encode_tables(c, level, order, pos, is_op, ops_at, grp_at, label_text)


def _encode_tables(c: _Columns, level: int, order: np.ndarray, pos: np.ndarray,
                   is_op: np.ndarray, ops_at: np.ndarray, grp_at: np.ndarray,
                   label_text: list[str]) -> dict[str, Any]:
    n = c.n_ops
    N = order.size
    strings_by_id = c._string_list()
    # The page's string table: strings in order of first use by page_data._encode, which
    # for each node in order interns its label, then (op) type, device, embedding names
    # and ops, or (group) series op, histogram keys, device keys.
    page_sid: dict[str, int] = {}

    def sid(s: str) -> int:
        i = page_sid.get(s)
        if i is None:
            i = page_sid[s] = len(page_sid)
        return i

    remap = np.full(len(strings_by_id) + 1, -1, np.int64)  # our string id -> page id

    def rs(k: int) -> int:
        r = int(remap[k])
        if r < 0:
            r = remap[k] = sid(strings_by_id[k])
        return r

    shape_ix: dict[tuple[Shape, ...], int] = {}

    def shp(key: tuple[Shape, ...]) -> int:
        i = shape_ix.get(key)
        if i is None:
            i = shape_ix[key] = len(shape_ix)
        return i

    shape_lists = list(c.shape_lists)
    shape_remap = np.full(len(shape_lists), -1, np.int64)
    kind = np.zeros(N, np.int64)
    nchild = np.zeros(N, np.int64)
    label = np.empty(N, np.int64)
    typ = np.full(N, -1, np.int64)
    device = np.full(N, -1, np.int64)
    attrs = np.full(N, -1, np.int64)
    shapes = np.full(N, -1, np.int64)
    card = np.zeros(N, np.int64)
    depth = np.zeros(N, np.int64)
    template = np.full(N, -1, np.int64)
    nme = np.zeros(N, np.int64)
    nhist = np.zeros(N, np.int64)
    ndev = np.zeros(N, np.int64)
    attr_remap = np.full(len(c.attr_list), -1, np.int64)
    attrs_out: list[dict[str, str]] = []
    template_ix = {t: i for i, t in enumerate(c.templates)}
    tids = c.template_of
    hist_key: list[int] = []
    hist_val: list[int] = []
    dev_key: list[int] = []
    dev_val: list[int] = []
    me_cols: dict[str, list[Any]] = {k: [] for k in ("v", "w", "reg", "ctl", "ref", "size",
                                                      "shapes")}
    emb_host: list[int] = []
    emb_flags: list[int] = []
    emb_name: list[int] = []
    emb_op: list[int] = []
    emb_shapes: list[int] = []
    names_tbl: list[list[Any]] = []
    panels: list[list[Any]] = []
    series: list[list[Any]] = []
    xla: list[list[Any]] = []
    devices: set[str] = set()
    types_ = c.types
    devs_ = c.devices
    attrs_ = c.attrs
    shapes_ = c.shapes
    embs = c.embs
    gnames = c.gnames
    pos_list = pos
    # The nearest ancestor that is not a series, for the names table.
    for i, u in enumerate(order.tolist()):
        label[i] = sid(label_text[i])
        if u < n:
            typ[i] = rs(int(types_[u]))
            d = int(devs_[u])
            if d >= 0:
                devices.add(strings_by_id[d])
                device[i] = rs(d)
            a = int(attrs_[u])
            if a >= 0:
                r = int(attr_remap[a])
                if r < 0:
                    r = attr_remap[a] = len(attrs_out)
                    attrs_out.append(c.attr_list[a])
                attrs[i] = r
            sl = int(shapes_[u])
            r = int(shape_remap[sl])
            if r < 0:
                r = shape_remap[sl] = shp(shape_lists[sl])
            shapes[i] = r
            xc = c.xla.get(u)
            if xc is not None:
                xla.append([i, xc])
            lst = embs.get(u)
            if lst:
                name = c.names[u]
                cut = name.rfind("/")
                scope = name[:cut + 1] if cut >= 0 else ""
                for flag, e in lst:
                    emb_host.append(i)
                    if scope and e.name.startswith(scope) and "/" not in e.name[len(scope):]:
                        emb_flags.append(flag | 2)
                        emb_name.append(sid(e.name[len(scope):]))
                    else:
                        emb_flags.append(flag)
                        emb_name.append(sid(e.name))
                    emb_op.append(sid(e.op))
                    emb_shapes.append(shp(tuple(e.shapes)))
            continue
        g = u - n
        is_series = c.gkind[g] == 1
        kind[i] = (_KIND_SERIES | (_VERTICAL if c.nonctl[g] else 0)) if is_series \
            else _KIND_META
        kids = c.kids[g]
        nchild[i] = len(kids)
        if is_series:
            typ[i] = rs(c.series_op[g])
        card[i] = c.card[g]
        depth[i] = c.depth[g]
        tid = tids.get(g)
        if tid is not None:
            template[i] = template_ix.get(tid, -1)
        mes = c.metaedges_of(g)
        nme[i] = len(mes)
        if mes:
            kp = {int(x): k for k, x in enumerate(kids.tolist())}
            for v, w, reg, ctl, ref, size, mshapes in mes:
                me_cols["v"].append(kp.get(v, -1))
                me_cols["w"].append(kp.get(w, -1))
                me_cols["reg"].append(reg)
                me_cols["ctl"].append(ctl)
                me_cols["ref"].append(ref)
                me_cols["size"].append(size)
                me_cols["shapes"].append(shp(tuple(mshapes)))
        hist = c.hist[g]
        nhist[i] = len(hist)
        for k, v in hist:
            hist_key.append(rs(k))
            hist_val.append(v)
        dh = c.dhist[g]
        ndev[i] = len(dh)
        for k, v in dh:
            dev_key.append(rs(k))
            dev_val.append(v)
        sp = c.panels.get(g)
        if sp is not None and (sp.get("in") or sp.get("out")):
            panels.append([i, list(sp.get("in", [])), list(sp.get("out", []))])
        if is_series:
            series.append([i, list(c.series_ids[g])])
    del gnames, pos_list
    # Full names that are not "base/label" (base: the nearest ancestor not a series).
    _names_table(c, order, names_tbl)
    e_src = pos[c.e_src]
    e_dst = pos[c.e_dst]
    columns: list[tuple[str, np.ndarray]] = [
        ("kind", kind.astype(np.uint8)),
        ("nchild", nchild), ("label", label), ("type", typ), ("device", device),
        ("attrs", attrs), ("shapes", shapes), ("card", card), ("depth", depth),
        ("template", template), ("nme", nme), ("nhist", nhist), ("ndev", ndev),
        ("hist_key", np.array(hist_key, np.int32)),
        ("hist_val", np.array(hist_val, np.int32)),
        ("dev_key", np.array(dev_key, np.int32)),
        ("dev_val", np.array(dev_val, np.int32)),
        ("me_v", np.array(me_cols["v"], np.int32)),
        ("me_w", np.array(me_cols["w"], np.int32)),
        ("me_reg", np.array(me_cols["reg"], np.int32)),
        ("me_ctl", np.array(me_cols["ctl"], np.int32)),
        ("me_ref", np.array(me_cols["ref"], np.int32)),
        ("me_size", np.array(me_cols["size"], np.float64)),
        ("me_shapes", np.array(me_cols["shapes"], np.int32)),
        ("e_src", e_src), ("e_dst", e_dst), ("e_slot", c.e_slot),
        ("e_flags", c.e_flags.astype(np.uint8)),
        ("emb_host", np.array(emb_host, np.int32)),
        ("emb_flags", np.array(emb_flags, np.uint8)),
        ("emb_name", np.array(emb_name, np.int32)),
        ("emb_op", np.array(emb_op, np.int32)),
        ("emb_shapes", np.array(emb_shapes, np.int32)),
    ]
    tables = {
        "strings": list(page_sid),
        "shapes": [[None if s is None else list(s) for s in key] for key in shape_ix],
        "attrs": attrs_out,
        "names": names_tbl,
        "extra": [],
        "panels": panels,
        "series": series,
        "xla": xla,
    }
    options_json: dict[str, object] = c.opts.to_json()
    options_json["hidden_count"] = c.hidden
    return encode_columns(
        columns, tables, level, options=options_json,
        stats={"ops": n, "edges": int(c.e_src.size), "groups": N - n - 1},
        nodes=N, devices=sorted(devices), has_time=False,
        templates=[[t, len(m), m[0] if m else t] for t, m in c.templates.items()])


def _names_table(c: _Columns, order: np.ndarray, out: list[list[Any]]) -> None:
    n = c.n_ops
    base_name: dict[int, str] = {0: ""}  # group -> the name its children are based on
    for i, u in enumerate(order.tolist()):
        if u < n:
            name = c.names[u]
            g = int(c.op_parent[u])
        else:
            name = c.gnames[u - n]
            g = c.gparent[u - n]
            if g < 0:
                continue
        base = base_name.get(g)
        if base is None:
            base = base_name[g] = _base_of(c, g)
        lab = name[name.rfind("/") + 1:]
        want = lab if not base else base + "/" + lab
        if want != name:
            out.append([i, name])


def _base_of(c: _Columns, g: int) -> str:
    # Members of a series are named in the series' scope (its parent's name).
    while g > 0 and c.gkind[g] == 1:
        g = c.gparent[g]
    return c.gnames[g]
