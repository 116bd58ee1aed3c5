"""The job's sink: each micro-batch's change rows into the store, once, with retries."""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable
from pathlib import Path

from pyspark.sql import DataFrame

from routewatch.changes import ChangeRow
from routewatch.store import Store, StoreUnavailableError, open_store
from streaming.sources.spool import remove_read_files

__all__ = ["job_name", "store_writer"]

log = logging.getLogger("routewatch.stream")


def job_name(checkpoint: str) -> str:
    """The store's name for one query: one per checkpoint location."""
    return hashlib.sha1(checkpoint.encode()).hexdigest()[:12]


PRUNE_EVERY_BATCHES = 500
SPOOL_CLEAN_EVERY_S = 60.0


def store_writer(
    store_url: str,
    job: str,
    retention_ms: int,
    retry_for_s: float = 600.0,
    source_log: Path | None = None,
    spool_keep_ms: int | None = None,
    spool_archive: Path | None = None,
) -> Callable[[DataFrame, int], None]:
    """A ``foreachBatch`` function writing change rows in one transaction per batch.

    A batch the store already has (replayed after a restart) is skipped. While the store is
    unavailable, the write is retried for up to ``retry_for_s`` seconds before the job fails.
    Every ``PRUNE_EVERY_BATCHES`` batches, rows older than ``retention_ms`` are pruned. With
    the spool's ``source_log`` (``<checkpoint>/sources/0``) and ``spool_keep_ms``, the spool
    files that committed batches took are removed (or moved to ``spool_archive``) once older
    than that: at the run's second batch (its first whose predecessors are committed), then at
    most every :data:`SPOOL_CLEAN_EVERY_S`.
    """
    store: list[Store] = []
    cleaned: list[float] = []  # when the spool was last cleaned (monotonic)
    first: list[int] = []  # the first batch of this run

    def write(batch: DataFrame, batch_id: int) -> None:
        rows = [ChangeRow._make(r) for r in batch.collect()]
        deadline = time.monotonic() + retry_for_s
        delay = 0.2
        while True:
            try:
                if not store:
                    store.append(open_store(store_url))
                store[0].write_batch(job, batch_id, rows)
                if batch_id % PRUNE_EVERY_BATCHES == 0:
                    store[0].prune(retention_ms)
                break
            except StoreUnavailableError as exc:
                if store:  # reconnect next time: a PostgreSQL connection may not survive
                    store.pop().close()
                if time.monotonic() > deadline:
                    raise
                log.warning("%s; retrying in %.1f s.", str(exc).rstrip("."), delay)
                time.sleep(delay)
                delay = min(delay * 2, 10.0)
        if source_log is None or spool_keep_ms is None:
            return
        if not first:
            first.append(batch_id)
        due = not cleaned or time.monotonic() - cleaned[-1] >= SPOOL_CLEAN_EVERY_S
        if batch_id > first[0] and due:  # (the batches before this one are committed)
            cleaned.append(time.monotonic())
            older_than = int(time.time() * 1000) - spool_keep_ms
            removed = remove_read_files(source_log, batch_id, older_than, spool_archive)
            if removed:
                what = f"moved to {spool_archive}" if spool_archive else "removed"
                log.info(
                    "%d spool file(s) read and committed before the retention %s", removed, what
                )

    return write
