"""The memory bound holds for device values: pending JAX arrays count what they hold.

A writer whose output stalls: ops on JAX arrays (scalars, histograms, images) pile up
until the producer waits for room. The process's resident memory grows by at most 1.2x
``max_buffer_bytes`` (plus a fixed allowance for the allocator and JAX's caches): each
pending value counts the array it keeps alive (the caller drops it), the array's runtime
objects, and the closures of its event. JAX's CPU device buffers are host memory that
``tracemalloc`` does not see, so the growth is read from ``/proc/self/statm``, in a fresh
interpreter with nothing else running.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("jax", reason="needs JAX (pip install jax[cpu])")
if not os.path.exists("/proc/self/statm"):
    pytest.skip("reads resident memory from /proc", allow_module_level=True)

REPO = Path(__file__).resolve().parent.parent
BOUND = 8 << 20
ALLOWANCE = 2 << 20

_PROGRAM = """
import os, sys, threading, time
import jax, jax.numpy as jnp
import summarylib as sl

kind, bound = sys.argv[1], int(sys.argv[2])

class StalledOutput(sl.MemoryOutput):
    # Lets the file's first record through, then every write waits until released.
    def __init__(self):
        super().__init__()
        self.gate = threading.Event()
        self.writes = 0
    def write(self, data):
        if self.writes:
            self.gate.wait(120)
        self.writes += 1
        super().write(data)

try:  # glibc keeps freed memory (in-flight computations' temporaries) until trimmed
    import ctypes
    trim = ctypes.CDLL("libc.so.6").malloc_trim
except (OSError, AttributeError):
    trim = None

def resident():
    # The memory in use: what the allocator caches for later (freed temporaries of the
    # computations in flight when the producer stopped) is given back first.
    if trim is not None:
        trim(0)
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

key = jax.random.PRNGKey(0)
weights = jax.random.normal(key, (256, 64))
pictures = jax.random.uniform(key, (2, 64, 64, 3))

def value(i):  # a new array per step, dropped by the caller after the op
    if kind == "scalars":
        return weights[0, 0] + i
    if kind == "histograms":
        return weights + i
    return pictures * (1.0 / (i + 1))

def log(i, x):
    if kind == "scalars":
        sl.scalar("loss", x, step=i)
    elif kind == "histograms":
        sl.histogram("weights", x, step=i)
    else:
        sl.image("pictures", x, step=i)

warm = sl.create_writer(sl.MemoryOutput())  # every kernel compiled before measuring
with warm.as_default():
    for i in range(3):
        log(i, value(i))
warm.close()
out = StalledOutput()
writer = sl.create_writer(out, max_buffer_bytes=bound, max_queue=10**9, flush_millis=10**9)
writer.set_as_default()  # (leaving an as_default() block would wait for the output)
log(0, value(0))
logged = [0]
stop = threading.Event()

def produce():
    writer.set_as_default()
    for i in range(1, 10**7):
        if stop.is_set():
            return
        log(i, value(i))
        logged[0] = i

before = resident()
threading.Thread(target=produce, daemon=True).start()
last = -1
while logged[0] != last:  # until the producer stops moving: it waits for room
    last = logged[0]
    time.sleep(1.0)
(jnp.zeros(()) + 1).block_until_ready()  # the computations dispatched before are done
grown = resident() - before
stop.set()
out.gate.set()
writer.close()
print(logged[0], grown)
"""


@pytest.mark.parametrize("kind", ["scalars", "histograms", "images"])
def test_pending_device_values_stay_within_the_buffer_bound(kind: str) -> None:
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    done = subprocess.run([sys.executable, "-c", _PROGRAM, kind, str(BOUND)], env=env,
                          capture_output=True, text=True, timeout=300, cwd=REPO, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    logged, grown = (int(v) for v in done.stdout.split())
    assert logged >= 20, logged  # the bound was reached by many events, not one
    assert grown <= 1.2 * BOUND + ALLOWANCE, (
        f"{kind}: {logged} pending events grew resident memory by {grown / 2**20:.1f} MiB "
        f"({grown / BOUND:.2f}x the bound)")
