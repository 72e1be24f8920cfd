"""A :class:`~summarylib.graph.view.diffing.GraphDiff` as text, JSON and a web page.

* :func:`diff_to_text`: a few lines per scope that changed (control characters in names
  escaped; ``limit`` caps each list);
* :func:`diff_to_json`: everything, as plain dicts and lists;
* :func:`diff_to_html`: one self-contained page (no script, no network; every name
  escaped), scopes as an expandable tree coloured by change: added green, removed red,
  changed amber.
"""

from __future__ import annotations

import html
from dataclasses import asdict, replace
from typing import Any

from summarylib.graph.view.diffing import (
    EdgeChange,
    GraphDiff,
    OpChange,
    ScopeDiff,
    shapes_text,
)
from summarylib.graph.view.model import GraphView, OpNode

__all__ = ["diff_to_html", "diff_to_json", "diff_to_text"]


def _edge_text(e: EdgeChange) -> str:
    src = f"{e.src}:{e.slot}" if e.slot else e.src
    return f"{src} -> {e.dst}" + (" (control)" if e.control else "")


def _hist_text(h: dict[str, tuple[int, int]], limit: int = 8) -> str:
    items = [f"{k} {a}->{b}" for k, (a, b) in h.items()]
    more = f", ... {len(items) - limit} more" if len(items) > limit else ""
    return ", ".join(items[:limit]) + more


def _change_lines(ch: OpChange) -> list[str]:
    parts = []
    if ch.op:
        parts.append(f"op {ch.op[0]} -> {ch.op[1]}")
    if ch.shapes:
        parts.append(f"shapes {shapes_text(ch.shapes[0])} -> {shapes_text(ch.shapes[1])}")
    for k, (va, vb) in ch.attrs.items():
        parts.append(f"attr {k}: {_value(va)} -> {_value(vb)}")
    if ch.device:
        parts.append(f"device {ch.device[0]!r} -> {ch.device[1]!r}")
    for k, (va, vb) in ch.embeddings.items():
        parts.append(f"embedded {k}: {va or '(none)'} -> {vb or '(none)'}")
    return parts


def _value(v: str | None, limit: int = 60) -> str:
    if v is None:
        return "(none)"
    r = repr(v)
    return r if len(r) <= limit else r[: limit - 3] + "..."


def _summary_line(d: GraphDiff) -> str:
    s = d.stats
    changed = sum(1 for x in d.scopes() if x.status == "matched" and x.has_direct_changes)
    return (f"scopes: {changed} changed, {s['scopes_added']} added, {s['scopes_removed']} "
            f"removed, {s['scopes_renamed']} renamed | ops: +{s['ops_added']} "
            f"-{s['ops_removed']} ~{s['ops_changed']} ({s['ops_a']} -> {s['ops_b']}) | "
            f"edges: +{s['edges_added']} -{s['edges_removed']}")


def diff_to_text(d: GraphDiff, limit: int | None = 20) -> str:
    """A concise summary, one block per scope that differs, like a unified diff's summary.

    Markers: ``+`` added, ``-`` removed, ``~`` changed (or renamed). Names are A's for
    removed things and B's otherwise; output shapes are written ``(8, 3)``, ``?`` unknown.
    Each scope lists at most ``limit`` ops and ``limit`` edges of each kind, then says how
    many more there are (None: no limit; :func:`diff_to_json` always has everything).
    Names are untrusted: control characters in them are written as ``\\xNN`` escapes, so
    the text cannot drive a terminal or break its own lines.
    """
    if d.identical:
        return "graph diff: no differences\n"
    out = ["graph diff: " + _summary_line(d)]
    stack: list[tuple[ScopeDiff, int]] = [(d.root, 0)]
    while stack:
        s, level = stack.pop()
        ind = "  " * level
        title = s.name or "(root)"
        if s.status == "added":
            out.append(f"{ind}+ {title}/  (added scope, {s.ops[1]} ops: "
                       f"{_hist_text({k: v for k, v in s.histogram.items()})})")
            continue
        if s.status == "removed":
            out.append(f"{ind}- {title}/  (removed scope, {s.ops[0]} ops: "
                       f"{_hist_text(s.histogram)})")
            continue
        head = f"{ind}~ {title}" + ("/" if s.name else "")
        if s.renamed:
            head += f"  (renamed from {s.old_name or '(root)'}/)"
        if s.histogram:
            head += f"  ops {s.ops[0]} -> {s.ops[1]} [{_hist_text(s.histogram)}]"
        out.append(head)
        sub = ind + "    "
        _capped(out, sub, "ops", [f"+ op {op.name} ({op.op})" for op in s.added_ops], limit)
        _capped(out, sub, "ops", [f"- op {op.name} ({op.op})" for op in s.removed_ops], limit)
        _capped(out, sub, "ops",
                [f"~ op {ch.name}: " + "; ".join(_change_lines(ch)) for ch in s.changed_ops],
                limit)
        _capped(out, sub, "edges", [f"+ edge {_edge_text(e)}" for e in s.added_edges], limit)
        _capped(out, sub, "edges", [f"- edge {_edge_text(e)}" for e in s.removed_edges], limit)
        for c in reversed(s.children):
            stack.append((c, level + 1))
    return "\n".join(_printable(line) for line in out) + "\n"


def _printable(text: str) -> str:
    return "".join(
        f"\\x{ord(ch):02x}" if ord(ch) < 0x20 or 0x7F <= ord(ch) <= 0x9F else ch for ch in text
    )


def _capped(out: list[str], ind: str, what: str, lines: list[str], limit: int | None) -> None:
    shown = lines if limit is None else lines[:limit]
    out.extend(ind + line for line in shown)
    if len(lines) > len(shown):
        out.append(f"{ind}{lines[0][0]} ... and {len(lines) - len(shown)} more {what}")


def diff_to_json(d: GraphDiff) -> dict[str, Any]:
    """The diff as JSON-ready data: ``{"format": "summarylib.graph.diff", "version": 1,
    "identical", "stats", "renamed", "root": SCOPE}``, SCOPE being :class:`ScopeDiff`'s
    fields (tuples as lists), children nested."""

    def scope(s: ScopeDiff) -> dict[str, Any]:
        # Its own fields; the loop below fills "children" (scopes nest as deep as the
        # graph's names: no recursion over them).
        out: dict[str, Any] = _lists(asdict(replace(s, children=[])))
        return out

    root = scope(d.root)
    todo = [(d.root, root["children"])]
    while todo:
        s, children = todo.pop()
        for c in s.children:
            child = scope(c)
            children.append(child)
            todo.append((c, child["children"]))
    return {"format": "summarylib.graph.diff", "version": 1, "identical": d.identical,
            "stats": dict(d.stats), "renamed": dict(d.renamed), "root": root}


def _lists(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _lists(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_lists(v) for v in value]
    return value


_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.3em}.sum{margin:.5em 0 1em;color:#444}
details{margin-left:1.2em;border-left:2px solid #ddd;padding-left:.6em}
summary{cursor:pointer;padding:2px 0}
.add{color:#17692a}.add>summary,.row.add{background:#e6f7e9}
.rem{color:#a31515}.rem>summary,.row.rem{background:#fde8e8}
.chg>summary,.row.chg{background:#fff4d6}.chg{color:#222}
.row{margin:2px 0 2px 1.2em;padding:1px 6px;font-family:ui-monospace,monospace;
font-size:12.5px;white-space:pre-wrap;word-break:break-all}
.n{font-family:ui-monospace,monospace}.muted{color:#666;font-size:.9em}
.legend span{display:inline-block;padding:0 6px;margin-right:6px;border-radius:3px}
"""


def _h(text: object) -> str:
    return html.escape(str(text), quote=True)


def diff_to_html(d: GraphDiff, a: GraphView | None = None, b: GraphView | None = None,
                 *, title: str = "Graph diff", names: tuple[str, str] = ("A", "B")) -> str:
    """A self-contained HTML page of the diff: a tree of the scopes that differ, with
    counts, each expandable to its ops and edges; green added, red removed, amber changed.

    ``a`` and ``b`` (optional) add their sizes to the header; ``names`` label the two sides.
    No script, no network: ``<details>`` elements do the expanding. Everything is escaped.
    """
    sizes = ""
    if a is not None and b is not None:
        na = sum(isinstance(n, OpNode) for n in a.nodes.values())
        nb = sum(isinstance(n, OpNode) for n in b.nodes.values())
        sizes = (f" &middot; {_h(names[0])}: {na} ops, {len(a.edges)} edges &middot; "
                 f"{_h(names[1])}: {nb} ops, {len(b.edges)} edges")
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        'style-src \'unsafe-inline\'">',
        f"<title>{_h(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{_h(title)}: {_h(names[0])} &rarr; {_h(names[1])}</h1>",
        '<div class="legend"><span class="row add">added</span>'
        '<span class="row rem">removed</span><span class="row chg">changed</span></div>',
        f'<div class="sum">{_h(_summary_line(d))}{sizes}</div>',
    ]
    if d.identical:
        parts.append("<p>No differences.</p>")
    else:
        _html_scope(d.root, parts, open_=True)
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _html_scope(top: ScopeDiff, parts: list[str], open_: bool) -> None:
    """``top`` and the scopes below it as nested ``<details>``, depth first (a stack of
    scopes and closing tags, not recursion: scopes nest as deep as the graph's names)."""
    todo: list[ScopeDiff | str] = [top]
    first = True
    while todo:
        s = todo.pop()
        if isinstance(s, str):
            parts.append(s)
            continue
        children = _html_one_scope(s, parts, open_ and first)
        first = False
        if children is not None:
            todo.append("</details>")
            todo.extend(reversed(children))


def _html_one_scope(s: ScopeDiff, parts: list[str], open_: bool) -> list[ScopeDiff] | None:
    """One scope's ``<details>``: closed here when added or removed (None), else left open
    for its children (returned)."""
    title = s.name or "(root)"
    if s.status != "matched":
        cls, sign = ("add", "+") if s.status == "added" else ("rem", "-")
        n = s.ops[1] if s.status == "added" else s.ops[0]
        parts.append(f'<details class="{cls}"><summary>{sign} <span class="n">{_h(title)}/'
                     f'</span> <span class="muted">{s.status} scope, {n} ops</span>'
                     "</summary>")
        for k, (x, y) in s.histogram.items():
            parts.append(f'<div class="row {cls}">{_h(k)}: {max(x, y)}</div>')
        parts.append("</details>")
        return None
    note = []  # HTML: every untrusted part escaped here
    if s.renamed:
        note.append(f"renamed from {_h(s.old_name or '(root)')}/")
    note.append(f"ops {s.ops[0]} &rarr; {s.ops[1]}" if s.ops[0] != s.ops[1]
                else f"{s.ops[1]} ops")
    counts = [
        (len(s.added_ops), "ops added"), (len(s.removed_ops), "ops removed"),
        (len(s.changed_ops), "ops changed"), (len(s.added_edges), "edges added"),
        (len(s.removed_edges), "edges removed"),
    ]
    note.extend(f"{n} {what}" for n, what in counts if n)
    label = _h(title) + ("/" if s.name else "")
    parts.append(f'<details class="chg"{" open" if open_ else ""}><summary>~ '
                 f'<span class="n">{label}</span> <span class="muted">'
                 f"{' &middot; '.join(note)}</span></summary>")
    if s.histogram:
        parts.append(f'<div class="row chg">histogram: {_h(_hist_text(s.histogram, 50))}</div>')
    for op in s.added_ops:
        parts.append(f'<div class="row add">+ op {_h(op.name)} ({_h(op.op)})</div>')
    for op in s.removed_ops:
        parts.append(f'<div class="row rem">- op {_h(op.name)} ({_h(op.op)})</div>')
    for ch in s.changed_ops:
        parts.append(f'<div class="row chg">~ op {_h(ch.name)}: '
                     f"{_h('; '.join(_change_lines(ch)))}</div>")
    for e in s.added_edges:
        parts.append(f'<div class="row add">+ edge {_h(_edge_text(e))}</div>')
    for e in s.removed_edges:
        parts.append(f'<div class="row rem">- edge {_h(_edge_text(e))}</div>')
    return s.children
