"""The test harness: one Spark session and one real Kafka broker per test session."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

import pytest

from routewatch.testing.kafka import API_VERSION, KafkaBroker, running_broker
from routewatch.testing.postgres import Postgres, running_postgres


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    """A local[2] Spark session: UI off, UTC, 2 shuffle partitions, RocksDB state store."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from streaming.spark.session import spark_session, stop_session

    session = spark_session("local[2]", "routewatch-tests")
    try:
        yield session
    finally:
        stop_session(session)  # queries, state stores, then the session


@pytest.fixture(scope="session")
def kafka_broker() -> Iterator[KafkaBroker]:
    """A real Apache Kafka 0.9.0.1 broker with ZooKeeper on free 127.0.0.1 ports."""
    with running_broker() as broker:
        yield broker


@pytest.fixture(scope="session")
def postgres(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Postgres]:
    """A real PostgreSQL server on a free 127.0.0.1 port; ``routewatch`` is trusted there."""
    with running_postgres(tmp_path_factory.mktemp("postgres")) as server:
        yield server


@pytest.fixture
def kafka_env(kafka_broker: KafkaBroker, monkeypatch: pytest.MonkeyPatch) -> KafkaBroker:
    """Point the ROUTEWATCH_KAFKA_* settings at the test broker."""
    monkeypatch.setenv("ROUTEWATCH_KAFKA_BOOTSTRAP", kafka_broker.bootstrap)
    monkeypatch.setenv("ROUTEWATCH_KAFKA_API_VERSION", ".".join(map(str, API_VERSION)))
    return kafka_broker
