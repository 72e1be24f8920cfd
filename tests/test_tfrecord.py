"""TFRecord framing and masked CRC-32C, against the vectors of format.md §1.2."""

from __future__ import annotations

import struct

from hypothesis import given
from hypothesis import strategies as st

from summarylib.encoding import _tfrecord as records
from summarylib.encoding._events import file_version_event


def test_crc32c_check_value() -> None:
    assert records.crc32c(b"123456789") == 0xE3069283


def test_masked_crc_vectors() -> None:
    assert records.masked_crc32c(b"123456789") == 0xC78AB0E5
    assert records.masked_crc32c(b"") == 0xA282EAD8
    assert records.masked_crc32c(b"\x00" * 8) == 0x07980329


@given(st.integers(min_value=0, max_value=0xFFFFFFFF))
def test_unmask_inverts_mask(crc: int) -> None:
    assert records.unmask(records.mask(crc)) == crc


def test_first_event_record_matches_tensorflow_bytes() -> None:
    payload = file_version_event(1700000000.0, "tensorflow.core.util.events_writer")
    expected = bytes.fromhex(
        "3e00000000000000d9d240e7"
        "0900000040fc54d9411a0d627261696e2e4576656e743a32"
        "52240a2274656e736f72666c6f772e636f72652e7574696c2e6576656e74735f777269746572"
        "248c2258"
    )
    assert records.frame(payload) == expected


@given(st.lists(st.binary(max_size=300), max_size=20))
def test_frame_many_equals_concatenated_frames(payloads: list[bytes]) -> None:
    assert records.frame_many(payloads) == b"".join(records.frame(p) for p in payloads)


@given(st.binary(max_size=2000))
def test_frame_layout(payload: bytes) -> None:
    rec = records.frame(payload)
    assert len(rec) == len(payload) + 16
    (length,) = struct.unpack("<Q", rec[:8])
    assert length == len(payload)
    assert struct.unpack("<I", rec[8:12])[0] == records.masked_crc32c(rec[:8])
    assert rec[12:-4] == payload
    assert struct.unpack("<I", rec[-4:])[0] == records.masked_crc32c(payload)
