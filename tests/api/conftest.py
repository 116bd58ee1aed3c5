"""A real store holding what the streaming job writes over the demo scenario, for the API's tests
— filled by the job's own step and the store's API, without Spark (``EngineJob``; a test in
``tests/streaming/job`` holds it to the Spark job's store). The API's tests are not about Spark
and must not start it: a test here that does fails."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from prometheus_client import CollectorRegistry

from api import ApiSettings, create_app
from emitter.scenarios import SCENARIOS, on_clusters
from routewatch.settings import load
from routewatch.testing.postgres import Postgres
from streaming.settings import StreamingSettings
from tests.support.stores import EngineJob
from tests.support.traces import write_trace

BAD_LINES = ["{broken", '{"v": 1, "type": "send"}', "[1, 2]"]


@pytest.fixture(scope="session")
def store_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("api-store")
    settings = load(StreamingSettings, data_dir=root)
    write_trace(SCENARIOS["demo-mixed"].run(seed=1), settings.spool_dir / "demo.jsonl")
    (settings.spool_dir / "zz-bad.jsonl").write_text("\n".join(BAD_LINES) + "\n")
    EngineJob(settings).write_files(
        settings.spool_dir / "demo.jsonl", settings.spool_dir / "zz-bad.jsonl"
    )
    return root


# The PostgreSQL store: two scenarios, each on a cluster of its own (Dark ends with no live broker).
PG_CLUSTERS = {"DefaultCluster": "demo-mixed", "Dark": "no-live-broker"}


@pytest.fixture(scope="session")
def pg_store_url(postgres: Postgres, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A PostgreSQL store holding what the streaming job writes (production mode's store)."""
    url = postgres.create_database(f"api_{uuid.uuid4().hex[:12]}")
    root = tmp_path_factory.mktemp("api-pg-store")
    settings = load(StreamingSettings, data_dir=root, store_url=url)
    write_trace(on_clusters(PG_CLUSTERS, first_seed=1), settings.spool_dir / "two.jsonl")
    EngineJob(settings).write_files(settings.spool_dir / "two.jsonl")
    return url


@pytest.fixture(autouse=True)
def _no_spark(request: pytest.FixtureRequest) -> Iterator[None]:
    """The API's tests are not about Spark: one that asks for a Spark session, or leaves one
    running that was not running before it, fails."""
    assert "spark" not in request.fixturenames, "an API test asks for a Spark session"
    before = _spark_context()
    yield
    assert before is not None or _spark_context() is None, "an API test started Spark"


def _spark_context() -> object | None:
    pyspark = sys.modules.get("pyspark")
    return None if pyspark is None else pyspark.SparkContext._active_spark_context


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


@pytest.fixture
def client(store_dir: Path, registry: CollectorRegistry) -> Iterator[TestClient]:
    settings = load(ApiSettings, data_dir=store_dir)
    with TestClient(create_app(settings, registry)) as c:
        yield c
