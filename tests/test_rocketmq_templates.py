"""Where a new topic's template comes from, on real RocketMQ 4.9 and 5.x clusters and in the
emitter's model under each line (issue 24, experiments 4, 5, 6, 10 and 11, each with its model
twin). What 4.9 did is below; where 5.x differs (4, 5, 10, 11), the test says what it did and
which 5.x source explains it (docs/emitter.md's table has both).

One NameServer, two brokers (``autoCreateTopicEnable=true``, ``defaultTopicQueueNums=8``), the
real Java client. The module's tests share the cluster in file order; the later ones turn
auto-creation off broker by broker. What the real system did:

4. A producer with no NameServer address (its address lookup pointed at a closed loopback
   port): every send fails in the client with ``IllegalStateException``
   "...RemotingConnectException: connect to null failed" — not "No route info of this topic" —
   before any request leaves it.
5. A ``createTopicKey`` no broker has: "No route info of this topic" (client code 10005); the
   NameServer knows no such template and nothing is created.
6. Since 4.8.0 a broker refuses to delete (or update) a system topic: ``mqadmin deleteTopic``
   of TBW102 fails on the first broker, "The topic[TBW102] is conflict with system topic", and
   no NameServer is asked. What does lose TBW102 on one broker is a broker that runs with
   auto-creation off on a store that never held it: then the template route names the others
   only, and new topics land there. A topic deleted on one broker only stays in that broker's
   route: registrations never remove a topic from a NameServer.
10. A broker restarted with auto-creation off keeps TBW102 only if its ``topics.json`` holds it,
    and a broker writes that file only when its table changes (by hand, by auto-creation, or
    by the transactional check creating ``RMQ_SYS_TRANS_HALF_TOPIC`` about a minute into the
    first run of a new store). When it does, the stale TBW102
    (perm 7) is registered and routed; every send the producer's rotation puts there is refused
    (``TOPIC_NOT_EXIST``, "topic[T] not exist, apply first please!") and, with the client's
    retries, lands on another broker. The refusal strips the inherit bit from the broker's
    TBW102 in memory only (no new data version), so the NameServer keeps routing perm 7.
11. Every broker with auto-creation off: the topics named after the cluster (16 queues) and after
    each broker (1 queue) carry the inherit bit, so a producer whose ``createTopicKey`` names one
    of them auto-creates its topic anyway (apache/rocketmq#8801 holds for 4.9.8): with the
    producer's 4 queues from the cluster topic, with 1 queue from a broker's.
"""

from __future__ import annotations

import dataclasses
import functools
import uuid

import pytest

from emitter.collect.derive import Deriver
from emitter.collect.metrics import CollectorMetrics
from emitter.collect.poller import Poller
from routewatch import remoting
from routewatch.events import HeldTopic
from routewatch.events import TopicConfig as ModelTopicConfig
from routewatch.remoting import QueueData, TopicConfig
from routewatch.testing.processes import wait_for
from routewatch.testing.rocketmq import BrokerSpec, ClusterSpec, MQAdminError, RocketMQCluster
from tests.support.model_twin import model_routes, model_sends, model_world
from tests.support.rocketmq import EVERY_MAJOR, module_cluster
from tests.support.route_driver import ProducerSpec, RouteDriver, SendOutcome, module_driver
from tests.support.traces import evaluate_events

pytestmark = pytest.mark.rocketmq

CLUSTER = "RouteCluster"
BROKERS = ("broker-a", "broker-b")
SPEC = ClusterSpec(namesrvs=("ns1",), brokers=tuple(BrokerSpec(b, CLUSTER) for b in BROKERS))
HOURLY = 3_600_000
NOT_FOUND_TOPIC_EXCEPTION = 10005  # the client's ClientErrorCode
TOPIC_NOT_EXIST = 17  # the broker's ResponseCode
INVALID_PARAMETER = 29  # 5.x's answer to a queue id the topic does not have
REGISTRATION_PERIOD_S = 30

cluster = module_cluster(SPEC, EVERY_MAJOR)


driver = module_driver()


def _topic(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


def _producer(driver: RouteDriver, spec: ProducerSpec) -> str:
    """Start a producer and wait until its first periodic refresh has run (it must not swap a
    route in the middle of a test)."""
    driver.producer(spec)
    driver.wait_for_first_refresh(spec.name)
    return spec.name


def _route(cluster: RocketMQCluster, topic: str) -> tuple[QueueData, ...] | None:
    route = cluster.route(topic)
    return None if route is None else route.queues


def test_a_producer_with_no_namesrv_address_fails_in_the_client(
    cluster: RocketMQCluster, driver: RouteDriver
) -> None:
    """Experiment 4."""
    _producer(driver, ProducerSpec("nowhere", None))
    outcomes = driver.send("nowhere", _topic("Nowhere"), count=2)
    for outcome in outcomes:
        assert (outcome.status, outcome.broker) == (None, None)
        assert outcome.exception == "java.lang.IllegalStateException"
        # 4.9 names the missing address null; 5.x the channel's address, "" (no channel:
        # NettyRemotingClient.invokeSync's RemotingConnectException(channelRemoteAddr))
        nowhere = "null" if cluster.major == 4 else ""
        assert outcome.message == (
            "org.apache.rocketmq.remoting.exception.RemotingConnectException: "
            f"connect to {nowhere} failed"
        )
    # The model: the send fails before any broker, with no NameServer asked.
    world = model_world(SPEC, release=cluster.release)
    p = world.add_producer(namesrvs=[])
    world.at(5, lambda: p.send("Nowhere"))
    world.at(6, lambda: p.send("Nowhere"))
    world.run(10)
    assert [(e.status, e.broker) for e in model_sends(world, "Nowhere")] == [
        ("NO_NAMESRV", None)
    ] * 2


def test_a_create_topic_key_no_broker_has_means_no_route_info(
    cluster: RocketMQCluster, driver: RouteDriver
) -> None:
    """Experiment 5."""
    key = "AUTO_CREATE_TOPIC_KEY"
    _producer(
        driver,
        ProducerSpec("keyed", cluster.namesrv_addr(), create_topic_key=key),
    )
    topic = _topic("Keyed")
    (outcome,) = driver.send("keyed", topic)
    assert outcome.exception == "org.apache.rocketmq.client.exception.MQClientException"
    if cluster.major == 4:
        # 4.9 asks the NameServer for the key's route as the template: there is none
        assert str(outcome.message).startswith(f"No route info of this topic: {topic}\n")
        assert outcome.response_code == NOT_FOUND_TOPIC_EXCEPTION
    else:
        # 5.1.1+ takes TBW102's route as the template whatever the key
        # (MQClientAPIImpl.getDefaultTopicRouteInfoFromNameServer, apache/rocketmq#6452) and
        # names the key to the broker, which has no such topic to create from: three
        # refusals, on both brokers
        assert str(outcome.message).startswith("Send [3] times, still failed")
        assert outcome.response_code == TOPIC_NOT_EXIST
        assert [c.get("responseCode") for c in outcome.causes] == [TOPIC_NOT_EXIST]
    assert cluster.route(key) is None and cluster.route(topic) is None
    assert all(topic not in cluster.broker(b).topics() for b in BROKERS)

    world = model_world(SPEC, release=cluster.release)
    p = world.add_producer(create_topic_key=key)
    world.at(5, lambda: p.send("Keyed"))
    world.run(10)
    sends = [(e.status, e.broker is None) for e in model_sends(world, "Keyed")]
    if cluster.major == 4:
        assert sends == [("NO_ROUTE_INFO", True)]
    else:
        assert sends == [("TOPIC_NOT_EXIST", False)] * 3
    assert model_routes(world, key) == {"ns1": None}
    assert model_routes(world, "Keyed") == {"ns1": None}


def test_a_broker_refuses_to_delete_tbw102(cluster: RocketMQCluster) -> None:
    """Experiment 6, first part: TBW102 cannot be deleted on a 4.9.8 broker."""
    template = (QueueData("broker-a", 8, 8, 7), QueueData("broker-b", 8, 8, 7))
    with pytest.raises(MQAdminError, match=r"The topic\[TBW102\] is conflict with system topic"):
        cluster.delete_topic("TBW102", CLUSTER)
    with pytest.raises(remoting.RemotingError, match="conflict with system topic"):
        remoting.delete_topic_in_broker(cluster.broker("broker-b").addr, "TBW102")
    assert _route(cluster, "TBW102") == template
    assert all("TBW102" in cluster.broker(b).topics() for b in BROKERS)

    world = model_world(SPEC, release=cluster.release)
    world.run(1)
    assert not world.delete_topic("TBW102", cluster=CLUSTER)
    assert not world.broker("broker-b").delete_topic("TBW102")
    assert model_routes(world, "TBW102") == {"ns1": template}


def test_a_topic_deleted_on_one_broker_stays_in_its_route(cluster: RocketMQCluster) -> None:
    """Experiment 6, the NameServer's side: a registration adds and updates, never removes."""
    topic = _topic("Deleted")
    both = (QueueData("broker-a", 4, 4, 6), QueueData("broker-b", 4, 4, 6))
    cluster.update_topic(topic, cluster=CLUSTER, read_queues=4, write_queues=4)
    broker = cluster.broker("broker-b")
    remoting.delete_topic_in_broker(broker.addr, topic)
    assert topic not in broker.topics()
    registrations = broker.registrations()
    # Its next periodic registration carries the table without the topic (a new data version).
    wait_for(
        lambda: broker.registrations() > registrations,
        REGISTRATION_PERIOD_S + 10,
        "broker-b's next registration",
        interval=0.5,
    )
    assert _route(cluster, topic) == both
    cluster.delete_topic(topic, CLUSTER)
    assert cluster.route(topic) is None

    world = model_world(SPEC, release=cluster.release)
    world.at(1, lambda: world.create_topic(topic, 4, cluster=CLUSTER))
    world.at(2, lambda: world.broker("broker-b").delete_topic(topic))
    world.run(100)
    assert model_routes(world, topic) == {"ns1": both}
    assert topic not in world.broker("broker-b").topics


def test_a_broker_that_never_held_tbw102_gets_no_new_topic(
    cluster: RocketMQCluster, driver: RouteDriver
) -> None:
    """Experiment 6: broker-b back on an empty store with auto-creation off has no TBW102, the
    template route names broker-a alone, and every new topic lands there."""
    broker = cluster.broker("broker-b")
    broker.restart(lose_store=True, auto_create_topic=False)
    assert "TBW102" not in broker.topics()
    assert _route(cluster, "TBW102") == (QueueData("broker-a", 8, 8, 7),)
    _producer(
        driver, ProducerSpec("lost", cluster.namesrv_addr(), poll_name_server_interval_ms=HOURLY)
    )
    topic = _topic("Lost")
    outcomes = driver.send("lost", topic, count=8)
    assert [(o.status, o.broker) for o in outcomes] == [("SEND_OK", "broker-a")] * 8
    assert _route(cluster, topic) == (QueueData("broker-a", 4, 4, 6),)

    world = model_world(SPEC, release=cluster.release)
    b = world.broker("broker-b")
    world.at(1, b.shutdown)
    world.at(2, lambda: b.start(auto_create=False, keep_store=False))
    p = world.add_producer()
    world.every(0.001, lambda: p.send("Lost"), 5, 5.007)
    world.run(10)
    assert "TBW102" not in b.topics
    assert model_routes(world, "TBW102") == {"ns1": (QueueData("broker-a", 8, 8, 7),)}
    assert [(e.status, e.broker) for e in model_sends(world, "Lost")] == [
        ("SEND_OK", "broker-a")
    ] * 8
    assert model_routes(world, "Lost") == {"ns1": (QueueData("broker-a", 4, 4, 6),)}


def _refused(outcome: SendOutcome) -> bool:
    """A send the broker refused because the topic does not exist there (and no retry)."""
    return (
        outcome.status is None
        and outcome.response_code == TOPIC_NOT_EXIST
        and str(outcome.message).startswith("Send [1] times, still failed")
        and "BrokersSent: [broker-b]" in str(outcome.message)
        and [c.get("responseCode") for c in outcome.causes] == [TOPIC_NOT_EXIST]
    )


def _collector_sees_the_stale_template(cluster: RocketMQCluster) -> None:
    poller = Poller([cluster.namesrv_addr()], CollectorMetrics())
    deriver = Deriver(30)
    try:
        written = {e.broker: e for e in deriver.derive(poller.poll(deriver.known, deriver))}
    finally:
        poller.close()
    stale = written["broker-b"]
    assert stale.topics["TBW102"] == ModelTopicConfig(read_queue_nums=8, write_queue_nums=8, perm=7)
    assert stale.held == {"TBW102": HeldTopic(held=True, perm=6)}
    assert written["broker-a"].held is None
    events = [dataclasses.asdict(e) | {"v": 1, "type": "heartbeat"} for e in written.values()]
    final, _ = evaluate_events(events, CLUSTER)
    # no template alert: with auto-creation off a TBW102 without the inherit bit is no fault,
    # and broker-b holds the TBW102 it is routed (the stale route shows at a producer's refused
    # send: SEND_REJECTED, from the client side)
    assert [a for a in final if a.broker == "broker-b" or a.topic == "TBW102"] == []


def test_a_stale_tbw102_is_routed_and_refuses(
    cluster: RocketMQCluster, driver: RouteDriver
) -> None:
    """Experiment 10."""
    broker = cluster.broker("broker-b")
    stored = broker.store / "config" / "topics.json"
    # Back with auto-creation on: TBW102 made in memory, not written (nothing changed the
    # table in this short run), so it is gone after the next restart with auto-creation off.
    broker.restart(auto_create_topic=True)
    assert "TBW102" in broker.topics()
    broker.restart(auto_create_topic=False)
    if cluster.major == 4:
        assert "TBW102" not in broker.topics()
        # Its table changes once (a topic made by hand): topics.json is written, TBW102 with it.
        broker.restart(auto_create_topic=True)
        cluster.update_topic(_topic("Written"), broker="broker-b", read_queues=4, write_queues=4)
        assert "TBW102" in stored.read_text()
        broker.restart(auto_create_topic=False)
    # 5.x wrote topics.json on its clean shutdown (BrokerController.shutdown persists the
    # topic table since 5.0.0, apache/rocketmq#3978): TBW102 came back at once.
    assert "TBW102" in stored.read_text()
    assert broker.topics()["TBW102"] == TopicConfig(8, 8, 7)
    template = (QueueData("broker-a", 8, 8, 7), QueueData("broker-b", 8, 8, 7))
    assert _route(cluster, "TBW102") == template

    # Without retries, every send the rotation puts on broker-b is refused; 8 quick sends over
    # the template's 4 + 4 queues put 4 there, whatever the start.
    once = ProducerSpec(
        "once",
        cluster.namesrv_addr(),
        poll_name_server_interval_ms=HOURLY,
        retry_times_when_send_failed=0,
    )
    _producer(driver, once)
    topic = _topic("Stale")
    outcomes = driver.send("once", topic, count=8)
    assert sum(map(_refused, outcomes)) == 4
    assert [o.broker for o in outcomes if o.ok] == ["broker-a"] * 4
    assert _route(cluster, topic) == (QueueData("broker-a", 4, 4, 6),)
    # The refusal stripped the inherit bit from broker-b's TBW102, in memory only.
    assert broker.topics()["TBW102"] == TopicConfig(8, 8, 6)
    assert _route(cluster, "TBW102") == template
    # routewatch collect, starting now, writes what the NameServer routes (perm 7: it asks
    # TBW102's route each round) and the broker's own TBW102 beside it, the one a send meets
    _collector_sees_the_stale_template(cluster)
    # With the client's two retries, each refused send lands on broker-a.
    _producer(
        driver,
        ProducerSpec("retrying", cluster.namesrv_addr(), poll_name_server_interval_ms=HOURLY),
    )
    retried = driver.send("retrying", _topic("Retried"), count=8)
    assert [(o.status, o.broker) for o in retried] == [("SEND_OK", "broker-a")] * 8

    world = model_world(SPEC, release=cluster.release)
    b = world.broker("broker-b")
    world.at(1, lambda: b.upsert_topic("Written", 4, 4))
    world.at(2, b.shutdown)
    world.at(3, lambda: b.start(auto_create=False))
    p0 = world.add_producer("once", retries=0)
    p2 = world.add_producer("retrying")
    world.every(0.001, lambda: p0.send("Stale"), 5, 5.007)
    world.every(0.001, lambda: p2.send("Retried"), 6, 6.007)
    world.run(10)
    assert model_routes(world, "TBW102") == {"ns1": template}
    stale = model_sends(world, "Stale")
    assert (
        sorted((e.status, e.broker) for e in stale)
        == [("SEND_OK", "broker-a")] * 4 + [("TOPIC_NOT_EXIST", "broker-b")] * 4
    )
    assert b.topics["TBW102"] == ModelTopicConfig(read_queue_nums=8, write_queue_nums=8, perm=6)
    finals = [e for e in model_sends(world, "Retried") if e.status == "SEND_OK"]
    assert [e.broker for e in finals] == ["broker-a"] * 8


def test_templates_with_the_inherit_bit_when_auto_creation_is_off_everywhere(
    cluster: RocketMQCluster, driver: RouteDriver
) -> None:
    """Experiment 11 (broker-b is already off, with its stale TBW102)."""
    cluster.broker("broker-a").restart(auto_create_topic=False)
    for name in BROKERS:
        topics = cluster.broker(name).topics()
        assert topics[CLUSTER] == TopicConfig(16, 16, 7)
        assert topics[name] == TopicConfig(1, 1, 7)
    assert _route(cluster, CLUSTER) == tuple(QueueData(b, 16, 16, 7) for b in BROKERS)
    # createTopicKey = the cluster's name: auto-created, the producer's 4 queues, perm 6.
    _producer(
        driver,
        ProducerSpec(
            "by-cluster",
            cluster.namesrv_addr(),
            create_topic_key=CLUSTER,
            poll_name_server_interval_ms=HOURLY,
        ),
    )
    topic = _topic("ByCluster")
    (outcome,) = driver.send("by-cluster", topic)
    assert outcome.ok and outcome.broker in BROKERS, outcome
    assert _route(cluster, topic) == (QueueData(str(outcome.broker), 4, 4, 6),)
    # createTopicKey = a broker's name: auto-created there, with that topic's 1 queue.
    _producer(
        driver,
        ProducerSpec(
            "by-broker",
            cluster.namesrv_addr(),
            create_topic_key="broker-a",
            poll_name_server_interval_ms=HOURLY,
        ),
    )
    topic = _topic("ByBroker")
    outcomes = driver.send("by-broker", topic, count=3)
    if cluster.major == 4:
        # the template route is the key's own: broker-a's one queue
        assert [(o.status, o.broker, o.queue_id) for o in outcomes] == [
            ("SEND_OK", "broker-a", 0)
        ] * 3
    else:
        # 5.x's template route is TBW102's (4 queues of each broker): broker-b refuses (no
        # topic named broker-a there) and the client retries on broker-a, which makes the
        # topic with 1 queue and refuses a send to any other queue at once, until the
        # producer's next refresh ("request queueId[q] is illegal", INVALID_PARAMETER, which
        # the client does not retry). Whatever the rotation's start, broker-a was tried.
        for o in outcomes:
            assert (o.status, o.broker, o.queue_id) == ("SEND_OK", "broker-a", 0) or (
                o.response_code == INVALID_PARAMETER
                and "request queueId[" in str(o.message)
                and "is illegal" in str(o.message)
            ), o
    assert _route(cluster, topic) == (QueueData("broker-a", 1, 1, 6),)
    # The default createTopicKey: both brokers hold a stale TBW102 (broker-a's table was
    # written when its topics were auto-created) and refuse: three tries, then the error.
    # broker-b's TBW102 lost its inherit bit on its refusals above; the NameServer learns that
    # only if broker-b registered its table under a new data version since, which a 4.9
    # auto-creation there does (the whole table at once); a 5.x one registers the new topic
    # alone, and the next full registration, under the same version, is not applied.
    b_perm = 6 if cluster.major == 4 and outcome.broker == "broker-b" else 7
    assert _route(cluster, "TBW102") == (
        QueueData("broker-a", 8, 8, 7),
        QueueData("broker-b", 8, 8, b_perm),
    )
    _producer(driver, ProducerSpec("plain", cluster.namesrv_addr()))
    (plain,) = driver.send("plain", _topic("Plain"))
    assert plain.response_code == TOPIC_NOT_EXIST
    assert str(plain.message).startswith("Send [3] times, still failed")

    world = model_world(SPEC, release=cluster.release)
    for name in BROKERS:
        b = world.broker(name)
        world.at(1, functools.partial(b.upsert_topic, f"Written-{name}", 4, 4))
        world.at(2, b.shutdown)
        world.at(3, functools.partial(b.start, auto_create=False))
    by_cluster = world.add_producer("by-cluster", create_topic_key=CLUSTER)
    by_broker = world.add_producer("by-broker", create_topic_key="broker-a")
    plain_p = world.add_producer("plain")
    world.at(5, lambda: by_cluster.send("ByCluster"))
    world.every(0.001, lambda: by_broker.send("ByBroker"), 6, 6.002)
    world.at(7, lambda: plain_p.send("Plain"))
    world.run(10)
    (sent,) = model_sends(world, "ByCluster")
    assert sent.status == "SEND_OK" and sent.auto_created
    assert model_routes(world, "ByCluster") == {"ns1": (QueueData(str(sent.broker), 4, 4, 6),)}
    by_broker_sends = {(e.status, e.broker, e.queue_id) for e in model_sends(world, "ByBroker")}
    if cluster.major == 4:
        assert by_broker_sends == {("SEND_OK", "broker-a", 0)}
    else:
        assert {s for s in by_broker_sends if s[0] == "SEND_OK"} <= {("SEND_OK", "broker-a", 0)}
        assert {s[:2] for s in by_broker_sends if s[0] != "SEND_OK"} <= {
            ("TOPIC_NOT_EXIST", "broker-b")
        }
    assert model_routes(world, "ByBroker") == {"ns1": (QueueData("broker-a", 1, 1, 6),)}
    assert [e.status for e in model_sends(world, "Plain")] == ["TOPIC_NOT_EXIST"] * 3
