/* summarylib graph view: the training-statistics overlay (a plugin of viewer.js).
 *
 * Data: the JSON block "graph-statistics" (statistics.statistics_to_json): runs (1, or 2
 * for a comparison), steps (distinct step arrays), nodes (names with values), groups
 * ([name, [node index...]]: the nodes beneath each group), statistics ([{name, kind,
 * series: [[run, node, steps index, values]]}], values as base64 float32 or
 * {u16, lo, hi[, inf]}). A statistic's values are decoded when it is first chosen. A value
 * of +Infinity means "no finite value at that step" (a NaN or infinite scalar, a histogram
 * that counted nothing): drawn in NON_FINITE, outside the scale, and a group's max shows it.
 *
 * At a step s a node shows its last value at or before s; a group shows the max (or mean,
 * or min: the "groups" choice) of the values of the nodes beneath it that have one. The
 * colour scale spans the statistic's values over every step and node (of both runs), so
 * colours compare across steps; "B - A" uses a diverging scale symmetric around 0. A
 * statistic whose positive values span 100x or more opens on a log scale.
 *
 * Talks to the viewer only through window.summarylibViewer (registerNodeStyle, redraw,
 * onSelect, addPanel). window.summarylibStats (tests, benchmarks, notebooks):
 * statistics(), select(name), steps(), setStep(step), step(), setMode("a"|"b"|"diff"),
 * setAggregate("max"|"mean"|"min"), setScale("linear"|"log"), value(name) -> the
 * shown value or null, colour(name) -> the fill or null.
 */
(function () {
  "use strict";
  const V = window.summarylibViewer;
  if (!V) return;
  // The statistics' block follows the scripts (html_export.py): it is read once the
  // document is parsed, after the viewer has drawn the top level.
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
  function start() {
    const block = document.getElementById("graph-statistics");
    if (!block) return;
    const S = JSON.parse(block.textContent);
    const SVGNS = "http://www.w3.org/2000/svg";
    const NODES = S.nodes;
    const NODE_IX = new Map();
    NODES.forEach((n, i) => NODE_IX.set(n, i));
    const GROUPS = new Map();
    for (const [g, ix] of S.groups) GROUPS.set(g, Int32Array.from(ix));
    const STEPS = S.steps.map((a) => Float64Array.from(a));
    const ALL = (() => {
      const u = new Set();
      for (const a of S.steps) for (const s of a) u.add(s);
      return Float64Array.from(Array.from(u).sort((a, b) => a - b));
    })();
    const RUNS = S.runs;
    const STATS = new Map();
    for (const st of S.statistics) STATS.set(st.name, st);
    const NO_DATA = "#f0f0f0";
    const NON_FINITE = "#e6007e"; // no finite value: a magenta no ramp colour comes near
    const finite = (x) => x > -Infinity && x < Infinity; // false for NaN too

    // --- decoding ----------------------------------------------------------------------------
    function bytes(b64) {
      const s = atob(b64), u = new Uint8Array(s.length);
      for (let i = 0; i < s.length; i++) u[i] = s.charCodeAt(i);
      return u.buffer;
    }
    function decodeValues(v) {
      if (typeof v === "string") return new Float32Array(bytes(v));
      const q = new Uint16Array(bytes(v.u16)), out = new Float32Array(q.length);
      const k = (v.hi - v.lo) / 65534;
      for (let i = 0; i < q.length; i++) out[i] = q[i] === 65535 ? NaN : v.lo + q[i] * k;
      if (v.inf) for (const i of new Uint32Array(bytes(v.inf))) out[i] = Infinity;
      return out;
    }
    const DECODED = new Map(); // name -> {runs: [[{steps, values} | null per node]], lo, hi}
    function decoded(name) {
      let d = DECODED.get(name);
      if (d) return d;
      const st = STATS.get(name);
      const runs = RUNS.map(() => new Array(NODES.length).fill(null));
      let lo = Infinity, hi = -Infinity, posLo = Infinity;
      for (const [r, node, si, values] of st.series) {
        const vals = decodeValues(values);
        runs[r][node] = { steps: si, values: vals };
        for (let i = 0; i < vals.length; i++) {
          const x = vals[i];
          if (!finite(x)) continue; // the scale spans the finite values
          if (x < lo) lo = x;
          if (x > hi) hi = x;
          if (x > 0 && x < posLo) posLo = x;
        }
      }
      d = { runs: runs, lo: lo, hi: hi, posLo: posLo, diffMax: null };
      DECODED.set(name, d);
      return d;
    }

    // --- state ----------------------------------------------------------------------------------
    let current = null; // statistic name, or null: no overlay
    let stepIndex = ALL.length ? ALL.length - 1 : 0;
    let mode = "a"; // "a", "b" (second run) or "diff" (b - a)
    let aggregate = "max";
    let scale = "linear";
    let selected = null;
    let leaf = null; // Float64Array: each node's shown value at the current step (NaN: none)
    const groupCache = new Map();

    function bisectRight(a, v) {
      let lo = 0, hi = a.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (v < a[mid]) hi = mid; else lo = mid + 1;
      }
      return lo;
    }
    function leafValues(stepValue) {
      // Every node's value at stepValue for the current statistic and mode.
      const d = decoded(current);
      const pos = STEPS.map((a) => bisectRight(a, stepValue) - 1);
      const at = (r, i) => {
        const e = d.runs[r] && d.runs[r][i];
        if (!e) return NaN;
        const p = pos[e.steps];
        return p < 0 ? NaN : e.values[p];
      };
      const out = new Float64Array(NODES.length);
      for (let i = 0; i < NODES.length; i++) {
        out[i] = mode === "a" ? at(0, i) : mode === "b" ? at(1, i) : at(1, i) - at(0, i);
      }
      return out;
    }
    function aggregateOf(values, ix) {
      let n = 0, acc = aggregate === "max" ? -Infinity : aggregate === "min" ? Infinity : 0;
      for (let k = 0; k < ix.length; k++) {
        const x = values[ix[k]];
        if (x !== x) continue;
        n++;
        if (aggregate === "max") { if (x > acc) acc = x; } else if (aggregate === "min") { if (x < acc) acc = x; } else acc += x;
      }
      if (!n) return NaN;
      return aggregate === "mean" ? acc / n : acc;
    }
    function valueIn(values, name, cache) {
      const i = NODE_IX.get(name);
      if (i !== undefined) return values[i];
      const ix = GROUPS.get(name);
      if (!ix) return NaN;
      if (cache && cache.has(name)) return cache.get(name);
      const v = aggregateOf(values, ix);
      if (cache) cache.set(name, v);
      return v;
    }
    function refresh() {
      groupCache.clear();
      leaf = current ? leafValues(ALL[stepIndex]) : null;
    }

    // --- colours --------------------------------------------------------------------------------
    const SEQ = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]];
    const DIV = [[33, 102, 172], [247, 247, 247], [178, 24, 43]];
    function ramp(stops, t) {
      t = Math.max(0, Math.min(1, t));
      const x = t * (stops.length - 1), k = Math.min(stops.length - 2, Math.floor(x)), f = x - k;
      const a = stops[k], b = stops[k + 1];
      return "rgb(" + Math.round(a[0] + (b[0] - a[0]) * f) + "," + Math.round(a[1] + (b[1] - a[1]) * f) + "," +
        Math.round(a[2] + (b[2] - a[2]) * f) + ")";
    }
    function diffMax(d) {
      if (d.diffMax !== null) return d.diffMax;
      let m = 0;
      for (let k = 0; k < ALL.length; k++) {
        const v = leafValues(ALL[k]);
        for (let i = 0; i < v.length; i++) if (finite(v[i])) m = Math.max(m, Math.abs(v[i]));
      }
      d.diffMax = m;
      return m;
    }
    function domain() {
      const d = decoded(current);
      if (mode === "diff") { const m = diffMax(d); return [-m, m]; }
      return [d.lo, d.hi];
    }
    function logScale() {
      const d = decoded(current);
      return scale === "log" && mode !== "diff" && d.posLo < Infinity;
    }
    function position(v) {
      const [lo, hi] = domain();
      if (logScale()) {
        const l0 = Math.log(decoded(current).posLo), l1 = Math.log(hi);
        return l1 > l0 ? (Math.log(Math.max(v, decoded(current).posLo)) - l0) / (l1 - l0) : 0.5;
      }
      return hi > lo ? (v - lo) / (hi - lo) : 0.5;
    }
    function colourOf(v) {
      return mode === "diff" ? ramp(DIV, position(v)) : ramp(SEQ, position(v));
    }
    const fmt = (v) => (v !== v ? "\u2013" : !finite(v) ? "no finite value" : Math.abs(v) >= 1e4 || (v !== 0 && Math.abs(v) < 1e-3)
      ? v.toExponential(3) : String(Math.round(v * 1e4) / 1e4));

    // --- the node style -------------------------------------------------------------------------
    const modeLabel = () => (mode === "diff" ? RUNS[1] + " \u2212 " + RUNS[0] : RUNS[mode === "b" ? 1 : 0]);
    V.registerNodeStyle((name) => {
      if (!current) return null;
      const v = valueIn(leaf, name, groupCache);
      const group = !NODE_IX.has(name) && GROUPS.has(name);
      const title = name + "\n" + current + (group ? " (" + aggregate + " beneath)" : "") + " = " + fmt(v) +
        " at step " + ALL[stepIndex] + (RUNS.length > 1 ? " [" + modeLabel() + "]" : "");
      if (v !== v) return { fill: NO_DATA, title: title };
      if (!finite(v)) return { fill: NON_FINITE, title: title };
      return { fill: colourOf(v), title: title };
    });

    // --- the panel ------------------------------------------------------------------------------
    function el(tag, attrs, text) {
      const e = document.createElement(tag);
      if (attrs) for (const k of Object.keys(attrs)) e.setAttribute(k, attrs[k]);
      if (text !== undefined) e.textContent = text;
      return e;
    }
    function svgEl(tag, attrs) {
      const e = document.createElementNS(SVGNS, tag);
      for (const k of Object.keys(attrs)) e.setAttribute(k, attrs[k]);
      return e;
    }
    const panel = el("div", { id: "stats-panel" });
    const statSelect = el("select", { id: "stats-statistic" });
    statSelect.appendChild(el("option", { value: "" }, "(none)"));
    for (const st of S.statistics) statSelect.appendChild(el("option", { value: st.name }, st.name));
    const modeSelect = el("select", { id: "stats-mode" });
    for (const [v, t] of [["a", RUNS[0]], ["b", RUNS[1]], ["diff", (RUNS[1] || "") + " \u2212 " + RUNS[0]]]) {
      if (v !== "a" && RUNS.length < 2) continue;
      modeSelect.appendChild(el("option", { value: v }, t));
    }
    const aggSelect = el("select", { id: "stats-aggregate", title: "what a group shows of the nodes beneath it" });
    for (const a of ["max", "mean", "min"]) aggSelect.appendChild(el("option", { value: a }, a));
    const scaleSelect = el("select", { id: "stats-scale" });
    for (const a of ["linear", "log"]) scaleSelect.appendChild(el("option", { value: a }, a));
    const slider = el("input", { id: "stats-step", type: "range", min: "0", max: String(Math.max(0, ALL.length - 1)),
      value: String(stepIndex), step: "1" });
    const stepLabel = el("span", { class: "stats-step-label" });
    const legendBar = el("div", { class: "stats-ramp" });
    const legendLo = el("span"), legendHi = el("span");
    const legendRow = el("div", { class: "stats-legend" });
    const noData = el("span", { class: "swatch" });
    noData.style.background = NO_DATA;
    legendRow.appendChild(legendLo);
    legendRow.appendChild(legendBar);
    legendRow.appendChild(legendHi);
    const legendNote = el("div", { class: "stats-note" });
    const spark = svgEl("svg", { id: "stats-sparkline", width: "220", height: "46", viewBox: "0 0 220 46" });
    const sparkLabel = el("div", { class: "stats-note" });
    const line = (label, control) => {
      const l = el("label", null, label + " ");
      l.appendChild(control);
      panel.appendChild(l);
    };
    line("colour by", statSelect);
    if (RUNS.length > 1) line("show", modeSelect);
    line("groups", aggSelect);
    line("scale", scaleSelect);
    const stepRow = el("div", { class: "stats-steprow" });
    stepRow.appendChild(slider);
    stepRow.appendChild(stepLabel);
    panel.appendChild(stepRow);
    panel.appendChild(legendRow);
    const noRow = el("div", { class: "stats-note" });
    noRow.appendChild(noData);
    noRow.appendChild(document.createTextNode(" no value "));
    const nonFinite = el("span", { class: "swatch" });
    nonFinite.style.background = NON_FINITE;
    noRow.appendChild(nonFinite);
    noRow.appendChild(document.createTextNode(" no finite value"));
    panel.appendChild(noRow);
    panel.appendChild(legendNote);
    panel.appendChild(sparkLabel);
    panel.appendChild(spark);
    V.addPanel("Statistics", panel);

    function drawLegend() {
      stepLabel.textContent = ALL.length ? "step " + ALL[stepIndex] : "no steps";
      if (!current) {
        legendLo.textContent = legendHi.textContent = "";
        legendBar.style.background = "none";
        legendNote.textContent = S.statistics.length + " statistics on " + NODES.length + " nodes";
        return;
      }
      const [lo, hi] = domain();
      const stops = mode === "diff" ? DIV : SEQ;
      legendBar.style.background = "linear-gradient(to right, " + stops.map((c, k) =>
        ramp(stops, k / (stops.length - 1))).join(", ") + ")";
      legendLo.textContent = fmt(logScale() ? decoded(current).posLo : lo);
      legendHi.textContent = fmt(hi);
      legendNote.textContent = (logScale() ? "log scale; " : "") + "groups: " + aggregate + " of the nodes beneath";
    }
    let sparkKey = null, sparkX = null, nowLine = null, sparkRange = null;
    function drawSparkline() {
      // The lines are drawn again only when what they show changes; a step moves the marker.
      const isGroup = selected !== null && !NODE_IX.has(selected);
      const key = current && selected && !(isGroup && !GROUPS.has(selected))
        ? [current, selected, mode, aggregate].join("\u0000") : null;
      if (key !== sparkKey) {
        sparkKey = key;
        spark.replaceChildren();
        nowLine = null;
        if (key !== null) drawSparkLines();
      }
      if (!current) { sparkLabel.textContent = ""; return; }
      if (!selected) { sparkLabel.textContent = "select a node for its history"; return; }
      if (key === null) { sparkLabel.textContent = selected + ": no value"; return; }
      const x = sparkX(stepIndex).toFixed(1);
      nowLine.setAttribute("x1", x);
      nowLine.setAttribute("x2", x);
      const v = valueIn(leaf, selected, groupCache);
      sparkLabel.textContent = selected + (isGroup ? " (" + aggregate + ")" : "") + ": " + fmt(v) +
        " [" + fmt(sparkRange[0]) + " \u2026 " + fmt(sparkRange[1]) + "]";
    }
    function drawSparkLines() {
      const W = 220, H = 46, runs = mode === "diff" ? [null] : (RUNS.length > 1 ? [0, 1] : [0]);
      const series = runs.map((r) => {
        const saved = mode;
        const out = new Float64Array(ALL.length);
        if (r !== null) mode = r === 0 ? "a" : "b";
        for (let k = 0; k < ALL.length; k++) out[k] = valueIn(leafValues(ALL[k]), selected, null);
        mode = saved;
        return out;
      });
      let lo = Infinity, hi = -Infinity;
      for (const s of series) for (const x of s) if (finite(x)) { lo = Math.min(lo, x); hi = Math.max(hi, x); }
      sparkRange = [lo, hi];
      sparkX = (k) => (ALL.length > 1 ? 2 + (k * (W - 4)) / (ALL.length - 1) : W / 2);
      const ys = (v) => (hi > lo ? H - 3 - ((v - lo) * (H - 6)) / (hi - lo) : H / 2);
      series.forEach((s, r) => {
        let dstr = "", pen = false;
        for (let k = 0; k < s.length; k++) {
          if (!finite(s[k])) { pen = false; continue; }
          dstr += (pen ? "L" : "M") + sparkX(k).toFixed(1) + "," + ys(s[k]).toFixed(1);
          pen = true;
        }
        spark.appendChild(svgEl("path", { d: dstr, class: "spark-line run" + (runs[r] === 1 ? "1" : "0") }));
      });
      nowLine = svgEl("line", { y1: "0", y2: String(H), class: "spark-now" });
      spark.appendChild(nowLine);
    }
    function update() {
      refresh();
      V.redraw();
      drawLegend();
      drawSparkline();
    }
    let pending = false;
    slider.addEventListener("input", () => {
      stepIndex = Number(slider.value);
      if (pending) return;
      pending = true;
      requestAnimationFrame(() => { pending = false; update(); });
    });
    function choose(name) {
      // A statistic spanning two orders of magnitude or more opens on a log scale.
      current = name;
      statSelect.value = name || "";
      if (name) {
        const d = decoded(name);
        scale = d.lo > 0 && d.hi >= 100 * d.lo ? "log" : "linear";
        scaleSelect.value = scale;
      }
      update();
    }
    statSelect.addEventListener("change", () => choose(statSelect.value || null));
    modeSelect.addEventListener("change", () => { mode = modeSelect.value; update(); });
    aggSelect.addEventListener("change", () => { aggregate = aggSelect.value; update(); });
    scaleSelect.addEventListener("change", () => { scale = scaleSelect.value; update(); });
    V.onSelect((name) => { selected = name; drawSparkline(); });
    drawLegend();

    const api = {
      statistics() { return S.statistics.map((s) => s.name); },
      select(name) {
        if (name !== null && !STATS.has(name)) throw new Error("no statistic " + name);
        choose(name);
      },
      steps() { return Array.from(ALL); },
      step() { return ALL[stepIndex]; },
      setStep(step) {
        // The index of the last step at or before ``step``.
        stepIndex = Math.max(0, bisectRight(ALL, step) - 1);
        slider.value = String(stepIndex);
        update();
      },
      setMode(m) { mode = m; modeSelect.value = m; update(); },
      setAggregate(a) { aggregate = a; aggSelect.value = a; update(); },
      setScale(s) { scale = s; scaleSelect.value = s; update(); },
      value(name) { if (!current) return null; const v = valueIn(leaf, name, groupCache); return v === v ? v : null; },
      colour(name) {
        if (!current) return null;
        const v = valueIn(leaf, name, groupCache);
        return v !== v ? null : finite(v) ? colourOf(v) : NON_FINITE;
      },
    };
    Object.defineProperty(window, "summarylibStats", { value: api });
  }
})();
