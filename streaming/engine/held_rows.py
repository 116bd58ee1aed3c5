"""How the processor stores one second of held events: compact, compressed bytes.

The events held by the lateness bound are 2-3 s of a cluster's traffic, and every one is
written to the state store once and read back once. As a JSON array (the previous form) each
raw event was escaped and unescaped, and sent, pickled and kept in RocksDB at full size, as
text. Packed, the raw events are stored as they are, after a small header, and the whole is
compressed with Zstandard (pyarrow's, level 1), its length after it:

    zstd( header JSON "\\n" raw events, concatenated ) + that length (8 bytes, little-endian)

where the header is ``[[ts, seq, arrival, owner, characters], ...]``, one entry per event,
in the order of the raw events. Held registrations are most of the bytes, and their topic
tables repeat themselves: one state bucket's 10 s of the reference fleet's registrations
(60 MB) compress 57:1 in 0.026 s and decompress in 0.031 s, where zlib at level 1 — the form
before 2026-12-06, which :func:`unpack` still reads, so that a checkpoint's held events
survive the upgrade — took 0.11 s each way for 24:1 (docs/performance-notes.md).

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
import pyarrow as pa

from streaming.engine.intake import Held

__all__ = ["PART_BYTES", "compressed", "decompressed", "pack", "pack_parts", "unpack"]

_CODEC = "zstd"  # (pyarrow's default level for it: 1)
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"  # every Zstandard frame's first bytes (no zlib stream's)
_LENGTH = 8  # the bytes of the decompressed length, after the frame
# the largest part, compressed (unless one event alone is larger): twice it, as pickled, stays
# under half of G1's smallest region
PART_BYTES = 192 * 1024
# the raw characters packed into one part before it is compressed and measured (event JSON
# compresses about 8:1, so a part is then about 100 KB; a part that comes out larger than
# PART_BYTES is packed again in halves)
_RAW_PER_PART = 6 * PART_BYTES


def pack(rows: Iterable[Held]) -> bytes:
    """Held events (``ts, seq, arrival, owner, raw``) -> compressed bytes."""
    return compressed(_joined(rows))


def _joined(rows: Iterable[Held]) -> bytes:
    """Held events -> what :func:`pack` compresses: their header, a newline, the raw events."""
    header = []
    raws = []
    for ts, seq, arrival, owner, raw in rows:
        header.append((ts, seq, arrival, owner, len(raw)))
        raws.append(raw)
    return orjson.dumps(header) + b"\n" + "".join(raws).encode()


def compressed(data: bytes) -> bytes:
    """Bytes -> a Zstandard frame and the length they had (what :func:`decompressed` reads)."""
    frame: bytes = pa.compress(data, codec=_CODEC, asbytes=True)
    return frame + len(data).to_bytes(_LENGTH, "little")


def decompressed(blob: bytes) -> bytes:
    """:func:`compressed`'s bytes (or a zlib stream) -> the bytes they hold."""
    if not blob.startswith(_ZSTD_MAGIC):  # (zlib: held events stored before 2026-12-06)
        return zlib.decompress(blob)
    size = int.from_bytes(blob[-_LENGTH:], "little")
    data: bytes = pa.decompress(blob[:-_LENGTH], size, codec=_CODEC, asbytes=True)
    return data


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
    data = decompressed(blob)
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
