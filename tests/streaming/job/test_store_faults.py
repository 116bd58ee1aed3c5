"""Another writer locks the store while the job runs: the job retries and catches up, with the
alerts of an undisturbed run."""

from __future__ import annotations

import logging
import os
import sqlite3
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from emitter.scenarios import SCENARIOS
from routewatch.settings import load
from routewatch.store import open_store
from routewatch.testing.processes import wait_for
from streaming.job.evaluate import evaluate_traces
from streaming.job.stream import start_stream
from streaming.settings import StreamingSettings
from tests.support.traces import shape, write_trace

pytestmark = [pytest.mark.slow, pytest.mark.spark]

SCENARIO = "broker-dies"


def _publish(spool: Path, name: str, lines: list[str]) -> None:
    spool.mkdir(parents=True, exist_ok=True)
    staged = spool / f".{name}.tmp"
    staged.write_text("".join(lines))
    os.replace(staged, spool / name)


def test_a_store_locked_by_another_writer_is_retried_and_the_job_catches_up(
    spark: SparkSession, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    trace = tmp_path / "trace.jsonl"
    write_trace(SCENARIOS[SCENARIO].run(seed=5), trace)
    lines = trace.read_text().splitlines(keepends=True)
    settings = load(StreamingSettings, data_dir=tmp_path / "job", trigger_interval_s=0.2)
    (reference,) = evaluate_traces(spark, [trace], settings).values()
    half = len(lines) // 2
    _publish(settings.spool_dir, "part-1.jsonl", lines[:half])
    query = start_stream(spark, settings, "spool")
    lock = None
    try:
        query.processAllAvailable()
        # another writer takes the write lock and holds it past the job's busy timeout
        lock = sqlite3.connect(settings.data_dir / "routewatch.db", isolation_level=None)
        lock.execute("BEGIN EXCLUSIVE")
        with caplog.at_level(logging.WARNING, logger="routewatch"):
            _publish(settings.spool_dir, "part-2.jsonl", lines[half:])
            wait_for(
                lambda: "database is locked; retrying in" in caplog.text,
                180,
                "the job retrying the locked store",
                interval=0.5,
            )
            assert query.isActive, query.exception()
            lock.execute("ROLLBACK")
            lock.close()
            lock = None
            query.processAllAvailable()
        assert query.isActive, query.exception()
    finally:
        if lock is not None:
            lock.close()
        query.stop()

    alerts = open_store(settings.store_url).alerts()
    assert sorted(map(shape, alerts)) == sorted(map(shape, reference))

    def times(found: list[dict[str, object]]) -> list[tuple[object, ...]]:
        return sorted((str(a["id"]), a["opened_at"], a["resolved_at"]) for a in found)

    assert times(alerts) == times(reference)
