"""RocketMQ's remoting codec and client (``routewatch/remoting.py``), on frames captured from the
real 4.9.8 NameServer and broker (``tests/routewatch/data/``, see its README), and against small
fake servers on 127.0.0.1 for what a real one never sends."""

from __future__ import annotations

import json
import socket
import struct
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from routewatch import remoting
from routewatch.remoting import (
    BrokerData,
    Command,
    Connection,
    DataVersion,
    ProtocolError,
    QueueData,
    TopicConfig,
)

DATA = Path(__file__).parent / "data"
ADDRS = json.loads((DATA / "addresses.json").read_text())


def frame(name: str) -> bytes:
    return (DATA / f"{name}.frame").read_bytes()


def test_a_captured_answer_decodes_header_and_body() -> None:
    answer = remoting.decode(frame("ns_cluster_info"))
    assert answer.code == remoting.SUCCESS and answer.is_response
    assert (answer.opaque, answer.language, answer.version) == (7, "JAVA", 409)
    assert answer.serialization == remoting.JSON_SERIALIZATION
    assert answer.body.startswith(b'{"brokerAddrTable":{"broker-b":{"brokerAddrs":{0:"')


def test_the_cluster_list_with_bare_integer_keys() -> None:
    info = remoting.parse_cluster_info(remoting.decode(frame("ns_cluster_info")).body)
    assert info.clusters == {"DefaultCluster": frozenset({"broker-a", "broker-b"})}
    assert info.brokers["broker-a"] == BrokerData(
        "DefaultCluster", "broker-a", {0: ADDRS["broker-a"], 1: ADDRS["broker-a@1"]}
    )
    assert info.addr("broker-b") == ADDRS["broker-b"]


def test_a_topic_named_like_a_number_in_both_notations() -> None:
    legacy = remoting.decode(frame("ns_route_2024_legacy")).body
    standard = remoting.decode(frame("ns_route_2024_standard")).body
    assert b"{0:" in legacy and b'{"0":' in standard
    route = remoting.parse_topic_route(legacy)
    assert route == remoting.parse_topic_route(standard)
    assert route.queues == (QueueData("broker-b", 8, 2, 6),)
    assert route.brokers == (BrokerData("DefaultCluster", "broker-b", {0: ADDRS["broker-b"]}),)


def test_an_error_answer_keeps_its_code_and_remark() -> None:
    missing = remoting.decode(frame("ns_route_missing"))
    assert missing.code == remoting.TOPIC_NOT_EXIST and missing.body == b""
    assert missing.remark is not None
    assert missing.remark.startswith("No topic route info in name server for the topic: Absent\n")
    unknown = remoting.decode(frame("broker_unknown_code"))
    assert (unknown.code, unknown.remark) == (3, " request type 99999 not supported")


def test_the_broker_topic_table_and_its_data_version() -> None:
    table = remoting.parse_topic_table(remoting.decode(frame("broker_topic_config")).body)
    assert table.version == DataVersion(1795573072034, 2)
    assert str(table.version) == "1795573072034-2"
    assert table.topics["2024"] == TopicConfig(8, 2, 6)
    assert table.topics["0"] == TopicConfig(8, 2, 6)
    assert "TBW102" not in table.topics  # auto-creation off, a new store
    assert table.topics["DefaultCluster"] == TopicConfig(16, 16, 7)


def test_the_namesrv_holds_the_same_version_as_the_broker() -> None:
    answer = remoting.decode(frame("ns_query_data_version"))
    # asked about a version no broker has: "changed", so the NameServer renewed nothing
    assert answer.ext_fields == {"changed": "true"}
    version = remoting.parse_data_version(answer.body)
    broker = remoting.parse_topic_table(remoting.decode(frame("broker_topic_config")).body)
    assert version == broker.version


def test_the_broker_configuration() -> None:
    answer = remoting.decode(frame("broker_config"))
    config = remoting.parse_properties(answer.body)
    assert config["autoCreateTopicEnable"] == "false"
    assert config["defaultTopicQueueNums"] == "8"
    assert config["brokerName"] == "broker-b"
    # its header carries the configuration's own version as text holding JSON
    assert json.loads(answer.ext_fields["version"])["counter"] == 0


def test_encode_writes_what_decode_reads() -> None:
    command = Command(
        code=remoting.QUERY_DATA_VERSION,
        opaque=42,
        ext_fields={"brokerName": "2024", "brokerAddr": "127.0.0.1:1"},
        body=remoting.NO_DATA_VERSION,
    )
    raw = remoting.encode(command)
    (length, mark) = struct.unpack(">ii", raw[:8])
    assert length == len(raw) - 4 and mark >> 24 == 0
    header = json.loads(raw[8 : 8 + (mark & 0xFFFFFF)])
    assert header["code"] == 322 and header["extFields"]["brokerName"] == "2024"
    decoded = remoting.decode(raw)
    assert decoded.ext_fields == command.ext_fields and decoded.body == command.body
    assert not decoded.is_response


def _binary_header(code: int, opaque: int, remark: str, ext: dict[str, str]) -> bytes:
    out = struct.pack(">hbhii", code, 0, 409, opaque, 1)
    out += struct.pack(">i", len(remark.encode())) + remark.encode()
    fields = b"".join(
        struct.pack(">h", len(k)) + k.encode() + struct.pack(">i", len(v)) + v.encode()
        for k, v in ext.items()
    )
    return out + struct.pack(">i", len(fields)) + fields


def test_rocketmqs_binary_header_is_read_too() -> None:
    header = _binary_header(0, 9, "ok", {"changed": "false"})
    raw = struct.pack(">ii", 4 + len(header) + 2, (1 << 24) | len(header)) + header + b"{}"
    answer = remoting.decode(raw)
    assert (answer.code, answer.opaque, answer.remark) == (0, 9, "ok")
    assert answer.ext_fields == {"changed": "false"} and answer.body == b"{}"
    assert answer.serialization == remoting.ROCKETMQ_SERIALIZATION


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"\x00\x00", "at least 8 bytes"),
        (struct.pack(">ii", 99, 4) + b"{}{}", "says 99 bytes follow"),
        (struct.pack(">ii", 8, 50) + b"{}{}", "header length 50 exceeds"),
        (struct.pack(">ii", 6, (7 << 24) | 2) + b"{}", "serialization type 7"),
        (struct.pack(">ii", 8, 4) + b"HTTP", "JSON header is not JSON"),
        (struct.pack(">ii", 6, 2) + b"[]", "not an object"),
        (struct.pack(">ii", 16, 12) + b'{"code":"0"}', "code is '0'"),
        (struct.pack(">ii", 7, (1 << 24) | 3) + b"\x00\x00\x00", "binary header is cut short"),
    ],
)
def test_garbage_is_a_protocol_error_saying_what_was_wrong(raw: bytes, message: str) -> None:
    with pytest.raises(ProtocolError, match=message):
        remoting.decode(raw)


def test_garbled_answers_are_protocol_errors() -> None:
    with pytest.raises(ProtocolError, match="the route is not JSON"):
        remoting.parse_topic_route(b'{"queueDatas":[')
    with pytest.raises(ProtocolError, match="lacks or garbles"):
        remoting.parse_cluster_info(b'{"brokerAddrTable":{"b":{"brokerAddrs":{}}}}')
    with pytest.raises(ProtocolError, match="lacks an integer"):
        remoting.parse_data_version(b'{"counter":"x","timestamp":1}')


# -- the client against fake servers ----------------------------------------------------------


@pytest.fixture
def fake_server() -> Iterator[Callable[[Callable[[socket.socket], None]], str]]:
    """Start a one-connection TCP server on 127.0.0.1 that runs ``handle(conn)``."""
    servers: list[socket.socket] = []
    threads: list[threading.Thread] = []

    def start(handle: Callable[[socket.socket], None]) -> str:
        server = socket.create_server(("127.0.0.1", 0))
        servers.append(server)

        def serve() -> None:
            conn, _ = server.accept()
            with conn:
                handle(conn)

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        threads.append(thread)
        return f"127.0.0.1:{server.getsockname()[1]}"

    yield start
    for server in servers:
        server.close()
    for thread in threads:
        thread.join(5)


def _read_request(conn: socket.socket) -> Command:
    (length,) = struct.unpack(">i", conn.recv(4, socket.MSG_WAITALL))
    return remoting.decode_payload(conn.recv(length, socket.MSG_WAITALL))


def test_answers_are_matched_to_requests_by_opaque(
    fake_server: Callable[[Callable[[socket.socket], None]], str],
) -> None:
    def handle(conn: socket.socket) -> None:
        for _ in range(2):
            request = _read_request(conn)
            stray = Command(code=0, opaque=request.opaque + 1000, flag=1, body=b"stray")
            mine = Command(code=0, opaque=request.opaque, flag=1, body=b"%d" % request.code)
            conn.sendall(remoting.encode(stray) + remoting.encode(mine))

    with Connection(fake_server(handle)) as conn:  # one connection, two requests
        assert conn.call(106).body == b"106"
        assert conn.call(21).body == b"21"


def test_a_server_that_answers_garbage(
    fake_server: Callable[[Callable[[socket.socket], None]], str],
) -> None:
    def handle(conn: socket.socket) -> None:
        _read_request(conn)
        conn.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n")

    with pytest.raises(ProtocolError, match="frame length of 1213486160: not RocketMQ"):
        Connection(fake_server(handle)).call(106)


def test_a_slow_server_times_out_and_the_connection_closes(
    fake_server: Callable[[Callable[[socket.socket], None]], str],
) -> None:
    done = threading.Event()

    def handle(conn: socket.socket) -> None:
        request = _read_request(conn)
        conn.sendall(remoting.encode(Command(code=0, opaque=request.opaque, flag=1))[:6])
        done.wait(5)

    conn = Connection(fake_server(handle), timeout=0.3)
    with pytest.raises(TimeoutError, match=r"did not answer within 0\.3 s"):
        conn.call(106)
    done.set()
    assert conn._sock is None


def test_an_error_answer_is_a_remoting_error(
    fake_server: Callable[[Callable[[socket.socket], None]], str],
) -> None:
    def handle(conn: socket.socket) -> None:
        request = _read_request(conn)
        conn.sendall(
            remoting.encode(Command(code=1, opaque=request.opaque, flag=1, remark="system busy"))
        )

    with (
        Connection(fake_server(handle)) as conn,
        pytest.raises(remoting.RemotingError, match="code 1, system busy"),
    ):
        conn.ask(106, "the cluster list")
