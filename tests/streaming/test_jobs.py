"""The job's process: a stop that hangs does not keep it alive; its progress listener."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from emitter.scenarios import SCENARIOS
from emitter.trace import write_trace
from routewatch.settings import load
from routewatch.store import open_store
from streaming.jobs import progress_log, start_spool_stream
from streaming.settings import StreamingSettings
from streaming.sink import job_name
from tests.support.processes import wait_for

STUCK = """
import logging, threading
from streaming.jobs import exit_unless_stopped_within
logging.basicConfig(level=logging.INFO)
exit_unless_stopped_within(0.5)
threading.Event().wait()  # a stop that never returns
"""

DONE = """
from streaming.jobs import exit_unless_stopped_within
exit_unless_stopped_within(30)
print("stopped")
"""


def test_a_stop_that_hangs_exits_after_the_deadline_saying_why_and_where() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", STUCK], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 1
    assert "the job did not stop within 0.5 s of the signal, so it exits" in proc.stderr
    # and where it was: every thread's stack, the main thread's in the wait that hung
    assert "Current thread" in proc.stderr or "Thread 0x" in proc.stderr
    assert 'File "<string>", line 6' in proc.stderr


def test_a_stop_that_ends_in_time_exits_normally() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", DONE], capture_output=True, text=True, timeout=60, check=False
    )
    assert (proc.returncode, proc.stdout) == (0, "stopped\n")


@pytest.mark.spark
def test_queries_of_one_session_share_one_listener_that_reports_each(
    spark: SparkSession, tmp_path: Path
) -> None:
    def listeners() -> int:
        return len(spark.streams._jsqm.listListeners())

    before = listeners()
    jobs = []
    for n in range(2):
        settings = load(StreamingSettings, data_dir=tmp_path / f"job{n}", trigger_interval_s=0.1)
        write_trace(SCENARIOS["broker-dies"].run(seed=n), settings.spool_dir / "trace.jsonl")
        query = start_spool_stream(spark, settings)
        try:
            query.processAllAvailable()
        finally:
            query.stop()
        jobs.append((settings.store_url, job_name(str(settings.checkpoint_dir / "spool"))))

    # one listener for the session however many queries it ran (it was one per query)
    assert listeners() <= before + 1
    assert progress_log(spark) is progress_log(spark)

    def progress_of_each() -> bool:
        # (listeners hear of progress and stops after the fact, on Spark's listener thread)
        for store_url, job in jobs:
            store = open_store(store_url)
            try:
                batches = store.batches(job)
            finally:
                store.close()
            if not batches or batches[0]["input_rows"] is None:
                return False
        return not progress_log(spark).queries  # each query is forgotten once it stopped

    wait_for(progress_of_each, 60, "each query's progress in its own store", interval=0.2)
