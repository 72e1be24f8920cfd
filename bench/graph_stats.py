"""The statistics overlay of the graph view: a 24-block model with 2,000 steps of watch().

Run: ``python bench/graph_stats.py [--logdir DIR] [--steps 2000] [--blocks 24] [--scrub 300]``.

1. The run (skipped when ``--logdir`` already holds one with the same ``--steps`` and
   ``--blocks``): a transformer-style torch model (``--blocks`` blocks of two LayerNorms,
   q/k/v/o attention projections and a two-layer MLP; 195 modules, 390 parameters at 24
   blocks), its graph captured and written, trained ``--steps`` steps with
   ``integrations.torch.watch(model, log="all", log_freq=1)``: 780 histograms a step.
2. The page: ``read_statistics`` + ``view_to_html`` (seconds, HTML size, the statistics
   block's size and whether its values are quantized).
3. In headless Chromium (``tests/browser.py``'s): time to first paint, time to choose a
   statistic (decoding it), then the scrub: ``--scrub`` consecutive steps, each one
   ``summarylibStats.setStep`` (recompute every node's value, aggregate the groups, redraw)
   followed by one animation frame; the time per step is from one frame to the next, so it
   includes style, layout and paint (Chromium draws at most 60 frames a second, so 16.7 ms
   is the floor); ``setStep`` alone is the script's own work. Measured with every group
   closed (the top level) and with the blocks' series, every block and every attention
   group open (all modules drawn).

Prints one markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from tests.browser import CHROMIUM, CHROMIUM_ARGS  # noqa: E402


def make_run(logdir: Path, steps: int, blocks: int, dim: int = 16) -> None:
    import torch

    import summarylib as sl
    import summarylib.graph as sg
    from summarylib.integrations.torch import unwatch, watch

    torch.set_num_threads(1)
    torch.manual_seed(0)

    class Attention(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.q, self.k = torch.nn.Linear(dim, dim), torch.nn.Linear(dim, dim)
            self.v, self.o = torch.nn.Linear(dim, dim), torch.nn.Linear(dim, dim)

        def forward(self, x: Any) -> Any:
            a = torch.softmax(self.q(x) @ self.k(x).transpose(-1, -2) / dim**0.5, -1)
            return self.o(a @ self.v(x))

    class Block(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln1, self.ln2 = torch.nn.LayerNorm(dim), torch.nn.LayerNorm(dim)
            self.attn = Attention()
            self.fc1, self.fc2 = torch.nn.Linear(dim, 2 * dim), torch.nn.Linear(2 * dim, dim)

        def forward(self, x: Any) -> Any:
            x = x + self.attn(self.ln1(x))
            return x + self.fc2(torch.relu(self.fc1(self.ln2(x))))

    class Net(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb = torch.nn.Linear(8, dim)
            self.layers = torch.nn.ModuleList([Block() for _ in range(blocks)])
            self.head = torch.nn.Linear(dim, 4)

        def forward(self, x: Any) -> Any:
            x = self.emb(x)
            for b in self.layers:
                x = b(x)
            return self.head(x)

    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    writer = sl.create_file_writer(str(logdir))
    t0 = time.perf_counter()
    with writer.as_default():
        sg.write_graph(sg.capture(model, (torch.ones(2, 6, 8),)))
        watch(model, log="all", log_freq=1, writer=writer)
        for step in range(steps):
            loss = model(torch.randn(4, 6, 8)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 200 == 0:
                print(f"  step {step}: {time.perf_counter() - t0:.0f} s", file=sys.stderr)
        unwatch(model)
    writer.close()
    (logdir / "bench.json").write_text(json.dumps({"steps": steps, "blocks": blocks}))


SCRUB_JS = """async (n) => {
    const S = window.summarylibStats, steps = S.steps();
    const frame = () => new Promise((r) => requestAnimationFrame(r));
    await frame();
    const times = [], sync = [];
    let last = performance.now();
    for (let i = 0; i < n; i++) {
        const t = performance.now();
        S.setStep(steps[i % steps.length]);
        sync.push(performance.now() - t);
        await frame();
        const now = performance.now();
        times.push(now - last);
        last = now;
    }
    return [times, sync];
}"""


def measure_page(html_path: Path, scrub: int, blocks: int) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    out: dict[str, Any] = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        t0 = time.perf_counter()
        page.goto(html_path.as_uri())
        page.wait_for_function("() => window.summarylibStats && "
                               "window.summarylibViewer.timing.frame")
        out["open_s"] = page.evaluate("window.summarylibViewer.timing.frame") / 1000
        out["open_wall_s"] = time.perf_counter() - t0
        out["select_ms"] = page.evaluate("""() => { const t = performance.now();
            window.summarylibStats.select('gradients norm'); return performance.now() - t; }""")
        for label, expand in (("top level", False), ("all blocks open", True)):
            if expand:
                # The blocks are one stacked series, layers/[0-N]: open it and each block.
                page.evaluate("""(n) => { const v = window.summarylibViewer; v.expand('layers');
                    v.expand('layers/[0-' + (n - 1) + ']');
                    for (let i = 0; i < n; i++) {
                        v.expand('layers/' + i);
                        v.expand('layers/' + i + '/attn');
                    }
                }""", blocks)
            nodes = page.evaluate("document.querySelectorAll('#canvas [data-name]').length")
            times, sync = page.evaluate(SCRUB_JS, scrub)
            times, sync = times[5:], sync[5:]  # the first frames warm up
            out[label] = {"nodes": nodes, "median_ms": statistics.median(times),
                          "p90_ms": sorted(times)[int(0.9 * len(times))],
                          "fps": 1000 / statistics.mean(times),
                          "sync_ms": statistics.median(sync)}
        browser.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--logdir", type=Path,
                    default=Path(tempfile.gettempdir()) / "summarylib-bench-graph-stats")
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--blocks", type=int, default=24)
    ap.add_argument("--scrub", type=int, default=300)
    args = ap.parse_args()
    marker = args.logdir / "bench.json"
    want = {"steps": args.steps, "blocks": args.blocks}
    if not (marker.exists() and json.loads(marker.read_text()) == want):
        if args.logdir.exists():
            import shutil

            shutil.rmtree(args.logdir)
        print(f"writing the run to {args.logdir} ...", file=sys.stderr)
        t = time.perf_counter()
        make_run(args.logdir, args.steps, args.blocks)
        print(f"  done in {time.perf_counter() - t:.0f} s", file=sys.stderr)

    from summarylib.graph.view import build_view, load_graph, read_statistics, view_to_html

    t = time.perf_counter()
    view = build_view(load_graph(str(args.logdir)).graph_def)
    stats = read_statistics(args.logdir, view)
    t_read = time.perf_counter() - t
    t = time.perf_counter()
    html = view_to_html(view, title="bench", statistics=stats)
    t_html = time.perf_counter() - t
    start = html.index('id="graph-statistics">')
    block = html[start:html.index("</script>", start)]
    path = Path(tempfile.mkdtemp()) / "stats.html"
    path.write_text(html, encoding="utf-8")
    nodes = {n for per in stats.series.values() for n in per}
    page = measure_page(path, args.scrub, args.blocks)
    os.remove(path)
    mb = 1024 * 1024
    kind = "quantized to 16 bits" if '"u16"' in block else "float32"
    print(f"\n{args.blocks} blocks, {args.steps} steps of watch(log='all'): "
          f"{len(stats.series)} statistics on {len(nodes)} modules, "
          f"values {kind}\n")
    print("| read + join | `view_to_html` | HTML | statistics block | first paint | "
          "choose a statistic |")
    print("|---:|---:|---:|---:|---:|---:|")
    print(f"| {t_read:.2f} s | {t_html:.2f} s | {len(html) / mb:.1f} MB | "
          f"{len(block) / mb:.1f} MB | {page['open_s']:.2f} s | {page['select_ms']:.0f} ms |\n")
    print("| view | nodes drawn | `setStep` (median) | frame to frame (median) | p90 | "
          "steps per second |")
    print("|---|---:|---:|---:|---:|---:|")
    for label in ("top level", "all blocks open"):
        r = page[label]
        print(f"| {label} | {r['nodes']} | {r['sync_ms']:.1f} ms | {r['median_ms']:.1f} ms | "
              f"{r['p90_ms']:.1f} ms | {r['fps']:.0f} |")


if __name__ == "__main__":
    main()
