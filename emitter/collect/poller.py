"""One poll of a cluster: every NameServer's cluster list and the data version it holds for each
broker it lists, every listed broker's configuration, and a broker's topic table when a
NameServer holds a version of it not seen yet. Failures are recorded per target, logged once
when a target starts or stops failing, and counted; they never stop the poll."""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, Protocol

from emitter.collect.metrics import CollectorMetrics, ErrorReason
from routewatch import remoting
from routewatch.remoting import Connection, DataVersion, TopicRoute, TopicTable

__all__ = ["BrokerKey", "BrokerView", "NamesrvView", "Poller", "RouteAsker", "Snapshot"]

log = logging.getLogger("routewatch.collect")

BrokerKey = tuple[str, str, int]  # (cluster, broker name, broker id)


@dataclass
class NamesrvView:
    """What one NameServer held when it answered."""

    addr: str
    ts: int  # epoch ms when its cluster list arrived
    brokers: dict[BrokerKey, str]  # the brokers it lists -> their addresses
    versions: dict[str, DataVersion | None] = field(default_factory=dict)  # by broker address;
    # absent: not known this poll (the question failed)
    topics: frozenset[str] | None = None  # every topic it routes (its topic list)
    # False on RocketMQ 5.x, which renews a broker's liveness when asked its data version: the
    # versions are then the brokers' own, read from their tables each poll
    asked_versions: bool = True
    routes: dict[str, TopicRoute | None] = field(default_factory=dict)  # the routes asked


@dataclass
class BrokerView:
    """What one broker said of itself."""

    addr: str
    auto_create_topic_enable: bool
    default_topic_queue_nums: int
    table: TopicTable | None = None  # None: not asked this poll
    broker_permission: int = 6  # brokerPermission: a read-only one is every topic's registered perm
    # RocketMQ 5 with enableSlaveActingMaster: the brokerNotActiveTimeoutMillis its registrations
    # carry, after which a NameServer drops it (10 s by default); None: the NameServer's 120 s
    heartbeat_timeout_ms: int | None = None


@dataclass
class Snapshot:
    namesrvs: dict[str, NamesrvView] = field(default_factory=dict)  # those that answered
    brokers: dict[str, BrokerView] = field(default_factory=dict)  # those that answered


class RouteAsker(Protocol):
    """Who decides which routes to ask each NameServer (:class:`emitter.collect.derive.Deriver`):
    after the brokers' tables, in passes until it has no question left."""

    def route_questions(self, snap: Snapshot) -> dict[str, set[str]]: ...

    def route_answers(
        self, snap: Snapshot, ns: str, routes: dict[str, TopicRoute | None]
    ) -> None: ...


ROUTE_PASSES = 3  # a sentinel's answer can call for every topic of a broker: two passes suffice


# RocketMQ 5's authentication refusals (code 16, NO_PERMISSION; the remark is the exception's
# message: DefaultAuthenticationHandler, DefaultAuthenticationContextBuilder)
_UNSIGNED_5 = "username cannot be null"
_CREDENTIALS_5 = ("is not found", "check signature failed", "is disabled")


def _acl_refusal(exc: BaseException) -> Literal["unsigned", "credentials"] | None:
    """Whether a broker refused a request for its ACL: 4.9's plain ACL answers with an
    ``AclException``; 5.x's authentication with NO_PERMISSION and one of its sentences."""
    if not isinstance(exc, remoting.RemotingError):
        return None
    said = str(exc)
    if "AclException" in said:
        return "unsigned" if "No accessKey" in said else "credentials"
    remark = (exc.remark or "").lower()
    if exc.code == remoting.NO_PERMISSION and _UNSIGNED_5 in remark:
        return "unsigned"
    if exc.code == remoting.NO_PERMISSION and any(c in remark for c in _CREDENTIALS_5):
        return "credentials"
    return None


def _reason(exc: BaseException) -> tuple[ErrorReason, str]:
    """(counter label, words for the log) of a failed request."""
    if isinstance(exc, TimeoutError | socket.timeout):
        return "timeout", str(exc) or "timed out"
    if isinstance(exc, remoting.ProtocolError):
        return "garbage", f"answered something that is not RocketMQ's protocol ({exc})"
    refusal = _acl_refusal(exc)
    if refusal == "unsigned":
        return "refused", (
            "refuses unsigned requests: ACL is enabled there; set "
            "ROUTEWATCH_COLLECT_ACCESS_KEY and ROUTEWATCH_COLLECT_SECRET_KEY to an account "
            "of its plain_acl.yml (4.9) or a user of its authentication (5.x)"
        )
    if refusal == "credentials":
        return "refused", (
            f"refuses the collector's ACL credentials ({exc}); check ROUTEWATCH_COLLECT_ACCESS_KEY "
            "and ROUTEWATCH_COLLECT_SECRET_KEY against its plain_acl.yml (4.9) or its users (5.x)"
        )
    if isinstance(exc, remoting.RemotingError):
        return "refused", f"refused the request ({exc})"
    if isinstance(exc, ConnectionRefusedError):
        return "unreachable", "refused the connection (nothing listens there)"
    if isinstance(exc, OSError):
        return "unreachable", exc.strerror or str(exc) or type(exc).__name__
    raise exc


class Poller:
    """Keeps a connection per NameServer and broker and polls them."""

    def __init__(
        self,
        namesrvs: list[str],
        metrics: CollectorMetrics,
        timeout: float = 3.0,
        clock: Callable[[], float] = time.time,
        *,
        credentials: remoting.Credentials | None = None,
    ) -> None:
        self.namesrvs = namesrvs
        self.credentials = credentials
        self.metrics = metrics
        self.timeout = timeout
        self.clock = clock
        self._conns: dict[str, Connection] = {}
        self._failing: dict[str, str] = {}  # target -> reason kind, while it fails
        self.failures: dict[str, str] = {}  # target -> what it did, while it fails

    def close(self) -> None:
        for conn in self._conns.values():
            conn.close()
        self._conns.clear()

    def _conn(self, addr: str) -> Connection:
        conn = self._conns.get(addr)
        if conn is None:
            conn = self._conns[addr] = Connection(addr, self.timeout, self.credentials)
        return conn

    def _failed(
        self, kind: str, addr: str, exc: BaseException, consequence: str, name: str = ""
    ) -> None:
        label, words = _reason(exc)
        self.metrics.errors.labels(target=kind, reason=label).inc()
        if self._failing.get(addr) != label:
            words = words.removeprefix(f"{addr} ")
            log.warning("%s %s; %s.", _title(kind, addr, name), words, consequence)
        self._failing[addr] = label
        self.failures[addr] = words

    def _answered(self, kind: str, addr: str, name: str = "") -> None:
        self.failures.pop(addr, None)
        if self._failing.pop(addr, None) is not None:
            log.warning("%s answers again.", _title(kind, addr, name))

    def failing(self, kind: str) -> int:
        return sum(1 for a in self._failing if (a in self.namesrvs) == (kind == "namesrv"))

    def poll(
        self, known: Callable[[str, DataVersion], bool], routes: RouteAsker | None = None
    ) -> Snapshot:
        """One poll. ``known(addr, version)``: whether the table of the broker at ``addr`` at
        ``version`` is already known (if every NameServer's version of a broker is known, its
        topic table is not asked for); ``routes``: which routes to ask each NameServer, once the
        tables are in."""
        snap = Snapshot()
        self.metrics.polls.inc()
        for ns in self.namesrvs:
            view = self._namesrv(ns)
            if view is not None:
                snap.namesrvs[ns] = view
        listed: dict[str, BrokerKey] = {}
        for view in snap.namesrvs.values():
            for key, addr in view.brokers.items():
                listed.setdefault(addr, key)
        for addr, key in sorted(listed.items()):
            broker = self._broker(addr, key)
            if broker is None:
                continue
            snap.brokers[addr] = broker
            versions = {v.versions.get(addr) for v in snap.namesrvs.values()}
            unasked = [
                v
                for v in snap.namesrvs.values()
                if not v.asked_versions and addr in v.brokers.values()
            ]
            if unasked or any(v is not None and not known(addr, v) for v in versions):
                broker.table = self._table(addr, key)
            # a 5.x NameServer is taken to hold the broker's own version (its registrations
            # carry it; a route query of the broker's sentinel topic shows what it routes)
            for view in unasked:
                if broker.table is not None:
                    view.versions[addr] = broker.table.version
        if routes is not None:
            self._routes(snap, routes)
        for kind in ("namesrv", "broker"):
            self.metrics.targets_down.labels(target=kind).set(self.failing(kind))
        return snap

    def _namesrv(self, ns: str) -> NamesrvView | None:
        conn = self._conn(ns)
        consequence = (
            "writing nothing for it until it answers (the job takes what it routes as unknown, "
            "and raises NAMESRV_UNREACHABLE after 30 s)"
        )
        try:
            self.metrics.requests.labels(target="namesrv").inc()
            answer = conn.call(remoting.GET_BROKER_CLUSTER_INFO)
            if answer.code != remoting.SUCCESS:
                raise remoting.RemotingError(
                    f"the cluster list from {ns}: code {answer.code}, {answer.remark}"
                )
            ts = int(self.clock() * 1000)
            info = remoting.parse_cluster_info(answer.body)
            brokers: dict[BrokerKey, str] = {}
            for clusters_name, names in info.clusters.items():
                for name in names:
                    data = info.brokers.get(name)
                    if data is None:
                        continue
                    for broker_id, addr in data.addrs.items():
                        brokers[(data.cluster or clusters_name, name, broker_id)] = addr
            self.metrics.requests.labels(target="namesrv").inc()
            view = NamesrvView(ns, ts, brokers, topics=remoting.topic_list_on(conn))
            # a 5.x NameServer is never asked a data version: the question would keep a broker
            # that stopped registering alive there (remoting.namesrv_data_version)
            view.asked_versions = answer.version < remoting.V5_0_0_SNAPSHOT
            for (cluster, name, broker_id), addr in sorted(brokers.items()):
                if not view.asked_versions:
                    break
                self.metrics.requests.labels(target="namesrv").inc()
                view.versions[addr] = remoting.namesrv_data_version(
                    conn, cluster, name, broker_id, addr
                )
        except (OSError, remoting.RemotingError) as exc:
            self._failed("namesrv", ns, exc, consequence)
            return None
        self._answered("namesrv", ns)
        return view

    def _routes(self, snap: Snapshot, asker: RouteAsker) -> None:
        """The routes the asker wants, from each NameServer; one that fails a question leaves
        the snapshot (nothing is written for it this round)."""
        for _ in range(ROUTE_PASSES):
            questions = {ns: q for ns, q in asker.route_questions(snap).items() if q}
            if not questions:
                return
            for ns, topics in sorted(questions.items()):
                conn = self._conn(ns)
                answers: dict[str, TopicRoute | None] = {}
                try:
                    for topic in sorted(topics):
                        self.metrics.requests.labels(target="namesrv").inc()
                        answers[topic] = remoting.route_on(conn, topic)
                except (OSError, remoting.RemotingError) as exc:
                    self._failed("namesrv", ns, exc, "writing nothing for it this round")
                    del snap.namesrvs[ns]
                    continue
                snap.namesrvs[ns].routes.update(answers)
                asker.route_answers(snap, ns, answers)

    def _broker(self, addr: str, key: BrokerKey) -> BrokerView | None:
        consequence = (
            "while a NameServer lists it, its heartbeats go on with what was last known of it"
        )
        try:
            self.metrics.requests.labels(target="broker").inc()
            config = remoting.parse_properties(
                self._conn(addr).ask(remoting.GET_BROKER_CONFIG, "the broker configuration")
            )
            auto = config.get("autoCreateTopicEnable")
            queues = config.get("defaultTopicQueueNums", "")
            if auto not in ("true", "false") or not queues.isdigit():
                raise remoting.ProtocolError(
                    f"its configuration has autoCreateTopicEnable={auto!r}, "
                    f"defaultTopicQueueNums={queues!r}"
                )
        except (OSError, remoting.RemotingError) as exc:
            self._failed("broker", addr, exc, consequence, key[1])
            return None
        self._answered("broker", addr, key[1])
        permission = config.get("brokerPermission", "6")
        return BrokerView(
            addr,
            auto == "true",
            int(queues),
            broker_permission=int(permission) if permission.isdigit() else 6,
            heartbeat_timeout_ms=_own_timeout(config),
        )

    def _table(self, addr: str, key: BrokerKey) -> TopicTable | None:
        try:
            self.metrics.requests.labels(target="broker").inc()
            body = self._conn(addr).ask(remoting.GET_ALL_TOPIC_CONFIG, "the topic table")
            return remoting.parse_topic_table(body)
        except (OSError, remoting.RemotingError) as exc:
            consequence = f"{key[1]}'s new topic table waits for the next poll"
            self._failed("broker", addr, exc, consequence, key[1])
            return None


def _own_timeout(config: dict[str, str]) -> int | None:
    """The expiry a 5.x broker in slave-acting-master mode registers with
    (``BrokerController.doRegisterBrokerAll``: ``heartbeatTimeoutMillis`` is its
    ``brokerNotActiveTimeoutMillis`` when ``enableSlaveActingMaster`` is on, else not sent)."""
    timeout = config.get("brokerNotActiveTimeoutMillis", "")
    if config.get("enableSlaveActingMaster") != "true" or not timeout.isdigit():
        return None
    return int(timeout) or None


def _title(kind: str, addr: str, name: str) -> str:
    if kind == "namesrv":
        return f"NameServer {addr}"
    return f"broker {name} at {addr}" if name else f"broker at {addr}"
