/* summarylib graph view: the layered layout of one group, a port of layering.py and
 * layout.layout_group (keep the three in step: the same operations in the same order, so
 * that a group laid out here gets the coordinates Python gives it, up to rounding).
 *
 * Runs in the page (self.summarylibLayout) and, from the same text, in a Web Worker made
 * from a Blob URL: a message {id, spec, rankdir} answers {id, layout}. spec = {sizes:
 * [[w, h], ...] collapsed sizes of the children in order, panel: [child index, ...],
 * edges: [[v index, w index, width, label], ...] the metaedges in order}; layout is
 * layout_to_json's form for one group: {w, h, nodes: [[x, y, w, h], ...], panel,
 * chunks, edges: [[flat bend points, width, label] | null, ...]}.
 */
(function (root) {
  "use strict";
  const CHUNK = 240, NODE_SEP = 14.0, RANK_SEP = 38.0, DUMMY_W = 8.0, MAX_SPAN = 40;
  const GRID_MIN = 8, CHUNK_GAP = 60.0, PANEL_GAP = 28.0, PANEL_VGAP = 8.0, CHAR_W = 6.4;
  const MIN_EDGE_W = 0.75, MAX_EDGE_W = 12.0, MAX_EDGE_SIZE = 5e6, EDGE_EXP = 0.3;

  // Python's round(v, nd): the double's exact decimal value, ties to even. A double is an
  // exact tie at nd decimals only when v * 2^(nd + 1) is an odd integer (k / (2 * 10^nd)
  // is a double only when the power of 5 divides k); toFixed rounds the exact value too,
  // but ties away from zero.
  function pyRound(v, nd) {
    const q = v * (1 << (nd + 1));
    if (Number.isInteger(q) && q % 2 !== 0) {
      const f = Math.pow(10, nd), fl = Math.floor(v * f);
      return (fl % 2 === 0 ? fl : fl + 1) / f;
    }
    return nd ? Number(v.toFixed(nd)) : Math.round(v);
  }

  // A min-heap of ints (heapq's pops: always the smallest ready node).
  function heapPush(h, v) {
    let i = h.length;
    h.push(v);
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (h[p] <= v) break;
      h[i] = h[p]; i = p;
    }
    h[i] = v;
  }
  function heapPop(h) {
    const top = h[0], last = h.pop();
    if (h.length) {
      let i = 0;
      const n = h.length;
      for (;;) {
        let c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && h[c + 1] < h[c]) c++;
        if (h[c] >= last) break;
        h[i] = h[c]; i = c;
      }
      h[i] = last;
    }
    return top;
  }

  function acyclic(n, edges) {
    const out = [];
    for (let i = 0; i < n; i++) out.push([]);
    edges.forEach((e, i) => out[e[0]].push(i));
    const state = new Uint8Array(n);
    const back = new Array(edges.length).fill(false);
    for (let s = 0; s < n; s++) {
      if (state[s]) continue;
      state[s] = 1;
      const stack = [[s, 0]];
      while (stack.length) {
        const top = stack[stack.length - 1], v = top[0], k = top[1], ev = out[v];
        if (k < ev.length) {
          top[1] = k + 1;
          const e = ev[k], w = edges[e][1];
          if (state[w] === 1) back[e] = true;
          else if (state[w] === 0) { state[w] = 1; stack.push([w, 0]); }
        } else { state[v] = 2; stack.pop(); }
      }
    }
    const indeg = new Int32Array(n), succ = [];
    for (let i = 0; i < n; i++) succ.push([]);
    edges.forEach((e, i) => {
      let a = e[0], b = e[1];
      if (a !== b) {
        if (back[i]) { const t = a; a = b; b = t; }
        succ[a].push(b); indeg[b]++;
      }
    });
    const ready = [];
    for (let v = 0; v < n; v++) if (!indeg[v]) heapPush(ready, v);
    const order = [];
    while (ready.length) {
      const v = heapPop(ready);
      order.push(v);
      for (const w of succ[v]) if (!--indeg[w]) heapPush(ready, w);
    }
    return [back, order];
  }

  function pav(desired, weights, seps) {
    const n = desired.length, offs = new Array(n).fill(0);
    for (let i = 1; i < n; i++) offs[i] = offs[i - 1] + seps[i - 1];
    const bw = [], bs = [], bc = [];
    for (let i = 0; i < n; i++) {
      const w = weights[i];
      bw.push(w); bs.push(w * (desired[i] - offs[i])); bc.push(1);
      while (bw.length > 1) {
        const L = bw.length;
        if (!(bs[L - 2] * bw[L - 1] > bs[L - 1] * bw[L - 2])) break;
        const w2 = bw.pop(), s2 = bs.pop(), c2 = bc.pop();
        bw[L - 2] += w2; bs[L - 2] += s2; bc[L - 2] += c2;
      }
    }
    const out = [];
    let i = 0;
    for (let b = 0; b < bw.length; b++) {
      const v = bs[b] / bw[b];
      for (let c = 0; c < bc[b]; c++) { out.push(v + offs[i]); i++; }
    }
    return out;
  }

  function median(vals) {
    vals.sort((a, b) => a - b);
    const m = vals.length >> 1;
    return vals.length % 2 ? vals[m] : (vals[m - 1] + vals[m]) / 2.0;
  }

  function layered(sizes, edges) {
    const n = sizes.length;
    if (n <= 1) {
      const w = n ? sizes[0][0] : 0.0, h = n ? sizes[0][1] : 0.0;
      return { o: new Array(n).fill(w / 2.0), r: new Array(n).fill(h / 2.0),
               routes: edges.map(() => []), extent_o: w, extent_r: h, chunks: 1 };
    }
    const [back, topo] = acyclic(n, edges);
    const preds = [], succs = [];
    for (let i = 0; i < n; i++) { preds.push([]); succs.push([]); }
    const seen = new Map(); // "a,b" -> [a, b], in first-occurrence order
    edges.forEach((e, i) => {
      let a = e[0], b = e[1];
      if (a === b) return;
      if (back[i]) { const t = a; a = b; b = t; }
      const key = a * n + b;
      if (!seen.has(key)) { seen.set(key, [a, b]); preds[b].push(a); succs[a].push(b); }
    });
    const rank = new Array(n).fill(0);
    for (const v of topo) {
      if (preds[v].length) {
        let m = -Infinity;
        for (const u of preds[v]) if (rank[u] > m) m = rank[u];
        rank[v] = m + 1;
      }
    }
    for (let i = topo.length - 1; i >= 0; i--) {
      const v = topo[i];
      if (!preds[v].length && succs[v].length) {
        let m = Infinity;
        for (const s of succs[v]) if (rank[s] < m) m = rank[s];
        rank[v] = m - 1;
      }
    }
    let nranks = -Infinity;
    for (const k of rank) if (k > nranks) nranks = k;
    nranks += 1;

    const sizeO = sizes.map((s) => s[0]);
    const lrank = rank.slice();
    const up = [], down = [];
    for (let i = 0; i < n; i++) { up.push([]); down.push([]); }
    const chains = new Map();
    let budget = Math.max(2000, 8 * n);
    const pairs = Array.from(seen.values());
    pairs.sort((p, q) => (rank[p[1]] - rank[p[0]]) - (rank[q[1]] - rank[q[0]]));
    for (const [a, b] of pairs) {
      const span = rank[b] - rank[a];
      if (span <= 1 || span > MAX_SPAN || budget < span) {
        if (span === 1) { up[a].push(b); down[b].push(a); }
        continue;
      }
      budget -= span - 1;
      let prev = a;
      const chain = [];
      for (let k = rank[a] + 1; k < rank[b]; k++) {
        const d = lrank.length;
        lrank.push(k); sizeO.push(DUMMY_W); up.push([]); down.push([]);
        up[prev].push(d); down[d].push(prev); chain.push(d); prev = d;
      }
      up[prev].push(b); down[b].push(prev);
      chains.set(a * n + b, [a, chain]);
    }
    const total = lrank.length;

    const key = new Array(total).fill(0.0);
    topo.forEach((v, i) => { key[v] = i; });
    for (const [a, chain] of chains.values()) for (const d of chain) key[d] = key[a] + 0.5;
    const layers = [];
    for (let k = 0; k < nranks; k++) layers.push([]);
    for (let v = 0; v < total; v++) layers[lrank[v]].push(v);
    const pos = new Array(total).fill(0.0);
    for (const layer of layers) {
      layer.sort((a, b) => key[a] - key[b]);
      layer.forEach((v, i) => { pos[v] = i; });
    }

    function sweep(from, to, step, nb) {
      for (let r = from; r !== to; r += step) {
        const layer = layers[r];
        if (layer.length === 1) continue;
        const bary = new Map();
        for (const v of layer) {
          const ns = nb[v];
          if (ns.length) {
            let s = 0;
            for (const u of ns) s += pos[u];
            bary.set(v, s / ns.length);
          } else bary.set(v, pos[v]);
        }
        layer.sort((a, b) => bary.get(a) - bary.get(b));
        layer.forEach((v, i) => { pos[v] = i; });
      }
    }
    for (let t = 0; t < 2; t++) {
      sweep(1, nranks, 1, down);
      sweep(nranks - 2, -1, -1, up);
    }

    let o = new Array(total).fill(0.0);
    for (const layer of layers) {
      let x = 0.0;
      for (const v of layer) { o[v] = x + sizeO[v] / 2.0; x += sizeO[v] + NODE_SEP; }
    }
    function align(from, to, step, nb) {
      for (let r = from; r !== to; r += step) {
        const layer = layers[r];
        if (layer.length === 1) {
          const ns = nb[layer[0]];
          if (ns.length) o[layer[0]] = median(ns.map((u) => o[u]));
          continue;
        }
        const desired = [], weights = [];
        for (const v of layer) {
          const ns = nb[v];
          if (ns.length) {
            desired.push(median(ns.map((u) => o[u])));
            weights.push(v < n ? 1.0 : 2.0);
          } else { desired.push(o[v]); weights.push(0.05); }
        }
        const seps = [];
        for (let i = 0; i + 1 < layer.length; i++) {
          seps.push((sizeO[layer[i]] + sizeO[layer[i + 1]]) / 2.0 + NODE_SEP);
        }
        const xs = pav(desired, weights, seps);
        layer.forEach((v, i) => { o[v] = xs[i]; });
      }
    }
    for (let t = 0; t < 2; t++) {
      align(1, nranks, 1, down);
      align(nranks - 2, -1, -1, up);
    }
    let lo = Infinity, hi = -Infinity;
    for (let v = 0; v < total; v++) {
      const a = o[v] - sizeO[v] / 2.0, b = o[v] + sizeO[v] / 2.0;
      if (a < lo) lo = a;
      if (b > hi) hi = b;
    }
    o = o.map((x) => x - lo);

    const thick = new Array(nranks).fill(0.0);
    for (let v = 0; v < n; v++) thick[rank[v]] = Math.max(thick[rank[v]], sizes[v][1]);
    const centre = new Array(nranks).fill(0.0);
    let y = 0.0;
    for (let k = 0; k < nranks; k++) { centre[k] = y + thick[k] / 2.0; y += thick[k] + RANK_SEP; }
    const extentR = y - RANK_SEP;
    const r = new Array(total);
    for (let v = 0; v < total; v++) r[v] = centre[lrank[v]];

    const routes = edges.map((e, i) => {
      const a = e[0], b = e[1];
      if (a === b) return [];
      const rev = back[i];
      const c = chains.get(rev ? b * n + a : a * n + b);
      const pts = c ? c[1].map((d) => [o[d], r[d]]) : [];
      if (rev) pts.reverse();
      return pts;
    });
    return { o: o.slice(0, n), r: r.slice(0, n), routes, extent_o: hi - lo,
             extent_r: extentR, chunks: 1 };
  }

  function chunked(sizes, edges) {
    const n = sizes.length;
    const topo = acyclic(n, edges)[1];
    const nchunks = Math.ceil(n / CHUNK);
    const chunkOf = new Int32Array(n), local = new Int32Array(n), members = [];
    for (let c = 0; c < nchunks; c++) members.push([]);
    topo.forEach((v, i) => {
      const c = Math.floor(i / CHUNK);
      chunkOf[v] = c; local[v] = members[c].length; members[c].push(v);
    });
    const inner = [], innerIds = [];
    for (let c = 0; c < nchunks; c++) { inner.push([]); innerIds.push([]); }
    edges.forEach((e, i) => {
      if (chunkOf[e[0]] === chunkOf[e[1]]) {
        inner[chunkOf[e[0]]].push([local[e[0]], local[e[1]]]);
        innerIds[chunkOf[e[0]]].push(i);
      }
    });
    const parts = [];
    for (let c = 0; c < nchunks; c++) parts.push(layered(members[c].map((v) => sizes[v]), inner[c]));
    let so = 0, sr = 0;
    for (const p of parts) so += p.extent_o;
    for (const p of parts) sr += p.extent_r;
    const meanO = so / nchunks + CHUNK_GAP, meanR = sr / nchunks + CHUNK_GAP;
    const cols = Math.max(1, Math.min(nchunks, pyRound(Math.sqrt(nchunks * meanR / meanO), 0)));
    const o = new Array(n).fill(0.0), r = new Array(n).fill(0.0);
    const routes = edges.map(() => []);
    let rowR = 0.0, extentO = 0.0;
    for (let start = 0; start < nchunks; start += cols) {
      const end = Math.min(start + cols, nchunks);
      let rowO = 0.0, rowMax = -Infinity;
      for (let c = start; c < end; c++) {
        const part = parts[c];
        members[c].forEach((v, k) => { o[v] = rowO + part.o[k]; r[v] = rowR + part.r[k]; });
        innerIds[c].forEach((i, k) => {
          const ro = rowO, rr = rowR;
          routes[i] = part.routes[k].map((p) => [ro + p[0], rr + p[1]]);
        });
        rowO += part.extent_o + CHUNK_GAP;
        if (part.extent_r > rowMax) rowMax = part.extent_r;
      }
      extentO = Math.max(extentO, rowO - CHUNK_GAP);
      rowR += rowMax + CHUNK_GAP;
    }
    return { o, r, routes, extent_o: extentO, extent_r: rowR - CHUNK_GAP, chunks: nchunks };
  }

  function grid(sizes) {
    const k = sizes.length;
    let mo = -Infinity, mr = -Infinity;
    for (const s of sizes) { if (s[0] > mo) mo = s[0]; if (s[1] > mr) mr = s[1]; }
    const cellO = mo + NODE_SEP, cellR = mr + NODE_SEP;
    const cols = Math.max(1, Math.min(k, pyRound(Math.sqrt(k * cellR / cellO), 0)));
    const rows = Math.ceil(k / cols);
    const o = [], r = [];
    for (let i = 0; i < k; i++) {
      o.push((i % cols) * cellO + cellO / 2.0);
      r.push(Math.floor(i / cols) * cellR + cellR / 2.0);
    }
    return { o, r, routes: [], extent_o: cols * cellO - NODE_SEP,
             extent_r: rows * cellR - NODE_SEP, chunks: 1 };
  }

  function arrange(sizes, edges) {
    const linked = new Array(sizes.length).fill(false);
    for (const [a, b] of edges) if (a !== b) { linked[a] = true; linked[b] = true; }
    const loose = [], core = [];
    linked.forEach((x, i) => (x ? core : loose).push(i));
    if (loose.length < GRID_MIN) {
      return sizes.length <= CHUNK ? layered(sizes, edges) : chunked(sizes, edges);
    }
    const local = new Map();
    core.forEach((v, k) => local.set(v, k));
    const coreEdges = [];
    for (const [a, b] of edges) if (local.has(a) && local.has(b)) coreEdges.push([local.get(a), local.get(b)]);
    const coreSizes = core.map((i) => sizes[i]);
    const part = core.length <= CHUNK ? layered(coreSizes, coreEdges) : chunked(coreSizes, coreEdges);
    const loosePart = grid(loose.map((i) => sizes[i]));
    const shift = core.length ? part.extent_o + CHUNK_GAP : 0.0;
    const o = new Array(sizes.length).fill(0.0), r = new Array(sizes.length).fill(0.0);
    core.forEach((i, k) => { o[i] = part.o[k]; r[i] = part.r[k]; });
    loose.forEach((i, k) => { o[i] = shift + loosePart.o[k]; r[i] = loosePart.r[k]; });
    let it = 0;
    const routes = edges.map(([a, b]) => (local.has(a) && local.has(b) ? part.routes[it++] : []));
    return { o, r, routes, extent_o: shift + loosePart.extent_o,
             extent_r: Math.max(part.extent_r, loosePart.extent_r), chunks: part.chunks };
  }

  // --- layout.py: sizes, edge labels and widths, one group --------------------------------
  const codePoints = (s) => { let k = 0; for (const _ of s) k++; return k; };
  function collapsedSize(label, kind, vertical) {
    const n = codePoints(label);
    if (kind === "op") return [pyRound(Math.min(Math.max(n * CHAR_W + 18.0, 40.0), 150.0), 1), 20.0];
    const w = pyRound(Math.min(Math.max(n * CHAR_W + 26.0, 64.0), 170.0), 1);
    if (kind === "series") return vertical ? [w, 36.0] : [w + 10.0, 28.0];
    return [w, 28.0];
  }
  const dim = (d) => (d === null || d === undefined || d < 0 ? "?" : String(d));
  function shapeText(s) {
    if (s === null || s === undefined) return "?";
    if (s.length === 0) return "scalar";
    return s.map(dim).join("\u00d7");
  }
  function edgeLabel(shapes) {
    if (shapes.length === 1) return shapeText(shapes[0]);
    return shapes.length ? shapes.length + " tensors" : "";
  }
  function edgeWidth(size) {
    const s = Math.min(Math.max(size, 1.0), MAX_EDGE_SIZE);
    const t = (Math.pow(s, EDGE_EXP) - 1.0) / (Math.pow(MAX_EDGE_SIZE, EDGE_EXP) - 1.0);
    return pyRound(MIN_EDGE_W + (MAX_EDGE_W - MIN_EDGE_W) * t, 2);
  }

  function layoutSpec(spec, rankdir) {
    const nkids = spec.sizes.length, inPanel = new Set(spec.panel), main = [];
    for (let i = 0; i < nkids; i++) if (!inPanel.has(i)) main.push(i);
    const index = new Map();
    main.forEach((c, i) => index.set(c, i));
    const across = rankdir === "TB" || rankdir === "BT";
    const sizes = main.map((c) => (across ? spec.sizes[c] : [spec.sizes[c][1], spec.sizes[c][0]]));
    const ids = [], pairs = [];
    spec.edges.forEach((e, i) => {
      const a = index.get(e[0]), b = index.get(e[1]);
      if (a !== undefined && b !== undefined) { ids.push(i); pairs.push([a, b]); }
    });
    const lay = arrange(sizes, pairs);
    const toXY = (o, r) => (rankdir === "TB" ? [o, r] : rankdir === "BT" ? [o, lay.extent_r - r]
      : rankdir === "LR" ? [r, o] : [lay.extent_r - r, o]);
    const width = across ? lay.extent_o : lay.extent_r;
    const height = across ? lay.extent_r : lay.extent_o;
    const nodes = new Array(nkids);
    main.forEach((c, k) => {
      const xy = toXY(lay.o[k], lay.r[k]);
      nodes[c] = [pyRound(xy[0], 1), pyRound(xy[1], 1), spec.sizes[c][0], spec.sizes[c][1]];
    });
    let py = 0.0;
    for (const c of spec.panel) {
      const w = spec.sizes[c][0], h = spec.sizes[c][1];
      nodes[c] = [pyRound(width + PANEL_GAP + w / 2.0, 1), pyRound(py + h / 2.0, 1), w, h];
      py += h + PANEL_VGAP;
    }
    const edges = new Array(spec.edges.length).fill(null);
    ids.forEach((i, k) => {
      const flat = [];
      for (const p of lay.routes[k]) {
        const xy = toXY(p[0], p[1]);
        flat.push(pyRound(xy[0], 1), pyRound(xy[1], 1));
      }
      edges[i] = [flat, spec.edges[i][2], spec.edges[i][3]];
    });
    return { w: pyRound(width, 1), h: pyRound(height, 1), nodes, panel: spec.panel.slice(),
             chunks: lay.chunks, edges };
  }

  const api = { layoutSpec, arrange, collapsedSize, edgeLabel, edgeWidth, shapeText, pyRound };
  root.summarylibLayout = api;
  if (typeof document === "undefined" && typeof root.postMessage === "function") {
    // In a worker: lay out what the page asks for, one message per group.
    root.onmessage = (ev) => {
      const m = ev.data;
      let layout = null, error = null;
      try { layout = layoutSpec(m.spec, m.rankdir); } catch (e) { error = String(e); }
      root.postMessage({ id: m.id, layout, error });
    };
  }
})(self);
