"""``routewatch collect`` following a real 5.x proxy's log: a gRPC client's send to a topic no
NameServer routes becomes a ``proxy_route_miss`` event, and the job raises ``NO_ROUTE_INFO``
with the cause ``GRPC_NOT_CREATED`` (docs/collect.md, "gRPC clients' misses").

The proxy runs with its own logging (its jar's ``rmq.proxy.logback.xml``, as the distribution
starts it), so the reader meets the file and the line format an operator's proxy writes: the
misses in ``~/logs/rocketmqlogs/broker_default.log``, times to the second in UTC+8.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import time
import uuid
from pathlib import Path

import pytest

from emitter.collect.derive import Deriver
from emitter.collect.metrics import CollectorMetrics
from emitter.collect.poller import Poller
from emitter.collect.proxylog import ProxyLog, parse_miss
from routewatch.events import ProxyRouteMiss
from routewatch.testing.processes import wait_for
from routewatch.testing.rocketmq import BrokerSpec, ClusterSpec, Proxy, RocketMQCluster
from tests.support.grpc_client import client_jars, probe
from tests.support.rocketmq import module_cluster
from tests.support.traces import evaluate_events

pytestmark = pytest.mark.rocketmq

CLUSTER = "GrpcCollectCluster"
SPEC = ClusterSpec(
    namesrvs=("ns1",),
    brokers=(BrokerSpec("broker-a", CLUSTER, auto_create_topic=True),),
)
OWN_TOPIC = "DefaultHeartBeatSyncerTopic"  # the proxy's own, looked up on `main` at its start

cluster = module_cluster(SPEC, 5)


@pytest.fixture(scope="module")
def proxy(cluster: RocketMQCluster) -> Proxy:
    client_jars()  # skip before starting anything when the client is not installed
    return cluster.start_proxy(cluster_name=CLUSTER)  # killed with the cluster


def test_a_grpc_clients_miss_read_from_the_proxys_own_log_raises_no_route_info(
    cluster: RocketMQCluster, proxy: Proxy, tmp_path: Path
) -> None:
    log = proxy.default_log
    reader = ProxyLog(log, CLUSTER, "proxy-1")  # from the end: the proxy's start is history
    topic = f"grpc-{uuid.uuid4().hex[:10]}"

    asked_at = time.time()
    (outcome,) = probe(proxy, [f"send:{topic}"], tmp_path)
    assert not outcome.ok and outcome.response_code == 40402  # TOPIC_NOT_FOUND

    misses: list[ProxyRouteMiss] = []

    def read() -> bool:
        misses.extend(reader.read())
        return bool(misses)

    wait_for(read, 20, "the proxy's miss in its log")
    reader.close()
    (miss,) = misses
    assert (miss.topic, miss.cluster, miss.proxy) == (topic, CLUSTER, "proxy-1")
    assert miss.thread.startswith("GrpcRouteThreadPool")
    # the line's time, written to the second in UTC+8, is the send's
    assert asked_at - 1 <= miss.ts / 1000 <= time.time()

    # its own format, from its own logging; its own lookup at its start is not a client's
    text = log.read_text(errors="replace")
    own = [ln for ln in text.splitlines() if f"[{OWN_TOPIC}] RouteInfoFromNameServer" in ln]
    assert own, "the proxy's own lookup of its heartbeat topic at its start"
    assert [parse_miss(ln, dt.timedelta(hours=8)) for ln in own] == [None] * len(own)
    (line,) = [ln for ln in text.splitlines() if f"[{topic}]" in ln]
    assert line.split(" ")[2:4] == ["WARN", miss.thread], line

    # with the collector's heartbeats of the live broker: NO_ROUTE_INFO, the gRPC cause
    poller = Poller([cluster.namesrv_addr("ns1")], CollectorMetrics())
    deriver = Deriver(10)
    try:
        written = deriver.derive(poller.poll(deriver.known, deriver))
    finally:
        poller.close()
    beats = [dataclasses.asdict(e) | {"v": 1, "type": "heartbeat"} for e in written]
    events = [
        *(b | {"ts": miss.ts - 1} for b in beats),
        dataclasses.asdict(miss) | {"v": 1, "type": "proxy_route_miss"},
    ]
    final, _ = evaluate_events(events, CLUSTER)
    (alert,) = [a for a in final if a.kind == "NO_ROUTE_INFO"]
    assert (alert.topic, alert.state, alert.cause) == (topic, "open", "GRPC_NOT_CREATED")
    assert alert.evidence["statuses"] == {"TOPIC_NOT_FOUND": 1}
    assert alert.remedy is not None and f"-c {CLUSTER} -t {topic}" in alert.remedy
