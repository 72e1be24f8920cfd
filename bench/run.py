"""summarylib beside tensorboardX, torch.utils.tensorboard, tf.summary and a hand-encoded floor.

    python bench/run.py                 # everything, 5 repetitions (~5-10 min on 2 cores)
    python bench/run.py --quick         # fewer calls per repetition, same reps; no target verdicts
    python bench/run.py --cases scalar scalars20 --reps 7 --json /tmp/b.json

All systems run in this one process, alternating within every repetition
(the order rotates from one repetition to the next), and every number is the
median over the repetitions. A repetition opens a writer on a fresh directory,
runs the calls, then closes it; "incl. close" adds close() to the loop time.
Import cost and peak RSS come from fresh interpreters (bench/probe.py).

The floor is bench/floor.py: Event bytes encoded by hand and written
synchronously (no thread, no checks). ``--floor-module FILE`` runs another module
with the same classes in its place, as a cross-check of the floor itself.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import cases as casedefs  # noqa: E402
import latency  # noqa: E402
import systems  # noqa: E402
import table  # noqa: E402

#: The floor each case is compared with: same layout as ours where it exists.
FLOOR_OF = {"scalar": "floor-tensor"}
DEFAULT_SYSTEMS = [
    "summarylib",
    "summarylib-scalar-x20",
    "floor",
    "floor-tensor",
    "tensorboardX",
    "torch.utils.tensorboard",
    "tf.summary",
    "tf.function",
]
WARMUP_CALLS = 20


def dir_bytes(d: str) -> tuple[int, int]:
    total = files = 0
    for root, _dirs, names in os.walk(d):
        for name in names:
            total += os.path.getsize(os.path.join(root, name))
            files += 1
    return total, files


def first_record_bytes(d: str) -> int:
    """Bytes of the first record (the file-version event) of the one file in ``d``."""
    for root, _dirs, names in os.walk(d):
        for name in names:
            with open(os.path.join(root, name), "rb") as fh:
                head = fh.read(8)
            if len(head) == 8:
                return int.from_bytes(head, "little") + 16
    return 0


def run_once(sut: systems.System, case: str, n: int, inputs: Any, base: str) -> dict[str, Any]:
    d = tempfile.mkdtemp(prefix=f"{case}-", dir=base)
    loop = systems.loop_for(sut, case)
    prepare = systems.prepare_for(sut, case)
    t0 = time.perf_counter()
    sut.open(d)
    if prepare is not None:
        prepare(n, inputs)  # e.g. tracing a tf.function: not part of the calls
    t1 = time.perf_counter()
    c1 = time.process_time()  # CPU of every thread of this process
    try:
        loop(n, inputs)
    finally:
        t2 = time.perf_counter()
        sut.close()
        t3 = time.perf_counter()
        c3 = time.process_time()
    nbytes, nfiles = dir_bytes(d)
    header = first_record_bytes(d)
    shutil.rmtree(d, ignore_errors=True)
    return {
        "open_s": t1 - t0,
        "loop_s": t2 - t1,
        "close_s": t3 - t2,
        "cpu_s": c3 - c1,
        "bytes": nbytes,
        "header_bytes": header,
        "files": nfiles,
    }


def run_case(
    case: casedefs.Case, suts: list[systems.System], n: int, reps: int, base: str
) -> dict[str, Any]:
    """Time ``case`` on every system: warm-up, then ``reps`` alternating repetitions."""
    inputs = casedefs.make_inputs(case.name, n)
    out: dict[str, Any] = {}
    live = []
    for sut in suts:
        if systems.loop_for(sut, case.name) is None:
            continue
        try:
            run_once(sut, case.name, min(n, WARMUP_CALLS), inputs, base)
        except systems.NotBuilt as e:
            out[sut.name] = {"na": "n/a (not built)", "why": str(e)}
            continue
        except Exception as e:  # e.g. a peer's optional dependency is missing
            out[sut.name] = {"na": f"n/a ({type(e).__name__}: {e})"}
            continue
        live.append(sut)
    reps_of: dict[str, list[dict[str, Any]]] = {s.name: [] for s in live}
    for r in range(reps):
        k = r % len(live) if live else 0
        for sut in live[k:] + live[:k]:
            gc.collect()
            reps_of[sut.name].append(run_once(sut, case.name, n, inputs, base))
            print(".", end="", flush=True)
    for sut in live:
        out[sut.name] = summarize(reps_of[sut.name], n, case.per_call)
    return out


def summarize(reps: list[dict[str, Any]], n: int, per_call: int) -> dict[str, Any]:
    items = n * per_call
    med = statistics.median
    total = [r["loop_s"] + r["close_s"] for r in reps]
    return {
        "n": n,
        "items": items,
        "reps": len(reps),
        "us_per_item": med(r["loop_s"] for r in reps) / items * 1e6,
        "us_per_item_incl_close": med(total) / items * 1e6,
        "us_per_item_incl_close_min": min(total) / items * 1e6,
        "us_per_item_incl_close_max": max(total) / items * 1e6,
        "cpu_us_per_item": med(r["cpu_s"] for r in reps) / items * 1e6,
        "close_ms": med(r["close_s"] for r in reps) * 1e3,
        "open_ms": med(r["open_s"] for r in reps) * 1e3,
        "bytes_per_call": med(r["bytes"] for r in reps) / n,
        "bytes_per_event": med(r["bytes"] - r["header_bytes"] for r in reps) / n,
        "files": reps[-1]["files"],
        "raw": reps,
    }


def memory_big_histogram(suts: list[systems.System], base: str) -> dict[str, Any]:
    """Extra memory of one 10M-element histogram (tracemalloc peak over the input)."""
    arr = casedefs.make_inputs("hist_big", 1)
    out: dict[str, Any] = {}
    for sut in suts:
        if systems.loop_for(sut, "hist_big") is None:
            continue
        if not getattr(sut, "tracemalloc_sees_memory", True):
            out[sut.name] = {"na": "n/a (allocates outside Python's tracemalloc)"}
            continue
        d = tempfile.mkdtemp(prefix="mem-", dir=base)
        gc.collect()
        tracemalloc.start()
        try:
            sut.open(d)
            before = tracemalloc.get_traced_memory()[0]
            tracemalloc.reset_peak()
            try:
                systems.loop_for(sut, "hist_big")(1, arr)
            finally:
                sut.close()
            peak = tracemalloc.get_traced_memory()[1]
        except systems.NotBuilt:
            out[sut.name] = {"na": "n/a (not built)"}
            continue
        finally:
            tracemalloc.stop()
            shutil.rmtree(d, ignore_errors=True)
        extra = max(0, peak - before)
        out[sut.name] = {
            "input_bytes": arr.nbytes,
            "extra_peak_bytes": extra,
            "extra_over_input": extra / arr.nbytes,
        }
    return out


def probes(names: list[str], reps: int, n: int, floor: str) -> dict[str, Any]:
    """Import time, RSS after import, first-scalar time and peak RSS, fresh processes."""
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
    errors: dict[str, str] = {}
    script = os.path.join(HERE, "probe.py")
    for r in range(reps):
        k = r % len(names) if names else 0
        for name in names[k:] + names[:k]:
            if name in errors:
                continue
            proc = subprocess.run(
                [sys.executable, script, name, str(n), floor],
                capture_output=True,
                text=True,
                timeout=600,
            )
            if proc.returncode != 0:
                errors[name] = proc.stderr.strip().splitlines()[-1:][0] if proc.stderr else "?"
                continue
            runs[name].append(json.loads(proc.stdout.strip().splitlines()[-1]))
            print(".", end="", flush=True)
    out: dict[str, Any] = {}
    for name in names:
        if name in errors:
            out[name] = {"na": f"n/a ({errors[name]})"}
            continue
        rs = runs[name]
        out[name] = {
            "reps": len(rs),
            "n": n,
            "heavy_modules_after_import": rs[-1]["heavy_modules_after_import"],
            "runs": rs,
        }
        for key in ("import_s", "rss_after_import_mb", "first_scalar_s", "peak_rss_mb"):
            out[name][key] = statistics.median(x[key] for x in rs)
    return out


def machine() -> dict[str, Any]:
    info: dict[str, Any] = {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "cpus": os.cpu_count(),
        "loadavg_start": os.getloadavg(),
    }
    try:
        lscpu = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
        for line in lscpu.splitlines():
            key, _, value = line.partition(":")
            if key.strip() in ("Model name", "CPU(s)", "Hypervisor vendor", "L2 cache"):
                info[key.strip()] = value.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    try:
        with open("/proc/meminfo") as fh:
            info["mem_total_mb"] = int(fh.readline().split()[1]) // 1024
    except OSError:
        pass
    from importlib.metadata import PackageNotFoundError, version

    versions = {}
    for pkg in (
        "summarylib",
        "tensorboardX",
        "torch",
        "tensorflow",
        "tensorflow-cpu",
        "tensorboard",
        "numpy",
        "protobuf",
        "crc32c",
        "pillow",
    ):
        with contextlib.suppress(PackageNotFoundError):
            versions[pkg] = version(pkg)
    try:
        from google.protobuf.internal import api_implementation

        versions["protobuf_backend"] = api_implementation.Type()
    except ImportError:
        pass
    info["versions"] = versions
    try:
        info["git_commit"] = subprocess.run(
            ["git", "-C", REPO, "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", REPO, "status", "--porcelain", "--", "summarylib"],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
        info["summarylib_tree_dirty"] = bool(dirty)
    except (OSError, subprocess.SubprocessError):
        pass
    return info


EXTRA_CASES = ("import", "latency", "memory")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--quick",
        action="store_true",
        help="fewer calls per repetition (about 5x); targets are shown but not evaluated",
    )
    ap.add_argument("--reps", type=int, default=5, help="repetitions per case (default 5)")
    ap.add_argument(
        "--cases",
        nargs="+",
        default=None,
        choices=[*casedefs.CASES, *EXTRA_CASES],
        help="a subset of cases (default: all)",
    )
    ap.add_argument(
        "--systems", nargs="+", default=None, choices=DEFAULT_SYSTEMS, help="a subset of systems"
    )
    ap.add_argument("--json", default=os.path.join(HERE, "results.json"), help="JSON output")
    ap.add_argument(
        "--floor-module",
        default=os.path.join(HERE, "floor.py"),
        help="the floor's module (default: bench/floor.py); another file with the same "
        "classes cross-checks the floor",
    )
    ap.add_argument("--tmp", default=None, help="parent of the temporary log directories")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.reps < 1:
        raise SystemExit("bench: --reps must be >= 1")
    if args.reps < 5:
        print(f"bench: note: {args.reps} repetitions; the published tables use >= 5")
    floor_module = os.path.abspath(args.floor_module)
    systems.load_floor(floor_module)
    wanted = args.cases or [*casedefs.CASES, *EXTRA_CASES]
    names = args.systems or DEFAULT_SYSTEMS

    suts: list[systems.System] = []
    unavailable: dict[str, str] = {}
    for name in names:
        cls = systems.SYSTEMS[name]
        why = cls.available()
        if why is None:
            suts.append(cls())
        else:
            unavailable[name] = why
    result: dict[str, Any] = {
        "command": " ".join([os.path.relpath(sys.executable), *sys.argv]),
        "argv": sys.argv[1:],
        "quick": args.quick,
        "reps": args.reps,
        "floor_module": os.path.relpath(floor_module, REPO),
        "machine": machine(),
        "unavailable": unavailable,
        "floor_of": FLOOR_OF,
        "cases": {},
    }
    base = tempfile.mkdtemp(prefix="summarylib-bench-", dir=args.tmp)
    t_start = time.perf_counter()
    try:
        for name in wanted:
            case = casedefs.CASES.get(name)
            if case is None:
                continue
            n = case.n_quick if args.quick else case.n
            print(f"{case.name}: {case.title} (n={n}) ", end="", flush=True)
            result["cases"][name] = run_case(case, suts, n, args.reps, base)
            print()
        if "memory" in wanted:
            print("memory: one 10M histogram under tracemalloc", flush=True)
            result["memory_hist_big"] = memory_big_histogram(suts, base)
        if "import" in wanted:
            probe_names = [
                s
                for s in ("summarylib", "floor", "tensorboardX", "torch.utils.tensorboard")
                if s in names and s not in unavailable
            ]
            n_probe = casedefs.CASES["scalar"].n_quick if args.quick else casedefs.CASES["scalar"].n
            print(f"import/RSS: fresh interpreters, {n_probe} scalars each ", end="", flush=True)
            result["import"] = probes(probe_names, args.reps, n_probe, floor_module)
            print()
        if "latency" in wanted and "summarylib" in names:
            n_lat = 50_000 if args.quick else 200_000
            print(f"latency: stalled output, {n_lat} scalar() calls", flush=True)
            result["latency"] = latency.run(n=n_lat, reps=args.reps)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    result["machine"]["loadavg_end"] = os.getloadavg()
    result["elapsed_s"] = time.perf_counter() - t_start
    result["targets"] = table.targets(result)
    text = table.render(result)
    print()
    print(text)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(result, fh, indent=1, default=str)
            fh.write("\n")
        print(f"\nJSON: {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
