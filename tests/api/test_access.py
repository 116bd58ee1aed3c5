"""How the API opens the store: read-only connections kept and reused between requests."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from api import ApiSettings, create_app
from api.access import IDLE_READERS, StoreAccess
from routewatch.alerts import AlertState
from routewatch.settings import load
from routewatch.store import open_store
from tests.routewatch.test_store import _alert


def _app(data_dir: Path) -> tuple[TestClient, StoreAccess]:
    settings = load(ApiSettings, data_dir=data_dir)
    open_store(settings.store_url).close()  # an empty store, as the job creates it
    client = TestClient(create_app(settings))
    return client, client.app.state.store_access  # type: ignore[attr-defined]


def test_requests_reuse_one_idle_connection(tmp_path: Path) -> None:
    client, access = _app(tmp_path)

    for path in ["/alerts", "/topics", "/brokers", "/quarantine"] * 5:
        assert client.get(path).status_code == 200

    assert access.opened == 1


def test_a_request_that_fails_does_not_hand_its_connection_on(tmp_path: Path) -> None:
    client, access = _app(tmp_path)
    assert client.get("/alerts").status_code == 200

    assert client.get("/alerts?cursor=not-a-cursor").status_code == 400
    assert client.get("/alerts").status_code == 200

    assert access.opened == 2  # the failed request's connection was closed, not kept


def test_a_connection_left_in_a_transaction_is_closed_not_kept(tmp_path: Path) -> None:
    _, access = _app(tmp_path)
    store = access.open()
    store.db.execute("BEGIN")
    store.db.execute("SELECT COUNT(*) FROM alerts").fetchone()

    access.give_back(store, reusable=True)

    assert access.take_reader() is None


def test_idle_connections_are_kept_up_to_a_bound(tmp_path: Path) -> None:
    _, access = _app(tmp_path)
    stores = [access.open() for _ in range(IDLE_READERS + 2)]

    for store in stores:
        access.give_back(store, reusable=True)

    kept = [access.take_reader() for _ in range(IDLE_READERS + 2)]
    assert sum(store is not None for store in kept) == IDLE_READERS


def test_a_store_removed_under_a_serving_api_is_reported_missing(tmp_path: Path) -> None:
    client, _ = _app(tmp_path)
    assert client.get("/alerts").status_code == 200  # an idle connection is kept

    for name in ["routewatch.db", "routewatch.db-wal", "routewatch.db-shm"]:
        (tmp_path / name).unlink(missing_ok=True)
    response = client.get("/alerts")

    assert response.status_code == 503
    assert "does not exist yet" in response.json()["detail"]


def test_the_alert_stream_polls_on_a_kept_connection(tmp_path: Path) -> None:
    client, access = _app(tmp_path)
    writer = open_store(f"sqlite:///{tmp_path / 'routewatch.db'}")
    seen: list[str] = []
    states: list[AlertState] = ["open", "open", "resolved"]
    with client.stream("GET", "/alerts/stream") as response:
        lines = response.iter_lines()
        for batch, state in enumerate(states):
            # each change is written after the one before was streamed: a poll (or more) each
            writer.write_batch("job", batch, [_alert(state, updated_at=10 + batch)])
            while len(seen) <= batch:
                line = next(lines)
                if line.startswith("event: "):
                    seen.append(line.removeprefix("event: "))
    writer.close()

    assert seen == ["opened", "updated", "resolved"]
    assert access.opened == 1  # the availability check's connection, then every poll's


def test_a_bad_query_is_answered_as_one_when_there_is_no_store(tmp_path: Path) -> None:
    client = TestClient(create_app(load(ApiSettings, data_dir=tmp_path)))  # no store yet

    for path in [
        "/alerts?kind=NOPE",
        "/alerts?limit=0",
        "/topics?limit=x",
        "/alerts/stream?after=-1",
    ]:
        response = client.get(path)
        assert response.status_code == 422, path
        assert response.json()["detail"].startswith("The parameter "), path
    assert client.get("/alerts?kind=AT_RISK").status_code == 503  # a good query: no store
