"""The job end to end over Kafka, on Spark's own Kafka source and the real broker."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from pyspark.sql import SparkSession
from pyspark.sql.streaming.query import StreamingQuery

from emitter.replay import Pacer, replay
from emitter.replay.reader import read_traces
from emitter.scenarios import SCENARIOS
from emitter.sinks import KafkaSink
from routewatch.settings import load
from routewatch.store import open_store
from routewatch.testing.kafka import KafkaBroker
from streaming.job.progress import left_input_unread
from streaming.job.sink import job_name
from streaming.job.stream import start_stream
from streaming.settings import StreamingSettings
from tests.support.stores import batches
from tests.support.traces import expected, shape, write_trace

pytestmark = [pytest.mark.kafka, pytest.mark.spark]


def _produce(broker: KafkaBroker, topic: str, trace: Path) -> int:
    sink = KafkaSink(
        broker.bootstrap,
        topic,
        None,
        acks="all",
        linger_ms=5,
        batch_bytes=1 << 20,
        compression="none",
        retries=3,
    )
    return replay(read_traces([trace], False, []), sink, Pacer(None)).written


def _settings(root: Path, broker: KafkaBroker, topic: str, **extra: Any) -> StreamingSettings:
    return load(
        StreamingSettings,
        data_dir=root,
        kafka_bootstrap=broker.bootstrap,
        kafka_topic=topic,
        trigger_interval_s=0.1,
        **extra,
    )


def _run(spark: SparkSession, settings: StreamingSettings) -> StreamingQuery:
    query = start_stream(spark, settings, "kafka")
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    return query


def _identity(alerts: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return sorted(
        (a["id"], a["kind"], a["state"], a["opened_at"], a["resolved_at"]) for a in alerts
    )


SCENARIO = "restarted-auto-create-off-stale-tbw102"


def test_emitter_to_kafka_to_job_to_store_gives_the_scenarios_alerts_on_any_partitioning(
    spark: SparkSession, kafka_broker: KafkaBroker, tmp_path: Path
) -> None:
    trace = tmp_path / "trace.jsonl"
    write_trace(SCENARIOS[SCENARIO].run(seed=2), trace)
    results = {}
    for partitions in (1, 3):
        topic = f"job.events.p{partitions}"
        kafka_broker.create_topic(topic, partitions=partitions)
        assert _produce(kafka_broker, topic, trace) == sum(1 for _ in trace.open())
        settings = _settings(tmp_path / f"p{partitions}", kafka_broker, topic)
        _run(spark, settings)
        store = open_store(settings.store_url)
        got = sorted(shape(a) for a in store.alerts())
        assert got == expected(SCENARIO)
        results[partitions] = _identity(store.alerts())
    assert results[1] == results[3]


def test_a_restart_from_the_checkpoint_reads_every_record_exactly_once(
    spark: SparkSession, kafka_broker: KafkaBroker, tmp_path: Path
) -> None:
    events = SCENARIOS[SCENARIO].run(seed=5)
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    write_trace(events[: len(events) // 2], first)
    write_trace(events[len(events) // 2 :], second)
    whole = tmp_path / "whole.jsonl"
    write_trace(events, whole)
    kafka_broker.create_topic("job.restart", partitions=2)
    kafka_broker.create_topic("job.straight", partitions=2)
    capped = {"kafka_max_offsets_per_trigger": 25}
    restarted = _settings(tmp_path / "restarted", kafka_broker, "job.restart", **capped)
    straight = _settings(tmp_path / "straight", kafka_broker, "job.straight", **capped)

    _produce(kafka_broker, "job.restart", first)
    _run(spark, restarted)
    _produce(kafka_broker, "job.restart", second)
    _run(spark, restarted)
    _produce(kafka_broker, "job.straight", whole)
    progress = [orjson.loads(p.json) for p in _run(spark, straight).recentProgress]
    # a batch the cap cut short says so in its progress (the source's latest offset is past its
    # end), and the job's listener records it as input left unread (/readyz)
    assert any(left_input_unread(p) for p in progress)

    one, two = open_store(straight.store_url), open_store(restarted.store_url)
    applied = sum(v for (name, _, _), v in two.counters().items() if name == "events")
    held = two.clusters()[0]["held"]
    assert applied + held == len(events)  # no gap, no duplicate
    assert sum(v for (n, _, _), v in two.counters().items() if n == "duplicates") == 0
    assert _identity(two.alerts()) == _identity(one.alerts())
    assert two.counters() == one.counters()
    written = batches(two, job_name(str(restarted.checkpoint_dir / "kafka")))
    assert len(written) >= len(events) // 25  # the cap held: at most 25 records a batch
