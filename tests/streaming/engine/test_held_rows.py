"""Held events packed for the state store: every event comes back exactly, in order."""

from __future__ import annotations

import random
import zlib

import orjson
import pytest

from streaming.engine.held_rows import PART_BYTES, _joined, compressed, pack, pack_parts, unpack


def _rows() -> list[tuple[int, int, int, str, str]]:
    raws = [
        '{"type":"send","topic":"t-1"}',
        '{\n  "type": "heartbeat",\n  "topics": {}\n}',  # pretty-printed: raw newlines
        '{"detail":"caf\u00e9 \u6f22\u5b57 \U0001f680"}',  # characters of 2, 3 and 4 bytes
        "",
        '{"quote":"a \\"b\\" c"}',
    ]
    return [
        (1_000 + i, -1 if i % 2 else i, 7 + i, f'id-{i}"\u00e9', raw) for i, raw in enumerate(raws)
    ]


def test_packed_events_unpack_exactly_and_in_order() -> None:
    rows = _rows()
    assert unpack(pack(rows)) == rows
    assert unpack(pack([])) == []


def test_packing_is_much_smaller_than_the_json_form() -> None:
    raw = orjson.dumps({"type": "send", "cluster": "c", "topic": "t", "status": "SEND_OK"})
    rows = [(i, -1, i, f"e{i}", raw.decode()) for i in range(1_000)]
    assert len(pack(rows)) * 8 < len(orjson.dumps(rows))


def test_a_header_that_does_not_match_the_events_is_an_error() -> None:
    broken = compressed(_joined(_rows())[:-1])  # one character short
    with pytest.raises(ValueError, match="packed held events end at"):
        unpack(broken)


def test_events_held_in_the_zlib_form_of_before_unpack_exactly() -> None:
    rows = _rows()
    assert unpack(zlib.compress(_joined(rows), 1)) == rows


def _incompressible(n: int, size: int, seed: int = 1) -> list[tuple[int, int, int, str, str]]:
    rng = random.Random(seed)
    return [(1_000, -1, i, f"e{i}", rng.randbytes(size // 2).hex()) for i in range(n)]


def test_a_busy_second_is_packed_in_parts_of_at_most_the_part_size_in_order() -> None:
    rows = _incompressible(4_000, 400)  # 1.6 MB of characters that compress about 2:1
    parts = pack_parts(rows)

    assert len(parts) > 2
    assert all(len(part) <= PART_BYTES for part in parts)
    assert [row for part in parts for row in unpack(part)] == rows
    assert pack_parts(_rows()) == [pack(_rows())]  # a quiet second is one part
    assert pack_parts([]) == []


def test_an_event_larger_than_a_part_is_a_part_of_its_own() -> None:
    rows = _incompressible(3, 200) + _incompressible(1, 3 * PART_BYTES, seed=2)
    parts = pack_parts(rows, limit=PART_BYTES)

    assert [row for part in parts for row in unpack(part)] == rows
    assert unpack(parts[-1]) == rows[-1:] and len(parts[-1]) > PART_BYTES
    assert all(len(part) <= PART_BYTES for part in parts[:-1])
