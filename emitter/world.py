"""A RocketMQ deployment in one simulation: NameServers, brokers, clients and admin actions."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from emitter.broker import Broker
from emitter.clients import Consumer, Producer
from emitter.inference import AutoCreateInference, MasterTable
from emitter.namesrv import NameServer
from emitter.sim import DEFAULT_START_MS, Simulation
from emitter.versions import ROCKETMQ_4, Release
from routewatch.events import Event, Heartbeat, InferredAutoCreation
from routewatch.rocketmq import (
    CLIENT_DEFAULT_TOPIC_QUEUE_NUMS,
    DEFAULT_TOPIC_QUEUE_NUMS,
    PERM_READ,
    PERM_WRITE,
    TBW102,
)

__all__ = ["DEFAULT_CLUSTER", "World"]

DEFAULT_CLUSTER = "DefaultCluster"


class World:
    """Builds a deployment and runs it; times given to :meth:`at` and :meth:`run` are seconds
    from the start. Events go to ``sink``, or are collected in :attr:`events`. ``version`` is
    the RocketMQ release whose behaviour the NameServers and brokers follow
    (:mod:`emitter.versions`: 4.9 by default, or 5.x)."""

    def __init__(
        self,
        seed: int = 0,
        *,
        start_ms: int = DEFAULT_START_MS,
        version: Release = ROCKETMQ_4,
        sink: Callable[[Event], None] | None = None,
    ) -> None:
        self.events: list[Event] = []
        self._sink = sink or self.events.append
        self.sim = Simulation(seed, self._observe, start_ms)
        # the observer of the cluster: from when, and whether it sees the clients' events
        # (:meth:`observe_broker_side_only`)
        self.observed_from_ms = start_ms
        self.client_events = True
        self.inference = AutoCreateInference()
        self.version = version
        self.namesrvs: dict[str, NameServer] = {}
        self.brokers: dict[tuple[str, int], Broker] = {}
        self.producers: list[Producer] = []
        self.consumers: list[Consumer] = []

    # -- time ---------------------------------------------------------------------------------

    def ms(self, seconds: float) -> int:
        return self.sim.start_ms + round(seconds * 1000)

    def at(self, seconds: float, action: Callable[[], object]) -> None:
        """Run ``action`` ``seconds`` after the start."""

        def run_action() -> None:
            action()

        self.sim.at(self.ms(seconds), run_action)

    def every(
        self, period_s: float, action: Callable[[], object], start_s: float, end_s: float
    ) -> None:
        """Run ``action`` every ``period_s`` from ``start_s`` up to and including ``end_s``."""
        t = start_s
        while t <= end_s + 1e-9:
            self.at(t, action)
            t += period_s

    def run(self, seconds: float) -> list[Event]:
        """Run the first ``seconds`` of the simulation; returns the collected events."""
        self.sim.run(self.ms(seconds))
        return self.events

    # -- the observer -------------------------------------------------------------------------

    def observe_broker_side_only(self, from_s: float = 0) -> None:
        """The events are those ``routewatch collect`` gives, from ``from_s`` on: heartbeats
        only, none written before the collector starts (and its inference's first look is its
        first at the cluster, ``emitter/inference.py``). Called before any broker is added."""
        if self.brokers:
            raise ValueError("observe_broker_side_only() comes before the first add_broker()")
        self.observed_from_ms = self.ms(from_s)
        self.client_events = False

    def _observe(self, event: Event) -> None:
        if event.ts < self.observed_from_ms:
            return
        if not self.client_events and not isinstance(event, Heartbeat):
            return
        self._sink(event)

    def _inferred(self, broker: Broker) -> dict[str, InferredAutoCreation]:
        """The inference's look at ``broker``'s cluster as it registers: the masters some
        NameServer lists, and the registering one, with their tables."""
        if self.sim.now < self.observed_from_ms:
            return {}
        listed = {
            key[1]
            for ns in self.namesrvs.values()
            for key in ns.live
            if key[0] == broker.cluster and key[2] == 0
        } | {broker.name}
        tables: dict[str, MasterTable | None] = {
            name: MasterTable(m.auto_create, m.topics)
            for name in listed
            if (m := self.brokers.get((name, 0))) is not None
        }
        self.inference.look(self.sim.now, broker.cluster, tables, changed={broker.name})
        return self.inference.found(broker.cluster, broker.name)

    # -- topology -----------------------------------------------------------------------------

    def add_namesrv(
        self, addr: str | None = None, *, delete_topic_with_registration: bool = False
    ) -> NameServer:
        """A NameServer, started now (``delete_topic_with_registration``: 5.x's setting)."""
        addr = addr or f"10.0.0.{100 + len(self.namesrvs)}:9876"
        ns = NameServer(
            self.sim,
            addr,
            self.version,
            delete_topic_with_registration=delete_topic_with_registration,
        )
        self.namesrvs[addr] = ns
        ns.start()
        return ns

    def _namesrvs(self, addrs: Iterable[str] | None) -> list[NameServer]:
        return list(self.namesrvs.values()) if addrs is None else [self.namesrvs[a] for a in addrs]

    def add_broker(
        self,
        name: str,
        *,
        cluster: str = DEFAULT_CLUSTER,
        broker_id: int = 0,
        auto_create: bool = True,
        namesrvs: Iterable[str] | None = None,
        split_size: int | None = None,
        default_topic_queue_nums: int = DEFAULT_TOPIC_QUEUE_NUMS,
        version: Release | None = None,
        start: bool = True,
    ) -> Broker:
        """A broker registering with ``namesrvs`` (every NameServer by default), started now.

        A slave (``broker_id`` > 0) copies the table of the master of the same name. ``version``
        is the broker's RocketMQ release when it is not the world's (a broker before 4.8.0
        lets ``deleteTopic`` remove TBW102)."""
        index = len(self.brokers)
        broker = Broker(
            self.sim,
            cluster=cluster,
            name=name,
            broker_id=broker_id,
            addr=f"10.0.1.{10 + index}:10911",
            namesrvs=self._namesrvs(namesrvs),
            auto_create=auto_create,
            default_topic_queue_nums=default_topic_queue_nums,
            split_size=split_size,
            version=version or self.version,
            master=self._master(name) if broker_id != 0 else None,
            inferred=self._inferred,
        )
        self.brokers[(name, broker_id)] = broker
        if broker_id == 0:
            for (other, other_id), slave in self.brokers.items():
                if other == name and other_id != 0:
                    slave.master = broker
        if start:
            broker.start()
        return broker

    def broker(self, name: str, broker_id: int = 0) -> Broker:
        return self.brokers[(name, broker_id)]

    def _master(self, name: str) -> Broker | None:
        return self.brokers.get((name, 0))

    def masters(self, cluster: str = DEFAULT_CLUSTER) -> list[Broker]:
        return [
            b for (_, bid), b in sorted(self.brokers.items()) if bid == 0 and b.cluster == cluster
        ]

    def add_producer(
        self,
        group: str = "producer-group",
        *,
        cluster: str = DEFAULT_CLUSTER,
        namesrvs: Iterable[str] | None = None,
        create_topic_key: str = TBW102,
        default_topic_queue_nums: int = CLIENT_DEFAULT_TOPIC_QUEUE_NUMS,
        retries: int = 2,
    ) -> Producer:
        """A producer started now, using ``namesrvs`` (every NameServer by default), with the
        client's ``defaultTopicQueueNums`` and ``retryTimesWhenSendFailed``."""
        n = len(self.producers) + len(self.consumers)
        producer = Producer(
            self.sim,
            brokers=self._master,
            cluster=cluster,
            client_id=f"10.0.2.{10 + n}@{4000 + n}",
            group=group,
            namesrvs=self._namesrvs(namesrvs),
            create_topic_key=create_topic_key,
            default_topic_queue_nums=default_topic_queue_nums,
            retries=retries,
            version=self.version,
        )
        self.producers.append(producer)
        producer.start()
        return producer

    def add_consumer(
        self,
        group: str,
        topics: Iterable[str],
        *,
        cluster: str = DEFAULT_CLUSTER,
        namesrvs: Iterable[str] | None = None,
    ) -> Consumer:
        n = len(self.producers) + len(self.consumers)
        consumer = Consumer(
            self.sim,
            topics=topics,
            cluster=cluster,
            client_id=f"10.0.2.{10 + n}@{4000 + n}",
            group=group,
            namesrvs=self._namesrvs(namesrvs),
        )
        self.consumers.append(consumer)
        consumer.start()
        return consumer

    # -- admin --------------------------------------------------------------------------------

    def create_topic(
        self,
        topic: str,
        queues: int = 8,
        *,
        cluster: str = DEFAULT_CLUSTER,
        read: int | None = None,
        perm: int = PERM_READ | PERM_WRITE,
    ) -> None:
        """``mqadmin updateTopic -c <cluster>``: the topic on every master of the cluster, all
        within the same instant (the command's requests follow one another in milliseconds),
        then each master's immediate registration."""
        made = [
            b
            for b in self.masters(cluster)
            if b.upsert_topic(
                topic, read if read is not None else queues, queues, perm, register=False
            )
        ]
        for broker in made:
            broker.register_topic(topic)

    def delete_topic(self, topic: str, *, cluster: str = DEFAULT_CLUSTER) -> bool:
        """``mqadmin deleteTopic -c <cluster>``: from every master, then every NameServer. A
        master that refuses (TBW102 from 4.8.0 on) fails the command there, before any
        NameServer is asked: False."""
        for broker in self.masters(cluster):
            if not broker.delete_topic(topic):
                return False
        for ns in self.namesrvs.values():
            ns.delete_topic(topic)
        return True

    def wipe_write_perm(self, broker: str) -> None:
        """``mqadmin wipeWritePerm -b <broker>``: on every NameServer, the broker's topics lose
        their write bit until it registers a changed table; the observer sees it at once."""
        self._write_perm(broker, NameServer.wipe_write_perm)

    def add_write_perm(self, broker: str) -> None:
        """``mqadmin addWritePerm -b <broker>``: on every NameServer, the broker's topics get
        perm read|write (6); the observer sees it at once."""
        self._write_perm(broker, NameServer.add_write_perm)

    def _write_perm(self, broker: str, operate: Callable[[NameServer, str], int]) -> None:
        for ns in self.namesrvs.values():
            operate(ns, broker)
        master = self._master(broker)
        if master is not None:
            master.emit_routed()
