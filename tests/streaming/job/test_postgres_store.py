"""Production mode's store: the job writes to a real PostgreSQL exactly what it writes to SQLite,
the API reads it, and a PostgreSQL outage is retried until the job catches up."""

from __future__ import annotations

import logging
import os
import uuid
from pathlib import Path
from typing import Any

import orjson
import pytest
from fastapi.testclient import TestClient
from prometheus_client import CollectorRegistry
from pyspark.sql import SparkSession

from api import ApiSettings, create_app
from emitter.scenarios import on_clusters
from routewatch.codec import encode
from routewatch.settings import load
from routewatch.store import open_store
from routewatch.testing.kafka import KafkaBroker
from routewatch.testing.postgres import Postgres
from routewatch.testing.processes import wait_for
from streaming.job.stream import start_stream
from streaming.settings import StreamingSettings
from tests.support.stores import snapshot

pytestmark = [pytest.mark.slow, pytest.mark.spark]

CLUSTERS = {"Demo": "demo-mixed", "Refusing": "restarted-auto-create-off-stale-tbw102"}


def _lines() -> list[bytes]:
    return [encode(e) for e in on_clusters(CLUSTERS, first_seed=3)]


def _publish(spool: Path, name: str, lines: list[bytes]) -> None:
    spool.mkdir(parents=True, exist_ok=True)
    staged = spool / f".{name}.tmp"
    staged.write_bytes(b"".join(line + b"\n" for line in lines))
    os.replace(staged, spool / name)


def _run(spark: SparkSession, settings: StreamingSettings, source: str = "spool") -> None:
    query = start_stream(spark, settings, source)
    try:
        query.processAllAvailable()
    finally:
        query.stop()


def _produce(broker: KafkaBroker, topic: str, lines: list[bytes]) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all")
    try:
        for line in lines:
            producer.send(topic, value=line, key=orjson.loads(line)["cluster"].encode())
        producer.flush(60)
    finally:
        producer.close()


def _settings(root: Path, spool: Path, **extra: object) -> StreamingSettings:
    return load(StreamingSettings, data_dir=root, spool_dir=spool, trigger_interval_s=0.2, **extra)


@pytest.mark.parametrize("source", ["spool", pytest.param("kafka", marks=pytest.mark.kafka)])
def test_the_job_stores_in_postgresql_what_it_stores_in_sqlite(
    spark: SparkSession, postgres: Postgres, tmp_path: Path, source: str, request: Any
) -> None:
    spool = tmp_path / "spool"
    extra: dict[str, object] = {}
    if source == "spool":
        _publish(spool, "part-1.jsonl", _lines())
    else:  # production mode's transport
        broker: KafkaBroker = request.getfixturevalue("kafka_broker")
        topic = f"pg.{uuid.uuid4().hex[:8]}"
        broker.create_topic(topic, partitions=2)
        _produce(broker, topic, _lines())
        extra = {
            "kafka_bootstrap": broker.bootstrap,
            "kafka_topic": topic,
        }
    lite = _settings(tmp_path / "sqlite", spool, **extra)
    pg_url = postgres.create_database(f"job_{uuid.uuid4().hex[:12]}")
    pg = _settings(tmp_path / "pg", spool, store_url=pg_url, **extra)

    _run(spark, lite, source)
    _run(spark, pg, source)

    expected = snapshot(open_store(lite.store_url))
    got = snapshot(open_store(pg_url))
    assert expected["alerts"] and expected["route_intervals"]
    assert got == expected

    registry = CollectorRegistry()
    with TestClient(create_app(load(ApiSettings, store_url=pg_url), registry)) as client:
        body = client.get("/alerts").json()
        assert body["count"] == len(expected["alerts"])
        assert client.get("/topics?cluster=Demo").json()["count"] > 0
        client.get("/metrics")
    assert registry.get_sample_value("routewatch_exporter_up") == 1


def test_a_postgresql_outage_is_retried_and_the_job_catches_up(
    spark: SparkSession, postgres: Postgres, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    lines = _lines()
    half = len(lines) // 2
    reference_spool = tmp_path / "reference-spool"
    _publish(reference_spool, "all.jsonl", lines)
    reference = _settings(tmp_path / "reference", reference_spool)
    _run(spark, reference)

    spool = tmp_path / "spool"
    pg_url = postgres.create_database(f"outage_{uuid.uuid4().hex[:12]}")
    settings = _settings(tmp_path / "pg", spool, store_url=pg_url)
    _publish(spool, "part-1.jsonl", lines[:half])
    query = start_stream(spark, settings, "spool")
    try:
        query.processAllAvailable()
        with postgres.down():
            with TestClient(create_app(load(ApiSettings, store_url=pg_url))) as client:
                answer = client.get("/alerts")
            assert answer.status_code == 503
            assert answer.headers["content-type"] == "application/problem+json"
            assert answer.json()["detail"].endswith("; try again shortly.")
            with caplog.at_level(logging.WARNING, logger="routewatch"):
                _publish(spool, "part-2.jsonl", lines[half:])
                wait_for(
                    lambda: "; retrying in" in caplog.text,
                    120,
                    "the job retrying the store while PostgreSQL is down",
                    interval=0.2,
                )
            assert query.isActive, query.exception()
        query.processAllAvailable()
        assert query.isActive, query.exception()
    finally:
        query.stop()

    expected = snapshot(open_store(reference.store_url))
    got = snapshot(open_store(pg_url))
    assert got["alerts"] == expected["alerts"]
    assert got == expected
