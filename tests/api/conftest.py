"""A real store, written by the streaming job over the demo scenario, for the API's tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from prometheus_client import CollectorRegistry
from pyspark.sql import SparkSession

from api import ApiSettings, create_app
from emitter.scenarios import SCENARIOS
from emitter.trace import write_trace
from routewatch.settings import load
from streaming.jobs import start_stream
from streaming.settings import StreamingSettings

BAD_LINES = ["{broken", '{"v": 1, "type": "send"}', "[1, 2]"]


@pytest.fixture(scope="session")
def store_dir(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("api-store")
    settings = load(StreamingSettings, data_dir=root, trigger_interval_s=0.1)
    write_trace(SCENARIOS["demo-mixed"].run(seed=1), settings.spool_dir / "demo.jsonl")
    (settings.spool_dir / "zz-bad.jsonl").write_text("\n".join(BAD_LINES) + "\n")
    query = start_stream(spark, settings, "spool")
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    return root


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


@pytest.fixture
def client(store_dir: Path, registry: CollectorRegistry) -> Iterator[TestClient]:
    settings = load(ApiSettings, data_dir=store_dir)
    with TestClient(create_app(settings, registry)) as c:
        yield c
