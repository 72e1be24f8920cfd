"""Markdown tables and the target check for a bench result (see run.py)."""

from __future__ import annotations

import os
from typing import Any

import cases as casedefs

TIMES = "\u00d7"  # the multiplication sign, for ratios
OURS = "summarylib"
FLOORS = ("floor", "floor-tensor")
#: (case, limit on ours ÷ floor incl. close): the project's speed targets.
# Images are encoded on more than one thread where there are two cores or more, so there
# they must beat the synchronous floor clearly; on one core, stay near it.
_IMAGE_TARGET = 0.7 if (os.cpu_count() or 1) >= 2 else 1.1
RATIO_TARGETS = {"scalar": 1.5, "hist": 1.3, "hist_big": 1.2, "image": _IMAGE_TARGET, "pr": 1.5}


def _num(x: float) -> str:
    if x >= 1000:
        return f"{x:,.0f}"
    if x >= 100:
        return f"{x:.0f}"
    if x >= 10:
        return f"{x:.1f}"
    return f"{x:.2f}"


def _ratio(x: float) -> str:
    return f"{x:.2f}{TIMES}" if x < 10 else f"{x:.0f}{TIMES}"


def floor_name(result: dict[str, Any], case: str) -> str:
    return str(result.get("floor_of", {}).get(case, "floor"))


def ours_over_floor(result: dict[str, Any], case: str) -> float | None:
    rows = result["cases"].get(case, {})
    ours, floor = rows.get(OURS), rows.get(floor_name(result, case))
    if not ours or not floor or "na" in ours or "na" in floor:
        return None
    return float(ours["us_per_item_incl_close"] / floor["us_per_item_incl_close"])


def case_table(result: dict[str, Any], name: str) -> str:
    case = casedefs.CASES[name]
    rows = result["cases"][name]
    unit = case.unit
    floor = floor_name(result, name)
    ours = rows.get(OURS)
    head = (
        f"| system | µs/{unit} | µs/{unit} incl. close | min-max | CPU µs/{unit} | close ms "
        f"| bytes/call | ours ÷ {floor} | peer ÷ ours |\n"
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
    )
    order = [s for s in FLOORS if s in rows] + [s for s in rows if s not in FLOORS]
    lines = [head]
    for sys_name in order:
        rec = rows[sys_name]
        if "na" in rec:
            lines.append(f"| {sys_name} | {rec['na']} | | | | | | | |")
            continue
        total = rec["us_per_item_incl_close"]
        mine = peer = ""
        if sys_name == OURS and floor in rows and "na" not in rows[floor]:
            mine = _ratio(total / rows[floor]["us_per_item_incl_close"])
        elif sys_name not in FLOORS and sys_name != OURS and ours and "na" not in ours:
            peer = _ratio(total / ours["us_per_item_incl_close"])
        label = f"**{sys_name}**" if sys_name == OURS else sys_name
        spread = (
            f"{_num(rec['us_per_item_incl_close_min'])}-{_num(rec['us_per_item_incl_close_max'])}"
        )
        lines.append(
            f"| {label} | {_num(rec['us_per_item'])} | {_num(total)} | {spread} "
            f"| {_num(rec['cpu_us_per_item'])} | {rec['close_ms']:.2f} "
            f"| {_num(rec['bytes_per_call'])} | {mine} | {peer} |"
        )
    for sys_name, why in result.get("unavailable", {}).items():
        if sys_name not in FLOORS:
            lines.append(f"| {sys_name} | n/a ({why}) | | | | | | | |")
    return "\n".join(lines)


def import_table(result: dict[str, Any]) -> str:
    rows = result["import"]
    n = next((r["n"] for r in rows.values() if "n" in r), 0)
    lines = [
        "| system | import s | RSS after import MB | import → first scalar closed ms "
        f"| peak RSS after {n:,} scalars MB | heavy modules loaded by the import |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for name, r in rows.items():
        if "na" in r:
            lines.append(f"| {name} | {r['na']} | | | | |")
            continue
        heavy = ", ".join(r["heavy_modules_after_import"]) or "none"
        lines.append(
            f"| {name} | {r['import_s']:.3f} | {r['rss_after_import_mb']:.0f} "
            f"| {r['first_scalar_s'] * 1e3:.1f} | {r['peak_rss_mb']:.0f} | {heavy} |"
        )
    return "\n".join(lines)


def memory_table(result: dict[str, Any]) -> str:
    lines = [f"| system | extra peak MB | {TIMES} input (40 MB) |", "|---|---:|---:|"]
    for name, r in result["memory_hist_big"].items():
        if "na" in r:
            lines.append(f"| {name} | {r['na']} | |")
            continue
        lines.append(
            f"| {name} | {r['extra_peak_bytes'] / 2**20:.1f} | {r['extra_over_input']:.2f} |"
        )
    return "\n".join(lines)


def latency_text(result: dict[str, Any]) -> str:
    r = result["latency"]
    fb = r["full_buffer"]
    return "\n".join(
        [
            f"Output stalls {r['stall_ms']:.0f} ms on every write; {r['n']:,} `scalar()` calls, "
            f"median of {r['reps']} runs. Buffer bound: {r['max_buffer_bytes'] / 2**20:.0f} MiB "
            "of pending event bytes (`max_buffer_bytes`); the caller waits when it is full.",
            "",
            "| p50 µs | p99 µs | p99.9 µs | max µs | loop s | every record written |",
            "|---:|---:|---:|---:|---:|---|",
            f"| {r['p50_us']:.2f} | {r['p99_us']:.2f} | {r['p999_us']:.1f} "
            f"| {r['max_us']:,.0f} | {r['loop_s']:.2f} | {r['all_records_written']} |",
            "",
            f"Full buffer: bound {fb['max_buffer_bytes'] // 1024} KiB, stall "
            f"{fb['stall_ms']:.0f} ms, {fb['n']:,} calls: {fb['calls_that_waited']} calls waited "
            f"for the writer (longest {fb['max_us'] / 1e3:.0f} ms), "
            f"{fb['records']:,} of {fb['expected_records']:,} records in the output "
            f"(nothing dropped: {fb['nothing_dropped']}).",
        ]
    )


QUICK = "not evaluated (quick run)"


def targets(result: dict[str, Any]) -> list[dict[str, Any]]:
    """Each speed target with the measured value and whether it is met.

    A ``--quick`` run evaluates none of them (``met`` is None): its loops are
    5x shorter, so ``close()`` weighs 5x more per call, and the other cases
    are shortened too. The measured values are still shown.
    """
    out: list[dict[str, Any]] = []
    quick = bool(result.get("quick"))

    def add(what: str, value: float | None, limit: float, fmt: str) -> None:
        out.append(
            {
                "target": what,
                "limit": limit,
                "value": value,
                "shown": "n/a" if value is None else fmt.format(value),
                "met": None if value is None or quick else value <= limit,
            }
        )

    for case, limit in RATIO_TARGETS.items():
        if case in result["cases"]:
            add(
                f"{case}: ours ÷ {floor_name(result, case)} incl. close ≤ {limit}",
                ours_over_floor(result, case),
                limit,
                "{:.2f}" + TIMES,
            )
    c = result["cases"]
    if OURS in c.get("scalars20", {}) and "na" not in c["scalars20"][OURS]:
        add(
            "scalars() mapping, 20 metrics: µs per metric incl. close ≤ 0.6",
            c["scalars20"][OURS]["us_per_item_incl_close"],
            0.6,
            "{:.3f} µs",
        )
    if OURS in c.get("scalar", {}):
        add("bytes per scalar event ≤ 51", c["scalar"][OURS]["bytes_per_call"], 51, "{:.1f} B")
    mem = result.get("memory_hist_big", {}).get(OURS)
    if mem and "na" not in mem:
        add(
            f"histogram 10M: extra memory ≤ 2{TIMES} input",
            mem["extra_over_input"],
            2.0,
            "{:.2f}" + TIMES,
        )
    imp = result.get("import", {}).get(OURS)
    if imp and "na" not in imp:
        add("import summarylib ≤ 0.15 s", imp["import_s"], 0.15, "{:.3f} s")
        add("RSS after import ≤ 40 MB", imp["rss_after_import_mb"], 40, "{:.0f} MB")
    lat = result.get("latency")
    if lat:
        add("stalled output: p99 per scalar() ≤ 20 µs", lat["p99_us"], 20, "{:.2f} µs")
    return out


def render(result: dict[str, Any]) -> str:
    parts = []
    for name in result["cases"]:
        case = casedefs.CASES[name]
        n = next((r["n"] for r in result["cases"][name].values() if "n" in r), case.n)
        parts.append(f"### {name}: {case.title} — n={n:,}, median of {result['reps']} reps\n")
        parts.append(case_table(result, name) + "\n")
    if "memory_hist_big" in result:
        parts.append("### memory: one histogram of 10M float32 (tracemalloc peak)\n")
        parts.append(memory_table(result) + "\n")
    if "import" in result:
        parts.append("### import and RSS (fresh interpreter per run, medians)\n")
        parts.append(import_table(result) + "\n")
    if "latency" in result:
        parts.append("### latency with a stalled output\n")
        parts.append(latency_text(result) + "\n")
    if result.get("targets"):
        # A quick run judges nothing, also in JSON saved before that was so.
        quick = bool(result.get("quick"))
        parts.append("### targets" + (f" — {QUICK}" if quick else "") + "\n")
        lines = ["| target | measured | met |", "|---|---:|---|"]
        for t in result["targets"]:
            met = "n/a" if t["met"] is None else ("yes" if t["met"] else "**no**")
            lines.append(f"| {t['target']} | {t['shown']} | {QUICK if quick else met} |")
        parts.append("\n".join(lines) + "\n")
    return "\n".join(parts)


def main() -> None:
    """``python bench/table.py RESULTS.json``: print the tables of a saved run again."""
    import json
    import sys

    with open(sys.argv[1]) as fh:
        print(render(json.load(fh)))


if __name__ == "__main__":
    main()
