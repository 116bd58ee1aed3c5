"""Query events as Spark's JSON: each batch's progress, and how a query ended."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession

from routewatch.testing.processes import wait_for
from streaming.job.progress import QueryEvents, add_query_events, input_lines

pytestmark = pytest.mark.spark


class Heard:
    def __init__(self) -> None:
        self.progress: list[dict[str, Any]] = []
        self.terminated: dict[str, str | None] = {}
        self.idle: list[str] = []

    def on_progress(self, p: dict[str, Any]) -> None:
        self.progress.append(p)

    def on_idle(self, query_id: str) -> None:
        self.idle.append(query_id)

    def on_terminated(self, query_id: str, exception: str | None) -> None:
        self.terminated[query_id] = exception


@pytest.fixture
def heard(spark: SparkSession) -> Iterator[Heard]:
    heard = Heard()
    listener = add_query_events(
        spark, QueryEvents(heard.on_progress, heard.on_terminated, heard.on_idle)
    )
    try:
        yield heard
    finally:
        spark.streams._jsqm.removeListener(listener)


def test_each_batch_progress_arrives_as_sparks_json(
    spark: SparkSession, heard: Heard, tmp_path: Path
) -> None:
    source = tmp_path / "in"
    source.mkdir()
    for n in range(3):
        (source / f"{n}.txt").write_text("".join(f"line {n}.{i}\n" for i in range(n + 1)))
    query = (
        spark.readStream.format("text")
        .option("maxFilesPerTrigger", 1)
        .load(str(source))
        .writeStream.format("noop")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .start()
    )
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    query_id = str(query.id)
    wait_for(lambda: query_id in heard.terminated, 60, "the query's end reaching the listener")

    assert heard.terminated[query_id] is None  # stopped, not failed
    mine = [p for p in heard.progress if p["id"] == query_id]
    spark_says = {p.batchId: p.numInputRows for p in query.recentProgress}
    assert {p["batchId"]: p["numInputRows"] for p in mine} == spark_says
    assert sorted(p["numInputRows"] for p in mine if p["numInputRows"]) == [1, 2, 3]
    assert all(p["durationMs"]["triggerExecution"] >= 0 for p in mine)
    assert all(p["sources"][0]["description"].startswith("FileStreamSource") for p in mine)


def test_a_failed_query_is_reported_with_its_error(
    spark: SparkSession, heard: Heard, tmp_path: Path
) -> None:
    source = tmp_path / "in"
    source.mkdir()
    (source / "0.txt").write_text("a line\n")

    def fail(batch: DataFrame, batch_id: int) -> None:
        raise RuntimeError(f"the sink refused batch {batch_id}")

    query = (
        spark.readStream.format("text")
        .load(str(source))
        .writeStream.foreachBatch(fail)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .start()
    )
    query_id = str(query.id)
    try:
        wait_for(lambda: query_id in heard.terminated, 60, "the failed query's end")
    finally:
        query.stop()
    assert "the sink refused batch 0" in (heard.terminated[query_id] or "")


def test_an_idle_query_is_reported_with_its_id(
    spark: SparkSession, heard: Heard, tmp_path: Path
) -> None:
    source = tmp_path / "in"
    source.mkdir()
    (source / "0.txt").write_text("a line\n")
    # Spark reports an idle query every 10 s by default; this query's every 0.2 s
    spark.conf.set("spark.sql.streaming.noDataProgressEventInterval", "200ms")
    try:
        query = (
            spark.readStream.format("text")
            .load(str(source))
            .writeStream.format("noop")
            .option("checkpointLocation", str(tmp_path / "checkpoint"))
            .trigger(processingTime="100 milliseconds")
            .start()
        )
    finally:
        spark.conf.unset("spark.sql.streaming.noDataProgressEventInterval")
    try:
        query.processAllAvailable()
        query_id = str(query.id)
        wait_for(lambda: heard.idle.count(query_id) >= 2, 60, "two idle reports", interval=0.1)
    finally:
        query.stop()

    # an idle report is no batch: the only progress is the one batch that read the file
    assert [p["numInputRows"] for p in heard.progress if p["id"] == query_id] == [1]


def test_a_batch_s_input_rows_are_the_lines_the_read_stage_counted() -> None:
    # (the spool's source rows are files: Spark's numInputRows counts those)
    assert input_lines({"numInputRows": 3, "observedMetrics": {"read": {"lines": 700}}}) == 700
    assert input_lines({"numInputRows": 0, "observedMetrics": {"read": {"lines": None}}}) == 0
    assert input_lines({"numInputRows": 5}) == 5  # (a query without the read stage's count)
