"""The console's pages over the demo scenario's store (filled as the job fills it, no Spark, no
browser): the Now page lists exactly the open alerts the API lists, worst first; every link on
it leads to a page that answers; a topic's matrix is its route as ``/topics/{cluster}/{topic}``
gives it, NameServer by NameServer and broker by broker; its timeline holds each change at the
instant the trace made it; RocketMQ's own topics are hidden until asked for; topics are paged by
the server; every link honours the public URL's path prefix."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson
import pytest
from fastapi.testclient import TestClient

from api import ApiSettings, create_app
from emitter.scenarios import SCENARIOS
from routewatch.codec import encode
from routewatch.settings import load
from streaming.settings import StreamingSettings
from tests.streaming.engine.events import Trace
from tests.support.stores import EngineJob

CLUSTER = "DefaultCluster"
HREF = re.compile(r'(?:href|src)="([^"]+)"')


@pytest.fixture
def client(store_dir: Path) -> TestClient:
    return TestClient(create_app(load(ApiSettings, data_dir=store_dir)))


def _ids(html: str) -> list[str]:
    return re.findall(r'data-alert-id="([^"]+)"', html)


def test_the_now_page_lists_the_open_alerts_the_api_lists_worst_first(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    listed = client.get("/alerts", params={"state": "open"}).json()["data"]
    rank = {"critical": 0, "warning": 1, "info": 2}
    worst = sorted(listed, key=lambda a: (rank[a["severity"]], -a["opened_at"], a["id"]))
    assert _ids(page.text) == [a["id"] for a in worst]
    assert _ids(client.get("/ui/fragments/open-alerts").text) == [a["id"] for a in worst]
    for a in listed:  # each with its summary and remedy, escaped
        assert a["summary"].replace("'", "&#39;").replace('"', "&#34;") in page.text


def test_every_link_of_the_console_leads_to_a_page_that_answers(client: TestClient) -> None:
    seen: set[str] = set()
    todo = ["/", "/ui/topics", "/ui/topics?system=true"]
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        response = client.get(path)
        assert response.status_code == 200, path
        if "text/html" in response.headers["content-type"] and path.startswith(("/ui/", "/?", "/")):
            for link in HREF.findall(response.text):
                link = link.replace("&amp;", "&")
                if link.startswith("/") and not link.startswith(("/docs", "/runbook#")):
                    todo.append(link.split("#")[0])
    # every kind of page was reached: topics, brokers, alerts' JSON
    assert any(p.startswith(f"/ui/topics/{CLUSTER}/") for p in seen)
    assert any(p.startswith(f"/ui/brokers/{CLUSTER}/") for p in seen)
    assert any(p.startswith("/alerts/") for p in seen)


def _matrix(html: str) -> dict[str, dict[str, tuple[int, int, int]]]:
    """NameServer -> broker -> (read, write, perm) of the page's held cells."""
    out: dict[str, dict[str, tuple[int, int, int]]] = {}
    for ns, row in re.findall(r'<tr data-namesrv="([^"]+)">(.*?)</tr>', html, re.S):
        out[ns] = {
            b: (int(r), int(w), int(p))
            for b, r, w, p in re.findall(
                r'data-broker="([^"]+)" data-broker-id="\d+" data-read="(\d+)" '
                r'data-write="(\d+)" data-perm="(\d+)"',
                row,
            )
        }
    return out


@pytest.mark.parametrize("topic", ["StuckTopic", "PaymentsTopic", "TBW102", "broker-c"])
def test_a_topics_matrix_is_its_route_per_namesrv_and_broker(
    client: TestClient, topic: str
) -> None:
    page = client.get(f"/ui/topics/{CLUSTER}/{topic}")
    assert page.status_code == 200
    detail = client.get(f"/topics/{CLUSTER}/{topic}").json()
    wanted = {
        ns: {q["broker"]: (q["read_queue_nums"], q["write_queue_nums"], q["perm"]) for q in queues}
        for ns, queues in detail["current"]["namesrvs"].items()
    }
    got = _matrix(page.text)
    assert {ns: cells for ns, cells in got.items() if cells} == wanted
    # an expected master that lacks it is a column of its own, "not routed"
    for broker in set(detail["current"]["expected_brokers"]) - set(detail["current"]["brokers"]):
        assert f'class="absent" data-broker="{broker}"' in page.text


def _first_listed(events: list[dict[str, Any]], topic: str) -> dict[tuple[str, str], int]:
    """From the trace: when each NameServer first had each broker list ``topic`` (its first
    registration there whose table holds it)."""
    first: dict[tuple[str, str], int] = {}
    for e in sorted(events, key=lambda e: e["ts"]):
        if e["type"] == "heartbeat" and topic in (e.get("topics") or {}):
            first.setdefault((e["namesrv"], e["broker"]), e["ts"])
    return first


def test_a_topics_timeline_holds_each_change_at_the_instant_the_trace_made_it(
    client: TestClient,
) -> None:
    events = [orjson.loads(encode(e)) for e in SCENARIOS["demo-mixed"].run(seed=1)]
    first = _first_listed(events, "StuckTopic")
    assert first  # (the scenario makes it)
    page = client.get(f"/ui/topics/{CLUSTER}/StuckTopic", params={"hours": 24}).text
    gained = {
        (ns, broker): int(at)
        for at, ns, broker in re.findall(
            r'data-at="(\d+)" data-what="gained" data-namesrv="([^"]+)" data-broker="([^"]+)"',
            page,
        )
    }
    assert gained == first
    # its alerts are on the same axis, at their instants
    alerts = client.get("/alerts", params={"topic": "StuckTopic"}).json()["data"]
    for a in alerts:
        assert f'data-at="{a["opened_at"]}" data-alert="{a["id"]}"' in page


def test_rocketmqs_own_topics_are_hidden_until_asked_for(client: TestClient) -> None:
    users = client.get("/ui/topics").text
    every = client.get("/ui/topics", params={"system": "true"}).text
    for own in ("TBW102", CLUSTER):
        assert f">{own}</a>" not in users and f">{own}</a>" in every
    assert ">StuckTopic</a>" in users
    only = client.get("/ui/topics", params={"name": "stuck"}).text
    assert re.findall(r'/ui/topics/DefaultCluster/([^"]+)"', only) == ["StuckTopic"]


def test_topics_are_paged_by_the_server(tmp_path: Path) -> None:
    t = Trace()
    topics: dict[str, int | tuple[int, int, int]] = {f"T{i:03d}": 4 for i in range(250)}
    for s in (0, 30, 60):
        t.hb(s, "a", topics)
        t.hb(s, "b", dict(list(topics.items())[:100]))
    job = EngineJob(load(StreamingSettings, data_dir=tmp_path))
    job.write([raw for _, _, _, raw in t.arrivals()])
    client = TestClient(create_app(load(ApiSettings, data_dir=tmp_path)))
    names: list[str] = []
    path: str | None = "/ui/topics"
    pages = 0
    while path is not None:
        html = client.get(path).text
        names += re.findall(r'/ui/topics/C/(T\d+)"', html)
        following = re.search(r'<a href="([^"]+)" rel="next">', html)
        path = following.group(1).replace("&amp;", "&") if following else None
        pages += 1
    assert pages == 3 and len(names) == 250 == len(set(names))
    assert names[:150] == sorted(f"T{i:03d}" for i in range(100, 250))  # half covered first
    assert "250 topics" in client.get("/ui/topics").text


def test_every_link_honours_the_public_urls_path_prefix(store_dir: Path) -> None:
    settings = load(ApiSettings, data_dir=store_dir, public_url="https://proxy.example/rw/")
    client = TestClient(create_app(settings))
    for path in ("/", "/ui/topics", f"/ui/topics/{CLUSTER}/StuckTopic"):
        html = client.get(path).text
        links = [link for link in HREF.findall(html) if not link.startswith(("#", "?"))]
        assert links and all(link.startswith("/rw/") for link in links), path
        assert 'data-base="/rw"' in html


def test_pages_ask_the_browser_to_load_nothing_from_elsewhere(client: TestClient) -> None:
    page = client.get("/")
    assert "default-src 'self'" in page.headers["content-security-policy"]
    assert not re.search(r'(?:href|src)="(?:https?:)?//', page.text)


def test_an_unknown_topic_is_one_sentence(client: TestClient) -> None:
    missing = client.get(f"/ui/topics/{CLUSTER}/NoSuchTopic")
    assert missing.status_code == 404
    assert missing.json()["detail"] == (
        f"The store has nothing of topic NoSuchTopic in cluster {CLUSTER}."
    )
