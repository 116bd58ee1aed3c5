"""Stage 1, read events: validate each line against the contract and give it its arrival order.

Input: one row per line with ``value`` (its bytes, or its text) and ``origin`` (where the line
came from, sortable: a file's modification time, path and block, or a Kafka partition and
offset). The lines of one origin reach a partition in order, so numbering them there gives each
line an ``arrival`` key that sorts in the order the lines arrived, whatever shuffles come later.

Validation is the contract's own (``routewatch.validation``), run in Python over Arrow batches,
so the Spark job and every other reader agree on what is bad input and why.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any
from urllib.parse import unquote, urlparse

import pyarrow as pa
import pyarrow.ipc as ipc
from pyspark.sql import DataFrame
from pyspark.sql.pandas.types import from_arrow_schema

from routewatch.codec import parse
from routewatch.validation import BadInput

__all__ = [
    "CHUNKS_SCHEMA",
    "EVENTS_SCHEMA",
    "pack_batches",
    "pack_events",
    "read_events",
    "unpack_chunks",
    "validate_batches",
]

# Each schema is written once, in Arrow (what the Python side builds and reads); Spark's is
# derived from it (``from_arrow_schema``).
_ARROW_SCHEMA = pa.schema(
    [
        ("value", pa.string()),
        ("arrival", pa.string()),
        ("cluster", pa.string()),
        ("type", pa.string()),
        ("ts", pa.int64()),
        ("seq", pa.int64()),
        ("event_id", pa.string()),
        ("reason", pa.string()),
        ("detail", pa.string()),
    ]
)
EVENTS_SCHEMA = from_arrow_schema(_ARROW_SCHEMA)


def validate_batches(
    batches: Iterator[pa.RecordBatch], by_event_time: bool = False
) -> Iterator[pa.RecordBatch]:
    """Validate ``(value, origin)`` batches of one partition; number lines in arrival order.

    With ``by_event_time``, the arrival key starts with the event's ``ts``, so that a batch's
    lines from several sources (Kafka partitions) interleave by event time.
    """
    row = 0
    for batch in batches:
        values = batch.column("value").to_pylist()
        origins = batch.column("origin").to_pylist()
        cols: dict[str, list[object]] = {name: [] for name in _ARROW_SCHEMA.names}
        for value, origin in zip(values, origins, strict=True):
            arrival = f"{origin}|{row:012d}"
            row += 1
            text, obj = _decode(value, origin)
            cols["value"].append(text)
            if isinstance(obj, BadInput):
                cols["arrival"].append(f"{0:015d}|{arrival}" if by_event_time else arrival)
                _bad(cols, obj)
                continue
            cols["arrival"].append(f"{obj['ts']:015d}|{arrival}" if by_event_time else arrival)
            cols["cluster"].append(obj["cluster"])
            cols["type"].append(obj["type"])
            cols["ts"].append(obj["ts"])
            cols["seq"].append(obj.get("seq"))
            cols["event_id"].append(obj["event_id"])
            cols["reason"].append(None)
            cols["detail"].append(None)
        yield pa.RecordBatch.from_pydict(cols, schema=_ARROW_SCHEMA)


def _decode(value: bytes | str, origin: str) -> tuple[str, dict[str, Any] | BadInput]:
    """A line's text and the event it holds, or why it is not one: input that is not UTF-8
    is bad input (``not_utf8``, naming where it came from), its text kept with each bad byte
    written as a backslash escape."""
    if isinstance(value, str):
        return value, parse(value)
    try:
        text = value.decode()
    except UnicodeDecodeError as exc:
        where = _where(origin)
        return value.decode("utf-8", "backslashreplace"), BadInput(
            "not_utf8",
            f"the input is not UTF-8 (byte 0x{value[exc.start]:02x} at position {exc.start} "
            f"is not valid there){where}",
        )
    return text, parse(text)


def _where(origin: str) -> str:
    """Where a line came from, for a sentence: its file, or its Kafka partition and offset."""
    parts = origin.split("|")
    if len(parts) == 3:
        return f", in {unquote(urlparse(parts[1]).path) or parts[1]}"
    if len(parts) == 2 and all(p.isdigit() for p in parts):
        return f", at Kafka partition {int(parts[0])}, offset {int(parts[1])}"
    return ""


def _bad(cols: dict[str, list[object]], bad: BadInput) -> None:
    cols["cluster"].append(bad.cluster)
    for name in ("type", "ts", "seq", "event_id"):
        cols[name].append(None)
    cols["reason"].append(bad.reason)
    cols["detail"].append(bad.detail)


def read_events(lines: DataFrame, *, by_event_time: bool = False) -> DataFrame:
    """``(value, origin)`` lines -> validated events with their arrival order.

    Valid events have ``reason`` null and their envelope in columns; bad input has ``reason``
    (one of ``routewatch.validation.BAD_INPUT_REASONS``) and ``detail`` set. ``by_event_time``:
    see :func:`validate_batches`.
    """
    validate_fn = functools.partial(validate_batches, by_event_time=by_event_time)
    return lines.select("value", "origin").mapInArrow(validate_fn, EVENTS_SCHEMA)


# Events packed for the stateful stage: one row per Arrow batch of events, the batch in Arrow's
# IPC stream format. The stage has one group (the stream's one clock), and PySpark regroups a
# group's rows one at a time in Python; a few packed rows per batch instead of one per event
# take that per-row cost off the one task that sees every event.
_CHUNKS_ARROW_SCHEMA = pa.schema([("events", pa.binary())])
CHUNKS_SCHEMA = from_arrow_schema(_CHUNKS_ARROW_SCHEMA)


def pack_batches(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Batches of events (:data:`EVENTS_SCHEMA`) -> one row each, the batch as Arrow IPC."""
    for batch in batches:
        if not batch.num_rows:
            continue
        sink = pa.BufferOutputStream()
        with ipc.new_stream(sink, batch.schema) as writer:
            writer.write_batch(batch)
        yield pa.RecordBatch.from_arrays(
            [pa.array([sink.getvalue().to_pybytes()], pa.binary())], schema=_CHUNKS_ARROW_SCHEMA
        )


def pack_events(events: DataFrame) -> DataFrame:
    """Validated events -> packed rows of :data:`CHUNKS_SCHEMA` (see :func:`unpack_chunks`)."""
    return events.select(*_ARROW_SCHEMA.names).mapInArrow(pack_batches, CHUNKS_SCHEMA)


def unpack_chunks(chunks: list[bytes]) -> pa.Table:
    """Packed rows -> the events they hold, in arrival order."""
    tables = [ipc.open_stream(pa.py_buffer(chunk)).read_all() for chunk in chunks]
    if not tables:
        return _ARROW_SCHEMA.empty_table()
    return pa.concat_tables(tables).sort_by("arrival")
