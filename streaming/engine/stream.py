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
from streaming.engine.compact import HEAD, MARK, SLIM, delivered, slim, split_head
from streaming.engine.intake import NO_SEQ, Held, Intake, IntakeResult

__all__ = ["Arrival", "Clock", "StreamEngine"]

Arrival = tuple[str, int, int | None, str]
"""``(id, ts, seq, raw)`` of one valid event, in arrival order; ``id`` is what duplicates are
recognised by (:func:`streaming.engine.intake.dedupe_id`)."""


@dataclass(slots=True)
class Clock:
    """The stream's clock and the clusters it drives: each known cluster -> the instant of its
    earliest pending threshold (None: none)."""

    stream_time: int | None = None
    clusters: dict[str, int | None] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"stream_time": self.stream_time, "clusters": self.clusters}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Clock:
        return cls(d["stream_time"], {str(c): t for c, t in d["clusters"].items()})


class StreamEngine:
    """Feeds arrivals through the one intake and applies released events to their cluster's
    engine; ``load(cluster)`` gives a cluster's engine (from persisted state, or new)."""

    def __init__(
        self,
        intake: Intake,
        load: Callable[[str], ClusterEngine] | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.intake = intake
        self.clock = clock or Clock()
        self._load = load or ClusterEngine
        self.engines: dict[str, ClusterEngine] = {}

    def engine(self, cluster: str) -> ClusterEngine:
        """The cluster's engine, loaded once per batch."""
        engine = self.engines.get(cluster)
        if engine is None:
            engine = self.engines[cluster] = self._load(cluster)
            self.clock.clusters.setdefault(cluster, None)
        return engine

    def receive(
        self,
        arrivals: list[Arrival],
        priors: list[int | None] | None = None,
        batch_max: int | None = None,
        compact: list[str | None] | None = None,
    ) -> IntakeResult:
        """Take one batch of arrivals: apply what the lateness bound releases, then let time
        pass for every cluster. ``priors`` and ``batch_max``: what the rest of the stream
        received, when this engine holds only some of its clusters; ``compact``: the arrivals'
        compact forms (:meth:`Intake.receive`)."""
        result = self.intake.receive(arrivals, priors, batch_max, compact)
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
        engines = self.engines
        for ts, seq, _, _, value in released:
            if value.startswith(MARK):  # a delivered send: the commonest, and the cheapest
                cluster, status, topic = delivered(value)
                engine = engines.get(cluster) or self.engine(cluster)
                engine.delivered(ts, None if seq == NO_SEQ else seq, status, topic)
            else:
                if value.startswith(HEAD):
                    head, raw = split_head(value)
                    known = self.engine(head["cluster"]).knows_table(head)
                    event = head if known else orjson.loads(raw)
                elif value.startswith(SLIM):
                    event = slim(value)
                else:
                    event = orjson.loads(value)
                self.engine(event["cluster"]).apply_event(event)
            if now is None or ts > now:
                now = ts
        self.clock.stream_time = now

    def _tick(self) -> None:
        newest = self.intake.max_received
        if newest is not None:
            closed = newest - self.intake.lateness_ms - 1  # the last instant no event can reach
            if self.clock.stream_time is None or closed > self.clock.stream_time:
                self.clock.stream_time = closed
        now = self.clock.stream_time
        if now is None:
            return
        due = [c for c, at in self.clock.clusters.items() if at is not None and at <= now]
        for cluster in sorted({*due, *self.engines}):
            self.engine(cluster).advance(now, through=True)

    def finish(self) -> Iterator[tuple[str, ClusterEngine]]:
        """Fold every loaded engine's state back (before persisting), note its next threshold,
        and yield the engines, by cluster name."""
        for cluster in sorted(self.engines):
            engine = self.engines[cluster]
            engine.finish()
            self.clock.clusters[cluster] = engine.next_deadline()
            yield cluster, engine
