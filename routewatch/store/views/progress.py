"""The stream job's progress as the metrics and the API read it: clusters, stream times, the last
batch."""

from __future__ import annotations

from typing import Any

from routewatch.store.store import Store

__all__ = [
    "cluster_names",
    "ended_job",
    "last_batch",
    "newest_times",
    "running_jobs",
    "stream_time",
]


def cluster_names(store: Store) -> list[str]:
    """Every cluster the job has written a clock for."""
    return [cluster for (cluster,) in store.db.execute("SELECT cluster FROM clusters")]


def running_jobs(jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Of the store's ``jobs`` (latest report first), those that have not recorded that their
    query ended: running, or killed without a word (their reports just stop)."""
    return [j for j in jobs if j["stopped_at"] is None]


def ended_job(jobs: list[dict[str, Any]], now_ms: float, max_age_s: float) -> dict[str, Any] | None:
    """The job whose recorded end (stopped, or failed: ``stopped_at``, ``failure``) is what the
    store's ``jobs`` say now — no job still running reported within ``max_age_s``, and the end
    is later than the last report of any that did not — or None. ``/readyz`` and the metric
    ``routewatch_stream_job_ended`` both judge by it."""
    running = running_jobs(jobs)
    if running and (now_ms - running[0]["reported_at"]) / 1000 <= max_age_s:
        return None  # (a job runs and reports: whatever another did is not the news)
    ended = [j for j in jobs if j["stopped_at"] is not None]
    if not ended:
        return None
    last = max(ended, key=lambda j: int(j["stopped_at"]))
    if running and running[0]["reported_at"] > last["stopped_at"]:
        return None  # (a job reported after it, and has fallen silent since: that is the news)
    return last


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
