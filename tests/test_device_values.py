"""Device values: captured at the call without waiting, written when ready.

JAX's CPU backend dispatches asynchronously like an accelerator: a jitted function
returns an array that is still computing. These tests log such arrays and check that
the call returned before the array was ready, that the file holds the final values,
and the guarantees around it (order, flush/close, errors, the buffer bound, the
debugging switch). torch's CUDA path is driven through its pending-value class with
CPU tensors; the device reductions are proven equal to the host path.
"""

from __future__ import annotations

import struct
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import summarylib as sl
from summarylib.encoding.bucketing import histogram_buckets
from summarylib.errors import SummaryError
from tests.helpers import only_file, tb_events, tb_scalar_points

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")


def _busy_fn() -> Callable[[Any], Any]:
    # A few hundred 128x128 matmuls: tens of ms on one core, so the array it returns
    # is still computing when the call that logs it returns.
    @jax.jit
    def busy(x: Any) -> Any:
        return jax.lax.fori_loop(0, 300, lambda i, a: jnp.tanh(a @ a) + 0.001, x)

    return busy


_BUSY = _busy_fn()
_X = jnp.full((128, 128), 0.01, jnp.float32)
_BUSY(_X).block_until_ready()  # compiled once


def computing(offset: float = 0.0) -> Any:
    """A float32 matrix that is still being computed when this returns."""
    return _BUSY(_X + offset)


def not_ready_after(call: Callable[[Any], Any], make: Callable[[], Any]) -> bool:
    """True if, in one of three tries, ``call(value)`` returned with ``value`` not ready.

    Three tries: a thread descheduled for longer than the computation would see it
    ready however the call behaves; a call that waits for the device never passes.
    """
    for _ in range(3):
        value = make()
        call(value)
        if not value.is_ready():
            return True
    return False


def scalar_values(path: Path) -> list[tuple[int, str, float]]:
    out = []
    for event in tb_events(path):
        for v in event.summary.value:
            if v.tensor.tensor_content:
                out.append((event.step, v.tag, struct.unpack("<f", v.tensor.tensor_content)[0]))
    return out


def f32(x: Any) -> float:
    return float(np.float32(np.asarray(x)))


def test_scalar_returns_before_the_value_is_ready_and_writes_it(logdir: Path) -> None:
    writer = sl.create_file_writer(logdir)
    logged: list[Any] = []

    def log(matrix: Any) -> None:
        loss = matrix.sum()
        logged.append(loss)
        sl.scalar("loss", loss, step=len(logged))

    with writer.as_default():
        assert not_ready_after(log, computing)
    writer.close()
    points = tb_scalar_points(only_file(logdir))["loss"]
    assert [(s, v) for s, _, v in points] == [(i + 1, f32(x)) for i, x in enumerate(logged)]


def test_scalars_and_a_step_on_the_device(logdir: Path) -> None:
    writer = sl.create_file_writer(logdir)
    seen: list[Any] = []

    def log(m: Any) -> None:
        step = jnp.int32(40) + len(seen)  # a device scalar
        seen.append(m)
        assert sl.scalars({"mean": m.mean(), "max": m.max(), "lr": 0.5}, step=step)

    with writer.as_default():
        assert not_ready_after(log, computing)
    writer.close()
    got = scalar_values(only_file(logdir))
    assert got == [
        (40 + i, tag, value)
        for i, m in enumerate(seen)
        for tag, value in (("mean", f32(m.mean())), ("max", f32(m.max())), ("lr", 0.5))
    ]


def test_add_scalar_and_add_scalars_do_not_wait(logdir: Path) -> None:
    writer = sl.SummaryWriter(logdir)
    seen: list[Any] = []

    def log(matrix: Any) -> None:
        seen.append(matrix)
        writer.add_scalar("a", matrix[0, 0], len(seen))
        writer.add_scalars("b", {"x": matrix[0, 1], "y": matrix.sum()}, len(seen))

    assert not_ready_after(log, computing)
    writer.close()
    points = tb_scalar_points(only_file(logdir))["a"]
    assert [v for _, _, v in points] == [f32(m[0, 0]) for m in seen]


def test_histogram_does_not_wait_and_equals_the_host_histogram(logdir: Path) -> None:
    writer = sl.create_file_writer(logdir)
    seen: list[Any] = []

    def log(matrix: Any) -> None:
        seen.append(matrix)
        sl.histogram("h", matrix, step=len(seen), buckets=7)

    with writer.as_default():
        assert not_ready_after(log, computing)
    writer.close()
    written = [e.summary.value[0].tensor.tensor_content for e in tb_events(only_file(logdir))
               if e.summary.value]
    expected = [sl.histogram_pb("h", np.asarray(m), buckets=7).value[0].tensor.tensor_content
                for m in seen]
    assert written == expected


def test_large_jax_histogram_equals_the_host_histogram(logdir: Path) -> None:
    writer = sl.create_file_writer(logdir)
    big = jnp.linspace(-3.0, 5.0, 1 << 15, dtype=jnp.float32) ** 3
    with writer.as_default():
        sl.histogram("h", big, step=1, buckets=13)
    writer.close()
    (event,) = [e for e in tb_events(only_file(logdir)) if e.summary.value]
    expected = sl.histogram_pb("h", np.asarray(big), buckets=13)
    assert event.summary.value[0].tensor.tensor_content == (
        expected.value[0].tensor.tensor_content
    )


def test_values_are_those_at_the_call_when_the_caller_updates_right_after(
    logdir: Path,
) -> None:
    # JAX arrays are immutable: an "update" makes a new array, queued after the
    # logged one; the file holds the values at each call.
    writer = sl.create_file_writer(logdir)
    state = computing()
    expected = []
    with writer.as_default():
        for i in range(5):
            sl.scalar("v", state[0, 0], step=i)
            expected.append(state[0, 0])
            state = state.at[0, 0].add(1.0)  # right after the call
    writer.close()
    assert [v for _, _, v in scalar_values(only_file(logdir))] == [f32(x) for x in expected]


def test_torch_pending_value_is_the_value_at_the_capture() -> None:
    torch = pytest.importorskip("torch")
    from summarylib.encoding.pending import TorchPending

    t = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    pending = TorchPending(t)
    t.add_(100)  # in place, right after the capture
    t[0, 0] = -1
    assert pending.shape == (2, 3)
    assert pending.nbytes == 24
    np.testing.assert_array_equal(pending.result(), np.arange(6, dtype=np.float32).reshape(2, 3))
    bf = TorchPending(torch.tensor([0.5, 1.5], dtype=torch.bfloat16))
    assert bf.result().dtype == np.float32
    np.testing.assert_array_equal(bf.result(), [0.5, 1.5])


def test_file_order_and_per_thread_order_are_kept(logdir: Path) -> None:
    writer = sl.create_file_writer(logdir)
    calls: list[tuple[str, int]] = []
    lock = threading.Lock()

    def worker(name: str) -> None:
        with writer.as_default():
            for i in range(6):
                value: Any = computing(float(i)).sum() if i % 2 else float(i)
                with lock:
                    sl.scalar(name, value, step=i)
                    calls.append((name, i))

    threads = [threading.Thread(target=worker, args=(n,)) for n in ("t0", "t1")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    writer.close()
    assert [(tag, s) for s, tag, _ in scalar_values(only_file(logdir))] == calls


def test_flush_and_close_wait_for_pending_values(logdir: Path) -> None:
    writer = sl.create_file_writer(logdir)
    with writer.as_default():
        loss = computing().sum()
        sl.scalar("loss", loss, step=1)
        writer.flush()
        assert loss.is_ready()
        assert scalar_values(only_file(logdir)) == [(1, "loss", f32(loss))]
        loss2 = computing(1.0).sum()
        sl.scalar("loss", loss2, step=2)
    writer.close()
    assert scalar_values(only_file(logdir))[-1] == (2, "loss", f32(loss2))


def test_flush_timeout_applies_to_pending_values(logdir: Path) -> None:
    writer = sl.create_file_writer(logdir)
    with writer.as_default():
        sl.scalar("loss", computing().sum(), step=1)
        with pytest.raises(TimeoutError):
            writer.flush(timeout=0)
    writer.close()
    assert len(scalar_values(only_file(logdir))) == 1


def test_error_while_reading_the_value_names_the_tag(logdir: Path) -> None:
    writer = sl.create_file_writer(logdir)
    with writer.as_default():
        sl.scalar("fine", 1.0, step=1)
        doomed = computing().sum()
        sl.scalar("doomed", doomed, step=2)
        doomed.delete()  # as a donation to a jitted function does
        sl.scalar("after", 3.0, step=3)
        with pytest.raises(SummaryError, match="'doomed'") as info:
            writer.flush()
        assert "deleted" in str(info.value)
    writer.close()
    assert [tag for _, tag, _ in scalar_values(only_file(logdir))] == ["fine", "after"]


def test_bad_device_values_raise_at_the_call(logdir: Path) -> None:
    writer = sl.create_file_writer(logdir)
    with writer.as_default():
        with pytest.raises(ValueError, match=r"scalar: 'data' must be a scalar \(rank 0\)"):
            sl.scalar("x", jnp.zeros(3), step=1)
        with pytest.raises(TypeError, match="scalar: 'data' must be a real number"):
            sl.scalar("x", jnp.zeros((), jnp.complex64), step=1)
        with pytest.raises(TypeError, match="scalar: 'step' must be an integer"):
            sl.scalar("x", 1.0, step=jnp.float32(2.0) + 1)
        with pytest.raises(ValueError, match=r"scalars: values\['b'\]: 'data' must be a scalar"):
            sl.scalars({"a": jnp.float32(1) + 1, "b": jnp.ones(2)}, step=1)
        with pytest.raises(TypeError, match="histogram: 'data' must hold real numbers"):
            sl.histogram("h", jnp.zeros(3, jnp.complex64), step=1)
    writer.close()
    assert scalar_values(only_file(logdir)) == []


def test_pending_values_count_toward_the_buffer_bound(logdir: Path) -> None:
    # A bound smaller than one event: every op waits until the writer thread has made
    # room, which for a pending value means until it was read.
    writer = sl.create_file_writer(logdir, max_buffer_bytes=1)
    with writer.as_default():
        for i in range(3):
            loss = computing(float(i)).sum()
            sl.scalar("loss", loss, step=i)
            assert loss.is_ready()
    writer.close()


def test_sync_device_values_reads_at_the_call(logdir: Path) -> None:
    writer = sl.create_file_writer(logdir, sync_device_values=True)
    with writer.as_default():
        for i in range(2):
            loss = computing(float(i)).sum()
            sl.scalar("loss", loss, step=i)
            assert loss.is_ready()
    writer.close()
    with pytest.raises(TypeError, match="'sync_device_values' must be a bool"):
        sl.create_file_writer(logdir, sync_device_values="yes")  # type: ignore[arg-type]


# ----------------------------------------------------------------------------
# Device reductions equal the host path
# ----------------------------------------------------------------------------
_floats = hnp.arrays(
    dtype=st.sampled_from([np.float32, np.float64, np.float16, np.int32, np.int64]),
    shape=st.integers(0, 300),
    elements={"allow_nan": True, "allow_infinity": True},
)
_special = st.sampled_from([
    np.array([1e308, -1e308, 3.0]),  # the range overflows
    np.array([5e-324, 1e-323, 1.5e-323]),  # the width underflows
    np.array([np.nan, np.inf, -np.inf]),  # nothing finite
    np.array([2.5, 2.5, np.nan]),  # all equal
    np.array([True, False, True]),
])


def _host(values: np.ndarray, k: int) -> np.ndarray:
    return histogram_buckets(values.reshape(-1), k)


@given(st.one_of(_floats, _special), st.integers(1, 40))
def test_torch_device_histogram_equals_the_host_path(values: np.ndarray, k: int) -> None:
    torch = pytest.importorskip("torch")
    from summarylib.encoding.bucketing import buckets_from_table
    from summarylib.encoding.device_reductions import histogram_table

    table = histogram_table(torch.from_numpy(values.copy()), k)
    assert table is not None
    np.testing.assert_array_equal(buckets_from_table(table.result(), k), _host(values, k))


def test_jax_arrays_have_no_device_table() -> None:
    # XLA flushes subnormals and divides through a reciprocal: its counts would differ.
    from summarylib.encoding.device_reductions import histogram_table

    with jax.enable_x64(True):
        assert histogram_table(jnp.ones(4), 3) is None


# One shape: every new shape would compile JAX's kernels again.
@given(hnp.arrays(st.sampled_from([np.float32, np.float16]), 48,
                  elements={"allow_nan": True, "allow_infinity": True}))
def test_device_uint8_pixels_equal_the_host_conversion(values: np.ndarray) -> None:
    torch = pytest.importorskip("torch")
    from summarylib.encoding.device_reductions import images_uint8
    from summarylib.encoding.pixels import to_uint8

    expected = to_uint8(values)
    np.testing.assert_array_equal(np.asarray(images_uint8(jnp.asarray(values))), expected)
    np.testing.assert_array_equal(images_uint8(torch.from_numpy(values)).numpy(), expected)
    # bfloat16 converts as its exact float32 values, from either framework.
    bf = torch.from_numpy(values.astype(np.float32)).to(torch.bfloat16)
    as_f32 = bf.float().numpy()
    np.testing.assert_array_equal(images_uint8(bf).numpy(), to_uint8(as_f32))
    np.testing.assert_array_equal(
        np.asarray(images_uint8(jnp.asarray(as_f32, jnp.bfloat16))), to_uint8(as_f32))


@pytest.mark.filterwarnings("ignore:.*float pixel values are read as 0..1")  # data up to 40
def test_image_does_not_wait_and_equals_the_host_image(logdir: Path) -> None:
    writer = sl.create_file_writer(logdir)
    seen: list[Any] = []

    def log(matrix: Any) -> None:
        images = jnp.reshape(matrix[:96, :64], (2, 8, 8, 48))[..., :3] * 40.0
        seen.append(images)
        sl.image("img", images, step=len(seen), max_outputs=1)

    with writer.as_default():
        assert not_ready_after(log, computing)
        with pytest.raises(ValueError, match=r"image: 'data' must have shape \[k, h, w, c\]"):
            sl.image("img", jnp.zeros((2, 3)), step=0)
    writer.close()
    written = [e.summary.value[0].tensor.string_val for e in tb_events(only_file(logdir))
               if e.summary.value]
    expected = [sl.image_pb("img", np.asarray(x), max_outputs=1).value[0].tensor.string_val
                for x in seen]
    assert written == expected


def test_add_histogram_does_not_wait_and_checks_values_when_ready(logdir: Path) -> None:
    writer = sl.SummaryWriter(logdir)
    seen: list[Any] = []

    def log(matrix: Any) -> None:
        seen.append(matrix)
        writer.add_histogram("w", matrix, len(seen))

    assert not_ready_after(log, computing)
    writer.flush()
    writer.add_histogram("bad", computing()[0] * jnp.nan, 99)  # torch's rule: finite only
    with pytest.raises(SummaryError, match=r"'bad'.*must be finite"):
        writer.flush()
    writer.close()
    written = [e.summary.value[0].histo.SerializeToString()
               for e in tb_events(only_file(logdir)) if e.summary.value]
    expected = [sl.histogram_bins_pb("w", np.asarray(m)).value[0].histo.SerializeToString()
                for m in seen]
    assert len(written) == len(expected)
    for got, want in zip(written, expected, strict=True):
        assert got == want


# ----------------------------------------------------------------------------
# CUDA (skipped without a GPU)
# ----------------------------------------------------------------------------
def _cuda() -> Any:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    return torch


def test_cuda_values_are_captured_without_a_sync_and_in_stream_order(logdir: Path) -> None:
    torch = _cuda()
    writer = sl.create_file_writer(logdir)
    w = torch.randn(300, 300, device="cuda")
    loss = w.sum()
    kept_loss, kept_w = [], []
    with writer.as_default():
        for i in range(5):
            step = torch.full((), i, dtype=torch.int64, device="cuda")
            torch.cuda.set_sync_debug_mode("error")
            try:
                sl.scalar("loss", loss, step=i)
                sl.scalars({"a": loss, "b": loss * 2}, step=step)
                sl.histogram("w", w, step=i)
            finally:
                torch.cuda.set_sync_debug_mode("default")
            kept_loss.append(loss.clone())
            kept_w.append(w.clone())
            w.mul_(1.5)  # in place, right after the calls
            loss.add_(1.0)
    writer.close()
    got = scalar_values(only_file(logdir))
    losses = [f32(x.cpu()) for x in kept_loss]
    assert [v for _, tag, v in got if tag == "loss"] == losses
    assert [v for _, tag, v in got if tag == "a"] == losses
    hists = [e.summary.value[0].tensor.tensor_content for e in tb_events(only_file(logdir))
             if e.summary.value and e.summary.value[0].tag == "w"]
    assert hists == [sl.histogram_pb("w", x.cpu().numpy()).value[0].tensor.tensor_content
                     for x in kept_w]


@pytest.mark.filterwarnings("ignore:.*float pixel values are read as 0..1")
def test_add_image_and_add_images_do_not_wait_and_equal_the_host_images(
    tmp_path: Path,
) -> None:
    device, host = sl.SummaryWriter(tmp_path / "device"), sl.SummaryWriter(tmp_path / "host")
    seen: list[Any] = []

    def log(matrix: Any) -> None:
        chw = jnp.reshape(matrix[:48, :64], (3, 32, 32)) * 3.0 - 0.5  # some out of [0, 1]
        batch = jnp.reshape(matrix[:80, :80], (5, 1, 32, 40))  # 5 grey images: a 2-row grid
        seen.append((chw, batch))
        device.add_image("one", chw, len(seen))
        device.add_images("grid", batch, len(seen))
        device.add_image("hw", chw[0], len(seen), dataformats="HW")

    assert not_ready_after(log, computing)
    for i, (chw, batch) in enumerate(seen):
        host.add_image("one", np.asarray(chw), i + 1)
        host.add_images("grid", np.asarray(batch), i + 1)
        host.add_image("hw", np.asarray(chw[0]), i + 1, dataformats="HW")
    device.close()
    host.close()

    def images(d: Path) -> list[tuple[int, str, bytes]]:
        return [(e.step, v.tag, v.tensor.SerializeToString())
                for e in tb_events(only_file(d)) for v in e.summary.value]

    assert images(tmp_path / "device") == images(tmp_path / "host")


def test_video_does_not_wait_and_equals_the_host_video(logdir: Path) -> None:
    writer = sl.create_file_writer(logdir)
    seen: list[Any] = []

    def log(matrix: Any) -> None:
        clips = jnp.reshape(matrix[:120, :64], (2, 5, 8, 32, 3)) * 2.0 - 0.3
        seen.append(clips)
        sl.video("v", clips, step=len(seen), fps=5)

    with writer.as_default():
        assert not_ready_after(log, computing)
        with pytest.raises(TypeError, match="video: 'data' must be uint8"):
            sl.video("v", jnp.zeros((2, 4, 4, 3), jnp.int32), step=0)
    writer.close()
    written = [e.summary.value[0].tensor.string_val for e in tb_events(only_file(logdir))
               if e.summary.value]
    expected = [sl.video_pb("v", np.asarray(x), fps=5).value[0].tensor.string_val for x in seen]
    assert written == expected
