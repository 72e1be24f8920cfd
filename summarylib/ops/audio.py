"""Audio summaries: batches of clips per step, played by TensorBoard's Audio dashboard.

Data contract:
  * ``data`` is ``[k, t, c]`` (k clips of t frames and c channels) or
    ``[k, t]`` (mono, c = 1): a numpy array, a (nested) Python sequence, a
    framework tensor (through ``__array__``; never imported), or a
    zero-argument callable returning one. ``k`` and ``t`` may be 0;
    ``1 <= c <= 65535``.
  * **One clip needs its batch axis.** A single clip laid out ``[t, c]``
    (what ``soundfile.read`` returns for a stereo file) is read as ``[k, t]``:
    t mono clips of c samples each, of which ``max_outputs`` are written.
    Pass ``data[None]`` (shape ``[1, t, c]``) instead; a single mono clip
    ``[t]`` is ``data[None]`` too. Rank 2 stays ``[k, t]``, as TensorFlow
    defines it, but a rank-2 array of more than 1000 rows of at most 8
    samples each (a clip of at most 1 ms at 8 kHz: not something anyone
    listens to, and at most 8 channels: up to 7.1 surround) warns with
    that fix, since it is almost surely a ``[t, c]`` clip.
  * Samples are real numbers (ints, floats, and bfloat16/float8 from
    ml_dtypes, JAX or torch, taken as their exact float32 values), nominally
    in [-1, 1], converted to float32 and then to 16-bit PCM exactly as
    TensorFlow's ``encode_wav``:
    ``clamp(roundf(x * 32768), -32768, 32767)`` (halves away from zero);
    out-of-range values and ±inf clip, NaN becomes 0 (silence). Integer
    inputs are taken as those float values (so 1 is full scale).
  * ``sample_rate``: a positive whole number of Hz (int, numpy integer or an
    integral float), with ``sample_rate * c * 2`` (bytes per second) and the
    file size fitting in the WAV header's 32 bits.
  * Only the first ``max_outputs`` clips are kept; ``encoding`` must be None
    or ``"wav"``.
  * Stored as TensorFlow 2 does (format.md §5.5): ``DT_STRING`` ``[n, 2]``,
    row i = ``[wav_i, b""]`` (TF2 always writes an empty label), in
    ``string_val``. Metadata: ``plugin_name="audio"``, content ``10 0b``
    (``AudioPluginData{version 0, encoding WAV}``), ``data_class`` unset.

Device arrays (JAX arrays, torch CUDA tensors, CuPy arrays) are not read on the
caller's thread: their shape and dtype are checked, the kept clips copied
asynchronously, and the writer thread quantizes and encodes them once the device is
done.

Work split: :func:`audio` validates the kept clips and quantizes them to
16-bit PCM on the caller's thread (the int16 result is the private copy, so the
caller may reuse its buffer at once; a float32 copy cost as much, and holding
it cost more); the writer's background thread adds the WAV headers and frames
the event.
"""

from __future__ import annotations

import math
import operator
from functools import partial
from typing import TYPE_CHECKING, Any

from summarylib.encoding._arrays import as_array, evaluate, is_extended_float
from summarylib.encoding._events import audio_proto_bytes
from summarylib.encoding._pending import stand_in
from summarylib.encoding._plugins import AUDIO
from summarylib.encoding._tensor import string_tensor_bytes
from summarylib.encoding._values import value_of
from summarylib.encoding._wav import MAX_CHANNELS, UINT32_MAX, quantize, wav_header
from summarylib.errors import warn_user
from summarylib.ops._compiled import traceable
from summarylib.ops._device import defers_device_values
from summarylib.ops._emit import AUDIO_FIELD, TENSOR_FIELD, emit_value_deferred
from summarylib.ops._media import check_max_outputs
from summarylib.ops._resolve import Caller, Sink, check_tag, resolve
from summarylib.writer._context import Step

if TYPE_CHECKING:
    import numpy as np

    from summarylib.proto import summary_pb2

__all__ = ["PLUGIN_NAME", "audio", "audio_pb", "create_summary_metadata", "write_audio"]

PLUGIN_NAME = AUDIO.name
# A rank-2 input with more rows than this, each of at most _SUSPECT_MAX_T
# samples, is almost surely one [t, c] clip read as [k, t]: it warns.
_SUSPECT_MIN_K = 1000
_SUSPECT_MAX_T = 8


def create_summary_metadata(description: str | None = None) -> summary_pb2.SummaryMetadata:
    """The ``SummaryMetadata`` TensorFlow 2 writes for audio (protobuf API)."""
    return AUDIO.create_summary_metadata(description)


def _check_encoding(encoding: Any, where: str) -> None:
    if encoding is None or (isinstance(encoding, str) and encoding == "wav"):
        return
    raise ValueError(f"{where}: 'encoding' must be None or 'wav', got {encoding!r}")


def check_sample_rate(sample_rate: Any, where: str) -> int:
    """``sample_rate`` as an int in [1, 2**32): whole numbers only, bool refused."""
    if type(sample_rate) is int:
        rate = sample_rate
    else:
        if isinstance(sample_rate, (bool, str, bytes)) or sample_rate is None:
            raise TypeError(
                f"{where}: 'sample_rate' must be a positive whole number (Hz), got "
                f"{type(sample_rate).__name__} {sample_rate!r}"
            )
        try:
            rate = operator.index(sample_rate)
        except TypeError:
            try:
                value = float(sample_rate)
            except (TypeError, ValueError):
                raise TypeError(
                    f"{where}: 'sample_rate' must be a positive whole number (Hz), got "
                    f"{type(sample_rate).__name__} {sample_rate!r}"
                ) from None
            if not math.isfinite(value) or value != int(value):
                raise ValueError(
                    f"{where}: 'sample_rate' must be a positive whole number (Hz), got {value!r}"
                ) from None
            rate = int(value)
    if not 0 < rate <= UINT32_MAX:
        raise ValueError(
            f"{where}: 'sample_rate' must be a positive whole number (Hz) below 2**32, got {rate}"
        )
    return rate


def prepare(
    data: Any, max_outputs: int, sample_rate: int, where: str, arg: str = "data"
) -> np.ndarray:
    """Validate ``data`` (the caller's argument ``arg``); return the kept clips as 16-bit
    PCM, a fresh int16 ``[n, t, c]``."""
    import numpy as np

    arr = as_array(data, where, arg)
    # ml_dtypes' floats (bfloat16 from JAX, float8) become float32 below, with
    # the kept clips: exactly their values.
    if arr.dtype.kind not in "iuf" and not is_extended_float(arr.dtype):
        raise TypeError(
            f"{where}: {arg!r} must hold real numbers (samples), got dtype {arr.dtype} "
            f"(shape {arr.shape})"
        )
    if arr.ndim == 2:
        k, t = arr.shape
        if k > _SUSPECT_MIN_K and t <= _SUSPECT_MAX_T:
            warn_user(
                f"{where}: {arg!r} of shape {arr.shape} is read as [k, t]: {k} mono clips of "
                f"{t} samples each. For one clip of {k} frames and {t} channels, pass "
                "data[None] (shape [1, t, c]).",
            )
        arr = arr[:, :, None]
    if arr.ndim != 3 or not 1 <= arr.shape[2] <= MAX_CHANNELS:
        raise ValueError(
            f"{where}: {arg!r} must have shape [k, t, c] or [k, t] with 1 <= c <= "
            f"{MAX_CHANNELS}, got {arr.shape}"
        )
    _, frames, channels = arr.shape
    if 44 + frames * channels * 2 > UINT32_MAX:
        raise ValueError(
            f"{where}: {arg!r} clips of shape {arr.shape[1:]} are too long for a WAV file "
            "(4 GiB at most)"
        )
    if sample_rate * channels * 2 > UINT32_MAX:
        raise ValueError(
            f"{where}: 'sample_rate' {sample_rate} with {channels} channels overflows "
            "the WAV header's 32-bit byte rate"
        )
    with np.errstate(over="ignore"):  # float64 beyond float32's range becomes ±inf: clipped
        samples = np.asarray(arr[:max_outputs], dtype=np.float32)  # no copy if float32
    # Quantizing here costs about as much as the float32 copy it replaces, and its result
    # is the private copy (half the size): the writer thread only adds the headers.
    return quantize(samples)


def _tensor_values(pcm: np.ndarray, sample_rate: int) -> list[bytes]:
    out: list[bytes] = []
    if len(pcm):
        header = wav_header(sample_rate, pcm.shape[2], pcm.shape[1])
        for clip in pcm:
            out.append(header + clip.tobytes())
            out.append(b"")  # TF2 writes an empty label for every clip
    return out


@traceable
def audio(
    name: str,
    data: Any,
    sample_rate: Any,
    step: Step | None = None,
    max_outputs: int = 3,
    encoding: str | None = None,
    description: str | None = None,
) -> bool:
    """Write a batch of audio clips to the default writer.

    Args:
      name: the series name; the tag is ``name`` inside the current name scope.
      data: clips ``[k, t, c]`` or ``[k, t]`` (see the module docstring), or a
        zero-argument callable returning them, called only when recording.
        One clip ``[t, c]`` must be passed as ``data[None]``.
      sample_rate: samples per second, a positive whole number.
      step: an int64 step; defaults to the thread's default step.
      max_outputs: keep at most this many clips (the first ones); >= 0.
      encoding: None or "wav" (the only encoding TensorBoard plays).
      description: Markdown shown in TensorBoard (kept from the first event).

    Returns:
      True if the clips were queued for writing, False if nothing is recording
      (then ``data`` is not even looked at).

    Raises:
      TypeError, ValueError: bad arguments (nothing is written).
      WriterClosedError, WriteFailedError: see :class:`~summarylib.SummaryWriter`.
    """
    sink = resolve(name, step, _CALLER)
    if sink is None:
        return False
    return write_audio(sink, data, sample_rate, max_outputs, encoding, description)


_CALLER = Caller("audio")


def write_audio(
    sink: Sink,
    data: Any,
    sample_rate: Any,
    max_outputs: int = 3,
    encoding: str | None = None,
    description: str | None = None,
    *,
    torch_form: bool = False,
) -> bool:
    """The core of :func:`audio`: write the clips to ``sink`` (same contract).

    ``torch_form``: write the first clip as torch's ``SummaryWriter`` does, a legacy
    ``Summary.Value.audio`` (``Summary.Audio``: rate, channels, frames, WAV,
    ``audio/wav``) without plugin metadata, instead of the ``audio`` plugin's tensor.
    """
    where = sink.caller.where
    md = None if torch_form else AUDIO.metadata_bytes(description, where)
    _check_encoding(encoding, where)
    rate = check_sample_rate(sample_rate, where)
    keep = 1 if torch_form else check_max_outputs(max_outputs, where)
    arg = sink.caller.data
    value = value_of(evaluate(data), defers_device_values(sink.writer),
                     lambda d: (prepare(d, keep, rate, where, arg), True),
                     partial(_check_device, keep, rate, where, arg))
    # On the device: the kept clips only cross, quantized on the writer thread.
    kept = value.map(partial(_kept_clips, keep)).keep()
    n = len(kept.read()) if kept.at_hand else keep  # host clips: free to read

    def make_tensor() -> bytes:
        return _encoded(kept.read(), rate, torch_form)

    return emit_value_deferred(sink, make_tensor, md, kept.nbytes + 48 * n + 32,
                               AUDIO_FIELD if torch_form else TENSOR_FIELD)


def _check_device(keep: int, rate: int, where: str, arg: str, shape: tuple[int, ...],
                  dtype: Any) -> None:
    # The op's checks of shape, dtype, channels and sizes (and its warning about a [t, c]
    # clip) on a stand-in of a device or traced array: no clip is kept, so nothing is
    # converted or read.
    prepare(stand_in(shape, dtype), 0, rate, where, arg)


def _kept_clips(keep: int, data: Any) -> Any:
    # A device array's kept clips, [n, t, c] as prepare() reshapes them (its warning
    # about a [t, c] clip was given by the check at the call).
    kept = data[:keep]
    return kept[:, :, None] if len(kept.shape) == 2 else kept


def _encoded(pcm: np.ndarray, rate: int, torch_form: bool) -> bytes:
    # The value's bytes: a Summary.Audio of the first clip, or the plugin's tensor.
    if torch_form:
        _, frames, channels = pcm.shape
        wav = wav_header(rate, channels, frames) + pcm[0].tobytes()
        return audio_proto_bytes(rate, channels, frames, wav)
    return string_tensor_bytes((len(pcm), 2), _tensor_values(pcm, rate))


def audio_pb(
    tag: str,
    data: Any,
    sample_rate: Any,
    max_outputs: int = 3,
    encoding: str | None = None,
    description: str | None = None,
) -> summary_pb2.Summary:
    """A ``Summary`` with one audio value, with metadata; no writer needed.

    Same data contract as :func:`audio`; ``tag`` is used as is (no name scope).
    """
    from summarylib.proto import summary_pb2, types_pb2

    tag = check_tag(tag, "audio_pb", "tag")
    AUDIO.metadata_bytes(description, "audio_pb")  # the same checks as audio()
    _check_encoding(encoding, "audio_pb")
    rate = check_sample_rate(sample_rate, "audio_pb")
    keep = check_max_outputs(max_outputs, "audio_pb")
    pcm = prepare(data, keep, rate, "audio_pb")
    summary = summary_pb2.Summary()
    v = summary.value.add()
    v.tag = tag
    v.tensor.dtype = types_pb2.DT_STRING
    v.tensor.tensor_shape.dim.add().size = len(pcm)
    v.tensor.tensor_shape.dim.add().size = 2
    v.tensor.string_val.extend(_tensor_values(pcm, rate))
    v.metadata.CopyFrom(create_summary_metadata(description))
    return summary

