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
first occurrences in breadth-first order. The source is read once, into columns
(``source_columns``): a serialized GraphDef from its wire format, an IR graph field by
field over all nodes. Op types and devices become codes (one dict lookup per node), so
kinds, type and device ids and the string table's first uses are numpy work per distinct
string. One index holds every node by name (``_NameIndex``: the names' string hashes
sorted, a key found by one search; a key that is a name's own string object by its id):
inputs are resolved over all of them at once (an op, an embedded node or nothing), and
only those naming an embedded node with inputs, a summary or no op are looked at one by
one. Names are split into
scope and leaf by C string methods mapped over all names; the scopes are numbered by
their first op once (the hierarchy's groups are made from that), and the names that are
also scopes found by one lookup per distinct scope. Series leaves are split into stem and
number once per distinct leaf, by one scan of their UTF-8 bytes. Python loops remain
per input that names an embedded node with inputs, per leaf with a digit inside, and
otherwise only where the work is per *distinct* thing (scopes, op types, shapes, template
codes of the groups that share a signature, the few groups that can have a side panel).
Embeddings are columns (host op, side, source node), objects only for a side panel; the
op-type and device histograms are arrays, a group's list made when a step reads it.

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

from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from itertools import chain, count, filterfalse, pairwise, repeat
from operator import attrgetter, eq, itemgetter, methodcaller
from typing import Any, overload

import numpy as np

from summarylib.graph._gc import gc_paused
from summarylib.graph.view.extraction import extract_group
from summarylib.graph.view.first_use import first_use_order
from summarylib.graph.view.hierarchy import Tree
from summarylib.graph.view.model import Embedding, GroupNode, Metaedge, OpNode, Shape
from summarylib.graph.view.normalize import (
    _ARRAY_INDEX_RE,
    REF_EDGES,
    _graph_def,
    _Matcher,
    strict_name,
)
from summarylib.graph.view.options import ViewOptions
from summarylib.graph.view.page_data import encode_columns
from summarylib.graph.view.page_tree import PageTree
from summarylib.graph.view.rows import unique_rows
from summarylib.graph.view.series import consecutive_runs, series_name, split_series_name
from summarylib.graph.view.source_columns import SourceColumns, _take, read_source
from summarylib.graph.view.templates import new_state

__all__ = ["Declined", "bundle_pairs", "key_histograms", "series_keys", "small_unique",
           "source_to_page_and_tree", "source_to_page_data", "source_to_page_tree",
           "string_codes"]

_NOOP = "NoOp"


class Declined(Exception):
    """The graph uses something this path does not reproduce (see the module docstring);
    raised by the steps (``series_keys`` for a number too large to keep), caught by
    :func:`source_to_page_data`, which then returns None."""


def source_to_page_data(source: Any, options: ViewOptions | Mapping[str, Any] | None = None,
                        level: int = 1) -> dict[str, Any] | None:
    """The page data of ``source`` (what ``view_to_page_data(build_view(source, options),
    level)`` returns), or None when the graph uses something this path does not reproduce
    (the module docstring lists it): then build the view.

    ``source``: an IR :class:`~summarylib.graph.Graph`, a ``GraphDef`` message or its
    serialized bytes (not a path: load it first). A source that is not a graph raises
    ValueError naming it, as ``build_view`` does.
    """
    got = _source_page(source, options, level, tree=False)
    return None if got is None else got[0]


def source_to_page_and_tree(source: Any, options: ViewOptions | Mapping[str, Any] | None = None,
                            level: int = 1) -> tuple[dict[str, Any], PageTree] | None:
    """:func:`source_to_page_data`'s page data and the :class:`PageTree` of its nodes
    (names and drawn groups: what a run's statistics join to), or None as there."""
    got = _source_page(source, options, level, tree=True)
    return None if got is None or got[0] is None or got[1] is None else (got[0], got[1])


def source_to_page_tree(source: Any, options: ViewOptions | Mapping[str, Any] | None = None
                        ) -> PageTree | None:
    """The :class:`PageTree` of :func:`source_to_page_data`'s page, without the page
    (another run's graph to compare with), or None as there."""
    got = _source_page(source, options, 1, tree=True, page=False)
    return None if got is None else got[1]


def _source_page(source: Any, options: ViewOptions | Mapping[str, Any] | None, level: int,
                 tree: bool, page: bool = True
                 ) -> tuple[dict[str, Any] | None, PageTree | None] | None:
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

    serialized = None
    if not isinstance(source, Graph):
        if isinstance(source, (bytes, bytearray, memoryview)):
            # The bytes parse (a bad source raises as build_view does), and are then read
            # as they are: serializing the parsed message again costs as much as reading.
            serialized = bytes(source)
        gd = _graph_def(source)
        if gd.HasField("library") and len(gd.library.function):
            return None
        # With the bytes at hand the message is not read again: it goes now (a million
        # parsed nodes hold about 0.9 GB), unless its (empty) library sends it to the
        # message's reader.
        source = gd if serialized is None or gd.HasField("library") else None
        del gd
    with gc_paused():
        try:
            columns = _Columns(source, opts, serialized)
            return (columns.page_data(level) if page else None,
                    columns.page_tree() if tree else None)
        except Declined:
            return None


class _NameIndex:
    """The position of each of a list of distinct names, found without a dict: their
    string hashes (cached in the strings) sorted with numpy, one search per key, and the
    name found compared with the key. At a million names, a dict is a 40 MB table that
    every insertion and lookup reaches at random; the sorted hashes take 8 MB, and a key
    that is one of the names' own string objects (an IR graph built in Python names its
    inputs with its nodes' strings) is found by its id, without touching the string."""

    def __init__(self, names: list[str], hashes: np.ndarray) -> None:
        self.names = names
        self.order = np.argsort(hashes)
        self.hashes = hashes[self.order]
        self._by_id: tuple[np.ndarray, np.ndarray] | None = None

    @classmethod
    def of(cls, names: list[str]) -> _NameIndex | None:
        """The index of ``names``, or None when two of them have one hash (a name given
        twice, or a collision) or a name is not exactly a ``str``."""
        if not names or set(map(type, names)) != {str}:
            return None
        index = cls(names, np.fromiter(map(hash, names), np.int64, len(names)))
        if (index.hashes[1:] == index.hashes[:-1]).any():
            return None
        return index

    def get(self, key: str) -> int | None:
        """The position of the name equal to ``key``, or None (``dict.get``)."""
        found = int(self.lookup([key])[0])
        return None if found < 0 else found

    def lookup(self, keys: list[str]) -> np.ndarray:
        """Per key, the position of the name equal to it, or -1."""
        m = len(keys)
        out = np.full(m, -1, np.int64)
        if not m:
            return out
        rest = np.arange(m)
        if m >= 64:
            # Keys that are the names' own objects, when most are (a sample tells).
            sample = keys[::m // 32]
            got = self._by_hash(sample)
            if 2 * sum(p >= 0 and self.names[p] is k for k, p in zip(
                    sample, got.tolist(), strict=True)) >= len(sample):
                if self._by_id is None:
                    ids = np.fromiter(map(id, self.names), np.int64, len(self.names))
                    order = np.argsort(ids)
                    self._by_id = (ids[order], order)
                ids, order = self._by_id
                key_ids = np.fromiter(map(id, keys), np.int64, m)
                at = np.minimum(np.searchsorted(ids, key_ids), ids.size - 1)
                hit = ids[at] == key_ids
                out[hit] = order[at[hit]]
                rest = np.flatnonzero(~hit)
        if rest.size:
            out[rest] = self._by_hash(keys if rest.size == m else _take(keys, rest))
        return out

    def _by_hash(self, keys: list[str]) -> np.ndarray:
        q = np.fromiter(map(hash, keys), np.int64, len(keys))
        at = np.minimum(np.searchsorted(self.hashes, q), self.hashes.size - 1)
        cand = np.flatnonzero(self.hashes[at] == q)
        pos = self.order[at[cand]]
        same = np.fromiter(map(eq, _take(keys, cand), _take(self.names, pos)), bool,
                           cand.size)
        out = np.full(len(keys), -1, np.int64)
        out[cand[same]] = pos[same]
        return out


def string_codes(values: list[str]) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(the distinct values in order of first occurrence, the index of each one's first
    occurrence, each value's index among the distinct ones): one dict lookup per value."""
    first: dict[str, int] = {}
    at = np.fromiter(map(first.setdefault, values, count()), np.int64, len(values))
    firsts = np.fromiter(first.values(), np.int64, len(first))
    code = np.zeros(len(values), np.int64)
    code[firsts] = np.arange(firsts.size)
    return list(first), firsts, code[at]


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

    def __init__(self, source: Any, opts: ViewOptions, serialized: bytes | None = None
                 ) -> None:
        # ``serialized``: the bytes a GraphDef ``source`` was parsed from (see read_source).
        self.opts = opts
        self.strings: dict[str, int] = {}
        self.shape_lists: dict[tuple[Shape, ...], int] = {}
        self.attr_dicts: dict[tuple[tuple[str, str], ...], int] = {}
        self.attr_list: list[dict[str, str]] = []
        self._normalize(source, serialized)
        self._hierarchy()
        if opts.series:
            self._op_series()
        self._children()
        self._metaedges()
        self.codes = new_state()
        self._sig_memo: dict[tuple[Any, ...], str] = {}
        self._op_codes: np.ndarray | None = None
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

    def _normalize(self, source: Any, serialized: bytes | None = None) -> None:
        opts = self.opts
        is_in = _Matcher(opts.embed_patterns("in"))
        is_out = _Matcher(opts.embed_patterns("out"))
        is_hidden = _Matcher(opts.hidden_ops, full=True)
        cols = read_source(source, serialized)
        all_names = cols.names
        N = len(all_names)
        # Op types and devices as codes (one dict lookup per node each): what follows is
        # per distinct string, and numpy indexing.
        op_list, op_first, op_code = string_codes(cols.ops)
        dev_list, _, dev_code = string_codes(cols.devices)
        # What each op type is (0 regular, 1 hidden, 2 embedded in, 3 embedded out).
        kind_of = np.zeros(len(op_list), np.int64)
        for t, op in enumerate(op_list):
            if _ARRAY_INDEX_RE.match(op):
                raise Declined  # js_key_order of op types
            kind_of[t] = (1 if is_hidden(op) else 2 if is_in(op) else 3 if is_out(op) else 0)
        kinds = kind_of[op_code]
        self.hidden = int(np.count_nonzero(kinds == 1))
        reg = np.flatnonzero(kinds == 0)
        n = reg.size
        everything = n == N
        names = all_names if everything else _take(all_names, reg)
        rec = cols.rec if everything else cols.rec[reg]
        typ = op_code if everything else op_code[reg]
        dev = dev_code if everything else dev_code[reg]
        #: Each source node's index among the regular ops (-1: not one).
        reg_of = np.full(N, -1, np.int64)
        reg_of[reg] = np.arange(n)
        # Strings interned as the view's reading does: each op's type, then its device
        # (not an empty one), in op order: each distinct one at its first op. An op
        # type's nodes are all regular or all not, so its first node is its first op.
        sid, shape_list = self.sid, self.shape_list
        t_first = reg_of[op_first]
        d_first = np.full(len(dev_list), n, np.int64)
        np.minimum.at(d_first, dev, np.arange(n))
        no_dev = dev_list.index("") if "" in dev_list else -1
        if no_dev >= 0:
            d_first[no_dev] = n
        t_at = np.flatnonzero(kind_of == 0)
        d_at = np.flatnonzero(d_first < n)
        firsts = np.r_[2 * t_first[t_at], 2 * d_first[d_at] + 1]
        both = [op_list[t] for t in t_at.tolist()] + [dev_list[d] for d in d_at.tolist()]
        for k in np.argsort(firsts, kind="stable").tolist():
            sid(both[k])
        strings = self.strings
        type_sid = np.full(len(op_list), -1, np.int64)
        type_sid[t_at] = [strings[op_list[t]] for t in t_at.tolist()]
        dev_sid = np.full(len(dev_list), -1, np.int64)
        dev_sid[d_at] = [strings[dev_list[d]] for d in d_at.tolist()]
        # Records in order of first use: their attribute dicts and shape lists interned.
        attr_dicts, attr_list = self.attr_dicts, self.attr_list
        records = cols.records
        used, first = np.unique(rec, return_index=True)
        rec_attr = np.full(len(records), -1, np.int64)
        rec_shape = np.zeros(len(records), np.int64)
        xla_rec: dict[int, str] = {}
        attr_of: dict[int, int] = {}
        shapes_of: dict[int, int] = {}
        for r in used[np.argsort(first, kind="stable")].tolist():
            a, shapes, x = records[r]
            if a:
                ai = attr_of.get(id(a))
                if ai is None:
                    akey = tuple(a.items())
                    ai = attr_dicts.get(akey)
                    if ai is None:
                        ai = attr_dicts[akey] = len(attr_list)
                        attr_list.append(dict(a))
                    attr_of[id(a)] = ai
                rec_attr[r] = ai
            si = shapes_of.get(id(shapes))
            if si is None:
                si = shapes_of[id(shapes)] = shape_list(shapes)
            rec_shape[r] = si
            if x is not None:
                xla_rec[r] = x
        # Every node by name (one index for ops and embedded nodes: an input is looked up
        # once): the names' hashes sorted, where every name is distinct; else a dict.
        in_exact: dict[str, int] | None = None
        by_hash = _NameIndex.of(all_names)
        pos_get: Callable[[str], int | None]
        lookup: Callable[[list[str]], np.ndarray]
        if by_hash is not None:
            pos_get, lookup = by_hash.get, by_hash.lookup
        else:
            # A name given twice (or two names of one hash): a dict. Where some nodes
            # share a name, the ops' names are checked, and the last embedded node of a
            # name wins (per kind: ``in_exact``, as in a dict), hidden nodes left out.
            pos_of = dict(zip(all_names, count()))
            if len(pos_of) != N:
                index = dict(zip(names, reg.tolist(), strict=True))
                if len(index) != n:
                    raise Declined  # duplicate names
                emb = np.flatnonzero(kinds >= 2)
                emb_names = _take(all_names, emb)
                if not index.keys().isdisjoint(emb_names):
                    raise Declined  # an embedded node named like an op
                pos_of = dict(zip(emb_names, emb.tolist(), strict=True))
                pos_of.update(index)
                del index
                in_at = np.flatnonzero(kinds == 2)
                in_exact = dict(zip(_take(all_names, in_at), in_at.tolist(), strict=True))
            pos_get = pos_of.get

            def lookup(keys: list[str]) -> np.ndarray:
                return np.fromiter(map(pos_of.get, keys, repeat(-1)), np.int64, len(keys))
        del by_hash

        def orig_get(name: str) -> int | None:
            # The op (regular index) named ``name``, or None.
            p = pos_get(name)
            return None if p is None or kinds[p] != 0 else int(reg_of[p])

        # Each name's scope and leaf (one C call per name); the scopes of the original
        # names, each numbered by its first op (``scope_at``: one dict lookup per name),
        # then every proper "/" prefix of them added (at -1).
        parts = list(map(str.rpartition, names, repeat("/")))
        scope_of: list[str] = list(map(itemgetter(0), parts))
        leaves: list[str] = list(map(itemgetter(2), parts))
        del parts
        scope_at: dict[str, int] = {}
        six = np.fromiter(map(scope_at.setdefault, scope_of, count()), np.int64, n)
        direct = list(scope_at)
        root = scope_at.get("")
        # A name starting with "/": its scope does (when not empty), or it is "/leaf".
        root_ops = np.flatnonzero(six == root) if root is not None else six[:0]
        root_names = _take(names, root_ops)
        if "" in root_names or any(map(str.startswith, chain(direct, root_names),
                                       repeat("/"))):
            raise Declined  # the empty-named scope
        for scope in direct:  # most parents are some name's scope already
            parent = scope.rpartition("/")[0]
            while parent and parent not in scope_at:
                scope_at[parent] = -1
                parent = parent.rpartition("/")[0]
        # Names that are scopes: one lookup per scope.
        scope_list = list(scope_at)
        if root is not None:
            scope_list.remove("")
        hp = lookup(scope_list)
        named = np.flatnonzero(hp >= 0)
        hk = kinds[hp[named]]
        reg_x = named[hk == 0]
        x_names = _take(scope_list, reg_x)
        # strict_name of an op: its name, then its leaf in parentheses.
        js = reg_of[hp[reg_x]]
        x_leaves = _take(leaves, js)
        x_shown = list(map("{}/({})".format, x_names, x_leaves))
        renamed = dict(zip(x_names, x_shown, strict=True))
        emb_x = _take(scope_list, named[hk >= 2])
        if emb_x:
            # TensorBoard does not see the scopes of the alphabetically last name here.
            last = max(names) if names else ""
            for e in emb_x:
                prefix = e + "/"
                if last.startswith(prefix) and sum(
                        1 for x in names if x.startswith(prefix)) == 1:
                    continue
                renamed[e] = strict_name(e)
        shown_all = list(renamed.values())
        sp = lookup(shown_all)
        if any(map(scope_at.__contains__, shown_all)) or (kinds[sp[sp >= 0]] == 0).any():
            raise Declined  # normalize._resolve_conflicts
        # The renamed ops by their shown names: with the original names, the index of
        # the names as shown (no shown name is an original one: declined above).
        js_l = js.tolist()
        shown_index = dict(zip(x_shown, js_l, strict=True))
        if js_l:
            if everything:
                names = names.copy()
            # Set item by item in C ("a/b" is shown as "a/b/(b)", in scope "a/b").
            for column, values in ((names, x_shown), (scope_of, x_names),
                                   (leaves, map("({})".format, x_leaves))):
                deque(map(column.__setitem__, js_l, values), 0)
            first_x = np.fromiter(map(scope_at.__getitem__, x_names), np.int64, js.size)
            x_codes = np.where(first_x >= 0, first_x, n + np.arange(js.size))
            # The scopes whose ops changed find their first op again.
            old = six[js]
            six[js] = x_codes
            touched = np.flatnonzero(np.isin(six, np.r_[old, x_codes]))
            code = six[touched]
            u, fi = np.unique(code, return_index=True)
            six[touched] = touched[fi][np.searchsorted(u, code)]
        #: Each op's scope by its first op (the op that makes the scope's group).
        self.scope_first = six
        self.scope_of = scope_of
        # Leaves repeat (the same leaf in every block): the steps after this one (op
        # series, the page's labels) work per distinct leaf, on these codes.
        self.leaf_list, _, self.leaf_code = string_codes(leaves)
        del leaves
        # A name the regex matches is ASCII digits, maybe with a final newline (so has no
        # "/", and is at the root; a renamed one is shown with "/").
        if any(map(_ARRAY_INDEX_RE.match, filterfalse(renamed.__contains__, chain(
                filter(str.isdigit, root_names),
                filter(methodcaller("endswith", "\n"), root_names))))):
            raise Declined  # JavaScript key order at the root
        self.renamed = renamed
        rn = renamed.get
        self.names = names
        self.n_ops = n
        self.types = type_sid[typ]
        self.devices = dev_sid[dev]
        self.attrs: np.ndarray = rec_attr[rec]
        self.shapes: np.ndarray = rec_shape[rec]
        self.xla: dict[int, str] = {}
        if xla_rec:
            xj = np.flatnonzero(np.isin(rec, np.fromiter(xla_rec, np.int64, len(xla_rec))))
            self.xla = dict(zip(xj.tolist(), map(xla_rec.__getitem__, rec[xj].tolist()),
                                strict=True))

        new_get = shown_index.get

        def get(name: str) -> int:
            # normalize: the index of the shown names at rn(name). An op's original name
            # finds the op at once; another name can only be a renamed op's shown one.
            s = orig_get(name)
            if s is None and renamed:
                s = new_get(rn(name, name))
            return -1 if s is None else s

        # Summaries (out-embeddings), in source order: the last of a name wins.
        out_emb: dict[str, int] = {}
        outs_of: dict[str, list[int]] = {}
        for i in np.flatnonzero(kinds == 3).tolist():
            out_emb[all_names[i]] = i
            for iname in cols.in_name[cols.in_start[i]:cols.in_start[i + 1]]:
                outs_of.setdefault(iname, []).append(i)
        # The inputs of the ops, in op then input order: most name an op directly.
        starts = cols.in_start[reg]
        lens = cols.in_start[reg + 1] - starts
        at = _gather_ranges(starts, lens)
        dst = np.repeat(np.arange(n), lens)
        rank = at - np.repeat(starts, lens)
        slot = cols.in_slot[at]
        flag = cols.in_ctl[at].astype(np.int64)
        for op, i in REF_EDGES:
            ref_t = strings.get(op)
            if ref_t is not None:
                flag[(self.types[dst] == ref_t) & (rank == i)] |= 2
        # Looked up over every input (fewer objects than gathering the ops' input names
        # first); the names themselves only for the inputs that name no op.
        found = lookup(cols.in_name)[at]
        fkind = np.where(found >= 0, kinds[found], -1)
        src = np.where(fkind == 0, reg_of[found], -1)
        # The rest: embedded nodes (their edges replace the input's), renamed names, and
        # names of no op, one by one; each input's edges keep its place.
        # Embeddings as columns (host op, side: 0 in, 1 out; source node), not objects:
        # only the few that a side panel shows become objects (``embeddings_of``).
        ein_host = ein_src = np.zeros(0, np.int64)
        x_at: list[int] = []
        x_sub: list[int] = []
        x_src: list[int] = []
        x_slot: list[int] = []
        x_flag: list[int] = []
        miss = np.flatnonzero(src < 0)
        if miss.size and (kind_of == 2).any():
            # Inputs naming an in-embedding (constants: many): their embeddings made
            # over all of them at once; only those with inputs of their own one by one.
            mk = fkind[miss]
            if in_exact is None:
                e_in = np.where(mk == 2, found[miss], -1)
            else:
                e_in = np.full(miss.size, -1, np.int64)
                ek = np.flatnonzero(mk >= 2)
                e_in[ek] = np.fromiter(map(in_exact.get, _take(cols.in_name, at[miss[ek]]),
                                           repeat(-1)), np.int64, ek.size)
            hit = e_in >= 0
            q_in, e_of = miss[hit], e_in[hit]
            miss = miss[~hit]
            ein_host, ein_src = dst[q_in], e_of
            fed = np.flatnonzero(cols.in_start[e_of + 1] > cols.in_start[e_of])
            for q, emb in zip(q_in[fed].tolist(), e_of[fed].tolist(), strict=True):
                j, fq = int(dst[q]), int(flag[q])
                for k, (ename, eslot, ectl) in enumerate(cols.inputs(emb)):
                    s = get(ename)
                    if s >= 0 and s != j:
                        x_at.append(q)
                        x_sub.append(k)
                        x_src.append(s)
                        x_slot.append(eslot)
                        x_flag.append((1 if ectl else 0) | (fq & 2))
        for q, name in zip(miss.tolist(), _take(cols.in_name, at[miss]), strict=True):
            if name not in out_emb:
                if renamed:
                    src[q] = get(name)
                continue
            # An input naming an out-embedding: the embedding's inputs instead.
            j = int(dst[q])
            fq = int(flag[q])
            got = [(get(ename), int(slot[q]), fq) for ename, _, _ in cols.inputs(out_emb[name])]
            for k, (s, sl, f) in enumerate(got):
                if s >= 0 and s != j:
                    x_at.append(q)
                    x_sub.append(k)
                    x_src.append(s)
                    x_slot.append(sl)
                    x_flag.append(f)
        keep = (src >= 0) & (src != dst)
        e_at = np.flatnonzero(keep)
        e_src, e_dst, e_slot, e_flag = src[keep], dst[keep], slot[keep], flag[keep]
        if x_at:
            xa = np.array(x_at, np.int64)
            e_at = np.r_[e_at, xa]
            e_src = np.r_[e_src, np.array(x_src, np.int64)]
            e_dst = np.r_[e_dst, dst[xa]]
            e_slot = np.r_[e_slot, np.array(x_slot, np.int64)]
            e_flag = np.r_[e_flag, np.array(x_flag, np.int64)]
            sub = np.r_[np.zeros(int(keep.sum()), np.int64), np.array(x_sub, np.int64)]
            o = np.lexsort((sub, e_at))
            e_src, e_dst, e_slot, e_flag = e_src[o], e_dst[o], e_slot[o], e_flag[o]
        # Summaries reading an op: its out-embeddings, after its in-embeddings.
        out_host: list[int] = []
        out_src: list[int] = []
        for host, summaries in outs_of.items():
            at_host = orig_get(host)
            if at_host is not None:
                out_host.extend(repeat(at_host, len(summaries)))
                out_src.extend(summaries)
        e_host = np.r_[ein_host, np.array(out_host, np.int64)]
        e_side = np.r_[np.zeros(ein_host.size, np.int64), np.ones(len(out_host), np.int64)]
        e_from = np.r_[ein_src, np.array(out_src, np.int64)]
        # By host; a host's in-embeddings (in input order) before its out-embeddings.
        o = np.argsort(e_host, kind="stable")
        self.emb_host, self.emb_side, self.emb_src = e_host[o], e_side[o], e_from[o]
        self._source: SourceColumns = cols
        self._op_code = op_code
        self._op_list = op_list
        self.e_src = e_src
        self.e_dst = e_dst
        self.e_slot = e_slot
        self.e_flags = e_flag

    # --- step 2: scope groups -------------------------------------------------------

    def _hierarchy(self) -> None:
        n = self.n_ops
        gid: dict[str, int] = {"": 0}
        gnames = [""]
        gparent = [-1]
        glevel = [0]
        gmade = [-1]  # the op before which the group was made (-1: the root)
        # The distinct scopes in order of their first op: groups are made there, missing
        # ancestors first.
        ix = self.scope_first
        # Each scope's first op made its group.
        distinct = np.flatnonzero(ix == np.arange(n))
        made: list[int] = []  # each distinct scope's group
        add_made, get = made.append, gid.get
        for scope, j in zip(_take(self.scope_of, distinct), distinct.tolist(), strict=True):
            k = get(scope)
            if k is None:
                missing = [scope]
                scope = scope.rpartition("/")[0]
                while scope not in gid:
                    missing.append(scope)
                    scope = scope.rpartition("/")[0]
                above = gid[scope]
                for s in reversed(missing):
                    gid[s] = len(gnames)
                    gnames.append(s)
                    gparent.append(above)
                    glevel.append(glevel[above] + 1)
                    gmade.append(j)
                    above = len(gnames) - 1
                add_made(above)
            else:
                add_made(k)
        scope_group = np.empty(n, np.int64)
        scope_group[distinct] = made
        op_parent = scope_group[ix]
        self.gnames = gnames
        self.gparent = gparent
        self.gkind = [0] * len(gnames)  # 0 meta, 1 series
        self.series_op: dict[int, int] = {}
        self.series_ids: dict[int, list[int]] = {}
        #: Ops that joined a series, in series creation then member order.
        self.member_j = np.zeros(0, np.int64)
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
        self.hist = _histograms(pg, po, self.types[po], G)
        # Devices are few: most (group, op) rows collapse into one per (group, device).
        self.dhist = self._subtree_histogram(self.devices, g_parent, G)

    def _subtree_histogram(self, key: np.ndarray, g_parent: np.ndarray, G: int,
                           ) -> _Histograms:
        """``key_histograms`` of every group over the ops under it with a key (>= 0): the
        ops counted per (op's group, key) first, then those rows for every group above:
        fewer rows than one per (group, op under it) where keys repeat within groups."""
        has = np.flatnonzero(key >= 0)
        if not has.size:
            return _histograms(has, has, has, G)
        rg, rk, rc, rf = _key_runs(self.op_parent[has], has, key[has], None)
        up_g, up_k, up_c, up_f = [rg], [rk], [rc], [rf]
        cur = g_parent[rg]
        while (keep := cur >= 0).any():
            rk, rc, rf, cur = rk[keep], rc[keep], rf[keep], cur[keep]
            up_g.append(cur)
            up_k.append(rk)
            up_c.append(rc)
            up_f.append(rf)
            cur = g_parent[cur]
        return _histograms(np.concatenate(up_g), np.concatenate(up_f),
                           np.concatenate(up_k), G, np.concatenate(up_c))

    def _taken(self) -> set[str]:
        """The names of the ops and groups that a series name could equal: those holding
        a "[", as every series name does (series names are added as they are made)."""
        taken = getattr(self, "_taken_cache", None)
        if taken is None:
            taken = self._taken_cache = set[str]()
            for names in (self.names, self.gnames):
                if "[" in "".join(names):  # one C pass: most graphs have none
                    at = np.fromiter(map(str.find, names, repeat("[")), np.int64,
                                     len(names))
                    taken.update(_take(names, np.flatnonzero(at >= 0)))
        return taken

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
        if not js.size:
            return
        names = self.names
        # Leaves repeat (the same leaf in every block): split once per distinct one.
        if js.size == n:
            distinct, leaf = self.leaf_list, self.leaf_code
        else:
            used, leaf = _first_order(self.leaf_code[js])
            distinct = _take(self.leaf_list, used)
        pre, ids, prefix_of = series_keys(distinct)
        pre, ids = pre[leaf], ids[leaf]
        parent = self.op_parent[js]
        typ = self.types[js]
        T = int(typ.max()) + 1
        P = int(pre.max()) + 1
        gt = parent * T + typ
        gtp = gt * P + pre
        # Members sorted by (group, type, prefix, id), stable in op order (js ascends).
        order = np.lexsort((ids, gtp))
        kk = gtp[order]
        run = _split_runs(kk, ids[order])
        sizes = np.bincount(run)
        long_runs = np.flatnonzero(sizes >= min_size)
        if not long_runs.size:
            return
        starts = np.r_[0, np.cumsum(sizes)[:-1]]
        # Creation order within a group: op type by its first op, then (prefix,
        # suffix) by its first op, then ascending id: the first ops of the clusters
        # (sorted runs of one (group, type) and of one (group, type, prefix)).
        js_o = js[order]
        new_gtp = np.ones(kk.size, bool)
        new_gtp[1:] = kk[1:] != kk[:-1]
        gt_o = kk // P
        new_gt = np.ones(kk.size, bool)
        new_gt[1:] = gt_o[1:] != gt_o[:-1]
        first_pre = np.minimum.reduceat(js_o, np.flatnonzero(new_gtp))
        first_type = np.minimum.reduceat(js_o, np.flatnonzero(new_gt))
        s0 = starts[long_runs]
        r_fp = first_pre[np.cumsum(new_gtp)[s0] - 1]
        r_ft = first_type[np.cumsum(new_gt)[s0] - 1]
        r_g, r_t, r_p = parent[order[s0]], typ[order[s0]], pre[order[s0]]
        r_id = ids[order[s0]]
        made = np.lexsort((r_id, r_fp, r_ft, r_g))
        ends = (s0 + sizes[long_runs])
        existing = self._taken()
        member_j: list[np.ndarray] = []
        member_k: list[int] = []
        for g, t, p, a, b in zip(r_g[made].tolist(), r_t[made].tolist(),
                                 r_p[made].tolist(), s0[made].tolist(),
                                 ends[made].tolist(), strict=True):
            js_m = js_o[a:b]
            first = names[int(js_m[0])]
            scope = first[:first.rfind("/")] if "/" in first else ""
            prefix, suffix = prefix_of[p]
            idl = ids[order[a:b]].tolist()
            name = series_name(scope, prefix, suffix, idl[0], idl[-1])
            if name in existing:
                raise Declined
            existing.add(name)
            k = self._new_group(name, g, 1)
            self.series_op[k] = t
            self.series_ids[k] = idl
            self.card[k] = len(idl)
            self.hist[k] = [(t, len(idl))]
            member_j.append(js_m)
            member_k.append(k)
        # Every member at once: its series as parent, its place among the members (the
        # series' creation order), and each series' devices in order of first member.
        mj = np.concatenate(member_j)
        mk = np.repeat(np.array(member_k, np.int64), [a.size for a in member_j])
        self.op_parent[mj] = mk
        self.member_j = mj
        dev = self.devices[mj]
        has = dev >= 0
        if has.any():
            D = int(dev.max()) + 1
            combo = mk[has] * D + dev[has]
            u, first, cnt = np.unique(combo, return_index=True, return_counts=True)
            o = np.lexsort((first, u // D))
            for k, d, c in zip((u[o] // D).tolist(), (u[o] % D).tolist(), cnt[o].tolist(),
                               strict=True):
                self.dhist[k].append((d, c))

    # --- children ---------------------------------------------------------------------

    def _children(self) -> None:
        """Every group's children in the view's order, as unified ids."""
        n = self.n_ops
        G = len(self.gnames)
        made = self.g_made
        n0 = made.size  # scope groups; the rest are series, appended in creation order
        parent = np.empty(n + G, np.int64)
        key = np.empty(n + G, np.int64)
        parent[:n] = self.op_parent
        key[:n] = 2 * np.arange(n) + 1
        mj = self.member_j
        if mj.size:
            key[mj] = np.arange(mj.size)
        gp = np.array(self.gparent, np.int64)
        parent[n:] = gp
        key[n:n + n0] = 2 * made
        big = 2 * n + 2
        key[n + n0:] = big + np.arange(G - n0)
        # (parent, key) packed into one int64 (below 2**62 for any graph that fits in
        # memory), sorted stably: ties keep index order (ops first, then groups).
        width = big + G  # every key is below it
        order = np.argsort((parent + 1) * width + key, kind="stable")
        order = order[parent[order] >= 0]  # not the root
        p = parent[order]
        ends = np.cumsum(np.bincount(p, minlength=G)).tolist()
        # Views into one array (np.split makes the same views, slower).
        self.kids: list[np.ndarray] = list(map(order.__getitem__,
                                               map(slice, [0, *ends[:-1]], ends)))
        self.parent_u = parent  # group index of each unified id's parent (-1: root)
        #: Each unified id's position among its parent's children.
        self.cpos = np.zeros(n + G, np.int64)
        self.cpos[order] = _rank_in_runs(p)

    # --- step 4: metaedges ------------------------------------------------------------

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
            lg, lv, lw = bundle_pairs(np.array(self.gparent, np.int64), upairs // G,
                                       upairs % G)
            inv = inv.reshape(-1)
            g[diff] = lg[inv]
            cv, cw = lv[inv], lw[inv]
            v[diff] = np.where(cv >= 0, n + cv, v[diff])
            w[diff] = np.where(cw >= 0, n + cw, w[diff])
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
        # Distinct shapes of each metaedge's regular edges, in edge order, as one shape
        # list (interned in shape_lists) per metaedge.
        sh_list = self.shapes[src]
        empty = self.shape_list(())
        take = (~control) & (sh_list != empty)
        me_sl = np.full(m, empty, np.int64)
        if take.any():
            idx = np.flatnonzero(take)
            slot = self.e_slot[idx]
            width = int(slot.max()) + 1
            upk, pinv = small_unique(sh_list[idx] * width + slot)
            # Each (shape list, slot) to its shape (None past the list's end), found in
            # the shape lists laid end to end; shapes numbered by first occurrence.
            li, sl = np.divmod(upk, width)
            lists = list(self.shape_lists)
            lens = np.fromiter(map(len, lists), np.int64, len(lists))
            flat: list[Shape | None] = list(chain.from_iterable(lists))
            flat.append(None)
            at = np.where(sl < lens[li], (np.cumsum(lens) - lens)[li] + sl, len(flat) - 1)
            shape_ids: dict[Shape | None, int] = {}
            firsts = np.fromiter(map(shape_ids.setdefault, _take(flat, at), count()),
                                 np.int64, upk.size)
            ushape = np.unique(firsts, return_inverse=True)[1].reshape(-1)
            table = list(shape_ids)
            esh = ushape[pinv.reshape(-1)]
            S = len(table)
            up, pfirst = np.unique(inv[idx] * S + esh, return_index=True)
            up = up[np.argsort(pfirst, kind="stable")]
            mm, ss = np.divmod(up, S)
            o2 = np.argsort(mm, kind="stable")
            mm, ss = mm[o2], ss[o2]
            nsh = np.bincount(mm, minlength=m)
            single = np.flatnonzero(nsh == 1)
            if single.size:
                at = np.searchsorted(mm, single)
                one = np.array([self.shape_list((sh,)) for sh in table], np.int64)
                me_sl[single] = one[ss[at]]
            for i in np.flatnonzero(nsh > 1).tolist():
                at0 = int(np.searchsorted(mm, i))
                me_sl[i] = self.shape_list(
                    tuple(table[k] for k in ss[at0:at0 + int(nsh[i])]))
        # Per group, its metaedges in order of first edge.
        order = np.lexsort((first, me_g))
        G = len(self.gnames)
        counts = np.bincount(me_g, minlength=G)
        nonctl = np.zeros(G, bool)
        nonctl[me_g[me_reg > 0]] = True
        self.nonctl = nonctl
        mv, mw = np.divmod(uniq, U)
        self.me = {"v": mv[order], "w": mw[order], "reg": me_reg[order],
                   "ctl": me_ctl[order], "ref": me_ref[order], "size": me_size[order],
                   "sl": me_sl[order]}
        starts = np.r_[0, np.cumsum(counts)]
        self.me_start = starts
        self._nme: list[int] = counts.tolist()  # n_metaedges, called once per group
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
        out: np.ndarray = sizes_by_list[self.shapes]
        return out

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
        keys = list(self.shape_lists)
        return [(v, w, r, c, f, s, list(keys[i]))
                for i, v, w, r, c, f, s in zip(
                    me["sl"][a:b].tolist(), me["v"][a:b].tolist(), me["w"][a:b].tolist(),
                    me["reg"][a:b].tolist(), me["ctl"][a:b].tolist(),
                    me["ref"][a:b].tolist(), me["size"][a:b].tolist(), strict=True)]

    def n_metaedges(self, g: int) -> int:
        over = self.me_override
        if over and g in over:
            return len(over[g])
        nme = self._nme
        return nme[g] if g < len(nme) else 0

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
        """templates.signature of group ``g``."""
        key = (self.depth[g], len(self.kids[g]), self.n_metaedges(g), tuple(self.hist[g]))
        sig = self._sig_memo.get(key)
        if sig is None:
            strings = self._string_list()
            hist = sorted((strings[k], v) for k, v in self.hist[g])
            ops = ",".join(f"{k}={v}" for k, v in hist)
            sig = self._sig_memo[key] = (f"depth={key[0]} |V|={key[1]} |E|={key[2]} "
                                         f"[ops] {ops}")
        return sig

    def _n_metaedges_all(self) -> np.ndarray:
        """Every group's number of metaedges (``n_metaedges`` of each, at once)."""
        out = np.zeros(len(self.gnames), np.int64)
        bundled = self.me_start.size - 1  # groups when the metaedges were bundled
        out[:bundled] = np.diff(self.me_start)
        for g, lst in self.me_override.items():
            out[g] = len(lst)
        return out

    def _hist_pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """``_flat_pairs(self.hist)``, kept: a group's histogram is final once it is
        made (series of groups are made with theirs), so only groups made since the last
        call are flattened."""
        got: tuple[np.ndarray, np.ndarray] | None = getattr(self, "_hist_cache", None)
        G = len(self.hist)
        if got is None:
            got = _flat_pairs(self.hist)
        elif got[1].size - 1 < G:
            pairs, start = got
            more, mstart = _flat_pairs(self.hist[start.size - 1:])
            got = (np.concatenate([pairs, more]), np.r_[start[:-1], start[-1] + mstart])
        self._hist_cache = got
        return got

    def _signature_ids(self, metas: np.ndarray) -> tuple[np.ndarray, list[str]]:
        """The signatures of groups ``metas``: each one's index in the list of distinct
        signature strings, and that list.

        Groups are compared in bulk, as rows of (depth, children, metaedges, then the
        histogram as (op name rank, count) codes sorted by op name), one ``unique_rows``
        per histogram length; :meth:`_signature` makes the string of one group per
        distinct row, and rows whose strings coincide share an index.
        """
        k = metas.size
        depth = np.array(self.depth, np.int64)[metas]
        nkids = np.fromiter(map(len, self.kids), np.int64, len(self.kids))[metas]
        nme = self._n_metaedges_all()[metas]
        pairs, start = self._hist_pairs()
        strings = self._string_list()
        srank = np.empty(len(strings), np.int64)
        srank[np.array(sorted(range(len(strings)), key=strings.__getitem__), np.int64)] = \
            np.arange(len(strings))
        lens = np.diff(start)[metas]
        at = _gather_ranges(start[metas], lens)
        owner = np.repeat(np.arange(k), lens)
        rank, val = srank[pairs[at, 0]], pairs[at, 1]
        width = int(val.max()) + 1 if val.size else 1
        if len(strings) * width >= 1 << 62:
            raise Declined  # counts beyond any graph this path reads
        entry = rank * width + val
        span = len(strings) * width
        if k * span < 1 << 62:
            # (owner, entry) in one int64, sorted: a group's entries by op name (a group
            # has each op name once), the groups in order.
            entry = np.sort(owner * span + entry) % span
        else:
            entry = entry[np.lexsort((rank, owner))]
        estart = np.zeros(k + 1, np.int64)
        np.cumsum(lens, out=estart[1:])
        sid = np.empty(k, np.int64)
        reps: list[int] = []  # per row index: its first group (an index into metas)
        for length in np.unique(lens).tolist():
            sel = np.flatnonzero(lens == length)
            hist = entry[_gather_ranges(estart[sel], np.full(sel.size, length, np.int64))]
            rows = np.concatenate([np.stack([depth[sel], nkids[sel], nme[sel]], axis=1),
                                   hist.reshape(sel.size, length)], axis=1)
            uniq, inv = unique_rows(rows)
            first = np.full(uniq.shape[0], sel.size, np.int64)
            np.minimum.at(first, inv, np.arange(sel.size))
            sid[sel] = len(reps) + inv
            reps.extend(sel[first].tolist())
        index: dict[str, int] = {}
        remap = np.fromiter((index.setdefault(self._signature(g), len(index))
                             for g in metas[np.array(reps, np.int64)].tolist()),
                            np.int64, len(reps))
        return remap[sid] if k else sid, list(index)

    def _string_list(self) -> list[str]:
        cached = getattr(self, "_strings_cache", None)
        if cached is None or len(cached) != len(self.strings):
            cached = self._strings_cache = list(self.strings)
        return cached

    def _label(self, u: int) -> int:
        """templates._Codes.label of unified id ``u``."""
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

    def _group_labels(self, gs: np.ndarray, gkind: np.ndarray) -> np.ndarray:
        """:meth:`_label` of groups ``gs`` (``gkind``: every group's kind): a metanode's
        label is interned once per distinct code, a series of ops' once per distinct
        (length, op type), other series' one by one."""
        codes = self.codes
        out = np.empty(gs.size, np.int64)
        meta = gkind[gs] == 0
        if meta.any():
            of = np.fromiter(map(codes.of.__getitem__, gs[meta].tolist()), np.int64,
                             int(np.count_nonzero(meta)))
            u, inv = np.unique(of, return_inverse=True)
            lab = np.array([codes.code(("meta", c)) for c in u.tolist()], np.int64)
            out[meta] = lab[inv.reshape(-1)]
        rest = np.flatnonzero(~meta)
        if rest.size:
            n = self.n_ops
            flat, start = self._kid_table()
            rg = gs[rest]
            size = start[rg + 1] - start[rg]
            head = flat[np.minimum(start[rg], max(flat.size - 1, 0))] if flat.size else size
            of_ops = (size > 0) & (head < n)
            if of_ops.any():
                strings = self._string_list()
                S = len(strings)
                u, inv = np.unique(size[of_ops] * S + self.types[head[of_ops]],
                                   return_inverse=True)
                lab = np.array([codes.code(("series", ln, strings[t]))
                                for ln, t in zip((u // S).tolist(), (u % S).tolist(),
                                                 strict=True)], np.int64)
                out[rest[of_ops]] = lab[inv.reshape(-1)]
            out[rest[~of_ops]] = [self._label(n + g) for g in rg[~of_ops].tolist()]
        return out

    def _kid_table(self) -> tuple[np.ndarray, np.ndarray]:
        """Every group's children, concatenated in group order, and each group's start
        there (one more start than groups: the end); cached until ``_kid_cache`` is
        reset or groups are added (children change only when a series of groups is
        made)."""
        cached = getattr(self, "_kid_cache", None)
        if cached is None or cached[1].size != len(self.kids) + 1:
            lens = np.fromiter(map(len, self.kids), np.int64, len(self.kids))
            start = np.zeros(lens.size + 1, np.int64)
            np.cumsum(lens, out=start[1:])
            flat = np.concatenate(self.kids) if self.kids else np.zeros(0, np.int64)
            cached = (flat.astype(np.int64, copy=False), start)
            self._kid_cache: tuple[np.ndarray, np.ndarray] | None = cached
        return cached

    def _bucket_codes(self, sig: str, gs: list[int], gkind: np.ndarray) -> None:
        """Set ``codes.of`` of groups ``gs`` (one signature, so the same numbers of
        children and metaedges; ``gkind``: every group's kind): equal (labels, edges)
        rows share one refinement."""
        n = self.n_ops
        k = len(gs)
        codes = self.codes
        if self._op_codes is None or self._op_codes.size != len(self.strings):
            self._op_codes = np.array([codes.code(("op", x)) for x in self._string_list()],
                                      np.int64)
        flat, start = self._kid_table()
        ga = np.array(gs, np.int64)
        V = int(start[gs[0] + 1] - start[gs[0]])
        kids = flat[_gather_ranges(start[ga], np.full(k, V, np.int64))].reshape(k, V)
        lab = np.empty_like(kids)
        opm = kids < n
        lab[opm] = self._op_codes[self.types[kids[opm]]]
        if not opm.all():
            lab[~opm] = self._group_labels(kids[~opm] - n, gkind)
        E = self.n_metaedges(gs[0])
        rows = np.empty((k, 3 * E), np.int64)
        over = self.me_override
        is_over = (np.fromiter(map(over.__contains__, gs), bool, k) if over
                   else np.zeros(k, bool))
        ai = np.flatnonzero(~is_over)
        if ai.size and E:
            starts = self.me_start[ga[ai]]
            idx = _gather_ranges(starts, np.full(ai.size, E, np.int64)).reshape(-1, E)
            me = self.me
            f = (me["reg"][idx] > 0).astype(np.int64) | ((me["ctl"][idx] > 0) * 2)
            rows[ai] = np.stack([self.cpos[me["v"][idx]], self.cpos[me["w"][idx]], f],
                                axis=2).reshape(ai.size, 3 * E)
        for i in np.flatnonzero(is_over).tolist():
            rows[i] = [x for v, w, f in self.me_flags(gs[i])
                       for x in (int(self.cpos[v]), int(self.cpos[w]), f)]
        full = np.concatenate([lab, rows], axis=1)
        if full.shape[1]:
            uniq, inv = unique_rows(full)
        else:
            uniq, inv = full[:1], np.zeros(k, np.int64)
        got = []
        for row in uniq.tolist():
            labels, e = row[:V], row[V:]
            edges = tuple((e[i], e[i + 1], e[i + 2]) for i in range(0, 3 * E, 3))
            got.append(int(codes.group_code(sig, labels, edges)))
        codes.of.update(zip(gs, map(got.__getitem__, inv.tolist()), strict=True))

    def _find_templates(self, changed: set[int] | None) -> dict[str, list[str]]:
        """templates._by_height on group indices: metanodes bucketed by signature, the
        buckets in order of depth and then of first member, members in index order."""
        codes = self.codes
        fresh = changed is None
        changed = set() if changed is None else changed
        gnames = self.gnames
        self._kid_cache = None  # children may have changed
        gkind = np.array(self.gkind, np.int64)
        metas = np.flatnonzero(gkind == 0)
        sid, sigs = self._signature_ids(metas)
        depth = np.array(self.depth, np.int64)[metas]
        _, first, inv = np.unique(sid, return_index=True, return_inverse=True)
        order = np.lexsort((metas, first[inv.reshape(-1)], depth))
        ms_a = metas[order]
        ms = ms_a.tolist()
        bs = sid[order]
        bstart = np.flatnonzero(np.r_[True, bs[1:] != bs[:-1]]) if bs.size else bs
        bounds = np.r_[bstart, bs.size].tolist()
        bs_l = bs[bstart].tolist()
        of, unique = codes.of, codes.unique
        if not fresh:
            # A member's own entries in ``of`` and ``unique`` change only when its bucket
            # is handled, so they are read for all members at once; ``changed`` grows by
            # the ancestors of members that were unique, which are deeper (so in later
            # buckets: buckets go by depth, as a signature holds the depth).
            chg = np.zeros(len(gnames), bool)
            chg[list(changed)] = True
            has_of = np.fromiter(map(of.__contains__, ms), bool, len(ms))
            was_unique = np.fromiter(map(unique.__contains__, ms), bool, len(ms))
        for bi, (a, b) in enumerate(pairwise(bounds)):
            if b - a == 1:
                g = ms[a]
                if fresh or chg[g] or not has_of[a]:
                    of[g] = codes.code(("unique", gnames[g]))
                    unique.add(g)
                continue
            if fresh:
                todo = ms[a:b]
            else:
                need = chg[ms_a[a:b]] | was_unique[a:b] | ~has_of[a:b]
                for i in np.flatnonzero(was_unique[a:b]).tolist():
                    g = ms[a + i]
                    p = self.gparent[g]
                    while p >= 0:
                        changed.add(p)
                        chg[p] = True
                        p = self.gparent[p]
                    unique.discard(g)
                todo = ms_a[a:b][need].tolist()
            if todo:
                self._bucket_codes(sigs[bs_l[bi]], todo, gkind)
        out: dict[str, list[str]] = {}
        ids: dict[int, str] = {}
        # The classes of each bucket of two or more: members of one code, numbered in
        # order of their first member; those of two or more members are templates.
        blen = np.asarray(bounds[1:], np.int64) - np.asarray(bounds[:-1], np.int64)
        multi = np.repeat(blen >= 2, blen)
        if multi.any():
            mm = ms_a[multi]
            bix = np.repeat(np.arange(blen.size), blen)[multi]
            code = np.fromiter(map(of.__getitem__, mm.tolist()), np.int64, mm.size)
            key = bix * (int(code.max()) + 1) + code
            _, cfirst, cinv, ccount = np.unique(key, return_index=True, return_inverse=True,
                                                return_counts=True)
            cinv = cinv.reshape(-1)
            # Classes in member order: by bucket, then by first member.
            corder = np.argsort(cfirst, kind="stable")
            cbucket = bix[cfirst[corder]]
            k_in = _rank_in_runs(cbucket)
            keep = ccount[corder] >= 2
            crank = np.empty_like(corder)
            crank[corder] = np.arange(corder.size)
            by_class = np.argsort(crank[cinv], kind="stable")
            cstart = np.r_[0, np.cumsum(ccount[corder])].tolist()
            members = mm[by_class].tolist()
            for c_i, bkt, k in zip(np.flatnonzero(keep).tolist(), cbucket[keep].tolist(),
                                   k_in[keep].tolist(), strict=True):
                gs = members[cstart[c_i]:cstart[c_i + 1]]
                tid = f"{sigs[bs_l[bkt]]}[{k}]"
                out[tid] = list(map(gnames.__getitem__, gs))
                ids.update(dict.fromkeys(gs, tid))
        self.template_of = ids
        return out

    # --- step 6: series of groups -----------------------------------------------------

    def _group_series(self) -> set[int] | None:
        min_size = self.opts.series_min_size
        existing: set[str] | None = None
        made: list[int] = []
        self._new_parent: list[int] = []
        self._new_cpos: dict[int, int] = {}
        self._new_nonctl: list[bool] = []
        for g, members in self._template_clusters(min_size):
            for prefix, suffix, run in _long_group_runs(self.gnames, members, min_size):
                if existing is None:
                    existing = self._taken()
                made.append(self._make_group_series(g, prefix, suffix, run, existing))
        if not made:
            return None
        self.parent_u = np.r_[self.parent_u, np.array(self._new_parent, np.int64)]
        first_new = self.cpos.size
        self.cpos = np.r_[self.cpos, np.array(
            [self._new_cpos[u] for u in range(first_new, first_new + len(made))], np.int64)]
        self.nonctl = np.r_[self.nonctl, np.array(self._new_nonctl, bool)]
        changed: set[int] = set()
        for s in made:
            p = self.gparent[s]
            while p >= 0 and p not in changed:
                changed.add(p)
                p = self.gparent[p]
        return changed

    def _template_clusters(self, min_size: int) -> list[tuple[int, list[int]]]:
        """(metanode, its metanode children of one template) for every template that at
        least ``min_size`` children of a metanode share: metanodes in index order, each
        one's clusters in order of their first child, children in the view's order."""
        n = self.n_ops
        if not self.template_of:
            return []
        gkind = np.array(self.gkind, np.int64)
        gparent = np.array(self.gparent, np.int64)
        k = len(self.template_of)
        tg = np.fromiter(self.template_of, np.int64, k)
        tix: dict[str, int] = {}
        tt = np.fromiter(map(tix.setdefault, self.template_of.values(), count()), np.int64, k)
        p = gparent[tg]
        keep = p >= 0
        keep[keep] = gkind[p[keep]] == 0
        tg, tt, p = tg[keep], tt[keep], p[keep]
        if not tg.size:
            return []
        o = np.lexsort((self.cpos[n + tg], p))
        tg, tt, p = tg[o], tt[o], p[o]
        _, first, inv, cnt = np.unique(p * k + tt, return_index=True, return_inverse=True,
                                       return_counts=True)
        big = np.flatnonzero(cnt >= min_size)
        if not big.size:
            return []
        big = big[np.argsort(first[big])]
        by_cluster = np.argsort(inv.reshape(-1), kind="stable")
        cstart = np.r_[0, np.cumsum(cnt)]
        return [(int(p[first[c]]), tg[by_cluster[cstart[c]:cstart[c + 1]]].tolist())
                for c in big.tolist()]

    def _make_group_series(self, g: int, prefix: str, suffix: str,
                           run: list[tuple[int, int]], existing: set[str]) -> int:
        n = self.n_ops
        first = self.gnames[run[0][1]]
        scope = first[:first.rfind("/")] if "/" in first else ""
        name = series_name(scope, prefix, suffix, run[0][0], run[-1][0])
        if name in existing:
            raise Declined
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
        # The new series' own entries are appended once, after the last series.
        self._new_parent.append(g)
        at = self.kids[g]
        old_ids = at < self.cpos.size
        self.cpos[at[old_ids]] = np.flatnonzero(old_ids)
        for p_, u in zip(np.flatnonzero(~old_ids).tolist(), at[~old_ids].tolist(),
                         strict=True):
            self._new_cpos[u] = p_
        self.cpos[self.kids[s]] = np.arange(len(members))
        self.parent_u[self.kids[s]] = s
        self._new_nonctl.append(False)
        # Re-bundle g's metaedges around the series (series._rebundle).
        old = [Metaedge(v, w, r, c, f, s_, sh)  # type: ignore[arg-type]
               for v, w, r, c, f, s_, sh in self.metaedges_of(g)]
        inner: list[Metaedge] = []
        new: dict[tuple[int, int], Metaedge] = {}
        su = n + s
        for me in old:
            v, w = int(me.v), int(me.w)
            vin, win = v in mset, w in mset
            if vin and win:
                inner.append(me)
                if me.regular:
                    self._new_nonctl[-1] = True
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

        A group gets a non-empty panel only through a ``NoOp`` child (an op, or a
        metanode whose ``scope/(scope)`` op is one), at least 15 children (the degree
        rule), a child with more than 4 control-only metaedges, or a child without
        metaedges holding embeddings on one side only (shortcut icons only come from the
        other rules); only those groups, and those whose metaedges were re-bundled
        around a series of groups, are run through ``extraction.extract_group``.
        """
        n = self.n_ops
        G = len(self.gnames)
        U = n + G
        self.panels: dict[int, dict[str, list[str]]] = {}
        gkind = np.array(self.gkind, np.int64)
        parent = self.parent_u
        flag = np.zeros(G, bool)
        flag |= np.fromiter(map(len, self.kids), np.int64, len(self.kids)) >= 15
        noop = self.strings.get(_NOOP)
        if noop is not None:
            js = np.flatnonzero(self.types == noop)
            flag[parent[js]] = True
            for j in js.tolist():
                p = int(parent[j])
                name = self.gnames[p]
                if (self.names[j] == f"{name}/({name.rsplit('/', 1)[-1]})"
                        and self.gkind[p] == 0 and parent[n + p] >= 0):
                    flag[parent[n + p]] = True
        me = self.me
        ctl_only = me["reg"] == 0
        deg = (np.bincount(me["v"][ctl_only], minlength=U)
               + np.bincount(me["w"][ctl_only], minlength=U))
        hot = np.flatnonzero(deg > 4)
        flag[parent[hot]] = True
        touched = np.zeros(U, bool)
        touched[me["v"]] = True
        touched[me["w"]] = True
        sides = np.zeros(n, np.int64)
        np.bitwise_or.at(sides, self.emb_host, np.left_shift(1, self.emb_side))
        lone = np.flatnonzero(((sides == 1) | (sides == 2)) & ~touched[:n])
        flag[parent[lone]] = True
        for g in self.me_override:
            flag[g] = True
        flag &= gkind == 0
        flagged = np.flatnonzero(flag).tolist()
        self._root_index = self._ops_in_children(flagged)
        for g in flagged:
            self.panels[g] = self._extract(g)

    def _ops_in_children(self, groups: list[int]) -> dict[str, int]:
        """{name: op} of the ops that sit in a metanode child of ``groups``, or in a series
        there: where the root op ``child/(label)`` of such a child is, if it has one (an
        op's group is the group of its scope, or a series in it)."""
        n = self.n_ops
        if not groups:
            return {}
        kids = np.concatenate([self.kids[g] for g in groups])
        holds = np.zeros(len(self.gnames), bool)
        holds[kids[kids >= n] - n] = True
        gparent = np.array(self.gparent, np.int64)
        series = np.array(self.gkind, np.int64) == 1
        holds[series & (gparent >= 0)] |= holds[gparent[series & (gparent >= 0)]]
        ops = np.flatnonzero(holds[self.op_parent]).tolist()
        return dict(zip(map(self.names.__getitem__, ops), ops, strict=True))

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
                for flag, e in self.embeddings_of(u):
                    (op.out_embeddings if flag else op.in_embeddings).append(e)
                tree.nodes[name] = op
            else:
                k = u - n
                tree.nodes[name] = GroupNode(name, kind="series" if self.gkind[k] else "meta",
                                             parent=gname)
                if not self.gkind[k]:
                    root = f"{name}/({name.rsplit('/', 1)[-1]})"
                    j = self._root_index.get(root)
                    if j is not None:
                        p = int(self.op_parent[j])
                        tree.nodes[root] = OpNode(root, strings[int(self.types[j])],
                                                  parent=self.gnames[p])
            tree.kids[gname][name] = None
        for v, w, f in self.me_flags(g):
            key = (name_of(v), name_of(w))
            tree.metaedges[gname][key] = Metaedge(key[0], key[1], regular=f & 1)
        return extract_group(tree, node, set(), self.opts.auto_extract)

    def embeddings_of(self, j: int) -> list[tuple[int, Embedding]]:
        """Op ``j``'s embeddings as (side: 0 in, 1 out; a new object each, as the view
        makes one per use: shown name, op type, a copy of the output shapes)."""
        a, b = np.searchsorted(self.emb_host, [j, j + 1]).tolist()
        cols, rn = self._source, self.renamed.get
        out = []
        for side, i in zip(self.emb_side[a:b].tolist(), self.emb_src[a:b].tolist(),
                           strict=True):
            name = cols.names[i]
            out.append((side, Embedding(rn(name, name), cols.ops[i],
                                        list(cols.records[int(cols.rec[i])][1]))))
        return out

    # --- the page -------------------------------------------------------------------

    def page_data(self, level: int) -> dict[str, Any]:
        return _encode(self, level)

    def page_tree(self) -> PageTree:
        """The names and drawn groups of the page's nodes (``page_tree.PageTree``)."""
        n = self.n_ops
        order, pos, kid_flat, kid_start = _page_order(self)
        N = order.size
        nkids = np.diff(kid_start)
        ops = self.names
        if self.renamed:
            ops = list(map(self.renamed.get, ops, ops))
        names = _take(ops + self.gnames, order)
        # Each node's parent row (-1: the root), and each group's first child row: a
        # group's children are consecutive rows.
        parent = np.full(N, -1, np.int64)
        grp_rows = pos[n:]
        parent[pos[kid_flat]] = np.repeat(grp_rows, nkids)
        first = np.zeros(N, np.int64)
        nchild = np.zeros(N, np.int64)
        has = np.flatnonzero(nkids)
        first[grp_rows[has]] = pos[kid_flat[kid_start[has]]]
        nchild[grp_rows] = nkids
        types = _take(list(self.strings), self.types) if n else []
        kinds = _take(types + ["series" if k == 1 else "meta" for k in self.gkind], order)
        return PageTree(names, parent, first, nchild, kinds)


_DIGITS = "0123456789"
_NO_DIGITS = str.maketrans("", "", _DIGITS)


def key_histograms(pg: np.ndarray, po: np.ndarray, key: np.ndarray, G: int,
               count: np.ndarray | None = None) -> list[list[tuple[int, int]]]:
    """Per group, (key, count) in order of the key's first op: a dict filled op by
    op, as ``add_nodes`` does. Rows (group ``pg``, op ``po``, ``key``), each counting
    1 or ``count`` (then ``po`` is the first op the row stands for)."""
    return list(_histograms(pg, po, key, G, count))


def _histograms(pg: np.ndarray, po: np.ndarray, key: np.ndarray, G: int,
                count: np.ndarray | None = None) -> _Histograms:
    """``key_histograms`` as arrays: a group's list is made when it is read."""
    if not pg.size:
        return _Histograms(np.zeros((0, 2), np.int64), np.zeros(G + 1, np.int64))
    grp, keys, counts, first_op = _key_runs(pg, po, key, count)
    n = int(po.max()) + 1
    o2 = np.argsort(grp * n + first_op)  # distinct: an op has one key
    # grp[o2] ascends: each group's pairs are one slice of them.
    start = np.zeros(G + 1, np.int64)
    np.cumsum(np.bincount(grp, minlength=G), out=start[1:])
    return _Histograms(np.stack([keys[o2], counts[o2]], axis=1), start)


def series_keys(leaves: list[str]) -> tuple[np.ndarray, np.ndarray, list[tuple[str, str]]]:
    """``split_series_name`` of every leaf, as (its (prefix, suffix) key's index among
    the keys in order of first occurrence, its id, those keys). Raises Declined for an
    id of 2**62 or more.

    The trailing digits of all leaves are found at once in their UTF-8 bytes (no
    multi-byte character holds the byte of an ASCII digit or of ``*``): a leaf ending in
    digits with no digit before them is (rest, number); one with no digit at all and no
    final ``*`` is (leaf, 0); the rest (a digit inside, so also a number before a final
    newline, which the rule's ``$`` lets through, or a final ``*``) go through the rule
    itself."""
    n = len(leaves)
    ids = np.zeros(n, np.int64)
    if not n:
        return ids, ids, []
    enc = list(map(str.encode, leaves, repeat("utf-8"), repeat("surrogatepass")))
    raw = np.frombuffer(b"".join(enc), np.uint8)
    end = np.cumsum(np.fromiter(map(len, enc), np.int64, n))
    del enc
    start = end - np.diff(np.r_[0, end])
    digit = (raw >= 48) & (raw <= 57)
    before = np.r_[0, np.cumsum(digit)]
    # The last byte at or before each byte that is not a digit: the tail of digits of a
    # leaf starts after it (or at the leaf's start).
    last_other = np.maximum.accumulate(np.where(digit, -1, np.arange(raw.size)))
    tail = np.maximum(last_other[np.maximum(end - 1, 0)] + 1, start) if raw.size else start
    tail = np.where(end > start, tail, start)
    clean = before[tail] == before[start]
    numbered = clean & (tail < end)
    star = (end > start) & (raw[np.maximum(end - 1, 0)] == 42) if raw.size else end < 0
    by_rule = np.flatnonzero(~numbered & (star | ~clean)).tolist()
    stems = list(map(str.rstrip, leaves, repeat(_DIGITS)))
    big = 1 << 62
    # A number of up to 18 digits, summed in int64; longer ones (rare) by int().
    width = end - tail
    short = numbered & (width <= 18)
    at = np.flatnonzero(short)
    if at.size:
        pos = _gather_ranges(tail[at], width[at])
        power = np.repeat(end[at], width[at]) - 1 - pos
        val = (raw[pos] - 48).astype(np.int64) * (10 ** np.arange(19, dtype=np.int64))[power]
        ids[at] = np.add.reduceat(val, np.r_[0, np.cumsum(width[at])[:-1]])
    for i in np.flatnonzero(numbered & ~short).tolist():
        ident = int(leaves[i][len(stems[i]):])
        if ident >= big:
            raise Declined  # a numeric suffix too long for int64
        ids[i] = ident
    # A key (prefix, "") is interned as the prefix alone (most keys), others as tuples.
    keys: list[Any] = stems
    for i in by_rule:
        prefix, ident, suffix = split_series_name(leaves[i])
        if ident >= big:
            raise Declined
        keys[i] = prefix if not suffix else (prefix, suffix)
        ids[i] = ident
    interned: dict[Any, int] = {}
    first = np.fromiter(map(interned.setdefault, keys, count()), np.int64, n)
    pre = np.unique(first, return_inverse=True)[1].reshape(-1)
    return pre, ids, [k if isinstance(k, tuple) else (k, "") for k in interned]


def _long_group_runs(gnames: list[str], members: list[int], min_size: int,
                     ) -> list[tuple[str, str, list[tuple[int, int]]]]:
    """series._long_runs on group indices: [(prefix, suffix, [(id, group), ...])]."""
    parsed = []
    for m in members:
        name = gnames[m]
        prefix, ident, suffix = split_series_name(name[name.rfind("/") + 1:])
        parsed.append((m, prefix, ident, suffix))
    return [r for r in consecutive_runs(parsed) if len(r[2]) >= min_size]


_KIND_OP, _KIND_META, _KIND_SERIES, _VERTICAL = 0, 1, 2, 4


class _Events:
    """Interning in the order ``page_data._encode`` would intern: events (node position,
    rank within the node, universe id); a table lists the universe ids in order of their
    first event, and maps each to its index there."""

    def __init__(self) -> None:
        self.pos: list[np.ndarray] = []
        self.sub: list[np.ndarray] = []
        self.uid: list[np.ndarray] = []

    def add(self, pos: Any, sub: Any, uid: Any) -> None:
        uid = np.asarray(uid, np.int64).reshape(-1)
        self.pos.append(np.broadcast_to(np.asarray(pos, np.int64), uid.shape).reshape(-1))
        self.sub.append(np.broadcast_to(np.asarray(sub, np.int64), uid.shape).reshape(-1))
        self.uid.append(uid)

    def table(self, size: int) -> tuple[np.ndarray, np.ndarray]:
        """(universe ids in table order, universe id -> table index (-1: unused))."""
        if not self.uid:
            return np.zeros(0, np.int64), np.full(size, -1, np.int64)
        return first_use_order(np.concatenate(self.pos), np.concatenate(self.sub),
                               np.concatenate(self.uid), size)


def _key_runs(pg: np.ndarray, po: np.ndarray, key: np.ndarray, count: np.ndarray | None,
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The distinct (group, key) of rows (group, op, key), sorted: (group, key, total
    count, first op); a row counts 1, or ``count``."""
    width = int(key.max()) + 1
    combo = pg * width + key
    n = int(po.max()) + 1
    bits = n.bit_length()
    order = None
    if int(pg.max() + 1) * width < 1 << (62 - bits):
        # (group, key, op) in one int64: the smallest op of a run is its first.
        packed = (combo << bits) | po
        if count is None:
            packed.sort()
        else:
            order = np.argsort(packed)
            packed = packed[order]
        c = packed >> bits
        start = np.flatnonzero(np.r_[True, c[1:] != c[:-1]])
        first_op = packed[start] & ((1 << bits) - 1)
    else:
        order = np.lexsort((po, combo))
        c = combo[order]
        start = np.flatnonzero(np.r_[True, c[1:] != c[:-1]])
        first_op = po[order[start]]
    if count is None:
        counts = np.diff(np.r_[start, c.size])
    else:
        counts = np.add.reduceat(count[order], start)
    u = c[start]
    return u // width, u % width, counts, first_op


def _group_levels(parent: np.ndarray) -> np.ndarray:
    """Each group's depth below the root (the root, ``parent`` -1, is at 0)."""
    level = np.zeros(parent.size, np.int64)
    up = parent.copy()
    live = np.flatnonzero(up >= 0)
    while live.size:
        level[live] += 1
        up[live] = parent[up[live]]
        live = live[up[live] >= 0]
    return level


def bundle_pairs(parent: np.ndarray, a: np.ndarray, b: np.ndarray,
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Where an edge from a child of group ``a`` to a child of group ``b`` (``a != b``)
    is bundled: (the group holding the metaedge, the group standing for the source end,
    the group standing for the destination end), per pair; an end is -1 where it is the
    op itself (``a`` contains ``b``, or ``b`` contains ``a``). The metaedge lies in the
    lowest common ancestor, between its children on the paths down to ``a`` and ``b``."""
    level = _group_levels(parent)
    la, lb = level[a], level[b]
    d = np.minimum(la, lb)
    x, y = a.copy(), b.copy()
    px, py = np.full(a.size, -1, np.int64), np.full(b.size, -1, np.int64)
    # Climb the deeper end to the other's level, remembering the group below it.
    for cur, below, lc in ((x, px, la), (y, py, lb)):
        live = np.flatnonzero(lc > d)
        while live.size:
            below[live] = cur[live]
            cur[live] = parent[cur[live]]
            live = live[level[cur[live]] > d[live]]
    # Then both together, until they are siblings (or one end was the other's
    # ancestor: then they met already).
    sib = x != y
    live = np.flatnonzero(sib)
    while live.size:
        up_x, up_y = parent[x[live]], parent[y[live]]
        step = up_x != up_y
        live = live[step]
        x[live], y[live] = up_x[step], up_y[step]
    g = np.where(sib, parent[x], x)
    v = np.where(sib, x, px)
    w = np.where(sib, y, py)
    return g, v, w


def small_unique(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(values, return_inverse=True)`` of non-negative integers; where they
    span little (below four times their number) by a table instead of a sort."""
    top = int(values.max()) + 1 if values.size else 0
    if top > 4 * values.size:
        uniq, inv = np.unique(values, return_inverse=True)
        return uniq, inv.reshape(-1)
    present = np.zeros(top, bool)
    present[values] = True
    uniq = np.flatnonzero(present)
    rank = np.zeros(top, np.int64)
    rank[uniq] = np.arange(uniq.size)
    return uniq, rank[values]


def _gather_ranges(starts: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """Concatenated ``arange(s, s + l)`` for each (s, l)."""
    total = int(lens.sum())
    if not total:
        return np.zeros(0, np.int64)
    offs = np.cumsum(lens) - lens
    return np.repeat(starts - offs, lens) + np.arange(total)


def _intern_all(table: dict[Any, int], keys: Iterable[Any]) -> None:
    """Number the keys not yet in ``table`` on from its size, in order of first
    occurrence (as ``table.setdefault(k, len(table))`` per key would), in C: each key
    is checked after the ones before it were added."""
    table.update(zip(filterfalse(table.__contains__, keys), count(len(table))))


class _Histograms(Sequence[list[tuple[int, int]]]):
    """Per group, its (key, count) pairs: the first groups' kept as arrays (``flat``: the
    pairs as ``_flat_pairs`` gives them, and each group's start), each one's list made
    when it is read (at a million ops, a list of tuples per group costs more than the
    steps that read them: the template signatures and series of groups read a few,
    the page's columns the arrays). Those lists are final; a list appended later (a
    series made after the histograms) is kept as it is."""

    def __init__(self, pairs: np.ndarray, start: np.ndarray) -> None:
        self.flat = (pairs, start)
        self._n = start.size - 1
        self._made: dict[int, list[tuple[int, int]]] = {}
        self._more: list[list[tuple[int, int]]] = []

    def __len__(self) -> int:
        return self._n + len(self._more)

    @overload
    def __getitem__(self, g: int) -> list[tuple[int, int]]: ...

    @overload
    def __getitem__(self, g: slice) -> list[list[tuple[int, int]]]: ...

    def __getitem__(self, g: int | slice) -> Any:
        if isinstance(g, slice):
            return [self[i] for i in range(*g.indices(len(self)))]
        if g < 0:
            g += len(self)
        if g >= self._n:
            return self._more[g - self._n]
        got = self._made.get(g)
        if got is None:
            pairs, start = self.flat
            a, b = int(start[g]), int(start[g + 1])
            got = self._made[g] = list(zip(pairs[a:b, 0].tolist(), pairs[a:b, 1].tolist(),
                                           strict=True))
        return got

    def __setitem__(self, g: int, value: list[tuple[int, int]]) -> None:
        if not self._n <= g < len(self):
            raise IndexError(f"_Histograms: only an appended list can be set, not {g}")
        self._more[g - self._n] = value

    def __iter__(self) -> Iterator[list[tuple[int, int]]]:
        return map(self.__getitem__, range(len(self)))

    def append(self, value: list[tuple[int, int]]) -> None:
        self._more.append(value)


def _flat_pairs(lists: Sequence[list[tuple[int, int]]]) -> tuple[np.ndarray, np.ndarray]:
    """Lists of integer pairs as one (pairs, 2) array, and each list's start in it (one
    more start than lists: the end)."""
    known = getattr(lists, "flat", None)
    if known is not None and known[1].size - 1 <= len(lists):
        pairs, start = known
        if start.size - 1 == len(lists):
            return pairs, start
        more, mstart = _flat_pairs(lists[start.size - 1:])
        return np.concatenate([pairs, more]), np.r_[start[:-1], start[-1] + mstart]
    lens = np.fromiter(map(len, lists), np.int64, len(lists))
    starts = np.zeros(len(lists) + 1, np.int64)
    np.cumsum(lens, out=starts[1:])
    flat = np.fromiter(chain.from_iterable(chain.from_iterable(lists)), np.int64,
                       2 * int(starts[-1]))
    return flat.reshape(-1, 2), starts


def _page_order(c: _Columns) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The page's rows: (the unified id of each row, breadth-first from the root, children
    in the view's order; each unified id's row; the kid table, ``_kid_table``)."""
    n = c.n_ops
    kid_flat, kid_start = c._kid_table()
    nkids = np.diff(kid_start)
    parts = [np.array([n], np.int64)]
    frontier = np.zeros(1, np.int64)
    while frontier.size:
        cat = kid_flat[_gather_ranges(kid_start[frontier], nkids[frontier])]
        if not cat.size:
            break
        parts.append(cat)
        frontier = cat[cat >= n] - n
    order = np.concatenate(parts)
    pos = np.empty(n + len(c.gnames), np.int64)
    pos[order] = np.arange(order.size)
    return order, pos, kid_flat, kid_start


def _encode(c: _Columns, level: int) -> dict[str, Any]:
    """The page data of the columns: ``page_data._encode``'s output, computed per column
    (see that module's docstring for what each column holds)."""
    n = c.n_ops
    # Breadth-first order of unified ids from the root, children in the view's order.
    order, pos, _, kid_start = _page_order(c)
    nkids = np.diff(kid_start)
    N = order.size
    G = len(c.gnames)
    op_pos = pos[:n]
    grp_pos = pos[n:]
    grp_order = order[order >= n] - n  # groups in page order
    # Position of every unified id among its parent's children.
    cpos = c.cpos

    # --- the string universe: our strings, then labels and embedding names ----------
    universe: dict[str, int] = dict(c.strings)
    # Labels numbered in op order (as one setdefault per op would), then group labels
    # in group order.
    _intern_all(universe, c.leaf_list)
    op_label = np.fromiter(map(universe.__getitem__, c.leaf_list), np.int64,
                           len(c.leaf_list))[c.leaf_code]
    grp_labels = list(map(itemgetter(2), map(str.rpartition, c.gnames, repeat("/"))))
    _intern_all(universe, grp_labels)
    grp_label = np.fromiter(map(universe.__getitem__, grp_labels), np.int64, G)
    del grp_labels
    strings = _Events()
    strings.add(op_pos, 0, op_label)
    strings.add(grp_pos, 0, grp_label)
    strings.add(op_pos, 1, c.types)
    has_dev = c.devices >= 0
    strings.add(op_pos[has_dev], 2, c.devices[has_dev])
    # Shape lists: our universe, plus embeddings' and metaedges'.
    shape_u = c.shape_lists
    shapes_ev = _Events()
    shapes_ev.add(op_pos, 0, c.shapes)
    # Embeddings, hosts in page order.
    # (host pos, flags, name, op, shapes) per embedding; the name is local (flag 2) when
    # it lies in the host's scope, which is when its own scope is the host's.
    by_pos = np.argsort(op_pos[c.emb_host], kind="stable")  # a host's own order kept
    e_host, e_src = c.emb_host[by_pos], c.emb_src[by_pos]
    n_emb = e_src.size
    emb = np.empty((n_emb, 5), np.int64)
    if n_emb:
        cols = c._source
        e_names = _take(cols.names, e_src)
        if c.renamed:
            e_names = list(map(c.renamed.get, e_names, e_names))
        # Local: the host's scope is not empty and is the name's own scope (before its
        # last "/"). Then the name is shown from after that "/" on.
        e_parts = list(map(str.rpartition, e_names, repeat("/")))
        scopes = _take(c.scope_of, e_host)
        local = np.fromiter(map(str.__eq__, map(itemgetter(0), e_parts), scopes), bool,
                            n_emb)
        local &= np.fromiter(map(bool, scopes), bool, n_emb)
        # (Picked with object arrays: pointer copies, whichever side most names are on.)
        e_shown: list[str] = np.where(local, np.array(list(map(itemgetter(2), e_parts)),
                                                      object),
                                      np.array(e_names, object)).tolist()
        del e_parts, scopes, e_names
        emb[:, 0] = op_pos[e_host]
        emb[:, 1] = c.emb_side[by_pos] | (local * 2)
        _intern_all(universe, e_shown)
        emb[:, 2] = np.fromiter(map(universe.__getitem__, e_shown), np.int64, n_emb)
        del e_shown, local
        # Op types and shape lists: once per distinct op type and record.
        t_used, t_inv = np.unique(c._op_code[e_src], return_inverse=True)
        e_ops = _take(c._op_list, t_used)
        _intern_all(universe, e_ops)
        emb[:, 3] = np.array(list(map(universe.__getitem__, e_ops)), np.int64)[
            t_inv.reshape(-1)]
        r_used, r_inv = np.unique(cols.rec[e_src], return_inverse=True)
        e_shapes = [tuple(cols.records[r][1]) for r in r_used.tolist()]
        _intern_all(shape_u, e_shapes)
        emb[:, 4] = np.array(list(map(shape_u.__getitem__, e_shapes)), np.int64)[
            r_inv.reshape(-1)]
        del e_ops, e_shapes
        # Within a host: after its label, type and device (ranks 0-2), name then op.
        k = np.arange(n_emb)
        first = np.r_[0, np.flatnonzero(emb[1:, 0] != emb[:-1, 0]) + 1]
        rank = k - np.repeat(first, np.diff(np.r_[first, n_emb]))
        strings.add(emb[:, 0], 3 + 2 * rank, emb[:, 2])
        strings.add(emb[:, 0], 4 + 2 * rank, emb[:, 3])
        shapes_ev.add(emb[:, 0], 1 + rank, emb[:, 4])
    # Groups: series op, histogram keys, device keys; metaedges.
    gkind = np.array(c.gkind, np.int64)
    series_rows = grp_order[gkind[grp_order] == 1].tolist()
    if series_rows:
        sr = np.array(series_rows, np.int64)
        strings.add(grp_pos[sr], 1, [c.series_op[g] for g in series_rows])
    hpairs, hstart = c._hist_pairs()
    dpairs, dstart = _flat_pairs(c.dhist)
    nhist = np.diff(hstart)
    ndev = np.diff(dstart)
    hpairs = hpairs[_gather_ranges(hstart[grp_order], nhist[grp_order])]
    dpairs = dpairs[_gather_ranges(dstart[grp_order], ndev[grp_order])]
    hist_key, hv = hpairs[:, 0], hpairs[:, 1]
    dev_key, dv = dpairs[:, 0], dpairs[:, 1]
    if hist_key.size:
        hp = np.repeat(grp_pos[grp_order], nhist[grp_order])
        strings.add(hp, 2 + _rank_in_runs(hp), hist_key)
    if dev_key.size:
        dp = np.repeat(grp_pos[grp_order], ndev[grp_order])
        strings.add(dp, 2 + nhist[order[dp] - n] + _rank_in_runs(dp), dev_key)
    # Metaedges per group in page order: array slices, or a group series' Python list.
    G0 = c.me_start.size - 1  # groups when the metaedges were bundled
    nme = np.zeros(G, np.int64)
    nme[:G0] = np.diff(c.me_start)
    for g, lst in c.me_override.items():
        nme[g] = len(lst)
    lens = nme[grp_order]
    is_over = np.zeros(G, bool)
    is_over[list(c.me_override)] = True
    over = is_over[grp_order]
    src_lens = np.where(over, 0, lens)
    # Groups made after the metaedges (series of groups) have overrides.
    me_start = np.r_[c.me_start[:-1], np.full(G + 1 - c.me_start.size, c.me_start[-1])]
    idx = _gather_ranges(me_start[grp_order], src_lens)
    total = int(lens.sum())
    me_cols = {k: np.empty(total, np.float64 if k == "size" else np.int64)
               for k in ("v", "w", "reg", "ctl", "ref", "size", "sl")}
    me_pos = np.repeat(grp_pos[grp_order], lens)
    fill = np.repeat(~over, lens)
    for col in ("v", "w", "reg", "ctl", "ref", "size", "sl"):
        me_cols[col][fill] = c.me[col][idx]
    if over.any():
        offs = np.cumsum(lens) - lens
        for g_i in np.flatnonzero(over).tolist():
            g = int(grp_order[g_i])
            o = int(offs[g_i])
            lst = c.me_override[g]
            size = len(lst)
            if not size:
                continue
            # (One pass per field over the group's metaedge objects.)
            for col, field in (("v", "v"), ("w", "w"), ("reg", "regular"), ("ctl", "control"),
                               ("ref", "ref"), ("size", "size")):
                me_cols[col][o:o + size] = np.fromiter(map(attrgetter(field), lst),
                                                       me_cols[col].dtype, size)
            keys = list(map(tuple, map(attrgetter("shapes"), lst)))
            _intern_all(shape_u, keys)
            me_cols["sl"][o:o + size] = np.fromiter(map(shape_u.__getitem__, keys), np.int64,
                                                    size)
    if total:
        shapes_ev.add(me_pos, _rank_in_runs(me_pos), me_cols["sl"])
    str_order, str_remap = strings.table(len(universe))
    # The strings of the columns label, type and device first (page_data's
    # _strings_first, which then has nothing to do): one list of the table is made,
    # not two.
    in_first = np.zeros(len(universe), bool)
    for used_ids in (op_label, grp_label, c.types, c.devices[has_dev]):
        in_first[used_ids] = True
    if c.series_op:
        in_first[np.fromiter(c.series_op.values(), np.int64, len(c.series_op))] = True
    first_part = in_first[str_order]
    if not first_part[:int(first_part.sum())].all():
        str_order = np.concatenate([str_order[first_part], str_order[~first_part]])
        str_remap[str_order] = np.arange(str_order.size)
    shp_order, shp_remap = shapes_ev.table(len(shape_u))
    universe_list = list(universe)
    shape_list = list(shape_u)

    def rs(a: np.ndarray) -> np.ndarray:
        return str_remap[a] if a.size else a

    # --- node columns ---------------------------------------------------------------
    kind = np.zeros(N, np.uint8)
    nchild = np.zeros(N, np.int64)
    label = np.empty(N, np.int64)
    typ = np.full(N, -1, np.int64)
    device = np.full(N, -1, np.int64)
    attrs = np.full(N, -1, np.int64)
    shapes = np.full(N, -1, np.int64)
    card = np.zeros(N, np.int64)
    depth = np.zeros(N, np.int64)
    template = np.full(N, -1, np.int64)
    nme_col = np.zeros(N, np.int64)
    nhist_col = np.zeros(N, np.int64)
    ndev_col = np.zeros(N, np.int64)
    label[op_pos] = rs(op_label)
    label[grp_pos] = rs(grp_label)
    typ[op_pos] = rs(c.types)
    device[op_pos[has_dev]] = rs(c.devices[has_dev])
    a_op = c.attrs[ops_in_order := order[order < n]]
    used = a_op[a_op >= 0]
    attr_order, attr_pos = _first_order(used) if used.size else (used, used)
    attr_remap = np.full(len(c.attr_list), -1, np.int64)
    attr_remap[attr_order] = np.arange(attr_order.size)
    if attr_remap.size:
        attrs[op_pos] = np.where(c.attrs >= 0, attr_remap[np.maximum(c.attrs, 0)], -1)
    del attr_pos
    shapes[op_pos] = shp_remap[c.shapes]
    nonctl = np.asarray(c.nonctl, bool)
    gk = np.where(gkind == 1, _KIND_SERIES | np.where(nonctl, _VERTICAL, 0), _KIND_META)
    gk[0] = _KIND_META
    kind[grp_pos] = gk
    nchild[grp_pos] = nkids
    if c.series_op:
        sg = np.fromiter(c.series_op, np.int64, len(c.series_op))
        typ[grp_pos[sg]] = str_remap[np.fromiter(c.series_op.values(), np.int64, sg.size)]
    card[grp_pos] = c.card
    depth[grp_pos] = c.depth
    template_ix = {t: i for i, t in enumerate(c.templates)}
    if c.template_of:
        tg = np.fromiter(c.template_of, np.int64, len(c.template_of))
        template[grp_pos[tg]] = np.fromiter(
            map(template_ix.get, c.template_of.values(), repeat(-1)), np.int64, tg.size)
    nme_col[grp_pos] = nme
    nhist_col[grp_pos] = nhist
    ndev_col[grp_pos] = ndev
    devices = sorted({universe_list[d] for d in
                      np.flatnonzero(np.bincount(c.devices[has_dev])).tolist()})
    xla = [[int(op_pos[j]), x] for j, x in sorted(c.xla.items(), key=lambda t: int(op_pos[t[0]]))]
    panels = []
    for g in sorted(c.panels, key=lambda g: int(grp_pos[g])):
        sp = c.panels[g]
        if sp.get("in") or sp.get("out"):
            panels.append([int(grp_pos[g]), list(sp.get("in", [])), list(sp.get("out", []))])
    series = [[int(grp_pos[g]), list(c.series_ids[g])] for g in series_rows]
    names_tbl: list[list[Any]] = []
    _names_table(c, grp_order, grp_pos, names_tbl)
    e_flags = c.e_flags
    columns: list[tuple[str, np.ndarray]] = [
        ("kind", kind), ("nchild", nchild), ("label", label), ("type", typ),
        ("device", device), ("attrs", attrs), ("shapes", shapes), ("card", card),
        ("depth", depth), ("template", template), ("nme", nme_col), ("nhist", nhist_col),
        ("ndev", ndev_col),
        ("hist_key", rs(hist_key)), ("hist_val", hv),
        ("dev_key", rs(dev_key)), ("dev_val", dv),
        ("me_v", cpos[me_cols["v"]]), ("me_w", cpos[me_cols["w"]]),
        ("me_reg", me_cols["reg"]), ("me_ctl", me_cols["ctl"]), ("me_ref", me_cols["ref"]),
        ("me_size", me_cols["size"]), ("me_shapes", shp_remap[me_cols["sl"]]),
        ("e_src", op_pos[c.e_src]), ("e_dst", op_pos[c.e_dst]), ("e_slot", c.e_slot),
        ("e_flags", e_flags.astype(np.uint8)),
        ("emb_host", emb[:, 0]), ("emb_flags", emb[:, 1].astype(np.uint8)),
        ("emb_name", rs(emb[:, 2])), ("emb_op", rs(emb[:, 3])),
        ("emb_shapes", shp_remap[emb[:, 4]] if emb.size else emb[:, 4]),
    ]
    # page_data's dtypes (an empty column keeps its dtype through narrowing).
    float_cols = {"me_size"}
    byte_cols = {"kind", "e_flags", "emb_flags"}
    columns = [(name, arr if arr.size else arr.astype(
        np.float64 if name in float_cols else np.uint8 if name in byte_cols else np.int32))
        for name, arr in columns]
    tables = {
        "strings": list(map(universe_list.__getitem__, str_order.tolist())),
        "shapes": [[None if s is None else list(s) for s in shape_list[k]]
                   for k in shp_order.tolist()],
        "attrs": [c.attr_list[a] for a in attr_order.tolist()],
        "names": names_tbl,
        "extra": [],
        "panels": panels,
        "series": series,
        "xla": xla,
    }
    del ops_in_order
    options_json: dict[str, object] = c.opts.to_json()
    options_json["hidden_count"] = c.hidden
    return encode_columns(
        columns, tables, level, options=options_json,
        stats={"ops": n, "edges": int(c.e_src.size), "groups": N - n - 1},
        nodes=N, devices=devices, has_time=False,
        templates=[[t, len(m), m[0] if m else t] for t, m in c.templates.items()])


def _rank_in_runs(p: np.ndarray) -> np.ndarray:
    """For a sorted array, each element's index within its run of equal values."""
    if not p.size:
        return p
    k = np.arange(p.size)
    first = np.r_[0, np.flatnonzero(p[1:] != p[:-1]) + 1]
    out: np.ndarray = k - np.repeat(first, np.diff(np.r_[first, p.size]))
    return out


def _names_table(c: _Columns, grp_order: np.ndarray, grp_pos: np.ndarray,
                 out: list[list[Any]]) -> None:
    """The nodes whose full name is not "base/label" (base: the name of the nearest
    ancestor that is not a series; "label" alone when the base is the root's empty name),
    in page order. Only groups can be such nodes here: an op's name is its scope group's
    name, "/", its label (names starting with "/" are declined), and op series sit in
    that group, so an op's base is always that group. Likewise a scope group whose parent
    is a scope group is named "parent/label" (the hierarchy makes a scope's parent from
    its name): only series and the members of series need their names checked."""
    gparent = np.array(c.gparent, np.int64)
    gkind = np.array(c.gkind, np.int64)
    series = gkind == 1
    check = np.flatnonzero(series | (series[gparent] & (gparent >= 0)))
    if not check.size:
        return
    # Each checked group's base group: its parent, or the parent's nearest ancestor that
    # is not a series (members of a series are named in the series' scope).
    base = gparent[check]
    up = np.flatnonzero((base > 0) & series[base])
    while up.size:
        base[up] = gparent[base[up]]
        up = up[(base[up] > 0) & series[np.maximum(base[up], 0)]]
    page = np.argsort(grp_pos[check], kind="stable")
    gs, base = check[page].tolist(), base[page].tolist()
    names = list(map(c.gnames.__getitem__, gs))
    bases = list(map(c.gnames.__getitem__, base))
    parts = list(map(str.rpartition, names, repeat("/")))
    # name == base + "/" + label (label alone under an empty base): the head before the
    # last "/" is the base, and there is a "/" exactly when the base is not empty.
    bad = np.fromiter(map(str.__ne__, map(itemgetter(0), parts), bases), bool, len(gs))
    has_sep = np.fromiter(map(len, map(itemgetter(1), parts)), np.int64, len(gs)) > 0
    no_base = np.fromiter(map(len, bases), np.int64, len(gs)) == 0
    bad |= has_sep == no_base
    for i in np.flatnonzero(bad).tolist():
        out.append([int(grp_pos[gs[i]]), names[i]])
