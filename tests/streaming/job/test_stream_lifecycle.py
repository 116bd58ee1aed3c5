"""The job's process: a stop that hangs does not keep it alive; its progress listener, which
records each report, a batch's or Spark's idle one, for /readyz."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from pyspark.sql import SparkSession

from api import ApiSettings, create_app
from emitter.scenarios import SCENARIOS
from routewatch.settings import load
from routewatch.store import open_store
from routewatch.testing.processes import free_port, wait_for
from streaming.job.progress import (
    ProgressLog,
    lag_words,
    left_input_unread,
    progress_log,
    root_cause,
)
from streaming.job.sink import job_name
from streaming.job.stream import start_stream
from streaming.settings import StreamingSettings
from tests.support.stores import batches
from tests.support.traces import write_trace

STUCK = """
import logging, threading
from streaming.job.stream import exit_unless_stopped_within
logging.basicConfig(level=logging.INFO)
exit_unless_stopped_within(0.5)
threading.Event().wait()  # a stop that never returns
"""

DONE = """
from streaming.job.stream import exit_unless_stopped_within
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
        query = start_stream(spark, settings, "spool")
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
                written = batches(store, job)
            finally:
                store.close()
            if not written or written[0]["input_rows"] is None:
                return False
        return not progress_log(spark).queries  # each query is forgotten once it stopped

    wait_for(progress_of_each, 60, "each query's progress in its own store", interval=0.2)


def _source(end: Any, latest: Any) -> dict[str, Any]:
    return {"description": "a source", "endOffset": end, "latestOffset": latest}


@pytest.mark.parametrize(
    ("sources", "unread"),
    [
        ([], False),
        ([_source({"logOffset": 3}, None)], False),  # the spool's file source reports none
        ([_source({"t": {"0": 10, "1": 5}}, {"t": {"1": 5, "0": 10}})], False),
        ([_source({"t": {"0": 10, "1": 5}}, {"t": {"0": 10, "1": 9}})], True),  # capped
        ([_source({"logOffset": 3}, None), _source({"t": {"0": 1}}, {"t": {"0": 2}})], True),
    ],
)
def test_a_batch_leaves_input_unread_when_a_source_reports_more(
    sources: list[dict[str, Any]], unread: bool
) -> None:
    assert left_input_unread({"batchId": 7, "sources": sources}) is unread


@pytest.mark.spark
def test_an_idle_job_keeps_reporting_and_stays_ready(spark: SparkSession, tmp_path: Path) -> None:
    settings = load(StreamingSettings, data_dir=tmp_path, trigger_interval_s=0.1)
    write_trace(SCENARIOS["broker-dies"].run(seed=1), settings.spool_dir / "trace.jsonl")
    # Spark reports an idle query every 10 s by default; this one every 0.3 s
    spark.conf.set("spark.sql.streaming.noDataProgressEventInterval", "300ms")
    try:
        query = start_stream(spark, settings, "spool")
    finally:
        spark.conf.unset("spark.sql.streaming.noDataProgressEventInterval")
    # ready while the job has reported within 2 s, however old its last batch
    api = TestClient(create_app(load(ApiSettings, data_dir=tmp_path, ready_max_batch_age_s=2)))
    try:
        query.processAllAvailable()
        assert query.lastProgress is not None
        last_id = query.lastProgress.batchId
        store = open_store(settings.store_url)
        try:
            # Spark hands a batch's progress to listeners on its own thread, after the batch:
            # wait until the last one is stored (its figures, and the job's report)
            def recorded() -> list[dict[str, Any]]:
                jobs = store.jobs()
                return batches(store, jobs[0]["job"]) if jobs else []

            wait_for(
                lambda: any(
                    b["batch_id"] == last_id and b["input_rows"] is not None for b in recorded()
                ),
                60,
                f"batch {last_id}'s progress stored",
            )
            last_batch = max(b["written_at"] for b in recorded())

            def reported_since(ms: int) -> bool:
                return bool(store.jobs()[0]["reported_at"] > last_batch + ms)

            wait_for(lambda: reported_since(3_000), 60, "idle reports 3 s after the last batch")
            ready = api.get("/readyz")
            assert ready.status_code == 200, ready.json()
            assert max(b["written_at"] for b in batches(store, store.jobs()[0]["job"])) == (
                last_batch  # idle reports are no batches
            )
        finally:
            store.close()
    finally:
        query.stop()

    # stopped: the listener records the stop, and the job is not ready at once
    def says_stopped() -> bool:
        answer = api.get("/readyz")
        check = answer.json()["checks"]["stream_job"]
        return answer.status_code == 503 and bool(
            re.fullmatch(r"the stream job stopped \d+ s ago", check)
        )

    wait_for(says_stopped, 30, "/readyz saying the job stopped")


@pytest.mark.spark
def test_a_job_started_again_clears_the_end_it_recorded(
    spark: SparkSession, tmp_path: Path
) -> None:
    settings = load(StreamingSettings, data_dir=tmp_path, trigger_interval_s=0.1)
    write_trace(SCENARIOS["broker-dies"].run(seed=1), settings.spool_dir / "trace.jsonl")
    store = open_store(settings.store_url)
    try:
        first = start_stream(spark, settings, "spool")
        first.processAllAvailable()
        first.stop()
        wait_for(lambda: store.jobs()[0]["stopped_at"] is not None, 30, "the stop recorded")

        second = start_stream(spark, settings, "spool")
        try:
            # as start_stream returns, before any batch or idle report of the new run
            [job] = store.jobs()
            assert job["stopped_at"] is None and job["failure"] is None
        finally:
            second.stop()
    finally:
        store.close()


def test_stream_from_a_kafka_that_does_not_answer_is_one_sentence(tmp_path: Path) -> None:
    # said before Spark starts: no stack trace, and quickly
    port = free_port()
    env = {
        **os.environ,
        "ROUTEWATCH_DATA_DIR": str(tmp_path),
        "ROUTEWATCH_KAFKA_BOOTSTRAP": f"127.0.0.1:{port}",
    }
    result = subprocess.run(
        [sys.executable, "-m", "routewatch.cli", "stream", "--source", "kafka"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=120,
    )
    assert result.returncode == 2
    assert result.stderr == (
        f"routewatch: Kafka does not answer at ROUTEWATCH_KAFKA_BOOTSTRAP=127.0.0.1:{port} "
        f"(127.0.0.1:{port}: Connection refused): start Kafka, or point the setting at brokers "
        "that run.\n"
    )


@pytest.mark.parametrize(
    ("message", "cause"),
    [
        (
            "[STREAM_FAILED] Query [id = 1] terminated with exception: [FOREACH_BATCH_USER_"
            "FUNCTION_ERROR] An error occurred. Return Message: Traceback (most recent call "
            "last):\n  File \"x.py\", line 1, in f\n    g()\nUnicodeDecodeError: 'utf-8' codec "
            "can't decode byte 0xff in position 0: invalid start byte\n\n\tat org.apache...",
            "UnicodeDecodeError: 'utf-8' codec can't decode byte 0xff in position 0: invalid "
            "start byte",
        ),
        (
            "[STREAM_FAILED] Query terminated with exception: Job aborted.\n"
            "Caused by: org.apache.spark.SparkException: stage failed\n\tat x\n"
            "Caused by: org.apache.kafka.common.errors.TimeoutException: Timed out waiting for "
            "a node assignment. Call: describeTopics\n\tat y",
            "org.apache.kafka.common.errors.TimeoutException: Timed out waiting for a node "
            "assignment. Call: describeTopics",
        ),
        ("[STREAM_FAILED] something plain", "[STREAM_FAILED] something plain"),
    ],
)
def test_a_failed_querys_message_is_cut_to_its_root_cause(message: str, cause: str) -> None:
    assert root_cause(message) == cause


def test_the_listener_records_a_query_s_end_and_a_failure_s_root_cause(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'routewatch.db'}"
    open_store(url).close()  # (the job migrates its store at start)
    listener = ProgressLog()
    listener.watch("stopped", url, "spool")
    listener.watch("failed", url, "kafka")

    listener.terminated("stopped", None)
    listener.terminated(
        "failed",
        "[STREAM_FAILED] Query terminated with exception: Job aborted.\n"
        "Caused by: java.io.IOException: No space left on device\n\tat x",
    )

    assert listener.wait_for_end("stopped", 0) and listener.wait_for_end("failed", 0)
    store = open_store(url)
    try:
        ends = {j["job"]: (j["stopped_at"] is not None, j["failure"]) for j in store.jobs()}
    finally:
        store.close()
    assert ends == {
        "spool": (True, None),
        "kafka": (True, "java.io.IOException: No space left on device"),
    }
    # a store deleted meanwhile (a reset) is not made again by a late end
    (tmp_path / "routewatch.db").unlink()
    listener.watch("late", url, "spool")
    listener.terminated("late", None)
    assert listener.wait_for_end("late", 0) and not (tmp_path / "routewatch.db").exists()


def test_the_logged_lag_is_never_negative() -> None:
    assert lag_words(1_000.0, 990_000) == "10.0 s"
    assert lag_words(1_000.0, 1_000_300) == "none (events stamped 0.3 s ahead of this host's clock)"
