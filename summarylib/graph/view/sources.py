"""Find the op graph to view: in a logdir, an event file, or a GraphDef file.

Where a graph can be (what TensorBoard's graph dashboard reads):

* the **run-level graph** of a run: ``Event.graph_def`` (the last one written wins, as in
  TensorBoard); its profiles are ``Event.tagged_run_metadata`` records ("session runs"),
  selected with ``tag=<session run>``;
* a **tagged graph**: a summary value of plugin ``graph_run_metadata_graph`` (graph only) or
  ``graph_run_metadata`` (graph plus a ``StepStats`` profile) holding a ``RunMetadata`` whose
  ``function_graphs[*].pre_optimization_graph`` are the graph (several are merged under
  ``graph_1/``, ``graph_2/``... prefixes, as TensorBoard merges them);
* a file: a binary ``GraphDef`` (``.pb``, or any name), a text-format ``GraphDef``
  (``.pbtxt``/``.pbtext``/``.txt``), a ``MetaGraphDef`` (``.meta``) or a ``SavedModel``
  (``saved_model.pb``, or its directory; ``tag`` picks a meta graph by one of its tags when
  there are several).

Data contract of :func:`load_graph`: a :class:`LoadedGraph` with the serialized ``GraphDef``
(parsed once, so known to be well formed), the compute time of each profiled node in
microseconds (TensorBoard's rule: the span from the earliest ``all_start_micros`` to the
latest ``all_start_micros + all_end_rel_micros`` over the node's records, records with a
non-positive duration ignored), keyed by the node names of the profile, and where the graph
came from. :func:`apply_compute_times` copies those times onto a built view.

Everything read is untrusted: every failure is a :class:`GraphSourceError` whose message
says what was found (runs, tags and their plugins) and how to choose.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from summarylib.errors import DataLossError, SummaryError

if TYPE_CHECKING:
    from summarylib.graph.view.model import GraphView
    from summarylib.proto import graph_pb2, step_stats_pb2

__all__ = [
    "GraphRef",
    "GraphSourceError",
    "LoadedGraph",
    "apply_compute_times",
    "list_graphs",
    "load_graph",
    "load_graph_source",
    "profile_compute_times",
]

PLUGIN_GRAPH = "graph_run_metadata_graph"
PLUGIN_RUN_METADATA = "graph_run_metadata"
PLUGIN_KERAS_MODEL = "graph_keras_model"
_GRAPH_PLUGINS = (PLUGIN_GRAPH, PLUGIN_RUN_METADATA)
#: ``tag`` values that select the run-level graph (TensorBoard's UI calls it "Default"; its
#: data provider calls it ``__run_graph__``) unless the run has a real tag of that name.
RUN_GRAPH_TAGS = ("Default", "__run_graph__")
_TEXT_SUFFIXES = (".pbtxt", ".pbtext", ".txt", ".prototxt")
_MAX_LISTED = 20


class GraphSourceError(SummaryError, ValueError):
    """No graph, several graphs, or an unreadable input.

    Attributes:
      reason: ``"missing"`` (no such path), ``"not_found"`` (no graph matches),
        ``"ambiguous"`` (several match; ``candidates`` lists them) or ``"unreadable"``.
      candidates: the graphs that matched (ambiguous) or that exist (not found).
    """

    def __init__(
        self,
        message: str,
        reason: Literal["missing", "not_found", "ambiguous", "unreadable"],
        candidates: list[GraphRef] | None = None,
    ) -> None:
        super().__init__(message)
        self.reason = reason
        self.candidates = candidates or []


@dataclass(frozen=True)
class GraphRef:
    """One graph found in a logdir or event file.

    ``tag`` is None for the run-level graph. ``plugin`` is ``"graph_def"`` for the run-level
    graph, else the summary plugin. ``profile_tag`` names the session run whose profile goes
    with a run-level graph (None: no profile). ``step`` is the step of the record used.
    """

    run: str
    tag: str | None
    plugin: str
    step: int = 0
    profile_tag: str | None = None

    def describe(self) -> str:
        """One line for messages: ``--run 'train' --tag 'model' (graph_run_metadata, step 3)``."""
        if self.tag is None:
            what = "--tag Default (the run-level graph"
        else:
            what = f"--tag {self.tag!r} ({self.plugin}"
        extra = f", profile {self.profile_tag!r}" if self.profile_tag else ""
        return f"--run {self.run!r} {what}, step {self.step}{extra})"


@dataclass
class LoadedGraph:
    """A graph ready for ``build_view``: GraphDef bytes, profile times and its origin."""

    graph_def: bytes
    #: node name (as in the profile) -> compute time in microseconds; empty without profile.
    compute_times: dict[str, float] = field(default_factory=dict)
    #: The path given, and the run/tag chosen (None for files holding one graph).
    path: str = ""
    run: str | None = None
    tag: str | None = None
    #: A short human description: ``logs: run 'train', tag 'model'``.
    description: str = ""


@dataclass
class _RunGraphs:
    """What one run holds, the last record of each kind winning (TensorBoard's rule)."""

    run_graph: tuple[int, bytes] | None = None
    tagged: dict[str, tuple[str, int, bytes]] = field(default_factory=dict)
    session_runs: dict[str, tuple[int, bytes]] = field(default_factory=dict)
    #: every summary tag of the run -> its plugin (for "what exists" messages)
    tags: dict[str, str] = field(default_factory=dict)

    def refs(self, run: str) -> list[GraphRef]:
        out = []
        if self.run_graph is not None:
            out.append(GraphRef(run, None, "graph_def", self.run_graph[0]))
        for tag, (plugin, step, _) in self.tagged.items():
            out.append(GraphRef(run, tag, plugin, step))
        return out


# --- public API ----------------------------------------------------------------------------


def load_graph_source(path: str | os.PathLike[str], run: str | None = None,
                      tag: str | None = None) -> bytes:
    """The serialized ``GraphDef`` at ``path`` (see :func:`load_graph` for the rules)."""
    return load_graph(path, run=run, tag=tag).graph_def


def load_graph(path: str | os.PathLike[str], run: str | None = None,
               tag: str | None = None) -> LoadedGraph:
    """Load one graph (and its profile) from a logdir, an event file or a GraphDef file.

    ``run`` picks a run of a logdir; ``tag`` picks a tagged graph, a session-run profile of
    the run-level graph, ``"Default"`` for the run-level graph itself, or a SavedModel's meta
    graph. Without them the input must hold exactly one graph.

    Raises:
      GraphSourceError: nothing at ``path``, no graph matching, several graphs matching
        (the message lists them with the ``--run``/``--tag`` that select each), or a file
        that cannot be read or parsed.
    """
    name = os.fspath(path)
    from summarylib.reader.runs import is_event_file, is_logdir, is_remote

    try:
        directory = is_logdir(name)
    except (ImportError, ValueError, OSError) as e:
        raise GraphSourceError(f"cannot open {name}: {e}", "unreadable") from None
    if directory:
        return _from_logdir(name, run, tag)
    if not is_remote(name) and not os.path.lexists(name):
        raise GraphSourceError(f"no such file or directory: {name}", "missing")
    data = _read_file(name)
    base = os.path.basename(name.rstrip("/"))
    if is_event_file(base) or (_looks_like_records(data) and not _has_graph_suffix(base)):
        runs = {".": _scan_files([name])}
        return _choose(name, runs, None, tag, what="event file")
    return _from_graph_file(name, base, data, tag)


def list_graphs(path: str | os.PathLike[str]) -> list[GraphRef]:
    """Every graph of a logdir or event file (run-level graphs and tagged graphs)."""
    from summarylib.reader.runs import is_logdir, list_runs

    name = os.fspath(path)
    if is_logdir(name):
        runs = {r: _scan_files(files) for r, files in list_runs(name).items()}
    else:
        runs = {".": _scan_files([name])}
    return [ref for r, rg in runs.items() for ref in rg.refs(r)]


def apply_compute_times(view: GraphView, compute_times: Mapping[str, float]) -> int:
    """Set ``compute_time_us`` of the view's ops from a profile; return how many were set.

    Names are joined as TensorBoard joins them: the node's own name, else the name
    normalisation gave it (``A`` shown as ``A/(A)``). Profile entries for nodes the view
    does not show (embedded, hidden, unknown) are ignored.
    """
    from summarylib.graph.view.model import OpNode

    done = 0
    for name, micros in compute_times.items():
        node = view.nodes.get(name)
        if not isinstance(node, OpNode):
            node = view.nodes.get(view.renamed.get(name, ""))
        if isinstance(node, OpNode):
            node.compute_time_us = float(micros)
            done += 1
    return done


# --- logdirs and event files -----------------------------------------------------------------


def _from_logdir(logdir: str, run: str | None, tag: str | None) -> LoadedGraph:
    from summarylib.reader.runs import list_runs

    try:
        all_runs = list_runs(logdir)
    except (OSError, ImportError, ValueError) as e:
        raise GraphSourceError(f"cannot list {logdir}: {e}", "unreadable") from None
    if not all_runs:
        saved = os.path.join(logdir, "saved_model.pb")
        if "://" not in logdir and os.path.isfile(saved):  # a SavedModel directory
            return _from_graph_file(saved, "saved_model.pb", _read_file(saved), tag)
        raise GraphSourceError(f"{logdir}: no event files found", "not_found")
    if run is not None:
        if run not in all_runs:
            raise GraphSourceError(
                f"{logdir}: no run {run!r}; runs: {_names(all_runs)}", "not_found")
        all_runs = {run: all_runs[run]}
    runs = {r: _scan_files(files) for r, files in all_runs.items()}
    return _choose(logdir, runs, run, tag, what="logdir")


def _scan_files(files: list[str]) -> _RunGraphs:
    from google.protobuf.message import DecodeError

    from summarylib.reader.events import iter_events

    out = _RunGraphs()
    for file in files:
        try:
            for event in iter_events(file):
                what = event.WhichOneof("what")
                if what == "graph_def":
                    out.run_graph = (event.step, event.graph_def)
                elif what == "tagged_run_metadata":
                    trm = event.tagged_run_metadata
                    out.session_runs[trm.tag] = (event.step, trm.run_metadata)
                elif what == "summary":
                    for value in event.summary.value:
                        plugin = value.metadata.plugin_data.plugin_name
                        if plugin or value.tag not in out.tags:
                            out.tags[value.tag] = plugin or value.WhichOneof("value") or "?"
                        if plugin in _GRAPH_PLUGINS and value.tensor.string_val:
                            out.tagged[value.tag] = (plugin, event.step,
                                                     value.tensor.string_val[0])
        except (DataLossError, DecodeError, OSError) as e:
            raise GraphSourceError(f"cannot read {file}: {e}", "unreadable") from None
    return out


def _choose(path: str, runs: dict[str, _RunGraphs], run: str | None, tag: str | None,
            what: str) -> LoadedGraph:
    found = [ref for r, rg in runs.items() for ref in rg.refs(r)]
    if tag is None:
        matches = found
    else:
        matches = [ref for ref in found if ref.tag == tag]
        if not matches:
            for r, rg in runs.items():
                if rg.run_graph is None:
                    continue
                if tag in RUN_GRAPH_TAGS and tag not in rg.tags:
                    matches.append(GraphRef(r, None, "graph_def", rg.run_graph[0]))
                elif tag in rg.session_runs:
                    matches.append(GraphRef(r, None, "graph_def", rg.run_graph[0], tag))
    where = path if run is None else f"{path}, run {run!r}"
    if not matches:
        raise GraphSourceError(_not_found_message(where, runs, tag, what), "not_found", found)
    if len(matches) > 1:
        lines = "\n".join(f"  {ref.describe()}" for ref in matches[:_MAX_LISTED])
        more = len(matches) - _MAX_LISTED
        tail = f"\n  ... and {more} more" if more > 0 else ""
        raise GraphSourceError(
            f"{where}: {len(matches)} graphs found; choose one with --run/--tag:\n{lines}{tail}",
            "ambiguous", matches)
    ref = matches[0]
    rg = runs[ref.run]
    if ref.tag is None:
        assert rg.run_graph is not None
        graph_def = _checked_graph_def(rg.run_graph[1], f"{path}: run {ref.run!r} graph_def")
        times: dict[str, float] = {}
        if ref.profile_tag is not None:
            times = _run_metadata_times(rg.session_runs[ref.profile_tag][1], path)
        desc = f"{path}: run {ref.run!r}, run-level graph"
        if ref.profile_tag:
            desc += f", profile {ref.profile_tag!r}"
    else:
        plugin, _, payload = rg.tagged[ref.tag]
        graph_def, times = _from_run_metadata(payload, f"{path}: run {ref.run!r} tag {ref.tag!r}")
        if plugin != PLUGIN_RUN_METADATA:
            times = {}
        desc = f"{path}: run {ref.run!r}, tag {ref.tag!r}"
    return LoadedGraph(graph_def, times, path, ref.run, ref.tag or ref.profile_tag, desc)


def _not_found_message(where: str, runs: dict[str, _RunGraphs], tag: str | None,
                       what: str) -> str:
    head = f"{where}: no graph" + (f" with tag {tag!r}" if tag is not None else "")
    lines = []
    for r, rg in list(runs.items())[:_MAX_LISTED]:
        graphs = [("Default (run-level graph)" if ref.tag is None else repr(ref.tag))
                  for ref in rg.refs(r)]
        parts = [f"graphs: {', '.join(graphs)}" if graphs else "no graph"]
        if rg.session_runs:
            parts.append(f"session runs: {', '.join(map(repr, rg.session_runs))}")
        other = [f"{t!r} ({p})" for t, p in rg.tags.items() if t not in rg.tagged]
        if other:
            shown = ", ".join(other[:8]) + (f", ... ({len(other) - 8} more)"
                                            if len(other) > 8 else "")
            parts.append(f"other tags: {shown}")
        lines.append(f"  run {r!r}: " + "; ".join(parts))
    if len(runs) > _MAX_LISTED:
        lines.append(f"  ... and {len(runs) - _MAX_LISTED} more runs")
    if any(p == PLUGIN_KERAS_MODEL for rg in runs.values() for p in rg.tags.values()):
        lines.append("  (graph_keras_model tags are conceptual graphs, not op graphs)")
    return head + f" in this {what}; it holds:\n" + "\n".join(lines)


def _names(runs: Mapping[str, object]) -> str:
    names = list(runs)
    shown = ", ".join(map(repr, names[:_MAX_LISTED]))
    return shown + (f", ... ({len(names) - _MAX_LISTED} more)" if len(names) > _MAX_LISTED
                    else "")


# --- RunMetadata, GraphDef, profiles -----------------------------------------------------------


def _from_run_metadata(payload: bytes, where: str) -> tuple[bytes, dict[str, float]]:
    from google.protobuf.message import DecodeError

    from summarylib.proto import run_metadata_pb2

    rm = run_metadata_pb2.RunMetadata()
    try:
        rm.ParseFromString(payload)
    except DecodeError as e:
        raise GraphSourceError(f"{where}: not a RunMetadata ({e})", "unreadable") from None
    graphs = [fg.pre_optimization_graph for fg in rm.function_graphs]
    if not graphs:
        raise GraphSourceError(f"{where}: the RunMetadata holds no graph", "unreadable")
    merged = graphs[0] if len(graphs) == 1 else _merge_graph_defs(graphs)
    if not merged.node:
        raise GraphSourceError(f"{where}: the graph has no nodes", "unreadable")
    times = profile_compute_times(rm.step_stats) if rm.HasField("step_stats") else {}
    return merged.SerializeToString(), times


def _run_metadata_times(payload: bytes, where: str) -> dict[str, float]:
    from google.protobuf.message import DecodeError

    from summarylib.proto import run_metadata_pb2

    try:
        rm = run_metadata_pb2.RunMetadata.FromString(payload)
    except DecodeError as e:
        raise GraphSourceError(f"{where}: not a RunMetadata ({e})", "unreadable") from None
    return profile_compute_times(rm.step_stats)


def _merge_graph_defs(graphs: list[graph_pb2.GraphDef]) -> graph_pb2.GraphDef:
    # TensorBoard's merge_graph_defs: each function graph under its own "graph_<i>/" scope,
    # so equal names in different graphs stay different nodes.
    from summarylib.proto import graph_pb2

    out = graph_pb2.GraphDef()
    out.versions.CopyFrom(graphs[0].versions)
    for i, g in enumerate(graphs, 1):
        prefix = f"graph_{i}/"
        for node in g.node:
            new = out.node.add()
            new.CopyFrom(node)
            new.name = prefix + node.name
            new.input[:] = [
                "^" + prefix + inp[1:] if inp.startswith("^") else prefix + inp
                for inp in node.input
            ]
        out.library.function.extend(g.library.function)
    return out


def profile_compute_times(step_stats: step_stats_pb2.StepStats) -> dict[str, float]:
    """Node name -> compute time (µs), by TensorBoard's rule (see the module docstring)."""
    spans: dict[str, tuple[float, float]] = {}
    for dev in step_stats.dev_stats:
        for ns in dev.node_stats:
            start = float(ns.all_start_micros)
            rel = float(ns.all_end_rel_micros)
            if not ns.all_start_micros and not rel and ns.all_end_rel_nanos:
                start, rel = ns.all_start_nanos / 1000.0, ns.all_end_rel_nanos / 1000.0
            if rel <= 0 or not ns.node_name:
                continue
            lo, hi = spans.get(ns.node_name, (start, start + rel))
            spans[ns.node_name] = (min(lo, start), max(hi, start + rel))
    return {name: hi - lo for name, (lo, hi) in spans.items()}


def _checked_graph_def(data: bytes, where: str) -> bytes:
    gd = _parse_graph_def(data, where)
    if not gd.node:
        raise GraphSourceError(f"{where}: the graph has no nodes", "unreadable")
    return data


def _parse_graph_def(data: bytes, where: str) -> graph_pb2.GraphDef:
    from google.protobuf.message import DecodeError

    from summarylib.proto import graph_pb2

    gd = graph_pb2.GraphDef()
    try:
        gd.ParseFromString(data)
    except DecodeError as e:
        raise GraphSourceError(f"{where}: not a binary GraphDef ({e})", "unreadable") from None
    return gd


# --- files -----------------------------------------------------------------------------------


def _read_file(name: str) -> bytes:
    from summarylib.reader.runs import is_remote

    try:
        if is_remote(name):
            from summarylib.writer._remote import reading_filesystem

            fs = reading_filesystem(name)
            return bytes(fs.cat_file(fs._strip_protocol(name)))
        with open(name, "rb") as f:
            return f.read()
    except (OSError, ImportError, ValueError) as e:
        raise GraphSourceError(f"cannot read {name}: {e}", "unreadable") from None


def _has_graph_suffix(base: str) -> bool:
    return base.endswith((".pb", ".meta", *_TEXT_SUFFIXES))


def _looks_like_records(data: bytes) -> bool:
    # A TFRecord file starts with a length and its masked CRC: a GraphDef practically never
    # does (its first byte is a field key such as 0x0a).
    from summarylib.encoding._tfrecord import masked_crc32c

    return len(data) >= 12 and masked_crc32c(data[:8]) == int.from_bytes(data[8:12], "little")


def _from_graph_file(name: str, base: str, data: bytes, tag: str | None) -> LoadedGraph:
    if base.endswith(_TEXT_SUFFIXES):
        gd_bytes = _text_graph_def(name, data)
        desc = f"{name}: text GraphDef"
    elif base.endswith(".meta"):
        gd_bytes = _meta_graph_graph_def(data, name)
        desc = f"{name}: MetaGraphDef"
    elif _is_saved_model(data):
        gd_bytes, chosen = _saved_model_graph_def(data, name, tag)
        return LoadedGraph(gd_bytes, {}, name, None, chosen, f"{name}: SavedModel")
    else:
        gd_bytes = data
        desc = f"{name}: GraphDef"
    gd = _parse_graph_def(gd_bytes, name)
    if not gd.node:
        raise GraphSourceError(
            f"{name}: not a GraphDef with nodes (expected an event file, a binary or text "
            "GraphDef, a .meta MetaGraphDef or a SavedModel)", "unreadable")
    # A sniff of the file's type (bytes that happen to parse as a GraphDef rarely give
    # named nodes); its first and last nodes only: asking each of a million nodes for its
    # name takes most of a second, and the view takes a node without a name.
    if not (gd.node[0].name and gd.node[-1].name):
        raise GraphSourceError(f"{name}: not a GraphDef (a node has no name)", "unreadable")
    return LoadedGraph(gd_bytes, {}, name, None, None, desc)


def _text_graph_def(name: str, data: bytes) -> bytes:
    from google.protobuf import text_format

    from summarylib.proto import graph_pb2

    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise GraphSourceError(f"{name}: a text GraphDef must be UTF-8", "unreadable") from None
    gd = graph_pb2.GraphDef()
    try:
        text_format.Parse(text, gd)
    except text_format.ParseError as e:
        raise GraphSourceError(f"{name}: not a text GraphDef: {e}", "unreadable") from None
    return gd.SerializeToString()


def _wire_fields(data: bytes) -> Iterator[tuple[int, int, int | bytes]]:
    """``(field number, wire type, value)`` of one serialized message; ValueError if bad."""
    i, n = 0, len(data)

    def varint() -> int:
        nonlocal i
        shift = result = 0
        while True:
            if i >= n or shift > 63:
                raise ValueError("truncated varint")
            b = data[i]
            i += 1
            result |= (b & 0x7F) << shift
            if b < 0x80:
                return result
            shift += 7

    while i < n:
        key = varint()
        number, wire = key >> 3, key & 7
        value: int | bytes
        if wire == 0:
            value = varint()
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            if i + size > n:
                raise ValueError("truncated fixed field")
            value, i = data[i:i + size], i + size
        elif wire == 2:
            size = varint()
            if i + size > n:
                raise ValueError("truncated length-delimited field")
            value, i = data[i:i + size], i + size
        else:
            raise ValueError(f"unsupported wire type {wire}")
        if number == 0:
            raise ValueError("field number 0")
        yield number, wire, value


def _is_saved_model(data: bytes) -> bool:
    # SavedModel: saved_model_schema_version = 1 (varint), meta_graphs = 2. A GraphDef's
    # field 1 (node) is length-delimited, so a varint field 1 tells them apart. The scan
    # stops at a node (a GraphDef's first field, as a rule): a big GraphDef is not walked
    # field by field here.
    version = meta_graphs = False
    try:
        for number, wire, _ in _wire_fields(data):
            if number == 1:
                if wire != 0:
                    return False
                version = True
            elif number == 2:
                meta_graphs = True
            if version and meta_graphs:
                return True
    except ValueError:
        return False
    return False


def _meta_graph_graph_def(data: bytes, name: str) -> bytes:
    try:
        for number, wire, value in _wire_fields(data):
            if number == 2 and wire == 2 and isinstance(value, bytes):
                return value  # MetaGraphDef.graph_def
    except ValueError as e:
        raise GraphSourceError(f"{name}: not a MetaGraphDef ({e})", "unreadable") from None
    raise GraphSourceError(f"{name}: the MetaGraphDef holds no graph_def", "unreadable")


def _meta_graph_tags(meta: bytes) -> list[str]:
    tags: list[str] = []
    for number, _, value in _wire_fields(meta):
        if number == 1 and isinstance(value, bytes):  # meta_info_def
            for n2, _, v2 in _wire_fields(value):
                if n2 == 4 and isinstance(v2, bytes):  # tags
                    tags.append(v2.decode("utf-8", "replace"))
    return tags


def _saved_model_graph_def(data: bytes, name: str, tag: str | None) -> tuple[bytes, str | None]:
    try:
        metas = [v for f, w, v in _wire_fields(data) if f == 2 and isinstance(v, bytes)]
        tagged = [(_meta_graph_tags(m), m) for m in metas]
    except ValueError as e:
        raise GraphSourceError(f"{name}: not a SavedModel ({e})", "unreadable") from None
    if tag is not None:
        tagged = [(tags, m) for tags, m in tagged if tag in tags or tag == ",".join(tags)]
    listing = ", ".join(repr(",".join(tags)) for tags, _ in tagged[:_MAX_LISTED])
    if not tagged:
        raise GraphSourceError(f"{name}: no meta graph with tag {tag!r} in this SavedModel",
                               "not_found")
    if len(tagged) > 1:
        raise GraphSourceError(
            f"{name}: {len(tagged)} meta graphs in this SavedModel; choose one with --tag: "
            f"{listing}", "ambiguous")
    tags, meta = tagged[0]
    return _meta_graph_graph_def(meta, name), ",".join(tags) or None
