"""Producers and consumers: route caches refreshed every 30 s, the TBW102 fallback, sends.

Modelled on ``MQClientInstance`` (one NameServer chosen at random and kept while it answers;
every topic in use refreshed every ``pollNameServerInterval``, first 10 ms after start) and
``DefaultMQProducerImpl`` (``tryToFindTopicPublishInfo``, round-robin queue choice from a
random start, retries on another broker after a refusal or a timeout), as the client of the
world's release behaves (:mod:`emitter.versions`: a 5.1.1+ client takes every template route
from TBW102's and refreshes no ``createTopicKey``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from emitter.broker import Broker
from emitter.namesrv import NameServer
from emitter.sim import Simulation
from emitter.versions import (
    ROCKETMQ_4,
    Release,
    refreshes_create_topic_key,
    retries_illegal_queue,
    template_route_of,
)
from routewatch.events import QueueData, RoutePull, Send
from routewatch.rocketmq import (
    CLIENT_DEFAULT_TOPIC_QUEUE_NUMS,
    PERM_WRITE,
    POLL_NAMESRV_INTERVAL_MS,
    TBW102,
)

__all__ = ["Consumer", "Producer", "PublishInfo"]

FIRST_POLL_DELAY_MS = 10
RETRYABLE = frozenset({"TOPIC_NOT_EXIST", "TIMEOUT"})


@dataclass
class PublishInfo:
    """A producer's route for one topic: its write queues, and whether it is a template route."""

    queues: list[tuple[str, int]]
    via_default: bool
    index: int
    route: list[QueueData] = field(default_factory=list)

    def select(self, avoid: str | None) -> tuple[str, int]:
        """Round-robin; after a failure, the next queue on another broker when there is one."""
        for _ in range(len(self.queues)):
            self.index += 1
            broker, queue_id = self.queues[self.index % len(self.queues)]
            if broker != avoid:
                return broker, queue_id
        self.index += 1
        return self.queues[self.index % len(self.queues)]


class _Client:
    role: str = "producer"

    def __init__(
        self,
        sim: Simulation,
        *,
        cluster: str,
        client_id: str,
        group: str,
        namesrvs: Iterable[NameServer],
        poll_ms: int = POLL_NAMESRV_INTERVAL_MS,
    ) -> None:
        self.sim = sim
        self.cluster = cluster
        self.client_id = client_id
        self.group = group
        self.namesrvs = list(namesrvs)
        self.poll_ms = poll_ms
        self._ns_index = sim.rng.randrange(len(self.namesrvs)) if self.namesrvs else 0

    def _namesrv(self) -> NameServer | None:
        return self.namesrvs[self._ns_index % len(self.namesrvs)] if self.namesrvs else None

    def _pull_fields(self, via_default: bool) -> dict[str, Any]:
        return {}

    def pull(
        self, topic: str, lookup: str | None = None, via_default: bool = False
    ) -> list[QueueData] | None:
        """Ask the chosen NameServer for ``lookup``'s route (``topic``'s by default) and say so."""
        ns = self._namesrv()
        route = None if ns is None else ns.route(lookup or topic)
        result = "NO_NAMESRV" if ns is None else ("SUCCESS" if route else "TOPIC_NOT_EXIST")
        queues = [] if route is None else route
        if via_default and route is not None:
            queues = self._template_queues(route)
        fields: dict[str, Any] = {
            **self.sim.envelope(self.cluster, self.client_id),
            "client_id": self.client_id,
            "group": self.group,
            "role": self.role,
            "namesrv": None if ns is None else ns.addr,
            "topic": topic,
            "result": result,
            "queues": queues,
            **self._pull_fields(via_default),
        }
        self.sim.emit(RoutePull(**fields))
        return queues if route is not None else None

    def _template_queues(self, route: list[QueueData]) -> list[QueueData]:
        return route


class Producer(_Client):
    """A producer with a route cache, the TBW102 fallback and round-robin sends."""

    role = "producer"

    def __init__(
        self,
        sim: Simulation,
        *,
        brokers: Callable[[str], Broker | None],
        create_topic_key: str = TBW102,
        default_topic_queue_nums: int = CLIENT_DEFAULT_TOPIC_QUEUE_NUMS,
        retries: int = 2,
        version: Release = ROCKETMQ_4,
        **kwargs: object,
    ) -> None:
        super().__init__(sim, **kwargs)  # type: ignore[arg-type]
        self.brokers = brokers
        self.version = version
        self.create_topic_key = create_topic_key
        self.default_topic_queue_nums = default_topic_queue_nums
        self.retries = retries
        self.publish: dict[str, PublishInfo | None] = {}

    def start(self) -> None:
        if refreshes_create_topic_key(self.version):
            self.publish[self.create_topic_key] = None
        self.sim.every(self.poll_ms, self.refresh_all, FIRST_POLL_DELAY_MS)

    def _pull_fields(self, via_default: bool) -> dict[str, Any]:
        return {
            "via_default": via_default,
            "create_topic_key": self.create_topic_key,
            "client_default_topic_queue_nums": self.default_topic_queue_nums,
        }

    def _template_queues(self, route: list[QueueData]) -> list[QueueData]:
        out = []
        for q in route:
            n = min(self.default_topic_queue_nums, q.read_queue_nums)
            out.append(
                QueueData(broker=q.broker, read_queue_nums=n, write_queue_nums=n, perm=q.perm)
            )
        return out

    def _install(self, topic: str, route: list[QueueData], via_default: bool) -> None:
        queues = [
            (q.broker, i) for q in route if q.perm & PERM_WRITE for i in range(q.write_queue_nums)
        ]
        self.publish[topic] = PublishInfo(
            queues=queues,
            via_default=via_default,
            index=self.sim.rng.randrange(1 << 16),
            route=route,
        )

    def refresh(self, topic: str) -> None:
        """Refresh one topic's route; a failed pull keeps the route the producer had."""
        route = self.pull(topic)
        if route is not None:
            current = self.publish.get(topic)
            if current is None or current.via_default or current.route != route:
                self._install(topic, route, via_default=False)

    def refresh_all(self) -> None:
        for topic in list(self.publish):
            self.refresh(topic)

    def _find_route(self, topic: str) -> PublishInfo | None:
        info = self.publish.get(topic)
        if info is not None and info.queues:
            return info
        self.publish.setdefault(topic, None)
        route = self.pull(topic)
        if route is not None:
            self._install(topic, route, via_default=False)
        else:
            lookup = template_route_of(self.version, self.create_topic_key)
            template = self.pull(topic, lookup=lookup, via_default=True)
            if template is not None:
                self._install(topic, template, via_default=True)
        info = self.publish.get(topic)
        return info if info is not None and info.queues else None

    def send(self, topic: str) -> str:
        """Send one message to ``topic``; returns the final status. One event per attempt."""
        info = self._find_route(topic)
        if info is None:
            status = "NO_ROUTE_INFO" if self.namesrvs else "NO_NAMESRV"
            self._emit_send(topic, None, None, status)
            return status
        avoid: str | None = None
        status = "TIMEOUT"
        for _ in range(1 + self.retries):
            broker_name, queue_id = info.select(avoid)
            broker = self.brokers(broker_name)
            result = (
                broker.receive_send(
                    topic, self.create_topic_key, self.default_topic_queue_nums, queue_id
                )
                if broker is not None
                else None
            )
            status = result.status if result is not None else "TIMEOUT"
            if status == "ILLEGAL_QUEUE":  # no status of the contract: the library writes none
                if not retries_illegal_queue(self.version):
                    break
            else:
                self._emit_send(
                    topic, broker_name, queue_id, status, result is not None and result.auto_created
                )
                if status not in RETRYABLE:
                    break
            avoid = broker_name
        return status

    def _emit_send(
        self,
        topic: str,
        broker: str | None,
        queue_id: int | None,
        status: str,
        auto_created: bool = False,
    ) -> None:
        fields: dict[str, Any] = {
            **self.sim.envelope(self.cluster, self.client_id),
            "client_id": self.client_id,
            "group": self.group,
            "topic": topic,
            "broker": broker,
            "queue_id": queue_id,
            "default_topic": self.create_topic_key,
            "default_topic_queue_nums": self.default_topic_queue_nums,
            "status": status,
            "auto_created": True if auto_created else None,
        }
        self.sim.emit(Send(**fields))


class Consumer(_Client):
    """A consumer subscribed to topics: it pulls their routes at start and every 30 s."""

    role = "consumer"

    def __init__(self, sim: Simulation, *, topics: Iterable[str], **kwargs: object) -> None:
        super().__init__(sim, **kwargs)  # type: ignore[arg-type]
        self.topics = list(topics)

    def start(self) -> None:
        self.sim.every(self.poll_ms, self.refresh_all, FIRST_POLL_DELAY_MS)

    def refresh_all(self) -> None:
        for topic in self.topics:
            self.pull(topic)
