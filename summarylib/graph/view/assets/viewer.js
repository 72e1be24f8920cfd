/* summarylib graph view: draws the JSON embedded in the page (id "graph-data").
 *
 * Data: {title, colour, graph: page_data.view_to_page_data(...) but its blobs,
 * constants} (an optional layout: {group: {w, h, nodes, panel, edges, chunks}} is used as
 * given); the blobs (base64) in the blocks "graph-near", "graph-blob", "graph-chunks" and
 * "graph-later" after the scripts, so that the browser parses them after the first
 * drawing. The top level is drawn from the data's head (its rows of the columns, plain
 * JSON) as this script runs; the near part (the first levels of the tree), the tree (the
 * first blob), the chunks of the other columns and the edges are inflated once
 * (DecompressionStream; all but the near part in a worker made from a Blob URL of this
 * script's inflating functions, started as it runs), each as soon as its block is
 * parsed; groups of the first levels open from the near part before the rest is here,
 * and a click on a deeper one waits for the chunks it needs, which go first. Nodes become objects only when they are
 * shown or asked for by name. A group of more than RANGE children is drawn as
 * ranges of RANGE children, groups of the page only. A group is laid out when it is
 * first opened, by layout.js (the port of layout.layout_group): in the page up to
 * WORKER_MIN children, else in a Web Worker made from a Blob URL of layout.js's text; an
 * expand or reveal that needs the worker completes when it answers (pending() counts the
 * layouts asked and not answered). Each group's layout places its children collapsed; place() composes
 * expanded groups exactly like layout.compose in Python (keep the two in step): an expanded
 * child is bigger than its collapsed box, so room is inserted along x and y where it
 * stands, and nothing else moves relative to its neighbours.
 *
 * Only the root and the expanded groups are drawn. A parent's metaedge into an open group
 * stops at its frame and goes on as "bridge" segments to the ops' visible boxes inside
 * (at most 4 per metaedge, TensorBoard's maxBridgePathDegree), the only drawing not
 * mirrored in Python.
 *
 * Every string from the graph goes into the page through textContent or setAttribute
 * (never markup), and names are keys of Maps, never of plain objects (a node may be called
 * "__proto__").
 *
 * window.summarylibViewer (for tests and notebooks): timing {scriptStart, head (the head
 * decoded; null without one), near (the near part decoded; null without one), rendered
 * (the top level drawn), inflated (the first blob), tree (decoded: names, search), parsed
 * (every chunk decoded), later (the second blob decoded), frame (a frame after both)} in
 * ms since navigation start; expand(name), collapse(name), reveal(name) (until the node's
 * row, and for expand and collapse its children's rows and metaedges, for reveal those of
 * the groups above it, are decoded: the head's or the near part's, else the chunks', these
 * three wait for them, in the order asked, and the chunks they wait for are inflated
 * first; until every chunk is decoded, layoutOf but the root's, nodeInfo and nodeData
 * answer null), zoomTo(name), setColour(mode), expanded() -> [names], boxes() ->
 * [[name, [x, y, w, h]], ...] (centre-based, layout pixels, the root as ""), pending(),
 * layoutOf(name) (a group's layout in layout_to_json's form, made now if needed; a big
 * group's of its ranges, as layout.layout_view's), nodeData(name) (view_to_json's record
 * of a node, its children as names).
 * Plugins (the page's other scripts) use registerNodeStyle(fn) (fn(name) -> {fill?,
 * title?} or null, asked whenever a node is drawn), redraw() (the styles again, on the
 * nodes drawn), svgElement(),
 * onSelect(cb) (cb(name) on a click or search pick), nodeInfo(name) -> {id, path, kind:
 * op|group|series, children?} and addPanel(title, element) (a box at the top left).
 */
(function () {
  "use strict";
  const T0 = performance.now();
  const SVGNS = "http://www.w3.org/2000/svg";
  const data = JSON.parse(document.getElementById("graph-data").textContent);
  let T_PARSED = performance.now();
  const timing = { scriptStart: T0, head: null, parsed: T_PARSED, near: null, inflated: null, tree: null,
    rendered: null, later: null, frame: null };
  const K = data.constants;
  const GD = data.graph; // page_data.view_to_page_data: a header and the compressed columns
  const RANKDIR = (GD.options && GD.options.rankdir) || "BT";
  // Group layouts, made when a group is first opened (layout.js, the port of layout.py):
  // small groups here at once, big ones in a Web Worker so that the page never freezes.
  const LAYOUT = new Map();
  if (data.layout) for (const k of Object.keys(data.layout)) LAYOUT.set(k, data.layout[k]);
  const LAYOUT_JS = self.summarylibLayout;
  const WORKER_MIN = 240; // more children than one layered layout handles: chunked, slow

  // --- the compact graph: columns decoded once, objects only for nodes that are shown -------
  // Nodes are numbered breadth-first (root 0): a group's children are consecutive, from
  // FIRST[g], and every parent comes before its children (page_data.py).
  let C = null, TB = null, N = 0;
  let STR = null; // STR(k): entry k of the string table
  let STR0 = null; // the same for the first entries only: the first blob's (labels among them)
  let PARENT_IX = null, FIRST = null, BASE = null, ME_OFF = null, HIST_OFF = null, DEV_OFF = null;
  let EMB_OFF = null;
  const NAME_OF = []; // node index -> full name, made on demand
  const NAME_IX = new Map([["", 0]]); // full name -> node index, for the names resolved
  const OBJ = new Map(); // node index -> its object
  let NAME_EXC = null, EXC_IX = null, EXTRA = null, PANELS = null, SERIES = null, XLA = null;
  const ARRAYS = { uint8: Uint8Array, int8: Int8Array, uint16: Uint16Array, int16: Int16Array,
    int32: Int32Array, float64: Float64Array };
  function offsets(counts) {
    const off = new Int32Array(counts.length + 1);
    for (let i = 0; i < counts.length; i++) off[i + 1] = off[i] + counts[i];
    return off;
  }
  async function inflateText(b64) {
    // base64 of zlib -> the bytes (an ArrayBuffer). Also the inflating worker's code.
    let bytes;
    if (typeof Uint8Array.fromBase64 === "function") bytes = Uint8Array.fromBase64(b64);
    else {
      const s = atob(b64);
      bytes = new Uint8Array(s.length);
      for (let i = 0; i < s.length; i++) bytes[i] = s.charCodeAt(i);
    }
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("deflate"));
    return new Response(stream).arrayBuffer();
  }
  function treeArrays(nchild, kind, nme) {
    // Parents, first children and name bases of the nodes of these rows, and where each
    // one's metaedges start. Also the inflating worker's code (for the first blob).
    const rows = nchild.length, parent = new Int32Array(rows), first = new Int32Array(rows);
    const base = new Int32Array(rows), meOff = new Int32Array(rows + 1);
    if (rows) parent[0] = -1;
    let next = 1;
    for (let i = 0; i < rows; i++) {
      const k = nchild[i];
      first[i] = next;
      // Members of a series are named in the series' scope (its own base).
      const b = (kind[i] & 3) === 2 ? base[i] : i;
      for (let j = next, e = Math.min(next + k, rows); j < e; j++) { parent[j] = i; base[j] = b; }
      next += k;
      meOff[i + 1] = meOff[i] + nme[i];
    }
    return { parent, first, base, meOff };
  }
  function inflaterMain() {
    // The inflating worker: {id, b64, tree?} -> {id, buf, tree?} (transferred) or {id,
    // error}; tree: [typed array name, byte offset, length] of the columns nchild, kind
    // and nme in the bytes, whose treeArrays it sends too (off the page's thread).
    self.onmessage = (ev) => {
      const m = ev.data;
      inflateText(m.b64).then((buf) => {
        const out = { id: m.id, buf: buf }, moved = [buf];
        if (m.tree) {
          const [nchild, kind, nme] = m.tree.map(([type, off, len]) => new self[type](buf, off, len));
          out.tree = treeArrays(nchild, kind, nme);
          for (const k of Object.keys(out.tree)) moved.push(out.tree[k].buffer);
        }
        self.postMessage(out, moved);
      }, (e) => self.postMessage({ id: m.id, error: String(e) }));
    };
  }
  // The blobs are inflated in a worker (a Blob URL of the functions above), so that
  // the page can be panned and zoomed meanwhile; here when no worker can start (the
  // bytes are the same either way).
  let inflater = null, inflateSeq = 0;
  const INFLATING = new Map(); // request id -> [b64, resolve, reject]
  let TREE = null; // the worker's treeArrays of the first blob
  function inflateAside(b64, tree) {
    startInflater();
    if (!inflater) return inflateText(b64);
    return new Promise((done, failed) => {
      const id = ++inflateSeq;
      INFLATING.set(id, [b64, done, failed]);
      inflater.postMessage({ id: id, b64: b64, tree: tree });
    });
  }
  function startInflater() {
    // (Started as the script runs: a worker takes a while to start while the page is
    // parsed, and the first blob should not wait for it.)
    if (inflater === null) {
      inflater = false;
      try {
        const code = "\"use strict\";\nconst inflateText = " + inflateText.toString() +
          ";\nconst treeArrays = " + treeArrays.toString() + ";\n(" + inflaterMain.toString() + ")();\n";
        inflater = new Worker(URL.createObjectURL(new Blob([code], { type: "text/javascript" })));
        inflater.onmessage = (ev) => {
          const m = ev.data, w = INFLATING.get(m.id);
          if (!w) return;
          INFLATING.delete(m.id);
          if (m.tree) TREE = m.tree;
          if (m.error === undefined) w[1](m.buf); else w[2](new Error(m.error));
        };
        inflater.onerror = (ev) => {
          // A worker that cannot start (a policy forbidding Blob URLs): inflate here.
          if (ev && ev.preventDefault) ev.preventDefault();
          inflater = false;
          const waiting = Array.from(INFLATING.values());
          INFLATING.clear();
          for (const [text, done, failed] of waiting) inflateText(text).then(done, failed);
        };
      } catch (e) {
        inflater = false; // no workers: inflate here
      }
    }
  }
  function blockText(key) {
    // Block ``key`` of the data: base64 (page_data.py), in its own block after the
    // scripts (html_export.py), read once the parser has gone past it.
    let b64 = GD[key];
    GD[key] = null;
    if (typeof b64 !== "string") {
      const block = document.getElementById("graph-" + key);
      b64 = block.textContent;
      block.remove();
    }
    return b64;
  }
  async function inflate(key, here, tree) {
    // Blob ``key`` of the data (zlib), inflated in the page when ``here`` (a small one:
    // a worker takes a while to start while the page is parsed), else in the worker
    // (which makes the tree's arrays too when asked: ``tree``, for inflateAside).
    const b64 = blockText(key);
    return here ? inflateText(b64) : inflateAside(b64, tree);
  }
  function columns(buf, part) {
    for (const k of Object.keys(GD.columns)) {
      const [dtype, off, len, p] = GD.columns[k];
      if (p === part) C[k] = new ARRAYS[dtype](buf, off, len);
    }
  }
  // The second blob (edges, embeddings, histograms): inflated while the top level is
  // drawn; what needs it waits (LATER.then) or shows without it until it is here.
  let LATER = null, LATER_READY = false;
  async function decodeLater(buf) {
    const b = await buf, first = GD.strings_first;
    columns(b, 1);
    const rest = stringTable(JSON.parse(new TextDecoder().decode(new Uint8Array(b, 0, GD.later_bytes))).text,
      C.str_len.subarray(first));
    STR = (k) => (k < first ? STR0(k) : rest(k - first));
    HIST_OFF = offsets(C.nhist);
    DEV_OFF = offsets(C.ndev);
    EMB_OFF = new Int32Array(N + 1);
    const host = C.emb_host;
    for (let e = 0; e < host.length; e++) EMB_OFF[host[e] + 1]++;
    for (let i = 0; i < N; i++) EMB_OFF[i + 1] += EMB_OFF[i];
    LATER_READY = true;
  }
  function tree(made) {
    // Parents, first children and name bases of the rows of the node columns (``made``
    // by the worker, else here), and the tables keyed by node.
    const t = made || treeArrays(C.nchild, C.kind, C.nme);
    PARENT_IX = t.parent;
    FIRST = t.first;
    BASE = t.base;
    ME_OFF = t.meOff;
    NAME_EXC = new Map(TB.names);
    EXC_IX = new Map(TB.names.map(([i, nm]) => [nm, i]));
    EXTRA = new Set(TB.extra);
    PANELS = new Map(TB.panels.map(([i, a, b]) => [i, { in: a, out: b }]));
    SERIES = new Map(TB.series);
    XLA = new Map(TB.xla);
    NAME_OF[0] = "";
  }
  // The head and the near part (page_data.py): the first rows of the columns (the top
  // level's in the head; the first levels of the tree in the near part) and the table
  // entries they point to, with the blob's indices, so that the top level is drawn, and
  // the groups of the first levels open, before the blobs are read; decode() then swaps
  // in the whole columns (FULL). ROWS: the rows of the node columns here; OPEN: the
  // first OPEN nodes have their children and metaedges here (so groups among them open).
  // SKEL: the first blob is decoded (every node's kind, children, label and metaedge
  // count: names and search need no more), with the other columns whole but filled only
  // for the rows of the chunks decoded (HAVE[k]; page_data.py's chunks) and the rows
  // the near part or head had; a click asks for the chunks it waits for first (want()).
  let FULL = false, ROWS = 0, OPEN = 0, SKEL = false, HAVE = null;
  function stringTable(text, lengths) {
    // page_data's strings: one text, cut at the lengths (UTF-16 code units) of its entries.
    const off = offsets(lengths), str = (k) => text.slice(off[k], off[k + 1]);
    str.text = text;
    str.off = off;
    return str;
  }
  function decodePart(cols, tb, rows, open) {
    const sparse = (pairs) => { const a = []; for (const [k, v] of pairs) a[k] = v; return a; };
    C = cols;
    if (tb.strings) { const a = sparse(tb.strings); STR = (k) => a[k]; } else STR = STR0 = stringTable(tb.text, C.str_len);
    TB = { shapes: sparse(tb.shapes), attrs: sparse(tb.attrs), names: tb.names, extra: [],
      panels: tb.panels, series: tb.series, xla: tb.xla };
    N = GD.nodes;
    tree(null);
    ROWS = rows;
    OPEN = open;
  }
  function decodeHead(h) {
    const cols = {};
    for (const k of Object.keys(h.columns)) cols[k] = ARRAYS[h.dtypes[k]].from(h.columns[k]);
    decodePart(cols, h, h.rows, 1);
  }
  async function decodeNear(blob) {
    const buf = await blob, ix = GD.near_index;
    if (SKEL) return false; // (the first blob came first)
    const tb = JSON.parse(new TextDecoder().decode(new Uint8Array(buf, 0, ix.tables_bytes)));
    const cols = {};
    for (const k of Object.keys(ix.columns)) {
      const [dtype, off, len] = ix.columns[k];
      cols[k] = new ARRAYS[dtype](buf, off, len);
    }
    decodePart(cols, tb, ix.rows, ix.groups);
    return true;
  }
  async function decode(blob) {
    // The first blob: the tree and the tables. The chunked columns are made whole here,
    // with the rows the near part (or the head) had; decodeChunk fills in the others.
    const buf = await blob;
    timing.inflated = performance.now();
    const tb = JSON.parse(new TextDecoder().decode(new Uint8Array(buf, 0, GD.tables_bytes)));
    // (A frame may come between: a click answered from the near part is drawn.)
    await new Promise((done) => setTimeout(done, 0));
    TB = tb;
    const part = C;
    C = {};
    columns(buf, 0);
    N = GD.nodes;
    const ix = GD.chunk_index, edges = ix.length ? ix[ix.length - 1][1] : 0;
    for (const k of Object.keys(GD.chunk_columns)) {
      const [dtype, what] = GD.chunk_columns[k];
      C[k] = new ARRAYS[dtype](what === "me" ? edges : N);
      if (k === "time") C[k].fill(NaN);
      if (part && part[k]) C[k].set(part[k]);
    }
    // The strings of the first blob; the others come with the second (decodeLater).
    STR = STR0 = stringTable(TB.text, C.str_len.subarray(0, GD.strings_first));
    TB.text = null;
    tree(TREE && TREE.first.length === N ? TREE : null);
    TREE = null;
    HAVE = new Uint8Array(ix.length);
    SKEL = true;
  }
  function decodeChunk(k, buf) {
    // Chunk k (page_data.py): node rows k * chunk_rows on and their metaedges, the
    // columns one after the other, each aligned to 8 bytes.
    const R = GD.chunk_rows, [meLo, meHi] = GD.chunk_index[k], lo = k * R, hi = Math.min(N, lo + R);
    let off = 0;
    for (const name of Object.keys(GD.chunk_columns)) {
      const [dtype, what] = GD.chunk_columns[name], A = ARRAYS[dtype];
      off += (8 - (off % 8)) % 8;
      const n = what === "me" ? meHi - meLo : hi - lo;
      C[name].set(new A(buf, off, n), what === "me" ? meLo : lo);
      off += n * A.BYTES_PER_ELEMENT;
    }
    HAVE[k] = 1;
  }
  // The chunks: inflated in the worker, one or two at a time (so that one a click asks
  // for jumps the queue), in row order otherwise.
  let CHUNK_TEXT = null, CHUNK_QUEUE = [], CHUNKS_LEFT = 0, CHUNKS_FLYING = 0, CHUNKS_DONE = null;
  function readChunks(text) {
    CHUNK_TEXT = text;
    CHUNK_QUEUE = GD.chunk_index.map((_, k) => k);
    CHUNKS_LEFT = CHUNK_QUEUE.length;
    return new Promise((done, failed) => {
      CHUNKS_DONE = [done, failed];
      if (!CHUNKS_LEFT) done();
      runWaiting(); // (what waits asks for its chunks: they go first)
      pumpChunks();
    });
  }
  function pumpChunks() {
    while (CHUNK_TEXT !== null && CHUNKS_FLYING < 2 && CHUNK_QUEUE.length) {
      const k = CHUNK_QUEUE.shift(), [, , start, length] = GD.chunk_index[k];
      CHUNKS_FLYING++;
      inflateAside(CHUNK_TEXT.slice(start, start + length)).then((buf) => {
        CHUNKS_FLYING--;
        decodeChunk(k, buf);
        if (--CHUNKS_LEFT === 0) { CHUNK_TEXT = null; CHUNKS_DONE[0](); return; }
        runWaiting();
        pumpChunks();
      }, (e) => {
        // (The page says it could not read its graph; the other chunks are still read.)
        CHUNKS_FLYING--;
        CHUNKS_DONE[1](e);
        pumpChunks();
      });
    }
  }
  function want(k) {
    // Chunk k is waited for: it is inflated next.
    const at = CHUNK_QUEUE.indexOf(k);
    if (at > 0) { CHUNK_QUEUE.splice(at, 1); CHUNK_QUEUE.unshift(k); }
  }
  function rowsHere(lo, hi) {
    // Rows [lo, hi) of every column but the second blob's are here (asking for the
    // chunks that hold those not here).
    if (FULL || hi <= ROWS) return true;
    if (!SKEL) return false;
    const R = GD.chunk_rows;
    let ok = true;
    for (let k = Math.floor(Math.max(lo, ROWS) / R); k * R < hi; k++) if (!HAVE[k]) { want(k); ok = false; }
    return ok;
  }
  function finishChunks() {
    FULL = true;
    ROWS = OPEN = N;
  }
  const kindOf = (i) => (i < N ? C.kind[i] & 3 : 1); // 0 op, 1 metanode, 2 series
  const KIND_NAMES = ["op", "meta", "series"];
  function nameOf(i) {
    if (i >= N) return VIRT[i - N].name;
    let s = NAME_OF[i];
    if (s !== undefined) return s;
    const path = [];
    let j = i;
    while (NAME_OF[j] === undefined) { path.push(j); j = BASE[j]; }
    let prefix = NAME_OF[j];
    for (let k = path.length - 1; k >= 0; k--) {
      const m = path[k], ex = NAME_EXC.get(m);
      s = ex !== undefined ? ex : prefix ? prefix + "/" + STR(C.label[m]) : STR(C.label[m]);
      NAME_OF[m] = s;
      prefix = s;
    }
    return s;
  }
  function descend(name, start) {
    // The node called name under start (depth first through the groups whose names
    // prefix it, and every series: its members are named in its scope), or -1. Before
    // the whole graph is here, through the groups whose children are (the first OPEN).
    const stack = [start];
    while (stack.length) {
      const g = stack.pop(), f = FIRST[g], n = C.nchild[g];
      for (let j = f; j < f + n; j++) {
        const nm = nameOf(j);
        if (nm === name) return j;
        const kd = kindOf(j);
        if ((SKEL || j < OPEN) && (kd === 2 || (kd === 1 && name.startsWith(nm + "/")))) stack.push(j);
      }
    }
    return -1;
  }
  let ALL_IX = null; // the last resort: every name (built once, on a miss)
  function indexOf(name) {
    if (typeof name !== "string" || !C) return -1;
    let k = NAME_IX.get(name);
    if (k !== undefined) return k;
    if (EXTRA.has(name)) return -1;
    k = descend(name, 0);
    if (k < 0) {
      // Names that do not extend their group's (page_data's "names") and what is below.
      for (const [nm, i] of EXC_IX) {
        if (nm === name) { k = i; break; }
        if (kindOf(i) && (SKEL || i < OPEN) && name.startsWith(nm + "/") && (k = descend(name, i)) >= 0) break;
      }
    }
    if (k < 0 && !SKEL) return -1; // (perhaps in the rest of the graph)
    if (k < 0) {
      if (!ALL_IX) {
        ALL_IX = new Map();
        for (let i = 0; i < N; i++) ALL_IX.set(nameOf(i), i);
      }
      const a = ALL_IX.get(name);
      k = a === undefined ? -1 : a;
    }
    if (k >= 0) NAME_IX.set(name, k);
    return k;
  }
  const shapesAt = (k) => (k >= 0 ? TB.shapes[k] : []);
  function histogram(keys, vals, off, i) {
    // Keys are graph strings: a map without a prototype ("__proto__" is a plain key).
    const h = Object.create(null);
    if (!LATER_READY) return h;
    for (let k = off[i]; k < off[i + 1]; k++) h[STR(keys[k])] = vals[k];
    return h;
  }
  function endName(x) { return x >= 0 ? nameOf(x) : TB.extra[-1 - x]; }
  let IN_OFF = null, IN_E = null, OUT_OFF = null, OUT_E = null;
  function edgeIndexes() {
    // Base edges by destination and by source (each in the view's edge order); false
    // while the second blob is not here.
    if (IN_OFF) return true;
    if (!LATER_READY) return false;
    const src = C.e_src, dst = C.e_dst, E = src.length;
    IN_OFF = new Int32Array(N + 1);
    OUT_OFF = new Int32Array(N + 1);
    for (let e = 0; e < E; e++) {
      if (dst[e] >= 0) IN_OFF[dst[e] + 1]++;
      if (src[e] >= 0) OUT_OFF[src[e] + 1]++;
    }
    for (let i = 0; i < N; i++) { IN_OFF[i + 1] += IN_OFF[i]; OUT_OFF[i + 1] += OUT_OFF[i]; }
    IN_E = new Int32Array(IN_OFF[N]);
    OUT_E = new Int32Array(OUT_OFF[N]);
    const ci = IN_OFF.slice(0, N), co = OUT_OFF.slice(0, N);
    for (let e = 0; e < E; e++) {
      if (dst[e] >= 0) IN_E[ci[dst[e]]++] = e;
      if (src[e] >= 0) OUT_E[co[src[e]]++] = e;
    }
    return true;
  }
  function embeddings(i, out) {
    const l = [], cut = nameOf(i).lastIndexOf("/"), scope = cut >= 0 ? nameOf(i).slice(0, cut + 1) : "";
    if (!LATER_READY) return l;
    for (let k = EMB_OFF[i]; k < EMB_OFF[i + 1]; k++) {
      const f = C.emb_flags[k];
      if (!!(f & 1) !== out) continue;
      l.push({ name: (f & 2 ? scope : "") + STR(C.emb_name[k]), op: STR(C.emb_op[k]),
        shapes: shapesAt(C.emb_shapes[k]) });
    }
    return l;
  }
  // A node as the viewer uses it: the scalars at once, the rest when first asked.
  class VNode {
    constructor(i) {
      this.i = i;
      this.name = nameOf(i);
      this.kind = KIND_NAMES[kindOf(i)];
      this.label = STR(C.label[i]);
    }
    lazy(key, value) { Object.defineProperty(this, key, { value: value }); return value; }
    get children() {
      // What the page draws inside: the children, or their ranges in a big group.
      if (ranged(this.i)) return this.lazy("children", rangesOf(this.i).map(nodeAt));
      return this.lazy("children", realChildren(this.i).map(nodeAt));
    }
    get metaedges() {
      return this.lazy("metaedges", ranged(this.i) ? rangeEdges(this.i).top : realMetaedges(this.i));
    }
    get op() { return C.type[this.i] >= 0 ? STR(C.type[this.i]) : null; }
    get device() { return C.device[this.i] >= 0 ? STR(C.device[this.i]) : ""; }
    get attrs() { return C.attrs[this.i] >= 0 ? TB.attrs[C.attrs[this.i]] : {}; }
    get shapes() { return shapesAt(C.shapes[this.i]); }
    get inputs() {
      const l = [];
      if (!edgeIndexes()) return l;
      for (let k = IN_OFF[this.i]; k < IN_OFF[this.i + 1]; k++) {
        const e = IN_E[k];
        l.push({ name: endName(C.e_src[e]), slot: C.e_slot[e], control: !!(C.e_flags[e] & 1) });
      }
      return l;
    }
    get in_embeddings() { return embeddings(this.i, false); }
    get out_embeddings() { return embeddings(this.i, true); }
    get xla_cluster() { return XLA.has(this.i) ? XLA.get(this.i) : null; }
    get compute_time_us() {
      const t = C.time ? C.time[this.i] : NaN;
      return Number.isNaN(t) ? null : t;
    }
    get cardinality() { return C.card[this.i]; }
    get depth() { return C.depth[this.i]; }
    get template() { const t = C.template[this.i]; return t >= 0 ? GD.templates[t][0] : null; }
    get series() {
      if (this.kind !== "series") return null;
      return this.lazy("series", { op: this.op, ids: SERIES.get(this.i) || [],
        vertical: !!(C.kind[this.i] & 4) });
    }
    get side_panel() { return PANELS.get(this.i) || { in: [], out: [] }; }
    get op_histogram() { return histogram(C.hist_key, C.hist_val, HIST_OFF, this.i); }
    get device_histogram() { return histogram(C.dev_key, C.dev_val, DEV_OFF, this.i); }
  }
  function realChildren(g) {
    const f = FIRST[g], l = new Array(C.nchild[g]);
    for (let k = 0; k < l.length; k++) l[k] = f + k;
    return l;
  }
  function realMetaedges(g) {
    const f = FIRST[g], l = [];
    for (let k = ME_OFF[g]; k < ME_OFF[g + 1]; k++) {
      const vi = C.me_v[k], wi = C.me_w[k];
      l.push({ v: vi >= 0 ? nameOf(f + vi) : "", w: wi >= 0 ? nameOf(f + wi) : "", vi, wi,
        regular: C.me_reg[k], control: C.me_ctl[k], ref: C.me_ref[k], size: C.me_size[k],
        shapes: shapesAt(C.me_shapes[k]) });
    }
    return l;
  }

  // --- ranges: a group of more than RANGE children shows them RANGE at a time ----------------
  // The rule is ranges.py's (keep the two in step): names, membership, metaedges,
  // cardinality and depth.
  // Each range is a group of the page only (index N + k, named "<group>/children a-b"),
  // opened on its own, so that opening any group lays out at most RANGE boxes. A metaedge
  // between children of two ranges is drawn between the ranges (counts and sizes summed).
  // The root is never split: a flat graph's top level is drawn near the view only.
  const RANGE = 1000;
  const VIRT = []; // range index - N -> {g, k, lo, hi (node indices), name}
  const RANGES = new Map(); // group index -> its ranges' indices
  const ranged = (g) => g > 0 && g < N && C.nchild[g] > RANGE;
  function rangesOf(g) {
    let l = RANGES.get(g);
    if (l) return l;
    l = [];
    const f = FIRST[g], n = C.nchild[g];
    for (let k = 0; k * RANGE < n; k++) {
      const lo = f + k * RANGE, hi = f + Math.min(n, (k + 1) * RANGE);
      let label = "children " + (k * RANGE) + "\u2013" + (hi - f - 1);
      // Should a child of the group have that name, the range's gets a thin space more
      // (only a child of that label can: names are compared for those only).
      for (let j = f; j < f + n; j++) {
        if (STR(C.label[j]) === label && nameOf(j) === nameOf(g) + "/" + label) { label += "\u2009"; j = f - 1; }
      }
      const name = nameOf(g) + "/" + label;
      VIRT.push({ g, k, lo, hi, name });
      const v = N + VIRT.length - 1;
      NAME_IX.set(name, v);
      l.push(v);
    }
    RANGES.set(g, l);
    return l;
  }
  function rangeEdges(g) {
    // The group's metaedges split: between two ranges (summed, in order of first
    // appearance) and within one range (by range, positions within it).
    let r = RANGE_EDGES.get(g);
    if (r) return r;
    const rs = rangesOf(g), top = [], inner = rs.map(() => []), at = new Map();
    for (const m of realMetaedges(g)) {
      const rv = Math.floor(m.vi / RANGE), rw = Math.floor(m.wi / RANGE);
      if (m.vi < 0 || m.wi < 0) continue;
      if (rv === rw) {
        inner[rv].push(Object.assign({}, m, { vi: m.vi - rv * RANGE, wi: m.wi - rw * RANGE }));
        continue;
      }
      const key = rv * rs.length + rw;
      let t = at.get(key);
      if (!t) {
        at.set(key, (t = { v: nameOf(rs[rv]), w: nameOf(rs[rw]), vi: rv, wi: rw, regular: 0,
          control: 0, ref: 0, size: 0, shapes: [], seen: new Set() }));
        top.push(t);
      }
      t.regular += m.regular; t.control += m.control; t.ref += m.ref; t.size += m.size;
      for (const sh of m.shapes) {
        const k = JSON.stringify(sh);
        if (!t.seen.has(k)) { t.seen.add(k); t.shapes.push(sh); }
      }
    }
    RANGE_EDGES.set(g, (r = { top, inner }));
    return r;
  }
  const RANGE_EDGES = new Map();
  class RangeNode {
    constructor(v) {
      const r = VIRT[v - N];
      this.i = v;
      this.name = r.name;
      this.kind = "meta";
      // (With the thin spaces a clash gave it: as wide as Python's layout makes it.)
      this.label = r.name.slice(nameOf(r.g).length + 1);
      this.range = r;
      let card = 0, depth = 1;
      for (let j = r.lo; j < r.hi; j++) {
        if (kindOf(j)) { card += C.card[j]; depth = Math.max(depth, C.depth[j] + 1); } else card += 1;
      }
      this.cardinality = card;
      this.depth = depth;
      this.template = null;
      this.series = null;
      this.side_panel = { in: [], out: [] };
      this.op_histogram = {};
      this.device_histogram = {};
    }
    get children() {
      const l = [];
      for (let j = this.range.lo; j < this.range.hi; j++) l.push(nodeAt(j));
      Object.defineProperty(this, "children", { value: l });
      return l;
    }
    get metaedges() {
      const l = rangeEdges(this.range.g).inner[this.range.k];
      Object.defineProperty(this, "metaedges", { value: l });
      return l;
    }
  }
  function vparent(x) {
    // The parent the page draws x in: a range of a big group, else the graph's parent.
    if (x >= N) return VIRT[x - N].g;
    const p = PARENT_IX[x];
    return ranged(p) ? rangesOf(p)[Math.floor((x - FIRST[p]) / RANGE)] : p;
  }
  function childPos(p, c) {
    // The position of c among the children p draws.
    if (p >= N) return c - VIRT[p - N].lo;
    if (ranged(p)) return c >= N ? VIRT[c - N].k : Math.floor((c - FIRST[p]) / RANGE);
    return c - FIRST[p];
  }
  function drawnChildCount(g) { return g >= N ? VIRT[g - N].hi - VIRT[g - N].lo : ranged(g) ? rangesOf(g).length : C.nchild[g]; }

  function nodeAt(i) {
    let o = OBJ.get(i);
    if (!o) {
      OBJ.set(i, (o = i >= N ? new RangeNode(i) : new VNode(i)));
      NAME_IX.set(o.name, i);
    }
    return o;
  }
  // Name-keyed views of the index, for the code below (names are what the page shows).
  const NODE = {
    get(name) { const k = indexOf(name); return k < 0 ? undefined : nodeAt(k); },
    has(name) { return indexOf(name) >= 0; },
  };
  const PARENT = {
    get(name) { const k = indexOf(name); return k > 0 ? nodeAt(vparent(k)).name : undefined; },
  };
  let ROOT = null; // nodeAt(0), once decoded
  const MAX_BRIDGES = 4;
  const isGroup = (n) => !!n && n.kind !== "op";
  const own = (obj) => (obj && typeof obj === "object" ? Object.keys(obj) : []);

  // --- lazy layout ---------------------------------------------------------------------------
  function specOf(g) {
    if (g.i >= N || ranged(g.i)) {
      return { sizes: g.children.map((c) => LAYOUT_JS.collapsedSize(c.label, c.kind, !!(c.series && c.series.vertical))),
        panel: [], edges: g.metaedges.map((m) => [m.vi, m.wi, LAYOUT_JS.edgeWidth(m.size), LAYOUT_JS.edgeLabel(m.shapes)]) };
    }
    const gi = g.i, f = FIRST[gi], n = C.nchild[gi], sizes = new Array(n);
    for (let k = 0; k < n; k++) {
      const j = f + k;
      sizes[k] = LAYOUT_JS.collapsedSize(STR(C.label[j]), KIND_NAMES[kindOf(j)], !!(C.kind[j] & 4));
    }
    const panel = [], inPanel = new Set();
    const sp = PANELS.get(gi);
    if (sp) {
      for (const side of ["in", "out"]) {
        for (const nm of sp[side]) {
          const j = indexOf(nm);
          const i = j >= 0 && PARENT_IX[j] === gi ? j - f : undefined;
          if (i !== undefined && !inPanel.has(i)) { inPanel.add(i); panel.push(i); }
        }
      }
    }
    const edges = [];
    for (let k = ME_OFF[gi]; k < ME_OFF[gi + 1]; k++) {
      const v = C.me_v[k], w = C.me_w[k];
      edges.push([v >= 0 ? v : undefined, w >= 0 ? w : undefined, LAYOUT_JS.edgeWidth(C.me_size[k]),
        LAYOUT_JS.edgeLabel(shapesAt(C.me_shapes[k]))]);
    }
    return { sizes, panel, edges };
  }
  let worker = null, workerSeq = 0;
  const WAITING = new Map(); // request id -> [group name, callbacks]
  const REQUESTED = new Map(); // group name -> request id
  function startWorker() {
    if (worker !== null) return worker;
    worker = false;
    try {
      const src = document.getElementById("graph-layout").textContent;
      const url = URL.createObjectURL(new Blob([src], { type: "text/javascript" }));
      worker = new Worker(url);
      worker.onmessage = (ev) => {
        const m = ev.data, w = WAITING.get(m.id);
        if (!w) return;
        WAITING.delete(m.id);
        REQUESTED.delete(w[0]);
        LAYOUT.set(w[0], m.layout || LAYOUT_JS.layoutSpec(specOf(NODE.get(w[0])), RANKDIR));
        for (const cb of w[1]) cb();
      };
      // A worker that cannot start (a policy forbidding Blob URLs): lay out here instead.
      worker.onerror = (ev) => {
        if (ev && ev.preventDefault) ev.preventDefault();
        worker = false;
        const waiting = Array.from(WAITING.values());
        WAITING.clear();
        REQUESTED.clear();
        for (const [name, cbs] of waiting) {
          if (!LAYOUT.has(name)) LAYOUT.set(name, LAYOUT_JS.layoutSpec(specOf(NODE.get(name)), RANKDIR));
          for (const cb of cbs) cb();
        }
      };
    } catch (e) {
      worker = false; // no workers (a locked-down browser): lay out in the page
    }
    return worker;
  }
  // Calls done() once every group in names has its layout: at once when they were all
  // there or small (laid out here), else when the worker has answered.
  function withLayouts(names, done) {
    let pending = 0;
    const one = () => { if (--pending === 0) done(); };
    for (const name of names) {
      if (LAYOUT.has(name)) continue;
      const g = NODE.get(name);
      if (!isGroup(g)) continue;
      const w = drawnChildCount(g.i) > WORKER_MIN ? startWorker() : false;
      if (!w) {
        LAYOUT.set(name, LAYOUT_JS.layoutSpec(specOf(g), RANKDIR));
        continue;
      }
      pending++;
      if (REQUESTED.has(name)) { WAITING.get(REQUESTED.get(name))[1].push(one); continue; }
      const id = ++workerSeq;
      WAITING.set(id, [name, [one]]);
      REQUESTED.set(name, id);
      w.postMessage({ id, spec: specOf(g), rankdir: RANKDIR });
    }
    if (pending === 0) done();
  }

  // --- state ----------------------------------------------------------------------------
  const expanded = new Set([""]);
  let colourMode = data.colour || "structure";
  let selected = null;
  let highlighted = null;
  let scene = null; // {placed: Map(name -> placed), abs: Map(name -> [x, y, w, h])}
  const ELEM = new Map(); // visible name -> its <g>

  // --- composition (mirror of layout.compose) --------------------------------------------
  function bisectRight(a, v) {
    let lo = 0, hi = a.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (v < a[mid]) hi = mid; else lo = mid + 1;
    }
    return lo;
  }
  function stretch(intervals) {
    // By centre; each deficit goes in at the interval's centre (keeps chains aligned).
    intervals.sort((a, b) => (a[0] + a[1]) / 2 - (b[0] + b[1]) / 2);
    const pts = [], cum = [];
    for (const [lo, hi, need] of intervals) {
      if (need <= 0) continue;
      const k = bisectRight(pts, lo);
      const tot = cum.length ? cum[cum.length - 1] : 0;
      const have = tot - (k ? cum[k - 1] : 0);
      if (have < need) { pts.push((lo + hi) / 2); cum.push(tot + need - have); }
    }
    return [pts, cum];
  }
  function mapv(s, v) {
    const k = bisectRight(s[0], v);
    return v + (k ? s[1][k - 1] : 0);
  }
  function clip(b, to) {
    const dx = to[0] - b[0], dy = to[1] - b[1], hw = b[2] / 2, hh = b[3] / 2;
    if (Math.abs(dx) * hh <= 1e-9 && Math.abs(dy) * hw <= 1e-9) return [b[0], b[1]];
    const t = Math.min(dx ? hw / Math.abs(dx) : Infinity, dy ? hh / Math.abs(dy) : Infinity);
    if (t >= 1) return [b[0], b[1]];
    return [b[0] + dx * t, b[1] + dy * t];
  }
  const codePoints = (s) => Array.from(s).length;

  function place(name, cache) {
    const L = LAYOUT.get(name), g = NODE.get(name), kids = g.children, n = kids.length;
    const size = new Array(n);
    for (let i = 0; i < n; i++) {
      const b = L.nodes[i], c = kids[i];
      if (isGroup(c) && expanded.has(c.name) && LAYOUT.has(c.name)) {
        const p = place(c.name, cache);
        size[i] = [p.w, p.h];
      } else size[i] = [b[2], b[3]];
    }
    const inPanel = new Set(L.panel);
    const main = [];
    for (let i = 0; i < n; i++) if (!inPanel.has(i)) main.push(i);
    const xs = stretch(main.map((i) => {
      const b = L.nodes[i];
      return [b[0] - b[2] / 2, b[0] + b[2] / 2, size[i][0] - b[2]];
    }));
    const ys = stretch(main.map((i) => {
      const b = L.nodes[i];
      return [b[1] - b[3] / 2, b[1] + b[3] / 2, size[i][1] - b[3]];
    }));
    const x0 = K.PAD, y0 = K.HEADER;
    const boxes = new Array(n);
    for (const i of main) {
      const b = L.nodes[i];
      const lx = mapv(xs, b[0] - b[2] / 2), hx = mapv(xs, b[0] + b[2] / 2);
      const ly = mapv(ys, b[1] - b[3] / 2), hy = mapv(ys, b[1] + b[3] / 2);
      boxes[i] = [x0 + (lx + hx) / 2, y0 + (ly + hy) / 2, size[i][0], size[i][1]];
    }
    let coreW = mapv(xs, L.w);
    const coreH = mapv(ys, L.h);
    let panelW = 0, panelH = 0;
    for (const i of L.panel) {
      const [w, h] = size[i];
      boxes[i] = [0, y0 + panelH + h / 2, w, h];
      panelH += h + K.PANEL_VGAP;
      panelW = Math.max(panelW, w);
    }
    let panelX = null;
    if (L.panel.length) {
      panelH -= K.PANEL_VGAP;
      const px = x0 + coreW + (main.length ? K.PANEL_GAP : 0);
      for (const i of L.panel) boxes[i][0] = px + boxes[i][2] / 2;
      coreW = px - x0 + panelW;
      panelX = px;
    }
    const w = Math.max(K.PAD + coreW + K.PAD, codePoints(name.split("/").pop()) * K.CHAR_W + 2 * K.PAD);
    const h = K.HEADER + Math.max(coreH, panelH) + K.PAD;
    const edges = [];
    const mes = L.edges.length ? g.metaedges : [];
    L.edges.forEach((route, i) => {
      if (!route) return;
      const me = mes[i];
      const bv = boxes[me.vi], bw = boxes[me.wi];
      const flat = route[0], mid = [];
      for (let k = 0; k < flat.length; k += 2) mid.push([x0 + mapv(xs, flat[k]), y0 + mapv(ys, flat[k + 1])]);
      const first = mid.length ? mid[0] : [bw[0], bw[1]];
      const last = mid.length ? mid[mid.length - 1] : [bv[0], bv[1]];
      edges.push([i, [clip(bv, first), ...mid, clip(bw, last)]]);
    });
    const placed = { w, h, boxes, edges, panelX };
    cache.set(name, placed);
    return placed;
  }

  function compose() {
    const placed = new Map();
    const root = place("", placed);
    const abs = new Map([["", [root.w / 2, root.h / 2, root.w, root.h]]]);
    const shown = new Set([0]); // node indices of abs's names

    const todo = [["", 0, 0]];
    while (todo.length) {
      const [name, ox, oy] = todo.pop();
      const p = placed.get(name), kids = NODE.get(name).children;
      kids.forEach((c, i) => {
        const b = p.boxes[i];
        const a = [ox + b[0], oy + b[1], b[2], b[3]];
        abs.set(c.name, a);
        shown.add(c.i);
        if (placed.has(c.name)) todo.push([c.name, a[0] - a[2] / 2, a[1] - a[3] / 2]);
      });
    }
    return { placed, abs, shown, bridges: new Map() };
  }

  // --- colours ------------------------------------------------------------------------------
  const PALETTE = ["#8dd3c7", "#bebada", "#fb8072", "#80b1d3", "#fdb462", "#b3de69",
    "#fccde5", "#bc80bd", "#ccebc5", "#ffed6f", "#a6cee3", "#b2df8a", "#fdbf6f", "#cab2d6",
    "#ffffb3"];
  const paletteColour = (i) => (i < PALETTE.length ? PALETTE[i]
    : "hsl(" + ((i * 137.508) % 360).toFixed(1) + ",55%,78%)");
  const UNIQUE = "#d9d9d9", OP_FILL = "#ffffff", NO_DATA = "#eeeeee";
  const TEMPLATE_COLOUR = new Map();
  GD.templates.forEach((t, i) => TEMPLATE_COLOUR.set(t[0], paletteColour(i)));
  const TEMPLATE_INFO = new Map(GD.templates.map((t) => [t[0], t])); // id -> [id, count, first]
  const DEVICE_COLOUR = new Map();
  GD.devices.forEach((d, i) => DEVICE_COLOUR.set(d, paletteColour(i)));
  let TIME = null; // node index -> total compute time (us) of the subtree (NaN: none)
  let MAX_OP_TIME = 0, MAX_GROUP_TIME = 0;
  const HAS_TIME = !!GD.has_time;
  function times() {
    if (TIME) return TIME;
    TIME = new Float64Array(N).fill(NaN);
    // Children come after their parent: from the last node back, every group's children
    // are done when it is reached; each sums its children in their order.
    for (let i = N - 1; i >= 0; i--) {
      if (kindOf(i) === 0) {
        const t = C.time ? C.time[i] : NaN;
        if (!Number.isNaN(t)) { TIME[i] = t; MAX_OP_TIME = Math.max(MAX_OP_TIME, t); }
        continue;
      }
      let sum = null;
      for (let j = FIRST[i]; j < FIRST[i] + C.nchild[i]; j++) {
        if (!Number.isNaN(TIME[j])) sum = (sum || 0) + TIME[j];
      }
      if (sum !== null) {
        TIME[i] = sum;
        if (i) MAX_GROUP_TIME = Math.max(MAX_GROUP_TIME, sum);
      }
    }
    return TIME;
  }
  function timeOf(n) {
    if (!FULL) return undefined; // drawn again with the whole columns
    const t = times()[n.i];
    return Number.isNaN(t) ? undefined : t;
  }
  function heat(t, max) {
    // White to red; a square root so that small times still show.
    const f = max > 0 ? Math.sqrt(Math.min(t / max, 1)) : 0;
    const r = 255 - Math.round(f * (255 - 203)), g = 245 - Math.round(f * (245 - 24));
    const b = 240 - Math.round(f * (240 - 29));
    return "rgb(" + r + "," + g + "," + b + ")";
  }
  let gradientSeq = 0;
  function deviceGradient(hist) {
    const keys = own(hist).filter((d) => hist[d] > 0);
    const total = keys.reduce((s, d) => s + hist[d], 0);
    if (!total) return NO_DATA;
    if (keys.length === 1) return DEVICE_COLOUR.get(keys[0]) || NO_DATA;
    const id = "devgrad" + (gradientSeq++);
    const grad = svgEl("linearGradient", { id: id, x1: "0", x2: "1", y1: "0", y2: "0" });
    let acc = 0;
    for (const d of keys) {
      const col = DEVICE_COLOUR.get(d) || NO_DATA;
      grad.appendChild(svgEl("stop", { offset: String(acc / total), "stop-color": col }));
      acc += hist[d];
      grad.appendChild(svgEl("stop", { offset: String(acc / total), "stop-color": col }));
    }
    gradients.appendChild(grad);
    return "url(#" + id + ")";
  }
  // Plugins (window.summarylibViewer.registerNodeStyle): the first style given wins.
  const NODE_STYLES = [], SELECT_HANDLERS = [];
  function pluginStyle(name) {
    for (const fn of NODE_STYLES) { const s = fn(name); if (s) return s; }
    return null;
  }
  function fillOf(n) {
    const ps = NODE_STYLES.length ? pluginStyle(n.name) : null;
    if (ps && ps.fill) return ps.fill;
    if (colourMode === "structure") {
      if (n.kind === "op") return OP_FILL;
      return (n.template !== null && n.template !== undefined && TEMPLATE_COLOUR.get(n.template)) || UNIQUE;
    }
    if (colourMode === "device") {
      if (n.kind === "op") return (n.device && DEVICE_COLOUR.get(n.device)) || OP_FILL;
      return deviceGradient(n.device_histogram || {});
    }
    if (colourMode === "compute_time") {
      const t = timeOf(n);
      if (t === undefined) return n.kind === "op" ? OP_FILL : NO_DATA;
      return heat(t, n.kind === "op" ? MAX_OP_TIME : MAX_GROUP_TIME);
    }
    return n.kind === "op" ? OP_FILL : UNIQUE;
  }

  // --- DOM helpers --------------------------------------------------------------------------
  function svgEl(tag, attrs, text) {
    const e = document.createElementNS(SVGNS, tag);
    if (attrs) for (const k of Object.keys(attrs)) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function htmlEl(tag, attrs, text) {
    const e = document.createElement(tag);
    if (attrs) for (const k of Object.keys(attrs)) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function fit(text, width) {
    const max = Math.max(1, Math.floor(width / K.CHAR_W));
    const cps = Array.from(text);
    return cps.length <= max ? text : cps.slice(0, Math.max(1, max - 1)).join("") + "\u2026";
  }
  const f1 = (v) => (Math.round(v * 10) / 10).toString();

  // --- page skeleton ----------------------------------------------------------------------------
  document.title = data.title || "Graph";
  const bar = htmlEl("div", { id: "bar" });
  bar.appendChild(htmlEl("h1", null, data.title || "Graph"));
  const colourLabel = htmlEl("label", null, "Colour ");
  const colourSelect = htmlEl("select", { id: "colour" });
  for (const [value, text] of [["structure", "Structure"], ["device", "Device"],
    ["compute_time", "Compute time"], ["none", "None"]]) {
    const o = htmlEl("option", { value: value }, text);
    if (value === "compute_time" && !HAS_TIME) o.disabled = true;
    colourSelect.appendChild(o);
  }
  colourSelect.value = colourMode;
  colourLabel.appendChild(colourSelect);
  bar.appendChild(colourLabel);
  const searchBox = htmlEl("div", { id: "searchbox" });
  const search = htmlEl("input", { id: "search", type: "search", placeholder: "Search names", autocomplete: "off" });
  const results = htmlEl("div", { id: "results" });
  searchBox.appendChild(search);
  searchBox.appendChild(results);
  bar.appendChild(searchBox);
  const fitButton = htmlEl("button", { id: "fit", type: "button" }, "Fit");
  const collapseButton = htmlEl("button", { id: "collapse-all", type: "button" }, "Collapse all");
  bar.appendChild(fitButton);
  bar.appendChild(collapseButton);
  const st = GD.stats || {};
  bar.appendChild(htmlEl("span", { class: "stats" },
    (st.ops || 0) + " ops \u00b7 " + (st.edges || 0) + " edges \u00b7 " + (st.groups || 0) + " groups"));
  document.body.appendChild(bar);
  const stage = htmlEl("div", { id: "stage" });
  const svg = svgEl("svg", { id: "canvas" });
  const defs = svgEl("defs");
  for (const [id, col] of [["arrow", "#999"], ["arrow-ref", "#e8710a"]]) {
    const m = svgEl("marker", { id: id, viewBox: "0 0 10 10", refX: "9", refY: "5",
      markerWidth: "7", markerHeight: "7", markerUnits: "userSpaceOnUse", orient: "auto" });
    m.appendChild(svgEl("path", { d: "M0,0 L10,5 L0,10 z", fill: col }));
    defs.appendChild(m);
  }
  const gradients = svgEl("g");
  defs.appendChild(gradients);
  svg.appendChild(defs);
  const viewport = svgEl("g", { id: "viewport" });
  svg.appendChild(viewport);
  stage.appendChild(svg);
  const card = htmlEl("div", { id: "card" });
  stage.appendChild(card);
  const panels = htmlEl("div", { id: "panels" });
  stage.appendChild(panels);
  const legend = htmlEl("div", { id: "legend" });
  stage.appendChild(legend);
  // One tooltip for everything (a <title> per node and edge doubles a big DOM).
  const tip = htmlEl("div", { id: "tip" });
  stage.appendChild(tip);
  const TIP = new WeakMap(); // edge <path> -> [metaedge, label]
  document.body.appendChild(stage);

  // --- drawing --------------------------------------------------------------------------------
  const EDGE_EL = new Map(); // "group\u0000metaedge index" -> its <path> (for bridges)
  function drawEdge(layer, me, route, pts, key) {
    const d = pts.map((p, k) => (k ? "L" : "M") + f1(p[0]) + "," + f1(p[1])).join("");
    const cls = ["edge"];
    if (!me.regular && me.control) cls.push("control");
    if (me.ref) cls.push("ref");
    const path = svgEl("path", { class: cls.join(" "), d: d, "stroke-width": String(route[1]),
      "marker-end": me.ref ? "url(#arrow-ref)" : "url(#arrow)" });
    TIP.set(path, [me, route[2]]);
    layer.appendChild(path);
    EDGE_EL.set(key, path);
    if (route[2] && pts.length >= 2 && !drawnLod) {
      // The label sits at the middle of the polyline's length.
      let total = 0;
      const seg = [];
      for (let k = 1; k < pts.length; k++) {
        const l = Math.hypot(pts[k][0] - pts[k - 1][0], pts[k][1] - pts[k - 1][1]);
        seg.push(l);
        total += l;
      }
      if (total < 24) return;
      let half = total / 2, k = 0;
      while (k < seg.length - 1 && half > seg[k]) { half -= seg[k]; k++; }
      const t = seg[k] ? half / seg[k] : 0;
      const x = pts[k][0] + (pts[k + 1][0] - pts[k][0]) * t;
      const y = pts[k][1] + (pts[k + 1][1] - pts[k][1]) * t;
      layer.appendChild(svgEl("text", { class: "edge-label", x: f1(x + 4), y: f1(y) }, route[2]));
    }
  }

  function isDark(fill) {
    // Only the heat scale makes dark fills (rgb(...)); labels on them turn white.
    const m = /^rgb\((\d+),(\d+),(\d+)\)$/.exec(fill);
    return !!m && 0.299 * m[1] + 0.587 * m[2] + 0.114 * m[3] < 140;
  }

  function drawCollapsed(layer, n, b, inPanel) {
    const w = b[2], h = b[3], fill = fillOf(n);
    const g = svgEl("g", { class: "node " + n.kind + (inPanel ? " panel" : "") + (isDark(fill) ? " dark" : ""),
      "data-name": n.name, "data-kind": n.kind,
      transform: "translate(" + f1(b[0]) + "," + f1(b[1]) + ")" });
    const label = n.label !== undefined ? n.label : n.name.split("/").pop();
    if (n.kind === "op") {
      g.appendChild(svgEl("ellipse", { class: "shape", rx: f1(w / 2), ry: f1(h / 2), fill: fill }));
      if (!drawnLod) g.appendChild(svgEl("text", { x: "0", y: "4", "text-anchor": "middle" }, fit(label, w - 10)));
    } else if (n.kind === "series") {
      // A stack: two offset copies behind the front box, along the series' direction.
      const vertical = !!(n.series && n.series.vertical);
      const sw = vertical ? w : w - 10, sh = vertical ? h - 8 : h;
      for (let k = 2; k >= 1; k--) {
        g.appendChild(svgEl("rect", { class: "stack", x: f1(-w / 2 + (vertical ? 0 : 5 * k)),
          y: f1(-h / 2 + (vertical ? 4 * k : 0)), width: f1(sw), height: f1(sh), rx: "4", fill: fill }));
      }
      g.appendChild(svgEl("rect", { class: "shape", x: f1(-w / 2), y: f1(-h / 2), width: f1(sw),
        height: f1(sh), rx: "4", fill: fill }));
      if (!drawnLod) {
        g.appendChild(svgEl("text", { x: f1(-w / 2 + sw / 2), y: f1(-h / 2 + sh / 2 + 4), "text-anchor": "middle" },
          fit(label, sw - 10)));
      }
    } else {
      g.appendChild(svgEl("rect", { class: "shape", x: f1(-w / 2), y: f1(-h / 2), width: f1(w),
        height: f1(h), rx: "6", fill: fill }));
      if (!drawnLod) {
        g.appendChild(svgEl("text", { x: f1(-w / 2 + 8), y: "4" }, fit(label, w - 26)));
        g.appendChild(svgEl("text", { class: "count", x: f1(w / 2 - 6), y: "4", "text-anchor": "end" }, "+"));
      }
    }
    layer.appendChild(g);
    ELEM.set(n.name, g);
  }

  function drawExpanded(layer, n, b, placed, ox, oy) {
    const left = b[0] - b[2] / 2, top = b[1] - b[3] / 2;
    const g = svgEl("g", { class: "node " + n.kind + " expanded", "data-name": n.name, "data-kind": n.kind,
      transform: "translate(" + f1(left) + "," + f1(top) + ")" });
    const fill = fillOf(n);
    g.appendChild(svgEl("rect", { class: "frame", width: f1(b[2]), height: f1(b[3]), rx: "8",
      fill: fill, "fill-opacity": "0.35" }));
    drawContents(g, n, placed, ox + left, oy + top);
    // The header band (it closes the group) goes over the contents, so that no edge
    // drawn across it takes its clicks.
    g.appendChild(svgEl("rect", { class: "header", width: f1(b[2]), height: String(K.HEADER - 4) }));
    const label = n.label !== undefined ? n.label : n.name.split("/").pop();
    g.appendChild(svgEl("text", { class: "label", x: String(K.PAD), y: "16" }, fit("\u2212 " + label, b[2] - 2 * K.PAD)));
    layer.appendChild(g);
    ELEM.set(n.name, g);
  }

  function drawContents(el, n, p, ox, oy) {
    // (ox, oy): the group's top-left corner in the scene, to cull against drawnWindow.
    const L = LAYOUT.get(n.name);
    const edgeLayer = svgEl("g", { class: "edges" });
    const nodeLayer = svgEl("g", { class: "nodes" });
    el.appendChild(edgeLayer);
    el.appendChild(nodeLayer);
    for (const [i, pts] of p.edges) {
      if (drawnWindow) {
        let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
        for (const q of pts) {
          x0 = Math.min(x0, q[0]); x1 = Math.max(x1, q[0]); y0 = Math.min(y0, q[1]); y1 = Math.max(y1, q[1]);
        }
        if (!inWindow(ox + (x0 + x1) / 2, oy + (y0 + y1) / 2, x1 - x0, y1 - y0)) continue;
      }
      drawEdge(edgeLayer, n.metaedges[i], L.edges[i], pts, n.name + "\u0000" + i);
    }
    if (n.name) drawBridges(edgeLayer, n);
    if (p.panelX !== null && L.panel.length < n.children.length) {
      const x = f1(p.panelX - K.PANEL_GAP / 2);
      edgeLayer.appendChild(svgEl("line", { class: "panel-divider", x1: x, x2: x,
        y1: String(K.HEADER), y2: f1(p.h - K.PAD) }));
    }
    const inPanel = new Set(L.panel);
    n.children.forEach((c, i) => {
      const b = p.boxes[i];
      if (drawnWindow && !inWindow(ox + b[0], oy + b[1], b[2], b[3])) return;
      const sub = scene.placed.get(c.name);
      if (sub) drawExpanded(nodeLayer, c, b, sub, ox, oy);
      else drawCollapsed(nodeLayer, c, b, inPanel.has(i));
    });
  }

  // --- bridges: base edges crossing an open group's border ---------------------------------
  // The parent's metaedge stops at the group's frame; inside, one segment per distinct
  // visible end carries it on to the child (at any depth) that holds the op.
  // The graph in pre-order (children in order): a subtree is one interval of it, so that
  // "is x under g" is two comparisons. Made on first use.
  let PRE = null, PRE_END = null, PRE_ORDER = null;
  function preorder() {
    if (PRE) return;
    const size = new Int32Array(N).fill(1);
    for (let i = N - 1; i > 0; i--) size[PARENT_IX[i]] += size[i];
    PRE = new Int32Array(N);
    PRE_END = new Int32Array(N);
    PRE_ORDER = new Int32Array(N);
    const stack = [0], nchild = C.nchild;
    let n = 0;
    while (stack.length) {
      const g = stack.pop();
      PRE[g] = n;
      PRE_END[g] = n + size[g];
      PRE_ORDER[n++] = g;
      for (let j = FIRST[g] + nchild[g] - 1; j >= FIRST[g]; j--) stack.push(j);
    }
  }
  function span(g) {
    // g's subtree as [start, end) in PRE_ORDER (a range: its children's subtrees).
    preorder();
    if (g < N) return [PRE[g], PRE_END[g]];
    const r = VIRT[g - N];
    return [PRE[r.lo], PRE_END[r.hi - 1]];
  }
  function childOf(parent, x) {
    // The child of group ``parent`` holding node ``x`` (itself included), or -1.
    for (let p = vparent(x); p >= 0; x = p, p = vparent(p)) if (p === parent) return x;
    return -1;
  }
  function segmentHitsBox(a, b, x0, y0, x1, y1) {
    // Liang-Barsky: does the segment a-b cross the rectangle [x0, x1] x [y0, y1]?
    if (x1 <= x0 || y1 <= y0) return false;
    let t0 = 0, t1 = 1;
    const dx = b[0] - a[0], dy = b[1] - a[1];
    for (const [p, q] of [[-dx, a[0] - x0], [dx, x1 - a[0]], [-dy, a[1] - y0], [dy, y1 - a[1]]]) {
      if (p === 0) { if (q < 0) return false; continue; }
      const r = q / p;
      if (p < 0) { if (r > t1) return false; if (r > t0) t0 = r; } else { if (r < t0) return false; if (r < t1) t1 = r; }
    }
    return t0 < t1;
  }
  function visibleEnd(x) {
    while (x >= 0 && !scene.shown.has(x)) x = vparent(x);
    return x;
  }
  function bridgeEnds(g, P, routes) {
    // Metaedge of the parent (and direction) -> Map(inner visible end -> control only?),
    // for the scene (the same until the open groups change).
    let ends = scene.bridges.get(g.i);
    if (ends) return ends;
    ends = new Map();
    if (!edgeIndexes()) return ends; // drawn again when the edges are here
    const gl = childPos(P, g.i), mi = new Map();
    const nk = drawnChildCount(P) + 1;
    nodeAt(P).metaedges.forEach((m, k) => mi.set(m.vi * nk + m.wi, k));
    const add = (i, inner, control, incoming) => {
      const k = i + (incoming ? "in" : "out");
      let m = ends.get(k);
      if (!m) ends.set(k, (m = { i: i, incoming: incoming, inner: new Map() }));
      m.inner.set(inner, (m.inner.has(inner) ? m.inner.get(inner) : true) && control);
    };
    const src = C.e_src, dst = C.e_dst, flags = C.e_flags;
    const [lo, hi] = span(g.i);
    // Only edges with one end outside g: the other end is tested by its pre-order place.
    const inside = (x) => x >= 0 && PRE[x] >= lo && PRE[x] < hi;
    for (let p = lo; p < hi; p++) {
      const d = PRE_ORDER[p];
      if (kindOf(d)) continue;
      for (let k = IN_OFF[d]; k < IN_OFF[d + 1]; k++) {
        const e = IN_E[k];
        if (inside(src[e])) continue;
        const cs = src[e] >= 0 ? childOf(P, src[e]) : -1;
        if (cs < 0 || cs === g.i) continue;
        const i = mi.get(childPos(P, cs) * nk + gl);
        if (i !== undefined && routes.has(i)) add(i, visibleEnd(d), !!(flags[e] & 1), true);
      }
      for (let k = OUT_OFF[d]; k < OUT_OFF[d + 1]; k++) {
        const e = OUT_E[k];
        if (inside(dst[e])) continue;
        const cw = dst[e] >= 0 ? childOf(P, dst[e]) : -1;
        if (cw < 0 || cw === g.i) continue;
        const i = mi.get(gl * nk + childPos(P, cw));
        if (i !== undefined && routes.has(i)) add(i, visibleEnd(d), !!(flags[e] & 1), false);
      }
    }
    scene.bridges.set(g.i, ends);
    return ends;
  }
  function drawBridges(layer, g) {
    const Pi = vparent(g.i), pg = nodeAt(Pi), P = pg.name, pp = scene.placed.get(P);
    const routes = new Map(pp.edges);
    const ga = scene.abs.get(g.name), gx = ga[0] - ga[2] / 2, gy = ga[1] - ga[3] / 2;
    const gb = pp.boxes[childPos(Pi, g.i)], px = gb[0] - gb[2] / 2, py = gb[1] - gb[3] / 2;
    const gp = scene.placed.get(g.name), gkids = g.children;
    const vertical = RANKDIR === "BT" || RANKDIR === "TB";
    // A lane beside the children (right for vertical flows, bottom otherwise) carries the
    // bridges that a straight line would draw across other children.
    const lane = vertical ? (gp.panelX !== null ? gp.panelX - K.PANEL_GAP / 2 : gp.w - K.PAD / 2)
      : gp.h - K.PAD / 2;
    const blocked = (a, b, skip) => {
      for (let k = 0; k < gkids.length; k++) {
        if (k === skip) continue;
        const bx = gp.boxes[k];
        if (segmentHitsBox(a, b, bx[0] - bx[2] / 2 + 1, bx[1] - bx[3] / 2 + 1, bx[0] + bx[2] / 2 - 1, bx[1] + bx[3] / 2 - 1)) return true;
      }
      return false;
    };
    const seg = (i, innerIx, control, incoming) => {
      const pts = routes.get(i);
      const ib = scene.abs.get(nameOf(innerIx));
      if (!pts || !ib) return;
      const e = incoming ? pts[pts.length - 1] : pts[0];
      const ep = [e[0] - px, e[1] - py];
      const box = [ib[0] - gx, ib[1] - gy, ib[2], ib[3]];
      let route = [ep, clip(box, ep)];
      const inner = childOf(g.i, innerIx);
      if (blocked(route[0], route[1], inner >= 0 ? childPos(g.i, inner) : -1)) {
        if (vertical) {
          const yin = ep[1] >= gp.h - 1 ? gp.h - K.PAD / 2 : ep[1] <= 1 ? K.HEADER / 2 : ep[1];
          route = [ep, [ep[0], yin], [lane, yin], [lane, box[1]]];
          route.push(clip(box, route[route.length - 1]));
        } else {
          const xin = ep[0] >= gp.w - 1 ? gp.w - K.PAD / 2 : ep[0] <= 1 ? K.PAD / 2 : ep[0];
          route = [ep, [xin, ep[1]], [xin, lane], [box[0], lane]];
          route.push(clip(box, route[route.length - 1]));
        }
      }
      if (!incoming) route.reverse();
      const me = pg.metaedges[i];
      const cls = "edge bridge" + (control ? " control" : "") + (me.ref ? " ref" : "");
      const path = svgEl("path", { class: cls,
        d: route.map((q, k) => (k ? "L" : "M") + f1(q[0]) + "," + f1(q[1])).join(""),
        "stroke-width": "1", "marker-end": incoming ? (me.ref ? "url(#arrow-ref)" : "url(#arrow)") : "none" });
      TIP.set(path, [me, ""]);
      layer.appendChild(path);
    };
    const ends = bridgeEnds(g, Pi, routes);
    for (const m of ends.values()) {
      // TensorBoard's maxBridgePathDegree: a metaedge reaching more than 4 ops inside
      // stops at the frame (a fan of lines would hide the group's own edges).
      if (m.inner.size > MAX_BRIDGES) continue;
      for (const [inner, control] of m.inner) seg(m.i, inner, control, m.incoming);
      // The segments carry the arrow into the group.
      const parentEdge = EDGE_EL.get(P + "\u0000" + m.i);
      if (m.incoming && parentEdge) parentEdge.setAttribute("marker-end", "none");
    }
  }

  // Big scenes (more than CULL_MIN visible nodes) draw only what lies within one screen
  // of the view, and below LOD_SCALE no text: the DOM stays small whatever the graph.
  const CULL_MIN = 1500, LOD_SCALE = 0.35;
  let drawnWindow = null, drawnLod = false, redrawPending = false;
  function viewWindow() {
    const vw = svg.clientWidth || 800, vh = svg.clientHeight || 600;
    return [-tx / scale, -ty / scale, (vw - tx) / scale, (vh - ty) / scale];
  }
  function inWindow(x, y, w, h) {
    const W = drawnWindow;
    return x + w / 2 >= W[0] && x - w / 2 <= W[2] && y + h / 2 >= W[1] && y - h / 2 <= W[3];
  }
  function render() {
    if (!LAYOUT.has("")) return; // before the first paint
    scene = compose();
    draw();
  }
  function draw() {
    const big = scene.abs.size > CULL_MIN;
    const win = viewWindow(), ww = win[2] - win[0], wh = win[3] - win[1];
    drawnWindow = big ? [win[0] - ww, win[1] - wh, win[2] + ww, win[3] + wh] : null;
    drawnLod = big && scale < LOD_SCALE;
    ELEM.clear();
    EDGE_EL.clear();
    while (gradients.firstChild) gradients.removeChild(gradients.firstChild);
    gradientSeq = 0;
    const root = svgEl("g", { id: "graph-root" });
    drawContents(root, ROOT, scene.placed.get(""), 0, 0);
    viewport.replaceChildren(root);
    if (selected && ELEM.has(selected)) ELEM.get(selected).classList.add("selected");
    if (highlighted && ELEM.has(highlighted)) ELEM.get(highlighted).classList.add("highlight");
    drawLegend();
  }

  function restyle() {
    // Plugins' styles changed, nothing else: new fills on the drawn nodes, in place (a
    // slider scrubbing through steps must not rebuild the drawing). Device fills are
    // gradients made while drawing: that mode draws again.
    if (colourMode === "device") { draw(); return; }
    for (const [name, g] of ELEM) {
      const fill = fillOf(NODE.get(name));
      for (const el of g.querySelectorAll(":scope > .shape, :scope > .stack, :scope > .frame")) {
        if (el.getAttribute("fill") !== fill) el.setAttribute("fill", fill);
      }
      if (!g.classList.contains("expanded")) g.classList.toggle("dark", isDark(fill));
    }
  }

  function drawLegend() {
    legend.replaceChildren();
    const item = (col, text) => {
      const row = htmlEl("div", { class: "item" });
      const sw = htmlEl("span", { class: "swatch" });
      sw.style.background = col;
      row.appendChild(sw);
      row.appendChild(htmlEl("span", null, text));
      legend.appendChild(row);
    };
    if (colourMode === "structure") {
      const ts = GD.templates;
      legend.appendChild(htmlEl("div", null, ts.length + " repeated structure" + (ts.length === 1 ? "" : "s")));
      ts.slice(0, 12).forEach(([t, count, first]) => {
        item(TEMPLATE_COLOUR.get(t), count + " \u00d7 " + (first || t));
      });
      item(UNIQUE, "unique");
    } else if (colourMode === "device") {
      for (const [d, col] of DEVICE_COLOUR) item(col, d);
      if (!DEVICE_COLOUR.size) legend.appendChild(htmlEl("div", null, "no devices set"));
    } else if (colourMode === "compute_time") {
      if (FULL) times();
      item(heat(0, 1), "0 \u00b5s");
      item(heat(1, 1), MAX_OP_TIME.toFixed(1) + " \u00b5s per op (groups: " + MAX_GROUP_TIME.toFixed(1) + ")");
    } else legend.appendChild(htmlEl("div", null, "no colouring"));
  }

  // --- pan and zoom -------------------------------------------------------------------------
  let tx = 0, ty = 0, scale = 1;
  function applyTransform(drawNext) {
    // drawNext: the caller draws right after (no redraw to schedule here).
    viewport.setAttribute("transform", "translate(" + tx.toFixed(1) + "," + ty.toFixed(1) + ") scale(" + scale.toFixed(4) + ")");
    if (drawNext || !scene || redrawPending || scene.abs.size <= CULL_MIN) return;
    const win = viewWindow(), W = drawnWindow;
    if ((scale < LOD_SCALE) !== drawnLod || !W || win[0] < W[0] || win[1] < W[1] || win[2] > W[2] || win[3] > W[3]) {
      redrawPending = true;
      requestAnimationFrame(() => { redrawPending = false; draw(); });
    }
  }
  function fitView(drawNext, first) {
    const r = scene.abs.get("");
    const vw = svg.clientWidth || 800, vh = svg.clientHeight || 600;
    scale = Math.min(1.5, (vw - 20) / r[2], (vh - 20) / r[3]);
    tx = (vw - r[2] * scale) / 2;
    ty = (vh - r[3] * scale) / 2;
    const kids = ROOT.children;
    if (first && scale < 0.25 && scene.abs.size > CULL_MIN && kids.length) {
      // A huge top level (a graph without scopes) opens readable, at its first node;
      // "Fit" shows it all.
      const b = scene.abs.get(kids[0].name);
      scale = 0.6;
      tx = vw / 2 - b[0] * scale;
      ty = vh / 2 - b[1] * scale;
    }
    applyTransform(drawNext);
  }
  function centreOn(name, drawNext) {
    const b = scene.abs.get(name);
    if (!b) return;
    const vw = svg.clientWidth || 800, vh = svg.clientHeight || 600;
    scale = Math.max(scale, Math.min(1, (vw - 40) / b[2], (vh - 40) / b[3]));
    scale = Math.min(scale, 2);
    tx = vw / 2 - b[0] * scale;
    ty = vh / 2 - b[1] * scale;
    applyTransform(drawNext);
  }
  function zoomTo(name) {
    // The node's box fills the view (within the usual zoom bounds).
    const b = scene.abs.get(name);
    if (!b) return;
    const vw = svg.clientWidth || 800, vh = svg.clientHeight || 600;
    scale = Math.max(0.02, Math.min(1.5, (vw - 40) / b[2], (vh - 40) / b[3]));
    tx = vw / 2 - b[0] * scale;
    ty = vh / 2 - b[1] * scale;
    applyTransform();
  }
  svg.addEventListener("wheel", (ev) => {
    ev.preventDefault();
    const r = svg.getBoundingClientRect();
    const mx = ev.clientX - r.left, my = ev.clientY - r.top;
    const k = Math.exp(-ev.deltaY * 0.0015);
    const ns = Math.min(8, Math.max(0.02, scale * k));
    tx = mx - (mx - tx) * (ns / scale);
    ty = my - (my - ty) * (ns / scale);
    scale = ns;
    applyTransform();
  }, { passive: false });
  let drag = null;
  svg.addEventListener("pointerdown", (ev) => {
    drag = { x: ev.clientX, y: ev.clientY, tx: tx, ty: ty, moved: false };
  });
  window.addEventListener("pointermove", (ev) => {
    if (!drag) return;
    const dx = ev.clientX - drag.x, dy = ev.clientY - drag.y;
    if (!drag.moved && Math.abs(dx) + Math.abs(dy) > 4) {
      drag.moved = true;
      svg.classList.add("dragging");
    }
    if (drag.moved) { tx = drag.tx + dx; ty = drag.ty + dy; applyTransform(); }
  });
  window.addEventListener("pointerup", () => {
    svg.classList.remove("dragging");
    setTimeout(() => { drag = null; }, 0);
  });

  function tipText(target) {
    const path = target.closest("path.edge");
    if (path && TIP.has(path)) {
      const [me, label] = TIP.get(path);
      return me.v + " \u2192 " + me.w + (label ? "\n" + label : "") + "\n" + me.regular + " data, " +
        me.control + " control, " + me.ref + " ref; " + me.size + " elements";
    }
    const g = target.closest("[data-name]");
    const n = g && NODE.get(g.getAttribute("data-name"));
    if (!n) return null;
    const ps = NODE_STYLES.length ? pluginStyle(n.name) : null;
    if (ps && ps.title) return ps.title;
    if (n.kind === "op") return n.name + " (" + n.op + ")";
    if (n.kind === "series") return n.name + " (" + n.series.ids.length + " \u00d7 " + n.series.op + ")";
    return n.name + " (" + n.cardinality + " ops)";
  }
  svg.addEventListener("mousemove", (ev) => {
    const text = drag && drag.moved ? null : tipText(ev.target);
    if (!text) { tip.classList.remove("open"); return; }
    const r = stage.getBoundingClientRect();
    tip.textContent = text;
    tip.style.left = (ev.clientX - r.left + 14) + "px";
    tip.style.top = (ev.clientY - r.top + 14) + "px";
    tip.classList.add("open");
  });
  svg.addEventListener("mouseleave", () => tip.classList.remove("open"));

  // --- interaction --------------------------------------------------------------------------
  function toggle(name) {
    // The group's top-left corner stays where it is on screen (the drawing grows around it).
    const before = scene.abs.get(name);
    if (expanded.has(name)) {
      // Closing a group closes everything inside it too, so reopening shows it collapsed.
      for (const e of Array.from(expanded)) if (e === name || e.startsWith(name + "/")) expanded.delete(e);
      expanded.add("");
    } else {
      if (!LAYOUT.has(name)) {
        withLayouts([name], () => { if (!expanded.has(name)) toggle(name); });
        if (!LAYOUT.has(name)) return; // the worker will call again
      }
      expanded.add(name);
    }
    scene = compose();
    const after = scene.abs.get(name);
    if (before && after) {
      tx += (before[0] - before[2] / 2 - (after[0] - after[2] / 2)) * scale;
      ty += (before[1] - before[3] / 2 - (after[1] - after[3] / 2)) * scale;
      applyTransform(true);
    }
    draw();
  }
  function goTo(name, select) {
    // Opens the groups down to the node and shows its card (once they are here).
    whenHere(() => revealable(name), () => {
      reveal(name);
      showCard(NODE.get(name));
      if (select) for (const cb of SELECT_HANDLERS) cb(name);
    });
  }
  function reveal(name) {
    if (!NODE.has(name)) return;
    const ancestors = [];
    for (let p = PARENT.get(name); p !== undefined; p = PARENT.get(p)) ancestors.push(p);
    if (ancestors.some((p) => !LAYOUT.has(p))) {
      withLayouts(ancestors, () => reveal(name));
      if (ancestors.some((p) => !LAYOUT.has(p))) return;
    }
    for (const p of ancestors) expanded.add(p);
    highlighted = name;
    scene = compose();
    centreOn(name, true);
    draw();
  }
  // Before the whole graph is read (the top level is drawn from the head, the first
  // levels of the tree come in the near part, the tree in the first blob, the rest in
  // chunks), an action waits until what it needs is here: a node's row, and for a group
  // its children's rows and its metaedges (the chunks holding them are inflated first).
  // The actions run in the order they were asked: one that waits holds back those after
  // it. A search waits for the tree (the first blob), on its own (WAITING_FULL).
  const QUEUED = [], WAITING_FULL = [];
  function canOpen(k) {
    // Node k's row, and its children's rows and its metaedges, are here (asking for the
    // chunks that hold those that are not).
    if (FULL) return true;
    if (k >= N) return canOpen(VIRT[k - N].g);
    if (k < OPEN) return true;
    if (!SKEL) return k < ROWS && kindOf(k) === 0;
    if (kindOf(k) === 0) return rowsHere(k, k + 1);
    // A group's metaedges are in the chunk of its own row (the near part's groups aside).
    const c = Math.floor(k / GD.chunk_rows), mine = HAVE[c] === 1;
    if (!mine) want(c);
    return rowsHere(FIRST[k], FIRST[k] + C.nchild[k]) && mine;
  }
  function here(name) { const k = indexOf(name); return k >= 0 && canOpen(k); }
  function revealable(name) {
    // The node's row and what opening every group above it needs are here.
    const k = indexOf(name);
    if (k < 0) return false;
    let ok = k >= N || rowsHere(k, k + 1);
    for (let p = k >= N ? VIRT[k - N].g : PARENT_IX[k]; p >= 0; p = PARENT_IX[p]) ok = canOpen(p) && ok;
    return ok;
  }
  function whenHere(ready, fn) {
    if (!QUEUED.length && (FULL || ready())) fn(); else QUEUED.push([ready, fn]);
  }
  // (A search needs the tree only: the first blob.)
  function whenTree(fn) { if (SKEL) fn(); else WAITING_FULL.push(fn); }
  function runWaiting() {
    while (QUEUED.length && (FULL || QUEUED[0][0]())) QUEUED.shift()[1]();
    if (SKEL) for (const fn of WAITING_FULL.splice(0)) fn();
  }
  svg.addEventListener("click", (ev) => {
    if (drag && drag.moved) return;
    const g = ev.target.closest("[data-name]");
    if (!g) return;
    const header = ev.target.classList.contains("header"), name = g.getAttribute("data-name");
    whenHere(() => here(name), () => clicked(name, header));
  });
  function clicked(name, header) {
    const n = NODE.get(name);
    if (!n) return;
    if (n.kind === "op" || (expanded.has(name) && !header)) {
      // Ops, and the body of an open group: select and show the card.
      selected = name;
      for (const e of viewport.querySelectorAll(".selected")) e.classList.remove("selected");
      if (ELEM.has(name)) ELEM.get(name).classList.add("selected");
    } else {
      // A closed group opens; an open group's header band closes it.
      selected = name;
      toggle(name);
    }
    showCard(n);
    for (const cb of SELECT_HANDLERS) cb(name);
  }
  colourSelect.addEventListener("change", () => { colourMode = colourSelect.value; render(); });
  fitButton.addEventListener("click", () => fitView(false));
  collapseButton.addEventListener("click", () => {
    expanded.clear();
    expanded.add("");
    scene = compose();
    fitView(true);
    draw();
  });

  // Search: names containing the text (case-insensitive), the first 50 listed, over every
  // node (opened or not) in the graph's order (pre-order, children in order).
  let searchTimer = null, LOW = null;
  function lowTable() {
    // The string table lower-cased (once; a name is lower-cased as its parts): one text
    // and where each entry starts in it.
    // (The first blob's entries: every label is among them.)
    if (LOW) return LOW;
    const n = STR0.off.length - 1;
    let text = STR0.text.toLowerCase(), off = STR0.off;
    if (text.length !== STR0.text.length) {
      // A character whose lower case is not as long: entry by entry.
      const parts = new Array(n), o = new Int32Array(n + 1);
      for (let k = 0; k < n; k++) { parts[k] = STR0(k).toLowerCase(); o[k + 1] = o[k] + parts[k].length; }
      text = parts.join("");
      off = o;
    }
    LOW = { text, off, n, at: (k) => text.slice(off[k], off[k + 1]) };
    return LOW;
  }
  function labelHits(q) {
    // 1 for each entry of the string table that contains q (lower case, not empty): one
    // pass over the text, not one test per entry.
    const L = lowTable(), hit = new Uint8Array(L.n), off = L.off;
    let at = 0, p;
    while ((p = L.text.indexOf(q, at)) >= 0) {
      const k = bisectRight(off, p) - 1; // the entry holding p (an empty one holds nothing)
      if (p + q.length <= off[k + 1]) { hit[k] = 1; at = off[k + 1]; } else at = p + 1;
    }
    return hit;
  }
  function searchNames(q, limit) {
    // The first names (at most limit, in pre-order) containing q (lower case). No name is
    // built but the results': per node, what its scope (BASE) has and its label adds.
    const out = [];
    preorder();
    const parts = q.split("/"), m = parts.length - 1, lab = C.label, exc = NAME_EXC.size > 0;
    const hit = new Uint8Array(N);
    if (m === 0) {
      // Within one part of a name: a node matches when its label or a scope above it
      // does (the distinct labels are tested once).
      const labelHit = labelHits(q);
      for (let n = 1; n < N && out.length < limit; n++) {
        const g = PRE_ORDER[n], ex = exc ? NAME_EXC.get(g) : undefined;
        hit[g] = ex !== undefined ? (ex.toLowerCase().indexOf(q) >= 0 ? 1 : 0)
          : labelHit[lab[g]] | hit[BASE[g]];
        if (hit[g]) out.push(nameOf(g));
      }
      return out;
    }
    if (m > 31) {
      // (More parts than a mask has bits: name by name.)
      for (let n = 1; n < N && out.length < limit; n++) {
        if (nameOf(PRE_ORDER[n]).toLowerCase().indexOf(q) >= 0) out.push(nameOf(PRE_ORDER[n]));
      }
      return out;
    }
    // Across scopes, q = p0/p1/.../pm: a name holds q when its scope does, or when its
    // last m + 1 parts read p0 (ending one), p1 ... p(m-1) (whole), pm (starting the
    // label). A node's state has bit t when its last t + 1 parts read p0 ... pt.
    const L = lowTable(), first = parts[0], last = parts[m], whole = new Map();
    for (let t = 1; t < m; t++) whole.set(parts[t], (whole.get(parts[t]) || 0) | (1 << t));
    const ends = new Uint8Array(L.n), starts = new Uint8Array(L.n), mids = new Int32Array(L.n);
    for (let k = 0; k < L.n; k++) {
      const x = L.at(k);
      ends[k] = x.endsWith(first) ? 1 : 0;
      starts[k] = x.startsWith(last) ? 1 : 0;
      if (m > 1) mids[k] = whole.get(x) || 0;
    }
    const state = new Int32Array(N), full = 1 << (m - 1);
    for (let n = 1; n < N && out.length < limit; n++) {
      const g = PRE_ORDER[n], ex = exc ? NAME_EXC.get(g) : undefined;
      if (ex !== undefined) {
        // A name given whole (page_data's "names"): tested as it is, its state part by part.
        const low = ex.toLowerCase();
        let st = 0;
        for (const x of low.split("/")) st = (x.endsWith(first) ? 1 : 0) | ((st << 1) & (whole.get(x) || 0));
        hit[g] = low.indexOf(q) >= 0 ? 1 : 0;
        state[g] = st;
      } else {
        const b = BASE[g], k = lab[g];
        hit[g] = hit[b] | ((state[b] & full) !== 0 ? starts[k] : 0);
        state[g] = ends[k] | ((state[b] << 1) & mids[k]);
      }
      if (hit[g]) out.push(nameOf(g));
    }
    return out;
  }
  function runSearch() {
    if (!SKEL) { whenTree(runSearch); return; }
    const q = search.value.trim().toLowerCase();
    results.replaceChildren();
    if (!q) { results.classList.remove("open"); return; }
    let count = 0;
    for (const nm of searchNames(q, 51)) {
      if (++count > 50) break;
      const b = htmlEl("button", { type: "button", "data-target": nm }, nm);
      results.appendChild(b);
    }
    if (!count) results.appendChild(htmlEl("div", null, "no match"));
    results.classList.add("open");
  }
  search.addEventListener("input", () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(runSearch, 120);
  });
  search.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter") {
      runSearch();
      whenTree(() => {
        const first = results.querySelector("button");
        if (first) pick(first.getAttribute("data-target"));
      });
    } else if (ev.key === "Escape") results.classList.remove("open");
  });
  function pick(name) {
    results.classList.remove("open");
    goTo(name, true);
  }
  results.addEventListener("click", (ev) => {
    const b = ev.target.closest("button");
    if (b) pick(b.getAttribute("data-target"));
  });

  // --- info card ------------------------------------------------------------------------------
  function shapeText(s) {
    if (s === null || s === undefined) return "?";
    if (!s.length) return "scalar";
    return s.map((d) => (d === null || d < 0 ? "?" : String(d))).join("\u00d7");
  }
  function row(table, k, v) {
    const tr = htmlEl("tr");
    tr.appendChild(htmlEl("td", null, k));
    const td = htmlEl("td");
    if (v instanceof Node) td.appendChild(v); else td.textContent = v;
    tr.appendChild(td);
    table.appendChild(tr);
  }
  function nameLink(nm, extra) {
    const span = htmlEl("span");
    if (NODE.has(nm)) {
      const a = htmlEl("span", { class: "link", "data-target": nm }, nm);
      span.appendChild(a);
    } else span.appendChild(document.createTextNode(nm));
    if (extra) span.appendChild(document.createTextNode(extra));
    return span;
  }
  function section(title) { card.appendChild(htmlEl("h3", null, title)); }
  function showCard(n) {
    card.replaceChildren();
    const close = htmlEl("button", { class: "close", type: "button", title: "Close" }, "\u00d7");
    card.appendChild(close);
    card.appendChild(htmlEl("h2", null, n.name || "(root)"));
    const t = htmlEl("table");
    card.appendChild(t);
    if (n.kind === "op") {
      row(t, "op", n.op);
      if (n.device) row(t, "device", n.device);
      if (n.xla_cluster) row(t, "XLA cluster", n.xla_cluster);
      if (typeof n.compute_time_us === "number") row(t, "compute time", n.compute_time_us + " \u00b5s");
      const shapes = n.shapes || [];
      row(t, "outputs", shapes.length ? shapes.map(shapeText).join(", ") : "(no shapes)");
      const attrs = own(n.attrs);
      if (attrs.length) {
        section("Attributes");
        const at = htmlEl("table");
        for (const k of attrs) row(at, k, String(n.attrs[k]));
        card.appendChild(at);
      }
      const ins = n.inputs || [];
      if (ins.length) {
        section("Inputs");
        const ul = htmlEl("ul");
        for (const e of ins) {
          const li = htmlEl("li");
          li.appendChild(nameLink(e.name, (e.slot ? ":" + e.slot : "") + (e.control ? " (control)" : "")));
          ul.appendChild(li);
        }
        card.appendChild(ul);
      }
      for (const [key, title] of [["in_embeddings", "Embedded inputs"], ["out_embeddings", "Embedded outputs"]]) {
        const list = n[key] || [];
        if (!list.length) continue;
        section(title);
        const ul = htmlEl("ul");
        for (const e of list) {
          ul.appendChild(htmlEl("li", null, e.name + " (" + e.op + ")" +
            ((e.shapes || []).length ? " " + e.shapes.map(shapeText).join(", ") : "")));
        }
        card.appendChild(ul);
      }
    } else {
      row(t, "kind", n.kind === "series" ? "series" : "group");
      row(t, "ops inside", String(n.cardinality));
      row(t, "children", String(n.i < N ? C.nchild[n.i] : n.children.length) +
        (n.i < N && ranged(n.i) ? " (in " + n.children.length + " ranges)" : ""));
      row(t, "depth", String(n.depth));
      if (n.template) {
        const info = TEMPLATE_INFO.get(n.template);
        row(t, "structure", "repeated " + (info ? info[1] : 0) + "\u00d7 (" + n.template + ")");
      } else row(t, "structure", "unique");
      if (n.series) row(t, "series", n.series.ids.length + " \u00d7 " + n.series.op + (n.series.vertical ? " (chained)" : ""));
      const sp = n.side_panel || {};
      const panel = (sp.in || []).concat(sp.out || []);
      if (panel.length) row(t, "side panel", panel.map((s) => s.split("/").pop()).join(", "));
      for (const [key, title] of [["op_histogram", "Ops"], ["device_histogram", "Devices"]]) {
        const hist = n[key] || {};
        const ks = own(hist).sort((a, b) => hist[b] - hist[a]);
        if (!ks.length) continue;
        section(title);
        const ht = htmlEl("table");
        for (const k of ks.slice(0, 20)) row(ht, k, String(hist[k]));
        if (ks.length > 20) row(ht, "\u2026", (ks.length - 20) + " more");
        card.appendChild(ht);
      }
    }
    card.classList.add("open");
  }
  card.addEventListener("click", (ev) => {
    if (ev.target.classList.contains("close")) { card.classList.remove("open"); return; }
    const a = ev.target.closest(".link");
    if (a) goTo(a.getAttribute("data-target"), false);
  });
  document.addEventListener("keydown", (ev) => {
    if (ev.key === "Escape") { card.classList.remove("open"); results.classList.remove("open"); }
  });

  // --- first paint, and a small API for tests and notebooks -----------------------------------
  const api = {
    timing: timing,
    // Layouts asked of the worker and not yet answered (an expand or reveal waits on them).
    pending() { return WAITING.size; },
    // The layout of group name in layout_to_json's form (made now if it was not yet); a
    // big group's is of its ranges, as layout.layout_view lays it out.
    layoutOf(name) {
      if (!FULL && name !== "") return null;
      const g = NODE.get(name);
      if (!isGroup(g)) return null;
      if (!LAYOUT.has(name)) LAYOUT.set(name, LAYOUT_JS.layoutSpec(specOf(g), RANKDIR));
      return LAYOUT.get(name);
    },
    // Before the whole graph is read, these wait for it.
    expand(name) {
      whenHere(() => here(name), () => { if (!expanded.has(name) && isGroup(NODE.get(name))) toggle(name); });
    },
    collapse(name) { whenHere(() => here(name), () => { if (name && expanded.has(name)) toggle(name); }); },
    // (The node's row is here: so are its ancestors' children and metaedges.)
    reveal(name) { whenHere(() => revealable(name), () => reveal(name)); },
    zoomTo(name) { zoomTo(name); },
    setColour(mode) { colourSelect.value = mode; colourMode = mode; render(); },
    expanded() { return Array.from(expanded); },
    // Absolute boxes [x, y, w, h] (centre-based) of every visible node, in layout pixels.
    boxes() { return scene ? Array.from(scene.abs) : []; },
    // Plugin interface: node styles, redraw, the live SVG, selection, info, side panels.
    registerNodeStyle(fn) { NODE_STYLES.push(fn); },
    redraw() { if (scene) restyle(); },
    svgElement() { return svg; },
    onSelect(cb) { SELECT_HANDLERS.push(cb); },
    nodeInfo(name) {
      if (!FULL) return null;
      const n = NODE.get(name);
      if (!n) return null;
      const info = { id: name, path: name, kind: n.kind === "op" ? "op" : n.kind === "series" ? "series" : "group" };
      if (n.kind !== "op") info.children = n.children.map((c) => c.name);
      return info;
    },
    // Everything the page knows of a node, in view_to_json's form (a group's children
    // as names), or null: the page's decoding, for tests.
    nodeData(name) {
      if (!FULL) return null;
      const n = NODE.get(name);
      if (!n) return null;
      const copy = (o) => Object.fromEntries(Object.keys(o).map((k) => [k, o[k]]));
      if (n.kind === "op") {
        return { kind: "op", name: n.name, label: n.label, op: n.op, device: n.device,
          attrs: copy(n.attrs), shapes: n.shapes, inputs: n.inputs, in_embeddings: n.in_embeddings,
          out_embeddings: n.out_embeddings, xla_cluster: n.xla_cluster, compute_time_us: n.compute_time_us };
      }
      return { kind: n.kind, name: n.name, label: n.label, depth: n.depth, cardinality: n.cardinality,
        op_histogram: copy(n.op_histogram), device_histogram: copy(n.device_histogram),
        template: n.template, series: n.series, side_panel: n.side_panel,
        children: n.i < N ? realChildren(n.i).map(nameOf) : n.children.map((c) => c.name),
        metaedges: (n.i < N ? realMetaedges(n.i) : n.metaedges).map((m) => ({ v: m.v, w: m.w, regular: m.regular, control: m.control,
          ref: m.ref, size: m.size, shapes: m.shapes })) };
    },
    addPanel(title, element) {
      const p = htmlEl("section", { class: "plugin-panel" });
      p.appendChild(htmlEl("h3", null, title));
      p.appendChild(element);
      panels.appendChild(p);
      return p;
    },
  };
  Object.defineProperty(window, "summarylibViewer", { value: api });
  // The top level is drawn at once from the head (the plugins' scripts, after this one,
  // restyle it when they have something to show); the near part and the blobs, in
  // blocks after the scripts, are each read as soon as the parser has gone past its
  // block (not when the whole document is parsed), inflated (DecompressionStream, in a
  // worker) and decoded: the near part first (small: the first levels of the tree), then
  // the first blob, then the second. What waited for them runs as each comes. Without a
  // head (a top level of more than page_data.HEAD_ROWS nodes) the top level is drawn from
  // the near part or the first blob. timing.frame (what tests and notebooks wait for)
  // comes once the second blob is here too, and the drawing has its edges into open
  // groups.
  let drawn = null;
  function firstDraw() {
    ROOT = nodeAt(0);
    drawn = new Promise((done) => withLayouts([""], () => {
      scene = compose();
      fitView(true, true);
      draw();
      api.timing.rendered = performance.now();
      done();
    }));
  }
  if (GD.head) {
    decodeHead(GD.head);
    api.timing.head = performance.now();
    firstDraw();
  }
  // Block "graph-<key>" parsed: a promise, resolved once the parser has gone past the
  // block (the next element exists) or the document is parsed (the block may be missing:
  // inflate() then fails and says so).
  const PARSING = new Map(); // key -> resolve
  function blockParsed(key) {
    const el = document.getElementById("graph-" + key);
    return document.readyState !== "loading" || (!!el && el.nextElementSibling !== null);
  }
  function checkBlocks() {
    for (const [key, done] of PARSING) if (blockParsed(key)) { PARSING.delete(key); done(); }
    if (!PARSING.size && watcher) { watcher.disconnect(); watcher = null; }
  }
  let watcher = null;
  function whenParsed(key) {
    if (blockParsed(key)) return Promise.resolve();
    return new Promise((done) => {
      PARSING.set(key, done);
      if (!watcher) {
        watcher = new MutationObserver(checkBlocks);
        watcher.observe(document.body, { childList: true });
        document.addEventListener("DOMContentLoaded", checkBlocks);
      }
    });
  }
  function readBlobs() {
    startInflater();
    // The near part is inflated in the page; then, in the worker, the first blob (the
    // tree), the chunks (those a click waits for first) and the second blob. (The first
    // blob after the near part: on two busy cores it would hold back the near part, and
    // the clicks that it answers.)
    let near = Promise.resolve();
    if (GD.near_index) {
      // (In the page: a worker takes a while to start while the page is being parsed.)
      near = decodeNear(whenParsed("near").then(() => inflate("near", true))).then((used) => {
        if (!used) return;
        api.timing.near = performance.now();
        if (!drawn) firstDraw();
        runWaiting();
      }, () => {}); // (the blob is read all the same)
    } else {
      whenParsed("near").then(() => { const b = document.getElementById("graph-near"); if (b) b.remove(); });
    }
    const tree = ["nchild", "kind", "nme"].map((k) => {
      const [dtype, off, len] = GD.columns[k];
      return [ARRAYS[dtype].name, off, len];
    });
    const blob = near.then(() => whenParsed("blob")).then(() => inflate("blob", false, tree));
    decode(blob).then(() => {
      api.timing.tree = performance.now();
      const chunks = whenParsed("chunks").then(() => readChunks(blockText("chunks")));
      runWaiting();
      // (Without a head or near part: once the top level's chunks are here, first.)
      if (!drawn) { if (canOpen(0)) firstDraw(); else QUEUED.unshift([() => canOpen(0), firstDraw]); }
      return chunks;
    }).then(() => {
      finishChunks();
      api.timing.parsed = T_PARSED = performance.now();
      runWaiting();
      LATER = decodeLater(whenParsed("later").then(() => inflate("later")));
      Promise.all([drawn, LATER]).then(() => {
        if (scene) { scene = compose(); draw(); }
        api.timing.later = performance.now();
        requestAnimationFrame(() => requestAnimationFrame(() => { api.timing.frame = performance.now(); }));
      }, fail);
    }, fail);
  }
  readBlobs();
  // The layout worker, started now (it takes a while to start while the page is parsed
  // and the blobs inflated): a big group opened early is not kept waiting for it.
  if (drawn) drawn.then(() => setTimeout(startWorker, 0));
  function fail(e) {
    stage.appendChild(htmlEl("p", { id: "failed" }, "This page could not read its graph: " + e));
    throw e;
  }
})();
