"""Running the engine over a whole input in memory (tests, and batch evaluation's core)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import orjson

from routewatch.alerts import Alert
from routewatch.changes import RouteChange
from streaming.engine.intake import Intake, dedupe_id
from streaming.engine.stream import Arrival, StreamEngine

__all__ = ["ClusterRun", "StreamRun", "run_cluster", "run_stream"]

DEFAULT_DEDUPE_HORIZON_MS = 300_000


@dataclass
class ClusterRun:
    """Everything one cluster's input produced: every alert change, route changes."""

    alert_changes: list[Alert] = field(default_factory=list)
    route_changes: list[RouteChange] = field(default_factory=list)

    def final_alerts(self) -> list[Alert]:
        """The last version of every alert, in the order alerts were first opened."""
        latest: dict[str, Alert] = {}
        for alert in self.alert_changes:
            latest[alert.id] = alert
        return list(latest.values())


@dataclass
class StreamRun:
    """Everything a whole input produced, per cluster, and the stream's counts."""

    clusters: dict[str, ClusterRun] = field(default_factory=dict)
    late: int = 0
    duplicates: int = 0

    def cluster(self, name: str) -> ClusterRun:
        return self.clusters.setdefault(name, ClusterRun())

    def final_alerts(self) -> list[Alert]:
        """The last version of every alert of every cluster."""
        return [a for name in sorted(self.clusters) for a in self.clusters[name].final_alerts()]


def run_stream(
    arrivals: Iterable[Arrival],
    *,
    lateness_ms: int,
    batch_size: int | None = None,
    dedupe_horizon_ms: int = DEFAULT_DEDUPE_HORIZON_MS,
) -> StreamRun:
    """Feed ``(event_id, ts, seq, raw)`` arrivals (of valid events) through the stream's intake
    and engines,
    ``batch_size`` at a time (all at once by default), then flush as at the end of input."""
    stream = StreamEngine(Intake(lateness_ms, dedupe_horizon_ms))
    run = StreamRun()
    pending = [
        (dedupe_id(orjson.loads(raw)["cluster"], event_id), ts, seq, raw)
        for event_id, ts, seq, raw in arrivals
    ]
    size = batch_size or max(len(pending), 1)

    def collect() -> None:
        for name, engine in stream.finish():
            out = run.cluster(name)
            out.alert_changes += engine.book.take_changes()
            out.route_changes += engine.out.route_changes
            engine.out.route_changes = []

    for start in range(0, len(pending), size):
        result = stream.receive(pending[start : start + size])
        run.late += len(result.late)
        run.duplicates += len(result.duplicates)
        collect()
    stream.flush()
    collect()
    return run


def run_cluster(
    cluster: str,
    arrivals: Iterable[Arrival],
    *,
    lateness_ms: int,
    batch_size: int | None = None,
    dedupe_horizon_ms: int = DEFAULT_DEDUPE_HORIZON_MS,
) -> ClusterRun:
    """:func:`run_stream` over an input, and what one of its clusters produced."""
    run = run_stream(
        arrivals,
        lateness_ms=lateness_ms,
        batch_size=batch_size,
        dedupe_horizon_ms=dedupe_horizon_ms,
    )
    return run.cluster(cluster)
