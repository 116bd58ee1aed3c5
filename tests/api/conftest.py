"""A real store, written by the streaming job over the demo scenario, for the API's tests."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from prometheus_client import CollectorRegistry
from pyspark.sql import SparkSession

from api import ApiSettings, create_app
from emitter.scenarios import SCENARIOS, on_clusters
from routewatch.settings import load
from routewatch.testing.postgres import Postgres
from streaming.job.stream import start_stream
from streaming.settings import StreamingSettings
from tests.support.traces import write_trace

BAD_LINES = ["{broken", '{"v": 1, "type": "send"}', "[1, 2]"]


@pytest.fixture(scope="session")
def store_dir(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("api-store")
    settings = load(StreamingSettings, data_dir=root, trigger_interval_s=0.1)
    write_trace(SCENARIOS["demo-mixed"].run(seed=1), settings.spool_dir / "demo.jsonl")
    (settings.spool_dir / "zz-bad.jsonl").write_text("\n".join(BAD_LINES) + "\n")
    _run(spark, settings)
    return root


# The PostgreSQL store: two scenarios, each on a cluster of its own (Dark ends with no live broker).
PG_CLUSTERS = {"DefaultCluster": "demo-mixed", "Dark": "no-live-broker"}


@pytest.fixture(scope="session")
def pg_store_url(
    spark: SparkSession, postgres: Postgres, tmp_path_factory: pytest.TempPathFactory
) -> str:
    """A PostgreSQL store written by the streaming job (production mode's store)."""
    url = postgres.create_database(f"api_{uuid.uuid4().hex[:12]}")
    root = tmp_path_factory.mktemp("api-pg-store")
    settings = load(StreamingSettings, data_dir=root, store_url=url, trigger_interval_s=0.1)
    write_trace(on_clusters(PG_CLUSTERS, first_seed=1), settings.spool_dir / "two.jsonl")
    _run(spark, settings)
    return url


def _run(spark: SparkSession, settings: StreamingSettings) -> None:
    query = start_stream(spark, settings, "spool")
    try:
        query.processAllAvailable()
    finally:
        query.stop()


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


@pytest.fixture
def client(store_dir: Path, registry: CollectorRegistry) -> Iterator[TestClient]:
    settings = load(ApiSettings, data_dir=store_dir)
    with TestClient(create_app(settings, registry)) as c:
        yield c
