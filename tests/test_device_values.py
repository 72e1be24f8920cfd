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
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import summarylib as sl
from summarylib.encoding._bucketing import histogram_buckets
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


def test_walltime_forms_do_not_wait_and_write_the_callers_time(logdir: Path) -> None:
    # walltime= goes through the op cores like the time of writing: device values and
    # device steps are still not read on the caller's thread.
    writer = sl.SummaryWriter(logdir)
    seen: list[Any] = []

    def log(matrix: Any) -> None:
        seen.append(matrix)
        i = len(seen)
        assert writer.add_scalar("a", matrix[0, 0], jnp.int32(i), walltime=1000.0 + i)
        assert writer.add_histogram("h", matrix, i, walltime=2000.0 + i)

    assert not_ready_after(log, computing)
    writer.close()
    events = [e for e in tb_events(only_file(logdir)) if e.summary.value]
    scalars = [(e.step, e.wall_time, f32(v.simple_value))  # torch's form
               for e in events for v in e.summary.value if v.tag == "a"]
    assert scalars == [(i + 1, 1001.0 + i, f32(m[0, 0])) for i, m in enumerate(seen)]
    histos = [(e.step, e.wall_time) for e in events if e.summary.value[0].tag == "h"]
    assert histos == [(i + 1, 2001.0 + i) for i in range(len(seen))]


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
    # 128 x 128, as computing(): the device kernels are compiled once for both tests.
    big = jnp.reshape(jnp.linspace(-3.0, 5.0, 1 << 14, dtype=jnp.float32), (128, 128)) ** 3
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
    from summarylib.encoding._pending import TorchPending

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


_FAILED_COMPUTATION = """
import sys
import jax, jax.numpy as jnp
import summarylib as sl

def refuse(x):
    raise ValueError("the host function refused the value")

@jax.jit
def busy(x):
    return jax.lax.fori_loop(0, 300, lambda i, a: jnp.tanh(a @ a) + 0.001, x)

failing = jax.jit(lambda m: jax.pure_callback(
    refuse, jax.ShapeDtypeStruct((), jnp.float32), m.sum()) + 1)
x = jnp.full((128, 128), 0.01, jnp.float32)
busy(x).block_until_ready()
try:
    failing(x)  # compiled (and failing at once: its input is ready)
except Exception:
    pass
with sl.create_file_writer(sys.argv[1]).as_default() as writer:
    sl.scalar("fine", 1.0, step=1)
    doomed = failing(busy(x))  # fails later, on JAX's thread
    assert not doomed.is_ready()
    sl.scalar("doomed", doomed, step=2)
    sl.scalar("after", 3.0, step=3)
    try:
        writer.flush()
    except sl.SummaryError as e:
        print("flush:", e)
"""


def test_error_while_reading_the_value_names_the_tag(tmp_path: Path) -> None:
    # A computation that fails when it runs (its host callback raises): JAX reports the
    # failure when its result is read, on the writer thread; the flush reports it. In a
    # process of its own: JAX keeps the failure and raises it again for every later
    # computation with a host callback, and at exit.
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _FAILED_COMPUTATION, str(tmp_path)],
                          capture_output=True, text=True, timeout=600)
    (report,) = [line for line in done.stdout.splitlines() if line.startswith("flush:")]
    assert "'doomed'" in report and "the host function refused the value" in report
    assert [tag for _, tag, _ in scalar_values(only_file(tmp_path))] == ["fine", "after"]


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
    from summarylib.encoding._bucketing import buckets_from_table
    from summarylib.encoding._device_reductions import histogram_table

    table = histogram_table(torch.from_numpy(values.copy()), k)
    assert table is not None
    np.testing.assert_array_equal(buckets_from_table(table.result(), k), _host(values, k))


def test_jax_float64_has_no_device_table() -> None:
    # XLA's float arithmetic is not the host's; the integer kernels take 32 bits at most.
    from summarylib.encoding._device_reductions import histogram_table

    with jax.enable_x64(True):
        assert histogram_table(jnp.ones(4), 3) is None


def _check_device_histogram(values: np.ndarray, k: int, as_bfloat16: bool) -> None:
    """The device table of ``values`` (as bfloat16 if asked) equals the host path's."""
    from summarylib.encoding._arrays import widen_extended_float
    from summarylib.encoding._bucketing import buckets_from_table
    from summarylib.encoding._device_reductions import histogram_table

    array = jnp.asarray(values)
    if as_bfloat16 and values.dtype == np.float32:
        array = array.astype(jnp.bfloat16)
    table = histogram_table(array, k)
    assert table is not None
    host = widen_extended_float(np.asarray(array))
    np.testing.assert_array_equal(buckets_from_table(table.result(), k), _host(host, k))



# One length and few dtypes: each new shape and dtype compiles the kernels again (about a
# second here). Subnormals, signed zeros, NaN and infinities included: the kernels compare
# integer keys only. (float16 and int32 take the same code as bfloat16 and int8.)
@given(
    hnp.arrays(st.sampled_from([np.float32, np.int8]), 48,
               elements={"allow_nan": True, "allow_infinity": True, "allow_subnormal": True}),
    st.sampled_from([1, 3, 30]),
    st.booleans(),
)
def test_jax_device_histogram_equals_the_host_path(
    values: np.ndarray, k: int, as_bfloat16: bool
) -> None:
    _check_device_histogram(values, k, as_bfloat16)


# Any shape of up to 2**14 values runs on one size class's kernels (only a small
# flatten-and-pad kernel is compiled per shape); the padding must count for nothing, which
# int8's zeros would show.
@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from([np.float32, np.int8]),
    hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=24),
    st.sampled_from([1, 3, 30]),
    st.booleans(),
    st.data(),
)
def test_jax_device_histogram_of_any_shape_equals_the_host_path(
    dtype: Any, shape: tuple[int, ...], k: int, as_bfloat16: bool, data: st.DataObject
) -> None:
    values = data.draw(hnp.arrays(dtype, shape, elements={
        "allow_nan": True, "allow_infinity": True, "allow_subnormal": True}))
    _check_device_histogram(values, k, as_bfloat16)


def test_jax_device_histogram_across_size_classes_equals_the_host_path() -> None:
    from summarylib.encoding._bucketing import buckets_from_table
    from summarylib.encoding._device_reductions import histogram_table, size_class

    rng = np.random.default_rng(3)
    for n in (1 << 14, (1 << 14) + 1, 40_000):
        values = rng.integers(-100, 100, n).astype(np.int8)  # the padding's zeros would count
        values[-1] = 127  # the last real value: the mask must not stop short of it
        assert size_class(n) >= n
        table = histogram_table(jnp.asarray(values), 7)
        assert table is not None
        np.testing.assert_array_equal(buckets_from_table(table.result(), 7), _host(values, 7))


def test_new_shapes_compile_nothing_on_the_callers_thread(logdir: Path) -> None:
    # The first histogram of a new shape used to compile its kernels at the call (tenths
    # of a second each); now the writer thread compiles them. JAX reports every backend
    # compile to its monitoring listeners, on the compiling thread.
    caller = threading.get_ident()
    compiles: list[int] = []

    def listener(event: str, secs: float, **kwargs: Any) -> None:
        if event == "/jax/core/compile/backend_compile_duration":
            compiles.append(threading.get_ident())

    rng = np.random.default_rng(5)
    arrays = [jnp.asarray(rng.normal(size=shape).astype(np.float32))
              for shape in [(131, 127), (3, 7, 1000), (20011,)]]
    for a in arrays:
        a.block_until_ready()
    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        with sl.create_file_writer(logdir).as_default() as writer:
            for i, a in enumerate(arrays):
                sl.histogram("h", a, step=i, buckets=11)
            on_caller = [t for t in compiles if t == caller]
            writer.flush()
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)
    assert on_caller == []
    assert compiles, "the writer thread compiled the kernels"
    got = [e.summary.value[0].tensor.tensor_content for e in tb_events(only_file(logdir))
           if e.summary.value]
    assert got == [sl.histogram_pb("h", np.asarray(a), buckets=11).value[0].tensor.tensor_content
                   for a in arrays]


_WRITER_IMPORTS = """
import sys, threading
import jax, jax.numpy as jnp
import summarylib as sl

imported = []

class Finder:  # consulted for every module not loaded yet
    def find_spec(self, name, path=None, target=None):
        if threading.current_thread() is not threading.main_thread():
            imported.append(name)
        return None

histogram = sl.histogram  # the op's module, loaded on this thread
ones = jnp.ones((200, 200))
busy = jax.jit(lambda x: jax.lax.fori_loop(0, 20, lambda i, a: jnp.tanh(a @ a), x))
busy(ones).block_until_ready()
compiled_on = set()
jax.monitoring.register_event_duration_secs_listener(
    lambda event, secs, **kw: compiled_on.add(threading.current_thread().name))
sys.meta_path.insert(0, Finder())
with sl.create_file_writer(sys.argv[1]).as_default() as w:
    for dtype in (jnp.float32, jnp.bfloat16, jnp.int8):
        histogram("h", jnp.ones((150, 111), dtype), step=1)
    # Values still computing, of one kind, as a loop logs them: copied at the call, and
    # once the kind keeps coming its copy compiled on a thread.
    values = [busy(ones).sum() for _ in range(20)]
    for i, value in enumerate(values):
        sl.scalar("s", value, step=i)
    assert not values[-1].is_ready()
    w.flush()
for thread in threading.enumerate():
    if thread.name == "summarylib-compile":
        thread.join()
assert "summarylib-compile" in compiled_on, compiled_on
print(imported)
"""


def test_the_writer_thread_compiles_new_shapes_without_importing(tmp_path: Path) -> None:
    # The writer thread must import nothing (fork safety, see summarylib/__init__.py):
    # in a fresh process, its compiles of the kernels of three new dtypes load no module,
    # nor does the thread that compiles the copy of a value still computing.
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", _WRITER_IMPORTS, str(tmp_path)],
                         capture_output=True, text=True, timeout=600, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


_PLACEMENTS = """
import sys
import jax, numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
import summarylib as sl

mesh = Mesh(np.array(jax.devices()), ("data",))
v = np.sin(np.arange(40_000, dtype=np.float32)).reshape(200, 200)
placements = [NamedSharding(mesh, P("data")), jax.devices()[1], jax.devices()[0],
              NamedSharding(mesh, P(None, "data"))]
with sl.create_file_writer(sys.argv[1]).as_default() as w:
    for step in range(2):  # the second round finds every kernel compiled
        for i, where in enumerate(placements):
            sl.histogram(f"h{i}", jax.device_put(v, where), step=step, buckets=9)
"""


def test_jax_device_histograms_of_one_shape_on_several_placements(tmp_path: Path) -> None:
    # One shape, sharded two ways and on either of two devices: each placement needs its
    # own compiled kernels (a kernel compiled for one refuses arrays placed otherwise).
    import os
    import subprocess
    import sys

    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2",
               JAX_PLATFORMS="cpu")
    done = subprocess.run([sys.executable, "-c", _PLACEMENTS, str(tmp_path)], env=env,
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    values = np.sin(np.arange(40_000, dtype=np.float32))
    want = sl.histogram_pb("h", values, buckets=9).value[0].tensor.tensor_content
    got = [(v.tag, e.step, v.tensor.tensor_content) for e in tb_events(only_file(tmp_path))
           for v in e.summary.value]
    assert got == [(f"h{i}", step, want) for step in range(2) for i in range(4)]


def test_jax_device_histogram_signed_zero_maximum_equals_the_host_path() -> None:
    # The host's rule for zero extremes (+0.0 the maximum if present), bytes compared:
    # assert_array_equal would take -0.0 for +0.0.
    from summarylib.encoding._bucketing import buckets_from_table
    from summarylib.encoding._device_reductions import histogram_table

    for values in ([-1.0, -0.0, 0.0, -2.0], [0.0, -0.0], [-0.0, -0.0, -3.0, -1.0],
                   [-1.0, 0.0, -0.0, -2.0]):
        data = np.array(values * (48 // len(values)), np.float32)  # one shape: one compile
        table = histogram_table(jnp.asarray(data), 3)
        assert table is not None
        assert buckets_from_table(table.result(), 3).tobytes() == _host(data, 3).tobytes()


# One shape: every new shape would compile JAX's kernels again.
@given(hnp.arrays(st.sampled_from([np.float32, np.float16]), 48,
                  elements={"allow_nan": True, "allow_infinity": True}))
def test_device_uint8_pixels_equal_the_host_conversion(values: np.ndarray) -> None:
    torch = pytest.importorskip("torch")
    from summarylib.encoding._device_reductions import images_uint8
    from summarylib.encoding._pixels import to_uint8

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
        with pytest.raises(
            ValueError, match=r"image: 'data' with dataformats='NHWC' must have shape \[k, h"
        ):
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


# ----------------------------------------------------------------------------
# Every other op: audio, text, PR curves, meshes, tensors, videos, device steps
# ----------------------------------------------------------------------------
def _values_of(d: Path) -> list[tuple[int, str, bytes, bytes]]:
    return [(e.step, v.tag, v.tensor.SerializeToString(), v.metadata.SerializeToString())
            for e in tb_events(only_file(d)) for v in e.summary.value]


def _same_as_host(
    tmp_path: Path, log: Callable[[Any], None], replay: Callable[[Any, Any], None]
) -> None:
    """``log(matrix)`` on a writer with device arrays still computing returns before they
    are ready; replaying each logged matrix on the host (``replay(matrix, step)``) writes
    the same values."""
    device, host = tmp_path / "device", tmp_path / "host"
    seen: list[Any] = []

    def call(matrix: Any) -> None:
        seen.append(matrix)
        log(matrix)

    with sl.create_file_writer(device).as_default(step=0) as w:
        assert not_ready_after(call, computing)
    w.close()
    with sl.create_file_writer(host).as_default(step=0) as h:
        for i, m in enumerate(seen):
            replay(np.asarray(m), i + 1)
    h.close()
    got, want = _values_of(device), _values_of(host)
    assert got and got == want


def test_audio_does_not_wait_and_equals_the_host_audio(tmp_path: Path) -> None:
    def clips(m: Any) -> Any:
        return m[:3, :40] * 30.0 - 0.2  # some beyond [-1, 1]: clipped

    n = [0]

    def log(m: Any) -> None:
        n[0] += 1
        sl.audio("a", clips(m), 8000, step=n[0], max_outputs=2)
        sl.audio("st", jnp.reshape(clips(m), (2, 30, 2)), 4000, step=n[0])

    def replay(m: Any, step: int) -> None:
        sl.audio("a", clips(m), 8000, step=step, max_outputs=2)
        sl.audio("st", np.reshape(clips(m), (2, 30, 2)), 4000, step=step)

    _same_as_host(tmp_path, log, replay)


def test_add_audio_and_add_video_do_not_wait_and_equal_the_host_values(
    tmp_path: Path,
) -> None:
    device, host = sl.SummaryWriter(tmp_path / "device"), sl.SummaryWriter(tmp_path / "host")
    seen: list[Any] = []

    def log(m: Any) -> None:
        seen.append(m)
        device.add_audio("snd", m[0, :64][None, :, None] * 20.0 - 0.1, len(seen), 16000)
        clips = jnp.reshape(m[:96, :40], (3, 4, 1, 8, 40)) * 7.0  # N=3: padded to 4
        device.add_video("vid", clips, len(seen), fps=8)

    def log_u8(m: Any) -> None:
        u8 = (jnp.reshape(m[:32, :48], (2, 4, 8, 8, 3)) * 3e3).astype(jnp.uint8)
        seen.append(u8)
        device.add_video("u8", u8, len(seen), dataformats="NTHWC")

    assert not_ready_after(log, computing)
    first = len(seen)
    assert not_ready_after(log_u8, computing)
    for i, m in enumerate(map(np.asarray, seen)):
        if i < first:
            host.add_audio("snd", m[0, :64][None, :, None] * 20.0 - 0.1, i + 1, 16000)
            host.add_video("vid", np.reshape(m[:96, :40], (3, 4, 1, 8, 40)) * 7.0, i + 1,
                           fps=8)
        else:
            host.add_video("u8", m, i + 1, dataformats="NTHWC")
    device.close()
    host.close()
    assert _values_of(tmp_path / "device") == _values_of(tmp_path / "host")


def test_text_refuses_device_arrays_without_reading_them(logdir: Path) -> None:
    # No framework has strings on a device: refused from the dtype, before any wait.
    writer = sl.create_file_writer(logdir)
    with writer.as_default():
        m = computing()
        with pytest.raises(TypeError, match="text: 'data' must be str, bytes or an array"):
            sl.text("t", m, step=1)
        assert not m.is_ready()
    writer.close()


def test_pr_curve_does_not_wait_and_equals_the_host_curve(tmp_path: Path) -> None:
    def parts(m: Any) -> tuple[Any, Any, Any]:
        return m[0] > 0.58, m[1] * 1.7 - 0.3, m[2] * 4.0  # some predictions outside [0, 1]

    n = [0]

    def log(m: Any) -> None:
        n[0] += 1
        labels, predictions, weights = parts(m)
        sl.pr_curve("counted", labels, predictions, step=n[0], num_thresholds=9)
        sl.pr_curve("weighted", labels, predictions, step=n[0], weights=weights)
        sl.pr_curve("mixed", np.arange(128) % 2, predictions, step=n[0], num_thresholds=5)

    def replay(m: Any, step: int) -> None:
        labels, predictions, weights = parts(m)
        sl.pr_curve("counted", labels, predictions, step=step, num_thresholds=9)
        sl.pr_curve("weighted", labels, predictions, step=step, weights=weights)
        sl.pr_curve("mixed", np.arange(128) % 2, predictions, step=step, num_thresholds=5)

    _same_as_host(tmp_path, log, replay)


def test_add_pr_curve_does_not_wait_and_equals_the_host_curve(tmp_path: Path) -> None:
    device, host = sl.SummaryWriter(tmp_path / "device"), sl.SummaryWriter(tmp_path / "host")
    seen: list[Any] = []

    weights = np.linspace(0.5, 2.0, 128).reshape(1, 128)  # host weights beside device labels

    def log(m: Any) -> None:
        seen.append(m)
        device.add_pr_curve("pr", m[0] > 0.58, jnp.clip(m[1], 0, 1), len(seen))
        device.add_pr_curve("weighted", m[:1] > 0.58, jnp.clip(m[1:2], 0, 1), len(seen),
                            weights=weights)

    assert not_ready_after(log, computing)
    weights[:] = 0  # kept at the call: the caller may change its array at once
    for i, m in enumerate(map(np.asarray, seen)):
        host.add_pr_curve("pr", m[0] > 0.58, np.clip(m[1], 0, 1), i + 1)
        host.add_pr_curve("weighted", m[:1] > 0.58, np.clip(m[1:2], 0, 1), i + 1,
                          weights=np.linspace(0.5, 2.0, 128).reshape(1, 128))
    m = computing()
    with pytest.raises(ValueError, match=r"add_pr_curve: 'weights' must be a number or of "
                                         r"shape \(128, 128\)"):  # at the call, not the write
        device.add_pr_curve("bad", m > 0.5, jnp.clip(m, 0, 1), 9, weights=np.ones(3))
    device.close()
    host.close()
    assert _values_of(tmp_path / "device") == _values_of(tmp_path / "host")


def test_values_checked_when_read_fail_like_a_write_naming_the_tag(logdir: Path) -> None:
    writer = sl.create_file_writer(logdir)
    with writer.as_default():
        m = computing()
        with pytest.raises(ValueError, match="pr_curve: 'labels' and 'predictions' must have"):
            sl.pr_curve("bad", m[0], m[1, :3], step=1)  # shapes: checked at the call
        sl.pr_curve("labels", m[0] * 3.0 + 2.0, m[1], step=1)  # not 0/1: checked when read
        with pytest.raises(SummaryError, match=r"'labels/pr_curves'.*all 0 or 1"):
            writer.flush()
        sl.mesh("cloud", jnp.reshape(m[:2, :30], (2, 10, 3)) / 0.0, step=2)  # inf, nan
        with pytest.raises(SummaryError, match=r"'cloud_VERTEX'.*must be finite"):
            writer.flush()
        sl.scalar("after", 1.0, step=3)
    writer.close()
    assert [v.tag for e in tb_events(only_file(logdir)) for v in e.summary.value] == ["after"]


def test_mesh_and_write_do_not_wait_and_equal_the_host_values(tmp_path: Path) -> None:
    n = [0]

    def shapes(m: Any, xp: Any) -> tuple[Any, Any, Any]:
        verts = xp.reshape(m[:2, :30], (2, 10, 3))
        faces = (xp.reshape(m[2:4, :12], (2, 4, 3)) * 1e3).astype(xp.int32) % 10
        colors = (verts * 1e4).astype(xp.int32) % 256
        return verts, faces, colors

    def log(m: Any) -> None:
        n[0] += 1
        verts, faces, colors = shapes(m, jnp)
        sl.mesh("m", verts, faces=faces, colors=colors, step=n[0], config_dict={"a": 1})
        sl.mesh("points", verts, step=n[0])
        sl.write("raw", m[:3, :5], step=n[0])
        sl.write("bf16", m[:2, :4].astype(jnp.bfloat16), step=n[0])
        sl.write("ints", (m[0, :6] * 1e3).astype(jnp.int32), step=n[0], metadata=b"")

    def replay(m: Any, step: int) -> None:
        verts, faces, colors = shapes(m, np)
        sl.mesh("m", verts, faces=faces, colors=colors, step=step, config_dict={"a": 1})
        sl.mesh("points", verts, step=step)
        sl.write("raw", m[:3, :5], step=step)
        sl.write("bf16", np.asarray(jnp.asarray(m[:2, :4]).astype(jnp.bfloat16)), step=step)
        sl.write("ints", (m[0, :6] * 1e3).astype(np.int32), step=step, metadata=b"")

    _same_as_host(tmp_path, log, replay)


def test_add_tensor_and_add_mesh_do_not_wait(tmp_path: Path) -> None:
    writer = sl.SummaryWriter(tmp_path)
    seen: list[Any] = []

    def log(m: Any) -> None:
        seen.append(m)
        writer.add_tensor("t", m[:2, :2], len(seen))
        writer.add_mesh("mesh", jnp.reshape(m[:1, :9], (1, 3, 3)), global_step=len(seen))

    assert not_ready_after(log, computing)
    writer.close()
    events = [(e.step, v.tag, v.tensor) for e in tb_events(only_file(tmp_path))
              for v in e.summary.value]
    assert [(s, tag) for s, tag, _ in events] == [
        (i + 1, tag) for i in range(len(seen)) for tag in ("t", "mesh_VERTEX")]
    assert [t.tensor_content for _, tag, t in events if tag == "t"] == [
        np.asarray(m[:2, :2]).astype("<f4").tobytes() for m in seen]


def _device_step(base: int) -> Any:
    # An int32 scalar still being computed (it depends on the busy matrix): base + 0.
    return (computing()[0, 0] * 0).astype(jnp.int32) + base


def test_a_step_on_the_device_does_not_wait_in_any_op(tmp_path: Path) -> None:
    writer = sl.SummaryWriter(tmp_path)
    pixels = np.full((1, 4, 4, 3), 0.5, np.float32)
    calls: list[tuple[str, Callable[[Any], Any]]] = [
        ("histogram", lambda s: sl.histogram("histogram", [1.0, 2.0], step=s)),
        ("image", lambda s: sl.image("image", pixels, step=s)),
        ("audio", lambda s: sl.audio("audio", np.zeros((1, 8)), 8000, step=s)),
        ("text", lambda s: sl.text("text", "hello", step=s)),
        ("pr_curve", lambda s: sl.pr_curve("pr_curve", [True, False], [0.2, 0.9], step=s)),
        ("mesh_VERTEX", lambda s: sl.mesh("mesh", np.zeros((1, 2, 3)), step=s)),
        ("write", lambda s: sl.write("write", [1, 2], step=s)),
        ("video", lambda s: sl.video("video", np.zeros((2, 4, 4, 3), np.uint8), step=s)),
        ("raw_pb", lambda s: sl.write_raw_pb(sl.scalar_pb("raw_pb", 1.0), step=s)),
        ("add_histogram", lambda s: writer.add_histogram("add_histogram", np.arange(5.0), s)),
        ("add_text", lambda s: writer.add_text("add_text", "hi", s)),
        ("add_image", lambda s: writer.add_image("add_image", pixels[0], s, dataformats="HWC")),
    ]
    expected = []
    with writer.as_default():
        for i, (tag, call) in enumerate(calls):
            def log(step: Any, call: Callable[[Any], Any] = call) -> None:
                call(step)

            for _ in range(3):
                step = _device_step(10 + i)
                log(step)
                expected.append((10 + i, tag))
                if not step.is_ready():
                    break
            else:
                pytest.fail(f"{tag}: the call waited for its step")
    writer.close()
    written = [(e.step, v.tag.split("/")[0]) for e in tb_events(only_file(tmp_path))
               for v in e.summary.value]
    assert written == expected


def test_sync_device_values_reads_every_op_at_the_call(logdir: Path) -> None:
    writer = sl.create_file_writer(logdir, sync_device_values=True)
    with writer.as_default():
        for call in (
            lambda m: sl.audio("a", m[:1, :8], 8000, step=1),
            lambda m: sl.pr_curve("p", m[0] > 0.5, m[1], step=1),
            lambda m: sl.write("w", m[0, :2], step=1),
            lambda m: sl.text("t", "x", step=(m[0, 0] * 0).astype(jnp.int32) + 1),
        ):
            m = computing()
            call(m)
            assert m.is_ready()
    writer.close()
    assert len(tb_events(only_file(logdir))) == 5  # the file version and four values


# One length (every new shape compiles JAX's kernels again); JAX on few dtypes and T.
@given(
    hnp.arrays(st.sampled_from([np.float32, np.float16, np.float64, np.int32, np.bool_]), 40,
               elements={"allow_nan": True, "allow_infinity": True}),
    hnp.arrays(st.sampled_from([np.bool_, np.float32, np.int64]), 40,
               elements=st.sampled_from([0, 1])),
    st.sampled_from([2, 11, 2049]),
)
def test_device_pr_counts_equal_the_host_counts(
    predictions: np.ndarray, labels: np.ndarray, t: int
) -> None:
    torch = pytest.importorskip("torch")
    from summarylib.encoding._device_reductions import pr_bucket_table
    from summarylib.ops.pr_curve import pr_data, pr_from_buckets, prepare

    expected = pr_data(*prepare(labels, predictions, None, "test"), t)
    pairs = [(torch.from_numpy(labels), torch.from_numpy(predictions))]
    if predictions.dtype in (np.float32, np.float16) and labels.dtype == np.bool_ and t > 2:
        pairs.append((jnp.asarray(labels), jnp.asarray(predictions)))
    for lab, pred in pairs:
        table = pr_bucket_table(lab, pred, t)
        assert table is not None
        counts = table.result().astype(np.int64)
        assert counts[-1] == 0  # every label is 0 or 1
        np.testing.assert_array_equal(pr_from_buckets(counts[:-1].reshape(t, 2)), expected)
    bad = pr_bucket_table(torch.from_numpy(labels.astype(np.float32) * 2 - 0.5),
                          torch.from_numpy(predictions), t)
    assert bad is not None and bad.result()[-1] == 40  # labels not 0/1, counted for the error


def test_every_lost_device_value_is_named_in_one_report(tmp_path: Path) -> None:
    # Values that fail their checks when read are lost (documented); the one report the
    # caller gets says how many and names the first few by tag and step.
    m = computing()
    w = sl.create_file_writer(tmp_path, max_queue=10**6, flush_millis=10**9)
    with w.as_default():
        for i in range(9):
            sl.pr_curve(f"t{i}", m[0] + 2.0 + i, m[1], step=i)  # labels not 0/1
        with pytest.raises(sl.SummaryError) as raised:
            w.flush()
    message = str(raised.value)
    assert "9 events were lost" in message
    for i in range(5):
        assert f"'t{i}/pr_curves' at step {i}" in message
    assert "and 4 more" in message
    w.close()  # told already: nothing more to report


def _donating_step() -> Callable[[Any], Any]:
    # A training step that donates its state, as JAX training loops do: the arrays of the
    # old state are deleted when it is called (unless something else holds their
    # buffers). Its outputs are ready only when its busy work is done.
    def step(s: dict[str, Any]) -> dict[str, Any]:
        busy = jax.lax.fori_loop(0, 200, lambda i, a: jnp.tanh(a @ a) + 0.001, s["busy"])
        return {"busy": busy, "step": s["step"] + 1, "m": s["m"] + 0.5,
                "small": s["small"] + 1.0, "big": s["big"] + 1.0, "img": s["img"] * 0.5}

    return jax.jit(step, donate_argnums=0)


def _host_states(n: int) -> list[dict[str, np.ndarray]]:
    # The states of the first n steps, as the step computes them (float32 arithmetic).
    f = np.float32
    s = {"step": np.asarray(0, np.int32), "m": np.asarray(0, f),
         "small": np.linspace(-2, 2, 100, dtype=f),
         "big": np.reshape(np.arange(129 * 128, dtype=f), (129, 128)) / f(7),
         "img": np.linspace(0, 1, 4 * 5 * 3, dtype=f).reshape(4, 5, 3)}
    out = [s]
    for _ in range(n - 1):
        s = {"step": s["step"] + np.int32(1), "m": s["m"] + f(0.5), "small": s["small"] + f(1),
             "big": s["big"] + f(1), "img": s["img"] * f(0.5)}
        out.append(s)
    return out


def _log_state(s: dict[str, Any]) -> None:
    at = s["step"]
    sl.scalar("m", s["m"], step=at)
    sl.scalars({"m_twice": s["m"], "m_thrice": s["m"]}, step=at)
    sl.histogram("small", s["small"], step=at, buckets=9)
    sl.histogram("big", s["big"], step=at, buckets=9)  # reduced on the device
    sl.image("img", s["img"][None], step=at)


def _values_by_step_and_tag(logdir: Path) -> dict[tuple[int, str], bytes]:
    return {(e.step, v.tag): v.SerializeToString() for e in tb_events(only_file(logdir))
            for v in e.summary.value}


def test_values_logged_before_a_donating_step_are_written(tmp_path: Path) -> None:
    # The usual JAX loop logs its state, then donates it to the next step, which deletes
    # the logged arrays before the writer thread reads them. What was logged is written:
    # arrays still computing at the call are copied on the device (in the device's order,
    # before the step that deletes them: device_put's copy, then a compiled one once a
    # kind keeps coming), computed ones are viewed on the host.
    steps = 22
    train = _donating_step()
    expected = _host_states(steps)
    start = {"busy": jnp.full((160, 160), 0.01, jnp.float32),
             **{k: jnp.asarray(v) for k, v in expected[0].items()}}
    train({k: v + 0 for k, v in start.items()})  # compiled before anything is watched
    caller = threading.get_ident()
    compiles: list[tuple[int, str]] = []

    def listener(event: str, secs: float, **kwargs: Any) -> None:
        if event == "/jax/core/compile/backend_compile_duration":
            compiles.append((threading.get_ident(), threading.current_thread().name))

    s = {k: jnp.asarray(v) + 0 for k, v in start.items()}
    with sl.create_file_writer(tmp_path / "warm").as_default():
        # The ops' own first-call compiles (stacking scalars, converting pixels), left out
        # of what is watched: computed values, which need no copy.
        _log_state(jax.block_until_ready({k: v + 0 for k, v in start.items()}))
    donated_unread = 0
    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        with sl.create_file_writer(tmp_path / "device").as_default() as writer:
            for i in range(steps):
                if i == 3:
                    jax.block_until_ready(s)  # computed values (the view route)
                if i == 6:
                    writer.flush()  # the kernels compiled by now: dispatched at the call
                if i == steps - 3:  # the copies compiled by now: the compiled copy
                    for thread in threading.enumerate():
                        if thread.name == "summarylib-compile":
                            thread.join()
                ready = s["big"].is_ready()
                _log_state(s)
                if i == 5:
                    for v in s.values():
                        v.delete()  # as the user's own code may do
                    s = {k: jnp.asarray(v) for k, v in expected[6].items()} | {
                        "busy": start["busy"] + 0}
                    continue
                old = s
                s = train(s)
                donated_unread += not ready and old["big"].is_deleted()
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)
    assert donated_unread >= 10, "the step donated states that were still computing"
    assert [t for t, _ in compiles if t == caller] == [], "nothing compiled on the caller"
    assert "summarylib-compile" in {name for _, name in compiles}, "copies were compiled"
    with sl.create_file_writer(tmp_path / "host").as_default():
        for host in expected:
            _log_state(host)
    got = _values_by_step_and_tag(tmp_path / "device")
    assert sorted({s for s, _ in got}) == list(range(steps))
    assert got == _values_by_step_and_tag(tmp_path / "host")
