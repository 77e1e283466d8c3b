"""The pickle-free wire format between grader and worker.

A message is one frame: ``MAGIC``, the byte length of a JSON header, the header, then the
raw bytes of each array the header refers to. Arrays are encoded as
``{"$nd": i, "dtype": name, "shape": [...]}`` pointing at buffer ``i``; tuples as
``{"$tuple": [...]}``. Decoding accepts only plain numeric dtypes and checks every buffer's
size against its shape, so a hostile worker can send bad data but never code.
Only NumPy is needed here: both sides import this module.
"""

from __future__ import annotations

import json
import math
import os
import struct
from typing import Any

import numpy as np

MAGIC = b"TTP1"
_LEN = struct.Struct("<Q")
# Caps on a message, applied when it is read (the grader reading the worker's replies).
# Measured over a full grading of the reference (553 tests), with the default profile and
# with --profile thorough alike: the largest reply 0.96 MB with a 21.9 KB JSON header, the
# largest request 0.32 MB with an 8.0 KB header. The caps leave 16x and 48x of room; a
# worker announcing more is cut off after its header, before anything else is read.
MAX_HEADER_BYTES = 1 << 20
MAX_FRAME_BYTES = 16 << 20

ALLOWED_DTYPES = frozenset(
    ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
     "float16", "float32", "float64", "bfloat16"]
)


class ProtocolError(Exception):
    """A malformed, oversized or truncated message."""


def _np_dtype(name: str) -> np.dtype:
    if name not in ALLOWED_DTYPES:
        raise ProtocolError(f"dtype {name!r} is not allowed on the wire")
    if name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def encode(obj: Any) -> bytes:
    """Serialise a tree of None/bool/int/float/str/list/tuple/dict[str]/ndarray."""
    buffers: list[bytes] = []

    def walk(x: Any) -> Any:
        if isinstance(x, np.generic):  # before float: np.float64 is a float subclass
            x = np.asarray(x)
        if x is None or isinstance(x, (bool, str)):
            return x
        if isinstance(x, int):
            return int(x)
        if isinstance(x, float):
            if math.isfinite(x):
                return x
            return {"$float": repr(x)}
        if isinstance(x, np.ndarray):
            name = x.dtype.name
            if name not in ALLOWED_DTYPES:
                raise ProtocolError(f"cannot send an array of dtype {name}")
            buffers.append(np.ascontiguousarray(x).tobytes())
            return {"$nd": len(buffers) - 1, "dtype": name, "shape": list(x.shape)}
        if isinstance(x, tuple):
            return {"$tuple": [walk(v) for v in x]}
        if isinstance(x, list):
            return [walk(v) for v in x]
        if isinstance(x, dict):
            out = {}
            for k, v in x.items():
                if not isinstance(k, str) or k.startswith("$"):
                    raise ProtocolError(f"dict keys must be plain strings, got {k!r}")
                out[k] = walk(v)
            return out
        raise ProtocolError(f"cannot send a value of type {type(x).__name__}")

    body = walk(obj)
    header = json.dumps(
        {"body": body, "buffers": [len(b) for b in buffers]}, allow_nan=False
    ).encode()
    return b"".join([MAGIC, _LEN.pack(len(header)), header, *buffers])


def decode_header(header: bytes) -> tuple[Any, list[int]]:
    try:
        parsed = json.loads(header)
        body, sizes = parsed["body"], parsed["buffers"]
    except (ValueError, KeyError, TypeError) as exc:
        raise ProtocolError(f"bad header: {exc}") from None
    if not isinstance(sizes, list) or not all(isinstance(n, int) and n >= 0 for n in sizes):
        raise ProtocolError("bad buffer table")
    if sum(sizes) > MAX_FRAME_BYTES:
        raise ProtocolError("message too large")
    return body, sizes


def rebuild(body: Any, buffers: list[bytes]) -> Any:
    """Turn a decoded header body back into values, checking every array."""

    def walk(x: Any) -> Any:
        if isinstance(x, list):
            return [walk(v) for v in x]
        if not isinstance(x, dict):
            return x
        if "$nd" in x:
            dtype = _np_dtype(x.get("dtype"))
            shape = x.get("shape")
            index = x["$nd"]
            if not isinstance(index, int) or not 0 <= index < len(buffers):
                raise ProtocolError("bad buffer index")
            if not isinstance(shape, list) or not all(isinstance(n, int) and n >= 0 for n in shape):
                raise ProtocolError("bad shape")
            raw = buffers[index]
            if math.prod(shape) * dtype.itemsize != len(raw):
                raise ProtocolError("array size does not match its shape")
            return np.frombuffer(raw, dtype=dtype).reshape(shape).copy()
        if "$tuple" in x:
            return tuple(walk(v) for v in x["$tuple"])
        if "$float" in x:
            text = x["$float"]
            if text not in ("nan", "inf", "-inf"):
                raise ProtocolError("bad float")
            return float(text)
        return {k: walk(v) for k, v in x.items()}

    return walk(body)


def write_message(fd: int, obj: Any) -> None:
    """Encode ``obj`` and write it whole to file descriptor ``fd``."""
    data = memoryview(encode(obj))
    while data:
        written = os.write(fd, data)
        data = data[written:]


def read_exact(fd: int, n: int) -> bytes:
    """Read exactly ``n`` bytes (blocking); EOFError if the other side closed."""
    chunks = []
    while n:
        chunk = os.read(fd, min(n, 1 << 20))
        if not chunk:
            raise EOFError("the other side closed the pipe")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def read_message(fd: int, read: Any = None) -> Any:
    """Read one message from ``fd``; ``read(fd, n)`` can be swapped for a deadline-aware
    reader."""
    read = read or read_exact
    head = read(fd, len(MAGIC) + _LEN.size)
    if head[: len(MAGIC)] != MAGIC:
        raise ProtocolError("bad magic: the stream is out of sync")
    (header_len,) = _LEN.unpack(head[len(MAGIC) :])
    if header_len > MAX_HEADER_BYTES:
        raise ProtocolError("header too large")
    body, sizes = decode_header(read(fd, header_len))
    buffers = [read(fd, n) for n in sizes]
    return rebuild(body, buffers)
