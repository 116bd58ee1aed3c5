"""``/metrics``' input age over a store written by hand (SQLite and PostgreSQL): how long ago an
event newer than every event before it last arrived, by the store's wall clock; and the job's
report age, how long ago it last reported progress."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from api import ApiSettings, create_app
from routewatch.changes import ChangeRow, ClusterClock, encode_clock
from routewatch.settings import load
from routewatch.store import Store, open_store

INPUT_AGE = "routewatch_stream_input_age_seconds"
LAG = "routewatch_stream_event_time_lag_seconds"
JOB_REPORT_AGE = "routewatch_stream_job_report_age_seconds"
JOB_ENDED = "routewatch_stream_job_ended"


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'routewatch.db'}"
    url: str = request.getfixturevalue("postgres").create_database(
        f"metrics_{uuid.uuid4().hex[:12]}"
    )
    return url


def _clock(cluster: str, max_received: int) -> ChangeRow:
    return encode_clock(cluster, ClusterClock(max_received, max_received, 0))


def _write(
    store: Store, monkeypatch: pytest.MonkeyPatch, batch: int, at_ms: int, *rows: ChangeRow
) -> None:
    """One batch as the job writes it, at the wall clock ``at_ms``."""
    monkeypatch.setattr("routewatch.store.store._now_ms", lambda: at_ms)
    store.write_batch("job", batch, rows)


def _scrape(url: str, tmp_path: Path) -> tuple[dict[str, list[float]], float, float]:
    """Every family's sample values, with the wall clock just before and after the scrape."""
    settings = load(ApiSettings, data_dir=tmp_path, store_url=url)
    with TestClient(create_app(settings)) as client:
        before = time.time()
        response = client.get("/metrics")
        after = time.time()
    assert response.status_code == 200
    families = text_string_to_metric_families(response.text)
    return {f.name: [s.value for s in f.samples] for f in families}, before, after


def _seconds_since(at_ms: int, value: float, before: float, after: float) -> bool:
    """Whether a gauge scraped between the wall clocks ``before`` and ``after`` (s) holds the
    seconds since ``at_ms``."""
    return before - at_ms / 1000 <= value <= after - at_ms / 1000


def test_input_age_is_absent_before_the_first_batch(store_url: str, tmp_path: Path) -> None:
    open_store(store_url).close()

    values, _, _ = _scrape(store_url, tmp_path)

    assert values["routewatch_exporter_up"] == [1]
    assert values[INPUT_AGE] == [] and values[LAG] == [] and values[JOB_REPORT_AGE] == []
    assert values[JOB_ENDED] == []


def test_input_age_counts_from_the_last_newer_event_of_any_cluster(
    store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    now_ms = int(time.time() * 1000)
    event_ms = now_ms - 3_600_000  # the events are an hour old: the lag is an hour
    store = open_store(store_url)
    try:
        _write(store, monkeypatch, 0, now_ms - 600_000, _clock("C", event_ms - 1))
        _write(store, monkeypatch, 1, now_ms - 300_000, _clock("D", event_ms))
        # a minute ago both clusters' clocks were written again, with no newer event
        _write(
            store, monkeypatch, 2, now_ms - 60_000, _clock("C", event_ms - 1), _clock("D", event_ms)
        )
        # 20 s ago Spark reported the query idle: the job is alive, with nothing to read
        monkeypatch.setattr("routewatch.store.store._now_ms", lambda: now_ms - 20_000)
        store.record_idle("job")
    finally:
        store.close()
    monkeypatch.undo()

    values, before, after = _scrape(store_url, tmp_path)

    # D's newest event last advanced 300 s before now_ms; C's earlier; the rewrites do not count
    (age,) = values[INPUT_AGE]
    assert _seconds_since(now_ms - 300_000, age, before, after)
    (lag,) = values[LAG]
    assert _seconds_since(event_ms, lag, before, after)
    (report_age,) = values[JOB_REPORT_AGE]
    assert _seconds_since(now_ms - 20_000, report_age, before, after)
    assert values[JOB_ENDED] == [0]


def test_a_job_s_recorded_end_is_1_while_no_other_job_runs(
    store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    now_ms = int(time.time() * 1000)

    def at(ago_ms: int) -> None:
        monkeypatch.setattr("routewatch.store.store._now_ms", lambda: now_ms - ago_ms)

    store = open_store(store_url)
    try:
        at(9_000)
        store.record_idle("spool")
        at(8_000)
        store.record_stop("spool")
        stopped, _, _ = _scrape(store_url, tmp_path)
        at(7_000)
        store.record_idle("kafka")
        running, _, _ = _scrape(store_url, tmp_path)
        at(6_000)
        store.record_stop("kafka", "OSError: disk full")
        failed, _, _ = _scrape(store_url, tmp_path)
    finally:
        store.close()

    assert stopped[JOB_ENDED] == [1]
    assert running[JOB_ENDED] == [0]  # (a job that runs and reports: the other's end is old news)
    assert failed[JOB_ENDED] == [1]
