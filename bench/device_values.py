"""Logging values that are still computing: JAX on its CPU backend, beside the peers.

    python bench/device_values.py                 # ~3-4 min on 2 cores
    python bench/device_values.py --quick --json /tmp/d.json

JAX's CPU backend dispatches asynchronously like an accelerator: a jitted step returns
at once with arrays that are still computing. Two measurements, all systems in this one
process, alternating within every repetition, medians over the repetitions:

1. **The caller's time per op** on arrays still computing (16 sets of outputs of a
   ~0.1 s jitted function, logged one after the other while it runs): ``scalar``,
   ``scalars`` of three values, ``histogram`` of 64 Ki values,
   ``SummaryWriter.add_scalar``, ``add_image`` (3x32x32 floats) and ``add_pr_curve``
   (128 predictions); summarylib, summarylib with
   ``sync_device_values=True`` (read at the call, as every peer does), torch's
   ``SummaryWriter`` and tensorboardX. Also the share of calls that returned with the
   array still not ready (1.0: the call never waited).
2. **A jitted training loop** (an MLP on random data) that logs loss and accuracy
   every step: steps/s with no logging, with summarylib given the arrays, with
   summarylib given ``float(loss)`` (what peers make users do), and with the peers'
   ``add_scalar`` (which convert on the caller's thread). Short blocks of steps of every
   mode alternate over many rounds, and each mode's rate is compared with the
   no-logging block of the same round (median of those ratios): on a shared 2-core VM
   the load changes from minute to minute, which a comparison of separate long runs
   cannot tell from a difference between the modes.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
warnings.filterwarnings("ignore")
# The "device" computes on one core, the caller runs on another, as with an accelerator
# (XLA's CPU backend would otherwise spread a matmul over every core, the caller's too).
os.environ.setdefault(
    "XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
)

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import summarylib as sl  # noqa: E402


def _peers() -> dict[str, Callable[[str], Any]]:
    found: dict[str, Callable[[str], Any]] = {}
    try:
        from torch.utils.tensorboard import SummaryWriter as TorchWriter

        found["torch.utils.tensorboard"] = TorchWriter
    except Exception:
        pass
    try:
        from tensorboardX import SummaryWriter as XWriter

        found["tensorboardX"] = XWriter
    except Exception:
        pass
    return found


PEERS = _peers()


# -- 1. the caller's time per op --------------------------------------------------
@jax.jit
def _busy(x: Any, big: Any) -> list[dict[str, Any]]:
    # ~0.1 s of matmuls on one core; every output depends on them, so none is ready
    # before the end. PER_STEP sets of outputs: the ops are timed on each in turn, all
    # while the computation runs (as a training loop logs after dispatching a step).
    m = jax.lax.fori_loop(0, 300, lambda i, a: jnp.tanh(a @ a) + 0.001, x)
    return [{"loss": m[k, 0], "acc": m[k, 1], "lr": m[k, 2], "weights": big * m[k, 3],
             "image": jnp.reshape(m[:96, :32], (3, 32, 32)) + m[k, 4],
             "labels": m[k] > 0.5, "predictions": jnp.clip(m[k + 16], 0, 1)}
            for k in range(PER_STEP)]


PER_STEP = 16
_X = jnp.full((128, 128), 0.01, jnp.float32)
_BIG = jnp.linspace(-1.0, 1.0, 1 << 16, dtype=jnp.float32)


def _computing(i: int) -> list[dict[str, Any]]:
    return _busy(_X + i * 1e-6, _BIG)


Op = Callable[[dict[str, Any], int], None]


def _ops_ours(writer: Any) -> dict[str, Op]:
    # The writer is the thread's default (set_as_default): as_default() blocks flush on
    # exit, which waits for every pending value.
    def scalar(v: dict[str, Any], i: int) -> None:
        sl.scalar("loss", v["loss"], step=i)

    def scalars(v: dict[str, Any], i: int) -> None:
        sl.scalars({"loss": v["loss"], "acc": v["acc"], "lr": v["lr"]}, step=i)

    def histogram(v: dict[str, Any], i: int) -> None:
        sl.histogram("w", v["weights"], step=i)

    def add_scalar(v: dict[str, Any], i: int) -> None:
        writer.add_scalar("loss", v["loss"], i)

    def add_image(v: dict[str, Any], i: int) -> None:
        writer.add_image("img", v["image"], i)

    def pr_curve(v: dict[str, Any], i: int) -> None:
        writer.add_pr_curve("pr", v["labels"], v["predictions"], i)

    return {"scalar": scalar, "scalars": scalars, "histogram": histogram,
            "add_scalar": add_scalar, "add_image": add_image, "add_pr_curve": pr_curve}


def _ops_peer(writer: Any) -> dict[str, Op]:
    # Peers take numpy arrays (torch's make_np refuses JAX arrays): the conversion waits.
    def add_scalar(v: dict[str, Any], i: int) -> None:
        writer.add_scalar("loss", np.asarray(v["loss"]), i)

    def scalars(v: dict[str, Any], i: int) -> None:
        for tag in ("loss", "acc", "lr"):
            writer.add_scalar(tag, np.asarray(v[tag]), i)

    def histogram(v: dict[str, Any], i: int) -> None:
        writer.add_histogram("w", np.asarray(v["weights"]), i)

    def add_image(v: dict[str, Any], i: int) -> None:
        writer.add_image("img", np.asarray(v["image"]), i)

    def pr_curve(v: dict[str, Any], i: int) -> None:
        writer.add_pr_curve("pr", np.asarray(v["labels"]), np.asarray(v["predictions"]), i)

    return {"scalar": add_scalar, "scalars": scalars, "histogram": histogram,
            "add_scalar": add_scalar, "add_image": add_image, "add_pr_curve": pr_curve}


def caller_times(calls: int, reps: int) -> dict[str, dict[str, dict[str, float]]]:
    """op -> system -> {"us": mean wall µs per call (a wait is spread over the calls of
    its step), "cpu_us": the calling thread's CPU
    µs (what the call itself costs, whatever else runs on the machine), "not_ready":
    share of calls that returned with the value not ready}."""
    systems: dict[str, Callable[[str], Any]] = {
        "summarylib": lambda d: sl.create_file_writer(d),
        "summarylib sync_device_values": lambda d: sl.create_file_writer(
            d, sync_device_values=True),
        **PEERS,
    }
    samples: dict[str, dict[str, list[float]]] = {}
    cpu: dict[str, dict[str, list[float]]] = {}
    ready: dict[str, dict[str, list[bool]]] = {}
    for rep in range(reps):
        names = list(systems)
        names = names[rep % len(names):] + names[: rep % len(names)]
        for name in names:
            d = tempfile.mkdtemp()
            writer = systems[name](d)
            if name.startswith("summarylib"):
                writer.set_as_default()
            ops = _ops_ours(writer) if name.startswith("summarylib") else _ops_peer(writer)
            for op, fn in ops.items():
                warm = _computing(0)
                fn(warm[0], 0)
                jax.block_until_ready(warm)
                for i in range(calls):
                    outputs = _computing(i + 1)
                    for k, values in enumerate(outputs):
                        c0 = time.thread_time()
                        t0 = time.perf_counter()
                        fn(values, (i + 1) * PER_STEP + k)
                        dt = time.perf_counter() - t0
                        dc = time.thread_time() - c0
                        samples.setdefault(op, {}).setdefault(name, []).append(dt)
                        cpu.setdefault(op, {}).setdefault(name, []).append(dc)
                        ready.setdefault(op, {}).setdefault(name, []).append(
                            values["loss"].is_ready())
                    jax.block_until_ready(outputs)
            writer.close()
            sl.create_noop_writer().set_as_default()
            shutil.rmtree(d, ignore_errors=True)
    return {
        op: {
            name: {"us": statistics.fmean(v) * 1e6,
                   "median_us": statistics.median(v) * 1e6,
                   "cpu_us": statistics.median(cpu[op][name]) * 1e6,
                   "not_ready": 1.0 - sum(ready[op][name]) / len(ready[op][name])}
            for name, v in by.items()
        }
        for op, by in samples.items()
    }


# -- 2. a jitted training loop ------------------------------------------------------
def _mlp() -> tuple[Any, Callable[..., Any], Any, Any]:
    key = jax.random.PRNGKey(0)
    k1, k2, k3 = jax.random.split(key, 3)
    params = {
        "w1": jax.random.normal(k1, (256, 512)) * 0.05,
        "w2": jax.random.normal(k2, (512, 10)) * 0.05,
    }
    x = jax.random.normal(k3, (512, 256))
    y = jnp.arange(512) % 10

    def loss_fn(p: Any) -> tuple[Any, Any]:
        logits = jnp.tanh(x @ p["w1"]) @ p["w2"]
        logp = jax.nn.log_softmax(logits)
        loss = -jnp.mean(logp[jnp.arange(512), y])
        acc = jnp.mean(jnp.argmax(logits, -1) == y)
        return loss, acc

    @jax.jit
    def step(p: Any) -> tuple[Any, Any, Any]:
        (loss, acc), g = jax.value_and_grad(loss_fn, has_aux=True)(p)
        return jax.tree_util.tree_map(lambda a, b: a - 0.01 * b, p, g), loss, acc

    return params, step, x, y


def train_loop(steps: int, rounds: int) -> dict[str, dict[str, float]]:
    """mode -> {"steps_per_s": median over blocks, "vs_none": median of paired ratios}.

    Every mode keeps one writer open for the whole measurement. Each round runs a block
    of ``steps`` steps in every mode, in a rotated order, each block timed from its first
    dispatch to its parameters being ready; ``vs_none`` is the median over rounds of the
    block's rate divided by the no-logging block's rate of the same round, so a change of
    the machine's load between rounds (other jobs on a shared VM) cancels out. A
    summarylib writer is flushed between blocks, outside the timing, so that no block
    pays for the previous mode's writes.
    """
    params0, step, _, _ = _mlp()
    p = params0
    for _ in range(5):
        p, _, _ = step(p)
    jax.block_until_ready(p)
    modes = ["no logging", "summarylib", "summarylib float(loss)", *PEERS]
    dirs = {m: tempfile.mkdtemp() for m in modes}
    writers: dict[str, Any] = {}
    for m in modes:
        if m.startswith("summarylib"):
            writers[m] = sl.create_file_writer(dirs[m])
        elif m in PEERS:
            writers[m] = PEERS[m](dirs[m])
    state = {m: params0 for m in modes}
    counter = dict.fromkeys(modes, 0)

    def block(mode: str) -> float:
        writer = writers.get(mode)
        if mode.startswith("summarylib"):
            writer.set_as_default()
        p = state[mode]
        i = counter[mode]
        t0 = time.perf_counter()
        for _ in range(steps):
            p, loss, acc = step(p)
            if mode == "summarylib":
                sl.scalar("loss", loss, step=i)
                sl.scalar("accuracy", acc, step=i)
            elif mode == "summarylib float(loss)":
                sl.scalar("loss", float(loss), step=i)
                sl.scalar("accuracy", float(acc), step=i)
            elif writer is not None:
                writer.add_scalar("loss", float(loss), i)  # the peers take host numbers
                writer.add_scalar("accuracy", float(acc), i)
            i += 1
        jax.block_until_ready(p)
        elapsed = time.perf_counter() - t0
        state[mode], counter[mode] = p, i
        if writer is not None:
            writer.flush()  # outside the timing: the next block starts clean
        return steps / elapsed

    rates: dict[str, list[float]] = {m: [] for m in modes}
    ratios: dict[str, list[float]] = {m: [] for m in modes}
    for r in range(rounds + 1):
        order = modes[r % len(modes):] + modes[: r % len(modes)]
        got = {m: block(m) for m in order}
        if r == 0:
            continue  # a warm-up round: first writes, first compiles
        for m in modes:
            rates[m].append(got[m])
            ratios[m].append(got[m] / got["no logging"])
    for w in writers.values():
        w.close()
    sl.create_noop_writer().set_as_default()
    for d in dirs.values():
        shutil.rmtree(d, ignore_errors=True)
    return {m: {"steps_per_s": statistics.median(rates[m]),
                "vs_none": statistics.median(ratios[m])} for m in modes}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer calls and steps")
    ap.add_argument("--reps", type=int, default=5, help="repetitions of the per-op timing")
    ap.add_argument("--rounds", type=int, default=40, help="rounds of training-loop blocks")
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args()
    calls, steps = (2, 10) if args.quick else (4, 10)
    rounds = 6 if args.quick else args.rounds
    result: dict[str, Any] = {
        "jax": jax.__version__, "backend": jax.default_backend(),
        "cpus": os.cpu_count(),
    }
    per_op = result["caller_us"] = caller_times(calls, args.reps)
    loop = result["train_loop"] = train_loop(steps, rounds)

    print(f"## Device values (JAX {jax.__version__}, {jax.default_backend()} backend)\n")
    print("### The caller's time per op on arrays still computing (median / mean wall µs, "
          "median CPU µs of the calling thread; share of calls that returned before the "
          "array was ready)\n")
    names = list(next(iter(per_op.values())))
    print("| op | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for op, by in per_op.items():
        cells = [f"{by[n]['median_us']:,.0f} / {by[n]['us']:,.0f}, {by[n]['cpu_us']:,.0f} µs "
                 f"({by[n]['not_ready']:.0%})"
                 if n in by else "n/a" for n in names]
        print(f"| {op} | " + " | ".join(cells) + " |")
    print(f"\n### A jitted training loop logging loss and accuracy every step ({rounds} "
          f"rounds of {steps}-step blocks, modes interleaved; medians)\n")
    print("| mode | steps/s | vs no logging (paired) |")
    print("|---|---|---|")
    for mode, got in loop.items():
        print(f"| {mode} | {got['steps_per_s']:,.1f} | {got['vs_none']:.3f}x |")
    ours = loop["summarylib"]
    scalar = per_op["scalar"]["summarylib"]
    print(f"\ntargets: scalar ≤ 20 µs: {scalar['median_us']:.1f} µs median wall "
          f"({scalar['us']:.1f} mean, {scalar['cpu_us']:.1f} CPU), "
          f"{scalar['not_ready']:.0%} returned before the value was ready; "
          f"loop ≥ 0.98x: {ours['vs_none']:.3f}x; "
          f"vs float(loss): {ours['vs_none'] / loop['summarylib float(loss)']['vs_none']:.2f}x")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
