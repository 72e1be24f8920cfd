"""The systems under test, behind one small interface, and the workloads they run.

Each system is opened on a fresh directory (``open(logdir)``), runs one
workload as a tight loop (``loop_<case>(n, inputs)``), then is closed
(``close()``). The loop is written out per system so that every one of them
pays the same loop overhead: the op itself is bound to a local once, and no
adapter method sits between the loop and the library.

A system that lacks a case simply has no ``loop_<case>`` method; the runner
reports it as not applicable. ``NotBuilt`` marks an op module that does not
exist yet in this tree.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from typing import Any

#: Thresholds for every PR curve (tensorboardX caps at 127).
NUM_THRESHOLDS = 127
SAMPLE_RATE = 16_000


class NotBuilt(Exception):
    """The summarylib op for this case is not in the tree yet."""


def op(name: str) -> Any:
    """``summarylib.<name>``, or raise NotBuilt when its module is missing."""
    import summarylib

    try:
        return getattr(summarylib, name)
    except (AttributeError, ImportError) as e:
        raise NotBuilt(f"summarylib.{name}: {e}") from None


def op_module_exists(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


class System:
    """Base: a name, whether it can run here, and the per-case loops."""

    name = "?"
    #: modules that must import for the system to exist here
    requires: tuple[str, ...] = ()
    #: the cases it runs (None: every case it has a ``loop_<case>`` for)
    cases: frozenset[str] | None = None

    @classmethod
    def available(cls) -> str | None:
        """None if usable, else why not."""
        for mod in cls.requires:
            try:
                importlib.import_module(mod)
            except Exception as e:  # ImportError, or a broken install
                return f"{mod} not importable ({type(e).__name__})"
        return None

    def open(self, logdir: str) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


# ---------------------------------------------------------------------------
# summarylib
# ---------------------------------------------------------------------------
class Ours(System):
    name = "summarylib"

    def open(self, logdir: str) -> None:
        import summarylib as sl

        self.w = sl.create_file_writer(logdir)
        self._cm = self.w.as_default()
        self._cm.__enter__()

    def close(self) -> None:
        self._cm.__exit__(None, None, None)
        self.w.close()

    def loop_scalar(self, n: int, values: list[float]) -> None:
        f = op("scalar")
        for i in range(n):
            f("loss", values[i], i)

    def loop_scalars20(self, n: int, rows: list[dict[str, float]]) -> None:
        f = op("scalars")
        for i in range(n):
            f(rows[i], i)

    def loop_hist(self, n: int, arr: Any) -> None:
        f = op("histogram")
        for i in range(n):
            f("hist", arr, i)

    loop_hist_big = loop_hist

    def loop_image(self, n: int, img: Any) -> None:
        f = op("image")
        for i in range(n):
            f("img", img, i, dataformats="HWC")

    def loop_pr(self, n: int, inputs: tuple[Any, Any]) -> None:
        f = op("pr_curve")
        labels, preds = inputs
        for i in range(n):
            f("pr", labels, preds, i, num_thresholds=NUM_THRESHOLDS)

    def loop_audio(self, n: int, clip: Any) -> None:
        f = op("audio")
        batch = clip[None]  # [k=1, t, c=1]
        for i in range(n):
            f("audio", batch, SAMPLE_RATE, i)

    def loop_text(self, n: int, texts: list[str]) -> None:
        f = op("text")
        for i in range(n):
            f("text", texts[i], i)


class OursPerMetric(Ours):
    """summarylib, 20 metrics per step as 20 ``scalar()`` calls (for scalars20)."""

    name = "summarylib-scalar-x20"
    cases = frozenset({"scalars20"})

    def loop_scalars20(self, n: int, rows: list[dict[str, float]]) -> None:
        f = op("scalar")
        for i in range(n):
            for k, v in rows[i].items():
                f(k, v, i)


# ---------------------------------------------------------------------------
# Floors: bench/floor.py (hand-encoded bytes, synchronous write), or, as a cross-check,
# another module with the same classes (``--floor-module``).
# ---------------------------------------------------------------------------
_floor: Any = None


def load_floor(path: str | None = None) -> Any:
    """The floor module: bench/floor.py, or the ``floor.py``-like module at ``path``.

    ``path`` is a file, or a directory holding ``floor.py`` (exits clearly if missing).
    """
    global _floor
    if _floor is not None and path is None:
        return _floor
    file = os.path.join(os.path.dirname(os.path.abspath(__file__)), "floor.py")
    if path is not None:
        file = path if path.endswith(".py") else os.path.join(path, "floor.py")
    if not os.path.isfile(file):
        raise SystemExit(f"bench: no floor module at {file}")
    spec = importlib.util.spec_from_file_location("bench_floor", file)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bench_floor"] = mod
    spec.loader.exec_module(mod)
    _floor = mod
    return mod


class Floor(System):
    """The floor: simple_value scalars; TensorFlow 2's tensor layout for the rest."""

    name = "floor"
    cls_name = "Floor"

    def open(self, logdir: str) -> None:
        floor = load_floor()
        self.w = getattr(floor, self.cls_name)(
            logdir, thresholds=NUM_THRESHOLDS, sample_rate=SAMPLE_RATE
        )

    def close(self) -> None:
        self.w.close()

    def loop_scalar(self, n: int, values: list[float]) -> None:
        f = self.w.scalar
        for i in range(n):
            f(i, values[i])

    def loop_hist(self, n: int, arr: Any) -> None:
        f = self.w.hist
        for i in range(n):
            f(i, arr)

    loop_hist_big = loop_hist

    def loop_image(self, n: int, img: Any) -> None:
        f = self.w.image
        for i in range(n):
            f(i, img)

    def loop_pr(self, n: int, inputs: tuple[Any, Any]) -> None:
        f = self.w.pr
        labels, preds = inputs
        for i in range(n):
            f(i, labels, preds)

    def loop_audio(self, n: int, clip: Any) -> None:
        f = self.w.audio
        for i in range(n):
            f(i, clip)

    def loop_text(self, n: int, texts: list[str]) -> None:
        f = self.w.text
        for i in range(n):
            f(i, texts[i])


class FloorTensor(Floor):
    """The floor with scalars in summarylib's (TensorFlow 2's) layout. Scalar only."""

    name = "floor-tensor"
    cls_name = "FloorTensor"
    cases = frozenset({"scalar"})


# ---------------------------------------------------------------------------
# Peers
# ---------------------------------------------------------------------------
class Tbx(System):
    name = "tensorboardX"
    requires = ("tensorboardX",)

    def _writer(self, logdir: str) -> Any:
        from tensorboardX import SummaryWriter  # type: ignore[import-untyped]

        return SummaryWriter(logdir=logdir)

    def open(self, logdir: str) -> None:
        self.w = self._writer(logdir)

    def close(self) -> None:
        self.w.close()

    def loop_scalar(self, n: int, values: list[float]) -> None:
        f = self.w.add_scalar
        for i in range(n):
            f("loss", values[i], i)

    def loop_scalars20(self, n: int, rows: list[dict[str, float]]) -> None:
        # add_scalars() writes each key to its own run directory: another
        # meaning. The same meaning as ours is one add_scalar per metric.
        f = self.w.add_scalar
        for i in range(n):
            for k, v in rows[i].items():
                f(k, v, i)

    def loop_hist(self, n: int, arr: Any) -> None:
        f = self.w.add_histogram
        for i in range(n):
            f("hist", arr, i)

    loop_hist_big = loop_hist

    def loop_image(self, n: int, img: Any) -> None:
        f = self.w.add_image
        for i in range(n):
            f("img", img, i, dataformats="HWC")

    def loop_pr(self, n: int, inputs: tuple[Any, Any]) -> None:
        f = self.w.add_pr_curve
        labels, preds = inputs
        for i in range(n):
            f("pr", labels, preds, i, num_thresholds=NUM_THRESHOLDS)

    def loop_audio(self, n: int, clip: Any) -> None:
        f = self.w.add_audio
        for i in range(n):
            f("audio", clip, i, sample_rate=SAMPLE_RATE)

    def loop_text(self, n: int, texts: list[str]) -> None:
        f = self.w.add_text
        for i in range(n):
            f("text", texts[i], i)


class Torch(Tbx):
    name = "torch.utils.tensorboard"
    requires = ("torch.utils.tensorboard",)

    def _writer(self, logdir: str) -> Any:
        from torch.utils.tensorboard import SummaryWriter

        return SummaryWriter(log_dir=logdir)


class TfEager(System):
    """``tf.summary`` in eager mode, the writer entered once (``tf2``).

    PR curves as TensorFlow users write them: TensorBoard's ``pr_curve.summary.pb``
    passed to ``write_raw_pb`` (there is no ``tf.summary.pr_curve``).
    """

    name = "tf.summary"
    requires = ("tensorflow",)
    cases = frozenset({"scalar", "hist", "hist_big", "image", "pr"})
    #: TensorFlow allocates in C++, where tracemalloc cannot see: no memory row.
    tracemalloc_sees_memory = False

    def open(self, logdir: str) -> None:
        import tensorflow as tf  # type: ignore[import-untyped]

        self.tf = tf
        self.w = tf.summary.create_file_writer(logdir)
        self._ctx = self.w.as_default()
        self._ctx.__enter__()

    def close(self) -> None:
        self._ctx.__exit__(None, None, None)
        self.w.close()

    def loop_scalar(self, n: int, values: list[float]) -> None:
        f = self.tf.summary.scalar
        for i in range(n):
            f("loss", values[i], step=i)

    def loop_hist(self, n: int, arr: Any) -> None:
        f = self.tf.summary.histogram
        for i in range(n):
            f("hist", arr, step=i)

    loop_hist_big = loop_hist

    def loop_image(self, n: int, img: Any) -> None:
        f = self.tf.summary.image
        batch = img[None]
        for i in range(n):
            f("img", batch, step=i)

    def loop_pr(self, n: int, inputs: tuple[Any, Any]) -> None:
        from tensorboard.plugins.pr_curve import summary as pr_summary

        write = self.tf.summary.experimental.write_raw_pb
        pb = pr_summary.pb
        labels, preds = inputs
        for i in range(n):
            write(pb("pr", labels, preds, num_thresholds=NUM_THRESHOLDS).SerializeToString(), i)


class TfFunction(TfEager):
    """The same ops inside one ``tf.function`` loop (``tf2fn``).

    ``prepare_<case>`` traces the function after ``open`` and before the clock
    starts: tracing is left out of µs/call.
    """

    name = "tf.function"
    cases = frozenset({"scalar", "hist", "hist_big", "image"})

    def prepare_scalar(self, n: int, values: list[float]) -> None:
        tf = self.tf
        self._x = tf.constant(values[:n], tf.float32)

        @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
        def loop(v: Any) -> None:
            for i in tf.range(tf.shape(v)[0]):
                tf.summary.scalar("loss", v[i], step=tf.cast(i, tf.int64))

        self._fn = loop.get_concrete_function()

    def loop_scalar(self, n: int, values: list[float]) -> None:
        self._fn(self._x)

    def _prepare_repeat(self, summary: Any, x: Any, dtype: Any, n: int) -> None:
        tf = self.tf
        self._x = tf.constant(x, dtype)
        self._n = tf.constant(n, tf.int64)

        @tf.function(
            input_signature=[tf.TensorSpec(x.shape, dtype), tf.TensorSpec([], tf.int64)]
        )
        def loop(v: Any, count: Any) -> None:
            for i in tf.range(count):
                summary(v, i)

        self._fn = loop.get_concrete_function()

    def prepare_hist(self, n: int, arr: Any) -> None:
        hist = self.tf.summary.histogram
        self._prepare_repeat(lambda v, i: hist("hist", v, step=i), arr, self.tf.float32, n)

    prepare_hist_big = prepare_hist

    def prepare_image(self, n: int, img: Any) -> None:
        image = self.tf.summary.image
        self._prepare_repeat(lambda v, i: image("img", v, step=i), img[None], self.tf.uint8, n)

    def _loop_repeat(self, n: int, _inputs: Any) -> None:
        self._fn(self._x, self._n)

    loop_hist = loop_hist_big = loop_image = _loop_repeat


SYSTEMS: dict[str, type[System]] = {
    s.name: s for s in (Ours, OursPerMetric, Floor, FloorTensor, Tbx, Torch, TfEager, TfFunction)
}


def prepare_for(system: System, case: str) -> Any:
    """The untimed ``prepare_<case>(n, inputs)`` of ``system``, or None."""
    return getattr(system, "prepare_" + case, None)


def loop_for(system: System, case: str) -> Any:
    """The bound loop of ``system`` for ``case``, or None if it has none."""
    if system.cases is not None and case not in system.cases:
        return None
    return getattr(system, "loop_" + case, None)
