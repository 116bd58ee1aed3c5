"""Checkpoints of the earlier state layout (ten state variables) resume with the same results,
and their clusters move into the one map of this layout (``entries``)."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from routewatch.store import open_store
from streaming.jobs import start_stream
from streaming.legacy_state import holds_legacy_state
from streaming.settings import StreamingSettings
from tests.streaming.test_stream import _cut, _identity, _lines, _publish, _run, _settings

pytestmark = pytest.mark.spark

FIXTURES = Path(__file__).parent / "data" / "legacy_checkpoints"


def _outcome(settings: StreamingSettings) -> dict[str, Any]:
    store = open_store(settings.store_url)
    try:
        clusters = [(c["cluster"], c["stream_time"], c["held"]) for c in store.clusters()]
        return {
            "alerts": _identity(store.alerts()),
            "counters": sorted(map(str, store.counters().items())),
            "clusters": clusters,
        }
    finally:
        store.close()


@pytest.fixture(scope="module")
def fresh(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """This version alone over the two halves of the trace, one start each."""
    settings = _settings(tmp_path_factory.mktemp("fresh"))
    chunks = _cut(_lines(), 25)
    half = len(chunks) // 2
    _publish(settings.spool_dir, chunks[:half])
    _run(spark, settings)
    _publish(settings.spool_dir, chunks[half:], first=half)
    _run(spark, settings)
    return _outcome(settings)


def _install(fixture: str, settings: StreamingSettings) -> Path:
    """The fixture as this run's checkpoint. Two of its logs name absolute paths under the data
    directory it was written in: the file source's (spool files) and the state operator's
    metadata (its schema file); they are pointed at this run's."""
    checkpoint = settings.checkpoint_dir / "spool"
    shutil.copytree(FIXTURES / fixture, checkpoint)
    written = f"/tmp/routewatch-legacy-{fixture}"
    here = str(settings.data_dir.absolute())
    assert checkpoint == settings.data_dir / "checkpoints" / "spool"  # the layout it was written in
    logs = [*(checkpoint / "sources" / "0").iterdir()]
    logs += (checkpoint / "state" / "0" / "_metadata" / "v2").iterdir()
    for log in logs:
        log.write_text(log.read_text().replace(written, here))
    return checkpoint


@pytest.mark.parametrize("fixture", ["held_packed", "held_at"])
def test_a_checkpoint_of_the_earlier_layout_resumes_the_same_and_moves_every_cluster(
    spark: SparkSession,
    tmp_path: Path,
    fresh: dict[str, Any],
    fixture: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    settings = _settings(tmp_path)
    chunks = _cut(_lines(), 25)
    half = len(chunks) // 2
    # the store as the earlier version left it (the fixtures are checkpoints only): the first
    # half's changes, written by a query of its own
    _publish(settings.spool_dir, chunks[:half])
    query = start_stream(spark, settings, "spool", checkpoint=tmp_path / "first-half")
    query.processAllAvailable()
    query.stop()
    checkpoint = _install(fixture, settings)  # (its log lists the first half's files as read)
    assert holds_legacy_state(spark, checkpoint)
    _publish(settings.spool_dir, chunks[half:], first=half)

    with caplog.at_level(logging.INFO, logger="routewatch.stream"):
        _run(spark, settings)

    assert "holds clusters in the earlier state layout" in caplog.text
    assert _outcome(settings) == fresh
    # every cluster moved: the next start declares the one variable of this layout
    assert not holds_legacy_state(spark, checkpoint)


def test_a_new_checkpoint_is_not_in_the_earlier_layout(spark: SparkSession, tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    checkpoint = settings.checkpoint_dir / "spool"
    assert not holds_legacy_state(spark, checkpoint)
    _publish(settings.spool_dir, _cut(_lines(), 25)[:3])
    _run(spark, settings)
    assert not holds_legacy_state(spark, checkpoint)
