"""The Kafka broker restarts in the middle of a replay: the replayer and the stream job carry on
by themselves, and nothing is lost: the job ends with the alerts of the whole trace."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from emitter.scenarios import SCENARIOS
from routewatch.settings import load
from routewatch.store import open_store
from routewatch.testing.kafka import KafkaBroker, running_broker
from routewatch.testing.processes import start_routewatch, stop, wait_for
from streaming.job.evaluate import evaluate_traces
from streaming.job.stream import start_stream
from streaming.settings import StreamingSettings
from tests.support.traces import write_trace

pytestmark = [pytest.mark.slow, pytest.mark.spark, pytest.mark.kafka]

SCENARIO = "demo-mixed"
TOPIC = "outage.events"
SPEED = 10


def _identity(alerts: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    keys = ("id", "kind", "severity", "state", "cause", "opened_at", "resolved_at", "summary")
    return sorted(tuple(a[k] for k in keys) for a in alerts)


@pytest.fixture
def own_broker() -> Iterator[KafkaBroker]:
    """A broker of this test's own: restarting the session's would disturb other tests."""
    with running_broker() as broker:
        broker.create_topic(TOPIC, partitions=2)
        yield broker


def test_a_broker_restart_mid_stream_loses_nothing(
    spark: SparkSession, own_broker: KafkaBroker, tmp_path: Path
) -> None:
    trace = tmp_path / "trace.jsonl"
    events = write_trace(SCENARIOS[SCENARIO].run(seed=3), trace)
    settings = load(
        StreamingSettings,
        data_dir=tmp_path / "job",
        kafka_bootstrap=own_broker.bootstrap,
        kafka_topic=TOPIC,
        trigger_interval_s=0.5,
    )
    (reference,) = evaluate_traces(spark, [trace], settings).values()
    env = {
        **os.environ,
        "ROUTEWATCH_DATA_DIR": str(tmp_path / "replay"),
        "ROUTEWATCH_KAFKA_BOOTSTRAP": own_broker.bootstrap,
        "ROUTEWATCH_KAFKA_TOPIC": TOPIC,
    }
    query = start_stream(spark, settings, "kafka")
    replay_log = tmp_path / "replay.log"
    replay = start_routewatch(
        ["replay", str(trace), "--to", "kafka", "--speed", str(SPEED), "--quiet"], env, replay_log
    )
    try:
        store = None

        def batches_stored(n: int) -> bool:
            nonlocal store
            if replay.poll() is not None:
                raise AssertionError(f"the replay ended early: {replay_log.read_text()}")
            if not (settings.data_dir / "routewatch.db").exists():
                return False
            store = store or open_store(settings.store_url)
            count = store.db.execute("SELECT COUNT(*) FROM batches WHERE change_rows > 0")
            return int(count.fetchone()[0]) >= n

        wait_for(lambda: batches_stored(3), 120, "the job storing its first batches")
        # the broker goes down while the replay is writing (how long the replay then has left
        # depends on how fast the job started; the restart's length is the broker's)
        assert replay.poll() is None, "the replay ended before the broker went down"
        own_broker.restart_kafka()
        assert query.isActive, query.exception()

        assert replay.wait(300) == 0, replay_log.read_text()
        assert f"wrote {events} events" in replay_log.read_text()

        def applied() -> int:
            assert query.isActive, query.exception()
            job = open_store(settings.store_url)
            try:
                counted = sum(v for (n, _, _), v in job.counters().items() if n == "events")
                return counted + sum(int(c["held"]) for c in job.clusters())
            finally:
                job.close()

        wait_for(lambda: applied() == events, 300, "the job applying every event", interval=0.5)
        final = open_store(settings.store_url)
        assert _identity(final.alerts()) == _identity(reference)
    finally:
        stop(replay)
        query.stop()
