"""The real-time comparison follows each batch in the job's own log."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from benchmarks.design_speedup import batch_progress
from routewatch.store import open_store
from streaming.job.progress import ProgressLog


def test_the_job_logs_each_batch_as_the_benchmark_reads_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store_url = f"sqlite:///{tmp_path / 'routewatch.db'}"
    open_store(store_url).close()
    log = ProgressLog()
    log.watch("q", store_url, "job")

    with caplog.at_level(logging.INFO, logger="routewatch.stream"):
        batch = {"batchId": 12, "numInputRows": 10_453, "durationMs": {"triggerExecution": 980}}
        log.progress({"id": "q", **batch})

    (line,) = caplog.messages
    assert batch_progress(line) == {
        "id": "job",
        "batchId": 12,
        "numInputRows": 10_453,
        "durationMs": {"triggerExecution": 980},
        "stateOperators": [],
    }
    assert batch_progress("stream started: query 1, checkpoint /tmp/c") is None
