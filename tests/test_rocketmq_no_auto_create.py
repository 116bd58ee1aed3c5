"""Experiment 3 of issue 24 on a real RocketMQ 4.9.8: ``autoCreateTopicEnable=false`` on every
broker (from their first start, so no TBW102 was ever created) and a topic nobody created.

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
from tests.support.rocketmq import module_cluster
from tests.support.route_driver import ProducerSpec, RouteDriver, module_driver

pytestmark = pytest.mark.rocketmq

CLUSTER = "RouteCluster"
BROKERS = ("broker-a", "broker-b")
SPEC = ClusterSpec(
    namesrvs=("ns1",),
    brokers=tuple(BrokerSpec(name, CLUSTER, auto_create_topic=False) for name in BROKERS),
)
NOT_FOUND_TOPIC_EXCEPTION = 10005  # the client's ClientErrorCode


cluster = module_cluster(SPEC)
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

    world = model_world(SPEC)
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
    world = model_world(SPEC)
    p = world.add_producer("p")
    world.every(1, lambda: p.send("Absent"), 5, 6)
    world.at(7, lambda: world.create_topic("Absent", 4, cluster=CLUSTER))
    world.every(0.001, lambda: p.send("Absent"), 8, 8.007)
    world.run(10)
    sends = model_sends(world, "Absent")
    assert [(e.status, e.broker) for e in sends[:2]] == [("NO_ROUTE_INFO", None)] * 2
    assert {e.status for e in sends[2:]} == {"SEND_OK"}
    assert {e.broker for e in sends[2:]} == set(BROKERS)
