"""A broker: its topic table, its registrations with every NameServer, and auto-creation.

Modelled on ``BrokerController`` (registration at start, then every 30 s after a first 10 s),
``TopicConfigManager`` (the topics a broker makes at start; ``topics.json``, written when the
table changes; ``createTopicInSendMessageMethod``, auto-creation from the template named by the
send, after which the broker registers its whole table at once in 4.x, the new topic alone in
5.x: :mod:`emitter.versions`), ``registerIncrementBrokerData``
(immediate registration of a topic made with ``updateTopic``) and
``SlaveSynchronize.syncTopicConfig`` (a slave copies its master's table when their data versions
differ), and checked against RocketMQ 4.9 and 5.x (docs/emitter.md, "Checked against RocketMQ").
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace

from emitter.namesrv import NameServer
from emitter.sim import Simulation, Timer
from emitter.versions import (
    ROCKETMQ_4,
    SYSTEM_TOPIC_ADMIN_REFUSED_FROM,
    Release,
    persists_topics_on_shutdown,
    registers_whole_table_on_auto_create,
)
from routewatch.events import Heartbeat, HeldTopic, InferredAutoCreation, TopicConfig
from routewatch.rocketmq import (
    DEFAULT_TOPIC_QUEUE_NUMS,
    PERM_INHERIT,
    PERM_READ,
    PERM_WRITE,
    REGISTER_PERIOD_MS,
    TBW102,
    is_system_topic,
)

__all__ = [
    "FIRST_REGISTER_DELAY_MS",
    "SLAVE_SYNC_FIRST_DELAY_MS",
    "SLAVE_SYNC_PERIOD_MS",
    "Broker",
    "SendResult",
]

FIRST_REGISTER_DELAY_MS = 10_000
"""The periodic registration first fires 10 s after start (after the one at start)."""

SLAVE_SYNC_FIRST_DELAY_MS = 3_000
SLAVE_SYNC_PERIOD_MS = 10_000
"""A slave copies its master's topic table 3 s after start, then every 10 s
(``BrokerController.handleSlaveSynchronize``, 4.9.x; ``SlaveSynchronize.syncTopicConfig``)."""

CLUSTER_TOPIC_QUEUE_NUMS = 16
"""The queues of the topic named after the cluster (``TopicConfig``'s default)."""


@dataclass(frozen=True, slots=True)
class SendResult:
    """A broker's answer to one send: a ``SendStatus`` of the contract, or ``ILLEGAL_QUEUE``
    (a queue id the topic does not have), which has none: the client library writes no event
    for it, and a 4.x client retries it (``SYSTEM_ERROR``), a 5.x one does not
    (``INVALID_PARAMETER``)."""

    status: str
    auto_created: bool = False


class Broker:
    """One broker process (a master when ``broker_id`` is 0), state kept across restarts."""

    def __init__(
        self,
        sim: Simulation,
        *,
        cluster: str,
        name: str,
        broker_id: int,
        addr: str,
        namesrvs: Iterable[NameServer],
        auto_create: bool = True,
        default_topic_queue_nums: int = DEFAULT_TOPIC_QUEUE_NUMS,
        register_period_ms: int = REGISTER_PERIOD_MS,
        split_size: int | None = None,
        master: Broker | None = None,
        version: Release = ROCKETMQ_4,
        inferred: Callable[[Broker], Mapping[str, InferredAutoCreation]] | None = None,
    ) -> None:
        self.sim = sim
        # what the broker side's observer infers of this master's topics as it registers
        # (emitter/inference.py), written into its heartbeats as the collector writes it
        self.inferred = inferred
        self.cluster = cluster
        self.name = name
        self.broker_id = broker_id
        self.addr = addr
        self.namesrvs = list(namesrvs)
        self.auto_create = auto_create
        self.default_topic_queue_nums = default_topic_queue_nums
        self.register_period_ms = min(max(register_period_ms, 10_000), 60_000)
        self.split_size = split_size
        self.version = version
        self.topics: dict[str, TopicConfig] = {}  # the table in memory
        self.stored: dict[str, TopicConfig] | None = None  # topics.json, once written
        self._stored_version: str | None = None
        self.running = False
        self._started = False
        self.unreachable: set[str] = set()
        self.master = master  # a slave's master (same name, id 0), whose table it copies
        self.master_reachable = True
        self._version_counter = 0
        self._version = self._new_version()
        self._timer: Timer | None = None
        self._sync_timer: Timer | None = None

    @property
    def source(self) -> str:
        return f"{self.name}-{self.broker_id}"

    def _new_version(self) -> str:
        self._version_counter += 1
        return f"{self.sim.now}-{self._version_counter}"

    def _changed(self) -> None:
        """The table changed: a new data version, and the table written to ``topics.json``."""
        self._version = self._new_version()
        self.stored = dict(self.topics)
        self._stored_version = self._version

    def _own_topics(self) -> dict[str, TopicConfig]:
        """What ``TopicConfigManager`` makes at start, before it loads ``topics.json``: TBW102
        when auto-creation is on, and the topics named after the cluster and the broker, both
        with the inherit bit (``clusterTopicEnable`` and ``brokerTopicEnable`` are on by
        default), so they work as templates whatever ``autoCreateTopicEnable`` says."""
        rw = PERM_READ | PERM_WRITE
        own = {
            self.cluster: TopicConfig(
                read_queue_nums=CLUSTER_TOPIC_QUEUE_NUMS,
                write_queue_nums=CLUSTER_TOPIC_QUEUE_NUMS,
                perm=PERM_INHERIT | rw,
            ),
            self.name: TopicConfig(read_queue_nums=1, write_queue_nums=1, perm=PERM_INHERIT | rw),
        }
        if self.auto_create:
            q = self.default_topic_queue_nums
            own[TBW102] = TopicConfig(read_queue_nums=q, write_queue_nums=q, perm=PERM_INHERIT | rw)
        return own

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self, auto_create: bool | None = None, *, keep_store: bool = True) -> None:
        """Start (or restart with a new ``autoCreateTopicEnable``) on the stored table.

        The table is the broker's own topics (:meth:`_own_topics`) overlaid by ``topics.json``
        when one was written — a broker writes it only once its table changes, so a broker
        restarted with auto-creation off keeps TBW102 (inherit bit and all) only if its table
        changed before. The data version is the stored one, or a new one. With
        ``keep_store=False`` the store was lost (a new disk): nothing is loaded.
        """
        if auto_create is not None:
            self.auto_create = auto_create
        if not keep_store:
            self.stored = self._stored_version = None
        if self._started:
            # A new process: whatever connection the old one had is gone by now.
            self._close_connections()
        self._started = True
        self.topics = {**self._own_topics(), **(self.stored or {})}
        self._version = self._stored_version or self._new_version()
        self.running = True
        self.register_all()
        self._timer = self.sim.every(
            self.register_period_ms, self.register_all, FIRST_REGISTER_DELAY_MS
        )
        if self.broker_id != 0:
            self._sync_timer = self.sim.every(
                SLAVE_SYNC_PERIOD_MS, self.sync_from_master, SLAVE_SYNC_FIRST_DELAY_MS
            )

    def update_auto_create(self, on: bool) -> None:
        """``mqadmin updateBrokerConfig -k autoCreateTopicEnable``: the setting changes in the
        running broker; its table does not (no TBW102 is made, none removed) and nothing is
        registered at once. Its next registration carries the new setting."""
        self.auto_create = on

    def _halt(self) -> None:
        self.running = False
        for timer in (self._timer, self._sync_timer):
            if timer is not None:
                timer.cancel()
        self._timer = self._sync_timer = None

    def die(self) -> None:
        """The broker falls silent with its connections left open (its host froze or vanished,
        or the network dropped it): it stops registering, and each NameServer drops it only
        when its 120 s silence rule does."""
        self._halt()

    def kill(self) -> None:
        """The process dies (``kill -9``, a crash): the kernel closes its connections, and each
        NameServer it was connected to drops it at once. The event contract has no event for
        that, so nothing is emitted."""
        self._halt()
        self._close_connections()

    def _close_connections(self) -> None:
        for ns in self.namesrvs:
            if ns.addr not in self.unreachable:
                ns.channel_closed((self.cluster, self.name, self.broker_id))

    def shutdown(self) -> None:
        """Clean shutdown (SIGTERM, ``mqshutdown``): unregister from every reachable NameServer,
        then stop; a 5.x broker writes its table (and data version) to ``topics.json`` first."""
        if persists_topics_on_shutdown(self.version):
            self.stored = dict(self.topics)
            self._stored_version = self._version
        self._register({}, full=True, shutdown=True)
        self._halt()

    def lose_namesrv(self, addr: str) -> None:
        """Registrations to this NameServer stop arriving (network, or a wrong namesrvAddr)."""
        self.unreachable.add(addr)

    def regain_namesrv(self, addr: str) -> None:
        self.unreachable.discard(addr)

    # -- a slave and its master ---------------------------------------------------------------

    def lose_master(self) -> None:
        """A slave stops reaching its master (network, or the master's ports blocked): its
        periodic copy of the master's table fails, and the table stays as it was."""
        self.master_reachable = False

    def regain_master(self) -> None:
        self.master_reachable = True

    def sync_from_master(self) -> None:
        """A slave's periodic copy of its master's topic table: when the data versions differ,
        the master's table and version replace the slave's. Nothing is registered at once; the
        slave's next periodic registration carries the new table."""
        master = self.master
        if not self.running or master is None or not master.running or not self.master_reachable:
            return
        if master._version != self._version:
            self.topics = dict(master.topics)
            self._version = master._version

    # -- registration ---------------------------------------------------------------------------

    def register_all(self) -> None:
        """The periodic full registration, split in parts when the table is large."""
        if not self.running:
            return
        names = sorted(self.topics)
        size = self.split_size
        if size is None or len(names) < size:
            self._register(self.topics, full=True)
            return
        # 5.x (BrokerController.registerBrokerAll): a chunk each time `size` topics are
        # gathered, then the rest — sent even when empty, as the table divides
        whole = len(names) - len(names) % size
        chunks = [names[i : i + size] for i in range(0, whole, size)] + [names[whole:]]
        for part, chunk in enumerate(chunks):
            self._register(
                {t: self.topics[t] for t in chunk}, full=True, part=part, parts=len(chunks)
            )

    def _register(
        self,
        topics: dict[str, TopicConfig],
        *,
        full: bool,
        part: int | None = None,
        parts: int | None = None,
        shutdown: bool = False,
    ) -> None:
        found = self.inferred(self) if self.inferred is not None and self.broker_id == 0 else {}
        inferred = {t: f for t, f in sorted(found.items()) if t in topics} or None
        for ns in self.namesrvs:
            if ns.addr in self.unreachable:
                continue
            hb = Heartbeat(
                **self.sim.envelope(self.cluster, self.source),
                broker=self.name,
                broker_addr=self.addr,
                broker_id=self.broker_id,
                namesrv=ns.addr,
                auto_create_topic_enable=self.auto_create,
                default_topic_queue_nums=self.default_topic_queue_nums,
                full=full,
                topics=dict(topics),
                data_version=self._version,
                part=part,
                parts=parts,
                shutdown=True if shutdown else None,
                inferred_auto_created=inferred,
            )
            ns.register(hb)
            self.sim.emit(self._as_routed(hb, ns))

    def _as_routed(self, hb: Heartbeat, ns: NameServer) -> Heartbeat:
        """A master's full registration as an observer of ``ns`` sees it where ``ns`` routes
        otherwise — a topic deleted on this broker alone still routed, perms changed by
        ``wipeWritePerm``/``addWritePerm`` — as ``routewatch collect`` writes it: the routed
        topics under a version string of their own, and in ``held`` the routed topics this
        broker lacks and its own TBW102 where the route's differs or has none."""
        if not hb.full or hb.parts or hb.shutdown or self.broker_id != 0:
            return hb
        routed = ns.routed(self.name)
        if routed == hb.topics:
            return hb
        held = {t: HeldTopic(held=False, perm=None) for t in sorted(routed) if t not in hb.topics}
        own = hb.topics.get(TBW102)
        if own is not None and (TBW102 not in routed or routed[TBW102].perm != own.perm):
            held[TBW102] = HeldTopic(held=True, perm=own.perm)
        digest = hashlib.blake2b(repr(sorted(routed.items())).encode(), digest_size=4)
        return replace(
            hb,
            topics=routed,
            data_version=f"{hb.data_version}~{digest.hexdigest()}",
            held=held or None,
        )

    def emit_routed(self) -> None:
        """What each NameServer routes to this master now, written as a collector would at its
        next round (after ``wipeWritePerm``/``addWritePerm``), without registering."""
        if not self.running or self.broker_id != 0:
            return
        for ns in self.namesrvs:
            if ns.addr in self.unreachable or (self.cluster, self.name, 0) not in ns.live:
                continue
            hb = Heartbeat(
                **self.sim.envelope(self.cluster, self.source),
                broker=self.name,
                broker_addr=self.addr,
                broker_id=0,
                namesrv=ns.addr,
                auto_create_topic_enable=self.auto_create,
                default_topic_queue_nums=self.default_topic_queue_nums,
                full=True,
                topics=dict(self.topics),
                data_version=self._version,
            )
            self.sim.emit(self._as_routed(hb, ns))

    # -- topics -----------------------------------------------------------------------------

    def refuses_admin(self, topic: str) -> bool:
        """Whether ``updateTopic``/``deleteTopic`` of ``topic`` is refused: a system topic,
        from 4.8.0 on ("The topic[TBW102] is conflict with system topic")."""
        return self.version >= SYSTEM_TOPIC_ADMIN_REFUSED_FROM and is_system_topic(
            topic, "", frozenset()
        )

    def upsert_topic(
        self,
        topic: str,
        read: int,
        write: int,
        perm: int = PERM_READ | PERM_WRITE,
        *,
        register: bool = True,
    ) -> bool:
        """``mqadmin updateTopic`` on this broker: change the table, register it at once
        (unless ``register`` is false: :meth:`register_topic` follows). False if the broker
        refused (a system topic)."""
        if self.refuses_admin(topic):
            return False
        config = TopicConfig(read_queue_nums=read, write_queue_nums=write, perm=perm)
        self.topics[topic] = config
        self._changed()
        if register:
            self.register_topic(topic)
        return True

    def register_topic(self, topic: str) -> None:
        """The immediate registration of one topic (``registerIncrementBrokerData``)."""
        if self.running:
            self._register({topic: self.topics[topic]}, full=False)

    def delete_topic(self, topic: str) -> bool:
        """Delete from this broker's table only; a NameServer keeps the topic's route on this
        broker while the broker stays registered (registrations never remove a topic). False
        if the broker refused (a system topic)."""
        if self.refuses_admin(topic):
            return False
        if self.topics.pop(topic, None) is not None:
            self._changed()
        return True

    def receive_send(
        self, topic: str, default_topic: str, default_queue_nums: int, queue_id: int = 0
    ) -> SendResult:
        """Handle one send request to ``queue_id``; auto-create ``topic`` from the template when
        allowed (``AbstractSendMessageProcessor.msgCheck``). A queue id the topic does not have
        is refused after the topic is found or made ("request queueId[q] is illegal":
        ``ILLEGAL_QUEUE``): a 5.x producer whose template route came from TBW102 while the broker
        made the topic from a smaller template sends there until its next refresh."""
        if not self.running:
            return SendResult("TIMEOUT")
        auto_created = False
        if topic not in self.topics:
            template = self.topics.get(default_topic)
            if template is not None and default_topic == TBW102 and not self.auto_create:
                # With auto-creation off the broker strips the inherit bit from its TBW102, in
                # memory: no new data version, so NameServers keep the one they had.
                template = replace(template, perm=PERM_READ | PERM_WRITE)
                self.topics[TBW102] = template
            if template is None or not template.perm & PERM_INHERIT:
                return SendResult("TOPIC_NOT_EXIST")
            q = min(default_queue_nums, template.write_queue_nums)
            config = TopicConfig(
                read_queue_nums=q, write_queue_nums=q, perm=template.perm & ~PERM_INHERIT
            )
            self.topics[topic] = config
            self._changed()
            if registers_whole_table_on_auto_create(self.version):
                self.register_all()  # 4.x: the whole table at once (registerBrokerAll)
            else:
                self.register_topic(topic)  # 5.x: the new topic alone, under the new version
            auto_created = True
        held = self.topics[topic]
        if queue_id >= max(held.read_queue_nums, held.write_queue_nums):
            return SendResult("ILLEGAL_QUEUE", auto_created=auto_created)
        return SendResult("SEND_OK", auto_created=auto_created)
