/* summarylib graph view: SVG and PNG of the current view (a plugin of viewer.js).
 *
 * SVG: a copy of the live drawing (window.summarylibViewer.svgElement()) at the size and
 * pan/zoom on screen, every element's computed style written onto it as presentation
 * attributes (fill, stroke, fonts...), so that the file looks the same without the page's
 * style sheet; a white background. PNG: that SVG drawn on a canvas at twice the screen's
 * resolution. Both download as "<title>.svg" / "<title>.png".
 *
 * window.summarylibExport (tests, notebooks): svgText() -> the SVG as text;
 * pngBlob() -> a Promise of the PNG Blob.
 */
(function () {
  "use strict";
  const V = window.summarylibViewer;
  if (!V) return;
  const SVGNS = "http://www.w3.org/2000/svg";
  // Properties that carry the drawing's look (the rest: defaults or interaction only).
  const PROPS = ["fill", "fill-opacity", "stroke", "stroke-width", "stroke-dasharray", "stroke-opacity",
    "opacity", "font-family", "font-size", "font-weight", "font-style", "text-anchor", "visibility"];
  const COLOUR_PROPS = { fill: "fill-opacity", stroke: "stroke-opacity" };
  const RGBA = /^rgba\((\d+),\s*(\d+),\s*(\d+),\s*([\d.]+)\)$/;

  function inline(live, copy) {
    const cs = getComputedStyle(live);
    if (cs.display === "none") { copy.setAttribute("display", "none"); return; }
    for (const p of PROPS) {
      let v = cs.getPropertyValue(p);
      if (!v) continue;
      const m = COLOUR_PROPS[p] ? RGBA.exec(v) : null;
      if (m) {
        // rgba() is not SVG 1.1: a colour and an opacity (none when fully transparent).
        const a = Number(m[4]);
        if (a === 0) { copy.setAttribute(p, "none"); continue; }
        v = "rgb(" + m[1] + "," + m[2] + "," + m[3] + ")";
        const op = Number(cs.getPropertyValue(COLOUR_PROPS[p]) || "1") * a;
        copy.setAttribute(COLOUR_PROPS[p], String(op));
      } else if (p === COLOUR_PROPS.fill || p === COLOUR_PROPS.stroke) {
        if (copy.hasAttribute(p)) continue; // set with its colour
      }
      copy.setAttribute(p, v);
    }
  }

  function svgText() {
    const live = V.svgElement();
    const w = Math.max(1, Math.round(live.clientWidth || 800));
    const h = Math.max(1, Math.round(live.clientHeight || 600));
    const copy = live.cloneNode(true);
    const a = live.querySelectorAll("*"), b = copy.querySelectorAll("*");
    for (let i = 0; i < a.length && i < b.length; i++) inline(a[i], b[i]);
    copy.removeAttribute("id");
    copy.removeAttribute("class");
    copy.setAttribute("xmlns", SVGNS);
    copy.setAttribute("width", String(w));
    copy.setAttribute("height", String(h));
    copy.setAttribute("viewBox", "0 0 " + w + " " + h);
    const bg = document.createElementNS(SVGNS, "rect");
    bg.setAttribute("width", "100%");
    bg.setAttribute("height", "100%");
    bg.setAttribute("fill", "#ffffff");
    copy.insertBefore(bg, copy.firstChild);
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + new XMLSerializer().serializeToString(copy);
  }

  function pngBlob(ratio) {
    const k = ratio || 2;
    const text = svgText();
    const live = V.svgElement();
    const w = Math.max(1, Math.round(live.clientWidth || 800));
    const h = Math.max(1, Math.round(live.clientHeight || 600));
    const img = new Image();
    const url = "data:image/svg+xml;charset=utf-8," + encodeURIComponent(text);
    img.src = url;
    return img.decode().then(() => {
      const canvas = document.createElement("canvas");
      canvas.width = w * k;
      canvas.height = h * k;
      const ctx = canvas.getContext("2d");
      ctx.scale(k, k);
      ctx.drawImage(img, 0, 0, w, h);
      return new Promise((resolve, reject) => canvas.toBlob((blob) => (blob ? resolve(blob)
        : reject(new Error("the canvas gave no PNG"))), "image/png"));
    });
  }

  function fileName(ext) {
    const base = (document.title || "graph").replace(/[^\w.-]+/g, "_").replace(/^_+|_+$/g, "") || "graph";
    return base.slice(0, 80) + "." + ext;
  }
  function download(blob, name) {
    const link = document.createElement("a");
    link.download = name;
    link.href = URL.createObjectURL(blob);
    document.body.appendChild(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(link.href), 10000);
  }

  const box = document.createElement("div");
  box.className = "export-buttons";
  for (const [id, text] of [["export-svg", "SVG"], ["export-png", "PNG"]]) {
    const b = document.createElement("button");
    b.type = "button";
    b.id = id;
    b.textContent = text;
    box.appendChild(b);
  }
  box.addEventListener("click", (ev) => {
    const b = ev.target.closest("button");
    if (!b) return;
    if (b.id === "export-svg") download(new Blob([svgText()], { type: "image/svg+xml" }), fileName("svg"));
    else pngBlob().then((blob) => download(blob, fileName("png")));
  });
  V.addPanel("Export the view", box);
  Object.defineProperty(window, "summarylibExport", { value: { svgText: svgText, pngBlob: pngBlob } });
})();
