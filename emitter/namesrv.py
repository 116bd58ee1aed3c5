"""A NameServer: a route registry that only knows what brokers registered with it.

Modelled on RocketMQ 4.9.8's ``RouteInfoManager`` (and 5.x's, where :mod:`emitter.versions`
says they differ) and checked against the real ones (see docs/emitter.md, "Checked against
RocketMQ"):

- Queue data is kept per topic and broker *name*, from the master's registrations only (a
  slave's table never reaches a route), and a registration's table is applied only when it is
  the broker's first or its data version changed. A registration adds and updates topics; it
  never removes one: a topic deleted on one broker alone stays in the route while that broker
  lives (``mqadmin deleteTopic`` also deletes it on every NameServer).
- A broker leaves when it unregisters (clean shutdown), when its connection closes (its process
  died: :meth:`channel_closed`, at once), or when it falls silent with its connection open (a
  frozen process, a lost host or network): then the NameServer's idle-connection handler
  (``serverChannelMaxIdleTimeSeconds``, 120 s) closes the channel 120 s after its last
  registration, to the millisecond — before the scan for brokers silent *over* 120 s (5 s after
  start, then every 10 s in 4.x, 5 s in 5.x) can. When a broker name has no address left, its
  queue data goes from every topic.
- A split registration (5.x) is applied when all its parts have arrived.
- 5.x's ``deleteTopicWithBrokerRegistration``: every registration of a master is taken as its
  whole table, each part of a split one and a new topic's own registration included — the
  broker's topics it does not carry leave its routes, so a split registration leaves only its
  last part routed, and a topic made on the broker is its only one until the next full
  registration (``RouteInfoManager.registerBroker``; 5.5.0 did so,
  ``tests/test_rocketmq_registration.py``).
- ``wipeWritePerm`` takes the write bit from every topic of a broker name; ``addWritePerm``
  sets every one to read|write (6) — the inherit bit goes, a read-only topic becomes writable.
  Either lasts until the broker registers a changed table.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass, field

from emitter.sim import Simulation
from emitter.versions import ROCKETMQ_4, Release, scan_interval_ms
from routewatch.events import Heartbeat, QueueData, TopicConfig
from routewatch.rocketmq import BROKER_EXPIRY_MS, PERM_READ, PERM_WRITE

__all__ = ["FIRST_SCAN_DELAY_MS", "BrokerKey", "NameServer"]

FIRST_SCAN_DELAY_MS = 5_000
"""The first scan for silent brokers, after the NameServer starts (``NamesrvController``)."""

BrokerKey = tuple[str, str, int]
"""(cluster, brokerName, brokerId)."""


@dataclass
class _Live:
    """``BrokerLiveInfo``: when the broker last registered, and the data version it sent."""

    last_update_ms: int
    data_version: str | None
    parts: dict[int, dict[str, TopicConfig]] = field(default_factory=dict)
    parts_version: str | None = None


class NameServer:
    """One NameServer, addressed ``ip:port``."""

    def __init__(
        self,
        sim: Simulation,
        addr: str,
        version: Release = ROCKETMQ_4,
        *,
        delete_topic_with_registration: bool = False,
    ) -> None:
        self.sim = sim
        self.addr = addr
        self.delete_topic_with_registration = delete_topic_with_registration
        self.scan_interval_ms = scan_interval_ms(version)
        self.live: dict[BrokerKey, _Live] = {}
        self.broker_ids: dict[str, set[int]] = {}  # brokerAddrTable: broker name -> ids
        self.queues: dict[str, dict[str, TopicConfig]] = {}  # topicQueueTable

    def start(self) -> None:
        self.sim.every(self.scan_interval_ms, self.scan, FIRST_SCAN_DELAY_MS)

    @property
    def brokers(self) -> set[BrokerKey]:
        """The brokers this NameServer lists now."""
        return set(self.live)

    def topics_of(self, broker: str) -> set[str]:
        """The topics whose route names the broker ``broker`` here."""
        return {topic for topic, queues in self.queues.items() if broker in queues}

    def register(self, hb: Heartbeat) -> None:
        """Apply one registration (a heartbeat event that reached this NameServer)."""
        key = (hb.cluster, hb.broker, hb.broker_id)
        if hb.shutdown:
            self._remove(key)
            return
        ids = self.broker_ids.setdefault(hb.broker, set())
        first = hb.broker_id not in ids
        ids.add(hb.broker_id)
        live = self.live.get(key)
        changed = first or live is None or live.data_version != hb.data_version
        if live is None:
            live = self.live[key] = _Live(self.sim.now, None)
        live.last_update_ms = self.sim.now
        self.sim.after(BROKER_EXPIRY_MS, functools.partial(self._idle, key, self.sim.now))
        if self.delete_topic_with_registration and hb.broker_id == 0:
            self._replace(hb.broker, hb.topics, changed)
            live.data_version = hb.data_version
            return
        if hb.parts is not None and hb.parts > 1:
            if live.parts_version != hb.data_version:
                if not changed:
                    return
                live.parts, live.parts_version = {}, hb.data_version
            live.parts[hb.part or 0] = hb.topics
            if len(live.parts) < hb.parts:
                return
            topics = {t: c for part in live.parts.values() for t, c in part.items()}
            live.parts, live.parts_version = {}, None
        elif not changed:
            live.data_version = hb.data_version
            return
        else:
            topics = hb.topics
        live.data_version = hb.data_version
        if hb.broker_id == 0:
            for topic, config in topics.items():
                self.queues.setdefault(topic, {})[hb.broker] = config

    def _replace(self, broker: str, topics: dict[str, TopicConfig], changed: bool) -> None:
        """One registration as the broker's whole table (``deleteTopicWithBrokerRegistration``):
        the topics it lacks leave the broker's routes; its topics are applied when its version
        changed, or when not routed to the broker yet (5.x's ``isTopicConfigChanged``)."""
        routed = self.topics_of(broker)
        for topic in routed - topics.keys():
            queues = self.queues[topic]
            del queues[broker]
            if not queues:
                del self.queues[topic]
        for topic, config in topics.items():
            if changed or topic not in routed:
                self.queues.setdefault(topic, {})[broker] = config

    def _idle(self, key: BrokerKey, registered_ms: int) -> None:
        """120 s after a registration: if none came since, the idle channel is closed."""
        live = self.live.get(key)
        if live is not None and live.last_update_ms == registered_ms:
            self._remove(key)

    def channel_closed(self, key: BrokerKey) -> None:
        """The broker's connection closed (its process died): drop it at once."""
        self._remove(key)

    def scan(self) -> None:
        """Drop brokers whose last registration is more than 120 s old."""
        now = self.sim.now
        for key in [k for k, e in self.live.items() if e.last_update_ms + BROKER_EXPIRY_MS < now]:
            self._remove(key)

    def _remove(self, key: BrokerKey) -> None:
        """Unregister one broker; a broker name with no address left leaves every route."""
        _, name, broker_id = key
        self.live.pop(key, None)
        ids = self.broker_ids.get(name)
        if ids is None:
            return
        ids.discard(broker_id)
        if ids:
            return
        del self.broker_ids[name]
        for topic in list(self.queues):
            self.queues[topic].pop(name, None)
            if not self.queues[topic]:
                del self.queues[topic]

    def wipe_write_perm(self, broker: str) -> int:
        """``mqadmin wipeWritePerm``: every topic of ``broker`` here loses its write bit, until
        the broker registers a changed table (which puts its own perms back); how many."""
        return self._operate_write_perm(broker, lambda perm: perm & ~PERM_WRITE)

    def add_write_perm(self, broker: str) -> int:
        """``mqadmin addWritePerm``: every topic of ``broker`` here gets perm read|write (6),
        the inherit bit and a read-only topic's missing write bit included; how many."""
        return self._operate_write_perm(broker, lambda perm: PERM_READ | PERM_WRITE)

    def _operate_write_perm(self, broker: str, new: Callable[[int], int]) -> int:
        count = 0
        for queues in self.queues.values():
            config = queues.get(broker)
            if config is not None:
                queues[broker] = dataclasses.replace(config, perm=new(config.perm))
                count += 1
        return count

    def routed(self, broker: str) -> dict[str, TopicConfig]:
        """What this NameServer routes to ``broker``: its queue data of every topic."""
        return {t: q[broker] for t, q in self.queues.items() if broker in q}

    def delete_topic(self, topic: str) -> None:
        """``mqadmin deleteTopic`` also deletes the topic from every NameServer."""
        self.queues.pop(topic, None)

    def route(self, topic: str) -> list[QueueData] | None:
        """The route a client gets for ``topic``: one entry per broker name, sorted, or None."""
        queues = self.queues.get(topic)
        if not queues:
            return None
        return [
            QueueData(
                broker=name,
                read_queue_nums=config.read_queue_nums,
                write_queue_nums=config.write_queue_nums,
                perm=config.perm,
            )
            for name, config in sorted(queues.items())
        ]
