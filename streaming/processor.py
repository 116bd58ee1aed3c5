"""Stage 2, track clusters: the engine as a Spark stateful processor, keyed by cluster.

Each micro-batch, the processor loads the cluster's small state whole, and the large parts
(topic tables per registration, routes and rule state per topic, seen event ids, held events)
one entry at a time as the engine asks for them; it writes back only what changed. The state
lives in Spark's state store (RocksDB), checkpointed with the query, so a restart resumes
exactly.

All of a cluster's state is one map state variable, ``entries`` (:data:`STATE_VARIABLES`):
Spark builds and binds encoders in the JVM for every state variable a task declares, every
batch (about 16 ms each here), so ten variables cost 0.15 s per partition and batch, more than
a small batch's own work. Checkpoints of earlier versions, which kept ten variables
(:data:`LEGACY_STATE_VARIABLES`), are moved into ``entries`` one cluster at a time
(:meth:`ClusterProcessor.handleInputRows`); see docs/operations.md, Upgrading.

Output rows are changes (see :data:`CHANGES_SCHEMA`): alert versions, route changes, broker
registration states, counter increments, late input, and the cluster's event-time clock.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
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

from streaming.engine.cluster import ClusterEngine
from streaming.engine.intake import Held, HeldRow, Intake
from streaming.engine.state import (
    Config,
    LazyMap,
    Meta,
    RegKey,
    TopicState,
    reg_id,
    reg_key,
)
from streaming.held_rows import pack, unpack

__all__ = [
    "CHANGES_SCHEMA",
    "LEGACY_STATE_VARIABLES",
    "QUARANTINE_KEY",
    "STATE_VARIABLES",
    "ClusterProcessor",
    "schema",
]

CHANGES_SCHEMA = "cluster string, kind string, key string, at long, payload string"
# the group of bad input (no cluster is named so: names are RocketMQ cluster names)
QUARANTINE_KEY = "\u0000quarantine"
BUCKETS = 256
HELD_SCHEMA = "ts long, seq long, arrival long, event_id string, value string"

# The processor's state variables, as checkpoints know them: name -> (kind, key schema (maps),
# value schema), in Spark's DDL (see docs/operations.md, Upgrading). One map: its entries are
# named by ENTRY (below) and hold bytes (JSON, or packed held events).
STATE_VARIABLES: dict[str, tuple[str, str | None, str]] = {
    "entries": ("map", "entry string", "data binary"),
}
# What earlier versions kept, one variable per part: declared (so read, moved into "entries",
# and cleared, per cluster) only while a checkpoint still holds a cluster in this layout
# (streaming.legacy_state tells). The held events were kept per second packed
# ("held_packed"), before that as JSON ("held_at"), in one JSON value ("held_json") or in a
# list ("held").
LEGACY_STATE_VARIABLES: dict[str, tuple[str, str | None, str]] = {
    "meta": ("value", None, "json string"),
    "intake": ("value", None, "json string"),
    "held_packed": ("map", "second long", "rows binary"),
    "held_at": ("map", "second long", "rows string"),
    "held_json": ("value", None, "json string"),
    "held": ("list", None, HELD_SCHEMA),
    "seen": ("map", "bucket long", "ids string"),
    "tables": ("map", "reg string", "json string"),
    "routes": ("map", "bucket int", "json string"),
    "topics": ("map", "bucket int", "json string"),
}
# the names of the entries of one cluster's state
META = "meta"  # the engine's small state (streaming.engine.state.Meta), JSON
INTAKE = "intake"  # the intake's clock, counts and where its held events are, JSON
HELD = "held/{}"  # the events held by the lateness bound, per second of ts, packed
SEEN = "seen/{}"  # event ids seen, per second of ts, a JSON list
TABLE = "table/{}"  # a registration's topic table (reg_id), JSON
ROUTE = "route/{}"  # routes of the topics of a bucket (256 by CRC-32 of the topic), JSON
TOPIC = "topic/{}"  # rule state of the topics of a bucket, JSON

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


def _bucket(topic: str) -> int:
    return zlib.crc32(topic.encode()) % BUCKETS


def _declare(handle: StatefulProcessorHandle, name: str, spec: tuple[str, str | None, str]) -> Any:
    kind, key_ddl, value_ddl = spec
    if kind == "value":
        return handle.getValueState(name, schema(value_ddl))
    if kind == "list":
        return handle.getListState(name, schema(value_ddl))
    assert key_ddl is not None
    return handle.getMapState(name, schema(key_ddl), schema(value_ddl))


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

    def __init__(self, entries: _Entries, name: str) -> None:
        self.entries = entries
        self.name = name
        self.loaded: dict[int, dict[str, Any]] = {}

    def _get(self, bucket: int) -> dict[str, Any]:
        if bucket not in self.loaded:
            data = self.entries.get(self.name.format(bucket))
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
                self.entries.put(self.name.format(bucket), orjson.dumps(self.loaded[bucket]))
            else:
                self.entries.remove(self.name.format(bucket))


def _route_in(raw: Any) -> dict[RegKey, Config] | None:
    if raw is None:
        return None
    return {reg_key(rid): (c[0], c[1], c[2]) for rid, c in raw.items()}


def _route_out(value: dict[RegKey, Config] | None) -> Any:
    return None if value is None else {reg_id(k): list(c) for k, c in value.items()}


class ClusterProcessor(StatefulProcessor):
    """Feeds one cluster's events through :class:`Intake` and :class:`ClusterEngine`.

    ``final``: the input is finite and this is its only batch (``evaluate``): everything held
    back by the lateness bound is applied at the end. ``legacy``: the checkpoint may still hold
    clusters in the earlier layout (:data:`LEGACY_STATE_VARIABLES`), so those variables are
    declared too, and each cluster's are moved into ``entries`` at its first batch.
    """

    def __init__(
        self, lateness_ms: int, dedupe_horizon_ms: int, final: bool = False, legacy: bool = False
    ) -> None:
        self.lateness_ms = lateness_ms
        self.dedupe_horizon_ms = dedupe_horizon_ms
        self.final = final
        self.legacy = legacy

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.entries = _Entries(_declare(handle, "entries", STATE_VARIABLES["entries"]))
        self.old: dict[str, Any] = {}
        if self.legacy:
            for name, spec in LEGACY_STATE_VARIABLES.items():
                self.old[name] = _declare(handle, name, spec)

    def handleInputRows(
        self, key: Any, rows: Iterator[pd.DataFrame], timerValues: TimerValues
    ) -> Iterator[pd.DataFrame]:
        cluster = str(key[0])
        frame = pd.concat(list(rows), ignore_index=True).sort_values("arrival", kind="stable")
        if cluster == QUARANTINE_KEY:
            yield _bad_input(frame)
            return
        arrivals = [
            (str(eid), int(ts), None if pd.isna(seq) else int(seq), str(value))
            for eid, ts, seq, value in zip(
                frame["event_id"], frame["ts"], frame["seq"], frame["value"], strict=True
            )
        ]
        if self.old:
            self._move_legacy()
        intake, seen_keys = self._load_intake(arrivals)
        result = intake.receive(arrivals)
        engine = self._load_engine(cluster)
        for held in result.released:
            engine.apply(held.value)
        if self.final:
            for held in intake.flush():
                engine.apply(held.value)
        engine.finish()
        self._save_intake(intake, seen_keys)
        self._save_engine(engine)
        yield _outputs(cluster, engine, result.late, result.duplicates, intake)

    # -- state ----------------------------------------------------------------------------------

    def _load_intake(
        self, arrivals: list[tuple[str, int, int | None, str]]
    ) -> tuple[Intake, set[int]]:
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
        data = self.entries.get(META)
        meta = Meta() if data is None else Meta.from_json(orjson.loads(data))
        self.routes = _Buckets(self.entries, ROUTE)
        self.topic_buckets = _Buckets(self.entries, TOPIC)

        def load_table(key: RegKey) -> dict[str, Config] | None:
            table = self.entries.get(TABLE.format(reg_id(key)))
            if table is None:
                return None
            return {t: (c[0], c[1], c[2]) for t, c in orjson.loads(table).items()}

        def load_topic(topic: str) -> TopicState | None:
            raw = self.topic_buckets.get(topic)
            return None if raw is None else TopicState.from_json(raw)

        return ClusterEngine(
            cluster,
            meta,
            tables=LazyMap(load_table),
            routes=LazyMap(lambda topic: _route_in(self.routes.get(topic))),
            topics=LazyMap(load_topic),
        )

    def _save_engine(self, engine: ClusterEngine) -> None:
        for key, table in engine.tables.dirty():
            if table is None:
                self.entries.remove(TABLE.format(reg_id(key)))
            else:
                blob = {t: list(c) for t, c in table.items()}
                self.entries.put(TABLE.format(reg_id(key)), orjson.dumps(blob))
        self.routes.save((t, _route_out(v)) for t, v in engine.routes.dirty())
        self.topic_buckets.save(
            (t, None if v is None or v.is_empty() else v.to_json())
            for t, v in engine.topics.dirty()
        )
        self.entries.put(META, orjson.dumps(engine.meta.to_json()))

    # -- the earlier layout ---------------------------------------------------------------------

    def _move_legacy(self) -> None:
        """Move this cluster's state from the earlier layout's variables into ``entries`` and
        clear them; nothing to do for a cluster already moved (or new)."""
        old = self.old
        meta = old["meta"].get()
        intake = old["intake"].get()
        if meta is None and intake is None:
            return
        if meta is not None:
            self.entries.put(META, meta[0].encode())
        stored = orjson.loads(intake[0]) if intake is not None else {}
        held: dict[int, list[HeldRow]] = {}
        for row in self._legacy_held(stored):
            held.setdefault(row[0] // 1000, []).append(row)
        for second, rows in held.items():
            self.entries.put(HELD.format(second), pack(rows))
        moved = {
            "max_received": stored.get("max_received"),
            # (the oldest versions did not store the arrival count: new arrivals come after
            # held ones)
            "arrivals": max(
                [stored.get("arrivals", 0), *(r[2] for rs in held.values() for r in rs)]
            ),
            "seen_keys": stored.get("seen_keys", []),
            "held_counts": sorted((second, len(rows)) for second, rows in held.items()),
        }
        self.entries.put(INTAKE, orjson.dumps(moved))
        for variable, name in (
            ("seen", SEEN),
            ("tables", TABLE),
            ("routes", ROUTE),
            ("topics", TOPIC),
        ):
            for (part,), (text,) in old[variable].iterator():
                self.entries.put(name.format(part), text.encode())
        for state in old.values():
            state.clear()

    def _legacy_held(self, stored: dict[str, Any]) -> list[HeldRow]:
        """The held events of the earlier layout, in the form its intake state names: packed
        per second ("held_packed"), JSON per second ("held_counts" without it), or whole."""
        old = self.old
        if not stored or stored.get("held_packed"):
            blobs = [bytes(blob) for _, (blob,) in old["held_packed"].iterator()]
            return [(h.ts, h.seq, h.arrival, h.event_id, h.value) for b in blobs for h in unpack(b)]
        if "held_counts" in stored:
            rows = [r for _, (text,) in old["held_at"].iterator() for r in orjson.loads(text)]
        else:
            whole = old["held_json"].get()
            rows = orjson.loads(whole[0]) if whole is not None else []
            rows += [tuple(r) for r in old["held"].get()]
        return [(int(ts), int(sq), int(a), str(e), str(v)) for ts, sq, a, e, v in rows]

    def close(self) -> None:
        pass


def _bad_input(frame: pd.DataFrame) -> pd.DataFrame:
    """Bad input -> ``bad`` change rows carrying the raw text, reason and detail."""
    rows = [
        (
            None if pd.isna(cluster) else str(cluster),
            "bad",
            str(reason),
            None,
            orjson.dumps({"raw": value, "reason": reason, "detail": detail}).decode(),
        )
        for cluster, reason, detail, value in zip(
            frame["event_cluster"], frame["reason"], frame["detail"], frame["value"], strict=True
        )
    ]
    return pd.DataFrame(rows, columns=["cluster", "kind", "key", "at", "payload"]).astype(
        {"at": "Int64"}
    )


def _outputs(
    cluster: str,
    engine: ClusterEngine,
    late: list[tuple[str, str]],
    duplicates: int,
    intake: Intake,
) -> pd.DataFrame:
    rows: list[tuple[str, str, str, int | None, str]] = []
    for i, alert in enumerate(engine.book.take_changes()):
        # key: the alert id and the change's place in this batch, so versions sort in order
        rows.append(
            (
                cluster,
                "alert",
                f"{alert.id}|{i:06d}",
                alert.updated_at,
                orjson.dumps(alert.to_dict()).decode(),
            )
        )
    for change in engine.out.route_changes:
        ns, broker, broker_id = change.reg
        rows.append(
            (
                cluster,
                "route",
                orjson.dumps([change.topic, ns, broker, broker_id]).decode(),
                change.at,
                orjson.dumps(None if change.config is None else list(change.config)).decode(),
            )
        )
    for topic, at in sorted(engine.out.auto_created.items()):
        rows.append((cluster, "topic", topic, at, orjson.dumps({"auto_created_at": at}).decode()))
    for key in sorted(engine.out.touched_regs):
        reg = engine.meta.regs[key]
        state = {
            "addr": reg.addr,
            "live": reg.live,
            "shutdown": reg.shutdown,
            "auto_create": reg.auto_create,
            "template": reg.template,
            "last_heartbeat": reg.last_hb,
        }
        rows.append(
            (
                cluster,
                "broker",
                orjson.dumps(list(key)).decode(),
                reg.last_hb,
                orjson.dumps(state).decode(),
            )
        )
    counts = {f"events|{k}": v for k, v in engine.out.events.items()}
    counts.update({f"sends|{k}": v for k, v in engine.out.sends.items()})
    if duplicates:
        counts["duplicates|"] = duplicates
    if late:
        counts["late|"] = len(late)
    for name, value in sorted(counts.items()):
        rows.append((cluster, "count", name, engine.meta.stream_time, str(value)))
    for raw, detail in late:
        rows.append(
            (cluster, "late", "late", None, orjson.dumps({"raw": raw, "detail": detail}).decode())
        )
    clock = {"max_received": intake.max_received, "held": intake.held_count}
    rows.append((cluster, "clock", cluster, engine.meta.stream_time, orjson.dumps(clock).decode()))
    return pd.DataFrame(rows, columns=["cluster", "kind", "key", "at", "payload"]).astype(
        {"at": "Int64"}
    )
