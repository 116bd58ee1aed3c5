"""Stage 1, read events: validate each line against the contract and give it its arrival order.

Input: one row per line with ``value`` (its bytes, or its text) and ``origin`` (where the line
came from, sortable: a file's modification time, path and block, or a Kafka partition and
offset) — or rows that a ``lines_of`` function turns into such lines in the stage's own Python
(the spool's files, read by ``streaming.sources.spool.read_lines``). The lines of one origin
reach a partition in order, so numbering them there gives each line an ``arrival`` key that
sorts in the order the lines arrived, whatever shuffles come later.

The stream's clock travels with the events (``streaming.engine.clock``): the lines of one origin
in a partition are a *block* — with ``by_event_time``, the whole partition is one — and the
stage gives each valid event the largest ``ts`` before it in its block (``prior``) and adds one
summary row per block (``value`` null; ``arrival``: the block's last valid event's; ``ts``: its
largest), which every state bucket receives. Each valid event's ``topic`` (of a send, a route
pull, a proxy's route miss) says which of its cluster's shards apply it
(``streaming.engine.shards``).

Validation is the contract's own (``routewatch.validation``), run in Python over Arrow batches,
so the Spark job and every other reader agree on what is bad input and why.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlparse

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc
from pyspark import TaskContext
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema

from routewatch.validation import BadInput
from streaming.engine.compact import shipped
from streaming.engine.shards import OWNED_BY_HEAD, TOPIC_EVENTS, TOPIC_TYPES, shard_of
from streaming.stages.known_tables import DEFAULT_LIMIT, KNOWN_TABLES

__all__ = [
    "CHUNKS_SCHEMA",
    "EVENTS_SCHEMA",
    "EVERY_BUCKET",
    "LINES_READ",
    "READ_METRICS",
    "TABLES_BY_REFERENCE",
    "LinesOf",
    "counting_lines",
    "line_text",
    "pack_batches",
    "pack_events",
    "read_events",
    "read_packed",
    "unpack_chunks",
    "unpack_columns",
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
        ("topic", pa.string()),
        ("ts", pa.int64()),
        ("seq", pa.int64()),
        ("event_id", pa.string()),
        ("reason", pa.string()),
        ("detail", pa.string()),
        ("prior", pa.int64()),
        ("held", pa.string()),
        ("table", pa.string()),
    ]
)
EVENTS_SCHEMA = from_arrow_schema(_ARROW_SCHEMA)


class _Blocks:
    """The blocks of one partition's arrivals as they pass: each valid event's prior, and each
    block's summary once it has ended."""

    def __init__(self, by_event_time: bool) -> None:
        self.by_event_time = by_event_time
        self.origin: str | None = None
        self.end: str | None = None  # the arrival key of the block's last valid event
        self.max_ts: int | None = None
        self.ended: list[tuple[str, int]] = []

    def event(self, origin: str, arrival: str, ts: int) -> int | None:
        """A valid event of ``origin`` -> its prior in its block."""
        if origin != self.origin and not self.by_event_time:
            self.close()
            self.origin = origin
        prior = None if self.by_event_time else self.max_ts
        if self.max_ts is None or ts > self.max_ts:
            self.max_ts = ts
        if self.end is None or arrival > self.end:
            self.end = arrival
        return prior

    def close(self) -> None:
        if self.end is not None and self.max_ts is not None:
            self.ended.append((self.end, self.max_ts))
        self.end = self.max_ts = None


def validate_batches(
    batches: Iterator[pa.RecordBatch],
    by_event_time: bool = False,
    shipping: tuple[str, int] | None = None,
) -> Iterator[pa.RecordBatch]:
    """Validate ``(value, origin)`` batches of one partition; number lines in arrival order;
    give valid events their prior and each block its summary row (after its last line's batch,
    or in the partition's last batch).

    With ``by_event_time``, the arrival key starts with the event's ``ts``, so that a batch's
    lines from several sources (Kafka partitions) interleave by event time. A batch may have a
    ``damage`` column: a row where it is set stands for a file that could not be read to its
    end (its ``value``: the file's path), bad input ``corrupt_file`` with that detail.

    ``shipping``: the query's run and micro-batch, in a streaming query: a registration whose
    table this worker shipped whole in an earlier batch of the run is shipped by reference
    (``streaming.engine.shipped_tables``), and every table the worker keeps is shipped with its
    digest in ``table``.
    """
    row = 0
    blocks = _Blocks(by_event_time)
    pending: dict[str, list[object]] | None = None
    for batch in batches:
        if pending is not None:
            yield pa.RecordBatch.from_pydict(pending, schema=_ARROW_SCHEMA)
        values = batch.column("value").to_pylist()
        origins = batch.column("origin").to_pylist()
        if "damage" in batch.schema.names and batch.column("damage").null_count < len(values):
            damages = batch.column("damage").to_pylist()
            values = [
                v if d is None else _Damaged(v, d) for v, d in zip(values, damages, strict=True)
            ]
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
            if by_event_time:
                arrival = f"{obj['ts']:015d}|{arrival}"
            cols["arrival"].append(arrival)
            cols["cluster"].append(obj["cluster"])
            cols["type"].append(obj["type"])
            cols["topic"].append(obj["topic"] if obj["type"] in TOPIC_TYPES else None)
            cols["ts"].append(obj["ts"])
            cols["seq"].append(obj.get("seq"))
            cols["event_id"].append(obj["event_id"])
            cols["reason"].append(None)
            cols["detail"].append(None)
            cols["prior"].append(blocks.event(origin, arrival, obj["ts"]))
            form = shipped(obj, text)
            cols["held"].append(form)
            if shipping is None or form is None:
                cols["table"].append(None)
            else:
                cols["value"][-1], table = KNOWN_TABLES.ship(text, obj, form, shipping)
                cols["table"].append(table)
        _summaries(cols, blocks)
        pending = cols
    blocks.close()
    if pending is None:
        pending = {name: [] for name in _ARROW_SCHEMA.names}
    _summaries(pending, blocks)
    if pending["value"]:
        yield pa.RecordBatch.from_pydict(pending, schema=_ARROW_SCHEMA)


def _summaries(cols: dict[str, list[object]], blocks: _Blocks) -> None:
    """The summary rows of the blocks ended so far, added to ``cols``."""
    for end, max_ts in blocks.ended:
        for name in _ARROW_SCHEMA.names:
            cols[name].append(None)
        cols["arrival"][-1] = end
        cols["ts"][-1] = max_ts
    blocks.ended.clear()


@dataclass(frozen=True, slots=True)
class _Damaged:
    """The row that stands for a file the source could not read to its end: its path, and why
    (``streaming.sources.spool``)."""

    path: bytes
    detail: str


def _decode(value: bytes | str | _Damaged, origin: str) -> tuple[str, dict[str, Any] | BadInput]:
    """A line's text and the event it holds, or why it is not one: input that is not UTF-8
    is bad input (``not_utf8``, naming where it came from), its text kept with each bad byte
    written as a backslash escape; a file that could not be read to its end, ``corrupt_file``
    with its path as the text. A registration whose topic table was validated before has
    its table left out of the event (``streaming.stages.known_tables``): the stage reads only
    the envelope."""
    if isinstance(value, str):
        return value, KNOWN_TABLES.parse(value)
    if isinstance(value, _Damaged):
        return value.path.decode(errors="backslashreplace"), BadInput("corrupt_file", value.detail)
    text, bad = line_text(value, origin)
    return text, bad if bad is not None else KNOWN_TABLES.parse(text)


def line_text(value: bytes, origin: str) -> tuple[str, BadInput | None]:
    """A line's bytes as text, and why it is bad input if it is not UTF-8 (``not_utf8``, naming
    where it came from; each bad byte written as a backslash escape)."""
    try:
        return value.decode(), None
    except UnicodeDecodeError as exc:
        return value.decode("utf-8", "backslashreplace"), BadInput(
            "not_utf8",
            f"the input is not UTF-8 (byte 0x{value[exc.start]:02x} at position {exc.start} "
            f"is not valid there){_where(origin)}",
        )


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
    for name in ("type", "topic", "ts", "seq", "event_id", "prior", "held", "table"):
        cols[name].append(None)
    cols["reason"].append(bad.reason)
    cols["detail"].append(bad.detail)


# What turns the batches of a source's rows into batches of lines, ``(value, origin)`` (and
# ``damage``: see :func:`validate_batches`), in the read stage's Python — for the spool, whose
# rows are files: ``streaming.sources.spool.read_lines``. None: the rows are lines already.
LinesOf = Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]


def _input(rows: DataFrame, lines_of: LinesOf | None) -> DataFrame:
    return rows if lines_of is not None else rows.select("value", "origin")


def _validated(
    batches: Iterator[pa.RecordBatch],
    by_event_time: bool,
    lines_of: LinesOf | None,
    shipping: tuple[str, int] | None = None,
    known_tables_bytes: int = DEFAULT_LIMIT,
) -> Iterator[pa.RecordBatch]:
    KNOWN_TABLES.bound(known_tables_bytes)  # (a worker runs the tasks of many queries)
    lines = batches if lines_of is None else lines_of(batches)
    return validate_batches(lines, by_event_time, shipping)


def _shipping() -> tuple[str, int] | None:
    """The streaming query's run and micro-batch this task is part of (Spark's local properties
    of the job; None outside a streaming query): what shipping a table by reference relies on
    (``streaming.engine.shipped_tables``)."""
    context = TaskContext.get()
    if context is None:
        return None
    batch = context.getLocalProperty(BATCH_ID)
    run = context.getLocalProperty(RUN_ID)
    return None if batch is None or run is None else (run, int(batch))


# Spark's local properties of a micro-batch's jobs: its id (MicroBatchExecution.BATCH_ID_KEY)
# and the job group, the query run's id (StreamExecution runs each batch's jobs in it)
BATCH_ID = "streaming.sql.batchId"
RUN_ID = "spark.jobGroup.id"


def read_events(
    lines: DataFrame, *, by_event_time: bool = False, lines_of: LinesOf | None = None
) -> DataFrame:
    """``(value, origin)`` lines (or rows that ``lines_of`` makes lines of) -> validated events
    with their arrival order.

    Valid events have ``reason`` null and their envelope in columns; bad input has ``reason``
    (one of ``routewatch.validation.BAD_INPUT_REASONS``) and ``detail`` set. ``by_event_time``:
    see :func:`validate_batches`.
    """
    validate_fn = functools.partial(_validated, by_event_time=by_event_time, lines_of=lines_of)
    return _input(lines, lines_of).mapInArrow(validate_fn, EVENTS_SCHEMA)


# Events packed for the stateful stage: per Arrow batch, rows of each state bucket's events (and
# every block summary) in Arrow's IPC stream format, under the bucket's grouping key, each with
# ``owner``: the bucket that counts the event and reports it if late or a duplicate (-1: a block
# summary, every bucket's). PySpark regroups a group's rows one at a time in Python; a few
# packed rows per batch instead of one per event take that per-row cost off the stateful tasks.
# An event that several buckets apply (a registration: every shard of its cluster) is packed
# once, in a row whose bytes each of them receives.
# ``lines``: the input lines the rows of one Arrow batch were read from, on its first row (0 on
# the others), summed per micro-batch into its progress (:data:`READ_METRICS`): the spool's
# source rows are files, so Spark's ``numInputRows`` counts files there. ``by_reference``, the
# same way: the registrations among them shipped without their table's text
# (``streaming.engine.shipped_tables``).
_CHUNKS_ARROW_SCHEMA = pa.schema(
    [
        ("bucket", pa.int32()),
        ("events", pa.binary()),
        ("lines", pa.int64()),
        ("by_reference", pa.int64()),
    ]
)
CHUNKS_SCHEMA = from_arrow_schema(_CHUNKS_ARROW_SCHEMA)
_OWNER = pa.field("owner", pa.int32())
EVERY_BUCKET = -1  # (a block summary's owner)


# A packed row's buffers are compressed with LZ4 (Arrow IPC's buffer compression; a reader
# decompresses them without being told). The rows are mostly registrations, whose topic tables
# repeat themselves: the reference fleet's packed bytes shrink about seven times (68 MB to
# 10 MB for one bucket's 10 s of traffic), and the JVM copies, shuffles and hands to Python that
# much less. Measured on the fleet at capacity (benchmarks.stage_profile, runs alternating
# without and with it, 2 partitions): the stateful stage about a fifth shorter against the same
# read stage, its JVM threads' cores halved, a batch about a tenth shorter — for about 0.08 s of
# compressing in the read stage's Python and 0.06 s of decompressing in the stateful task's,
# per 62,000 events (docs/performance-notes.md, 2026-12-05).
_IPC_OPTIONS = ipc.IpcWriteOptions(compression="lz4")


def _ipc(batch: pa.RecordBatch) -> bytes:
    sink = pa.BufferOutputStream()
    with ipc.new_stream(sink, batch.schema, options=_IPC_OPTIONS) as writer:
        writer.write_batch(batch)
    return bytes(sink.getvalue().to_pybytes())


# The largest packed row, in bytes of events before compression (an event larger than this is
# a row of its own).
# Every packed row is one byte array in Spark's JVM, copied as it goes (from Arrow into a row,
# through the shuffle, into the stateful operator's Arrow batches); G1 allocates an array of
# half a heap region or more (512 KB with 1 MB regions, a heap under 4 GiB) as "humongous",
# outside its young generation, and each such allocation can start a concurrent collection
# cycle: with a row per bucket and input batch (megabytes each) the JVM ran one every 1-2 s
# (docs/performance-notes.md).
CHUNK_BYTES = 256 * 1024


def _by_size(indices: np.ndarray, sizes: np.ndarray, limit: int) -> Iterator[np.ndarray]:
    """``indices`` in order, in runs whose ``sizes`` add up to at most ``limit`` (a run of one
    when a single size is larger): each run is as long as it can be, found by a binary search
    in the running total rather than a step per row."""
    total = np.cumsum(sizes[indices])
    start, base = 0, 0
    while start < len(indices):
        end = max(int(np.searchsorted(total, base + limit, side="right")), start + 1)
        yield indices[start:end]
        base, start = int(total[end - 1]), end


def _sizes(batch: pa.RecordBatch) -> np.ndarray:
    """Each row's bytes of text: its raw line and its held form."""

    def length(name: str) -> pa.Array:
        return pc.fill_null(pc.binary_length(batch.column(name)), 0)

    return np.asarray(pc.add(length("value"), length("held")), dtype=np.int64)


def _crc_of(column: pa.Array, shards: int) -> np.ndarray:
    """Each row's name's CRC-32 modulo ``shards``, found once per distinct name of the column
    (a null: -1)."""
    encoded = pc.dictionary_encode(column)
    names = encoded.dictionary.to_pylist()
    of_name = np.array([shard_of(name, shards) for name in names] + [-1], dtype=np.int64)
    # (a null points past the names, at the -1 appended)
    codes = np.asarray(pc.fill_null(encoded.indices, len(names)), dtype=np.int64)
    return of_name[codes]


def _in(column: pa.Array, values: frozenset[str]) -> np.ndarray:
    """Whether each row's value is one of ``values`` (a null: no)."""
    found = pc.is_in(column, value_set=pa.array(sorted(values), pa.string()))
    return np.asarray(pc.fill_null(found, False), dtype=bool)


def _destinations(batch: pa.RecordBatch, n: int, shards: int) -> tuple[np.ndarray, np.ndarray]:
    """Each row's owner — the state bucket where the cluster shard that owns it lives
    (:func:`streaming.engine.shards.shard_bucket`; a block summary: :data:`EVERY_BUCKET`) — and
    where it goes, as a *destination*: a bucket (0 to ``n - 1``: the owner's alone), every
    bucket (-1: a block summary, or an event every shard applies when each cluster has a shard
    in every bucket), or ``n + base``: the buckets of the shards of a cluster whose head shard
    is in bucket ``base``, when there are fewer shards than buckets."""
    base = _crc_of(batch.column("cluster"), n)  # the cluster's head shard's bucket; -1: none
    topic_shard = _crc_of(batch.column("topic"), shards)
    kind = batch.column("type")
    valid = np.asarray(pc.is_valid(kind), dtype=bool)
    summary = np.asarray(pc.is_null(batch.column("value")), dtype=bool)
    by_topic = _in(kind, TOPIC_EVENTS) & (topic_shard >= 0)
    owner_shard = np.where(_in(kind, OWNED_BY_HEAD) | (topic_shard < 0), 0, topic_shard)
    owner = np.where(base < 0, 0, (np.maximum(base, 0) + np.where(valid, owner_shard, 0)) % n)
    every_shard = valid & ~by_topic
    spread = EVERY_BUCKET if shards >= n else n + np.maximum(base, 0)
    destination = np.where(every_shard, spread, owner)
    destination[summary] = EVERY_BUCKET
    owner[summary] = EVERY_BUCKET
    return owner, destination


def _buckets(destination: int, n: int, shards: int) -> range | list[int]:
    """The buckets a destination of :func:`_destinations` stands for, in order."""
    if destination == EVERY_BUCKET:
        return range(n)
    if destination < n:
        return [destination]
    return sorted({(destination - n + shard) % n for shard in range(shards)})


def pack_batches(
    batches: Iterator[pa.RecordBatch],
    keys: list[int],
    chunk_bytes: int = CHUNK_BYTES,
    shards: int | None = None,
) -> Iterator[pa.RecordBatch]:
    """Batches of events (:data:`EVENTS_SCHEMA`) -> rows per state bucket: the events its
    cluster shards apply (:mod:`streaming.engine.shards`, ``shards`` per cluster, as many as
    buckets by default; bad input naming no cluster: bucket 0) and every block summary, as
    Arrow IPC with an ``owner`` column (the bucket that counts the event, and reports it if
    late or a duplicate; -1 for a block summary), under ``keys[bucket]``, each row about
    ``chunk_bytes`` of events at most (:data:`CHUNK_BYTES`; :func:`unpack_chunks` puts a
    bucket's rows back in arrival order). Events that go to several buckets are packed once,
    in rows that each of those buckets receives."""
    n = len(keys)
    shards = shards or n
    for batch in batches:
        if not batch.num_rows:
            continue
        sizes = _sizes(batch)
        owner, destination = _destinations(batch, n, shards)
        out_keys, blobs = [], []
        for goes_to in np.unique(destination).tolist():
            indices = np.flatnonzero(destination == goes_to)
            buckets = _buckets(goes_to, n, shards)
            for run in _by_size(indices, sizes, chunk_bytes):
                taken = pa.array(run, pa.int32())
                part = batch.take(taken).append_column(_OWNER, pa.array(owner[run], pa.int32()))
                blob = _ipc(part)
                for bucket in buckets:
                    out_keys.append(keys[bucket])
                    blobs.append(blob)
        lines = [0] * len(blobs)
        referred = [0] * len(blobs)
        if lines:  # (every row of input but the block summaries, which the stage added)
            lines[0] = batch.num_rows - batch.column("value").null_count
            referred[0] = _by_reference(batch)
        yield pa.RecordBatch.from_arrays(
            [
                pa.array(out_keys, pa.int32()),
                pa.array(blobs, pa.binary()),
                pa.array(lines, pa.int64()),
                pa.array(referred, pa.int64()),
            ],
            schema=_CHUNKS_ARROW_SCHEMA,
        )


def _by_reference(batch: pa.RecordBatch) -> int:
    """The registrations of a batch shipped by reference (a ``table`` column with a digest
    alone: one shipped whole also says where its text is)."""
    if "table" not in batch.schema.names:
        return 0
    table = batch.column("table")
    return int(pc.sum(pc.invert(pc.match_substring(table.drop_null(), ":"))).as_py() or 0)


def pack_events(events: DataFrame, keys: list[int], shards: int | None = None) -> DataFrame:
    """Validated events -> packed rows of :data:`CHUNKS_SCHEMA` (see :func:`unpack_chunks`),
    one state bucket per key of ``keys``, ``shards`` per cluster (as many as buckets by
    default)."""
    pack = functools.partial(pack_batches, keys=keys, shards=shards)
    return events.select(*_ARROW_SCHEMA.names).mapInArrow(pack, CHUNKS_SCHEMA)


def _validate_and_pack(
    batches: Iterator[pa.RecordBatch],
    keys: list[int],
    shards: int | None,
    by_event_time: bool,
    lines_of: LinesOf | None,
    known_tables_bytes: int,
) -> Iterator[pa.RecordBatch]:
    validated = _validated(batches, by_event_time, lines_of, _shipping(), known_tables_bytes)
    return pack_batches(validated, keys, shards=shards)


def read_packed(
    lines: DataFrame,
    keys: list[int],
    shards: int | None = None,
    *,
    by_event_time: bool = False,
    lines_of: LinesOf | None = None,
    known_tables_bytes: int = DEFAULT_LIMIT,
) -> DataFrame:
    """``(value, origin)`` lines (or rows that ``lines_of`` makes lines of) -> validated events
    packed for the state buckets of ``keys`` (:func:`read_events`, then :func:`pack_events`),
    in one pass over each batch: one Python worker and one trip of the events between Spark's
    JVM and Python instead of two. Each worker keeps the topic tables it has validated up to
    ``known_tables_bytes`` (:mod:`streaming.stages.known_tables`)."""
    run = functools.partial(
        _validate_and_pack,
        keys=keys,
        shards=shards,
        by_event_time=by_event_time,
        lines_of=lines_of,
        known_tables_bytes=known_tables_bytes,
    )
    return _input(lines, lines_of).mapInArrow(run, CHUNKS_SCHEMA)


# the name of the read stage's metrics in a micro-batch's progress (``observedMetrics``), and
# of its figures: the lines (Kafka records) the batch read, and the registrations among them
# shipped by reference
READ_METRICS = "read"
LINES_READ = "lines"
TABLES_BY_REFERENCE = "tables_by_reference"


def counting_lines(packed: DataFrame) -> DataFrame:
    """Packed rows that report the lines their batch read in its progress (:data:`READ_METRICS`:
    ``{"lines": n}``, Spark's observed metrics)."""
    return packed.observe(
        READ_METRICS,
        F.sum("lines").alias(LINES_READ),
        F.sum("by_reference").alias(TABLES_BY_REFERENCE),
    )


def unpack_chunks(chunks: list[bytes]) -> pa.Table:
    """Packed rows -> the events they hold, in arrival order."""
    table = _unpacked(chunks)
    return table.take(_arrival_order(table))


def unpack_columns(chunks: list[bytes], names: list[str]) -> dict[str, list[Any]]:
    """Packed rows -> the columns ``names`` of the events they hold, as Python lists in arrival
    order (:func:`unpack_chunks`'s rows, column by column). The rows are put in order as lists
    of Python values: taking every column of a bucket's batch in Arrow (its raw lines, tens of
    megabytes) cost the stateful task several times more (docs/performance-notes.md)."""
    table = _unpacked(chunks)
    order = _arrival_order(table)
    columns: dict[str, list[Any]] = table.select(names).to_pydict()
    if len(order) < 2 or bool(np.all(order[1:] > order[:-1])):
        return columns
    reorder = operator.itemgetter(*order.tolist())
    return {name: list(reorder(values)) for name, values in columns.items()}


def _unpacked(chunks: list[bytes]) -> pa.Table:
    """Packed rows -> the events they hold, in the rows' order."""
    tables = [ipc.open_stream(pa.py_buffer(chunk)).read_all() for chunk in chunks]
    if not tables:
        return _ARROW_SCHEMA.append(_OWNER).empty_table()
    return pa.concat_tables(tables)


def _arrival_order(table: pa.Table) -> np.ndarray:
    """The indices of ``table``'s rows in arrival order; a block's summary, which shares its
    arrival key with the block's last valid event, after that event."""
    keys = pa.table({"arrival": table.column("arrival"), "summary": pc.is_null(table["value"])})
    order = pc.sort_indices(keys, sort_keys=[("arrival", "ascending"), ("summary", "ascending")])
    return np.asarray(order, dtype=np.int64)
