"""``/alerts/stream`` (SSE, resumable), acknowledgements and silences, and a topic's windows."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest
from fastapi.testclient import TestClient

from api import ApiSettings, create_app
from routewatch.settings import load
from routewatch.store import open_store


def _events(client: TestClient, count: int, headers: dict[str, str] | None = None) -> list[dict]:  # type: ignore[type-arg]
    events: list[dict] = []  # type: ignore[type-arg]
    current: dict[str, str] = {}
    with client.stream("GET", "/alerts/stream", headers=headers or {}) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        for line in response.iter_lines():
            if not line:
                if "id" in current:
                    events.append({**current, "data": orjson.loads(current["data"])})
                current = {}
                if len(events) == count:
                    break
                continue
            field, _, value = line.partition(": ")
            current[field] = value
    return events


def test_the_stream_replays_the_alert_log_and_resumes_after_last_event_id(
    client: TestClient, store_dir: Path
) -> None:
    log = open_store(f"sqlite:///{store_dir / 'routewatch.db'}").alert_log()

    events = _events(client, len(log))

    assert [int(e["id"]) for e in events] == [row["seq"] for row in log]
    assert [e["event"] for e in events] == [row["change"] for row in log]
    assert {e["data"]["kind"] for e in events if e["event"] == "opened"} == {
        "PARTIAL_COVERAGE",
        "AT_RISK",
        "NO_ROUTE_INFO",
        "BROKER_EXPIRED",
    }
    resumed = _events(client, len(log) - 3, headers={"Last-Event-ID": events[2]["id"]})
    assert [e["id"] for e in resumed] == [e["id"] for e in events[3:]]


@pytest.fixture
def writable(store_dir: Path, tmp_path: Path) -> Path:
    """A copy of the store, so that acknowledgements do not leak into other tests."""
    for path in store_dir.glob("routewatch.db*"):
        shutil.copy(path, tmp_path / path.name)
    return tmp_path


def test_ack_and_silence_are_refused_without_a_configured_token(writable: Path) -> None:
    client = TestClient(create_app(load(ApiSettings, data_dir=writable)))
    alert_id = client.get("/alerts").json()["data"][0]["id"]

    response = client.post(f"/alerts/{alert_id}/ack")

    assert response.status_code == 403
    assert response.json()["detail"] == (
        "Acknowledging and silencing are disabled: set ROUTEWATCH_API_TOKEN to enable them."
    )


@pytest.mark.parametrize("url", ["/ack", "/silence", "/silence?until=soon", "/silence?until=-1"])
def test_a_disabled_ack_or_silence_is_refused_before_its_parameters_are_read(
    writable: Path, url: str
) -> None:
    client = TestClient(create_app(load(ApiSettings, data_dir=writable)))
    alert_id = client.get("/alerts").json()["data"][0]["id"]

    response = client.post(f"/alerts/{alert_id}{url}")

    assert response.status_code == 403, response.json()
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["detail"].startswith("Acknowledging and silencing are disabled")


def test_the_token_is_checked_before_the_parameters(writable: Path) -> None:
    client = TestClient(create_app(load(ApiSettings, data_dir=writable, api_token="s3cret")))
    alert_id = client.get("/alerts").json()["data"][0]["id"]
    token = {"Authorization": "Bearer s3cret"}

    missing = client.post(f"/alerts/{alert_id}/silence")
    wrong = client.post(f"/alerts/{alert_id}/silence?until=soon", headers={"Authorization": "x"})
    no_until = client.post(f"/alerts/{alert_id}/silence", headers=token)
    bad_until = client.post(f"/alerts/{alert_id}/silence?until=soon", headers=token)

    assert (missing.status_code, wrong.status_code) == (401, 401)
    assert (no_until.status_code, bad_until.status_code) == (422, 422)
    assert no_until.json()["detail"] == "The parameter until is invalid: Field required."


def test_ack_and_silence_need_the_right_bearer_token(writable: Path) -> None:
    client = TestClient(create_app(load(ApiSettings, data_dir=writable, api_token="s3cret")))
    alert_id = client.get("/alerts?kind=BROKER_EXPIRED").json()["data"][0]["id"]

    missing = client.post(f"/alerts/{alert_id}/ack")
    wrong = client.post(f"/alerts/{alert_id}/ack", headers={"Authorization": "Bearer nope"})
    acked = client.post(f"/alerts/{alert_id}/ack", headers={"Authorization": "Bearer s3cret"})
    silenced = client.post(
        f"/alerts/{alert_id}/silence?until=1900000000000",
        headers={"Authorization": "Bearer s3cret"},
    )

    assert (missing.status_code, wrong.status_code) == (401, 401)
    assert missing.headers["content-type"] == "application/problem+json"
    assert acked.status_code == 200 and acked.json()["acked_at"] is not None
    assert silenced.json()["silenced_until"] == 1_900_000_000_000
    assert client.get(f"/alerts/{alert_id}").json()["acked_by"] == "token"
    unknown = client.post("/alerts/nope/ack", headers={"Authorization": "Bearer s3cret"})
    assert unknown.status_code == 404


def test_a_topic_has_its_current_route_and_its_route_per_window(client: TestClient) -> None:
    body = client.get("/topics/DefaultCluster/StuckTopic?window=30").json()

    assert body["current"]["auto_created"] is True
    windows = body["windows"]
    assert len(windows) == 20  # ten minutes of 30 s windows, ending at stream time
    assert all(w["end"] - w["start"] == 30_000 for w in windows)
    assert windows[-1]["brokers"] == body["current"]["brokers"]


@pytest.mark.parametrize(
    ("url", "status"),
    [
        ("/topics/DefaultCluster/NoSuchTopic", 404),
        ("/topics/DefaultCluster/StuckTopic?since=10&until=5", 422),
        ("/topics/DefaultCluster/StuckTopic?since=0&until=100000000&window=1", 422),
        ("/topics/DefaultCluster/StuckTopic?windows=3", 400),
    ],
)
def test_topic_errors(client: TestClient, url: str, status: int) -> None:
    response = client.get(url)

    assert response.status_code == status
    assert response.headers["content-type"] == "application/problem+json"
