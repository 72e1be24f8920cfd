"""A second reader of the HTML page's data (``page_data.view_to_page_data``), for tests.

``read_page_data`` follows the rules of page_data's docstring, independently of the
page's JavaScript, and gives each node as ``view_to_json`` writes it (a group's children
as names), which ``json_records`` gives from the view itself.
"""

from __future__ import annotations

import base64
import json
import re
import zlib
from typing import Any

import numpy as np

from summarylib.graph.view import GraphView, view_to_json

__all__ = ["blob_columns", "html_page_data", "json_records", "read_head", "read_page_data",
           "split_text"]


def json_records(view: GraphView) -> dict[str, dict[str, Any]]:
    """``view_to_json(view)``'s records by name, a group's children as their names."""
    out: dict[str, dict[str, Any]] = {}
    todo = [view_to_json(view)["root"]]
    while todo:
        rec = todo.pop()
        if rec["kind"] != "op":
            todo.extend(rec["children"])
            rec = dict(rec, children=[c["name"] for c in rec["children"]])
        out[rec["name"]] = rec
    return out


def html_page_data(html: str) -> dict[str, Any]:
    """The page data (``view_to_page_data``'s dict) that the HTML page ``html`` carries:
    its ``graph-data`` block's graph with the blobs of the blocks after the scripts."""
    block = re.search(r'<script type="application/json" id="graph-data">(.*?)</script>', html,
                      re.S)
    assert block is not None
    data: dict[str, Any] = json.loads(block.group(1))["graph"]
    for key in ("near", "blob", "chunks", "later"):
        found = re.search(rf'<script type="application/octet-stream" id="graph-{key}">'
                          r"([A-Za-z0-9+/=]*)</script>", html)
        assert found is not None, key
        data[key] = found.group(1)
    return data


def read_head(data: dict[str, Any]) -> dict[str, Any]:
    """The page data's head, by page_data's docstring, as the whole columns and tables
    it stands for: ``{"columns": {name: values}, "strings" | "shapes" | "attrs": {index:
    entry}, "names" | "panels" | "series" | "xla": rows}``."""
    head = data["head"]
    assert set(head["dtypes"]) == set(head["columns"])
    return {"rows": head["rows"], "columns": head["columns"],
            **{k: {i: v for i, v in head[k]} for k in ("strings", "shapes", "attrs")},
            **{k: head[k] for k in ("names", "panels", "series", "xla")}}


def blob_columns(data: dict[str, Any]) -> tuple[dict[str, Any], dict[str, list[Any]]]:
    """The tables and the columns (as lists) of the page data's blobs."""
    raws = [zlib.decompress(base64.b64decode(data[key])) for key in ("blob", "later")]
    tb = json.loads(raws[0][:data["tables_bytes"]])
    c = {k: np.frombuffer(raws[part], np.dtype(t).newbyteorder("<"), n, off).tolist()
         for k, (t, off, n, part) in data["columns"].items()}
    # The chunked columns: chunk k holds node rows k * chunk_rows on and the metaedge
    # rows [me_lo, me_hi) of those nodes, its columns one after the other, each aligned
    # to 8 bytes.
    rows, nodes = data["chunk_rows"], data["nodes"]
    chunked: dict[str, list[Any]] = {k: [] for k in data["chunk_columns"]}
    assert len(data["chunk_index"]) == -(-nodes // rows)
    for k, (me_lo, me_hi, start, length) in enumerate(data["chunk_index"]):
        raw = zlib.decompress(base64.b64decode(data["chunks"][start:start + length]))
        off = 0
        for name, (t, what) in data["chunk_columns"].items():
            dt = np.dtype(t).newbyteorder("<")
            off += -off % 8
            n = me_hi - me_lo if what == "me" else min(nodes, (k + 1) * rows) - k * rows
            chunked[name].extend(np.frombuffer(raw, dt, n, off).tolist())
            off += n * dt.itemsize
        assert off == len(raw)
    assert not set(chunked) & set(c)
    c.update(chunked)
    later = json.loads(raws[1][:data["later_bytes"]])
    assert len(c["str_len"]) >= data["strings_first"]
    tb["strings"] = split_text(tb.pop("text") + later["text"], c.pop("str_len"))
    return tb, c


def split_text(text: str, lengths: list[int]) -> list[str]:
    """The strings of a page's string text: ``text`` cut at ``lengths``, counted in UTF-16
    code units (as JavaScript slices it)."""
    units = text.encode("utf-16-le", "surrogatepass")
    out, at = [], 0
    for n in lengths:
        out.append(units[2 * at:2 * (at + n)].decode("utf-16-le", "surrogatepass"))
        at += n
    assert 2 * at == len(units)
    return out


def read_page_data(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The nodes of ``view_to_page_data``'s dict as ``view_to_json`` records (children as
    names), read by the rules of page_data's docstring: a second reader of the format."""
    tb, c = blob_columns(data)
    n, strs, shapes = data["nodes"], tb["strings"], tb["shapes"]
    first, parent, base = [0] * n, [-1] * n, [0] * n
    nxt = 1
    for i in range(n):
        first[i] = nxt
        for j in range(nxt, nxt + c["nchild"][i]):
            parent[j] = i
            base[j] = base[i] if c["kind"][i] & 3 == 2 else i
        nxt += c["nchild"][i]
    exc = dict(map(tuple, tb["names"]))
    names = [""] * n
    for i in range(1, n):
        label = strs[c["label"][i]]
        names[i] = exc.get(i, label if base[i] == 0 else names[base[i]] + "/" + label)

    def offsets(key: str) -> list[int]:
        out = [0]
        for k in c[key]:
            out.append(out[-1] + k)
        return out

    me, hist, dev = offsets("nme"), offsets("nhist"), offsets("ndev")
    end = [names[x] if x >= 0 else tb["extra"][-1 - x] for x in c["e_src"]]
    inputs: dict[int, list[dict[str, Any]]] = {}
    for e, dst in enumerate(c["e_dst"]):
        inputs.setdefault(dst, []).append({"name": end[e], "slot": c["e_slot"][e],
                                           "control": bool(c["e_flags"][e] & 1)})
    embs: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for k, host in enumerate(c["emb_host"]):
        f = c["emb_flags"][k]
        scope = names[host][:names[host].rfind("/") + 1] if f & 2 else ""
        embs.setdefault((host, f & 1), []).append({
            "name": scope + strs[c["emb_name"][k]], "op": strs[c["emb_op"][k]],
            "shapes": shapes[c["emb_shapes"][k]]})
    time = c.get("time")
    xla, series = dict(map(tuple, tb["xla"])), dict(map(tuple, tb["series"]))
    panels = {i: {"in": a, "out": b} for i, a, b in tb["panels"]}
    out = {}
    for i in range(n):
        rec: dict[str, Any] = {"name": names[i], "label": names[i][names[i].rfind("/") + 1:]}
        kind = c["kind"][i] & 3
        if kind == 0:
            t = None if time is None or time[i] != time[i] else time[i]
            rec.update(kind="op", op=strs[c["type"][i]],
                       device=strs[c["device"][i]] if c["device"][i] >= 0 else "",
                       attrs=tb["attrs"][c["attrs"][i]] if c["attrs"][i] >= 0 else {},
                       shapes=shapes[c["shapes"][i]], inputs=inputs.get(i, []),
                       in_embeddings=embs.get((i, 0), []), out_embeddings=embs.get((i, 1), []),
                       xla_cluster=xla.get(i), compute_time_us=t)
        else:
            f = first[i]
            tpl = c["template"][i]
            rec.update(
                kind="meta" if kind == 1 else "series", depth=c["depth"][i],
                cardinality=c["card"][i],
                op_histogram={strs[c["hist_key"][k]]: c["hist_val"][k]
                              for k in range(hist[i], hist[i + 1])},
                device_histogram={strs[c["dev_key"][k]]: c["dev_val"][k]
                                  for k in range(dev[i], dev[i + 1])},
                template=data["templates"][tpl][0] if tpl >= 0 else None,
                series=None if kind == 1 else {
                    "op": strs[c["type"][i]] if c["type"][i] >= 0 else None,
                    "ids": series.get(i, []), "vertical": bool(c["kind"][i] & 4)},
                side_panel=panels.get(i, {"in": [], "out": []}),
                children=names[f:f + c["nchild"][i]],
                metaedges=[{"v": names[f + c["me_v"][k]], "w": names[f + c["me_w"][k]],
                            "regular": c["me_reg"][k], "control": c["me_ctl"][k],
                            "ref": c["me_ref"][k], "size": c["me_size"][k],
                            "shapes": shapes[c["me_shapes"][k]]}
                           for k in range(me[i], me[i + 1])])
        out[names[i]] = rec
    return out
