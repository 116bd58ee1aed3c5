"""The console (docs/api.md, "The console"): server-rendered pages over the store — ``/`` (now:
open alerts, clusters), ``/ui/topics``, ``/ui/topics/{cluster}/{topic}``,
``/ui/brokers/{cluster}/{broker}/{broker_id}`` — with their script and style under
``/ui/static``. Read-only: its only actions are the API's own (acknowledge, silence), which the
page's script calls with the token. Not in the OpenAPI document: pages, not API."""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from api.console.pages import (
    broker_page,
    now_page,
    open_alerts_fragment,
    topic_page,
    topics_page,
)
from api.console.render import render
from api.deps import SettingsDep, StoreDep, TopicCacheDep
from api.problems import ProblemError
from routewatch.store.views import (
    cluster_names,
    decode_topic_cursor,
    encode_topic_cursor,
    topic_items,
)

router = APIRouter(include_in_schema=False)

PAGE = 100
HEADERS = {
    # no request leaves the API's origin; no frame elsewhere
    "Content-Security-Policy": "default-src 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
}


def _html(template: str, request: Request, **context: Any) -> HTMLResponse:
    base = request.app.state.settings.base_path
    return HTMLResponse(render(template, base=base, **context), headers=HEADERS)


RANGES = (1, 6, 24, 168)  # hours a page's range may span


@router.get("/", response_class=HTMLResponse)
def now(
    request: Request,
    store: StoreDep,
    cache: TopicCacheDep,
    hours: Annotated[int, Query(ge=1, le=24 * 31)] = 1,
) -> HTMLResponse:
    found = now_page(store, cache, _hours(hours))
    return _html("now.html", request, page="now", now=found, hours=hours, ranges=RANGES)


@router.get("/ui/fragments/open-alerts", response_class=HTMLResponse)
def open_alerts_list(request: Request, store: StoreDep) -> HTMLResponse:
    """The open alerts as the Now page lists them, for its live refresh."""
    return _html("open_alerts.html", request, alerts=open_alerts_fragment(store))


@router.get("/ui/topics", response_class=HTMLResponse)
def topics(
    request: Request,
    store: StoreDep,
    cache: TopicCacheDep,
    settings: SettingsDep,
    cluster: str = "",
    name: Annotated[str, Query(max_length=256)] = "",
    system: bool = False,
    cursor: str | None = None,
) -> HTMLResponse:
    try:
        after = None if not cursor else decode_topic_cursor(cursor)
    except ValueError as exc:
        raise ProblemError(400, "Invalid cursor", f"The cursor is invalid: {exc}.") from None
    with store.snapshot():
        index = cache.get(store)
        page, total, more = topics_page(
            store, index, cluster=cluster or None, name=name, system=system, after=after, limit=PAGE
        )
        items = topic_items(store, index.brokers, page)
        clusters = cluster_names(store)
    following = None
    if more:
        query = {"cluster": cluster, "name": name, "cursor": encode_topic_cursor(page[-1].sort_key)}
        if system:
            query["system"] = "true"
        following = f"{settings.base_path}/ui/topics?{urlencode(query)}"
    return _html(
        "topics.html",
        request,
        page="topics",
        topics=items,
        total=total,
        next=following,
        cluster=cluster,
        name=name,
        system=system,
        clusters=clusters,
    )


def _hours(hours: int) -> int:
    return hours * 3_600_000


@router.get("/ui/topics/{cluster}/{topic}", response_class=HTMLResponse)
def topic(
    request: Request,
    cluster: str,
    topic: str,
    store: StoreDep,
    hours: Annotated[int, Query(ge=1, le=24 * 31)] = 1,
) -> HTMLResponse:
    found = topic_page(store, cluster, topic, None, None, span_ms=_hours(hours))
    if found is None:
        raise ProblemError(
            404, "No such topic", f"The store has nothing of topic {topic} in cluster {cluster}."
        )
    timeline: list[dict[str, Any]] = [
        {"kind": "change", "at": c.at, "change": c} for c in found.changes
    ]
    for a in found.alerts:
        if found.since <= a["opened_at"] < found.until:
            timeline.append({"kind": "opened", "at": a["opened_at"], "alert": a})
        if a["resolved_at"] is not None and found.since <= a["resolved_at"] < found.until:
            timeline.append({"kind": "resolved", "at": a["resolved_at"], "alert": a})
    timeline.sort(key=lambda item: item["at"])  # (stable: an instant's changes, then alerts)
    return _html(
        "topic.html", request, page="topic", t=found, timeline=timeline, hours=hours, ranges=RANGES
    )


@router.get("/ui/brokers/{cluster}/{broker}/{broker_id}", response_class=HTMLResponse)
def broker(
    request: Request,
    cluster: str,
    broker: str,
    broker_id: int,
    store: StoreDep,
    cache: TopicCacheDep,
    hours: Annotated[int, Query(ge=1, le=24 * 31)] = 1,
) -> HTMLResponse:
    with store.snapshot():
        index = cache.get(store)
    found = broker_page(store, index, cluster, broker, broker_id, None, None, span_ms=_hours(hours))
    if found is None:
        raise ProblemError(
            404,
            "No such broker",
            f"The store has nothing of broker {broker} (id {broker_id}) in cluster {cluster}.",
        )
    return _html("broker.html", request, page="broker", b=found, hours=hours, ranges=RANGES)
