"""What RocketMQ does with a new topic, on real 4.9 and 5.x clusters (issue 24, section 2; each
test runs on both lines, ``[rocketmq4]`` and ``[rocketmq5]``, and 5.x did the same here).

Two NameServers, two brokers registered with both, ``autoCreateTopicEnable=true`` and
``defaultTopicQueueNums=8`` (so TBW102 has 8 queues and perm 7 on each), the real Java client with
its defaults unless said. Each test asserts what the real system did:

1. One send to a new topic: the route names the one broker that took it, with the producer's 4
   queues (not the broker's 8) and perm 6, on both NameServers; the producer's next refresh
   swaps TBW102's 8 queues for those 4, later sends all go there, and the other broker never
   gets the topic — through the brokers' next registrations.
2. Quick sends to a new topic, before the producer's refresh: the producer rotates over TBW102's
   queues (``min(producer's defaultTopicQueueNums, 8)`` per broker, sorted by broker) from a
   random start, one queue further per send; every broker that took a send holds the topic. So
   ``q * (brokers - 1) + 1`` quick sends always reach every broker (5 with the default 4 queues,
   3 with 2), fewer may or may not, as the start falls.
7. ``updateTopic -c``: every broker holds the topic, with the queues asked; ``updateTopic -b``
   on one broker with other counts: the route shows the skew, and the producer's queues follow
   the write counts.
"""

from __future__ import annotations

import functools
import time
import uuid

import pytest

from routewatch import fastjson, remoting
from routewatch.remoting import QueueData, TopicConfig, TopicRoute
from routewatch.testing.processes import wait_for
from routewatch.testing.rocketmq import BrokerSpec, ClusterSpec, RocketMQCluster, release
from tests.support.model_twin import model_routes, model_sends, model_world
from tests.support.rocketmq import EVERY_MAJOR, listeners, loopback_listeners, module_cluster
from tests.support.route_driver import ProducerSpec, RouteDriver, SendOutcome, module_driver

pytestmark = pytest.mark.rocketmq

CLUSTER = "RouteCluster"
BROKERS = ("broker-a", "broker-b")  # sorted, as the client sorts a route's queues
SPEC = ClusterSpec(
    namesrvs=("ns1", "ns2"),
    brokers=tuple(BrokerSpec(name, CLUSTER, default_topic_queue_nums=8) for name in BROKERS),
)
HOURLY = 3_600_000  # a refresh interval that keeps a producer on its first route for the test
# The brokers register their whole topic table with every NameServer every 30 s.
REGISTRATION_PERIOD_S = 30


cluster = module_cluster(SPEC, EVERY_MAJOR)
driver = module_driver()


def _topic(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


def _queues(route: TopicRoute | None) -> tuple[QueueData, ...] | None:
    return None if route is None else route.queues


def _wait_for_route(
    cluster: RocketMQCluster, topic: str, queues: tuple[QueueData, ...], timeout: float = 10
) -> None:
    """Wait until every NameServer gives ``topic`` exactly these queues; fail with the routes."""
    try:
        wait_for(
            lambda: all(_queues(r) == queues for r in cluster.routes(topic).values()),
            timeout,
            f"every NameServer routing {topic} to {queues}",
        )
    except TimeoutError:
        assert {ns: _queues(r) for ns, r in cluster.routes(topic).items()} == dict.fromkeys(
            cluster.namesrvs, queues
        )


def test_the_cluster_listens_on_loopback_only(cluster: RocketMQCluster) -> None:
    """Every NameServer and broker of either line, as ``ss -ltnp`` shows them: 127.0.0.1 only
    (a broker's port, its fast channel and its HA port)."""
    assert release(cluster.home)[0] == cluster.major
    assert listeners(cluster) == loopback_listeners(cluster)


def test_the_template_route(cluster: RocketMQCluster) -> None:
    for route in cluster.routes("TBW102").values():
        assert _queues(route) == tuple(QueueData(b, 8, 8, 7) for b in BROKERS)


def test_one_send_leaves_a_new_topic_on_one_broker_for_good(
    cluster: RocketMQCluster, driver: RouteDriver
) -> None:
    """Experiment 1."""
    driver.producer(ProducerSpec("once", cluster.namesrv_addr()))  # refreshes every 30 s
    topic = _topic("Once")
    (first,) = driver.send("once", topic)
    sent_at = time.monotonic()
    assert first.ok, first
    holder = first.broker
    assert holder in BROKERS
    (other,) = set(BROKERS) - {holder}
    # The broker that took the message created the topic with the producer's 4 queues (TBW102
    # has 8) without the inherit bit, and registered it with both NameServers at once.
    only_holder = (QueueData(holder, 4, 4, 6),)
    _wait_for_route(cluster, topic, only_holder, timeout=2)

    # Until its next refresh the producer sends by TBW102's route (4 queues on each broker);
    # the refresh swaps it for the topic's own route: the holder's 4 queues only.
    template = [(b, q) for b in BROKERS for q in range(4)]
    holders_queues = [(holder, q) for q in range(4)]
    assert driver.client_route("once", topic) in (template, holders_queues)
    wait_for(
        lambda: driver.client_route("once", topic) == holders_queues,
        REGISTRATION_PERIOD_S + 10,
        "the producer's next route refresh",
        interval=0.5,
    )
    more = driver.send("once", topic, count=12)
    assert all(o.ok for o in more), more
    assert {_placed(o)[0] for o in more} == {holder}
    assert sorted({_placed(o)[1] for o in more}) == [0, 1, 2, 3]

    # The other broker never got the topic, so no registration of it can bring the topic there:
    # through a full registration period after the send, every NameServer keeps one broker.
    assert topic not in cluster.broker(other).topics()
    assert cluster.broker(holder).topics()[topic] == TopicConfig(4, 4, 6)
    # 5.x topics have attributes (message.type, ...): an auto-created one gets none, as one made
    # by updateTopic without -a (createTopicInSendMessageMethod starts from a new TopicConfig and
    # copies no attribute of the template); a client sending FIFO or transactional messages
    # through a 5.x proxy meets no declared type. 4.9 has no attributes.
    own = _raw_topic_config(cluster, holder, topic)
    assert own.get("attributes") == ({} if cluster.major == 5 else None), own

    def route_kept_until(deadline: float) -> bool:
        assert {ns: _queues(r) for ns, r in cluster.routes(topic).items()} == {
            ns: only_holder for ns in cluster.namesrvs
        }
        return time.monotonic() >= deadline

    wait_for(
        lambda: route_kept_until(sent_at + REGISTRATION_PERIOD_S + 1),
        REGISTRATION_PERIOD_S + 10,
        "a registration period passing",
        interval=1,
    )
    assert topic not in cluster.broker(other).topics()

    # The model, with the same actions: one send at 5 s, its refresh at 30 s, 12 more at 40 s.
    world = model_world(SPEC, release=cluster.release)
    p = world.add_producer("once")
    world.at(5, lambda: p.send("Once"))
    world.every(0.001, lambda: p.send("Once"), 40, 40.011)
    world.run(100)
    first_send, *later = model_sends(world, "Once")
    model_holder = str(first_send.broker)
    assert first_send.status == "SEND_OK" and first_send.auto_created
    assert model_routes(world, "Once") == {
        ns: (QueueData(model_holder, 4, 4, 6),) for ns in SPEC.namesrvs
    }
    assert {(e.status, e.broker) for e in later} == {("SEND_OK", model_holder)}
    assert {e.queue_id for e in later} == {0, 1, 2, 3}
    (model_other,) = set(BROKERS) - {model_holder}
    assert "Once" not in world.broker(model_other).topics


def _raw_topic_config(cluster: RocketMQCluster, broker: str, topic: str) -> dict[str, object]:
    """The topic's config in the broker's table as the broker writes it (every field)."""
    with remoting.Connection(cluster.broker(broker).addr) as conn:
        body = conn.ask(remoting.GET_ALL_TOPIC_CONFIG, "the topic table")
    config: dict[str, object] = fastjson.loads(body)["topicConfigTable"][topic]
    return config


def _placed(outcome: SendOutcome) -> tuple[str, int]:
    """Where a successful send went: its broker and queue id."""
    assert outcome.broker is not None and outcome.queue_id is not None, outcome
    return outcome.broker, outcome.queue_id


def _quick_sends(
    cluster: RocketMQCluster, driver: RouteDriver, producer: str, count: int, queues: int
) -> set[str]:
    """``count`` quick sends to a new topic; checks the rotation and the route, returns the
    brokers that hold the topic."""
    topic = _topic(f"Quick{count}")
    outcomes = driver.send(producer, topic, count=count)
    assert all(o.ok for o in outcomes), outcomes
    # The producer still holds the template route it built on the first send: `queues` queues
    # of each broker that reported TBW102, sorted by broker name.
    template = [(b, q) for b in BROKERS for q in range(queues)]
    assert driver.client_route(producer, topic) == template
    # It rotated over them from a random start, one queue further per send.
    positions = [template.index(_placed(o)) for o in outcomes]
    start = positions[0]
    assert positions == [(start + i) % len(template) for i in range(count)]
    # Every broker that took a send created the topic with the producer's queue count.
    took = {_placed(o)[0] for o in outcomes}
    _wait_for_route(cluster, topic, tuple(QueueData(b, queues, queues, 6) for b in sorted(took)))
    return took


@pytest.mark.parametrize(("producer_queues", "boundary"), [(4, 5), (2, 3)])
def test_quick_sends_reach_every_broker_from_the_boundary_on(
    cluster: RocketMQCluster, driver: RouteDriver, producer_queues: int, boundary: int
) -> None:
    """Experiment 2: the boundary is ``q * (brokers - 1) + 1`` quick sends."""
    producer = f"quick{producer_queues}"
    driver.producer(
        ProducerSpec(
            producer,
            cluster.namesrv_addr(),
            default_topic_queue_nums=producer_queues,
            poll_name_server_interval_ms=HOURLY,
        )
    )
    driver.wait_for_first_refresh(producer)
    assert boundary == producer_queues * (len(BROKERS) - 1) + 1
    # Nine quick sends: both brokers.
    assert _quick_sends(cluster, driver, producer, 9, producer_queues) == set(BROKERS)
    # From the boundary on, every time; one send, one broker, every time.
    for _ in range(3):
        assert _quick_sends(cluster, driver, producer, boundary, producer_queues) == set(BROKERS)
        assert len(_quick_sends(cluster, driver, producer, 1, producer_queues)) == 1
    # Below it, one broker or both, as the random start falls (the rotation itself is checked
    # on every run above and here).
    for count in range(2, boundary):
        for _ in range(3):
            assert len(_quick_sends(cluster, driver, producer, count, producer_queues)) in (1, 2)

    # The model, over many starts: the same rotation, the same boundary, only outcomes the
    # real client can give.
    template = [(b, q) for b in BROKERS for q in range(producer_queues)]
    for seed in range(20):
        world = model_world(SPEC, seed, cluster.release)
        p = world.add_producer(default_topic_queue_nums=producer_queues)
        for count in (1, *range(2, boundary), boundary, 9):
            topic = f"Quick{count}"
            world.every(0.001, functools.partial(p.send, topic), 5, 5 + (count - 1) / 1000)
        world.run(6)
        for count in (1, *range(2, boundary), boundary, 9):
            sends = model_sends(world, f"Quick{count}")
            positions = [template.index((str(e.broker), int(e.queue_id or 0))) for e in sends]
            assert positions == [(positions[0] + i) % len(template) for i in range(count)]
            took = {str(e.broker) for e in sends}
            if count == 1:
                assert len(took) == 1
            elif count >= boundary:
                assert took == set(BROKERS)
            else:
                assert len(took) in (1, 2)
            routes = model_routes(world, f"Quick{count}")
            assert routes == {
                ns: tuple(QueueData(b, producer_queues, producer_queues, 6) for b in sorted(took))
                for ns in SPEC.namesrvs
            }


def test_update_topic_on_the_cluster_then_a_skew_on_one_broker(
    cluster: RocketMQCluster, driver: RouteDriver
) -> None:
    """Experiment 7."""
    topic = _topic("Made")
    cluster.update_topic(topic, cluster=CLUSTER, read_queues=8, write_queues=8)
    _wait_for_route(cluster, topic, tuple(QueueData(b, 8, 8, 6) for b in BROKERS))
    for name in BROKERS:
        assert cluster.broker(name).topics()[topic] == TopicConfig(8, 8, 6)

    # Another queue count on one broker: the route shows the skew at once, on both NameServers.
    cluster.update_topic(topic, broker="broker-b", read_queues=4, write_queues=4)
    _wait_for_route(
        cluster, topic, (QueueData("broker-a", 8, 8, 6), QueueData("broker-b", 4, 4, 6))
    )
    # A producer gets every write queue: 8 on broker-a, 4 on broker-b; 12 quick sends put 8 on a.
    driver.producer(
        ProducerSpec("skewed", cluster.namesrv_addr(), poll_name_server_interval_ms=HOURLY)
    )
    outcomes = driver.send("skewed", topic, count=12)
    assert all(o.ok for o in outcomes), outcomes
    assert sorted(_placed(o)[0] for o in outcomes) == ["broker-a"] * 8 + ["broker-b"] * 4

    # Read and write counts that differ on one broker: the route says so, and a producer's
    # queues follow the write count (2 on broker-a).
    cluster.update_topic(topic, broker="broker-a", read_queues=8, write_queues=2)
    _wait_for_route(
        cluster, topic, (QueueData("broker-a", 8, 2, 6), QueueData("broker-b", 4, 4, 6))
    )
    assert driver.refresh("skewed", topic)
    assert driver.client_route("skewed", topic) == [
        ("broker-a", 0),
        ("broker-a", 1),
        *(("broker-b", q) for q in range(4)),
    ]

    # The model, with the same actions.
    world = model_world(SPEC, release=cluster.release)
    world.at(1, lambda: world.create_topic("Made", 8, cluster=CLUSTER))
    world.at(2, lambda: world.broker("broker-b").upsert_topic("Made", 4, 4))
    p = world.add_producer("skewed")
    world.every(0.001, lambda: p.send("Made"), 5, 5.011)
    world.at(10, lambda: world.broker("broker-a").upsert_topic("Made", 8, 2))
    world.run(31)  # the producer's refresh at 30 s
    skewed = (QueueData("broker-a", 8, 2, 6), QueueData("broker-b", 4, 4, 6))
    assert model_routes(world, "Made") == dict.fromkeys(SPEC.namesrvs, skewed)
    assert (
        sorted(str(e.broker) for e in model_sends(world, "Made"))
        == ["broker-a"] * 8 + ["broker-b"] * 4
    )
    info = p.publish["Made"]
    assert info is not None
    assert info.queues == [("broker-a", 0), ("broker-a", 1), *(("broker-b", q) for q in range(4))]
