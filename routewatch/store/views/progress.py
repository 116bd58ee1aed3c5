"""The stream job's progress as the metrics and the API read it: clusters, stream times, the last
batch."""

from __future__ import annotations

from typing import Any

from routewatch.store.store import Store

__all__ = ["cluster_names", "last_batch", "newest_times", "stream_time"]


def cluster_names(store: Store) -> list[str]:
    """Every cluster the job has written a clock for."""
    return [cluster for (cluster,) in store.db.execute("SELECT cluster FROM clusters")]


def last_batch(store: Store) -> dict[str, Any] | None:
    """The stream job's last timed micro-batch: its input rows, duration and event-time lag."""
    row = store.db.execute(
        "SELECT input_rows, duration_ms, event_time_lag_ms FROM batches "
        "WHERE duration_ms IS NOT NULL ORDER BY written_at DESC LIMIT 1"
    ).fetchone()
    return None if row is None else dict(zip(row.keys(), row, strict=True))


def newest_times(store: Store) -> tuple[int | None, int | None]:
    """The newest stream time of any cluster, and when (epoch ms, wall clock) the job last
    received an event newer than every event before it."""
    newest, input_at = store.db.execute(
        "SELECT MAX(stream_time), MAX(input_at) FROM clusters"
    ).fetchone()
    return newest, input_at


def stream_time(store: Store, cluster: str) -> int | None:
    """A cluster's stream time, or None when the job has not written one."""
    row = store.db.execute(
        "SELECT stream_time FROM clusters WHERE cluster = ?", (cluster,)
    ).fetchone()
    return None if row is None else row[0]
