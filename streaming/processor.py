"""Stage 2, track clusters: the engine as a Spark stateful processor, keyed by cluster.

Each micro-batch, the processor loads the cluster's small state whole, and the large parts
(topic tables per registration, routes and rule state per topic, seen event ids) one entry at
a time as the engine asks for them; it writes back only what changed. The state lives in
Spark's state store (RocksDB), checkpointed with the query, so a restart resumes exactly.

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
    ListState,
    MapState,
    StatefulProcessor,
    StatefulProcessorHandle,
    TimerValues,
    ValueState,
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
from streaming.engine.intake import Held, Intake
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

__all__ = ["CHANGES_SCHEMA", "QUARANTINE_KEY", "STATE_VARIABLES", "ClusterProcessor", "schema"]

CHANGES_SCHEMA = "cluster string, kind string, key string, at long, payload string"
# the group of bad input (no cluster is named so: names are RocketMQ cluster names)
QUARANTINE_KEY = "\u0000quarantine"
BUCKETS = 256
HELD_SCHEMA = "ts long, seq long, arrival long, event_id string, value string"

# The processor's state variables, as checkpoints know them: name -> (kind, key schema (maps),
# value schema), in Spark's DDL (see docs/operations.md, Upgrading).
STATE_VARIABLES: dict[str, tuple[str, str | None, str]] = {
    "meta": ("value", None, "json string"),
    "intake": ("value", None, "json string"),
    # held events, per second of ts, packed (streaming.held_rows): a batch reads the seconds
    # it releases or adds to and writes the ones it changed, not every held event (which a 2 s
    # lateness bound makes 2-3 s of a cluster's traffic). Earlier versions kept them per
    # second as JSON ("held_at"), in one JSON value ("held_json") or in a list ("held"): read
    # once after an upgrade, then cleared.
    "held_packed": ("map", "second long", "rows binary"),
    "held_at": ("map", "second long", "rows string"),
    "held_json": ("value", None, "json string"),
    "held": ("list", None, HELD_SCHEMA),
    "seen": ("map", "bucket long", "ids string"),
    "tables": ("map", "reg string", "json string"),
    "routes": ("map", "bucket int", "json string"),
    "topics": ("map", "bucket int", "json string"),
}

_TYPES: dict[str, DataType] = {
    "string": StringType(),
    "long": LongType(),
    "int": IntegerType(),
    "binary": BinaryType(),
}


def schema(ddl: str) -> StructType:
    """A state schema in DDL (``name type, ...``, of the types above) as the struct Spark parses
    it to. Built here: the state API parses a DDL string in the JVM, a round trip per use, and
    a processor declares its variables every batch (32 round trips for ours)."""
    fields = []
    for column in ddl.split(","):
        name, type_name = column.split()
        fields.append(StructField(name, _TYPES[type_name], True))
    return StructType(fields)


Arrival = tuple[str, int, int | None, str]


def _bucket(topic: str) -> int:
    return zlib.crc32(topic.encode()) % BUCKETS


class _Buckets:
    """Per-topic entries stored 256 to a state entry, loaded and written a bucket at a time."""

    def __init__(self, state: MapState) -> None:
        self.state = state
        self.loaded: dict[int, dict[str, Any]] = {}

    def _get(self, bucket: int) -> dict[str, Any]:
        if bucket not in self.loaded:
            row = self.state.getValue((bucket,))
            self.loaded[bucket] = orjson.loads(row[0]) if row else {}
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
                self.state.updateValue((bucket,), (orjson.dumps(self.loaded[bucket]).decode(),))
            else:
                self.state.removeKey((bucket,))


def _json_value(state: ValueState) -> Any:
    """The JSON held in a one-column value state, or None when it is empty."""
    row = state.get() if state.exists() else None
    return None if row is None else orjson.loads(row[0])


def _route_in(raw: Any) -> dict[RegKey, Config] | None:
    if raw is None:
        return None
    return {reg_key(rid): (c[0], c[1], c[2]) for rid, c in raw.items()}


def _route_out(value: dict[RegKey, Config] | None) -> Any:
    return None if value is None else {reg_id(k): list(c) for k, c in value.items()}


class ClusterProcessor(StatefulProcessor):
    """Feeds one cluster's events through :class:`Intake` and :class:`ClusterEngine`.

    ``final``: the input is finite and this is its only batch (``evaluate``): everything held
    back by the lateness bound is applied at the end.
    """

    def __init__(self, lateness_ms: int, dedupe_horizon_ms: int, final: bool = False) -> None:
        self.lateness_ms = lateness_ms
        self.dedupe_horizon_ms = dedupe_horizon_ms
        self.final = final

    def init(self, handle: StatefulProcessorHandle) -> None:
        def value(name: str) -> ValueState:
            return handle.getValueState(name, schema(STATE_VARIABLES[name][2]))

        def map_(name: str) -> MapState:
            _, key_ddl, value_ddl = STATE_VARIABLES[name]
            assert key_ddl is not None
            return handle.getMapState(name, schema(key_ddl), schema(value_ddl))

        def list_(name: str) -> ListState:
            return handle.getListState(name, schema(STATE_VARIABLES[name][2]))

        self.meta_state = value("meta")
        self.intake_state = value("intake")
        self.held_packed_state = map_("held_packed")
        self.held_at_state = map_("held_at")
        self.held_json_state = value("held_json")
        self.held_state = list_("held")
        self.seen_state = map_("seen")
        self.tables_state = map_("tables")
        self.routes_state = map_("routes")
        self.topics_state = map_("topics")

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
        stored = _json_value(self.intake_state) or {}
        intake.max_received = stored.get("max_received")
        intake.arrivals = stored.get("arrivals", 0)
        seen_keys = set(stored.get("seen_keys", []))
        counts = {int(second): int(n) for second, n in stored.get("held_counts", [])}
        # where the held events are: packed (this version, or no state yet), or in the form of
        # an earlier version, which its intake state tells: JSON per second ("held_counts" but
        # not "held_packed"), or all in one ("held_counts" missing). Earlier forms are read
        # whole now, and written packed at the end of the batch.
        self.held_from = (
            "packed"
            if not stored or stored.get("held_packed")
            else "held_at"
            if "held_counts" in stored
            else "whole"
        )
        self.held_stored = set(counts) if self.held_from == "packed" else set()
        if self.held_from == "packed":
            intake.keep_stored(counts, self._held_bucket)
        else:
            if self.held_from == "held_at":
                held = [row for second in sorted(counts) for row in self._held_at_rows(second)]
            else:
                held = _json_value(self.held_json_state) or []
                if self.held_state.exists():
                    held += list(self.held_state.get())
            intake.load_held(held)
            # (the oldest did not store the arrival count: new arrivals come after held ones)
            intake.arrivals = max([intake.arrivals, *(h.arrival for h in intake.held)])
        self.held_at_seconds = sorted(counts) if self.held_from == "held_at" else []
        for bucket in sorted({ts // 1000 for _, ts, _, _ in arrivals} & seen_keys):
            row = self.seen_state.getValue((bucket,))
            if row:
                intake.seen[bucket] = set(orjson.loads(row[0]))
        return intake, seen_keys

    def _save_intake(self, intake: Intake, seen_keys: set[int]) -> None:
        for bucket in sorted(intake.touched_buckets):
            ids = sorted(intake.seen[bucket])
            self.seen_state.updateValue((bucket,), (orjson.dumps(ids).decode(),))
            seen_keys.add(bucket)
        if intake.max_received is not None:
            oldest = (intake.max_received - self.dedupe_horizon_ms) // 1000
            for bucket in sorted(b for b in seen_keys if b < oldest):
                self.seen_state.removeKey((bucket,))
                seen_keys.discard(bucket)
        for second, rows in sorted(intake.changed_held().items()):
            if rows:
                self.held_packed_state.updateValue((second,), (pack(rows),))
            elif second in self.held_stored:
                self.held_packed_state.removeKey((second,))
        stored = {
            "max_received": intake.max_received,
            "arrivals": intake.arrivals,  # held events keep their arrival order across batches
            "seen_keys": sorted(seen_keys),
            "held_counts": sorted(intake.held_counts.items()),
            "held_packed": True,
        }
        self.intake_state.update((orjson.dumps(stored).decode(),))
        for second in self.held_at_seconds:
            self.held_at_state.removeKey((second,))
        if self.held_from == "whole":
            self.held_json_state.clear()
            self.held_state.clear()

    def _held_bucket(self, second: int) -> list[Held]:
        row = self.held_packed_state.getValue((second,))
        return unpack(bytes(row[0])) if row else []

    def _held_at_rows(self, second: int) -> list[Any]:
        row = self.held_at_state.getValue((second,))
        return orjson.loads(row[0]) if row else []

    def _load_engine(self, cluster: str) -> ClusterEngine:
        stored = _json_value(self.meta_state)
        meta = Meta() if stored is None else Meta.from_json(stored)
        self.routes = _Buckets(self.routes_state)
        self.topic_buckets = _Buckets(self.topics_state)

        def load_table(key: RegKey) -> dict[str, Config] | None:
            row = self.tables_state.getValue((reg_id(key),))
            if not row:
                return None
            return {t: (c[0], c[1], c[2]) for t, c in orjson.loads(row[0]).items()}

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
                self.tables_state.removeKey((reg_id(key),))
            else:
                blob = {t: list(c) for t, c in table.items()}
                self.tables_state.updateValue((reg_id(key),), (orjson.dumps(blob).decode(),))
        self.routes.save((t, _route_out(v)) for t, v in engine.routes.dirty())
        self.topic_buckets.save(
            (t, None if v is None or v.is_empty() else v.to_json())
            for t, v in engine.topics.dirty()
        )
        self.meta_state.update((orjson.dumps(engine.meta.to_json()).decode(),))

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
