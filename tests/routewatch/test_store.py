"""The store against a real SQLite database in a temporary directory, and against a real
PostgreSQL server (a database of its own per test): the same behaviour from both."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from routewatch.alerts import Alert, AlertState, StoredAlert
from routewatch.changes import (
    BadLine,
    ChangeRow,
    ClusterClock,
    Config,
    Count,
    LateEvent,
    RouteChange,
    encode_alert,
    encode_bad,
    encode_clock,
    encode_count,
    encode_late,
    encode_route,
)
from routewatch.store import Store, open_store
from routewatch.store.remedy_runs import record_run, remedy_runs
from routewatch.store.schema import MIGRATIONS
from tests.support.stores import batches


@pytest.fixture
def store(store_url: str) -> Store:
    return open_store(store_url)


def _expired(
    state: AlertState = "open", updated_at: int = 10, resolved_at: int | None = None
) -> Alert:
    return Alert(
        id="broker_expired-1",
        kind="BROKER_EXPIRED",
        severity="critical",
        state=state,
        cluster="C",
        topic=None,
        broker="b",
        broker_id=0,
        cause=None,
        opened_at=10,
        updated_at=updated_at,
        resolved_at=resolved_at,
        summary="s",
        evidence={"x": [1]},
        remedy="r",
        plan=None,
    )


def _alert(
    state: AlertState = "open", updated_at: int = 10, resolved_at: int | None = None
) -> ChangeRow:
    return encode_alert(_expired(state, updated_at, resolved_at), 0)


def _route(at: int, config: Config | None) -> ChangeRow:
    return encode_route("C", RouteChange("T", ("ns1", "b", 0), at, config))


def _clock(cluster: str, max_received: int | None, held: int = 0) -> ChangeRow:
    return encode_clock(cluster, ClusterClock(max_received, max_received, held))


def _count(name: str, label: str, value: int) -> ChangeRow:
    return encode_count("C", Count(name, label, value, 5))


def _intervals(store: Store) -> list[tuple[int, int, int | None]]:
    """Topic T's route intervals in cluster C: (write queues, valid from, valid to)."""
    rows = store.db.execute(
        "SELECT write_queue_nums, valid_from, valid_to FROM route_intervals "
        "WHERE cluster = 'C' AND topic = 'T' ORDER BY valid_from"
    )
    return [tuple(r) for r in rows]


@pytest.fixture
def wall_clock(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The store's wall clock (ms), set by the test: ``wall_clock[0]``."""
    now = [0]
    monkeypatch.setattr("routewatch.store.store._now_ms", lambda: now[0])
    return now


def test_migrations_are_applied_once(store_url: str) -> None:
    first = open_store(store_url)
    again = open_store(store_url)

    assert first.migrate() == again.migrate() == 7
    versions = [r[0] for r in again.db.execute("SELECT version FROM schema_version")]
    assert versions == [1, 2, 3, 4, 5, 6, 7]


def test_a_batch_is_written_once_even_when_replayed(store: Store) -> None:
    rows = [_alert(), _count("events", "send", 5)]

    assert store.write_batch("job", 0, rows) is True
    assert store.write_batch("job", 0, rows) is False
    assert store.write_batch("other-job", 0, rows) is True

    assert store.counters()[("events", "send", "C")] == 10  # two jobs, one batch each
    assert len(store.alert_log()) == 2


def test_an_alert_is_updated_in_place_and_keeps_its_first_detected_at(store: Store) -> None:
    store.write_batch("job", 0, [_alert()])
    detected = store.alerts()[0]["detected_at"]

    store.write_batch("job", 1, [_alert("resolved", 50, 50)])

    (alert,) = store.alerts()
    assert (alert["state"], alert["resolved_at"], alert["detected_at"]) == (
        "resolved",
        50,
        detected,
    )
    assert alert["evidence"] == {"x": [1]}
    assert [e["change"] for e in store.alert_log()] == ["opened", "resolved"]
    assert store.alert_log(after=1)[0]["alert"]["state"] == "resolved"


def test_an_alert_keeps_every_field_of_the_record_in_its_table_and_its_log(store: Store) -> None:
    store.write_batch("job", 0, [_alert()])

    (alert,) = store.alerts()
    assert alert == dataclasses.asdict(StoredAlert.detected(_expired(), alert["detected_at"]))
    assert [e["alert"] for e in store.alert_log()] == [alert]


def test_route_changes_become_validity_intervals(store: Store) -> None:
    store.write_batch("job", 0, [_route(100, (4, 4, 6))])
    store.write_batch("job", 1, [_route(200, (8, 8, 6))])
    store.write_batch("job", 2, [_route(300, None)])

    assert _intervals(store) == [(4, 100, 200), (8, 200, 300)]


def test_bad_and_late_input_is_kept_and_counted_by_reason(store: Store) -> None:
    bad = encode_bad(None, BadLine("not_json", "d", "{x"))
    late = encode_late("C", LateEvent("old", "{}"))

    store.write_batch("job", 0, [bad, late, _count("late", "", 1)])

    assert [(q["reason"], q["raw"]) for q in store.quarantine()] == [
        ("late", "{}"),
        ("not_json", "{x"),
    ]
    assert store.counters() == {("quarantined", "not_json", ""): 1, ("late", "", "C"): 1}


def _remedy_run(ended_at: int) -> dict[str, Any]:
    return {
        "alert_id": "broker_expired-0",
        "cluster": "C",
        "kind": "BROKER_EXPIRED",
        "mode": "dry_run",
        "alternative": False,
        "actor": "os:tester@here",
        "started_at": ended_at - 10,
        "ended_at": ended_at,
        "outcome": "dry run",
        "refusal": None,
        "plan": {},
        "steps": [],
    }


def test_retention_prunes_old_rows_but_never_counters(store: Store) -> None:
    clock = encode_clock("C", ClusterClock(1_000_000, 1, 0))
    store.write_batch("job", 0, [_alert(), _route(100, (4, 4, 6)), _count("late", "", 3)])
    store.write_batch("job", 1, [_alert("resolved", 500, 500), _route(200, None), clock])
    written = store.db.execute("SELECT MAX(written_at) FROM alert_log").fetchone()[0]
    for ended in (written, written + 15_000):  # a remedy run audited, then a later one
        record_run(store, _remedy_run(ended))

    deleted = store.prune(keep_ms=10_000, now_ms=written + 20_000)

    assert deleted == {
        "quarantine": 0,
        "alert_log": 2,
        "alerts": 1,
        "route_intervals": 1,
        "remedy_runs": 1,
    }
    assert store.alerts() == [] and _intervals(store) == []
    assert [r["ended_at"] for r in remedy_runs(store)] == [written + 15_000]
    assert store.counters() == {("late", "", "C"): 3, ("alerts_opened", "BROKER_EXPIRED", "C"): 1}


def test_retention_keeps_what_is_recent(store: Store) -> None:
    clock = encode_clock("C", ClusterClock(600, 1, 0))
    store.write_batch("job", 0, [_alert("resolved", 500, 500), _route(100, (4, 4, 6)), clock])

    assert store.prune(keep_ms=10_000) == {
        "quarantine": 0,
        "alert_log": 0,
        "alerts": 0,
        "route_intervals": 0,
        "remedy_runs": 0,
    }
    assert len(store.alerts()) == 1


def test_input_at_moves_only_when_the_newest_event_received_grows(
    store: Store, wall_clock: list[int]
) -> None:
    def written(batch: int, at: int, *rows: ChangeRow) -> dict[str, tuple[int, int]]:
        wall_clock[0] = at
        store.write_batch("job", batch, rows)
        return {c["cluster"]: (c["input_at"], c["updated_at"]) for c in store.clusters()}

    # the first write sets it, even with nothing received yet (D: bad input only)
    assert written(0, 1_000, _clock("C", 500), _clock("D", None)) == {
        "C": (1_000, 1_000),
        "D": (1_000, 1_000),
    }
    # the same newest event (events held, late or duplicate ones): written, input_at kept
    assert written(1, 2_000, _clock("C", 500, held=3), _clock("D", None)) == {
        "C": (1_000, 2_000),
        "D": (1_000, 2_000),
    }
    # a newer event: input_at is the write's wall clock; a first event counts as newer
    assert written(2, 3_000, _clock("C", 900), _clock("D", 100)) == {
        "C": (3_000, 3_000),
        "D": (3_000, 3_000),
    }
    # a batch replayed after a restart writes nothing; one cluster advancing moves its own only
    wall_clock[0] = 4_000
    assert store.write_batch("job", 2, [_clock("C", 900), _clock("D", 100)]) is False
    assert written(3, 5_000, _clock("C", 900), _clock("D", 101)) == {
        "C": (3_000, 5_000),
        "D": (5_000, 5_000),
    }


def test_a_store_from_before_input_at_starts_it_at_the_last_clock_write(
    store_url: str, monkeypatch: pytest.MonkeyPatch, wall_clock: list[int]
) -> None:
    monkeypatch.setattr("routewatch.store.store.MIGRATIONS", MIGRATIONS[:2])
    old = open_store(store_url)
    old.db.execute(
        "INSERT INTO clusters (cluster, stream_time, max_received, held, updated_at) "
        "VALUES ('C', 500, 500, 0, 1234)"
    )
    old.close()
    monkeypatch.setattr("routewatch.store.store.MIGRATIONS", MIGRATIONS)

    store = open_store(store_url)
    try:
        assert store.clusters()[0]["input_at"] == 1234
        wall_clock[0] = 2_000
        store.write_batch("job", 0, [_clock("C", 500)])
        assert store.clusters()[0]["input_at"] == 1234
        wall_clock[0] = 3_000
        store.write_batch("job", 1, [_clock("C", 501)])
        assert store.clusters()[0]["input_at"] == 3_000
    finally:
        store.close()


def _job(store: Store) -> tuple[int, int | None]:
    [row] = store.jobs()
    return row["reported_at"], row["behind_since"]


def test_every_progress_report_is_the_jobs_last_sign_of_life(
    store: Store, wall_clock: list[int]
) -> None:
    wall_clock[0] = 1_000
    store.write_batch("job", 0, [_clock("C", 500)])
    store.record_progress("job", 0, 10, 50)
    assert _job(store) == (1_000, None)

    # idle: Spark's report every 10 s while the query finds nothing to read
    wall_clock[0] = 11_000
    store.record_idle("job")
    assert _job(store) == (11_000, None)
    assert [b["batch_id"] for b in batches(store, "job")] == [0]  # no batch for it

    # batches that leave input unread: behind since the first of them, until one reads it all
    for batch_id, now in ((1, 12_000), (2, 13_000)):
        wall_clock[0] = now
        store.write_batch("job", batch_id, [])
        store.record_progress("job", batch_id, 100, 900, behind=True)
    assert _job(store) == (13_000, 12_000)
    wall_clock[0] = 14_000
    store.write_batch("job", 3, [])
    store.record_progress("job", 3, 40, 300)
    assert _job(store) == (14_000, None)
    wall_clock[0] = 15_000
    store.record_progress("job", 4, 100, 900, behind=True)
    wall_clock[0] = 16_000
    store.record_idle("job")  # idle: nothing left unread
    assert _job(store) == (16_000, None)


def test_a_job_s_end_is_recorded_until_it_reports_again(
    store: Store, wall_clock: list[int]
) -> None:
    wall_clock[0] = 1_000
    store.record_progress("job", 0, 10, 50)
    wall_clock[0] = 2_000
    store.record_stop("job")
    [row] = store.jobs()
    assert (row["reported_at"], row["stopped_at"], row["failure"]) == (1_000, 2_000, None)

    # restarted: its first report clears the stop; then it fails
    wall_clock[0] = 3_000
    store.record_idle("job")
    [row] = store.jobs()
    assert (row["reported_at"], row["stopped_at"]) == (3_000, None)
    wall_clock[0] = 4_000
    store.record_stop("job", "OSError: [Errno 28] No space left on device")
    [row] = store.jobs()
    assert (row["stopped_at"], row["failure"]) == (
        4_000,
        "OSError: [Errno 28] No space left on device",
    )

    # started again: the start is a report (the listener's, as idle), and clears the end
    wall_clock[0] = 5_000
    store.record_idle("job")
    [row] = store.jobs()
    assert (row["reported_at"], row["stopped_at"], row["failure"]) == (5_000, None, None)

    # a job that ended before it ever reported
    store.record_stop("other", "ValueError: bad")
    assert {j["job"]: j["stopped_at"] for j in store.jobs()} == {"job": None, "other": 5_000}


def test_a_store_from_before_jobs_starts_each_from_its_last_batch(
    store_url: str, monkeypatch: pytest.MonkeyPatch, wall_clock: list[int]
) -> None:
    monkeypatch.setattr("routewatch.store.store.MIGRATIONS", MIGRATIONS[:3])
    old = open_store(store_url)
    for job, batch_id, now in (("a", 0, 1_000), ("a", 1, 2_000), ("b", 0, 1_500)):
        wall_clock[0] = now
        old.write_batch(job, batch_id, [])
    old.close()
    monkeypatch.setattr("routewatch.store.store.MIGRATIONS", MIGRATIONS)

    store = open_store(store_url)
    try:
        assert [(j["job"], j["reported_at"], j["behind_since"]) for j in store.jobs()] == [
            ("a", 2_000, None),
            ("b", 1_500, None),
        ]
    finally:
        store.close()


def test_a_batch_s_clocks_of_one_cluster_from_several_buckets_are_stored_as_one(
    store: Store,
) -> None:
    # each state bucket holding a shard of C writes C's clock with the events of C it holds
    store.write_batch("job", 0, [_clock("C", 500, held=3), _clock("D", 400), _clock("C", 500)])
    store.write_batch("job", 1, [_clock("C", 900, held=2), _clock("C", 900, held=5)])

    clocks = {c["cluster"]: (c["max_received"], c["held"]) for c in store.clusters()}
    assert clocks == {"C": (900, 7), "D": (400, 0)}
