"""How the processor stores one second of held events: compact, compressed bytes.

The events held by the lateness bound are 2-3 s of a cluster's traffic, and every one is
written to the state store once and read back once. As a JSON array (the previous form) each
raw event was escaped and unescaped, and sent, pickled and kept in RocksDB at full size, as
text. Packed, the raw events are stored as they are, after a small header, and the whole is
compressed (zlib, level 1: event JSON compresses about 8:1 at a few ms per MB):

    zlib( header JSON "\\n" raw events, concatenated )

where the header is ``[[ts, seq, arrival, owner, characters], ...]``, one entry per event,
in the order of the raw events.

A second's events are stored in parts of at most :data:`PART_BYTES` compressed bytes
(:func:`pack_parts`), not as one value. Each value the stateful processor stores or reads is
copied several times in Spark's JVM on its way (the state server's protocol messages, the
pickled row it is answered in — where every byte of 0x80 or more becomes two — and RocksDB's
get and put), and G1 allocates an array of half a heap region or more (512 KB with the 1 MB
regions of a heap under 4 GiB) as humongous, outside its young generation, where each such
allocation can start a concurrent collection cycle. A busy second of the reference fleet
packs to about 0.5 MB; at four times real time its copies started most of the JVM's cycles
(docs/performance-notes.md).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Sequence

import orjson

from streaming.engine.intake import Held

__all__ = ["PART_BYTES", "pack", "pack_parts", "unpack"]

LEVEL = 1
# the largest part, compressed (unless one event alone is larger): twice it, as pickled, stays
# under half of G1's smallest region
PART_BYTES = 192 * 1024
# the raw characters packed into one part before it is compressed and measured (event JSON
# compresses about 8:1, so a part is then about 100 KB; a part that comes out larger than
# PART_BYTES is packed again in halves)
_RAW_PER_PART = 6 * PART_BYTES


def pack(rows: Iterable[Held]) -> bytes:
    """Held events (``ts, seq, arrival, owner, raw``) -> compressed bytes."""
    header = []
    raws = []
    for ts, seq, arrival, owner, raw in rows:
        header.append((ts, seq, arrival, owner, len(raw)))
        raws.append(raw)
    data = orjson.dumps(header) + b"\n" + "".join(raws).encode()
    return zlib.compress(data, LEVEL)


def pack_parts(rows: Sequence[Held], limit: int = PART_BYTES) -> list[bytes]:
    """Held events, in order -> :func:`pack`'s parts, in order, each at most ``limit``
    compressed bytes unless it is a single event."""
    parts: list[bytes] = []

    def add(run: Sequence[Held]) -> None:
        blob = pack(run)
        if len(blob) > limit and len(run) > 1:
            half = len(run) // 2
            add(run[:half])
            add(run[half:])
        else:
            parts.append(blob)

    start, size = 0, 0
    for i, row in enumerate(rows):
        if i > start and size + len(row[4]) > _RAW_PER_PART:
            add(rows[start:i])
            start, size = i, 0
        size += len(row[4])
    if start < len(rows):
        add(rows[start:])
    return parts


def unpack(blob: bytes) -> list[Held]:
    """Compressed bytes of :func:`pack` -> the held events, in the order they were packed."""
    data = zlib.decompress(blob)
    split = data.index(b"\n")  # (a JSON header has no raw newline)
    body = data[split + 1 :].decode()
    held = []
    at = 0
    for ts, seq, arrival, owner, length in orjson.loads(data[:split]):
        held.append((ts, seq, arrival, owner, body[at : at + length]))
        at += length
    if at != len(body):
        raise ValueError(f"packed held events end at {at} of {len(body)} characters")
    return held
