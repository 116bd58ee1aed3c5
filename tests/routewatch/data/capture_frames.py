"""Capture the answer frames of a real RocketMQ 4.9.8 NameServer and broker, byte for byte, into
this folder (``*.frame``: each is one whole frame as it came off the socket, its 4-byte length
included). Run once, by hand, with a distribution configured:

    ROUTEWATCH_TEST_ROCKETMQ_HOME=/path/to/rocketmq-4.9.8 .venv/bin/python \
        tests/routewatch/data/capture_frames.py

It starts one NameServer, broker-a with a slave and broker-b (DefaultCluster), makes the topics
``2024`` and ``0`` (named like numbers) on broker-b with 8 read and 2 write queues, asks each
request once over a plain socket, and stops everything. Not a test: the tests read the files.
"""

from __future__ import annotations

import json
import socket
import struct
import sys
import tempfile
from pathlib import Path

from routewatch.testing.processes import wait_for
from routewatch.testing.rocketmq import BrokerSpec, ClusterSpec, running_cluster

HERE = Path(__file__).parent
LEGACY = 399  # V4_9_3: the NameServer answers routes in fastjson's notation
CURRENT = 413  # V4_9_8: standard JSON for routes


# where the distribution was found is of this machine only: the broker's configuration names it
HOME_SHOWN = b"/opt/rocketmq-4.9.8"


def redacted(frame: bytes, home: Path) -> bytes:
    """``frame`` with the distribution's folder written as :data:`HOME_SHOWN`, its length
    adjusted (the header length and the header are unchanged)."""
    rest = frame[4:].replace(str(home).encode(), HOME_SHOWN)
    return struct.pack(">I", len(rest)) + rest


def capture(addr: str, code: int, ext: dict[str, str], version: int, body: bytes = b"") -> bytes:
    header = json.dumps(
        {
            "code": code,
            "extFields": ext,
            "flag": 0,
            "language": "JAVA",
            "opaque": 7,
            "serializeTypeCurrentRPC": "JSON",
            "version": version,
        }
    ).encode()
    host, port = addr.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(struct.pack(">ii", 4 + len(header) + len(body), len(header)) + header + body)
        head = b""
        while len(head) < 4:
            head += sock.recv(4 - len(head))
        (length,) = struct.unpack(">i", head)
        rest = b""
        while len(rest) < length:
            rest += sock.recv(length - len(rest))
    return head + rest


def main() -> int:
    spec = ClusterSpec(
        namesrvs=("ns1",),
        brokers=(
            BrokerSpec("broker-a"),
            BrokerSpec("broker-a", broker_id=1),
            BrokerSpec("broker-b", auto_create_topic=False),
        ),
    )
    with tempfile.TemporaryDirectory() as tmp, running_cluster(spec, Path(tmp)) as cluster:
        for topic in ("2024", "0"):
            cluster.update_topic(topic, broker="broker-b", read_queues=8, write_queues=2)
        ns = cluster.namesrv_addr("ns1")
        b = cluster.broker("broker-b")
        wait_for(lambda: cluster.route("0") is not None, 30, "topic 0 routed")
        frames = {
            "ns_cluster_info": capture(ns, 106, {}, LEGACY),
            "ns_route_2024_legacy": capture(ns, 105, {"topic": "2024"}, LEGACY),
            "ns_route_2024_standard": capture(ns, 105, {"topic": "2024"}, CURRENT),
            "ns_route_missing": capture(ns, 105, {"topic": "Absent"}, LEGACY),
            "ns_query_data_version": capture(
                ns,
                322,
                {
                    "brokerName": "broker-b",
                    "brokerAddr": b.addr,
                    "clusterName": "DefaultCluster",
                    "brokerId": "0",
                },
                LEGACY,
                b'{"counter":-1,"timestamp":-1}',
            ),
            "broker_topic_config": capture(b.addr, 21, {}, LEGACY),
            "broker_config": capture(b.addr, 26, {}, LEGACY),
            "broker_unknown_code": capture(b.addr, 99999, {}, LEGACY),
        }
        addrs = {"ns1": ns, **{k: v.addr for k, v in cluster.brokers.items()}}
    for name, frame in frames.items():
        (HERE / f"{name}.frame").write_bytes(redacted(frame, cluster.home))
        print(f"{name}: {len(frame)} bytes")
    (HERE / "addresses.json").write_text(json.dumps(addrs, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
