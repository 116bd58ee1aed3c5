"""The records the store's views return (:mod:`routewatch.store.views`), each typed once here:
the API's response models derive from them (``api/models.py``), and the metrics read them.

A record's fields are what ``GET /brokers`` and ``GET /topics`` show. The nested records keep
their names in the API's OpenAPI document; their notes are comments, not docstrings, so that the
document stays as the API has always served it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

__all__ = [
    "BrokerView",
    "NamesrvLiveness",
    "QueueView",
    "RouteWindow",
    "SilenceView",
    "TopicView",
]


class SilenceView(BaseModel):
    """A silence that holds an open alert now: made through routewatch (``source``
    ``routewatch``: ``POST /alerts/{id}/silence``, no id) or in Alertmanager (``alertmanager``:
    its silence id, who made it and why, as ``routewatch notify`` last read it there); until
    when (epoch ms, wall clock)."""

    source: Literal["routewatch", "alertmanager"]
    id: str | None
    until: int
    by: str | None
    comment: str | None


# A broker as one NameServer has it: live (registered within 120 s), its last heartbeat, and
# whether the broker unregistered itself (a clean shutdown).
class NamesrvLiveness(BaseModel):
    namesrv: str
    live: bool
    last_heartbeat: int
    unregistered: bool


class BrokerView(BaseModel):
    """One broker (cluster, name, id): live if any NameServer has it live; its address,
    template route and auto-create setting as of its newest heartbeat; and its liveness on each
    NameServer."""

    cluster: str
    broker: str
    broker_id: int
    addr: str
    live: bool
    last_heartbeat: int
    auto_create_topic_enable: bool | None
    tbw102: str
    namesrvs: list[NamesrvLiveness]


# One broker's queues of a topic in one NameServer's route.
class QueueView(BaseModel):
    broker: str
    broker_id: int
    read_queue_nums: int
    write_queue_nums: int
    perm: int


class TopicView(BaseModel):
    """A topic's current route: the brokers holding it (on any NameServer), the cluster's
    expected brokers (live masters), the share of those that hold it (None when none is
    expected), its queues per NameServer, auto-creation, and whether it is a system topic."""

    cluster: str
    topic: str
    brokers: list[str]
    expected_brokers: list[str]
    coverage: float | None
    namesrvs: dict[str, list[QueueView]]
    auto_created: bool
    auto_created_at: int | None
    system: bool


# A topic's route in the window [start, end): per NameServer, the brokers whose route interval
# overlaps it, and all of them.
class RouteWindow(BaseModel):
    start: int
    end: int
    namesrvs: dict[str, list[str]]
    brokers: list[str]
