"""``/topics``, ``/brokers`` and ``/quarantine``: the route tables and what was refused."""

from __future__ import annotations

import time
from functools import partial
from typing import Annotated

from fastapi import APIRouter, Query, Response

from api.deps import QUERY_CHECKS, SQLITE_INT_MAX, StoreDep, TopicCacheDep
from api.models import (
    BrokerPublic,
    BrokersPublic,
    QuarantinePublic,
    TopicDetail,
    TopicPublic,
    TopicsPublic,
)
from api.problems import ProblemError
from routewatch.changes import LATE, QUARANTINED
from routewatch.store import Store
from routewatch.store.views import (
    SortKey,
    TopicIndex,
    broker_views,
    decode_topic_cursor,
    encode_topic_cursor,
    route_windows,
    stream_time,
    topic_items,
    topic_view,
)

router = APIRouter(tags=["routes"], dependencies=QUERY_CHECKS)


@router.get(
    "/topics", response_model=TopicsPublic, summary="Topics with their coverage, worst first"
)
def list_topics(
    store: StoreDep,
    cache: TopicCacheDep,
    cluster: str | None = None,
    system: Annotated[
        bool | None,
        Query(
            description="true: only RocketMQ's own topics; false: only the others (default: all)"
        ),
    ] = None,
    coverage_below: Annotated[float | None, Query(ge=0, le=1)] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    cursor: Annotated[str | None, Query(description="the `next` of the previous page")] = None,
) -> Response:
    after = None if cursor is None else _position(cursor)
    make = partial(_page, store, cluster, system, coverage_below, after, limit)
    with store.snapshot():
        page = cache.page(store, (cluster, system, coverage_below, after, limit), make)
    # the page as rendered when it was made (a TopicsPublic): sent as it is
    return Response(page.body, media_type="application/json")


def _page(
    store: Store,
    cluster: str | None,
    system: bool | None,
    coverage_below: float | None,
    after: SortKey | None,
    limit: int,
    index: TopicIndex,
) -> TopicsPublic:
    """One page of ``GET /topics`` from the version's index, with the page's routes."""
    page = index.page(
        cluster=cluster, system=system, coverage_below=coverage_below, after=after, limit=limit
    )
    items = topic_items(store, index.brokers, page.topics)
    following = encode_topic_cursor(page.topics[-1].sort_key) if page.more else None
    data = [TopicPublic.model_validate(item) for item in items]
    return TopicsPublic(data=data, count=page.total, next=following)


def _position(cursor: str) -> SortKey:
    try:
        return decode_topic_cursor(cursor)
    except ValueError as exc:
        raise ProblemError(400, "Invalid cursor", f"The cursor is invalid: {exc}.") from None


MAX_WINDOWS = 1000


@router.get(
    "/topics/{cluster}/{topic}",
    response_model=TopicDetail,
    summary="A topic's current route per NameServer, and its route per window",
)
def get_topic(
    cluster: str,
    topic: str,
    store: StoreDep,
    since: Annotated[
        int | None,
        Query(ge=0, le=SQLITE_INT_MAX, description="epoch ms (default: until - 10 min)"),
    ] = None,
    until: Annotated[
        int | None, Query(ge=0, le=SQLITE_INT_MAX, description="epoch ms (default: stream time)")
    ] = None,
    window: Annotated[int, Query(ge=1, le=86_400, description="window, seconds")] = 30,
) -> TopicDetail:
    with store.snapshot():
        current = topic_view(store, cluster, topic)
    if until is None:
        now = stream_time(store, cluster)
        until = (now if now is not None else int(time.time() * 1000)) + 1
    since = until - 600_000 if since is None else since
    window_ms = window * 1000
    if since >= until or (until - since) / window_ms > MAX_WINDOWS:
        raise ProblemError(
            422,
            "Invalid range",
            f"The range must be non-empty and at most {MAX_WINDOWS} windows of {window} s.",
        )
    windows = route_windows(store, cluster, topic, since, until, window_ms)
    if current is None and not any(w.brokers for w in windows):
        raise ProblemError(
            404, "No such topic", f"Topic {topic} has no route in cluster {cluster}."
        )
    return TopicDetail(
        cluster=cluster,
        topic=topic,
        current=None if current is None else TopicPublic.model_validate(current),
        windows=windows,
    )


@router.get("/brokers", response_model=BrokersPublic, summary="Brokers and their liveness")
def list_brokers(store: StoreDep) -> BrokersPublic:
    views = broker_views(store)
    return BrokersPublic(data=[BrokerPublic.model_validate(v) for v in views], count=len(views))


@router.get("/quarantine", response_model=QuarantinePublic, summary="Recent bad and late input")
def list_quarantine(
    store: StoreDep, limit: Annotated[int, Query(ge=1, le=1000)] = 100
) -> QuarantinePublic:
    counts: dict[str, int] = {}
    for (name, label, _), value in store.counters().items():
        if name == QUARANTINED:
            counts[label] = counts.get(label, 0) + value
        elif name == LATE:  # late events, quarantined with the reason LATE
            counts[LATE] = counts.get(LATE, 0) + value
    return QuarantinePublic(data=store.quarantine(limit), counts=counts)  # type: ignore[arg-type]
