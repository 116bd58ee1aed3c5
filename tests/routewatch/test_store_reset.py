"""Deleting the store for a reset: nothing of it is left, on either backend, and the next job's
store is migrated from the first migration."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from routewatch.store import Store, locate, open_store
from routewatch.store.reset import TABLES, delete_store, last_report_ms
from routewatch.store.schema import MIGRATIONS

_TABLES_QUERY = {
    "sqlite": "SELECT name FROM sqlite_master WHERE type = 'table'",
    "postgresql": "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'",
}


def _tables(url: str) -> set[str]:
    store = open_store(url, readonly=True)
    try:
        query = _TABLES_QUERY["sqlite" if locate(url).file is not None else "postgresql"]
        names = {r[0] for r in store.db.execute(query)}
    finally:
        store.close()
    return names - {"sqlite_sequence"}  # (SQLite's own, for AUTOINCREMENT)


def test_the_tables_a_reset_drops_are_every_table_of_a_migrated_store(store_url: str) -> None:
    open_store(store_url).close()

    assert _tables(store_url) == set(TABLES)


def test_a_deleted_store_leaves_nothing_and_is_migrated_again_from_the_first_migration(
    store_url: str,
) -> None:
    store = open_store(store_url)
    store.record_idle("the-job")
    reported = last_report_ms(store_url)  # (while the job's connection is open: its WAL too)
    file = locate(store_url).file
    files = sorted(file.parent.glob(f"{file.name}*")) if file is not None else []
    store.close()
    assert reported is not None and abs(reported / 1000 - time.time()) < 60

    deleted = delete_store(store_url)

    if file is not None:
        assert deleted[0] == f"the file {file}"
        assert set(deleted) <= {f"the file {p}" for p in files}
        assert not list(file.parent.glob(f"{file.name}*"))
    else:
        assert deleted == [f"the tables of the store at {locate(store_url).where}"]
        assert _tables(store_url) == set()
    assert last_report_ms(store_url) is None
    store = open_store(store_url)
    try:
        versions = sorted(r[0] for r in store.db.execute("SELECT version FROM schema_version"))
        assert versions == [v for v, _ in MIGRATIONS]
        assert store.jobs() == []
    finally:
        store.close()


def test_there_is_nothing_to_delete_where_no_store_was_made(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'never.db'}"

    assert last_report_ms(url) is None
    assert delete_store(url) == []
    assert not (tmp_path / "never.db").exists()


def test_a_job_that_recorded_its_stop_no_longer_counts_as_running(store_url: str) -> None:
    store = open_store(store_url)
    try:
        store.record_idle("spool")
        store.record_idle("kafka")
        store.record_stop("spool")
        running = last_report_ms(store_url)
        assert running is not None and running == _job(store, "kafka")["reported_at"]
        store.record_stop("kafka", "OSError: disk full")
        assert last_report_ms(store_url) is None
        store.record_idle("spool")  # (restarted)
        assert last_report_ms(store_url) == _job(store, "spool")["reported_at"]
    finally:
        store.close()


def test_a_store_from_before_jobs_stops_counts_every_recent_report(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a running job of the version before keeps its store at that version's migrations
    monkeypatch.setattr("routewatch.store.store.MIGRATIONS", MIGRATIONS[:4])
    store = open_store(store_url)
    try:
        store.db.execute("INSERT INTO jobs (job, reported_at) VALUES ('old', 1234)")
    finally:
        store.close()

    assert last_report_ms(store_url) == 1234


def _job(store: Store, name: str) -> dict[str, Any]:
    return next(j for j in store.jobs() if j["job"] == name)
