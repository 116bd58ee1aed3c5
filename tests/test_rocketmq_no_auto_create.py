"""Experiment 3 of issue 24 on real RocketMQ 4.9 and 5.x clusters: ``autoCreateTopicEnable=false``
on every broker (from their first start, so no TBW102 was ever created) and a topic nobody
created. Both lines do the same, but for the last test (apache/rocketmq#8801's path).

What the real system did: the NameServer answers the route request with ``TOPIC_NOT_EXIST``
("No topic route info in name server for the topic: T"), for the topic and for TBW102 alike; the
client's send fails with ``MQClientException`` "No route info of this topic: T" (client error
code 10005, ``NOT_FOUND_TOPIC_EXCEPTION``) without reaching a broker, keeps an empty route for the
topic and asks the NameServer again on the next send; nothing is created anywhere. Once the topic
is made with ``updateTopic -c``, the same producer's next send finds it, with no refresh to wait
for. The brokers still register topics of their own that carry the inherit bit (perm 7): one
named after the cluster (16 queues) and one after each broker (1 queue) — the topics of
apache/rocketmq#8801 (experiment 11).
"""

from __future__ import annotations

import uuid

import pytest

from routewatch import remoting
from routewatch.remoting import QueueData, TopicConfig
from routewatch.testing.rocketmq import BrokerSpec, ClusterSpec, RocketMQCluster
from tests.support.model_twin import model_routes, model_sends, model_world
from tests.support.rocketmq import EVERY_MAJOR, module_cluster
from tests.support.route_driver import ProducerSpec, RouteDriver, module_driver

pytestmark = pytest.mark.rocketmq

CLUSTER = "RouteCluster"
BROKERS = ("broker-a", "broker-b")
SPEC = ClusterSpec(
    namesrvs=("ns1",),
    brokers=tuple(BrokerSpec(name, CLUSTER, auto_create_topic=False) for name in BROKERS),
)
NOT_FOUND_TOPIC_EXCEPTION = 10005  # the client's ClientErrorCode


cluster = module_cluster(SPEC, EVERY_MAJOR)
driver = module_driver(lambda c: ProducerSpec("p", c.namesrv_addr()))


def test_the_brokers_have_no_template_topic(cluster: RocketMQCluster) -> None:
    assert cluster.route("TBW102") is None
    for name in BROKERS:
        broker = cluster.broker(name)
        assert broker.running_config()["autoCreateTopicEnable"] == "false"
        topics = broker.topics()
        assert "TBW102" not in topics
        # What they register instead, inherit bit included: the cluster's and their own name.
        assert topics[CLUSTER] == TopicConfig(16, 16, 7)
        assert topics[name] == TopicConfig(1, 1, 7)
    cluster_topic = cluster.route(CLUSTER)
    assert cluster_topic is not None
    assert cluster_topic.queues == tuple(QueueData(b, 16, 16, 7) for b in BROKERS)

    world = model_world(SPEC, release=cluster.release)
    world.run(1)
    assert model_routes(world, "TBW102") == {"ns1": None}
    assert model_routes(world, CLUSTER) == {"ns1": tuple(QueueData(b, 16, 16, 7) for b in BROKERS)}
    for name in BROKERS:
        assert model_routes(world, name) == {"ns1": (QueueData(name, 1, 1, 7),)}


def test_a_send_to_a_topic_nobody_created_has_no_route(
    cluster: RocketMQCluster, driver: RouteDriver
) -> None:
    topic = f"Absent_{uuid.uuid4().hex[:8]}"
    # The route query answers that the topic does not exist.
    answer, body = remoting.request(
        cluster.namesrv_addr(), remoting.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}
    )
    assert answer["code"] == remoting.TOPIC_NOT_EXIST and body == b""
    assert str(answer["remark"]).startswith(
        f"No topic route info in name server for the topic: {topic}"
    )
    assert cluster.mqadmin_topic_route(topic, "ns1") is None

    (outcome,) = driver.send("p", topic)
    assert not outcome.ok and outcome.broker is None
    assert outcome.exception == "org.apache.rocketmq.client.exception.MQClientException"
    assert str(outcome.message).startswith(f"No route info of this topic: {topic}\n")
    assert outcome.response_code == NOT_FOUND_TOPIC_EXCEPTION
    assert outcome.causes == ()
    # Nothing was created, on any broker or NameServer.
    assert cluster.route(topic) is None
    assert all(topic not in cluster.broker(name).topics() for name in BROKERS)
    # The producer keeps an empty route for the topic, and the next send asks again, in vain.
    assert driver.client_route("p", topic) == []
    (again,) = driver.send("p", topic)
    assert (again.exception, again.message) == (outcome.exception, outcome.message)

    # Made by hand on the cluster, the topic is found by the same producer's next send.
    cluster.update_topic(topic, cluster=CLUSTER, read_queues=4, write_queues=4)
    outcomes = driver.send("p", topic, count=8)
    assert all(o.ok for o in outcomes), outcomes
    assert {o.broker for o in outcomes} == set(BROKERS)

    # The model, with the same actions: two refused sends, the topic made, eight sends.
    world = model_world(SPEC, release=cluster.release)
    p = world.add_producer("p")
    world.every(1, lambda: p.send("Absent"), 5, 6)
    world.at(7, lambda: world.create_topic("Absent", 4, cluster=CLUSTER))
    world.every(0.001, lambda: p.send("Absent"), 8, 8.007)
    world.run(10)
    sends = model_sends(world, "Absent")
    assert [(e.status, e.broker) for e in sends[:2]] == [("NO_ROUTE_INFO", None)] * 2
    assert {e.status for e in sends[2:]} == {"SEND_OK"}
    assert {e.broker for e in sends[2:]} == set(BROKERS)


def test_a_cluster_named_create_topic_key_with_no_tbw102_anywhere(
    cluster: RocketMQCluster, driver: RouteDriver
) -> None:
    """apache/rocketmq#8801 on a cluster that never had TBW102: a 4.9 client asks for the
    key's own route as its template and auto-creates from the cluster topic; a 5.x client
    (5.1.1+) asks for TBW102's (``MQClientAPIImpl.getDefaultTopicRouteInfoFromNameServer``),
    finds none, and fails with "No route info" before reaching a broker."""
    driver.producer(ProducerSpec("by-cluster", cluster.namesrv_addr(), create_topic_key=CLUSTER))
    driver.wait_for_first_refresh("by-cluster")
    topic = f"ByCluster_{uuid.uuid4().hex[:8]}"
    (outcome,) = driver.send("by-cluster", topic)
    if cluster.major == 4:
        assert outcome.ok and outcome.broker in BROKERS, outcome
        route = cluster.route(topic)
        assert route is not None and route.queues == (QueueData(str(outcome.broker), 4, 4, 6),)
    else:
        assert str(outcome.message).startswith(f"No route info of this topic: {topic}\n")
        assert outcome.response_code == NOT_FOUND_TOPIC_EXCEPTION
        assert cluster.route(topic) is None

    world = model_world(SPEC, release=cluster.release)
    p = world.add_producer("by-cluster", create_topic_key=CLUSTER)
    world.at(5, lambda: p.send("ByCluster"))
    world.run(10)
    (sent,) = model_sends(world, "ByCluster")
    if cluster.major == 4:
        assert sent.status == "SEND_OK" and sent.auto_created
        assert model_routes(world, "ByCluster") == {"ns1": (QueueData(str(sent.broker), 4, 4, 6),)}
    else:
        assert (sent.status, sent.broker) == ("NO_ROUTE_INFO", None)
        assert model_routes(world, "ByCluster") == {"ns1": None}
