"""How the processor stores one second of held events: compact, compressed bytes.

The events held by the lateness bound are 2-3 s of a cluster's traffic, and every one is
written to the state store once and read back once. As a JSON array (the previous form) each
raw event was escaped and unescaped, and sent, pickled and kept in RocksDB at full size, as
text. Packed, the raw events are stored as they are, after a small header, and the whole is
compressed (zlib, level 1: event JSON compresses about 8:1 at a few ms per MB):

    zlib( header JSON "\\n" raw events, concatenated )

where the header is ``[[ts, seq, arrival, event_id, characters], ...]``, one entry per event,
in the order of the raw events.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable

import orjson

from streaming.engine.intake import Held

__all__ = ["pack", "unpack"]

LEVEL = 1


def pack(rows: Iterable[Held]) -> bytes:
    """Held events (``ts, seq, arrival, event_id, raw``) -> compressed bytes."""
    header = []
    raws = []
    for ts, seq, arrival, event_id, raw in rows:
        header.append((ts, seq, arrival, event_id, len(raw)))
        raws.append(raw)
    data = orjson.dumps(header) + b"\n" + "".join(raws).encode()
    return zlib.compress(data, LEVEL)


def unpack(blob: bytes) -> list[Held]:
    """Compressed bytes of :func:`pack` -> the held events, in the order they were packed."""
    data = zlib.decompress(blob)
    split = data.index(b"\n")  # (a JSON header has no raw newline)
    body = data[split + 1 :].decode()
    held = []
    at = 0
    for ts, seq, arrival, event_id, length in orjson.loads(data[:split]):
        held.append((ts, seq, arrival, event_id, body[at : at + length]))
        at += length
    if at != len(body):
        raise ValueError(f"packed held events end at {at} of {len(body)} characters")
    return held
