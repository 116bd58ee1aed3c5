"""The store against a real SQLite database in a temporary directory, and against a real
PostgreSQL server (a database of its own per test): the same behaviour from both."""

from __future__ import annotations

import orjson
import pytest

from routewatch.store import ChangeRow, Store, open_store


@pytest.fixture
def store(store_url: str) -> Store:
    return open_store(store_url)


def _alert(state: str = "open", updated_at: int = 10, resolved_at: int | None = None) -> ChangeRow:
    alert = {
        "id": "broker_expired-1",
        "kind": "BROKER_EXPIRED",
        "severity": "critical",
        "state": state,
        "cluster": "C",
        "topic": None,
        "broker": "b",
        "broker_id": 0,
        "cause": None,
        "opened_at": 10,
        "updated_at": updated_at,
        "resolved_at": resolved_at,
        "summary": "s",
        "evidence": {"x": [1]},
        "remedy": "r",
    }
    return ChangeRow(
        "C", "alert", "broker_expired-1|000000", updated_at, orjson.dumps(alert).decode()
    )


def _route(at: int, config: list[int] | None) -> ChangeRow:
    return ChangeRow(
        "C", "route", orjson.dumps(["T", "ns1", "b", 0]).decode(), at, orjson.dumps(config).decode()
    )


def test_migrations_are_applied_once(store_url: str) -> None:
    first = open_store(store_url)
    again = open_store(store_url)

    assert first.migrate() == again.migrate() == 2
    assert [r[0] for r in again.db.execute("SELECT version FROM schema_version")] == [1, 2]


def test_a_batch_is_written_once_even_when_replayed(store: Store) -> None:
    rows = [_alert(), ChangeRow("C", "count", "events|send", 10, "5")]

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


def test_route_changes_become_validity_intervals(store: Store) -> None:
    store.write_batch("job", 0, [_route(100, [4, 4, 6])])
    store.write_batch(
        "job",
        1,
        [
            _route(200, [8, 8, 6]),
        ],
    )
    store.write_batch("job", 2, [_route(300, None)])

    intervals = [
        (r["write_queue_nums"], r["valid_from"], r["valid_to"])
        for r in store.route_intervals("C", "T")
    ]
    assert intervals == [(4, 100, 200), (8, 200, 300)]


def test_bad_and_late_input_is_kept_and_counted_by_reason(store: Store) -> None:
    bad = ChangeRow(
        None,
        "bad",
        "not_json",
        None,
        orjson.dumps({"raw": "{x", "reason": "not_json", "detail": "d"}).decode(),
    )
    late = ChangeRow(
        "C", "late", "late", None, orjson.dumps({"raw": "{}", "detail": "old"}).decode()
    )

    store.write_batch("job", 0, [bad, late, ChangeRow("C", "count", "late|", 5, "1")])

    assert [(q["reason"], q["raw"]) for q in store.quarantine()] == [
        ("late", "{}"),
        ("not_json", "{x"),
    ]
    assert store.counters() == {("quarantined", "not_json", ""): 1, ("late", "", "C"): 1}


def test_retention_prunes_old_rows_but_never_counters(store: Store) -> None:
    clock = ChangeRow(
        "C", "clock", "C", 1_000_000, orjson.dumps({"max_received": 1, "held": 0}).decode()
    )
    store.write_batch(
        "job", 0, [_alert(), _route(100, [4, 4, 6]), ChangeRow("C", "count", "late|", 5, "3")]
    )
    store.write_batch("job", 1, [_alert("resolved", 500, 500), _route(200, None), clock])
    written = store.db.execute("SELECT MAX(written_at) FROM alert_log").fetchone()[0]

    deleted = store.prune(keep_ms=10_000, now_ms=written + 20_000)

    assert deleted == {"quarantine": 0, "alert_log": 2, "alerts": 1, "route_intervals": 1}
    assert store.alerts() == [] and store.route_intervals("C", "T") == []
    assert store.counters() == {("late", "", "C"): 3, ("alerts_opened", "BROKER_EXPIRED", "C"): 1}


def test_retention_keeps_what_is_recent(store: Store) -> None:
    clock = ChangeRow("C", "clock", "C", 600, orjson.dumps({"max_received": 1, "held": 0}).decode())
    store.write_batch("job", 0, [_alert("resolved", 500, 500), _route(100, [4, 4, 6]), clock])

    assert store.prune(keep_ms=10_000) == {
        "quarantine": 0,
        "alert_log": 0,
        "alerts": 0,
        "route_intervals": 0,
    }
    assert len(store.alerts()) == 1
