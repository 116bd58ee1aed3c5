"""RocketMQ 5.x's gRPC clients on a real 5.x cluster: the Java ``rocketmq-client-java`` (the
``grpc-client`` part) through a real proxy in cluster mode, in front of two brokers that have
``autoCreateTopicEnable=true`` (issue 37, item 4; docs/hook.md, "gRPC clients").

What the real system did: a gRPC producer asks the proxy for a topic's route before its first
send; for a topic no NameServer has, the proxy answers ``TOPIC_NOT_FOUND`` (40402) with the
NameServer's own words ("No topic route info in name server for the topic: T"), and the client
throws ``NotFoundException`` — from ``send`` for an undeclared topic, from ``build()`` (an
``IllegalStateException`` caused by it) for a declared one. Nothing is created anywhere, although
every broker would auto-create: the proxy routes only what the NameServers route and has no
TBW102 fallback (proxy ``ClusterTopicRouteService``), so the stuck auto-created topic cannot come
from a gRPC producer. The one broker-side trace of the miss is a WARN line of the proxy's
(``MQClientAPIImpl``: "get Topic [T] RouteInfoFromNameServer is not exist value"), at most once
per route-cache refresh (20 s) per topic. A topic the cluster has is sent to normally.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest

from routewatch import remoting
from routewatch.testing.processes import wait_for
from routewatch.testing.rocketmq import BrokerSpec, ClusterSpec, Proxy, RocketMQCluster
from tests.support.grpc_client import client_jars, probe
from tests.support.rocketmq import module_cluster

pytestmark = pytest.mark.rocketmq

CLUSTER = "GrpcCluster"
BROKERS = ("broker-a", "broker-b")
SPEC = ClusterSpec(
    namesrvs=("ns1",),
    brokers=tuple(BrokerSpec(name, CLUSTER, auto_create_topic=True) for name in BROKERS),
)
TOPIC_NOT_FOUND = 40402  # apache.rocketmq.v2.Code
NOT_FOUND = "org.apache.rocketmq.client.java.exception.NotFoundException"
NO_ROUTE = "CODE: 17  DESC: No topic route info in name server for the topic: {topic}"
REFRESH_S = 20  # the proxy's route cache: topicRouteServiceCacheRefreshSeconds

cluster = module_cluster(SPEC, 5)


@pytest.fixture(scope="module")
def proxy(cluster: RocketMQCluster) -> Proxy:
    client_jars()  # skip before starting anything when the client is not installed
    return cluster.start_proxy(cluster_name=CLUSTER)  # killed with the cluster


def _new_topic() -> str:
    return f"grpc-{uuid.uuid4().hex[:10]}"


def test_the_proxy_listens_on_loopback_only(proxy: Proxy) -> None:
    assert proxy.listening() == {("127.0.0.1", proxy.port), ("127.0.0.1", proxy.remoting_port)}


def test_a_grpc_producer_sends_to_a_topic_the_cluster_has(
    cluster: RocketMQCluster, proxy: Proxy, tmp_path: Path
) -> None:
    topic = _new_topic()
    cluster.update_topic(topic, cluster=CLUSTER, read_queues=4, write_queues=4)

    (sent,) = probe(proxy, [f"send:{topic}"], tmp_path)

    assert sent.ok, sent.message
    assert sent.message_id


def test_a_new_topic_is_not_found_and_created_nowhere(
    cluster: RocketMQCluster, proxy: Proxy, tmp_path: Path
) -> None:
    sent, declared = _new_topic(), _new_topic()

    outcomes = probe(proxy, [f"send:{sent}", f"send:{sent}", f"declare:{declared}"], tmp_path)

    for outcome, topic in zip(outcomes, (sent, sent, declared), strict=True):
        assert not outcome.ok
        assert outcome.response_code == TOPIC_NOT_FOUND, outcome.message
        assert NO_ROUTE.format(topic=topic) in outcome.message
    # an undeclared topic: send throws NotFoundException itself, every time (not retried)
    assert [o.error for o in outcomes[:2]] == [NOT_FOUND, NOT_FOUND]
    # a declared one: the producer does not start
    assert outcomes[2].error == "java.lang.IllegalStateException"
    assert f"caused by {NOT_FOUND}" in outcomes[2].message
    # though every broker auto-creates, nothing was created: no route, no broker's table
    for topic in (sent, declared):
        assert cluster.routes(topic) == {"ns1": None}
        for name in BROKERS:
            assert topic not in cluster.broker(name).topics()
    # the one trace on the broker side: the proxy's WARN of each NameServer miss
    log = proxy.default_log.read_text(errors="replace")
    for topic in (sent, declared):
        assert f"get Topic [{topic}] RouteInfoFromNameServer is not exist value" in log


def test_a_topic_made_after_a_miss_is_routed_by_the_proxy_only_after_its_cache_refresh(
    cluster: RocketMQCluster, proxy: Proxy, tmp_path: Path
) -> None:
    topic = _new_topic()
    (missed,) = probe(proxy, [f"send:{topic}"], tmp_path / "miss")
    missed_at = time.monotonic()  # the proxy cached the miss just before
    assert missed.response_code == TOPIC_NOT_FOUND
    for name in BROKERS:
        remoting.update_topic_in_broker(
            cluster.broker(name).addr, topic, read_queues=4, write_queues=4
        )
    wait_for(lambda: cluster.route(topic) is not None, 30, f"{topic} routed by the NameServer")

    (sent,) = probe(proxy, [f"until:{topic}"], tmp_path / "until")
    took = time.monotonic() - missed_at

    # the proxy answers from its cached miss until it reloads the entry, 20 s after writing it
    # (topicRouteServiceCacheRefreshSeconds), on an access after that
    assert sent.ok, sent.message
    assert sent.attempts > 1
    assert REFRESH_S - 5 <= took <= REFRESH_S + 20
    print(f"sendable through the proxy {took:.1f} s after its miss ({sent.attempts} attempts)")
