"""image / image_pb: TF pixel conversion, PNG round trips, what TensorBoard serves, bad input."""

# mypy: disable-error-code="import-untyped"
from __future__ import annotations

import io
import math
import warnings
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from PIL import Image

import summarylib as sl
from summarylib.encoding._events import summary_event
from summarylib.ops import image as image_mod
from tests.helpers import only_file, record_payloads, tb_events
from tests.tbserver import TensorBoardServer

INT_DTYPES = ["uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64"]
FLOAT_DTYPES = ["float16", "float32", "float64"]
ALL_DTYPES = [*INT_DTYPES, *FLOAT_DTYPES, "bool"]
FORMATS = ["NHWC", "NCHW", "HWC", "CHW", "HW"]
MODES = {1: "L", 2: "LA", 3: "RGB", 4: "RGBA"}


# ---------------------------------------------------------------------------
# An independent reference: TensorFlow's convert_image_dtype(saturate=True),
# one Python number at a time.
# ---------------------------------------------------------------------------
def ref_pixel(v: Any, dtype: np.dtype) -> int:
    if dtype == np.uint8:
        return int(v)
    if dtype.kind == "b":
        return 255 if v else 0
    if dtype.kind in "iu":
        top = int(np.iinfo(dtype).max)
        if top > 255:
            return min(max(int(v) // ((top + 1) // 256), 0), 255)
        return max(int(v), 0) * (256 // (top + 1))
    # x * 255.5 rounded to the input's float type: the float64 product is
    # exact for float16/float32 inputs, so rounding it once is TF's product.
    with np.errstate(over="ignore"):
        prod = float(dtype.type(float(v) * 255.5))
    if math.isnan(prod):
        return 0
    return int(min(max(prod, 0.0), 255.0))


def ref_uint8(nhwc: np.ndarray) -> np.ndarray:
    flat = [ref_pixel(v, nhwc.dtype) for v in nhwc.reshape(-1).tolist()]
    return np.array(flat, dtype=np.uint8).reshape(nhwc.shape)


def from_nhwc(nhwc: np.ndarray, fmt: str) -> np.ndarray:
    """Lay out an NHWC batch (k == 1 for single-image formats) as ``fmt``."""
    out: np.ndarray = nhwc
    if fmt == "NCHW":
        out = nhwc.transpose(0, 3, 1, 2)
    elif fmt == "HWC":
        out = nhwc[0]
    elif fmt == "CHW":
        out = nhwc[0].transpose(2, 0, 1)
    elif fmt == "HW":
        out = nhwc[0, :, :, 0]
    return out


def decode_png(blob: bytes, channels: int) -> np.ndarray:
    im = Image.open(io.BytesIO(blob))
    assert im.format == "PNG"
    assert im.mode == MODES[channels]
    arr = np.asarray(im)
    return arr.reshape(arr.shape[0], arr.shape[1], channels)


def tb_metadata(description: str | None) -> bytes:
    from tensorboard.plugins.image import metadata

    return metadata.create_summary_metadata(  # type: ignore[no-any-return]
        display_name=None, description=description
    ).SerializeToString()


def check_value(value: Any, nhwc: np.ndarray, max_outputs: int) -> None:
    """A TensorBoard ``Summary.Value`` holds the first images of ``nhwc``, converted."""
    from tensorboard.util import tensor_util

    _, h, w, c = nhwc.shape
    kept = nhwc[:max_outputs]
    t = value.tensor
    assert t.dtype == 7  # DT_STRING
    assert [d.size for d in t.tensor_shape.dim] == [2 + len(kept)]
    assert not t.tensor_content
    blobs = list(tensor_util.make_ndarray(t))
    assert blobs[:2] == [str(w).encode(), str(h).encode()]
    expected = ref_uint8(kept)
    for i, blob in enumerate(blobs[2:]):
        np.testing.assert_array_equal(decode_png(blob, c), expected[i])


def memory_writer(
    clock: Callable[[], float] | None = None,
) -> tuple[sl.SummaryWriter, sl.MemoryOutput]:
    out = sl.MemoryOutput()
    return sl.create_writer(out, clock=clock), out


def payloads(data: bytes) -> list[bytes]:
    return record_payloads(data)


def tb_values(data: bytes) -> list[Any]:
    """(step, Summary.Value) of every summary event, parsed with TensorBoard's protos."""
    from tensorboard.compat.proto import event_pb2

    out: list[Any] = []
    for p in payloads(data)[1:]:
        ev = event_pb2.Event.FromString(p)
        out.extend((ev.step, v) for v in ev.summary.value)
    return out


# ---------------------------------------------------------------------------
# Strategies
# ---------------------------------------------------------------------------
def elements(dtype: str) -> st.SearchStrategy[Any]:
    if dtype in FLOAT_DTYPES:
        width: Literal[16, 32, 64] = 16 if dtype == "float16" else 32 if dtype == "float32" else 64
        # mostly the nominal range, plus anything a float can hold
        return st.one_of(
            st.floats(0, 1, width=width),
            st.floats(width=width, allow_nan=True, allow_infinity=True),
        )
    return hnp.from_dtype(np.dtype(dtype))


@st.composite
def image_batches(draw: st.DrawFn) -> tuple[np.ndarray, str]:
    """An NHWC batch and a dataformats string to present it in."""
    fmt = draw(st.sampled_from(FORMATS))
    dtype = draw(st.sampled_from(ALL_DTYPES))
    k = draw(st.integers(0, 4)) if fmt in ("NHWC", "NCHW") else 1
    c = draw(st.integers(1, 4)) if fmt != "HW" else 1
    shape = (k, draw(st.integers(1, 5)), draw(st.integers(1, 5)), c)
    nhwc = draw(hnp.arrays(np.dtype(dtype), shape, elements=elements(dtype)))
    return nhwc, fmt


# ---------------------------------------------------------------------------
# Encoders against TensorBoard and the reference conversion
# ---------------------------------------------------------------------------
# Any float values: the conversion is under test, not the warning about values above 1.
FLOAT_RANGE_WARNING = "ignore:.*float pixel values are read as 0..1"


@pytest.mark.filterwarnings(FLOAT_RANGE_WARNING)
@settings(max_examples=60)
@given(
    batch=image_batches(),
    max_outputs=st.integers(0, 5),
    description=st.one_of(st.none(), st.text(max_size=10)),
)
def test_image_pb_matches_tensorboard_and_tf_conversion(
    batch: tuple[np.ndarray, str], max_outputs: int, description: str | None
) -> None:
    from tensorboard.compat.proto import summary_pb2

    nhwc, fmt = batch
    pb = sl.image_pb("img", from_nhwc(nhwc, fmt), max_outputs, description, dataformats=fmt)
    theirs = summary_pb2.Summary.FromString(pb.SerializeToString())
    (value,) = theirs.value
    assert value.tag == "img"
    assert value.metadata.SerializeToString() == tb_metadata(description)
    check_value(value, nhwc, max_outputs)


@pytest.mark.filterwarnings(FLOAT_RANGE_WARNING)
@settings(max_examples=30)
@given(batch=image_batches(), max_outputs=st.integers(0, 5), step=st.integers(0, 2**63 - 1))
def test_op_bytes_equal_image_pb_serialization(
    batch: tuple[np.ndarray, str], max_outputs: int, step: int
) -> None:
    # Two encoders, one truth: the deferred, hand-encoded events equal the
    # protobuf serialization of image_pb (metadata on the first event only).
    nhwc, fmt = batch
    data = from_nhwc(nhwc, fmt)
    fixed = 1712345678.25
    w, out = memory_writer(clock=lambda: fixed)
    with w.as_default(step=step):
        assert sl.image("a/b", data, max_outputs=max_outputs, dataformats=fmt)
        assert sl.image("a/b", data, max_outputs=max_outputs, dataformats=fmt)
    w.close()
    first, second = payloads(out.getvalue())[1:]
    pb = sl.image_pb("a/b", data, max_outputs, dataformats=fmt)
    assert first == summary_event(fixed, step, pb.SerializeToString())
    pb.value[0].ClearField("metadata")
    assert second == summary_event(fixed, step, pb.SerializeToString())


def test_metadata_bytes_equal_protobuf_and_tensorboard() -> None:
    from summarylib.ops._media import metadata_bytes

    for desc in (None, "", "some **markdown** ✓"):
        ours = metadata_bytes(image_mod._PLUGIN_DATA, desc, "image")
        assert ours == image_mod.create_summary_metadata(desc).SerializeToString()
        assert ours == tb_metadata(desc)
    assert image_mod._PLUGIN_DATA == b"\x0a\x08\x0a\x06images"


# ---------------------------------------------------------------------------
# The PNG encoder
# ---------------------------------------------------------------------------
def pillow_save(image: np.ndarray) -> bytes:
    from summarylib.encoding._png import COMPRESS_LEVEL

    mode = MODES[image.shape[2]]
    buf = io.BytesIO()
    Image.frombuffer(mode, image.shape[1::-1], image, "raw", mode, 0, 1).save(
        buf, "PNG", compress_level=COMPRESS_LEVEL
    )
    return buf.getvalue()


@settings(max_examples=40)
@given(
    hnp.arrays(
        np.uint8,
        st.tuples(st.integers(1, 40), st.integers(1, 40), st.integers(1, 4)),
        elements=st.integers(0, 255),
    )
)
def test_small_pngs_decode_to_their_pixels(image: np.ndarray) -> None:
    # Small images are filtered by our own code (None/Sub/Up per row): Pillow decodes them
    # to the same pixels, in the mode TensorBoard gets.
    from summarylib.encoding._png import encode_png

    blob = encode_png(image)
    np.testing.assert_array_equal(decode_png(blob, image.shape[2]), image)
    raw = zlib.decompress(blob[blob.index(b"IDAT") + 4 :])
    h, w, c = image.shape
    filters = raw[:: w * c + 1][:h]
    assert len(raw) == h * (w * c + 1) and set(filters) <= {0, 1, 2}


@settings(max_examples=10)
@given(
    hnp.arrays(
        np.uint8,
        st.tuples(st.integers(150, 200), st.integers(150, 200), st.integers(3, 4)),
        elements=st.integers(0, 255),
    )
)
def test_large_png_bytes_equal_pillows_own_png_writer(image: np.ndarray) -> None:
    from summarylib.encoding._png import SMALL_IMAGE_BYTES, encode_png

    assert image.nbytes > SMALL_IMAGE_BYTES
    blob = encode_png(image)
    assert blob == pillow_save(image)
    np.testing.assert_array_equal(decode_png(blob, image.shape[2]), image)


def test_small_png_filters_are_chosen_per_row() -> None:
    from summarylib.encoding._png import encode_png

    # Small steps along a row and large ones between rows: Sub wins; the other way: Up.
    y, x = np.mgrid[0:30, 0:40]
    across = np.repeat(((37 * y + 5 * x) % 256).astype(np.uint8)[:, :, None], 3, axis=2)
    down = np.repeat(((5 * y + 37 * x) % 256).astype(np.uint8)[:, :, None], 3, axis=2)
    for image, best in ((across, 1), (down, 2)):
        blob = encode_png(image)
        raw = zlib.decompress(blob[blob.index(b"IDAT") + 4 :])
        h, w, c = image.shape
        assert set(raw[:: w * c + 1][1:h]) == {best}
        np.testing.assert_array_equal(decode_png(blob, 3), image)


def test_large_png_decodes_and_fallback_path(monkeypatch: pytest.MonkeyPatch) -> None:
    from summarylib.encoding import _png as png

    rng = np.random.default_rng(11)
    big = rng.integers(0, 256, (200, 150, 4), dtype=np.uint8)  # > 64 KiB of IDAT
    blob = png.encode_png(big)
    assert blob.count(b"IDAT") == 1 and len(blob) > 65536
    np.testing.assert_array_equal(decode_png(blob, 4), big)
    # A Pillow whose codec refuses the arguments: Image.save takes over.
    monkeypatch.setattr(png, "_fast", True)
    monkeypatch.setattr(Image.Image, "tobytes", lambda *a, **k: (_ for _ in ()).throw(TypeError))
    monkeypatch.setattr(png, "SMALL_IMAGE_BYTES", 0)  # every image through Pillow
    small = big[:5, :7, :3].copy()
    assert png.encode_png(small) == pillow_save(small)
    assert png._fast is False
    assert png.encode_png(big[:3, :3, :1].copy()) == pillow_save(big[:3, :3, :1].copy())


# ---------------------------------------------------------------------------
# Conversion edge cases, spelled out
# ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("values", "dtype", "expected"),
    [
        ([0.0, 0.5, 1.0, 0.999, 1.5, -0.5], "float32", [0, 127, 255, 255, 255, 0]),
        ([math.nan, math.inf, -math.inf, 1e30, -1e30, 1e-30], "float32", [0, 255, 0, 255, 0, 0]),
        ([math.nan, math.inf, 1e300, 0.25], "float64", [0, 255, 255, 63]),
        ([60000.0, 0.5, 1.0], "float16", [255, 127, 255]),
        ([0, 255, 65535, 256], "uint16", [0, 0, 255, 1]),
        ([-32768, -1, 0, 127, 128, 32767], "int16", [0, 0, 0, 0, 1, 255]),
        ([-(2**31), 2**31 - 1, 2**23], "int32", [0, 255, 1]),
        ([2**32 - 1, 2**24 - 1, 2**24], "uint32", [255, 0, 1]),
        ([-(2**63), 2**63 - 1, 2**55], "int64", [0, 255, 1]),
        ([2**64 - 1, 2**56], "uint64", [255, 1]),
        ([-128, -1, 0, 1, 127], "int8", [0, 0, 0, 2, 254]),
        ([0, 1, 128, 255], "uint8", [0, 1, 128, 255]),
        ([False, True], "bool", [0, 255]),
    ],
)
def test_conversion_table(values: list[Any], dtype: str, expected: list[int]) -> None:
    from summarylib.encoding._pixels import to_uint8

    arr = np.array(values, dtype=dtype).reshape(1, 1, -1, 1)
    got = to_uint8(arr)
    assert got.dtype == np.uint8
    assert got.reshape(-1).tolist() == expected
    assert ref_uint8(arr).reshape(-1).tolist() == expected  # the reference agrees


def test_bfloat16_multiplies_by_256_as_tensorflow_does() -> None:
    # 255.5 rounds to 256 in bfloat16, so TF's product is x * 256.
    ml_dtypes = pytest.importorskip("ml_dtypes")
    from summarylib.encoding._pixels import to_uint8

    values = [0.0, 0.5, 0.99609375, 1.0, -1.0, math.nan, math.inf]
    arr = np.array(values, dtype=ml_dtypes.bfloat16).reshape(1, 1, -1, 1)
    assert to_uint8(arr).reshape(-1).tolist() == [0, 128, 255, 255, 0, 0, 255]


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("fmt", FORMATS)
def test_every_dtype_and_dataformat_round_trips_through_the_file(
    logdir: Path, dtype: str, fmt: str
) -> None:
    rng = np.random.default_rng(7)
    k = 2 if fmt in ("NHWC", "NCHW") else 1
    c = 1 if fmt == "HW" else 3
    dt = np.dtype(dtype)
    if dt.kind == "f":
        nhwc = rng.random((k, 4, 5, c)).astype(dt)
    elif dt.kind == "b":
        nhwc = rng.random((k, 4, 5, c)) > 0.5
    else:
        info = np.iinfo(dt)
        nhwc = rng.integers(info.min, info.max, (k, 4, 5, c), dtype=dt, endpoint=True)
    with sl.create_file_writer(logdir).as_default(step=3) as w:
        assert sl.image("img", from_nhwc(nhwc, fmt), dataformats=fmt.lower())
    w.close()
    values = [v for e in tb_events(only_file(logdir)) for v in e.summary.value]
    (value,) = values
    check_value(value, nhwc, 3)


def test_edge_batches(logdir: Path) -> None:
    with sl.create_file_writer(logdir).as_default() as w:
        sl.image("empty", np.zeros((0, 7, 5, 3), np.uint8), step=0)  # no images: [w, h]
        sl.image("pixel", np.array([[[[0.25]]]]), step=0)  # 1x1 grayscale
        sl.image("none_kept", np.ones((2, 3, 3, 4)), step=0, max_outputs=0)
        many = np.arange(6 * 2 * 2 * 3, dtype=np.uint8).reshape(6, 2, 2, 3)
        sl.image("many", many, step=0, max_outputs=4)
        sl.image("constant", np.full((2, 9, 9, 2), 0.5, np.float32), step=0)
        sl.image("tall", np.zeros((1, 300, 1, 1), np.uint8), step=0)
    w.close()
    got = {v.tag: v for e in tb_events(only_file(logdir)) for v in e.summary.value}
    check_value(got["empty"], np.zeros((0, 7, 5, 3), np.uint8), 3)
    assert len(got["empty"].tensor.string_val) == 2
    check_value(got["pixel"], np.array([[[[0.25]]]]), 3)
    check_value(got["none_kept"], np.ones((2, 3, 3, 4)), 0)
    assert list(got["none_kept"].tensor.string_val) == [b"3", b"3"]
    check_value(got["many"], many, 4)
    assert len(got["many"].tensor.string_val) == 6
    check_value(got["constant"], np.full((2, 9, 9, 2), 0.5, np.float32), 3)
    assert list(got["tall"].tensor.string_val[:2]) == [b"1", b"300"]  # width first


def test_framework_tensor_lazy_callable_and_nested_lists(logdir: Path) -> None:
    class FakeTensor:  # like a torch CHW tensor: __array__ only, never imported
        shape = (3, 2, 2)

        def __array__(self, dtype: object = None, copy: object = None) -> np.ndarray:
            return np.linspace(0, 1, 12, dtype=np.float32).reshape(3, 2, 2)

    calls = []

    def lazy() -> np.ndarray:
        calls.append(1)
        return np.full((1, 2, 2, 1), 200, np.uint8)

    with sl.create_file_writer(logdir).as_default(step=1) as w:
        assert sl.image("torch", FakeTensor(), dataformats="CHW")
        assert sl.image("lazy", lazy)
        assert sl.image("lists", [[[0, 255], [255, 0]]], dataformats="HWC")  # 2x2, c=2
    w.close()
    assert calls == [1]
    got = {v.tag: v for e in tb_events(only_file(logdir)) for v in e.summary.value}
    chw = np.asarray(FakeTensor())
    check_value(got["torch"], chw.transpose(1, 2, 0)[None], 3)
    check_value(got["lazy"], np.full((1, 2, 2, 1), 200, np.uint8), 3)
    check_value(got["lists"], np.array([[[[0, 255], [255, 0]]]]), 3)


def test_caller_may_reuse_its_buffer_at_once() -> None:
    # Encoding happens later on the writer thread; it must see the values as
    # they were at the call.
    buf = np.zeros((2, 8, 8, 3), np.uint8)
    w, out = memory_writer()
    with w.as_default():
        for step in range(20):
            buf[:] = step
            sl.image("img", buf, step=step, max_outputs=1)
        buf[:] = 255
    w.close()
    values = tb_values(out.getvalue())
    assert [s for s, _ in values] == list(range(20))
    for step, v in values:
        check_value(v, np.full((1, 8, 8, 3), step, np.uint8), 1)


def test_metadata_and_description_on_first_event_only(logdir: Path) -> None:
    with sl.create_file_writer(logdir).as_default() as w, sl.name_scope("val"):
        for step in range(3):
            sl.image("img", np.zeros((1, 2, 2, 3)), step=step, description="the images")
    w.close()
    # Raw events (TensorBoard's loader would fill in data_class).
    values = [v for _, v in tb_values(only_file(logdir).read_bytes())]
    assert [v.tag for v in values] == ["val/img"] * 3
    assert [v.HasField("metadata") for v in values] == [True, False, False]
    assert values[0].metadata.SerializeToString() == tb_metadata("the images")
    assert values[0].metadata.data_class == 0


# ---------------------------------------------------------------------------
# Nothing recorded, nothing computed
# ---------------------------------------------------------------------------
class Untouchable:
    """Data that fails the test if anyone looks at it."""

    shape = (1, 2, 2, 3)

    def __array__(self, dtype: object = None, copy: object = None) -> np.ndarray:
        raise AssertionError("data was converted although nothing records")


def test_no_work_without_writer_or_when_not_recording(logdir: Path) -> None:
    def lazy() -> np.ndarray:
        raise AssertionError("lazy data was evaluated although nothing records")

    assert sl.image("x", Untouchable(), step=0) is False
    assert sl.image("x", lazy, step=0, dataformats="bogus") is False
    with sl.create_noop_writer().as_default():
        assert sl.image("x", Untouchable(), step=0) is False
    with sl.create_file_writer(logdir).as_default(step=0) as w:
        with sl.record_if(False):
            assert sl.image("x", Untouchable()) is False
            assert sl.image("x", lazy, max_outputs=-1) is False
        with sl.record_if(lambda: False):
            assert sl.image("x", Untouchable()) is False
    w.close()
    assert not [e for e in tb_events(only_file(logdir)) if e.HasField("summary")]


# ---------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------
BAD_INPUTS = [
    (
        {"data": np.zeros((3, 32))},
        ValueError,
        r"\[k, h, w, c\] with c in \(1, 2, 3, 4\), got \(3, 32\)",
    ),
    ({"data": np.zeros((1, 4, 4, 5))}, ValueError, r"c in \(1, 2, 3, 4\), got \(1, 4, 4, 5\)"),
    ({"data": np.zeros((1, 4, 4, 0))}, ValueError, r"got \(1, 4, 4, 0\)"),
    ({"data": np.zeros((1, 1, 4, 4, 3))}, ValueError, r"got \(1, 1, 4, 4, 3\)"),
    ({"data": np.zeros((4, 4, 3))}, ValueError,
     r"'data' with dataformats='NHWC' must have shape \[k, h, w, c\].*"
     r"pass dataformats='HWC' if that is its layout"),
    ({"data": np.zeros((1, 0, 4, 3))}, ValueError, r"at least 1x1.*\(1, 0, 4, 3\)"),
    (
        {"data": np.zeros((5, 4, 3)), "dataformats": "CHW"},
        ValueError,
        r"dataformats='CHW' must have shape \[c, h, w\].*got \(5, 4, 3\)",
    ),
    (
        {"data": np.zeros((1, 5, 4, 3)), "dataformats": "NCHW"},
        ValueError,
        r"dataformats='NCHW'.*\[k, c, h, w\].*got \(1, 5, 4, 3\)",
    ),
    (
        {"data": np.zeros((4, 4, 1)), "dataformats": "HW"},
        ValueError,
        r"dataformats='HW' must have shape \[h, w\], got \(4, 4, 1\)",
    ),
    ({"dataformats": "NHW"}, ValueError, r"'dataformats' must be one of .*'NHW'"),
    ({"dataformats": 4}, TypeError, r"'dataformats' must be a str, got int"),
    ({"data": np.array([[[["a"]]]])}, TypeError, r"'data' must hold real numbers.*<U1"),
    ({"data": np.zeros((1, 2, 2, 3), np.complex64)}, TypeError, r"'data'.*complex64"),
    ({"data": [[[[object()]]]]}, TypeError, r"'data'.*object"),
    ({"data": "image.png"}, TypeError, r"'data'"),
    ({"data": None}, TypeError, r"'data'"),
    ({"data": [[[[1, 2]], [[1]]]]}, TypeError, r"'data'"),  # ragged
    ({"max_outputs": -1}, ValueError, r"'max_outputs' must be >= 0, got -1"),
    ({"max_outputs": 2.0}, TypeError, r"'max_outputs' must be an int, got float"),
    ({"max_outputs": True}, TypeError, r"'max_outputs' must be an int, got bool"),
    ({"max_outputs": "3"}, TypeError, r"'max_outputs'"),
    ({"description": 3}, TypeError, r"'description' must be a str"),
    ({"name": ""}, ValueError, r"'name'"),
    ({"name": 5}, TypeError, r"'name'"),
    ({"step": 1.5}, TypeError, r"'step'"),
]


@pytest.mark.parametrize(("override", "exc", "pattern"), BAD_INPUTS)
def test_bad_input_raises_writes_nothing_and_keeps_earlier_data(
    logdir: Path, override: dict[str, Any], exc: type[Exception], pattern: str
) -> None:
    good = np.full((1, 2, 2, 3), 0.5)
    args: dict[str, Any] = {"name": "x", "data": good, "step": 2, **override}
    with sl.create_file_writer(logdir).as_default() as w:
        assert sl.image("x", good, step=1)
        with pytest.raises(exc, match=pattern) as info:
            sl.image(**args)
        assert str(info.value).startswith("image: ")
    w.close()
    values = [(e.step, v) for e in tb_events(only_file(logdir)) for v in e.summary.value]
    assert [s for s, _ in values] == [1]
    check_value(values[0][1], good, 3)


@pytest.mark.parametrize(("override", "exc", "pattern"), BAD_INPUTS[:-3])
def test_image_pb_rejects_the_same_input(
    override: dict[str, Any], exc: type[Exception], pattern: str
) -> None:
    args: dict[str, Any] = {"data": np.zeros((1, 2, 2, 3)), **override}
    with pytest.raises(exc, match=pattern) as info:
        sl.image_pb("x", **args)
    assert str(info.value).startswith("image_pb: ")


def test_image_pb_rejects_a_bad_tag() -> None:
    with pytest.raises(TypeError, match="image_pb: 'tag'"):
        sl.image_pb(None, np.zeros((1, 1, 1, 1)))  # type: ignore[arg-type]


# ---------------------------------------------------------------------------
# The real TensorBoard serves our pictures back
# ---------------------------------------------------------------------------
def test_tensorboard_serves_each_image(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    batches: dict[int, np.ndarray] = {
        0: rng.integers(0, 256, (2, 6, 9, 3), dtype=np.uint8),
        1: rng.random((2, 6, 9, 3)).astype(np.float32),
        2: rng.integers(0, 256, (3, 6, 9, 3), dtype=np.uint8),  # k > max_outputs
    }
    # Grayscale + alpha (PNG mode LA) and RGBA, alpha 0 included: PNG stores straight
    # (not premultiplied) alpha, so the colour under a transparent pixel survives too.
    alpha_batches: dict[int, np.ndarray] = {
        2: rng.random((2, 5, 8, 2)).astype(np.float32),
        4: rng.integers(0, 256, (2, 5, 8, 4), dtype=np.uint8),
    }
    alpha_batches[2][0, 0, :3, 1] = 0.0
    alpha_batches[4][0, 0, :3, 3] = 0
    with sl.create_file_writer(tmp_path / "run").as_default() as w:
        for step, batch in batches.items():
            sl.image("pics", batch, step=step, max_outputs=2)
        sl.image("gray", np.linspace(0, 1, 35).reshape(5, 7), step=0, dataformats="HW")
        for c, batch in alpha_batches.items():
            sl.image(f"c{c}", batch, step=0)
    w.close()
    with TensorBoardServer(tmp_path) as tb:
        tags = tb.poll(
            lambda: tb.get_json("/data/plugin/images/tags"),
            lambda t: set(t.get("run", {})) == {"pics", "gray", "c2", "c4"},
        )
        assert tags["run"]["pics"]["samples"] == 2  # the most images any step kept
        for sample in range(2):

            def fetch(s: int = sample) -> Any:
                return tb.get_json("/data/plugin/images/images", run="run", tag="pics", sample=s)

            entries = tb.poll(fetch, lambda e: len(e) == 3)
            assert [e["step"] for e in entries] == [0, 1, 2]
            for e in entries:
                blob = tb.get("/data/plugin/images/individualImage?" + e["query"])
                expected = ref_uint8(batches[e["step"]][sample : sample + 1])[0]
                np.testing.assert_array_equal(decode_png(blob, 3), expected)
        (gray,) = tb.get_json("/data/plugin/images/images", run="run", tag="gray", sample=0)
        blob = tb.get("/data/plugin/images/individualImage?" + gray["query"])
        expected = ref_uint8(np.linspace(0, 1, 35).reshape(1, 5, 7, 1))[0]
        np.testing.assert_array_equal(decode_png(blob, 1), expected)
        for c, batch in alpha_batches.items():
            assert tags["run"][f"c{c}"]["samples"] == 2
            for sample in range(2):
                (entry,) = tb.get_json(
                    "/data/plugin/images/images", run="run", tag=f"c{c}", sample=sample
                )
                blob = tb.get("/data/plugin/images/individualImage?" + entry["query"])
                # decode_png checks the mode TensorBoard hands back: LA for c=2, RGBA for c=4.
                expected = ref_uint8(batch[sample : sample + 1])[0]
                np.testing.assert_array_equal(decode_png(blob, c), expected)


# ---------------------------------------------------------------------------
# Data that is almost surely a mistake: written as asked, with one warning per tag.
# ---------------------------------------------------------------------------
def caught(call: Any) -> list[warnings.WarningMessage]:
    """The warnings ``call()`` gives, every one (not the default once per location)."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        call()
    return list(seen)


def test_float_0_to_255_images_warn_once_per_tag(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    bytes255 = rng.uniform(0, 255, (2, 8, 8, 3)).astype(np.float32)
    with sl.create_file_writer(tmp_path).as_default():
        first = caught(lambda: sl.image("f255", bytes255, step=0))
        again = caught(lambda: sl.image("f255", bytes255, step=1))
        other = caught(lambda: sl.image("f255_other", bytes255, step=0))
        fine = caught(lambda: [sl.image("unit", bytes255 / 255, step=s) for s in range(2)]
                      + [sl.image("u8", bytes255.astype(np.uint8), step=0)])
    (w,) = first
    assert w.category is UserWarning and w.filename == __file__  # the caller's line
    assert "'f255'" in str(w.message) and "0..1" in str(w.message)
    assert "255" in str(w.message) and again == [] and len(other) == 1 and fine == []
    steps = [e.step for e in tb_events(only_file(tmp_path)) if e.HasField("summary")
             and e.summary.value[0].tag == "f255"]
    assert steps == [0, 1]  # written as asked


def test_a_large_float_image_of_0_to_255_data_warns(tmp_path: Path) -> None:
    """Big images are checked on a sample: 0..255 data is found all the same."""
    big = np.random.default_rng(1).uniform(0, 255, (1, 1000, 1100, 3)).astype(np.float32)
    with sl.create_file_writer(tmp_path).as_default():
        (w,) = caught(lambda: sl.image("big", big, step=0))
    assert "'big'" in str(w.message)


def test_torch_style_float_images_of_0_to_255_warn_once_per_tag(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    chw = torch.rand(3, 8, 8) * 255
    with sl.SummaryWriter(tmp_path) as w:
        (one,) = caught(lambda: w.add_image("t_img", chw, 0))
        assert caught(lambda: w.add_image("t_img", chw, 1)) == []
        (batch,) = caught(lambda: w.add_images("t_batch", chw[None].repeat(2, 1, 1, 1), 0))
        (boxed,) = caught(lambda: w.add_image_with_boxes(
            "t_boxes", chw, torch.tensor([[1, 1, 4, 4]]), 0))
        assert caught(lambda: w.add_image("t_ok", chw / 255, 0)) == []
        assert caught(lambda: w.add_image("t_u8", chw.to(torch.uint8), 0)) == []
    for warning, method in ((one, "add_image"), (batch, "add_images"),
                            (boxed, "add_image_with_boxes")):
        assert str(warning.message).startswith(method + ":")
        assert warning.filename == __file__


def test_a_channels_first_batch_given_as_nhwc_warns_naming_dataformats(
        tmp_path: Path) -> None:
    nchw = np.zeros((4, 3, 32, 3), np.uint8)
    with sl.create_file_writer(tmp_path).as_default():
        (w,) = caught(lambda: sl.image("cf", nchw, step=0))
        assert caught(lambda: sl.image("cf", nchw, step=1)) == []
        assert caught(lambda: sl.image("cf_meant", nchw, step=0, dataformats="NHWC")) == []
        assert caught(lambda: sl.image("cf_read", nchw, step=0, dataformats="NCHW")) == []
        assert caught(lambda: sl.image("nhwc", np.zeros((4, 32, 32, 3)), step=0)) == []
        assert caught(lambda: sl.image("tall", np.zeros((2, 32, 3, 3)), step=0)) == []
    message = str(w.message)
    assert "dataformats='NCHW'" in message and "'cf'" in message and "(4, 3, 32, 3)" in message
    assert w.filename == __file__
    images = {e.summary.value[0].tag for e in tb_events(only_file(tmp_path))
              if e.HasField("summary")}
    assert {"cf", "cf_meant", "cf_read", "nhwc", "tall"} <= images
