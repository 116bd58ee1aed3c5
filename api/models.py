"""Typed response models of the API."""

from __future__ import annotations

import pydantic
from pydantic import BaseModel

from routewatch.alerts import StoredAlert

__all__ = [
    "AlertPublic",
    "AlertsPublic",
    "BrokerPublic",
    "BrokersPublic",
    "Health",
    "QuarantinePublic",
    "TopicPublic",
    "TopicsPublic",
]


@pydantic.dataclasses.dataclass
class AlertPublic(StoredAlert):
    """One alert with every field of the catalogue, and its acknowledgement state."""

    acked_at: int | None = None
    acked_by: str | None = None
    silenced_until: int | None = None


class AlertsPublic(BaseModel):
    data: list[AlertPublic]
    count: int
    next: str | None


class NamesrvLiveness(BaseModel):
    namesrv: str
    live: bool
    last_heartbeat: int
    unregistered: bool


class BrokerPublic(BaseModel):
    cluster: str
    broker: str
    broker_id: int
    addr: str
    live: bool
    last_heartbeat: int
    auto_create_topic_enable: bool | None
    tbw102: str
    namesrvs: list[NamesrvLiveness]


class BrokersPublic(BaseModel):
    data: list[BrokerPublic]
    count: int


class QueueView(BaseModel):
    broker: str
    broker_id: int
    read_queue_nums: int
    write_queue_nums: int
    perm: int


class TopicPublic(BaseModel):
    cluster: str
    topic: str
    brokers: list[str]
    expected_brokers: list[str]
    coverage: float | None
    namesrvs: dict[str, list[QueueView]]
    auto_created: bool
    auto_created_at: int | None
    system: bool


class TopicsPublic(BaseModel):
    data: list[TopicPublic]
    count: int
    next: str | None


class RouteWindow(BaseModel):
    start: int
    end: int
    namesrvs: dict[str, list[str]]
    brokers: list[str]


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
