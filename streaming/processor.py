"""Stage 2, track clusters: the engine as a Spark stateful processor over the whole stream.

Stream time and the lateness bound are the whole stream's, not a cluster's (see
``streaming.engine.stream``), so the stateful stage has one group: every event, of every
cluster, goes through one intake and one clock, and a cluster with no events of its own still
sees time pass. Each micro-batch, the processor loads the stream's clock and intake and, one
entry at a time as the engine asks for them, the state of the clusters the batch touches (topic
tables per registration, routes and rule state per topic, seen event ids, held events); it
writes back only what changed. The state lives in Spark's state store (RocksDB), checkpointed
with the query, so a restart resumes exactly.

All the state is one map state variable, ``entries`` (:data:`STATE_VARIABLES`): Spark builds
and binds encoders in the JVM for every state variable a task declares, every batch (about
16 ms each here).

Output rows are changes (:class:`routewatch.changes.ChangeRow`, in Spark's terms
:data:`CHANGES_SCHEMA`): alert versions, route changes, broker registration states, counter
increments, late and bad input, and each cluster's clock, encoded by :mod:`routewatch.changes`.
"""

from __future__ import annotations

import typing
import zlib
from collections.abc import Callable, Iterator
from typing import Any

import orjson
import pandas as pd
from pyspark.sql.streaming.stateful_processor import (
    MapState,
    StatefulProcessor,
    StatefulProcessorHandle,
    TimerValues,
)
from pyspark.sql.types import (
    BinaryType,
    DataType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from routewatch.changes import (
    DUPLICATES,
    EVENTS_APPLIED,
    LATE,
    SENDS,
    BadLine,
    BrokerState,
    ChangeRow,
    ClusterClock,
    Count,
    LateEvent,
    TopicCreated,
    encode_alert,
    encode_bad,
    encode_broker,
    encode_clock,
    encode_count,
    encode_late,
    encode_route,
    encode_topic,
)
from streaming.engine.cluster import ClusterEngine
from streaming.engine.intake import Held, Intake, dedupe_id
from streaming.engine.state import (
    Config,
    LazyMap,
    Meta,
    RegKey,
    TopicState,
    key_json,
    reg_id,
    reg_key,
)
from streaming.engine.stream import Arrival, Clock, StreamEngine
from streaming.held_rows import pack, unpack
from streaming.read import unpack_chunks

__all__ = [
    "CHANGES_SCHEMA",
    "STATE_LAYOUT",
    "STATE_VARIABLES",
    "STREAM_KEY",
    "StreamProcessor",
    "changes_frame",
    "schema",
]

# the one group of the stateful stage (its grouping column is ``stream``)
STREAM_KEY = "routewatch"
# the layout of the state below; a checkpoint written with another one is not resumed
# (streaming.jobs.check_checkpoint)
STATE_LAYOUT = 2
BUCKETS = 256

# The processor's state variables, as checkpoints know them: name -> (kind, key schema (maps),
# value schema), in Spark's DDL (see docs/operations.md, Checkpoints). One map: its entries are
# named below and hold bytes (JSON, or packed held events).
STATE_VARIABLES: dict[str, tuple[str, str | None, str]] = {
    "entries": ("map", "entry string", "data binary"),
}
# the names of the entries: the stream's own ...
CLOCK = "clock"  # the stream time and each known cluster's next threshold, JSON
INTAKE = "intake"  # the intake's newest ts received, counts and where its held events are, JSON
HELD = "held/{}"  # the events held by the lateness bound, per second of ts, packed
SEEN = "seen/{}"  # event ids seen, per second of ts, a JSON list
# ... and each cluster's, named by (cluster, part) (_cluster_entry)
META = "meta"  # the engine's small state (streaming.engine.state.Meta), JSON
TABLE = "table/{}"  # a registration's topic table (reg_id), JSON
ROUTE = "route/{}"  # routes of the topics of a bucket (256 by CRC-32 of the topic), JSON
TOPIC = "topic/{}"  # rule state of the topics of a bucket, JSON


def _cluster_entry(cluster: str, part: str) -> str:
    """The name of one entry of a cluster's state (a JSON pair: no two clusters' meet)."""
    return key_json((cluster, part))


_TYPES: dict[str, DataType] = {
    "string": StringType(),
    "long": LongType(),
    "int": IntegerType(),
    "binary": BinaryType(),
}


def schema(ddl: str) -> StructType:
    """A state schema in DDL (``name type, ...``, of the types above) as the struct Spark parses
    it to. Built here: the state API parses a DDL string in the JVM, a round trip per use, and
    a processor declares its variables in every task, every batch."""
    fields = []
    for column in ddl.split(","):
        name, type_name = column.split()
        fields.append(StructField(name, _TYPES[type_name], True))
    return StructType(fields)


def _ddl(record: type) -> str:
    """A record's fields as a Spark DDL string (str: string, int: long; every column may be
    null)."""
    names = {str: "string", int: "long"}
    columns = []
    for name, hint in typing.get_type_hints(record).items():
        (base,) = [t for t in typing.get_args(hint) or (hint,) if t is not type(None)]
        columns.append(f"{name} {names[base]}")
    return ", ".join(columns)


# the output's columns, in Spark's DDL: those of a change row
CHANGES_SCHEMA = _ddl(ChangeRow)


def changes_frame(rows: list[ChangeRow]) -> pd.DataFrame:
    """Change rows as the processor yields them."""
    return pd.DataFrame(rows, columns=list(ChangeRow._fields)).astype({"at": "Int64"})


def _bucket(topic: str) -> int:
    return zlib.crc32(topic.encode()) % BUCKETS


class _Entries:
    """One cluster's ``entries``: bytes by entry name."""

    def __init__(self, state: MapState) -> None:
        self.state = state

    def get(self, name: str) -> bytes | None:
        row = self.state.getValue((name,))
        return bytes(row[0]) if row else None

    def put(self, name: str, data: bytes) -> None:
        self.state.updateValue((name,), (data,))

    def remove(self, name: str) -> None:
        self.state.removeKey((name,))


class _Buckets:
    """Per-topic entries stored 256 to an entry, loaded and written a bucket at a time."""

    def __init__(self, entries: _Entries, name: Callable[[int], str]) -> None:
        self.entries = entries
        self.name = name
        self.loaded: dict[int, dict[str, Any]] = {}

    def _get(self, bucket: int) -> dict[str, Any]:
        if bucket not in self.loaded:
            data = self.entries.get(self.name(bucket))
            self.loaded[bucket] = orjson.loads(data) if data else {}
        return self.loaded[bucket]

    def get(self, topic: str) -> Any:
        return self._get(_bucket(topic)).get(topic)

    def save(self, dirty: Iterator[tuple[str, Any]]) -> None:
        touched: set[int] = set()
        for topic, raw in dirty:
            bucket = _bucket(topic)
            entries = self._get(bucket)
            if raw is None:
                entries.pop(topic, None)
            else:
                entries[topic] = raw
            touched.add(bucket)
        for bucket in sorted(touched):
            if self.loaded[bucket]:
                self.entries.put(self.name(bucket), orjson.dumps(self.loaded[bucket]))
            else:
                self.entries.remove(self.name(bucket))


def _route_in(raw: Any) -> dict[RegKey, Config] | None:
    if raw is None:
        return None
    return {reg_key(rid): (c[0], c[1], c[2]) for rid, c in raw.items()}


def _route_out(value: dict[RegKey, Config] | None) -> Any:
    return None if value is None else {reg_id(k): list(c) for k, c in value.items()}


class StreamProcessor(StatefulProcessor):
    """Feeds the stream's events through :class:`StreamEngine`: one intake, one clock, and
    each cluster's :class:`ClusterEngine`; bad input becomes ``bad`` change rows.

    ``final``: the input is finite and this is its only batch (``evaluate``): everything held
    back by the lateness bound is applied at the end.
    """

    def __init__(self, lateness_ms: int, dedupe_horizon_ms: int, final: bool = False) -> None:
        self.lateness_ms = lateness_ms
        self.dedupe_horizon_ms = dedupe_horizon_ms
        self.final = final

    def init(self, handle: StatefulProcessorHandle) -> None:
        _, key_ddl, value_ddl = STATE_VARIABLES["entries"]
        assert key_ddl is not None
        self.entries = _Entries(handle.getMapState("entries", schema(key_ddl), schema(value_ddl)))

    def handleInputRows(
        self, key: Any, rows: Iterator[pd.DataFrame], timerValues: TimerValues
    ) -> Iterator[pd.DataFrame]:
        events = unpack_chunks([bytes(c) for frame in rows for c in frame["events"]])
        self.buckets: dict[str, tuple[_Buckets, _Buckets]] = {}
        columns = events.select(
            ["cluster", "event_id", "ts", "seq", "value", "reason", "detail"]
        ).to_pydict()
        arrivals: list[Arrival] = []
        bad: list[ChangeRow] = []
        for cluster, eid, ts, seq, value, reason, detail in zip(*columns.values(), strict=True):
            if reason is None:
                arrivals.append((dedupe_id(cluster, eid), ts, seq, value))
            else:
                bad.append(encode_bad(cluster, BadLine(reason, detail, value)))
        if bad:
            yield changes_frame(bad)
        intake, seen_keys = self._load_intake(arrivals)
        data = self.entries.get(CLOCK)
        clock = Clock.from_json(orjson.loads(data)) if data else Clock()
        stream = StreamEngine(intake, self._load_engine, clock)
        result = stream.receive(arrivals)
        if self.final:
            stream.flush()
        out: list[ChangeRow] = []
        for cluster, engine in stream.finish():
            self._save_engine(cluster, engine)
            out += _engine_outputs(cluster, engine, clock.stream_time)
        out += _intake_outputs(result.late, result.duplicates, clock.stream_time)
        cluster_clock = ClusterClock(clock.stream_time, intake.max_received, intake.held_count)
        for cluster in sorted(clock.clusters):
            out.append(encode_clock(cluster, cluster_clock))
        self._save_intake(intake, seen_keys)
        self.entries.put(CLOCK, orjson.dumps(clock.to_json()))
        if out:
            yield changes_frame(out)

    # -- state ----------------------------------------------------------------------------------

    def _load_intake(self, arrivals: list[Arrival]) -> tuple[Intake, set[int]]:
        intake = Intake(self.lateness_ms, self.dedupe_horizon_ms)
        data = self.entries.get(INTAKE)
        stored = orjson.loads(data) if data else {}
        intake.max_received = stored.get("max_received")
        intake.arrivals = stored.get("arrivals", 0)
        seen_keys = set(stored.get("seen_keys", []))
        counts = {int(second): int(n) for second, n in stored.get("held_counts", [])}
        self.held_stored = set(counts)
        intake.keep_stored(counts, self._held_bucket)
        for bucket in sorted({ts // 1000 for _, ts, _, _ in arrivals} & seen_keys):
            ids = self.entries.get(SEEN.format(bucket))
            if ids:
                intake.seen[bucket] = set(orjson.loads(ids))
        return intake, seen_keys

    def _save_intake(self, intake: Intake, seen_keys: set[int]) -> None:
        for bucket in sorted(intake.touched_buckets):
            self.entries.put(SEEN.format(bucket), orjson.dumps(sorted(intake.seen[bucket])))
            seen_keys.add(bucket)
        if intake.max_received is not None:
            oldest = (intake.max_received - self.dedupe_horizon_ms) // 1000
            for bucket in sorted(b for b in seen_keys if b < oldest):
                self.entries.remove(SEEN.format(bucket))
                seen_keys.discard(bucket)
        for second, rows in sorted(intake.changed_held().items()):
            if rows:
                self.entries.put(HELD.format(second), pack(rows))
            elif second in self.held_stored:
                self.entries.remove(HELD.format(second))
        stored = {
            "max_received": intake.max_received,
            "arrivals": intake.arrivals,  # held events keep their arrival order across batches
            "seen_keys": sorted(seen_keys),
            "held_counts": sorted(intake.held_counts.items()),
        }
        self.entries.put(INTAKE, orjson.dumps(stored))

    def _held_bucket(self, second: int) -> list[Held]:
        data = self.entries.get(HELD.format(second))
        return unpack(data) if data else []

    def _load_engine(self, cluster: str) -> ClusterEngine:
        def entry(part: str) -> str:
            return _cluster_entry(cluster, part)

        data = self.entries.get(entry(META))
        meta = Meta() if data is None else Meta.from_json(orjson.loads(data))
        routes = _Buckets(self.entries, lambda b: entry(ROUTE.format(b)))
        topics = _Buckets(self.entries, lambda b: entry(TOPIC.format(b)))

        def load_table(key: RegKey) -> dict[str, Config] | None:
            table = self.entries.get(entry(TABLE.format(reg_id(key))))
            if table is None:
                return None
            return {t: (c[0], c[1], c[2]) for t, c in orjson.loads(table).items()}

        def load_topic(topic: str) -> TopicState | None:
            raw = topics.get(topic)
            return None if raw is None else TopicState.from_json(raw)

        engine = ClusterEngine(
            cluster,
            meta,
            tables=LazyMap(load_table),
            routes=LazyMap(lambda topic: _route_in(routes.get(topic))),
            topics=LazyMap(load_topic),
        )
        self.buckets[cluster] = (routes, topics)
        return engine

    def _save_engine(self, cluster: str, engine: ClusterEngine) -> None:
        routes, topics = self.buckets.pop(cluster)
        for key, table in engine.tables.dirty():
            name = _cluster_entry(cluster, TABLE.format(reg_id(key)))
            if table is None:
                self.entries.remove(name)
            else:
                self.entries.put(name, orjson.dumps({t: list(c) for t, c in table.items()}))
        routes.save((t, _route_out(v)) for t, v in engine.routes.dirty())
        topics.save(
            (t, None if v is None or v.is_empty() else v.to_json())
            for t, v in engine.topics.dirty()
        )
        self.entries.put(_cluster_entry(cluster, META), orjson.dumps(engine.meta.to_json()))

    def close(self) -> None:
        pass


def _engine_outputs(cluster: str, engine: ClusterEngine, now: int | None) -> list[ChangeRow]:
    """What a cluster's engine changed in this batch, as change rows."""
    rows = [encode_alert(alert, i) for i, alert in enumerate(engine.book.take_changes())]
    rows += [encode_route(cluster, change) for change in engine.out.route_changes]
    for topic, at in sorted(engine.out.auto_created.items()):
        rows.append(encode_topic(cluster, TopicCreated(topic, at)))
    for key in sorted(engine.out.touched_regs):
        reg = engine.meta.regs[key]
        state = BrokerState(
            key, reg.addr, reg.live, reg.shutdown, reg.auto_create, reg.template, reg.last_hb
        )
        rows.append(encode_broker(cluster, state))
    counts = [Count(EVENTS_APPLIED, k, v, now) for k, v in engine.out.events.items()]
    counts += [Count(SENDS, k, v, now) for k, v in engine.out.sends.items()]
    for count in sorted(counts, key=lambda c: (c.name, c.label)):
        rows.append(encode_count(cluster, count))
    return rows


def _intake_outputs(
    late: list[tuple[str, str]], duplicates: list[str], now: int | None
) -> list[ChangeRow]:
    """Late input (kept with its reason) and the late and duplicate counts, by the cluster
    each line names."""
    rows: list[ChangeRow] = []
    counts: dict[tuple[str, str], int] = {}
    for raw in duplicates:
        cluster = orjson.loads(raw)["cluster"]
        counts[(cluster, DUPLICATES)] = counts.get((cluster, DUPLICATES), 0) + 1
    for raw, detail in late:
        cluster = orjson.loads(raw)["cluster"]
        counts[(cluster, LATE)] = counts.get((cluster, LATE), 0) + 1
        rows.append(encode_late(cluster, LateEvent(detail, raw)))
    for (cluster, name), value in sorted(counts.items()):
        rows.append(encode_count(cluster, Count(name, "", value, now)))
    return rows
