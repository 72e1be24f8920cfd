"""Real torch and JAX tensors through every op: the same bytes as the equivalent numpy input.

Low-precision floats (bfloat16, float8) are real numbers to every op and count as their exact
float32 values, whichever framework holds them (summarylib.encoding._arrays). float16 is a numpy
dtype: ops that compute in the input's float type as TensorFlow does (image's ``x * 255.5``,
pr_curve's ``p * (T - 1)``) are compared with numpy float16; every other result equals float32's.
"""

# mypy: disable-error-code="import-untyped"
from __future__ import annotations

import io
import warnings
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from PIL import Image

import summarylib as sl
from summarylib.encoding._arrays import as_array, is_extended_float, scalar_float
from tests.helpers import only_file, tb_events, torch_warns_always

ml_dtypes = pytest.importorskip("ml_dtypes")

RATE = 8000
LOW_FLOATS = ["bfloat16", "float8_e4m3fn", "float8_e5m2"]
DTYPES = ["float32", "float16", *LOW_FLOATS]
# Ops whose arithmetic runs in the input's float type (TensorFlow parity): float16 stays float16.
IN_DTYPE_OPS = {"image", "pr_curve"}


def np_dtype(name: str) -> np.dtype:
    return np.dtype(getattr(ml_dtypes, name)) if name in LOW_FLOATS else np.dtype(name)


def ref_dtype(op: str, name: str) -> np.dtype:
    """The numpy dtype whose input must give the same bytes."""
    return np.dtype(np.float16) if name == "float16" and op in IN_DTYPE_OPS else np.dtype("f4")


# ---------------------------------------------------------------------------
# One float32 array per op; values are then rounded to the dtype under test,
# so the tensor holds exactly the values of the float32 reference.
# ---------------------------------------------------------------------------
def base_data(op: str) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(11)
    if op == "scalar":
        return {"data": np.array(0.3125, np.float32)}
    if op == "histogram":
        return {"data": rng.normal(0, 2, (5, 7)).astype(np.float32)}
    if op == "image":
        return {"data": rng.random((2, 4, 5, 3)).astype(np.float32)}
    if op == "audio":
        return {"data": rng.uniform(-1.1, 1.1, (2, 50, 2)).astype(np.float32)}
    if op == "pr_curve":
        return {
            "predictions": rng.random(64).astype(np.float32),
            "weights": rng.uniform(0, 3, 64).astype(np.float32),
        }
    assert op == "pr_curve_raw"
    tp = np.arange(21, 0, -1).astype(np.float32)
    return {
        "true_positive_counts": tp,
        "false_positive_counts": tp / 2,
        "true_negative_counts": 21 - tp,
        "false_negative_counts": np.ones(21, np.float32),
        "precision": np.linspace(0.5, 1, 21).astype(np.float32),
        "recall": np.linspace(1, 0, 21).astype(np.float32),
    }


LABELS = np.random.default_rng(12).random(64) > 0.4
OPS = ["scalar", "histogram", "image", "audio", "pr_curve", "pr_curve_raw"]


def rounded(arrays: dict[str, np.ndarray], dtype: str) -> dict[str, np.ndarray]:
    with warnings.catch_warnings():  # float8 casts of out-of-range values
        warnings.simplefilter("ignore", RuntimeWarning)
        return {k: v.astype(np_dtype(dtype)).astype(np.float32) for k, v in arrays.items()}


def pb_bytes(op: str, arrays: dict[str, Any], labels: Any = LABELS) -> bytes:
    """The serialized Summary of ``op``'s ``*_pb`` encoder on these arguments."""
    if op == "scalar":
        summary = sl.scalar_pb("x", arrays["data"])
    elif op == "histogram":
        summary = sl.histogram_pb("x", arrays["data"])
    elif op == "image":
        summary = sl.image_pb("x", arrays["data"])
    elif op == "audio":
        summary = sl.audio_pb("x", arrays["data"], RATE)
    elif op == "pr_curve":
        summary = sl.pr_curve_pb("x", labels, num_thresholds=33, **arrays)
    else:
        summary = sl.pr_curve_raw_pb("x", **arrays)
    return summary.SerializeToString()  # type: ignore[no-any-return]


def write_every_op(arrays_of: Callable[[str], dict[str, Any]], labels: Any) -> None:
    """Each op once at step 1 through the default writer."""
    sl.scalar("scalar", arrays_of("scalar")["data"], step=1)
    sl.histogram("histogram", arrays_of("histogram")["data"], step=1)
    sl.image("image", arrays_of("image")["data"], step=1)
    sl.audio("audio", arrays_of("audio")["data"], RATE, step=1)
    sl.pr_curve("pr_curve", labels, num_thresholds=33, step=1, **arrays_of("pr_curve"))
    sl.pr_curve_raw("pr_curve_raw", step=1, **arrays_of("pr_curve_raw"))


def summaries(logdir: Path) -> list[bytes]:
    return [e.summary.SerializeToString() for e in tb_events(only_file(logdir))[1:]]




# ---------------------------------------------------------------------------
# Framework tensors
# ---------------------------------------------------------------------------
def torch_tensor(a: np.ndarray, dtype: str, grad: bool = False) -> Any:
    torch = pytest.importorskip("torch")
    t = torch.from_numpy(np.array(a, np.float32)).to(getattr(torch, dtype))
    if grad:
        t = t.requires_grad_(True)
        if t.dtype.itemsize > 1:  # torch has no float8 arithmetic: those stay leaves
            t = t * 1  # a non-leaf result of autograd, as a model's output is
    return t


def jax_array(a: np.ndarray, dtype: str) -> Any:
    jnp = pytest.importorskip("jax.numpy")
    return jnp.asarray(a, dtype=getattr(jnp, dtype))


FRAMEWORKS: dict[str, Callable[[np.ndarray, str], Any]] = {
    "torch": torch_tensor,
    "torch_requires_grad": lambda a, d: torch_tensor(a, d, grad=True),
    "jax": jax_array,
    "numpy": lambda a, d: a.astype(np_dtype(d)),  # ml_dtypes arrays, as JAX/TF hand them out
}


@pytest.mark.parametrize("framework", list(FRAMEWORKS))
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", OPS)
def test_each_op_gives_the_bytes_of_the_equivalent_numpy_input(
    op: str, dtype: str, framework: str
) -> None:
    values = rounded(base_data(op), dtype)
    make = FRAMEWORKS[framework]
    tensors = {k: make(v, dtype) for k, v in values.items()}
    labels: Any = LABELS
    if framework.startswith("torch"):
        labels = pytest.importorskip("torch").from_numpy(LABELS)
    elif framework == "jax":
        labels = jax_array(LABELS, "bool_")
    with torch_warns_always() if framework.startswith("torch") else nullcontext():
        got = pb_bytes(op, tensors, labels)
    ref = {k: v.astype(ref_dtype(op, dtype)) for k, v in values.items()}
    assert got == pb_bytes(op, ref)


@pytest.mark.parametrize("framework", list(FRAMEWORKS))
@pytest.mark.parametrize("dtype", LOW_FLOATS)
def test_low_float_zero_one_labels_count_as_bool(framework: str, dtype: str) -> None:
    # Labels often come out of a model in its own dtype: 0.0/1.0 in bfloat16 or float8.
    predictions = np.linspace(0, 1, LABELS.size, dtype=np.float32)
    labels = FRAMEWORKS[framework](LABELS.astype(np.float32), dtype)
    with torch_warns_always() if framework.startswith("torch") else nullcontext():
        got = sl.pr_curve_pb("x", labels, predictions, num_thresholds=33)
    assert got.SerializeToString() == sl.pr_curve_pb(
        "x", LABELS, predictions, num_thresholds=33
    ).SerializeToString()


def test_float16_is_computed_in_float16_for_image_and_pr_curve() -> None:
    # Why image and pr_curve compare with numpy float16 above: TensorFlow computes
    # x * 255.5 and p * (T - 1) in the input's float type, and so do we.
    x = np.float16(0.00391387939453125)  # * 255.5 = 0.99999...: 0 in float32, 1.0 in float16
    x32 = np.full((1, 1, 1, 1), x, np.float32)
    f32 = sl.image_pb("x", x32).value[0].tensor.string_val[2]
    f16 = sl.image_pb("x", x32.astype(np.float16)).value[0].tensor.string_val[2]
    assert np.asarray(Image.open(io.BytesIO(f32))).item() == 0
    assert np.asarray(Image.open(io.BytesIO(f16))).item() == 1
    p = np.full(1, np.float16(0.0149993896484375), np.float32)  # * 200: bucket 2 (f32), 3 (f16)
    tp32 = sl.pr_curve_pb("x", [True], p).value[0].tensor.tensor_content
    tp16 = sl.pr_curve_pb("x", [True], p.astype(np.float16)).value[0].tensor.tensor_content
    assert np.frombuffer(tp32, "<f4")[:4].tolist() == [1, 1, 1, 0]
    assert np.frombuffer(tp16, "<f4")[:4].tolist() == [1, 1, 1, 1]


def test_bfloat16_image_pixels_are_float32s_from_every_framework() -> None:
    # 0.5 * 255.5 = 127.75 -> 127. TensorFlow would multiply by bfloat16(255.5) = 256 and
    # give 128; torch hands bfloat16 over only as float32, so all frameworks give 127.
    x = np.full((1, 1, 1, 1), 0.5, np.float32)
    expected = sl.image_pb("x", x).SerializeToString()
    assert sl.image_pb("x", x.astype(ml_dtypes.bfloat16)).SerializeToString() == expected
    assert sl.image_pb("x", jax_array(x, "bfloat16")).SerializeToString() == expected
    assert sl.image_pb("x", torch_tensor(x, "bfloat16")).SerializeToString() == expected


def test_float8_e5m2_pr_curve_is_not_computed_in_float8() -> None:
    # numpy calls float8_e5m2 kind "f", so it used to reach the float arithmetic as is:
    # 1.0 * 200 rounds to 192 in float8_e5m2 and the prediction landed in bucket 192.
    p = np.ones(1, ml_dtypes.float8_e5m2)
    tp = np.frombuffer(sl.pr_curve_pb("x", [True], p).value[0].tensor.tensor_content, "<f4")[:201]
    assert tp[200] == 1.0 and tp[193] == 1.0


@pytest.mark.filterwarnings("ignore:.*float pixel values are read as 0..1")  # data 0..40
@pytest.mark.parametrize("framework", ["torch_requires_grad", "jax"])
@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
def test_every_op_through_a_writer_matches_numpy_float32(
    tmp_path: Path, framework: str, dtype: str
) -> None:
    make = FRAMEWORKS[framework]

    def tensors(op: str) -> dict[str, Any]:
        return {k: make(v, dtype) for k, v in rounded(base_data(op), dtype).items()}

    def float32s(op: str) -> dict[str, Any]:
        return rounded(base_data(op), dtype)

    with torch_warns_always() if framework.startswith("torch") else nullcontext():
        with sl.create_file_writer(tmp_path / "tensor").as_default() as w:
            write_every_op(tensors, LABELS)
        w.close()
    with sl.create_file_writer(tmp_path / "numpy").as_default() as w:
        write_every_op(float32s, LABELS)
    w.close()
    got = summaries(tmp_path / "tensor")
    assert len(got) == 6
    assert got == summaries(tmp_path / "numpy")


# ---------------------------------------------------------------------------
# Property: every ml_dtypes float array encodes as its float32 values
# ---------------------------------------------------------------------------
@st.composite
def low_float_arrays(draw: st.DrawFn, shape: tuple[int, ...]) -> np.ndarray:
    dtype = np_dtype(draw(st.sampled_from(LOW_FLOATS)))
    bits = draw(hnp.arrays(np.uint8, (*shape, dtype.itemsize)))
    return bits.view(dtype).reshape(shape)  # every bit pattern: NaN, inf, subnormals


# Every bit pattern: the conversion is under test, not the warning about floats above 1.
@pytest.mark.filterwarnings("ignore:.*float pixel values are read as 0..1")
@settings(max_examples=150)
@given(data=st.data(), op=st.sampled_from(["histogram", "image", "audio"]))
def test_low_float_arrays_encode_as_their_float32_values(data: st.DataObject, op: str) -> None:
    shape = {"histogram": (9,), "image": (2, 3, 2, 4), "audio": (2, 7, 1)}[op]
    arr = data.draw(low_float_arrays(shape))
    with np.errstate(invalid="ignore"):
        assert pb_bytes(op, {"data": arr}) == pb_bytes(op, {"data": arr.astype(np.float32)})


@settings(max_examples=150)
@given(pred=low_float_arrays((12,)), weights=low_float_arrays((12,)),
       labels=hnp.arrays(np.bool_, (12,)))
def test_low_float_pr_curves_equal_float32_ones(
    pred: np.ndarray, weights: np.ndarray, labels: np.ndarray
) -> None:
    arrays = {"predictions": pred, "weights": weights}
    f32 = {k: v.astype(np.float32) for k, v in arrays.items()}
    with np.errstate(invalid="ignore", over="ignore"):
        assert pb_bytes("pr_curve", arrays, labels) == pb_bytes("pr_curve", f32, labels)


@settings(max_examples=300)
@given(x=low_float_arrays(()))
def test_low_float_scalars_are_their_float32_values(x: np.ndarray) -> None:
    expected = float(x.astype(np.float32))
    for value in (x, x[()]):  # a 0-d array and the ml_dtypes scalar
        got = scalar_float(value, "scalar")
        assert got == expected or (got != got and expected != expected)


def test_sub_byte_integers_and_complex_stay_refused() -> None:
    for dtype in (ml_dtypes.int4, ml_dtypes.uint2):
        assert not is_extended_float(np.dtype(dtype))
        with pytest.raises(TypeError, match=r"histogram_pb: 'data' must hold real numbers"):
            sl.histogram_pb("x", np.zeros(3, dtype))
    with pytest.raises(TypeError, match=r"audio_pb: 'data' must hold real numbers"):
        sl.audio_pb("x", np.zeros((1, 3), np.complex64), RATE)


# ---------------------------------------------------------------------------
# Conversion paths, without frameworks
# ---------------------------------------------------------------------------
class FakeBf16Tensor:
    """Like a torch bfloat16 tensor: __array__ and numpy() refuse, .float() works."""

    shape = (3,)
    dtype = "fake.bfloat16"

    def __init__(self, grad: bool = False) -> None:
        self.calls: list[str] = []
        self.grad = grad

    def __array__(self, dtype: object = None, copy: object = None) -> np.ndarray:
        raise TypeError("Got unsupported ScalarType BFloat16")

    def is_floating_point(self) -> bool:
        return True

    def detach(self) -> FakeBf16Tensor:
        self.calls.append("detach")
        return self

    def cpu(self) -> FakeBf16Tensor:
        self.calls.append("cpu")
        return self

    def numpy(self) -> np.ndarray:
        if "float" not in self.calls:
            raise TypeError("Got unsupported ScalarType BFloat16")
        return np.array([0.5, 1.0, 2.0], np.float32)

    def float(self) -> FakeBf16Tensor:
        self.calls.append("float")
        return self


def test_float_fallback_runs_only_after_the_plain_paths_failed() -> None:
    t = FakeBf16Tensor()
    np.testing.assert_array_equal(as_array(t, "f"), [0.5, 1.0, 2.0])
    # detach().cpu().numpy() and cpu().numpy() were tried (and refused) first.
    assert t.calls == ["detach", "cpu", "cpu", "detach", "cpu", "float"]


def test_float_fallback_is_only_for_floating_dtypes() -> None:
    t = FakeBf16Tensor()
    t.is_floating_point = lambda: False  # type: ignore[method-assign]
    with pytest.raises(TypeError, match=r"^f: cannot convert 'data' \(FakeBf16Tensor of dtype "
                       r"fake\.bfloat16 and shape \(3,\)\) to an array: Got unsupported"):
        as_array(t, "f")
    assert "float" not in t.calls


def test_non_float_dtypes_numpy_lacks_raise_naming_op_argument_dtype_and_shape(
    logdir: Path,
) -> None:
    torch = pytest.importorskip("torch")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "ComplexHalf support is experimental"
        c32 = torch.zeros((2, 3), dtype=torch.complex32)
    with sl.create_file_writer(logdir).as_default(step=0) as w:
        assert sl.scalar("before", 1.0)
        with pytest.raises(TypeError, match=r"^histogram: cannot convert 'data' \(Tensor of "
                           r"dtype torch\.complex32 and shape \(2, 3\)\)"):
            sl.histogram("h", c32)
        with pytest.raises(TypeError, match=r"^pr_curve: cannot convert 'predictions'"):
            sl.pr_curve("p", np.zeros((2, 3), bool), c32)
        with pytest.raises(TypeError, match=r"^audio: cannot convert 'data'"):
            sl.audio("a", c32, RATE)
    w.close()
    events = tb_events(only_file(logdir))
    assert [v.tag for e in events for v in e.summary.value] == ["before"]


# ---------------------------------------------------------------------------
# Rank-0 values
# ---------------------------------------------------------------------------
def test_scalar_of_jax_and_ml_dtypes_zero_d_values() -> None:
    jnp = pytest.importorskip("jax.numpy")
    assert scalar_float(jnp.asarray(0.3125, dtype=jnp.bfloat16), "scalar") == 0.3125
    assert scalar_float(jnp.asarray(0.25), "scalar") == 0.25
    assert scalar_float(np.array(0.3125, ml_dtypes.bfloat16), "scalar") == 0.3125
    assert scalar_float(ml_dtypes.float8_e4m3fn(0.5), "scalar") == 0.5
    with pytest.raises(ValueError, match=r"^scalar: 'data' must be a scalar \(rank 0\), got "
                       r"shape \(1,\)"):
        scalar_float(jnp.zeros(1, jnp.bfloat16), "scalar")
