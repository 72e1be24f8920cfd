"""audio / audio_pb: TF-exact 16-bit WAV, TensorBoard's metadata and server, bad input."""

# mypy: disable-error-code="import-untyped"
from __future__ import annotations

import io
import math
import struct
import warnings
import wave
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import summarylib as sl
from summarylib.encoding._events import summary_event
from summarylib.encoding._plugins import AUDIO
from summarylib.encoding._wav import encode_wav, quantize
from summarylib.ops import audio as audio_mod
from tests.helpers import only_file, record_payloads
from tests.tbserver import TensorBoardServer


# ---------------------------------------------------------------------------
# Reference: TF's FloatToInt16Sample, one Python number at a time.
# ---------------------------------------------------------------------------
def ref_sample(x: float) -> int:
    with np.errstate(over="ignore"):
        v = float(np.float32(x)) * 32768.0  # float32 first, as TF's input
    if math.isnan(v):
        return 0
    if v >= 32767.0:
        return 32767
    if v <= -32768.0:
        return -32768
    r = int(math.copysign(math.floor(abs(v) + 0.5), v))  # roundf: halves away from 0
    return max(-32768, min(32767, r))


def ref_pcm(clips: np.ndarray) -> np.ndarray:
    flat = [ref_sample(x) for x in clips.reshape(-1).tolist()]
    return np.array(flat, dtype=np.int16).reshape(clips.shape)


def decode_wav(blob: bytes, rate: int, channels: int) -> np.ndarray:
    """Samples of a WAV blob as int16 ``[t, c]``, read by the stdlib ``wave`` module."""
    with wave.open(io.BytesIO(blob)) as r:
        assert r.getnchannels() == channels
        assert r.getsampwidth() == 2
        assert r.getframerate() == rate
        assert r.getcomptype() == "NONE"
        frames = r.readframes(r.getnframes())
    assert len(blob) == 44 + len(frames)  # the canonical 44-byte header, nothing else
    return np.frombuffer(frames, dtype="<i2").reshape(-1, channels)


def tb_metadata(description: str | None) -> bytes:
    from tensorboard.plugins.audio import metadata

    return metadata.create_summary_metadata(  # type: ignore[no-any-return]
        display_name=None, description=description, encoding=metadata.Encoding.Value("WAV")
    ).SerializeToString()


def as_ktc(data: np.ndarray) -> np.ndarray:
    return data[:, :, None] if data.ndim == 2 else data


def check_value(value: Any, data: np.ndarray, rate: int, max_outputs: int) -> None:
    """A raw (unmigrated) ``Summary.Value`` holds the first clips of ``data`` as WAV."""
    clips = as_ktc(data)[:max_outputs]
    t = value.tensor
    assert t.dtype == 7  # DT_STRING
    assert [d.size for d in t.tensor_shape.dim] == [len(clips), 2]
    vals = list(t.string_val)
    assert vals[1::2] == [b""] * len(clips)  # TF2's empty labels
    expected = ref_pcm(clips)
    for i, blob in enumerate(vals[0::2]):
        np.testing.assert_array_equal(decode_wav(blob, rate, clips.shape[2]), expected[i])


def payloads(data: bytes) -> list[bytes]:
    return record_payloads(data)


def raw_values(data: bytes) -> list[tuple[int, Any]]:
    """(step, Summary.Value) of every summary event, parsed with TensorBoard's protos only."""
    from tensorboard.compat.proto import event_pb2

    out: list[tuple[int, Any]] = []
    for p in payloads(data)[1:]:
        ev = event_pb2.Event.FromString(p)
        out.extend((ev.step, v) for v in ev.summary.value)
    return out


def file_values(logdir: Path) -> list[tuple[int, Any]]:
    return raw_values(only_file(logdir).read_bytes())


# ---------------------------------------------------------------------------
# WAV encoding, spelled out
# ---------------------------------------------------------------------------
def test_wav_bytes_exactly_as_tensorflow_lays_them_out() -> None:
    clip = np.array([[0.0, 1.0], [-1.0, 0.5], [2.5 / 32768, -2.5 / 32768]], np.float32)
    blob = encode_wav(clip, 16000)
    assert blob[:44] == (
        b"RIFF" + struct.pack("<I", 36 + 12) + b"WAVE"
        + b"fmt " + struct.pack("<IHHIIHH", 16, 1, 2, 16000, 16000 * 2 * 2, 4, 16)
        + b"data" + struct.pack("<I", 12)
    )  # fmt: skip
    # interleaved frame by frame; 1.0 clips to 32767, -1.0 is -32768, 2.5 -> 3
    assert blob[44:] == struct.pack("<6h", 0, 32767, -32768, 16384, 3, -3)


@pytest.mark.parametrize(
    ("x", "expected"),
    [
        (0.5 / 32768, 1),  # roundf rounds halves away from zero...
        (-0.5 / 32768, -1),
        (1.5 / 32768, 2),
        (2.5 / 32768, 3),  # ...where numpy's round-half-even would give 2
        (-2.5 / 32768, -3),
        (0.49999997 / 32768, 0),  # just below a half: 0 (float32 + 0.5 would round up)
        (32766.5 / 32768, 32767),
        (1.0, 32767),
        (-1.0, -32768),
        (1.5, 32767),
        (-7.0, -32768),
        (1e38, 32767),
        (1e300, 32767),  # beyond float32: inf, clipped
        (-1e300, -32768),
        (math.inf, 32767),
        (-math.inf, -32768),
        (math.nan, 0),  # silence (TensorFlow's NaN cast is undefined)
        (-0.0, 0),
        (1e-45, 0),
    ],
)
def test_sample_conversion_table(x: float, expected: int) -> None:
    with np.errstate(over="ignore"):
        arr = np.array([[x]], dtype=np.float64).astype(np.float32)
    assert quantize(arr).reshape(-1).tolist() == [expected]
    assert ref_sample(x) == expected


# Samples that land exactly on (or next to) a half step, where rounding modes differ.
HALF_STEPS = st.integers(-70000, 70000).map(lambda i: i / 65536)


@settings(max_examples=200)
@given(
    hnp.arrays(
        np.float32, (64,), elements=st.one_of(HALF_STEPS, st.floats(width=32, allow_nan=True))
    )
)
def test_quantize_matches_reference_for_any_float32(samples: np.ndarray) -> None:
    got = quantize(samples)
    assert got.dtype == np.dtype("<i2")
    assert got.tolist() == ref_pcm(samples).tolist()


def _exact_pcm(x: np.ndarray) -> np.ndarray:
    """Vectorized reference: float32 -> float64 (exact), roundf by floor(|v| + 0.5)."""
    with np.errstate(over="ignore", invalid="ignore"):
        v = x.astype(np.float64) * 32768.0
        r = np.copysign(np.floor(np.abs(v) + 0.5), v)
        r = np.clip(np.nan_to_num(r, nan=0.0), -32768, 32767)
    return r.astype(np.int16)


def test_quantize_is_exact_on_dense_float32_windows() -> None:
    # Every float32 within 4096 ulps of the half steps (and integers) where rounding goes
    # wrong, at every scale from the smallest samples to full scale, plus random bit
    # patterns of every kind (NaN payloads, subnormals, infinities).
    centres = [(m + h) / 32768 for m in (0, 1, 2, 3, 7, 255, 4095, 16383, 16384, 32766, 32767)
               for h in (0.0, 0.5)]
    bits = [np.arange(-4096, 4097, dtype=np.int64) + int(np.float32(c).view(np.int32))
            for c in centres]
    rng = np.random.default_rng(7)
    pattern = np.concatenate([*bits, rng.integers(0, 2**31, 1 << 20)]).astype(np.uint32)
    x = np.concatenate([pattern, pattern | np.uint32(0x80000000)]).view(np.float32)
    np.testing.assert_array_equal(quantize(x), _exact_pcm(x))


# ---------------------------------------------------------------------------
# Encoders against TensorBoard and the reference
# ---------------------------------------------------------------------------
def sample_elements(dtype: str) -> st.SearchStrategy[Any]:
    if dtype.startswith("float"):
        width: Literal[16, 32, 64] = 16 if dtype == "float16" else 32 if dtype == "float32" else 64
        return st.one_of(
            st.floats(-1, 1, width=width),
            HALF_STEPS.filter(lambda x: width != 16 or abs(x) < 0.03),  # float16-exact
            st.floats(width=width, allow_nan=True, allow_infinity=True),
        )
    return hnp.from_dtype(np.dtype(dtype))


@st.composite
def clip_batches(draw: st.DrawFn) -> np.ndarray:
    dtype = draw(st.sampled_from(["float32", "float64", "float16", "int16", "int32", "uint8"]))
    shape: tuple[int, ...] = (draw(st.integers(0, 4)), draw(st.integers(0, 30)))
    if draw(st.booleans()):
        shape = (*shape, draw(st.integers(1, 3)))
    return draw(hnp.arrays(np.dtype(dtype), shape, elements=sample_elements(dtype)))


@settings(max_examples=60)
@given(
    data=clip_batches(),
    rate=st.integers(1, 192000),
    max_outputs=st.integers(0, 5),
    description=st.one_of(st.none(), st.text(max_size=10)),
)
def test_audio_pb_matches_tensorboard_and_tf_encoding(
    data: np.ndarray, rate: int, max_outputs: int, description: str | None
) -> None:
    from tensorboard.compat.proto import summary_pb2

    pb = sl.audio_pb("snd", data, rate, max_outputs, description=description)
    theirs = summary_pb2.Summary.FromString(pb.SerializeToString())
    (value,) = theirs.value
    assert value.tag == "snd"
    assert value.metadata.SerializeToString() == tb_metadata(description)
    assert value.metadata.plugin_data.content == b"\x10\x0b"
    check_value(value, data, rate, max_outputs)


@settings(max_examples=30)
@given(data=clip_batches(), rate=st.integers(1, 96000), step=st.integers(0, 2**63 - 1))
def test_op_bytes_equal_audio_pb_serialization(data: np.ndarray, rate: int, step: int) -> None:
    fixed = 1712345678.75
    out = sl.MemoryOutput()
    w = sl.create_writer(out, clock=lambda: fixed)
    with w.as_default(step=step):
        assert sl.audio("a/snd", data, rate, encoding="wav")
        assert sl.audio("a/snd", data, rate)
    w.close()
    first, second = payloads(out.getvalue())[1:]
    pb = sl.audio_pb("a/snd", data, rate)
    assert first == summary_event(fixed, step, pb.SerializeToString())
    pb.value[0].ClearField("metadata")
    assert second == summary_event(fixed, step, pb.SerializeToString())


def test_metadata_bytes_equal_protobuf_and_tensorboard() -> None:
    for desc in (None, "", "a *clip*"):
        ours = AUDIO.metadata_bytes(desc, "audio")
        assert ours == audio_mod.create_summary_metadata(desc).SerializeToString()
        assert ours == tb_metadata(desc)


# ---------------------------------------------------------------------------
# Edge cases
# ---------------------------------------------------------------------------
def test_edge_batches(logdir: Path) -> None:
    many = np.linspace(-1, 1, 5 * 7).reshape(5, 7)
    cases: dict[str, tuple[np.ndarray, int, int]] = {
        "empty": (np.zeros((0, 10, 2), np.float32), 8000, 3),
        "no_frames": (np.zeros((2, 0, 1), np.float32), 8000, 3),  # header-only WAVs
        "one_sample": (np.array([[0.25]]), 1, 3),
        "many": (many, 44100, 2),
        "none_kept": (many, 44100, 0),
        "constant": (np.full((1, 50, 2), -0.5), 22050, 3),
        "loud": (np.array([[np.nan, np.inf, -np.inf, 1e30, -1e30, 3.0]]), 100, 3),
        "ints": (np.array([[0, 1, -1, 2]], np.int64), 8000, 3),  # taken as float values
    }
    with sl.create_file_writer(logdir).as_default(step=0) as w:
        for tag, (data, rate, keep) in cases.items():
            assert sl.audio(tag, data, rate, max_outputs=keep)
    w.close()
    got = {v.tag: v for _, v in file_values(logdir)}
    for tag, (data, rate, keep) in cases.items():
        check_value(got[tag], data, rate, keep)
    assert [d.size for d in got["empty"].tensor.tensor_shape.dim] == [0, 2]
    assert [len(b) for b in got["no_frames"].tensor.string_val] == [44, 0, 44, 0]
    assert decode_wav(got["loud"].tensor.string_val[0], 100, 1).reshape(-1).tolist() == [
        0, 32767, -32768, 32767, -32768, 32767,
    ]  # fmt: skip
    assert decode_wav(got["ints"].tensor.string_val[0], 8000, 1).reshape(-1).tolist() == [
        0, 32767, -32768, 32767,
    ]  # fmt: skip


@pytest.mark.parametrize("rate", [1, 44100, np.int64(16000), 48000.0, np.float32(8000), 2**31 - 1])
def test_sample_rate_forms(rate: Any) -> None:
    pb = sl.audio_pb("x", np.zeros((1, 3)), rate)
    with wave.open(io.BytesIO(pb.value[0].tensor.string_val[0])) as r:
        assert r.getframerate() == int(rate)


def test_caller_may_reuse_its_buffer_at_once() -> None:
    buf = np.zeros((1, 100), np.float32)
    out = sl.MemoryOutput()
    w = sl.create_writer(out)
    with w.as_default():
        for step in range(10):
            buf[:] = step / 10
            sl.audio("snd", buf, 8000, step=step)
        buf[:] = -1
    w.close()
    for step, v in raw_values(out.getvalue()):
        check_value(v, np.full((1, 100), step / 10, np.float32), 8000, 3)


def test_metadata_and_description_on_first_event_only(logdir: Path) -> None:
    with sl.create_file_writer(logdir).as_default() as w, sl.name_scope("eval"):
        for step in range(3):
            sl.audio("snd", np.zeros((1, 4)), 8000, step=step, description="speech")
    w.close()
    values = [v for _, v in file_values(logdir)]
    assert [v.tag for v in values] == ["eval/snd"] * 3
    assert [v.HasField("metadata") for v in values] == [True, False, False]
    assert values[0].metadata.SerializeToString() == tb_metadata("speech")


def test_tensorboards_python_loader_projects_to_the_clips(logdir: Path) -> None:
    # data_class left unset, so TensorBoard's Python loader applies its audio
    # fix-up ([k, 2] -> [k], format.md §7.5) and sees just the WAVs.
    from tensorboard.util import tensor_util

    from tests.helpers import tb_loaded_events

    data = np.linspace(-1, 1, 2 * 9).reshape(2, 9, 1)
    with sl.create_file_writer(logdir).as_default(step=4) as w:
        sl.audio("snd", data, 16000)
    w.close()
    (value,) = [v for e in tb_loaded_events(only_file(logdir)) for v in e.summary.value]
    wavs = tensor_util.make_ndarray(value.tensor)
    assert wavs.shape == (2,)
    for i, blob in enumerate(wavs):
        np.testing.assert_array_equal(decode_wav(blob, 16000, 1), ref_pcm(data[i]))


# ---------------------------------------------------------------------------
# Nothing recorded, nothing computed
# ---------------------------------------------------------------------------
class Untouchable:
    shape = (1, 10)

    def __array__(self, dtype: object = None, copy: object = None) -> np.ndarray:
        raise AssertionError("data was converted although nothing records")


def test_no_work_without_writer_or_when_not_recording(logdir: Path) -> None:
    assert sl.audio("x", Untouchable(), 8000, step=0) is False
    assert sl.audio("x", Untouchable(), -5, step=0) is False  # not even validated
    with sl.create_noop_writer().as_default():
        assert sl.audio("x", Untouchable(), 8000, step=0) is False
    with sl.create_file_writer(logdir).as_default(step=0) as w, sl.record_if(False):
        assert sl.audio("x", Untouchable(), 8000) is False
    w.close()
    assert file_values(logdir) == []


# ---------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------
BAD_INPUTS = [
    ({"data": np.zeros(5)}, ValueError, r"\[k, t, c\] or \[k, t\].*got \(5,\)"),
    ({"data": np.zeros((1, 2, 3, 4))}, ValueError, r"got \(1, 2, 3, 4\)"),
    ({"data": np.zeros((1, 5, 0))}, ValueError, r"1 <= c <= 65535, got \(1, 5, 0\)"),
    ({"data": np.zeros((1, 1, 65536), np.float32)}, ValueError, r"got \(1, 1, 65536\)"),
    ({"data": np.array([["a", "b"]])}, TypeError, r"'data' must hold real numbers.*<U1"),
    ({"data": np.zeros((1, 3), bool)}, TypeError, r"'data'.*bool"),
    ({"data": np.zeros((1, 3), np.complex128)}, TypeError, r"'data'.*complex128"),
    ({"data": None}, TypeError, r"'data'"),
    ({"data": [[0.0, 1.0], [0.5]]}, TypeError, r"'data'"),  # ragged
    ({"sample_rate": 0}, ValueError, r"'sample_rate' must be a positive whole number.*got 0"),
    ({"sample_rate": -8000}, ValueError, r"'sample_rate'.*got -8000"),
    ({"sample_rate": math.nan}, ValueError, r"'sample_rate'.*nan"),
    ({"sample_rate": math.inf}, ValueError, r"'sample_rate'.*inf"),
    ({"sample_rate": 22050.5}, ValueError, r"'sample_rate'.*22050.5"),
    ({"sample_rate": 2**32}, ValueError, r"'sample_rate'.*below 2\*\*32"),
    ({"sample_rate": True}, TypeError, r"'sample_rate'.*bool"),
    ({"sample_rate": "8000"}, TypeError, r"'sample_rate'.*str"),
    ({"sample_rate": None}, TypeError, r"'sample_rate'.*NoneType"),
    ({"sample_rate": 2**31, "data": np.zeros((1, 2, 2))}, ValueError, r"32-bit byte rate"),
    ({"encoding": "flac"}, ValueError, r"'encoding' must be None or 'wav', got 'flac'"),
    ({"encoding": 1}, ValueError, r"'encoding'"),
    ({"max_outputs": -1}, ValueError, r"'max_outputs' must be >= 0, got -1"),
    ({"max_outputs": 1.0}, TypeError, r"'max_outputs' must be an int, got float"),
    ({"description": b"x"}, TypeError, r"'description'"),
    ({"name": ""}, ValueError, r"'name'"),
    ({"step": "1"}, TypeError, r"'step'"),
]


@pytest.mark.parametrize(("override", "exc", "pattern"), BAD_INPUTS)
def test_bad_input_raises_writes_nothing_and_keeps_earlier_data(
    logdir: Path, override: dict[str, Any], exc: type[Exception], pattern: str
) -> None:
    good = np.linspace(-1, 1, 20).reshape(1, 20)
    args: dict[str, Any] = {"name": "x", "data": good, "sample_rate": 8000, "step": 2, **override}
    with sl.create_file_writer(logdir).as_default() as w:
        assert sl.audio("x", good, 8000, step=1)
        with pytest.raises(exc, match=pattern) as info:
            sl.audio(**args)
        assert str(info.value).startswith("audio: ")
    w.close()
    values = file_values(logdir)
    assert [s for s, _ in values] == [1]
    check_value(values[0][1], good, 8000, 3)


@pytest.mark.parametrize(("override", "exc", "pattern"), BAD_INPUTS[:-2])
def test_audio_pb_rejects_the_same_input(
    override: dict[str, Any], exc: type[Exception], pattern: str
) -> None:
    args: dict[str, Any] = {"data": np.zeros((1, 3)), "sample_rate": 8000, **override}
    with pytest.raises(exc, match=pattern) as info:
        sl.audio_pb("x", **args)
    assert str(info.value).startswith("audio_pb: ")


# ---------------------------------------------------------------------------
# One [t, c] clip passed without its batch axis
# ---------------------------------------------------------------------------
def test_one_stereo_clip_without_batch_axis_warns_and_data_none_is_the_fix(
    recwarn: pytest.WarningsRecorder,
) -> None:
    clip = np.random.default_rng(2).uniform(-1, 1, (16000, 2)).astype(np.float32)
    # As the spec defines rank 2 ([k, t]): 16000 clips of 2 samples, 3 kept. With a warning.
    with pytest.warns(UserWarning, match=r"^audio_pb: 'data' of shape \(16000, 2\) is read as "
                      r"\[k, t\]: 16000 mono clips of 2 samples each\. .*pass data\[None\]"):
        summary = sl.audio_pb("x", clip, 16000)
    check_value(summary.value[0], clip, 16000, 3)
    # The fix the warning names: one stereo clip of 16000 frames, no warning.
    fixed = sl.audio_pb("x", clip[None], 16000)
    check_value(fixed.value[0], clip[None], 16000, 3)
    assert [d.size for d in fixed.value[0].tensor.tensor_shape.dim] == [1, 2]
    assert not recwarn.list


def test_warning_points_at_the_callers_line(logdir: Path) -> None:
    with sl.create_file_writer(logdir).as_default(step=0) as w, pytest.warns(UserWarning) as rec:
        assert sl.audio("a", np.zeros((1001, 8)), 8000)
    w.close()
    (warning,) = rec.list
    assert warning.filename == __file__
    assert str(warning.message).startswith("audio: 'data' of shape (1001, 8)")
    (_, value), = file_values(logdir)
    assert [d.size for d in value.tensor.tensor_shape.dim] == [3, 2]  # still written as [k, t]


@pytest.mark.parametrize("shape", [(1000, 2), (1001, 9), (3, 2), (2, 16000), (5000, 100)])
def test_plausible_rank2_batches_do_not_warn(shape: tuple[int, int]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        summary = sl.audio_pb("x", np.zeros(shape, np.float32), 8000, max_outputs=1)
    assert len(summary.value[0].tensor.string_val) == 2


# ---------------------------------------------------------------------------
# The real TensorBoard plays our clips back
# ---------------------------------------------------------------------------
def test_tensorboard_serves_each_clip(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    batches = {step: rng.uniform(-1.2, 1.2, (2, 40, 2)).astype(np.float32) for step in range(3)}
    mono = rng.uniform(-1.2, 1.2, (4, 30))  # [k, t], float64, k > max_outputs
    with sl.create_file_writer(tmp_path / "run").as_default() as w:
        for step, batch in batches.items():
            sl.audio("speech", batch, 16000, step=step)
        sl.audio("mono", mono, 8000, step=0)
    w.close()
    with TensorBoardServer(tmp_path) as tb:
        tags = tb.poll(
            lambda: tb.get_json("/data/plugin/audio/tags"),
            lambda t: {"speech", "mono"} <= set(t.get("run", {})),
        )
        assert tags["run"]["mono"]["samples"] == 3
        for sample in range(3):
            (entry,) = tb.get_json("/data/plugin/audio/audio", run="run", tag="mono", sample=sample)
            blob = tb.get("/data/plugin/audio/individualAudio?" + entry["query"])
            # One channel per clip: [k, t] is k mono clips.
            expected = ref_pcm(mono[sample][:, None])
            np.testing.assert_array_equal(decode_wav(blob, 8000, 1), expected)
        assert tags["run"]["speech"]["samples"] == 2
        for sample in range(2):

            def fetch(s: int = sample) -> Any:
                return tb.get_json("/data/plugin/audio/audio", run="run", tag="speech", sample=s)

            entries = tb.poll(fetch, lambda e: len(e) == 3)
            assert [e["step"] for e in entries] == [0, 1, 2]
            for e in entries:
                assert e["contentType"] == "audio/wav"  # from our metadata's encoding
                blob = tb.get("/data/plugin/audio/individualAudio?" + e["query"])
                expected = ref_pcm(batches[e["step"]][sample])
                np.testing.assert_array_equal(decode_wav(blob, 16000, 2), expected)
