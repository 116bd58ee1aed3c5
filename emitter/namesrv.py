"""A NameServer: a route registry that only knows what brokers registered with it.

Modelled on ``RouteInfoManager``: a full registration replaces the broker's topics (as
RocketMQ 5's ``deleteTopicWithBrokerRegistration`` does; the event contract defines routes the
same way), an immediate one adds the topics it names, a clean shutdown removes the broker at
once, and a scan every 10 s (4.x) or 5 s (5.x) drops brokers silent for over 120 s.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from emitter.sim import Simulation
from routewatch.events import Heartbeat, QueueData, TopicConfig
from routewatch.rocketmq import BROKER_EXPIRY_MS

__all__ = ["SCAN_INTERVAL_MS", "BrokerKey", "NameServer"]

SCAN_INTERVAL_MS = {4: 10_000, 5: 5_000}
"""How often a NameServer looks for silent brokers, by RocketMQ major version."""

BrokerKey = tuple[str, str, int]
"""(cluster, brokerName, brokerId)."""


@dataclass
class _Registration:
    last_update_ms: int
    topics: dict[str, TopicConfig] = field(default_factory=dict)
    parts: dict[int, dict[str, TopicConfig]] = field(default_factory=dict)
    parts_version: str | None = None


class NameServer:
    """One NameServer, addressed ``ip:port``."""

    def __init__(self, sim: Simulation, addr: str, version: int = 4) -> None:
        self.sim = sim
        self.addr = addr
        self.scan_interval_ms = SCAN_INTERVAL_MS[version]
        self.brokers: dict[BrokerKey, _Registration] = {}

    def start(self) -> None:
        self.sim.every(self.scan_interval_ms, self.scan, self.scan_interval_ms)

    def register(self, hb: Heartbeat) -> None:
        """Apply one registration (a heartbeat event that reached this NameServer)."""
        key = (hb.cluster, hb.broker, hb.broker_id)
        if hb.shutdown:
            self.brokers.pop(key, None)
            return
        entry = self.brokers.setdefault(key, _Registration(self.sim.now))
        entry.last_update_ms = self.sim.now
        if not hb.full:
            entry.topics.update(hb.topics)
        elif hb.parts is None or hb.parts <= 1:
            entry.topics = dict(hb.topics)
        else:
            if entry.parts_version != hb.data_version:
                entry.parts, entry.parts_version = {}, hb.data_version
            entry.parts[hb.part or 0] = hb.topics
            if len(entry.parts) == hb.parts:
                entry.topics = {t: c for part in entry.parts.values() for t, c in part.items()}
                entry.parts, entry.parts_version = {}, None

    def scan(self) -> None:
        """Drop brokers whose last registration is more than 120 s old."""
        now = self.sim.now
        for key in [
            k for k, e in self.brokers.items() if e.last_update_ms + BROKER_EXPIRY_MS < now
        ]:
            del self.brokers[key]

    def delete_topic(self, topic: str) -> None:
        """``mqadmin deleteTopic`` also deletes the topic from every NameServer."""
        for entry in self.brokers.values():
            entry.topics.pop(topic, None)

    def route(self, topic: str) -> list[QueueData] | None:
        """The route a client gets for ``topic``: one entry per broker name, sorted, or None.

        Where a master and its slave both list the topic, the master's counts win.
        """
        chosen: dict[str, tuple[int, TopicConfig]] = {}
        for (_, name, broker_id), entry in self.brokers.items():
            config = entry.topics.get(topic)
            if config is None:
                continue
            if name not in chosen or broker_id < chosen[name][0]:
                chosen[name] = (broker_id, config)
        if not chosen:
            return None
        return [
            QueueData(
                broker=name,
                read_queue_nums=config.read_queue_nums,
                write_queue_nums=config.write_queue_nums,
                perm=config.perm,
            )
            for name, (_, config) in sorted(chosen.items())
        ]
