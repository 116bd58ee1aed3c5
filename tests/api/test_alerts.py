"""``/alerts`` over a store the streaming job wrote."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from fastapi.testclient import TestClient

from routewatch.alerts import ALERT_KINDS
from tests.support.traces import expected, shape

PROBLEM = "application/problem+json"


def test_alerts_are_the_scenarios_newest_first(client: TestClient) -> None:
    body = client.get("/alerts").json()

    got = sorted(shape(a) for a in body["data"])
    assert got == expected("demo-mixed")
    assert body["count"] == 4 and body["next"] is None
    opened = [(a["opened_at"], a["id"]) for a in body["data"]]
    assert opened == sorted(opened, reverse=True)


@pytest.mark.parametrize(
    ("query", "kinds"),
    [
        ("state=open", {"PARTIAL_COVERAGE", "NO_ROUTE_INFO", "BROKER_EXPIRED"}),
        ("state=resolved", {"AT_RISK"}),
        ("kind=BROKER_EXPIRED", {"BROKER_EXPIRED"}),
        ("severity=warning", {"AT_RISK"}),
        ("topic=StuckTopic", {"PARTIAL_COVERAGE", "AT_RISK"}),
        ("broker=broker-c", {"BROKER_EXPIRED"}),
        ("cluster=OtherCluster", set()),
        ("topic=x%27%20OR%201%3D1%20--", set()),  # looks like SQL: harmless
    ],
)
def test_filters(client: TestClient, query: str, kinds: set[str]) -> None:
    body = client.get(f"/alerts?{query}").json()

    assert {a["kind"] for a in body["data"]} == kinds
    assert body["count"] == len(body["data"])


def test_since_and_until_select_alerts_active_in_the_window(client: TestClient) -> None:
    alerts = client.get("/alerts").json()["data"]
    at_risk = next(a for a in alerts if a["kind"] == "AT_RISK")

    after = client.get(f"/alerts?since={at_risk['resolved_at'] + 1}").json()["data"]
    before = client.get(f"/alerts?until={at_risk['opened_at'] + 1}").json()["data"]

    assert "AT_RISK" not in {a["kind"] for a in after}
    assert [a["kind"] for a in before] == ["AT_RISK"]


def test_cursor_pagination_walks_every_alert_once(client: TestClient) -> None:
    seen: list[str] = []
    url = "/alerts?limit=1"
    while url:
        body = client.get(url).json()
        assert body["count"] == 4
        seen += [a["id"] for a in body["data"]]
        url = f"/alerts?limit=1&cursor={body['next']}" if body["next"] else ""

    assert seen == [a["id"] for a in client.get("/alerts").json()["data"]]


def test_one_alert_has_its_evidence_and_remedy(client: TestClient) -> None:
    first = client.get("/alerts?kind=PARTIAL_COVERAGE").json()["data"][0]

    alert = client.get(f"/alerts/{first['id']}").json()

    assert alert["evidence"]["coverage"] in {"1/3", "1/2", "0/2"}
    assert alert["remedy"].startswith("`mqadmin updateTopic")
    assert alert["acked_at"] is None and alert["silenced_until"] is None


@pytest.mark.parametrize(
    ("url", "status", "sentence"),
    [
        ("/alerts/nope", 404, "There is no alert with id nope."),
        ("/alerts?limit=1001", 422, "The parameter limit is invalid"),
        ("/alerts?state=nope", 422, "The parameter state is invalid: Input should be 'open'"),
        ("/alerts?severity=x", 422, "The parameter severity is invalid: Input should be"),
        ("/alerts?kind=NOPE", 422, "The parameter kind is invalid: Input should be"),
        ("/alerts?state=open&state=resolved", 400, "The query parameter state is given 2 times"),
        ("/alerts?kind=AT_RISK&state=open&kind=AT_RISK", 400, "The query parameter kind is given"),
        ("/topics?limit=1&limit=2", 400, "The query parameter limit is given 2 times"),
        ("/alerts?stat=open", 400, "The query parameter stat is not known here"),
        ("/alerts?cursor=zzz", 400, "The cursor is invalid"),
        ("/nowhere", 404, "There is no resource at /nowhere."),
    ],
)
def test_errors_are_problem_json_with_one_sentence(
    client: TestClient, url: str, status: int, sentence: str
) -> None:
    response = client.get(url)

    assert response.status_code == status
    assert response.headers["content-type"] == PROBLEM
    assert response.json()["status"] == status
    assert response.json()["detail"].startswith(sentence)
    assert "Traceback" not in response.text


def test_an_unknown_kind_is_refused_naming_every_valid_kind(client: TestClient) -> None:
    detail = client.get("/alerts?kind=NOPE").json()["detail"]

    assert [kind for kind in ALERT_KINDS if f"'{kind}'" not in detail] == []


def test_several_repeated_parameters_are_named_together(client: TestClient) -> None:
    response = client.get("/alerts?state=open&kind=AT_RISK&state=open&kind=AT_RISK&limit=5")

    assert response.status_code == 400
    assert response.json()["detail"] == (
        "The query parameters kind, state are given more than once; each takes one value."
    )


def test_concurrent_requests_are_all_answered(client: TestClient) -> None:
    """Each request's store is opened, used and closed on whichever worker threads are free."""
    paths = ["/alerts", "/topics", "/brokers", "/alerts?state=open"] * 12

    with ThreadPoolExecutor(max_workers=16) as pool:
        statuses = list(pool.map(lambda path: client.get(path).status_code, paths))

    assert statuses == [200] * len(paths)
