"""Hostile and unlucky requests, over the real store the streaming job wrote.

Missing or wrong tokens on the mutating endpoints, values that look like SQL, the ``limit`` cap,
query parameters nobody declared, numbers larger than the store can hold, and a store that
another connection has locked. Each answer is problem+json with one sentence, never a server
error.
"""

from __future__ import annotations

import base64
import contextlib
import shutil
import sqlite3
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio
import httpx
import orjson
import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families
from starlette.types import ASGIApp, Message

from api import ApiSettings, create_app
from routewatch.settings import load

PROBLEM = "application/problem+json"
TOKEN = "s3cret"
SQLITE_INT_MAX = 2**63 - 1
REFUSED = (
    "This needs the header 'Authorization: Bearer <ROUTEWATCH_API_TOKEN>'; the token given is "
    "missing or wrong."
)
DISABLED = "Acknowledging and silencing are disabled: set ROUTEWATCH_API_TOKEN to enable them."
MUTATIONS = ["ack", "silence?until=1900000000000"]
SQL_LIKE = [
    "' OR 1=1 --",
    '"; DROP TABLE alerts; --',
    "x' UNION SELECT id, kind FROM alerts --",
    "') OR ('a'='a",
    "%",
]


@pytest.fixture
def data_dir(store_dir: Path, tmp_path: Path) -> Path:
    """A copy of the store, for tests that write to it or lock it."""
    for path in store_dir.glob("routewatch.db*"):
        shutil.copy(path, tmp_path / path.name)
    return tmp_path


def _client(data_dir: Path, **settings: Any) -> TestClient:
    return TestClient(create_app(load(ApiSettings, data_dir=data_dir, **settings)))


def _assert_problem(response: httpx.Response, status: int, detail: str) -> None:
    """``detail`` is the whole sentence, or its beginning when it ends with '...'."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == PROBLEM
    body = response.json()
    assert body["status"] == status
    if detail.endswith("..."):
        assert body["detail"].startswith(detail[:-3]), body["detail"]
    else:
        assert body["detail"] == detail
    assert "Traceback" not in response.text


def _tables(data_dir: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every table of the store, with all its rows, read on a connection of our own."""
    db = sqlite3.connect(f"file:{data_dir / 'routewatch.db'}?mode=ro", uri=True)
    try:
        names = [n for (n,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {n: sorted(db.execute(f'SELECT * FROM "{n}"'), key=repr) for n in sorted(names)}
    finally:
        db.close()


# -- the mutating endpoints and their bearer token ---------------------------------------------


@pytest.mark.parametrize(
    "authorization",
    [
        None,
        "Bearer nope",
        "Bearer s3cre",
        "Bearer s3cret-and-more",
        "Bearer S3CRET",
        "Bearer  s3cret",
        "Bearer",
        "Basic s3cret",
        "s3cret",
    ],
)
@pytest.mark.parametrize("mutation", MUTATIONS)
def test_a_missing_or_wrong_token_is_refused_and_changes_nothing(
    data_dir: Path, mutation: str, authorization: str | None
) -> None:
    client = _client(data_dir, api_token=TOKEN)
    alert_id = client.get("/alerts?kind=BROKER_EXPIRED").json()["data"][0]["id"]
    headers = {} if authorization is None else {"Authorization": authorization}

    response = client.post(f"/alerts/{alert_id}/{mutation}", headers=headers)

    _assert_problem(response, 401, REFUSED)
    assert response.headers["www-authenticate"] == "Bearer"
    alert = client.get(f"/alerts/{alert_id}").json()
    assert (alert["acked_at"], alert["acked_by"], alert["silenced_until"]) == (None, None, None)
    assert _tables(data_dir)["alert_acks"] == []


def test_a_wrong_token_is_refused_before_the_alert_is_looked_up(data_dir: Path) -> None:
    client = _client(data_dir, api_token=TOKEN)

    response = client.post("/alerts/no-such-alert/ack", headers={"Authorization": "Bearer x"})

    _assert_problem(response, 401, REFUSED)  # not 404: no probing which alerts exist


@pytest.mark.parametrize("authorization", ["Bearer ", f"Bearer {TOKEN}"])
@pytest.mark.parametrize("api_token", [None, ""])
@pytest.mark.parametrize("mutation", MUTATIONS)
def test_an_unset_or_empty_token_setting_disables_the_mutations(
    data_dir: Path, mutation: str, api_token: str | None, authorization: str
) -> None:
    client = _client(data_dir, api_token=api_token)
    alert_id = client.get("/alerts").json()["data"][0]["id"]

    response = client.post(
        f"/alerts/{alert_id}/{mutation}", headers={"Authorization": authorization}
    )

    _assert_problem(response, 403, DISABLED)
    assert _tables(data_dir)["alert_acks"] == []


# -- values that look like SQL -------------------------------------------------------------------


@pytest.mark.parametrize("value", SQL_LIKE)
def test_sql_looking_values_match_nothing_and_change_nothing(
    client: TestClient, store_dir: Path, value: str
) -> None:
    before = _tables(store_dir)
    quoted = quote(value, safe="")

    for name in ("cluster", "topic", "broker"):
        body = client.get("/alerts", params={name: value}).json()
        assert (body["data"], body["count"], body["next"]) == ([], 0, None), name
    body = client.get("/topics", params={"cluster": value}).json()
    assert (body["data"], body["count"], body["next"]) == ([], 0, None)
    _assert_problem(client.get(f"/alerts/{quoted}"), 404, f"There is no alert with id {value}.")
    _assert_problem(
        client.get(f"/topics/{quoted}/{quoted}"),
        404,
        f"Topic {value} has no route in cluster {value}.",
    )
    for name in ("state", "kind", "severity"):  # these have a closed set of values
        _assert_problem(
            client.get("/alerts", params={name: value}), 422, f"The parameter {name} is invalid..."
        )

    assert _tables(store_dir) == before
    assert client.get("/alerts").json()["count"] == 4


@pytest.mark.parametrize("value", SQL_LIKE)
def test_sql_looking_alert_ids_acknowledge_nothing(data_dir: Path, value: str) -> None:
    client = _client(data_dir, api_token=TOKEN)
    before = _tables(data_dir)
    auth = {"Authorization": f"Bearer {TOKEN}"}

    ack = client.post(f"/alerts/{quote(value, safe='')}/ack", headers=auth)
    silence = client.post(f"/alerts/{quote(value, safe='')}/silence?until=1", headers=auth)

    _assert_problem(ack, 404, f"There is no alert with id {value}.")
    _assert_problem(silence, 404, f"There is no alert with id {value}.")
    assert _tables(data_dir) == before


# -- limit ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("url", ["/alerts", "/topics", "/quarantine"])
def test_limit_takes_1_to_1000_as_documented(client: TestClient, url: str) -> None:
    assert client.get(f"{url}?limit=1000").status_code == 200  # the cap itself is accepted
    for value in (0, -1, 1001, 10**30):
        _assert_problem(
            client.get(f"{url}?limit={value}"), 422, "The parameter limit is invalid: Input..."
        )
    _assert_problem(client.get(f"{url}?limit=all"), 422, "The parameter limit is invalid: Input...")


# -- query parameters nobody declared ---------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "url", "accepted"),
    [
        ("GET", "/alerts/some-id", "none"),
        ("GET", "/alerts/stream", "after"),
        ("POST", "/alerts/some-id/ack", "none"),
        ("POST", "/alerts/some-id/silence?until=1", "until"),
        ("GET", "/topics", "cluster, coverage_below, cursor, limit, system"),
        ("GET", "/topics/DefaultCluster/StuckTopic", "since, until, window"),
        ("GET", "/brokers", "none"),
        ("GET", "/quarantine", "limit"),
        ("GET", "/healthz", "none"),
        ("GET", "/readyz", "none"),
    ],
)
def test_an_unknown_query_parameter_is_refused_naming_those_accepted(
    client: TestClient, method: str, url: str, accepted: str
) -> None:
    separator = "&" if "?" in url else "?"

    # Refused before anything else: before the token check, before a stream starts.
    response = client.request(method, f"{url}{separator}pretty=1")

    _assert_problem(
        response,
        400,
        f"The query parameter pretty is not known here; the ones accepted are: {accepted}.",
    )


def test_an_undeclared_method_is_refused_with_allow(client: TestClient) -> None:
    response = client.delete("/alerts")

    _assert_problem(response, 405, "The method DELETE is not allowed on /alerts; use GET.")
    assert response.headers["allow"] == "GET"


# -- numbers the store cannot hold ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "parameter"),
    [
        (f"/alerts?until={SQLITE_INT_MAX + 1}", "until"),
        (f"/alerts?since={SQLITE_INT_MAX + 1}", "since"),
        ("/alerts?since=-1", "since"),
        (f"/topics/DefaultCluster/StuckTopic?until={SQLITE_INT_MAX + 1}", "until"),
        (f"/topics/DefaultCluster/StuckTopic?since={SQLITE_INT_MAX + 1}", "since"),
        (f"/alerts/stream?after={SQLITE_INT_MAX + 1}", "after"),
    ],
)
def test_a_number_beyond_the_stores_integers_is_refused_not_a_server_error(
    client: TestClient, url: str, parameter: str
) -> None:
    _assert_problem(client.get(url), 422, f"The parameter {parameter} is invalid...")


def test_a_forged_cursor_beyond_the_stores_integers_is_refused(client: TestClient) -> None:
    cursor = base64.urlsafe_b64encode(orjson.dumps([SQLITE_INT_MAX + 1, "x"])).decode()

    response = client.get(f"/alerts?cursor={cursor}")

    _assert_problem(
        response, 400, "The cursor is invalid: the cursor is not one this API returned."
    )


def test_a_silence_beyond_the_stores_integers_is_refused(data_dir: Path) -> None:
    client = _client(data_dir, api_token=TOKEN)
    alert_id = client.get("/alerts").json()["data"][0]["id"]

    response = client.post(
        f"/alerts/{alert_id}/silence?until={SQLITE_INT_MAX + 1}",
        headers={"Authorization": f"Bearer {TOKEN}"},
    )

    _assert_problem(response, 422, "The parameter until is invalid...")
    assert _tables(data_dir)["alert_acks"] == []


async def _first_event_id(app: ASGIApp, last_event_id: bytes) -> str:
    """GET /alerts/stream with these exact header bytes (a test client would re-encode them as
    UTF-8; a server hands them over as they came), and the ``id:`` of the first event."""
    body = b""
    seen = anyio.Event()

    async def receive() -> Message:
        await seen.wait()  # then the client goes away, which ends the stream
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        nonlocal body
        if message["type"] == "http.response.start":
            assert message["status"] == 200
        elif message["type"] == "http.response.body":
            body += message.get("body", b"")
            if b"\n\n" in body.partition(b"id: ")[2]:
                seen.set()

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": "/alerts/stream",
        "raw_path": b"/alerts/stream",
        "root_path": "",
        "query_string": b"",
        "headers": [(b"host", b"testserver"), (b"last-event-id", last_event_id)],
        "client": ("127.0.0.1", 50000),
        "server": ("testserver", 80),
    }
    with anyio.fail_after(10):
        await app(scope, receive, send)
    return body.partition(b"id: ")[2].split(b"\n")[0].decode()


@pytest.mark.parametrize(
    "last_event_id",
    [b"\xb2", str(SQLITE_INT_MAX + 1).encode(), b"12abc"],
    ids=["superscript-two", "beyond-int64", "not-a-number"],
)
def test_a_last_event_id_that_is_not_a_sequence_number_replays_from_the_start(
    client: TestClient, store_dir: Path, last_event_id: bytes
) -> None:
    first = min(row[0] for row in _tables(store_dir)["alert_log"])

    # b"\xb2" arrives as latin-1 "²", which str.isdigit() takes for a digit and int() refuses
    got = anyio.run(_first_event_id, client.app, last_event_id)

    assert got == str(first)


# -- a store that another connection has locked --------------------------------------------------


@contextlib.contextmanager
def _locked(db: Path, *, readers_too: bool) -> Iterator[None]:
    """Another connection holding the store's exclusive lock until the block ends.

    The store is in WAL mode, where ``BEGIN EXCLUSIVE`` keeps other writers out but not readers;
    in exclusive locking mode it takes the file lock itself, which keeps readers out too.
    """
    other = sqlite3.connect(db, isolation_level=None)
    try:
        if readers_too:
            other.execute("PRAGMA locking_mode = EXCLUSIVE")
        other.execute("BEGIN EXCLUSIVE")
        yield
        other.execute("ROLLBACK")
    finally:
        other.close()


def _exporter_up(response: httpx.Response) -> float:
    assert response.status_code == 200
    for family in text_string_to_metric_families(response.text):
        if family.name == "routewatch_exporter_up":
            return float(family.samples[0].value)
    raise AssertionError("routewatch_exporter_up is not exported")


def _busy(data_dir: Path) -> str:
    return (
        f"The store at {data_dir / 'routewatch.db'} is busy: database is locked; try again shortly."
    )


def test_a_store_locked_by_another_connection_answers_503_then_recovers(data_dir: Path) -> None:
    client = _client(data_dir)
    assert client.get("/alerts").status_code == 200  # the API is serving
    # The lock is taken while the API has no connection open (an idle one, kept for reuse,
    # would keep the exclusive locker out instead).
    client.app.state.store_access.close_idle()  # type: ignore[attr-defined]

    # Reads wait for the store's busy timeout, 5 s (2 s for /metrics and /readyz): all at once.
    with _locked(data_dir / "routewatch.db", readers_too=True), ThreadPoolExecutor(4) as pool:
        alerts, topics, metrics, ready = pool.map(
            client.get, ["/alerts", "/topics", "/metrics", "/readyz"]
        )

    _assert_problem(alerts, 503, _busy(data_dir))
    _assert_problem(topics, 503, _busy(data_dir))
    assert _exporter_up(metrics) == 0
    assert ready.status_code == 503
    assert ready.json()["checks"]["store"].endswith("is busy: database is locked")
    assert client.get("/alerts").json()["count"] == 4
    assert client.get("/topics").status_code == 200
    assert _exporter_up(client.get("/metrics")) == 1


def test_an_api_started_while_a_writer_holds_the_lock_answers_503_then_recovers(
    data_dir: Path,
) -> None:
    client = _client(data_dir)

    # A first request brings the schema up to date, which needs the write lock (5 s, then 2 s).
    with _locked(data_dir / "routewatch.db", readers_too=False):
        alerts = client.get("/alerts")
        metrics = client.get("/metrics")

    _assert_problem(alerts, 503, _busy(data_dir))
    assert _exporter_up(metrics) == 0
    assert client.get("/alerts").json()["count"] == 4
    assert client.get("/topics").status_code == 200
    assert _exporter_up(client.get("/metrics")) == 1


def test_a_writer_in_a_transaction_does_not_keep_a_serving_api_from_reading(
    data_dir: Path,
) -> None:
    client = _client(data_dir)
    assert client.get("/alerts").status_code == 200

    with _locked(data_dir / "routewatch.db", readers_too=False):
        assert client.get("/alerts").json()["count"] == 4  # WAL: readers do not wait
        assert _exporter_up(client.get("/metrics")) == 1
