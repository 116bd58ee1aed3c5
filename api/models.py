"""Typed response models of the API. Each record the store's views return is typed once, in the
core (:class:`~routewatch.alerts.StoredAlert`, :mod:`routewatch.store.records`); the models here
derive from those records, as FastAPI's template derives ``ItemPublic`` from ``ItemBase``, and add
only what the API wraps them in (pages, counts, cursors)."""

from __future__ import annotations

import dataclasses

import pydantic
from pydantic import BaseModel, ConfigDict

from routewatch.alerts import StoredAlert
from routewatch.store.records import BrokerView, RouteWindow, SilenceView, TopicView

__all__ = [
    "AlertPublic",
    "AlertsPublic",
    "BrokerPublic",
    "BrokersPublic",
    "Health",
    "QuarantinePublic",
    "RouteWindow",
    "TopicDetail",
    "TopicPublic",
    "TopicsPublic",
]


@pydantic.dataclasses.dataclass
class AlertPublic(StoredAlert):
    """One alert with every field of the catalogue, its acknowledgement state, and the
    silences that hold it now (routewatch's and Alertmanager's)."""

    acked_at: int | None = None
    acked_by: str | None = None
    silenced_until: int | None = None
    silenced_by: list[SilenceView] = dataclasses.field(default_factory=list)


class AlertsPublic(BaseModel):
    data: list[AlertPublic]
    count: int
    next: str | None


class BrokerPublic(BrokerView):
    model_config = ConfigDict(from_attributes=True)  # made from the store's BrokerView


class BrokersPublic(BaseModel):
    data: list[BrokerPublic]
    count: int


class TopicPublic(TopicView):
    model_config = ConfigDict(from_attributes=True)  # made from the store's TopicView


class TopicsPublic(BaseModel):
    data: list[TopicPublic]
    count: int
    next: str | None


class TopicDetail(BaseModel):
    cluster: str
    topic: str
    current: TopicPublic | None
    windows: list[RouteWindow]


class QuarantinedInput(BaseModel):
    seq: int
    arrived_at: int
    cluster: str | None
    reason: str
    detail: str
    raw: str


class QuarantinePublic(BaseModel):
    data: list[QuarantinedInput]
    counts: dict[str, int]


class Health(BaseModel):
    status: str
    checks: dict[str, str] = {}
