"""``GET /topics`` pages, and its summary cache per store version, over stores the streaming
job wrote: SQLite (the demo scenario) and PostgreSQL (two scenarios, a cluster each)."""

from __future__ import annotations

import base64
import dataclasses
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient

from api import ApiSettings, create_app
from api.models import TopicPublic, TopicsPublic
from api.topic_cache import MAX_PAGE_TOPICS, PageKey, RenderedPage, TopicCache
from emitter.scenarios import on_clusters
from routewatch.settings import load
from routewatch.store import Store
from routewatch.store.views import TopicIndex
from streaming.settings import StreamingSettings
from tests.support.stores import EngineJob
from tests.support.traces import write_trace

PROBLEM = "application/problem+json"
FILTERS = [
    {},
    {"coverage_below": 1},
    {"coverage_below": 0.75},
    {"cluster": "DefaultCluster"},
    {"system": "false"},
    {"system": "true", "cluster": "DefaultCluster"},
]


@pytest.fixture(params=["sqlite", "postgresql"])
def any_client(request: pytest.FixtureRequest, store_dir: Path) -> Iterator[TestClient]:
    """The API over the SQLite store of ``store_dir``, and over the PostgreSQL one."""
    if request.param == "sqlite":
        settings = load(ApiSettings, data_dir=store_dir)
    else:
        settings = load(ApiSettings, store_url=request.getfixturevalue("pg_store_url"))
    with TestClient(create_app(settings)) as c:
        yield c


def _walk(client: TestClient, limit: int, **filters: Any) -> tuple[list[dict[str, Any]], set[int]]:
    """Every page, following ``next``: the items in order, and the counts the pages gave."""
    items: list[dict[str, Any]] = []
    counts: set[int] = set()
    cursor: str | None = None
    while True:
        params = {**filters, "limit": limit} | ({"cursor": cursor} if cursor else {})
        body = client.get("/topics", params=params).json()
        assert len(body["data"]) <= limit
        items += body["data"]
        counts.add(body["count"])
        cursor = body["next"]
        if cursor is None:
            return items, counts


def _order(topic: dict[str, Any]) -> tuple[float, str, str]:
    coverage = 2.0 if topic["coverage"] is None else topic["coverage"]
    return (coverage, topic["cluster"], topic["topic"])


def _cache(client: TestClient) -> TopicCache:
    cache: TopicCache = client.app.state.topic_cache  # type: ignore[attr-defined]
    return cache


@pytest.mark.parametrize(
    "filters",
    FILTERS,
    ids=["all", "below-1", "below-0.75", "cluster", "not-system", "system-of-cluster"],
)
def test_small_pages_return_every_topic_once_in_order_as_one_large_page(
    any_client: TestClient, filters: dict[str, Any]
) -> None:
    whole = any_client.get("/topics", params={**filters, "limit": 1000}).json()

    items, counts = _walk(any_client, 1, **filters)

    assert whole["next"] is None
    assert items == whole["data"]
    assert counts == {whole["count"]} and whole["count"] == len(items)
    keys = [_order(t) for t in items]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    below = filters.get("coverage_below")
    if below is not None:
        assert all(t["coverage"] is not None and t["coverage"] < below for t in items)


def test_system_filters_return_exactly_the_system_and_the_other_topics(
    any_client: TestClient,
) -> None:
    everything = any_client.get("/topics?limit=1000").json()["data"]
    system = any_client.get("/topics?limit=1000&system=true").json()
    others = any_client.get("/topics?limit=1000&system=false").json()

    assert system["data"] == [t for t in everything if t["system"]]
    assert others["data"] == [t for t in everything if not t["system"]]
    assert system["count"] == len(system["data"]) > 0 and others["count"] == len(others["data"]) > 0
    assert {"TBW102", "DefaultCluster_REPLY_TOPIC"} & {t["topic"] for t in system["data"]}


def test_the_order_is_worst_coverage_first_unknown_last(any_client: TestClient) -> None:
    items, _ = _walk(any_client, 2)
    known = [t for t in items if t["coverage"] is not None]

    assert items[: len(known)] == known  # unknown coverage last
    assert [t["coverage"] for t in known] == sorted(t["coverage"] for t in known)
    assert known[0]["coverage"] < known[-1]["coverage"]


def test_topics_of_a_cluster_without_a_live_master_have_unknown_coverage_and_come_last(
    pg_store_url: str,
) -> None:
    with TestClient(create_app(load(ApiSettings, store_url=pg_store_url))) as client:
        items = client.get("/topics?limit=1000").json()["data"]

    dark = [t for t in items if t["cluster"] == "Dark"]
    assert dark and all(t["coverage"] is None and t["expected_brokers"] == [] for t in dark)
    assert items[-len(dark) :] == dark


def test_count_is_every_matching_topic_and_next_is_there_while_topics_follow(
    any_client: TestClient,
) -> None:
    everything = any_client.get("/topics?limit=1000").json()
    first = any_client.get("/topics?limit=1").json()
    default = any_client.get("/topics").json()

    assert everything["count"] == len(everything["data"]) > 2
    assert (first["count"], len(first["data"])) == (everything["count"], 1)
    assert first["next"] is not None and first["data"] == everything["data"][:1]
    assert default["data"] == everything["data"][:100]  # the default limit is 100
    last = any_client.get(
        "/topics", params={"limit": everything["count"] - 1, "cursor": first["next"]}
    ).json()
    assert last["next"] is None and last["data"] == everything["data"][1:]


def test_a_cluster_without_topics_is_an_empty_page(any_client: TestClient) -> None:
    body = any_client.get("/topics?cluster=Elsewhere&limit=1").json()

    assert body == {"data": [], "count": 0, "next": None}


def test_every_listed_topic_is_its_detail_current_route(any_client: TestClient) -> None:
    listed = any_client.get("/topics?limit=1000").json()["data"]

    for topic in listed:
        path = f"/topics/{quote(topic['cluster'], safe='')}/{quote(topic['topic'], safe='')}"
        detail = any_client.get(path).json()
        assert detail["current"] == topic, topic["topic"]


@pytest.mark.parametrize(
    "cursor",
    [
        "zzz",
        base64.urlsafe_b64encode(b'[1700000000000, "an-alert-id"]').decode(),  # /alerts' kind
        base64.urlsafe_b64encode(b'["low", "DefaultCluster", "StuckTopic"]').decode(),
        base64.urlsafe_b64encode(b"{}").decode(),
    ],
)
def test_an_invalid_cursor_is_a_400_problem_with_one_sentence(
    client: TestClient, cursor: str
) -> None:
    response = client.get("/topics", params={"cursor": cursor})

    assert response.status_code == 400
    assert response.headers["content-type"] == PROBLEM
    assert response.json()["detail"] == (
        "The cursor is invalid: the cursor is not one this API returned."
    )


def test_the_summary_is_built_once_per_batch_and_again_after_a_new_batch(tmp_path: Path) -> None:
    settings = load(StreamingSettings, data_dir=tmp_path)
    first = on_clusters({"First": "broker-dies"}, 1)
    # One clock for the whole stream: the second cluster's events follow the first's (earlier
    # ones would be late), and only for 10 s, which expires none of the first's brokers.
    later = on_clusters({"Second": "broker-dies"}, 2)
    begin = later[0].ts
    shift = first[-1].ts + 1_000 - begin
    later = [dataclasses.replace(e, ts=e.ts + shift) for e in later if e.ts < begin + 10_000]
    job = EngineJob(settings)
    write_trace(first, settings.spool_dir / "1.jsonl")
    job.write_files(settings.spool_dir / "1.jsonl")
    with TestClient(create_app(load(ApiSettings, data_dir=tmp_path))) as client:
        before = client.get("/topics?limit=1000").json()
        client.get("/topics?limit=1")
        client.get("/metrics")
        assert _cache(client).builds == 1  # one store version: one summary, shared

        write_trace(later, settings.spool_dir / "2.jsonl")
        job.write_files(settings.spool_dir / "2.jsonl")
        after = client.get("/topics?limit=1000").json()
        second = client.get("/topics?cluster=Second&limit=1000").json()
        assert _cache(client).builds == 2

    assert {t["cluster"] for t in before["data"]} == {"First"}
    assert before["count"] > 0 and second["count"] > 0
    assert after["count"] == before["count"] + second["count"]
    assert [t for t in after["data"] if t["cluster"] == "First"] == before["data"]
    assert [t for t in after["data"] if t["cluster"] == "Second"] == second["data"]


def test_pages_are_kept_per_version_up_to_a_bound_on_their_topics(store_dir: Path) -> None:
    cache, made = TopicCache(), Counter[PageKey]()
    item = TopicPublic(
        cluster="C",
        topic="T",
        brokers=[],
        expected_brokers=[],
        coverage=None,
        namesrvs={},
        auto_created=False,
        auto_created_at=None,
        system=False,
    )

    def page(key: PageKey) -> RenderedPage:
        def make(index: TopicIndex) -> TopicsPublic:
            made[key] += 1
            return TopicsPublic(data=[item] * 1000, count=len(index.topics), next=None)

        store = Store(f"sqlite:///{store_dir / 'routewatch.db'}", readonly=True)
        try:
            with store.snapshot():
                return cache.page(store, key, make)
        finally:
            store.close()

    keys = [(n,) for n in range(MAX_PAGE_TOPICS // 1000 + 1)]
    for key in [*keys, keys[-1], keys[0]]:
        page(key)

    assert made[keys[-1]] == 1  # asked for again: kept
    assert made[keys[0]] == 2  # the oldest, dropped when the last one came
    assert cache.builds == 1
