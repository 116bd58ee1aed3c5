"""The whole stream: one intake and one clock over the engines of every cluster.

Stream time is the whole stream's, not per cluster: a cluster that falls silent (every broker
down, or its events cut off) still sees time pass through the other clusters' events, so its
brokers expire and its quiet periods end on time. If the whole stream stops, no time passes and
nothing is invented.

Stream time runs to the *release frontier*: once the largest ``ts`` received is ``R + L`` (``L``
the lateness bound), no event older than ``R`` can still be accepted — it would be late — so
every instant before ``R`` is closed, whether or not an event was applied at it. After each
batch, stream time is the later of the largest ``ts`` applied and the last closed instant,
``R - 1`` ms, and every cluster with a threshold at or before it is advanced *through* it:
every event stamped with the stream time or earlier has been applied by then, so liveness
ending at that instant may end too. A broker's expiry or a quiet period's end is therefore
crossed as soon as the input has moved ``L`` past it, not when the next event is released
(events 30 s apart held it up to 30 s); and the alerts keep exactly their instants, whatever
the batch boundaries.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from streaming.engine.cluster import ClusterEngine
from streaming.engine.compact import HEAD, MARK, SLIM, delivered, head_of, raw_of, slim
from streaming.engine.intake import NO_SEQ, Held, Intake, IntakeResult
from streaming.engine.shards import engine_key, event_shards, shard_of

__all__ = ["Arrival", "Clock", "StreamEngine"]

Arrival = tuple[str, int, int | None, str]
"""``(id, ts, seq, raw)`` of one valid event, in arrival order; ``id`` is what duplicates are
recognised by (:func:`streaming.engine.intake.dedupe_id`)."""


@dataclass(slots=True)
class Clock:
    """The stream's clock and the engines it drives: each known cluster shard (its
    :func:`~streaming.engine.shards.engine_key`) -> the instant of its earliest pending
    threshold (None: none)."""

    stream_time: int | None = None
    clusters: dict[str, int | None] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"stream_time": self.stream_time, "clusters": self.clusters}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Clock:
        return cls(d["stream_time"], {str(c): t for c, t in d["clusters"].items()})


class StreamEngine:
    """Feeds arrivals through the one intake and applies released events to their cluster's
    engines — one per shard of the cluster this state bucket holds (``mine(cluster, shard)``;
    all of them by default) of ``shards`` (:mod:`streaming.engine.shards`); ``load(cluster,
    shard)`` gives a shard's engine (from persisted state, or new)."""

    def __init__(
        self,
        intake: Intake,
        load: Callable[[str, int], ClusterEngine] | None = None,
        clock: Clock | None = None,
        *,
        shards: int = 1,
        mine: Callable[[str, int], bool] | None = None,
        resolve: Callable[[str], str] | None = None,
    ) -> None:
        """``resolve``: a held registration's raw line as it was read, from what was held (a
        registration shipped by reference: :mod:`streaming.engine.shipped_tables`)."""
        self.intake = intake
        self.resolve = resolve or _as_held
        self.clock = clock or Clock()
        self._load = load or (
            lambda cluster, shard: ClusterEngine(cluster, shard=shard, shards=shards)
        )
        self.shards = shards
        self.mine = mine
        self.engines: dict[str, ClusterEngine] = {}
        self._pairs: dict[tuple[str, int], ClusterEngine] = {}  # (the same, by pair)
        # cluster -> topic -> the engine of the topic's shard (a send's, looked up once a batch)
        self._by_topic: dict[str, dict[str, ClusterEngine]] = {}

    def engine(self, cluster: str, shard: int = 0) -> ClusterEngine:
        """A cluster shard's engine, loaded once per batch."""
        engine = self._pairs.get((cluster, shard))
        if engine is None:
            key = engine_key(cluster, shard)
            engine = self.engines[key] = self._pairs[cluster, shard] = self._load(cluster, shard)
            self.clock.clusters.setdefault(key, None)
        return engine

    def _topic_engine(self, cluster: str, topic: str) -> ClusterEngine:
        """The engine of the shard that holds ``topic`` (of ``cluster``)."""
        of_cluster = self._by_topic.get(cluster)
        if of_cluster is None:
            of_cluster = self._by_topic[cluster] = {}
        engine = of_cluster[topic] = self.engine(cluster, shard_of(topic, self.shards))
        return engine

    def targets(self, event: dict[str, Any]) -> list[ClusterEngine]:
        """The engines of this bucket that apply ``event``."""
        cluster = event["cluster"]
        shards = event_shards(event["type"], event.get("topic"), self.shards)
        mine = self.mine
        return [self.engine(cluster, s) for s in shards if mine is None or mine(cluster, s)]

    def receive(
        self,
        arrivals: list[Arrival],
        priors: list[int | None] | None = None,
        batch_max: int | None = None,
        compact: list[str | None] | None = None,
        owners: list[str | None] | None = None,
    ) -> IntakeResult:
        """Take one batch of arrivals: apply what the lateness bound releases, then let time
        pass for every cluster. ``priors`` and ``batch_max``: what the rest of the stream
        received, when this engine holds only some of its clusters; ``compact``: the arrivals'
        compact forms; ``owners``: the cluster of each that this bucket owns, None for the
        others (:meth:`Intake.receive`)."""
        result = self.intake.receive(arrivals, priors, batch_max, compact, owners)
        self._apply(result.released)
        self._tick()
        return result

    def flush(self) -> None:
        """The end of a finite input: apply everything held, then cross every threshold up to
        the last event's ``ts`` (the whole stream's), none beyond it."""
        self._apply(self.intake.flush())
        newest = self.intake.max_received
        now = self.clock.stream_time
        if newest is not None and (now is None or newest > now):
            self.clock.stream_time = newest
        self._tick()

    def _apply(self, released: Iterable[Held]) -> None:
        now = self.clock.stream_time
        by_topic = self._by_topic
        for ts, seq, _, _, value in released:
            if value.startswith(MARK):  # a delivered send: the commonest, and the cheapest
                cluster, status, topic = delivered(value)
                engine = (by_topic.get(cluster) or {}).get(topic) or self._topic_engine(
                    cluster, topic
                )
                engine.delivered(ts, None if seq == NO_SEQ else seq, status, topic)
            elif value.startswith(HEAD):
                self._apply_registration(value)
            else:
                event = slim(value) if value.startswith(SLIM) else orjson.loads(value)
                for engine in self.targets(event):
                    engine.apply_event(event)
            if now is None or ts > now:
                now = ts
        self.clock.stream_time = now

    def _apply_registration(self, value: str) -> None:
        """A full registration held with its head: its raw line is decoded only for an engine
        that has not applied its data version (every shard of a cluster has, or none)."""
        head = head_of(value)
        full: dict[str, Any] | None = None
        for engine in self.targets(head):
            if engine.knows_table(head):
                engine.apply_event(head)
            else:
                full = full or orjson.loads(self.resolve(raw_of(value)))
                engine.apply_event(full)

    def _tick(self) -> None:
        newest = self.intake.max_received
        if newest is not None:
            closed = newest - self.intake.lateness_ms - 1  # the last instant no event can reach
            if self.clock.stream_time is None or closed > self.clock.stream_time:
                self.clock.stream_time = closed
        now = self.clock.stream_time
        if now is None:
            return
        due = [k for k, at in self.clock.clusters.items() if at is not None and at <= now]
        for key in sorted({*due, *self.engines}):
            self._engine_of(key).advance(now, through=True)

    def _engine_of(self, key: str) -> ClusterEngine:
        engine = self.engines.get(key)
        if engine is None:
            cluster, shard = orjson.loads(key)
            engine = self.engine(cluster, shard)
        return engine

    def finish(self) -> Iterator[ClusterEngine]:
        """Fold every loaded engine's state back (before persisting), note its next threshold,
        and yield the engines, by cluster and shard."""
        for key in sorted(self.engines):
            engine = self.engines[key]
            engine.finish()
            self.clock.clusters[key] = engine.next_deadline()
            yield engine


def _as_held(raw: str) -> str:
    return raw
