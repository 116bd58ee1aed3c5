"""``/topics``, ``/brokers`` and ``/quarantine``: the route tables and what was refused."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query

from api.deps import StoreDep, reject_unknown_params
from api.models import (
    BrokerPublic,
    BrokersPublic,
    QuarantinePublic,
    TopicPublic,
    TopicsPublic,
)
from routewatch.store.views import broker_views, topic_views

router = APIRouter(tags=["routes"], dependencies=[Depends(reject_unknown_params)])


@router.get("/topics", response_model=TopicsPublic, summary="Topics with their coverage")
def list_topics(
    store: StoreDep,
    cluster: str | None = None,
    coverage_below: Annotated[float | None, Query(ge=0, le=1)] = None,
) -> TopicsPublic:
    views = topic_views(store, cluster)
    if coverage_below is not None:
        views = [v for v in views if v["coverage"] is not None and v["coverage"] < coverage_below]
    views.sort(
        key=lambda v: (v["coverage"] if v["coverage"] is not None else 2, v["cluster"], v["topic"])
    )
    return TopicsPublic(data=[TopicPublic(**v) for v in views], count=len(views))


@router.get("/brokers", response_model=BrokersPublic, summary="Brokers and their liveness")
def list_brokers(store: StoreDep) -> BrokersPublic:
    views = broker_views(store)
    return BrokersPublic(data=[BrokerPublic(**v) for v in views], count=len(views))


@router.get("/quarantine", response_model=QuarantinePublic, summary="Recent bad and late input")
def list_quarantine(
    store: StoreDep, limit: Annotated[int, Query(ge=1, le=1000)] = 100
) -> QuarantinePublic:
    counts: dict[str, int] = {}
    for (name, label, _), value in store.counters().items():
        if name == "quarantined":
            counts[label] = counts.get(label, 0) + value
        elif name == "late":
            counts["late"] = counts.get("late", 0) + value
    return QuarantinePublic(data=store.quarantine(limit), counts=counts)  # type: ignore[arg-type]
