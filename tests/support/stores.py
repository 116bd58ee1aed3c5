"""A store's contents, minus what depends on the wall clock, for comparing two runs row by row;
the batches a job wrote; and a store filled as the job fills it, without Spark (from lines given,
or following a spool a collector writes)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import orjson

from routewatch.store import Store, open_store
from streaming.engine.runner import LineRun
from streaming.settings import StreamingSettings

# Columns written from the wall clock (or the store's own sequence), not from the events.
WALL_CLOCK = {"detected_at", "written_at", "updated_at", "input_at", "arrived_at", "seq"}


def _rows(store: Store, table: str, order: str | None = None) -> list[tuple[Any, ...]]:
    cursor = store.db.execute(f"SELECT * FROM {table}" + (f" ORDER BY {order}" if order else ""))
    names = cursor.columns
    keep = [i for i, n in enumerate(names) if n not in WALL_CLOCK]
    rows = [tuple(row[i] for i in keep) for row in cursor.fetchall()]
    return rows if order else sorted(rows, key=repr)


def _logged(store: Store) -> list[tuple[Any, ...]]:
    out = []
    for alert_id, change, at, alert in store.db.execute(
        "SELECT alert_id, change, at, alert FROM alert_log ORDER BY seq"
    ):
        record = orjson.loads(alert)
        record.pop("detected_at", None)
        out.append((alert_id, change, at, orjson.dumps(record, option=orjson.OPT_SORT_KEYS)))
    # each alert's versions in log order; how the versions of different alerts (and clusters)
    # interleave follows batch boundaries, which restarts may move
    return sorted(out, key=lambda row: str(row[0]))


def batches(store: Store, job: str) -> list[dict[str, Any]]:
    """The batches the store recorded for a job (table ``batches``), by batch id."""
    rows = store.db.execute("SELECT * FROM batches WHERE job = ? ORDER BY batch_id", (job,))
    return [dict(r) for r in rows]


def snapshot(store: Store) -> dict[str, list[tuple[Any, ...]]]:
    """Every table that events determine, as sorted rows (lists keep duplicates visible)."""
    return {
        "alerts": _rows(store, "alerts"),
        "alert_log": _logged(store),
        "route_intervals": _rows(store, "route_intervals"),
        "brokers": _rows(store, "brokers"),
        "topics": _rows(store, "topics"),
        "counters": _rows(store, "counters"),
        "clusters": _rows(store, "clusters"),
        "quarantine": _rows(store, "quarantine"),
    }


class EngineJob:
    """A store filled batch by batch with what the stream job writes for the same input: the
    change rows of the job's own step (:class:`streaming.engine.runner.LineRun`, no Spark),
    written through the store's API as the job's sink and progress report write them. A test
    in ``tests/streaming/job`` holds it to the job's store, row by row."""

    def __init__(self, settings: StreamingSettings, job: str = "engine") -> None:
        self.url = settings.store_url
        self.job = job
        self.run = LineRun(
            lateness_ms=settings.lateness_ms, dedupe_horizon_ms=settings.dedupe_horizon_ms
        )
        self.batches = 0

    def write(self, lines: list[str]) -> None:
        """One batch of input lines, in arrival order."""
        rows = self.run.batch(lines)
        store = open_store(self.url)
        try:
            store.write_batch(self.job, self.batches, rows)
            store.record_progress(self.job, self.batches, len(lines), 1)
        finally:
            store.close()
        self.batches += 1

    def write_files(self, *paths: Path) -> None:
        """One batch of every line of ``paths``, in that order (as the job reads a spool's
        files: by modification time, then name)."""
        self.write([line for path in paths for line in path.read_text().splitlines()])


class SpoolFollower:
    """The job's own step over a spool that a collector is writing, as ``routewatch stream``
    runs it but without Spark: each :meth:`tick` writes one batch of the complete lines added to
    the spool's files since the last (files by modification time, then name, as the job reads
    them). A thread ticks it every ``interval_s`` between :meth:`start` and :meth:`stop`."""

    def __init__(self, settings: StreamingSettings, interval_s: float = 0.5) -> None:
        self.job = EngineJob(settings, job="follower")
        self.spool = settings.spool_dir
        self.interval_s = interval_s
        self._read: dict[Path, int] = {}  # bytes of complete lines taken from each file
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="spool-follower", daemon=True)
        self.failure: BaseException | None = None

    def tick(self) -> int:
        lines: list[str] = []
        files = sorted(self.spool.glob("*.jsonl"), key=lambda p: (p.stat().st_mtime_ns, p.name))
        for path in files:
            data = path.read_bytes()
            end = data.rfind(b"\n") + 1
            start = self._read.get(path, 0)
            if end > start:
                lines += data[start:end].decode().splitlines()
                self._read[path] = end
        if lines:
            self.job.write(lines)
        return len(lines)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.tick()
            except BaseException as exc:  # said by stop(), in the test's thread
                self.failure = exc
                return

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)
        if self.failure is not None:
            raise AssertionError(f"the spool follower failed: {self.failure!r}")
