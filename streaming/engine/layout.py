"""Where the stream's state lives among the named entries (:mod:`streaming.engine.entries`),
and how each part is read and written: plain Python, the same for every backend.

The stream's own entries: ``clock`` (the stream time, and each known cluster's next threshold),
``intake`` (the newest ``ts`` received, the arrival count, where the held events and seen ids
are), ``held/<second>`` (the events held by the lateness bound whose ``ts`` falls in that
second, packed: :mod:`streaming.engine.held_rows`; a busy second's later parts in
``held/<second>/<part>``, their number in ``intake``) and ``seen/<second>`` (the event ids seen,
for the duplicate check). Each cluster shard's entries (:mod:`streaming.engine.shards`) are
named by the JSON triple ``[cluster, shard, part]``:
``meta`` (the engine's small state, :class:`~streaming.engine.state.Meta`), ``table/<reg>``
(one registration's topic table), ``route/<b>`` and ``topic/<b>`` (the routes and the rule state
of the topics of bucket ``b``: 256 buckets by CRC-32 of the topic, so a batch reads and writes a
bucket, not a topic, at a time). Only what a batch touched is read, and only what changed is
written back.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterator
from typing import Any

import orjson

from streaming.engine.cluster import ClusterEngine
from streaming.engine.entries import Entries
from streaming.engine.held_rows import pack_parts, unpack
from streaming.engine.intake import Held, Intake
from streaming.engine.shipped_tables import TableStore
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
from streaming.engine.stream import Arrival, Clock

__all__ = ["BUCKETS", "STATE_LAYOUT", "StateLayout"]

# the version of this layout; a checkpoint written with another one is not resumed
# (streaming.job.stream.check_checkpoint)
# 4: each cluster in shards by topic; 3: each cluster whole in one state bucket; 2: one group
STATE_LAYOUT = 4
BUCKETS = 256

# the names of the entries: the stream's own ...
CLOCK = "clock"
INTAKE = "intake"
HELD = "held/{}"
HELD_PART = "held/{}/{}"  # a second's parts after the first
SEEN = "seen/{}"
# ... and each cluster shard's, named by (cluster, shard, part) (_engine_entry)
META = "meta"
TABLE = "table/{}"
ROUTE = "route/{}"
TOPIC = "topic/{}"


def _engine_entry(cluster: str, shard: int, part: str) -> str:
    """The name of one entry of a cluster shard's state (a JSON triple: no two shards' meet)."""
    return key_json((cluster, shard, part))


def _held_name(second: int, part: int) -> str:
    return HELD.format(second) if part == 0 else HELD_PART.format(second, part)


def _bucket(topic: str) -> int:
    return zlib.crc32(topic.encode()) % BUCKETS


class _Buckets:
    """Per-topic entries stored 256 to an entry, loaded and written a bucket at a time."""

    def __init__(self, entries: Entries, name: Callable[[int], str]) -> None:
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


class StateLayout:
    """Reads and writes the stream's state in ``entries``, for one batch: load the clock and
    the intake, then each cluster's engine as the batch needs it; save what changed."""

    def __init__(
        self, entries: Entries, lateness_ms: int, dedupe_horizon_ms: int, shards: int = 1
    ) -> None:
        self.entries = entries
        self.shards = shards
        self.lateness_ms = lateness_ms
        self.dedupe_horizon_ms = dedupe_horizon_ms
        self._buckets: dict[tuple[str, int], tuple[_Buckets, _Buckets]] = {}
        self._held_stored: set[int] = set()
        self._held_parts: dict[int, int] = {}  # per stored second of more than one part: parts
        self._seen_keys: set[int] = set()

    # -- the stream's clock ---------------------------------------------------------------------

    def table_store(self) -> TableStore:
        """The table texts this bucket keeps for registrations shipped by reference."""
        return TableStore(self.entries)

    def load_clock(self) -> Clock:
        data = self.entries.get(CLOCK)
        return Clock.from_json(orjson.loads(data)) if data else Clock()

    def save_clock(self, clock: Clock) -> None:
        self.entries.put(CLOCK, orjson.dumps(clock.to_json()))

    # -- the intake -----------------------------------------------------------------------------

    def load_intake(self, arrivals: list[Arrival]) -> Intake:
        """The intake, with the seen ids of the seconds ``arrivals`` fall in."""
        intake = Intake(self.lateness_ms, self.dedupe_horizon_ms)
        data = self.entries.get(INTAKE)
        stored = orjson.loads(data) if data else {}
        intake.max_received = stored.get("max_received")
        intake.arrivals = stored.get("arrivals", 0)
        self._seen_keys = set(stored.get("seen_keys", []))
        counts = {int(second): int(n) for second, n in stored.get("held_counts", [])}
        intake.held_by_cluster = {str(c): int(n) for c, n in stored.get("held_by_cluster", [])}
        self._held_stored = set(counts)
        self._held_parts = {int(second): int(n) for second, n in stored.get("held_parts", [])}
        intake.keep_stored(counts, self._held_second)
        for second in sorted({ts // 1000 for _, ts, _, _ in arrivals} & self._seen_keys):
            ids = self.entries.get(SEEN.format(second))
            if ids:
                intake.seen[second] = set(orjson.loads(ids))
        return intake

    def save_intake(self, intake: Intake) -> None:
        seen_keys = self._seen_keys
        for second in sorted(intake.touched_buckets):
            self.entries.put(SEEN.format(second), orjson.dumps(sorted(intake.seen[second])))
            seen_keys.add(second)
        if intake.max_received is not None:
            oldest = (intake.max_received - self.dedupe_horizon_ms) // 1000
            for second in sorted(b for b in seen_keys if b < oldest):
                self.entries.remove(SEEN.format(second))
                seen_keys.discard(second)
        parts_of = self._held_parts
        for second, rows in sorted(intake.changed_held().items()):
            before = parts_of.pop(second, 1) if second in self._held_stored else 0
            parts = pack_parts(rows)
            for i, part in enumerate(parts):
                self.entries.put(_held_name(second, i), part)
            for i in range(len(parts), before):
                self.entries.remove(_held_name(second, i))
            if len(parts) > 1:
                parts_of[second] = len(parts)
        stored = {
            "max_received": intake.max_received,
            "arrivals": intake.arrivals,  # held events keep their arrival order across batches
            "seen_keys": sorted(seen_keys),
            "held_counts": sorted(intake.held_counts.items()),
            "held_by_cluster": sorted(intake.held_by_cluster.items()),
            "held_parts": sorted(parts_of.items()),
        }
        self.entries.put(INTAKE, orjson.dumps(stored))

    def _held_second(self, second: int) -> list[Held]:
        held: list[Held] = []
        for i in range(self._held_parts.get(second, 1)):
            data = self.entries.get(_held_name(second, i))
            if data:
                held += unpack(data)
        return held

    # -- each cluster's engine ------------------------------------------------------------------

    def load_engine(self, cluster: str, shard: int = 0) -> ClusterEngine:
        """A cluster shard's engine over its stored state; its large parts load as they are
        needed."""

        def entry(part: str) -> str:
            return _engine_entry(cluster, shard, part)

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
            shard=shard,
            shards=self.shards,
        )
        self._buckets[(cluster, shard)] = (routes, topics)
        return engine

    def save_engine(self, engine: ClusterEngine) -> None:
        """Write back what a cluster shard's engine changed."""
        cluster, shard = engine.cluster, engine.shard
        routes, topics = self._buckets.pop((cluster, shard))
        for key, table in engine.tables.dirty():
            name = _engine_entry(cluster, shard, TABLE.format(reg_id(key)))
            if table is None:
                self.entries.remove(name)
            else:
                self.entries.put(name, orjson.dumps({t: list(c) for t, c in table.items()}))
        routes.save((t, _route_out(v)) for t, v in engine.routes.dirty())
        topics.save(
            (t, None if v is None or v.is_empty() else v.to_json())
            for t, v in engine.topics.dirty()
        )
        meta = orjson.dumps(engine.meta.to_json())
        self.entries.put(_engine_entry(cluster, shard, META), meta)
