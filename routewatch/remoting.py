"""RocketMQ's own protocol, spoken to NameServers and brokers, for tests.

A topic's route and the cluster list are two requests to a NameServer
(``GET_ROUTEINFO_BY_TOPIC`` = 105, ``GET_BROKER_CLUSTER_INFO`` = 106); a broker's topic table,
configuration and run-time figures three to a broker (``GET_ALL_TOPIC_CONFIG`` = 21,
``GET_BROKER_CONFIG`` = 26, ``GET_BROKER_RUNTIME_INFO`` = 28). Each is a frame of
``[total length][serialize type << 24 | header length][JSON header][body]``, big-endian, on a
connection of its own. Asking here costs a TCP round trip instead of an
``mqadmin`` JVM (about 5 s on this machine), so readiness and "when does the NameServer drop
it" can be polled. ``mqadmin topicRoute`` prints the same route (``routewatch.testing.rocketmq``);
both are read with :mod:`routewatch.fastjson`.

The NameServer of 4.9.4 and later answers a route request of a 4.9.4 or later client in standard
JSON, and an older client's in fastjson's own notation (bare integer keys,
``{0:"127.0.0.1:21911"}``); the cluster list is always in fastjson's. These requests present
themselves as a 4.9.3 client, so that every route read here goes through the bare-key path of
the parser, as every older client's does.
"""

from __future__ import annotations

import itertools
import json
import socket
import struct
from dataclasses import dataclass
from typing import Any

from routewatch import fastjson

GET_ALL_TOPIC_CONFIG = 21
GET_BROKER_CONFIG = 26
GET_BROKER_RUNTIME_INFO = 28
GET_ROUTEINFO_BY_TOPIC = 105
GET_BROKER_CLUSTER_INFO = 106
DELETE_TOPIC_IN_BROKER = 215
SUCCESS = 0
TOPIC_NOT_EXIST = 17
# MQVersion.Version ordinals: V4_9_3 = 399 (V4_9_4 = 401 and later get standard JSON).
LEGACY_CLIENT_VERSION = 399
_opaque = itertools.count(1)


class RemotingError(RuntimeError):
    """A NameServer or broker answered a request with an error code."""


@dataclass(frozen=True)
class QueueData:
    """One broker's queues of a topic, as the route lists them."""

    broker: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int
    topic_sys_flag: int = 0


@dataclass(frozen=True)
class BrokerData:
    """One broker group of a route or of the cluster list: its addresses by broker id."""

    cluster: str
    broker: str
    addrs: dict[int, str]


@dataclass(frozen=True)
class TopicRoute:
    """A topic's route as one NameServer gives it."""

    queues: tuple[QueueData, ...]
    brokers: tuple[BrokerData, ...]
    order_topic_conf: str | None = None

    @property
    def broker_names(self) -> set[str]:
        """The brokers that hold queues of the topic."""
        return {q.broker for q in self.queues}

    def queue(self, broker: str) -> QueueData | None:
        """The queues of ``broker``, if it holds the topic."""
        return next((q for q in self.queues if q.broker == broker), None)


@dataclass(frozen=True)
class ClusterInfo:
    """The NameServer's cluster list: broker groups by name, broker names by cluster."""

    brokers: dict[str, BrokerData]
    clusters: dict[str, frozenset[str]]

    def addr(self, broker: str, broker_id: int = 0) -> str | None:
        """The address the NameServer holds for ``broker`` (master by default), if any."""
        data = self.brokers.get(broker)
        return None if data is None else data.addrs.get(broker_id)


def _broker_data(raw: dict[str | int, Any]) -> BrokerData:
    addrs = raw.get("brokerAddrs") or {}
    return BrokerData(
        cluster=str(raw["cluster"]),
        broker=str(raw["brokerName"]),
        addrs={int(k): str(v) for k, v in addrs.items()},
    )


def parse_topic_route(text: str) -> TopicRoute:
    """A route from the NameServer's JSON (fastjson's notation or standard JSON)."""
    raw = fastjson.loads(text)
    queues = (
        QueueData(
            broker=str(q["brokerName"]),
            read_queue_nums=int(q["readQueueNums"]),
            write_queue_nums=int(q["writeQueueNums"]),
            perm=int(q["perm"]),
            topic_sys_flag=int(q.get("topicSysFlag", 0)),
        )
        for q in raw.get("queueDatas") or ()
    )
    return TopicRoute(
        queues=tuple(sorted(queues, key=lambda q: q.broker)),
        brokers=tuple(
            sorted((_broker_data(b) for b in raw.get("brokerDatas") or ()), key=lambda b: b.broker)
        ),
        order_topic_conf=raw.get("orderTopicConf"),
    )


def parse_cluster_info(text: str) -> ClusterInfo:
    """The cluster list from the NameServer's JSON (fastjson's notation or standard JSON)."""
    raw = fastjson.loads(text)
    table = raw.get("brokerAddrTable") or {}
    clusters = raw.get("clusterAddrTable") or {}
    return ClusterInfo(
        brokers={str(name): _broker_data(data) for name, data in table.items()},
        clusters={str(name): frozenset(map(str, names)) for name, names in clusters.items()},
    )


def _recv_exact(sock: socket.socket, size: int) -> bytes:
    chunks = bytearray()
    while len(chunks) < size:
        chunk = sock.recv(size - len(chunks))
        if not chunk:
            raise ConnectionError("the peer closed the connection mid-answer")
        chunks += chunk
    return bytes(chunks)


def request(
    addr: str,
    code: int,
    ext_fields: dict[str, str] | None = None,
    *,
    version: int = LEGACY_CLIENT_VERSION,
    timeout: float = 3.0,
) -> tuple[dict[str | int, Any], bytes]:
    """Send one request to the NameServer or broker at ``addr``; its answer's header and body.
    Fails with an ``OSError`` (``TimeoutError`` included) if it does not answer in ``timeout``."""
    header = json.dumps(
        {
            "code": code,
            "extFields": ext_fields or {},
            "flag": 0,
            "language": "PYTHON",
            "opaque": next(_opaque),
            "serializeTypeCurrentRPC": "JSON",
            "version": version,
        }
    ).encode()
    host, port = addr.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=timeout) as sock:
        sock.settimeout(timeout)
        sock.sendall(struct.pack(">ii", 4 + len(header), len(header)) + header)
        (length,) = struct.unpack(">i", _recv_exact(sock, 4))
        frame = _recv_exact(sock, length)
    header_length = struct.unpack(">i", frame[:4])[0] & 0xFFFFFF
    answer = fastjson.loads(frame[4 : 4 + header_length].decode())
    return answer, frame[4 + header_length :]


def raw_topic_route(addr: str, topic: str, *, version: int = LEGACY_CLIENT_VERSION) -> str | None:
    """The NameServer's route of ``topic`` as the text it sends, or None if it has none."""
    answer, body = request(addr, GET_ROUTEINFO_BY_TOPIC, {"topic": topic}, version=version)
    if answer["code"] == TOPIC_NOT_EXIST:
        return None
    if answer["code"] != SUCCESS:
        raise RemotingError(f"route of {topic} from {addr}: {answer.get('remark')}")
    return body.decode()


def topic_route(addr: str, topic: str) -> TopicRoute | None:
    """The route of ``topic`` from the NameServer at ``addr``, or None if it has none."""
    text = raw_topic_route(addr, topic)
    return None if text is None else parse_topic_route(text)


def raw_cluster_info(addr: str, *, version: int = LEGACY_CLIENT_VERSION) -> str:
    """The NameServer's cluster list as the text it sends."""
    answer, body = request(addr, GET_BROKER_CLUSTER_INFO, version=version)
    if answer["code"] != SUCCESS:
        raise RemotingError(f"cluster list from {addr}: {answer.get('remark')}")
    return body.decode()


def cluster_info(addr: str) -> ClusterInfo:
    """The cluster list of the NameServer at ``addr``."""
    return parse_cluster_info(raw_cluster_info(addr))


@dataclass(frozen=True)
class TopicConfig:
    """A topic as a broker holds it in its topic table (and registers it)."""

    read_queue_nums: int
    write_queue_nums: int
    perm: int


def broker_topics(addr: str, *, timeout: float = 3.0) -> dict[str, TopicConfig]:
    """The topic table of the broker at ``addr``: what it registers with its NameServers."""
    answer, body = request(addr, GET_ALL_TOPIC_CONFIG, timeout=timeout)
    if answer["code"] != SUCCESS:
        raise RemotingError(f"topic table of the broker at {addr}: {answer.get('remark')}")
    table = fastjson.loads(body.decode()).get("topicConfigTable") or {}
    return {
        str(name): TopicConfig(int(t["readQueueNums"]), int(t["writeQueueNums"]), int(t["perm"]))
        for name, t in table.items()
    }


def _properties(text: str) -> dict[str, str]:
    pairs = (line.split("=", 1) for line in text.splitlines() if "=" in line)
    return {key.strip(): value.strip() for key, value in pairs}


def broker_config(addr: str, *, timeout: float = 3.0) -> dict[str, str]:
    """The configuration the broker at ``addr`` runs with now (every property, as text)."""
    answer, body = request(addr, GET_BROKER_CONFIG, timeout=timeout)
    if answer["code"] != SUCCESS:
        raise RemotingError(f"configuration of the broker at {addr}: {answer.get('remark')}")
    return _properties(body.decode())


def broker_runtime_info(addr: str, *, timeout: float = 3.0) -> dict[str, str]:
    """The broker's run-time figures (``mqadmin brokerStatus``); a frozen broker times out."""
    answer, body = request(addr, GET_BROKER_RUNTIME_INFO, timeout=timeout)
    if answer["code"] != SUCCESS:
        raise RemotingError(f"run-time figures of the broker at {addr}: {answer.get('remark')}")
    table = fastjson.loads(body.decode()).get("table") or {}
    return {str(k): str(v) for k, v in table.items()}


def delete_topic_in_broker(addr: str, topic: str, *, timeout: float = 3.0) -> None:
    """Delete ``topic`` from the topic table of the broker at ``addr`` only (what ``mqadmin
    deleteTopic`` asks of each master before it asks the NameServers)."""
    answer, _ = request(addr, DELETE_TOPIC_IN_BROKER, {"topic": topic}, timeout=timeout)
    if answer["code"] != SUCCESS:
        raise RemotingError(f"deleting {topic} on the broker at {addr}: {answer.get('remark')}")
