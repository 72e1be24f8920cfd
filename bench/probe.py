"""Run in a fresh interpreter by run.py: import cost and memory of one system.

    python bench/probe.py SYSTEM N FLOOR_MODULE

Prints one JSON object: the time of the import statement(s) alone, RSS right
after it, the time from there to a first scalar written and its writer closed,
and the peak RSS (``ru_maxrss``) after N more scalars and close().
Nothing but the standard library is imported before the measured import.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import tempfile
import time

IMPORTS = {
    "summarylib": ("summarylib",),
    "tensorboardX": ("tensorboardX",),
    "torch.utils.tensorboard": ("torch.utils.tensorboard",),
    "floor": ("numpy", "crc32c"),
}

#: Modules worth knowing about when they load at import time.
HEAVY = ("numpy", "google.protobuf", "PIL", "torch", "tensorflow", "crc32c")


def rss_mb() -> float:
    """Current resident set size in MB (VmRSS), falling back to the peak."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return peak_rss_mb()


def peak_rss_mb() -> float:
    """Peak RSS of this process in MB.

    VmHWM, not ``ru_maxrss``: Linux carries ``ru_maxrss`` over ``execve``,
    so a child of a big parent would report the parent's size.
    """
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux


def main() -> None:
    system, n, floor = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    rss0 = rss_mb()
    t0 = time.perf_counter()
    for mod in IMPORTS[system]:
        __import__(mod)
    import_s = time.perf_counter() - t0
    rss_import = rss_mb()
    heavy = sorted(m for m in HEAVY if m in sys.modules)

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import systems

    if system == "floor":
        systems.load_floor(floor)
    sut = systems.SYSTEMS[system]()
    values = [float(i % 1000) * 0.001 for i in range(max(n, 1))]
    with tempfile.TemporaryDirectory(prefix="bench-probe-") as d:
        for sub in ("first", "run"):
            os.mkdir(os.path.join(d, sub))  # the floor does not create its directory
        t1 = time.perf_counter()
        sut.open(os.path.join(d, "first"))
        systems.loop_for(sut, "scalar")(1, values)
        sut.close()
        first_s = time.perf_counter() - t1
        sut.open(os.path.join(d, "run"))
        systems.loop_for(sut, "scalar")(n, values)
        sut.close()
    print(
        json.dumps(
            {
                "system": system,
                "import_s": import_s,
                "rss_start_mb": rss0,
                "rss_after_import_mb": rss_import,
                "first_scalar_s": first_s,
                "peak_rss_mb": peak_rss_mb(),
                "n": n,
                "heavy_modules_after_import": heavy,
            }
        )
    )


if __name__ == "__main__":
    main()
