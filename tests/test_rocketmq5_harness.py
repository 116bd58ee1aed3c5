"""The RocketMQ harness on a real RocketMQ 5.x (the release the install step resolves): one
NameServer and two brokers boot from the cache, listen on 127.0.0.1 only, and answer
routewatch's own remoting client and ``mqadmin`` as 4.9.x does."""

from __future__ import annotations

import uuid

import pytest

from routewatch.testing.rocketmq import BrokerSpec, ClusterSpec, RocketMQCluster, release
from tests.support.rocketmq import listeners, loopback_listeners, module_cluster

pytestmark = pytest.mark.rocketmq

SPEC = ClusterSpec(
    namesrvs=("ns1",),
    brokers=(BrokerSpec("broker-a", "Cluster5"), BrokerSpec("broker-b", "Cluster5")),
)
BROKERS = {"broker-a", "broker-b"}

cluster = module_cluster(SPEC, major=5)


def test_the_cluster_is_a_5x_release_and_listens_on_loopback_only(
    cluster: RocketMQCluster,
) -> None:
    assert release(cluster.home)[0] == 5
    assert listeners(cluster) == loopback_listeners(cluster)


def test_the_namesrv_lists_both_brokers_with_their_template_topic(
    cluster: RocketMQCluster,
) -> None:
    info = cluster.cluster_info()
    assert info.clusters == {"Cluster5": frozenset(BROKERS)}
    for name in BROKERS:
        broker = cluster.broker(name)
        assert info.addr(name) == broker.addr
        assert broker.running_config()["autoCreateTopicEnable"] == "true"
    template = cluster.route("TBW102")
    assert template is not None and template.broker_names == BROKERS
    rows = cluster.mqadmin_cluster_list("ns1")
    assert {(r.cluster, r.broker, r.broker_id, r.addr) for r in rows} == {
        ("Cluster5", name, 0, cluster.broker(name).addr) for name in BROKERS
    }


def test_a_topic_created_on_one_broker_is_routed_to_it_alone(cluster: RocketMQCluster) -> None:
    topic = f"Five_{uuid.uuid4().hex[:8]}"
    cluster.update_topic(topic, broker="broker-b", read_queues=4, write_queues=4)
    assert topic in cluster.broker("broker-b").topics()
    assert topic not in cluster.broker("broker-a").topics()
    route = cluster.route(topic)
    assert route is not None and route.broker_names == {"broker-b"}
    assert {(q.read_queue_nums, q.write_queue_nums) for q in route.queues} == {(4, 4)}
    assert cluster.mqadmin_topic_route(topic, "ns1") == route
