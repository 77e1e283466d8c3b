"""The pickle-free wire format: round trips, and hostile messages are rejected."""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest

from graders.harness import protocol
from graders.harness.client import _BytesReader


def round_trip(obj):
    return protocol.read_message(0, _BytesReader(protocol.encode(obj)))


def test_values_round_trip():
    value = {
        "a": np.arange(6, dtype=np.float32).reshape(2, 3).T,  # non-contiguous
        "b": (1, 2.5, None, True, "x"),
        "c": [float("nan"), float("inf"), -float("inf")],
        "d": np.float64(3.0),
        "e": np.zeros((0, 3), np.int64),
    }
    back = round_trip(value)
    np.testing.assert_array_equal(back["a"], value["a"])
    assert back["a"].dtype == np.float32 and back["a"].flags.writeable
    assert back["b"] == value["b"]
    assert np.isnan(back["c"][0]) and back["c"][1:] == [float("inf"), -float("inf")]
    assert back["d"].dtype == np.float64 and back["d"].shape == ()
    assert back["e"].shape == (0, 3)


def test_objects_cannot_be_sent():
    with pytest.raises(protocol.ProtocolError):
        protocol.encode({"x": object()})
    with pytest.raises(protocol.ProtocolError):
        protocol.encode(np.array([object()], dtype=object))
    with pytest.raises(protocol.ProtocolError):
        protocol.encode({1: "non-string key"})


def _frame(body, buffers=()):
    header = json.dumps({"body": body, "buffers": [len(b) for b in buffers]}).encode()
    return protocol.MAGIC + struct.pack("<Q", len(header)) + header + b"".join(buffers)


@pytest.mark.parametrize("frame", [
    b"XXXX" + b"\0" * 8,
    _frame({"$nd": 0, "dtype": "object", "shape": [1]}, [b"12345678"]),
    _frame({"$nd": 0, "dtype": "float32", "shape": [3]}, [b"1234"]),
    _frame({"$nd": 5, "dtype": "float32", "shape": [1]}, [b"1234"]),
    _frame({"$float": "__import__('os')"}),
    protocol.MAGIC + struct.pack("<Q", protocol.MAX_HEADER_BYTES + 1),
])
def test_hostile_frames_are_rejected(frame):
    with pytest.raises(protocol.ProtocolError):
        protocol.read_message(0, _BytesReader(frame))


def test_truncated_frame_is_an_eof():
    data = protocol.encode({"x": np.ones(4)})
    with pytest.raises(EOFError):
        protocol.read_message(0, _BytesReader(data[:-3]))
