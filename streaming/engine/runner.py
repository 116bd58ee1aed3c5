"""Running the engine over a whole input in memory (tests, and batch evaluation's core)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from streaming.engine.alerts import Alert
from streaming.engine.cluster import ClusterEngine, RouteChange
from streaming.engine.intake import Intake

__all__ = ["ClusterRun", "run_cluster"]

DEFAULT_DEDUPE_HORIZON_MS = 300_000


@dataclass
class ClusterRun:
    """Everything one cluster's input produced: every alert change, route changes, counts."""

    alert_changes: list[Alert] = field(default_factory=list)
    route_changes: list[RouteChange] = field(default_factory=list)
    late: int = 0
    duplicates: int = 0

    def final_alerts(self) -> list[Alert]:
        """The last version of every alert, in the order alerts were first opened."""
        latest: dict[str, Alert] = {}
        for alert in self.alert_changes:
            latest[alert.id] = alert
        return list(latest.values())


def run_cluster(
    cluster: str,
    arrivals: Iterable[tuple[str, int, int | None, str]],
    *,
    lateness_ms: int,
    batch_size: int | None = None,
    dedupe_horizon_ms: int = DEFAULT_DEDUPE_HORIZON_MS,
) -> ClusterRun:
    """Feed ``(event_id, ts, seq, raw)`` arrivals of one cluster through intake and engine,
    ``batch_size`` at a time (all at once by default), then flush as at the end of input."""
    intake = Intake(lateness_ms, dedupe_horizon_ms)
    engine = ClusterEngine(cluster)
    run = ClusterRun()
    pending = list(arrivals)
    size = batch_size or max(len(pending), 1)
    for start in range(0, len(pending), size):
        result = intake.receive(pending[start : start + size])
        run.late += len(result.late)
        run.duplicates += result.duplicates
        for held in result.released:
            engine.apply(held.value)
    for held in intake.flush():
        engine.apply(held.value)
    engine.finish()
    run.alert_changes = engine.book.take_changes()
    run.route_changes = engine.out.route_changes
    return run
