"""The event contract, version 1, defined once (docs/contract.md).

The dataclasses below are the only definition of the contract. Everything else derives from
them: the wire form (:mod:`routewatch.codec`) and validation with precise reasons
(:mod:`routewatch.validation`). A field's presence rule is carried in its metadata:

- no mark: required; a type of ``X | None`` means the key must be present and may be null;
- ``optional()``: the key may be absent (an explicit null counts as absent);
- ``optional(unless_role="producer")``: optional for consumers, required for producers.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

__all__ = [
    "CONTRACT_VERSION",
    "EVENT_CLASSES",
    "CollectorRound",
    "DeliveredStatus",
    "Envelope",
    "Event",
    "Heartbeat",
    "HeldTopic",
    "InferredAutoCreation",
    "InferredFound",
    "NamesrvReach",
    "ProxyRouteMiss",
    "PullResult",
    "QueueData",
    "Role",
    "RoutePull",
    "Send",
    "SendStatus",
    "TopicConfig",
    "optional",
]

CONTRACT_VERSION = 1

PullResult = Literal["SUCCESS", "TOPIC_NOT_EXIST", "NO_NAMESRV", "TIMEOUT"]
Role = Literal["producer", "consumer"]
SendStatus = Literal[
    "SEND_OK",
    "FLUSH_DISK_TIMEOUT",
    "FLUSH_SLAVE_TIMEOUT",
    "SLAVE_NOT_AVAILABLE",
    "NO_ROUTE_INFO",
    "NO_NAMESRV",
    "TOPIC_NOT_EXIST",
    "TIMEOUT",
]
InferredFound = Literal["while_watching", "at_start"]
DeliveredStatus = frozenset(
    {"SEND_OK", "FLUSH_DISK_TIMEOUT", "FLUSH_SLAVE_TIMEOUT", "SLAVE_NOT_AVAILABLE"}
)


def optional(default: Any = None, *, unless_role: str | None = None) -> Any:
    """A field whose key may be absent (optional for every source, or unless ``role`` is given)."""
    return field(default=default, metadata={"optional": True, "unless_role": unless_role})


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicConfig:
    """One topic in a broker's registration: its queue counts and permission bits."""

    read_queue_nums: int
    write_queue_nums: int
    perm: int


@dataclass(frozen=True, slots=True, kw_only=True)
class QueueData:
    """One broker's share of a topic route returned by a NameServer."""

    broker: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int


@dataclass(frozen=True, slots=True, kw_only=True)
class InferredAutoCreation:
    """The broker side's evidence that a topic of a broker's table was auto-created: its
    config is what the broker's template gives a producer's fallback (``emitter/inference.py``).
    ``found``: it appeared while the observer watched, or was there when it started;
    ``first_seen``: when the observer first saw it there (epoch ms)."""

    found: InferredFound
    first_seen: int


@dataclass(frozen=True, slots=True, kw_only=True)
class HeldTopic:
    """How the broker itself holds a topic that a NameServer routes otherwise: ``held`` false,
    the broker's own table lacks it (``perm`` null); true, its own ``perm`` (TBW102's, whose
    inherit bit the broker reads, not the route's)."""

    held: bool
    perm: int | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Envelope:
    """Fields every event carries; ``type`` and ``v`` are written from the class."""

    TYPE: ClassVar[str]
    ts: int
    cluster: str
    event_id: str
    seq: int | None = optional()


@dataclass(frozen=True, slots=True, kw_only=True)
class Heartbeat(Envelope):
    """A broker's registration with one NameServer."""

    TYPE: ClassVar[str] = "heartbeat"
    broker: str
    broker_addr: str
    broker_id: int
    namesrv: str
    auto_create_topic_enable: bool
    default_topic_queue_nums: int
    full: bool
    topics: dict[str, TopicConfig]
    data_version: str | None = optional()
    part: int | None = optional()
    parts: int | None = optional()
    shutdown: bool | None = optional()
    # (optional() is field(default=None): no mutable default is shared)
    inferred_auto_created: dict[str, InferredAutoCreation] | None = optional()  # noqa: RUF009
    # where ``topics`` is what a NameServer routes (routewatch collect): those of its topics the
    # broker's own table lacks, and the broker's own TBW102 where the route's perm differs
    held: dict[str, HeldTopic] | None = optional()  # noqa: RUF009
    # how long the NameServer keeps this registration without a renewal, where the broker sets
    # its own (RocketMQ 5's slave-acting-master mode: brokerNotActiveTimeoutMillis); absent: 120 s
    heartbeat_timeout_ms: int | None = optional()


@dataclass(frozen=True, slots=True, kw_only=True)
class NamesrvReach:
    """Whether an observer's round reached one NameServer: ``reached``, or since when (epoch ms,
    its first failed round of the present run of failures) it has not."""

    reached: bool
    unreachable_since: int | None


@dataclass(frozen=True, slots=True, kw_only=True)
class CollectorRound(Envelope):
    """One round of an observer of a cluster (``routewatch collect``), written after the round's
    heartbeats: which of its NameServers it reached, and how often it looks."""

    TYPE: ClassVar[str] = "collector_round"
    collector: str
    interval_ms: int
    namesrvs: dict[str, NamesrvReach]


@dataclass(frozen=True, slots=True, kw_only=True)
class RoutePull(Envelope):
    """A client asked a NameServer (or had none to ask) for a topic's route."""

    TYPE: ClassVar[str] = "route_pull"
    client_id: str
    group: str
    role: Role
    namesrv: str | None
    topic: str
    result: PullResult
    queues: list[QueueData]
    via_default: bool | None = optional(unless_role="producer")
    create_topic_key: str | None = optional(unless_role="producer")
    client_default_topic_queue_nums: int | None = optional(unless_role="producer")


@dataclass(frozen=True, slots=True, kw_only=True)
class Send(Envelope):
    """The outcome of one send."""

    TYPE: ClassVar[str] = "send"
    client_id: str
    group: str
    topic: str
    broker: str | None
    queue_id: int | None
    default_topic: str
    default_topic_queue_nums: int
    status: SendStatus
    auto_created: bool | None = optional()


@dataclass(frozen=True, slots=True, kw_only=True)
class ProxyRouteMiss(Envelope):
    """A RocketMQ 5 proxy found no route on its NameServers for a topic one of its gRPC clients
    asked for (the proxy's log line, read by ``routewatch collect``): the gRPC client's
    ``TOPIC_NOT_FOUND``, its form of "No route info of this topic"."""

    TYPE: ClassVar[str] = "proxy_route_miss"
    proxy: str
    topic: str
    thread: str


Event = Heartbeat | RoutePull | Send | CollectorRound | ProxyRouteMiss

EVENT_CLASSES: dict[str, type[Event]] = {
    cls.TYPE: cls for cls in (Heartbeat, RoutePull, Send, CollectorRound, ProxyRouteMiss)
}


def is_optional(f: dataclasses.Field[Any]) -> bool:
    """Whether a contract field's key may be absent for some source."""
    return bool(f.metadata.get("optional", False))
