"""RocketMQ's own remoting protocol, spoken to NameServers and brokers: the codec and a client.

**The frame.** ``[total length][serialize type << 24 | header length][header][body]``, the two
numbers big-endian 32-bit; the total counts everything after itself. The header's high byte names
its serialization: 0 is JSON (fastjson's, read with :mod:`routewatch.fastjson`), 1 RocketMQ's own
binary layout (``RocketMQSerializable``). A header has ``code`` (the request code, or an answer's
status), ``opaque`` (the request's id, echoed by its answer), ``flag`` (bit 0: an answer; bit 1:
one-way), ``version``, ``language``, ``remark`` and ``extFields`` (text to text). :func:`encode`
writes a frame, :func:`decode` reads one; anything that is not a frame fails with a
:class:`ProtocolError` naming what was wrong.

**The client.** A :class:`Connection` keeps one TCP connection to one NameServer or broker and
matches each answer to its request by ``opaque``; any failure closes it, and the next request
opens a new one. Requests used here: to a NameServer, ``GET_ROUTEINFO_BY_TOPIC`` (105),
``GET_BROKER_CLUSTER_INFO`` (106), ``GET_ALL_TOPIC_LIST_FROM_NAMESERVER`` (206) and
``QUERY_DATA_VERSION`` (322); to a broker,
``GET_ALL_TOPIC_CONFIG`` (21), ``GET_BROKER_CONFIG`` (26), ``GET_BROKER_RUNTIME_INFO`` (28) and
``DELETE_TOPIC_IN_BROKER`` (215). ``routewatch remedy`` alone, when told to apply a plan,
sends ``UPDATE_AND_CREATE_TOPIC`` (17) and ``UPDATE_BROKER_CONFIG`` (25) to a broker and
``DELETE_TOPIC_IN_NAMESRV`` (216) to a NameServer. The module-level functions ask once, on a
connection of their own (the test harness polls with them: a round trip instead of an
``mqadmin`` JVM).

The NameServer of 4.9.4 and later answers a route request of a 4.9.4 or later client in standard
JSON, and an older client's in fastjson's own notation (bare integer keys,
``{0:"127.0.0.1:21911"}``); the cluster list is always in fastjson's. These requests present
themselves as a 4.9.3 client, so that every route read here goes through the bare-key path of
the parser, as every older client's does.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import itertools
import socket
import struct
import time
from dataclasses import dataclass, field
from typing import Any

import orjson

from routewatch import fastjson

UPDATE_AND_CREATE_TOPIC = 17
GET_ALL_TOPIC_CONFIG = 21
UPDATE_BROKER_CONFIG = 25
GET_BROKER_CONFIG = 26
GET_BROKER_RUNTIME_INFO = 28
GET_ROUTEINFO_BY_TOPIC = 105
GET_BROKER_CLUSTER_INFO = 106
GET_ALL_TOPIC_LIST_FROM_NAMESERVER = 206
DELETE_TOPIC_IN_BROKER = 215
DELETE_TOPIC_IN_NAMESRV = 216
QUERY_DATA_VERSION = 322
SUCCESS = 0
TOPIC_NOT_EXIST = 17
NO_PERMISSION = 16  # ResponseCode.NO_PERMISSION (5.x: an authentication or authorization refusal)
# MQVersion.Version ordinals: V4_9_3 = 399 (V4_9_4 = 401 and later get standard JSON).
LEGACY_CLIENT_VERSION = 399
# V5_0_0_SNAPSHOT: a server whose answers carry this version or later runs RocketMQ 5.x.
V5_0_0_SNAPSHOT = 412
JSON_SERIALIZATION = 0
ROCKETMQ_SERIALIZATION = 1
FLAG_RESPONSE = 1
# RocketMQ's own limit on a frame (``com.rocketmq.remoting.frameMaxLength``, 16 MiB by default).
MAX_FRAME = 16 * 1024 * 1024
_opaque = itertools.count(1)


class RemotingError(RuntimeError):
    """A NameServer or broker answered a request with an error code (``code`` and ``remark``
    when it is the answer's)."""

    def __init__(self, message: str, code: int | None = None, remark: str | None = None) -> None:
        super().__init__(message)
        self.code, self.remark = code, remark


class ProtocolError(RemotingError):
    """What came back is not a RocketMQ frame (or not the answer asked for)."""


# -- the codec -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Command:
    """One request or answer: its header's fields and its body."""

    code: int
    opaque: int
    flag: int = 0
    version: int = LEGACY_CLIENT_VERSION
    language: str = "PYTHON"
    remark: str | None = None
    ext_fields: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    serialization: int = JSON_SERIALIZATION

    @property
    def is_response(self) -> bool:
        return bool(self.flag & FLAG_RESPONSE)


def encode(command: Command) -> bytes:
    """The frame of ``command``, its length first, with a JSON header."""
    header: dict[str, Any] = {
        "code": command.code,
        "extFields": command.ext_fields,
        "flag": command.flag,
        "language": command.language,
        "opaque": command.opaque,
        "serializeTypeCurrentRPC": "JSON",
        "version": command.version,
    }
    if command.remark is not None:
        header["remark"] = command.remark
    raw = orjson.dumps(header)
    return struct.pack(">ii", 4 + len(raw) + len(command.body), len(raw)) + raw + command.body


def _int(header: dict[Any, Any], name: str) -> int:
    value = header.get(name)
    if type(value) is not int:
        raise ProtocolError(f"the header's {name} is {value!r}, not an integer")
    return value


def _json_header(raw: bytes) -> dict[str, Any]:
    try:
        header = fastjson.loads(raw)
    except fastjson.FastjsonError as exc:
        raise ProtocolError(f"the JSON header is not JSON: {exc}") from None
    if not isinstance(header, dict):
        raise ProtocolError("the JSON header is not an object")
    ext = header.get("extFields") or {}
    if not isinstance(ext, dict):
        raise ProtocolError("the header's extFields is not an object")
    header["extFields"] = {str(k): str(v) for k, v in ext.items()}
    return header


def _binary_header(raw: bytes) -> dict[str, Any]:
    """RocketMQ's own header layout: code(2) language(1) version(2) opaque(4) flag(4),
    remark (length 4 + UTF-8), extFields (length 4, then key length 2 + key, value length 4 +
    value, repeated)."""
    try:
        code, language, version, opaque, flag, remark_len = struct.unpack_from(">hbhiii", raw)
        pos = 17
        remark = raw[pos : pos + remark_len].decode() if remark_len > 0 else None
        pos += max(remark_len, 0)
        (ext_len,) = struct.unpack_from(">i", raw, pos)
        pos += 4
        end = pos + ext_len
        ext: dict[str, str] = {}
        while pos < end:
            (key_len,) = struct.unpack_from(">h", raw, pos)
            key = raw[pos + 2 : pos + 2 + key_len].decode()
            pos += 2 + key_len
            (value_len,) = struct.unpack_from(">i", raw, pos)
            ext[key] = raw[pos + 4 : pos + 4 + value_len].decode()
            pos += 4 + value_len
    except (struct.error, UnicodeDecodeError) as exc:
        raise ProtocolError(f"the binary header is cut short or garbled ({exc})") from None
    if pos != len(raw):
        raise ProtocolError("the binary header's lengths do not add up to the header")
    return {
        "code": code,
        "language": str(language),
        "version": version,
        "opaque": opaque,
        "flag": flag,
        "remark": remark,
        "extFields": ext,
    }


def decode(frame: bytes) -> Command:
    """One whole frame (its length first) as a :class:`Command`."""
    if len(frame) < 8:
        raise ProtocolError(f"a frame has at least 8 bytes, this one {len(frame)}")
    (length,) = struct.unpack_from(">i", frame)
    if length != len(frame) - 4:
        raise ProtocolError(f"the frame says {length} bytes follow, {len(frame) - 4} do")
    return decode_payload(frame[4:])


def decode_payload(payload: bytes) -> Command:
    """A frame without its length: the header mark, the header, the body."""
    (mark,) = struct.unpack_from(">i", payload)
    serialization, header_length = (mark >> 24) & 0xFF, mark & 0xFFFFFF
    if header_length > len(payload) - 4:
        raise ProtocolError(f"the header length {header_length} exceeds the frame")
    raw = payload[4 : 4 + header_length]
    if serialization == JSON_SERIALIZATION:
        header = _json_header(raw)
    elif serialization == ROCKETMQ_SERIALIZATION:
        header = _binary_header(raw)
    else:
        raise ProtocolError(f"serialization type {serialization} is neither JSON nor ROCKETMQ")
    remark, version = header.get("remark"), header.get("version")
    return Command(
        code=_int(header, "code"),
        opaque=_int(header, "opaque"),
        flag=_int(header, "flag"),
        version=version if isinstance(version, int) else 0,
        language=str(header.get("language") or ""),
        remark=None if remark is None else str(remark),
        ext_fields=header["extFields"],
        body=payload[4 + header_length :],
        serialization=serialization,
    )


# -- the client ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Credentials:
    """An account of a cluster with ACL enabled (``plain_acl.yml``): every request is signed as
    RocketMQ's ``AclClientRPCHook`` signs it. The secret is never shown (``repr`` hides it)."""

    access_key: str
    secret_key: str = field(repr=False)

    def sign(self, ext_fields: dict[str, str], body: bytes) -> dict[str, str]:
        """``ext_fields`` with ``AccessKey`` and ``Signature``: HMAC-SHA1 with the secret, in
        Base64, of the fields' values in the order of their names, then the body (4.9's
        ``PlainAccessValidator`` checks it so)."""
        fields = {**ext_fields, "AccessKey": self.access_key}
        content = "".join(fields[k] for k in sorted(fields)).encode() + body
        digest = hmac.new(self.secret_key.encode(), content, hashlib.sha1).digest()
        return {**fields, "Signature": base64.b64encode(digest).decode()}


class Connection:
    """One TCP connection to a NameServer or broker, opened on first use and after a failure.

    :meth:`call` sends a request and returns its answer; it fails with an ``OSError``
    (``TimeoutError`` when nothing, or not all, came within ``timeout``) or a
    :class:`ProtocolError`, and the connection is closed then."""

    def __init__(
        self, addr: str, timeout: float = 3.0, credentials: Credentials | None = None
    ) -> None:
        self.addr = addr
        self.timeout = timeout
        self.credentials = credentials
        self._sock: socket.socket | None = None

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        sock, self._sock = self._sock, None
        if sock is not None:
            sock.close()

    def call(
        self,
        code: int,
        ext_fields: dict[str, str] | None = None,
        body: bytes = b"",
        *,
        version: int = LEGACY_CLIENT_VERSION,
    ) -> Command:
        fields = ext_fields or {}
        if self.credentials is not None:
            fields = self.credentials.sign(fields, body)
        request = Command(
            code=code, opaque=next(_opaque), ext_fields=fields, body=body, version=version
        )
        deadline = time.monotonic() + self.timeout
        try:
            sock = self._connect(deadline)
            sock.sendall(encode(request))
            while True:
                answer = decode_payload(self._read_payload(sock, deadline))
                if answer.is_response and answer.opaque == request.opaque:
                    return answer
                # anything else (an answer to an abandoned request, a server's own request) is
                # not ours: read on
        except BaseException:
            self.close()
            raise

    def _connect(self, deadline: float) -> socket.socket:
        if self._sock is None:
            host, _, port = self.addr.rpartition(":")
            if not host or not port.isdigit():
                raise ProtocolError(f"'{self.addr}' is not host:port")
            self._sock = socket.create_connection((host, int(port)), timeout=self._left(deadline))
        return self._sock

    def _left(self, deadline: float) -> float:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"{self.addr} did not answer within {self.timeout:g} s")
        return left

    def _recv_exact(self, sock: socket.socket, size: int, deadline: float) -> bytes:
        chunks = bytearray()
        while len(chunks) < size:
            sock.settimeout(self._left(deadline))
            try:
                chunk = sock.recv(min(size - len(chunks), 1 << 20))
            except TimeoutError:
                late = f"{self.addr} did not answer within {self.timeout:g} s"
                raise TimeoutError(late) from None
            if not chunk:
                raise ConnectionError(f"{self.addr} closed the connection mid-answer")
            chunks += chunk
        return bytes(chunks)

    def _read_payload(self, sock: socket.socket, deadline: float) -> bytes:
        (length,) = struct.unpack(">i", self._recv_exact(sock, 4, deadline))
        if not 4 <= length <= MAX_FRAME:
            raise ProtocolError(f"{self.addr} sent a frame length of {length}: not RocketMQ")
        return self._recv_exact(sock, length, deadline)

    # -- answers, checked --------------------------------------------------------------------

    def ask(
        self, code: int, what: str, ext_fields: dict[str, str] | None = None, **kw: Any
    ) -> bytes:
        """The body of a successful answer; a :class:`RemotingError` naming ``what`` if not."""
        answer = self.call(code, ext_fields, **kw)
        if answer.code != SUCCESS:
            raise RemotingError(
                f"{what} from {self.addr}: code {answer.code}, {answer.remark}",
                answer.code,
                answer.remark,
            )
        return answer.body


def request(
    addr: str,
    code: int,
    ext_fields: dict[str, str] | None = None,
    *,
    version: int = LEGACY_CLIENT_VERSION,
    timeout: float = 3.0,
) -> tuple[dict[str | int, Any], bytes]:
    """Send one request to the NameServer or broker at ``addr``; its answer's header fields and
    body. Fails with an ``OSError`` (``TimeoutError`` included) if it does not answer in
    ``timeout``."""
    with Connection(addr, timeout) as conn:
        answer = conn.call(code, ext_fields, version=version)
    header: dict[str | int, Any] = {
        "code": answer.code,
        "opaque": answer.opaque,
        "flag": answer.flag,
        "remark": answer.remark,
        "extFields": answer.ext_fields,
    }
    return header, answer.body


# -- what the answers say --------------------------------------------------------------------


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


@dataclass(frozen=True)
class TopicConfig:
    """A topic as a broker holds it in its topic table (and registers it); ``order``,
    ``sys_flag`` and ``filter_type`` are kept when a remedy updates its counts (they take no
    part in comparing two)."""

    read_queue_nums: int
    write_queue_nums: int
    perm: int
    order: bool = field(default=False, compare=False)
    sys_flag: int = field(default=0, compare=False)
    filter_type: str = field(default="SINGLE_TAG", compare=False)


@dataclass(frozen=True, order=True)
class DataVersion:
    """A broker's topic-table version (``DataVersion``): a timestamp and a counter."""

    timestamp: int
    counter: int

    def __str__(self) -> str:
        return f"{self.timestamp}-{self.counter}"


@dataclass(frozen=True)
class TopicTable:
    """A broker's topic table and its version (``TopicConfigSerializeWrapper``)."""

    version: DataVersion
    topics: dict[str, TopicConfig]


def _object(value: Any, what: str) -> dict[Any, Any]:
    if not isinstance(value, dict):
        raise ProtocolError(f"{what} is not a JSON object")
    return value


def _json(body: bytes | str, what: str) -> dict[Any, Any]:
    try:
        return _object(fastjson.loads(body), what)
    except fastjson.FastjsonError as exc:
        raise ProtocolError(f"{what} is not JSON: {exc}") from None


def _broker_data(raw: dict[Any, Any]) -> BrokerData:
    addrs = raw.get("brokerAddrs") or {}
    return BrokerData(
        cluster=str(raw["cluster"]),
        broker=str(raw["brokerName"]),
        addrs={int(k): str(v) for k, v in addrs.items()},
    )


def parse_topic_route(text: str | bytes) -> TopicRoute:
    """A route from the NameServer's JSON (fastjson's notation or standard JSON)."""
    raw = _json(text, "the route")
    try:
        queues = tuple(
            QueueData(
                broker=str(q["brokerName"]),
                read_queue_nums=int(q["readQueueNums"]),
                write_queue_nums=int(q["writeQueueNums"]),
                perm=int(q["perm"]),
                topic_sys_flag=int(q.get("topicSysFlag", 0)),
            )
            for q in raw.get("queueDatas") or ()
        )
        brokers = tuple(_broker_data(b) for b in raw.get("brokerDatas") or ())
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ProtocolError(f"the route lacks or garbles a field ({exc!r})") from None
    return TopicRoute(
        queues=tuple(sorted(queues, key=lambda q: q.broker)),
        brokers=tuple(sorted(brokers, key=lambda b: b.broker)),
        order_topic_conf=raw.get("orderTopicConf"),
    )


def parse_cluster_info(text: str | bytes) -> ClusterInfo:
    """The cluster list from the NameServer's JSON (fastjson's notation or standard JSON)."""
    raw = _json(text, "the cluster list")
    try:
        table = raw.get("brokerAddrTable") or {}
        clusters = raw.get("clusterAddrTable") or {}
        return ClusterInfo(
            brokers={str(name): _broker_data(data) for name, data in table.items()},
            clusters={str(name): frozenset(map(str, names)) for name, names in clusters.items()},
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ProtocolError(f"the cluster list lacks or garbles a field ({exc!r})") from None


def parse_data_version(text: str | bytes) -> DataVersion:
    """A ``DataVersion`` as fastjson writes it: ``{"counter":2,"timestamp":1795573072034}``."""
    raw = _json(text, "the data version")
    timestamp, counter = raw.get("timestamp"), raw.get("counter")
    if type(timestamp) is not int or type(counter) is not int:
        raise ProtocolError(f"the data version {raw!r} lacks an integer timestamp or counter")
    return DataVersion(timestamp, counter)


def parse_topic_table(text: str | bytes) -> TopicTable:
    """A broker's answer to ``GET_ALL_TOPIC_CONFIG``: its topic table and data version."""
    raw = _json(text, "the topic table")
    try:
        topics = {
            str(name): TopicConfig(
                int(t["readQueueNums"]),
                int(t["writeQueueNums"]),
                int(t["perm"]),
                order=bool(t.get("order", False)),
                sys_flag=int(t.get("topicSysFlag", 0) or 0),
                filter_type=str(t.get("topicFilterType") or "SINGLE_TAG"),
            )
            for name, t in (raw.get("topicConfigTable") or {}).items()
        }
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ProtocolError(f"the topic table lacks or garbles a field ({exc!r})") from None
    return TopicTable(parse_data_version(orjson.dumps(raw.get("dataVersion"))), topics)


def parse_topic_list(text: str | bytes) -> frozenset[str]:
    """The NameServer's answer to ``GET_ALL_TOPIC_LIST_FROM_NAMESERVER``: every topic it
    routes (``{"topicList":[...]}``)."""
    names = _json(text, "the topic list").get("topicList") or []
    if not isinstance(names, list):
        raise ProtocolError("the topic list's topicList is not a list")
    return frozenset(map(str, names))


def parse_properties(text: str | bytes) -> dict[str, str]:
    """A broker's configuration as it sends it: ``key=value`` lines."""
    if isinstance(text, bytes):
        try:
            text = text.decode()
        except UnicodeDecodeError:
            raise ProtocolError("the broker configuration is not UTF-8") from None
    pairs = (line.split("=", 1) for line in text.splitlines() if "=" in line)
    return {key.strip(): value.strip() for key, value in pairs}


# -- one request at a time ---------------------------------------------------------------------


def route_on(conn: Connection, topic: str) -> TopicRoute | None:
    """The route of ``topic`` from the NameServer on ``conn``, or None if it routes none."""
    answer = conn.call(GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
    if answer.code == TOPIC_NOT_EXIST:
        return None
    if answer.code != SUCCESS:
        raise RemotingError(
            f"route of {topic} from {conn.addr}: code {answer.code}, {answer.remark}"
        )
    return parse_topic_route(answer.body)


def topic_list_on(conn: Connection) -> frozenset[str]:
    """Every topic the NameServer on ``conn`` routes."""
    return parse_topic_list(conn.ask(GET_ALL_TOPIC_LIST_FROM_NAMESERVER, "the topic list"))


def raw_topic_route(addr: str, topic: str, *, version: int = LEGACY_CLIENT_VERSION) -> str | None:
    """The NameServer's route of ``topic`` as the text it sends, or None if it has none."""
    with Connection(addr) as conn:
        answer = conn.call(GET_ROUTEINFO_BY_TOPIC, {"topic": topic}, version=version)
    if answer.code == TOPIC_NOT_EXIST:
        return None
    if answer.code != SUCCESS:
        raise RemotingError(f"route of {topic} from {addr}: {answer.remark}")
    return answer.body.decode()


def topic_route(addr: str, topic: str) -> TopicRoute | None:
    """The route of ``topic`` from the NameServer at ``addr``, or None if it has none."""
    text = raw_topic_route(addr, topic)
    return None if text is None else parse_topic_route(text)


def raw_cluster_info(addr: str, *, version: int = LEGACY_CLIENT_VERSION) -> str:
    """The NameServer's cluster list as the text it sends."""
    with Connection(addr) as conn:
        return conn.ask(GET_BROKER_CLUSTER_INFO, "the cluster list", version=version).decode()


def cluster_info(addr: str) -> ClusterInfo:
    """The cluster list of the NameServer at ``addr``."""
    return parse_cluster_info(raw_cluster_info(addr))


# The version asked about in QUERY_DATA_VERSION: no broker has it, so the NameServer always
# answers "changed" and, unlike for a matching version, does not renew the broker's liveness.
NO_DATA_VERSION = b'{"counter":-1,"timestamp":-1}'


def namesrv_data_version(
    conn: Connection, cluster: str, broker: str, broker_id: int, addr: str
) -> DataVersion | None:
    """The data version of the topic table the NameServer on ``conn`` holds for the broker at
    ``addr`` (``QUERY_DATA_VERSION``, as a broker asks before registering), or None if it holds
    none. Read-only on RocketMQ 4.9 only: it asks about a version no broker has, and a 4.9
    NameServer renews a broker's liveness only when the version asked is the one it holds. A 5.x
    NameServer renews it whatever the version (``DefaultRequestProcessor.queryBrokerTopicConfig``
    calls ``updateBrokerInfoUpdateTimestamp`` unconditionally): never ask one."""
    fields = {
        "brokerName": broker,
        "brokerAddr": addr,
        "clusterName": cluster,
        "brokerId": str(broker_id),
    }
    answer = conn.call(QUERY_DATA_VERSION, fields, NO_DATA_VERSION)
    if answer.code != SUCCESS:
        raise RemotingError(f"data version from {conn.addr}: code {answer.code}, {answer.remark}")
    return parse_data_version(answer.body) if answer.body else None


def broker_topics(
    addr: str, *, timeout: float = 3.0, credentials: Credentials | None = None
) -> dict[str, TopicConfig]:
    """The topic table of the broker at ``addr``: what it registers with its NameServers."""
    with Connection(addr, timeout, credentials) as conn:
        body = conn.ask(GET_ALL_TOPIC_CONFIG, "the topic table")
    return parse_topic_table(body).topics


def broker_config(
    addr: str, *, timeout: float = 3.0, credentials: Credentials | None = None
) -> dict[str, str]:
    """The configuration the broker at ``addr`` runs with now (every property, as text)."""
    with Connection(addr, timeout, credentials) as conn:
        return parse_properties(conn.ask(GET_BROKER_CONFIG, "the broker configuration"))


def broker_runtime_info(
    addr: str, *, timeout: float = 3.0, credentials: Credentials | None = None
) -> dict[str, str]:
    """The broker's run-time figures (``mqadmin brokerStatus``); a frozen broker times out."""
    with Connection(addr, timeout, credentials) as conn:
        body = conn.ask(GET_BROKER_RUNTIME_INFO, "the run-time figures")
    table = _json(body, "the run-time figures").get("table") or {}
    return {str(k): str(v) for k, v in table.items()}


def delete_topic_in_broker(
    addr: str, topic: str, *, timeout: float = 3.0, credentials: Credentials | None = None
) -> None:
    """Delete ``topic`` from the topic table of the broker at ``addr`` only (what ``mqadmin
    deleteTopic`` asks of each master before it asks the NameServers)."""
    with Connection(addr, timeout, credentials) as conn:
        answer = conn.call(DELETE_TOPIC_IN_BROKER, {"topic": topic})
    if answer.code != SUCCESS:
        raise RemotingError(f"deleting {topic} on the broker at {addr}: {answer.remark}")


def update_topic_in_broker(
    addr: str,
    topic: str,
    *,
    read_queues: int = 8,
    write_queues: int = 8,
    perm: int = 6,
    timeout: float = 3.0,
    credentials: Credentials | None = None,
    keep: TopicConfig | None = None,
) -> None:
    """Create or update ``topic`` on the broker at ``addr`` only (``mqadmin updateTopic -b``,
    without a JVM's start). A 4.9 broker registers the topic with its NameServers before it
    answers (``registerIncrementBrokerData``). ``keep``: the topic as the broker holds it now,
    whose order flag, system flag and filter type stay as they are."""
    header = {
        "topic": topic,
        "defaultTopic": "TBW102",
        "readQueueNums": str(read_queues),
        "writeQueueNums": str(write_queues),
        "perm": str(perm),
        "topicFilterType": "SINGLE_TAG" if keep is None else keep.filter_type,
        "topicSysFlag": "0" if keep is None else str(keep.sys_flag),
        "order": "false" if keep is None or not keep.order else "true",
    }
    with Connection(addr, timeout, credentials) as conn:
        answer = conn.call(UPDATE_AND_CREATE_TOPIC, header)
    if answer.code != SUCCESS:
        raise RemotingError(
            f"creating {topic} on the broker at {addr}: {answer.remark}", answer.code, answer.remark
        )


def update_broker_config(
    addr: str,
    changes: dict[str, str],
    *,
    timeout: float = 3.0,
    credentials: Credentials | None = None,
) -> None:
    """Change settings of the broker at ``addr`` while it runs (``mqadmin updateBrokerConfig``):
    the body is the properties, ``key=value`` a line."""
    body = "".join(f"{k}={v}\n" for k, v in changes.items()).encode()
    with Connection(addr, timeout, credentials) as conn:
        conn.ask(UPDATE_BROKER_CONFIG, "changing the broker configuration", body=body)


def delete_topic_in_namesrv(addr: str, topic: str, *, timeout: float = 3.0) -> None:
    """Delete ``topic``'s route on the NameServer at ``addr`` only (what ``mqadmin deleteTopic``
    asks of each NameServer after it deleted the topic on the brokers)."""
    with Connection(addr, timeout) as conn:
        conn.ask(DELETE_TOPIC_IN_NAMESRV, f"deleting the route of {topic}", {"topic": topic})
