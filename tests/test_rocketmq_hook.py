"""The client hook library (``emitter/hook/java``, docs/hook.md) on a real RocketMQ, 4.9 and
5.x (the module runs on each line, with that line's client; where 5.x differs, the test says so).

One NameServer, two brokers with ``autoCreateTopicEnable=false``, producers of the real Java
client built by the library's one-line install (``new RoutewatchProducer(group, hook, config)``)
through the driver, each writing into a spool directory of its own. Every line the library
publishes must be a contract event (``routewatch.codec.parse``), and say what the client saw:

- a topic made by hand: a ``route_pull`` per route query with the NameServer's route, a ``send``
  per message with the broker, queue and status the client returned;
- asynchronous sends: the same ``send`` events, from their callbacks;
- a topic nobody made (auto-creation off): the pulls of the topic and of its template
  (``via_default``) answered ``TOPIC_NOT_EXIST``, then the send ``NO_ROUTE_INFO``, which the hook
  alone cannot see;
- no NameServer address ("connect to null failed"): a ``NO_NAMESRV`` pull and send; an address
  where no NameServer listens ("connect to [addr] failed"): nothing, the contract has no status;
- a template that lacks the inherit bit (a ``createTopicKey`` naming a topic made by hand): the
  broker refuses the send, ``TOPIC_NOT_EXIST`` with that broker;
- a template that has it (the topic named after the cluster): the fallback pull, with the
  client's 4 queues per broker, and the send it auto-creates;
- the spool unwritable: every send as fast and as successful, every event dropped and counted;
- the job's evaluation of the spools with the heartbeats of ``routewatch collect``, which runs
  beside the module's tests (the job's step, as ``routewatch evaluate`` runs it):
  ``NO_ROUTE_INFO`` with its causes ``NO_NAMESRV`` and ``AUTO_CREATE_DISABLED``,
  ``SEND_REJECTED`` naming the brokers, and ``AT_RISK``.
"""

from __future__ import annotations

import statistics
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from routewatch.testing.rocketmq import BrokerSpec, ClusterSpec, RocketMQCluster
from tests.support.hook_spools import (
    Collector,
    broker_of,
    collecting,
    evaluate_spools,
    hooked,
    of,
    published,
)
from tests.support.rocketmq import EVERY_MAJOR, module_cluster
from tests.support.route_driver import HookSpec, ProducerSpec, RouteDriver, SendOutcome

pytestmark = [pytest.mark.rocketmq, pytest.mark.usefixtures("collector")]

CLUSTER = "HookCluster"
BROKERS = ("broker-a", "broker-b")
SPEC = ClusterSpec(
    namesrvs=("ns1",),
    brokers=tuple(BrokerSpec(b, CLUSTER, auto_create_topic=False) for b in BROKERS),
)
HOURLY = 3_600_000
TOPIC_NOT_EXIST = 17
NOT_FOUND_TOPIC_EXCEPTION = 10005

cluster = module_cluster(SPEC, EVERY_MAJOR)


@pytest.fixture(scope="module")
def driver(cluster: RocketMQCluster) -> Iterator[RouteDriver]:
    # the client of the cluster's own release: 4.9's against 4.9, 5.x's against 5.x
    with RouteDriver(cluster.workdir / "hook-driver", home=cluster.home) as running:
        yield running


@pytest.fixture(scope="module")
def spools(cluster: RocketMQCluster, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder of every producer's spool, and the collector's, for the evaluation at the end:
    one per cluster (per release line)."""
    return tmp_path_factory.mktemp(f"spools-rocketmq{cluster.major}")


@pytest.fixture(scope="module")
def collector(cluster: RocketMQCluster, spools: Path) -> Iterator[Collector]:
    with collecting(cluster, spools, BROKERS) as running:
        yield running


def _topic(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


def _hooked(
    driver: RouteDriver, spools: Path, name: str, namesrv: str | None, **settings: Any
) -> dict[str, Any]:
    return hooked(driver, spools, name, namesrv, CLUSTER, **settings)


def test_pulls_and_sends_of_a_topic_made_by_hand(
    cluster: RocketMQCluster, driver: RouteDriver, spools: Path
) -> None:
    topic = _topic("Hooked")
    cluster.update_topic(topic, cluster=CLUSTER, read_queues=4, write_queues=4)
    started = _hooked(driver, spools, "made", cluster.namesrv_addr())
    outcomes = driver.send("made", topic, count=6)
    assert all(o.ok for o in outcomes), outcomes

    events = published(driver, spools, "made")
    for e in events:
        assert e["cluster"] == CLUSTER and e["client_id"] == started["clientId"]
        assert e["group"] == started["group"]
    # The first send asked the NameServer for the topic's route: the route it answered.
    pulls = of(events, "route_pull", topic)
    assert pulls, events
    route = cluster.route(topic)
    assert route is not None
    for pull in pulls:
        assert pull["role"] == "producer" and pull["namesrv"] == cluster.namesrv_addr()
        assert (pull["result"], pull["via_default"]) == ("SUCCESS", False)
        assert pull["create_topic_key"] == "TBW102"
        assert pull["client_default_topic_queue_nums"] == 4
        assert sorted(
            (q["broker"], q["read_queue_nums"], q["write_queue_nums"], q["perm"])
            for q in pull["queues"]
        ) == sorted((q.broker, q.read_queue_nums, q.write_queue_nums, q.perm) for q in route.queues)
    # One send event per message, in order, as the client returned it.
    sends = of(events, "send", topic)
    assert [(s["status"], s["broker"], s["queue_id"]) for s in sends] == [
        (o.status, o.broker, o.queue_id) for o in outcomes
    ]
    assert all((s["default_topic"], s["default_topic_queue_nums"]) == ("TBW102", 4) for s in sends)
    assert all("auto_created" not in s for s in sends)
    # The pull came before the first send.
    assert events.index(pulls[0]) < events.index(sends[0])
    # Published atomically: no hidden file is left behind.
    assert not [p for p in (spools / "made").iterdir() if p.name.startswith(".")]


def test_asynchronous_sends_are_recorded_from_their_callback(
    cluster: RocketMQCluster, driver: RouteDriver, spools: Path
) -> None:
    # RocketMQ 4.9.8 calls no hook after an asynchronous response: the callback tells.
    topic = _topic("Async")
    cluster.update_topic(topic, cluster=CLUSTER, read_queues=4, write_queues=4)
    _hooked(driver, spools, "async", cluster.namesrv_addr())
    outcomes = driver.send("async", topic, count=4, via="async")
    assert all(o.ok for o in outcomes), outcomes
    absent = _topic("AsyncAbsent")
    (failed,) = driver.send("async", absent, via="async")
    assert str(failed.message).startswith(f"No route info of this topic: {absent}"), failed

    events = published(driver, spools, "async")
    assert [(s["status"], s["broker"], s["queue_id"]) for s in of(events, "send", topic)] == [
        (o.status, o.broker, o.queue_id) for o in outcomes
    ]
    (send,) = of(events, "send", absent)
    assert (send["status"], send["broker"], send["queue_id"]) == ("NO_ROUTE_INFO", None, None)


# The producer's methods that look the route up in the calling thread (the wrapper sees them):
# what the client throws when no broker has the topic or its template.
NO_ROUTE = {
    "send": ("No route info of this topic: ", NOT_FOUND_TOPIC_EXCEPTION),
    "oneway": ("No route info of this topic: ", NOT_FOUND_TOPIC_EXCEPTION),
    "batch": ("No route info of this topic: ", NOT_FOUND_TOPIC_EXCEPTION),
    "selector": ("No route info for this topic, ", -1),  # DefaultMQProducerImpl.sendSelectImpl
}


@pytest.mark.parametrize("via", list(NO_ROUTE))
def test_a_topic_nobody_made_is_no_route_info(
    cluster: RocketMQCluster, driver: RouteDriver, spools: Path, via: str
) -> None:
    name = f"absent-{via}"
    _hooked(driver, spools, name, cluster.namesrv_addr(), poll_name_server_interval_ms=HOURLY)
    topic = _topic("Absent")
    (outcome,) = driver.send(name, topic, via=via)
    assert outcome.exception == "org.apache.rocketmq.client.exception.MQClientException"
    message, code = NO_ROUTE[via]
    assert str(outcome.message).startswith(message + topic), outcome
    assert outcome.response_code == code

    events = published(driver, spools, name)
    pulls = of(events, "route_pull", topic)
    # The topic's own route, then the template's for it: neither exists (auto-creation is off,
    # so no broker has TBW102). The client's periodic refresh, which may run at any time, can
    # have asked for the topic's own route once more.
    own = [(p["result"], p["queues"]) for p in pulls if not p["via_default"]]
    fallback = [(p["result"], p["queues"]) for p in pulls if p["via_default"]]
    assert own and set(map(str, own)) == {str(("TOPIC_NOT_EXIST", []))}, pulls
    assert fallback == [("TOPIC_NOT_EXIST", [])], pulls
    assert not pulls[0]["via_default"]
    assert {p["namesrv"] for p in pulls} == {cluster.namesrv_addr()}
    (send,) = of(events, "send", topic)
    assert (send["status"], send["broker"], send["queue_id"]) == ("NO_ROUTE_INFO", None, None)
    assert (send["default_topic"], send["default_topic_queue_nums"]) == ("TBW102", 4)
    (template_pull,) = [p for p in pulls if p["via_default"]]
    assert events.index(pulls[0]) < events.index(template_pull) < events.index(send)


@pytest.mark.parametrize("via", list(NO_ROUTE))
def test_no_namesrv_address_is_no_namesrv(
    cluster: RocketMQCluster, driver: RouteDriver, spools: Path, via: str
) -> None:
    name = f"nowhere-{via}"
    _hooked(driver, spools, name, None)
    topic = _topic("Nowhere")
    (outcome,) = driver.send(name, topic, via=via)
    # What the client throws (experiment 4): no request ever left it. 5.x names no address
    # where 4.9 said "null" (RemotingConnectException's "connect to " + addr + " failed").
    assert outcome.exception == "java.lang.IllegalStateException"
    address = "null" if cluster.major == 4 else ""
    assert str(outcome.message).endswith(f"RemotingConnectException: connect to {address} failed")

    events = published(driver, spools, name)
    (pull,) = of(events, "route_pull", topic)
    assert (pull["namesrv"], pull["result"], pull["queues"], pull["via_default"]) == (
        None,
        "NO_NAMESRV",
        [],
        False,
    )
    (send,) = of(events, "send", topic)
    assert (send["status"], send["broker"], send["queue_id"]) == ("NO_NAMESRV", None, None)
    assert events.index(pull) < events.index(send)


def test_an_unreachable_namesrv_is_not_mistaken_for_none(
    cluster: RocketMQCluster, driver: RouteDriver, spools: Path
) -> None:
    # An address where no NameServer listens: the client fails the send before any request
    # leaves it, as with no address, but this is not NO_NAMESRV; the contract has no status for
    # it, and nothing is written (docs/hook.md, what it cannot observe).
    _hooked(driver, spools, "unreachable", "127.0.0.1:1")
    topic = _topic("Unreachable")
    (outcome,) = driver.send("unreachable", topic)
    assert not outcome.ok and outcome.exception == "java.lang.IllegalStateException", outcome
    address = "[127.0.0.1:1]" if cluster.major == 4 else "127.0.0.1:1"
    assert str(outcome.message).endswith(f"connect to {address} failed"), outcome
    assert driver.hook_stats("unreachable", flush_ms=2_000)["accepted"] == 0


def _template_is_tbw102_whatever_the_key(
    events: list[dict[str, Any]], topic: str, key: str, outcomes: list[SendOutcome]
) -> None:
    """A 5.x client (5.1.1+) takes a new topic's template route from TBW102 whatever its
    ``createTopicKey`` (``MQClientAPIImpl.getDefaultTopicRouteInfoFromNameServer`` takes no
    topic, apache/rocketmq#6452): with auto-creation off no broker holds TBW102, so the send
    has no route, and the key the producer names (made by hand, or the cluster's topic with the
    inherit bit) is never asked for. The library writes the fallback pull (of TBW102, under the
    producer's key, as the model does) and the send ``NO_ROUTE_INFO``."""
    for outcome in outcomes:
        assert outcome.response_code == NOT_FOUND_TOPIC_EXCEPTION, outcome
        assert str(outcome.message).startswith(f"No route info of this topic: {topic}"), outcome
    fallback = [p for p in of(events, "route_pull", topic) if p["via_default"]]
    assert fallback and {(p["result"], p["create_topic_key"]) for p in fallback} == {
        ("TOPIC_NOT_EXIST", key)
    }, fallback
    sends = of(events, "send", topic)
    assert [(s["status"], s["broker"], s["default_topic"]) for s in sends] == [
        ("NO_ROUTE_INFO", None, key)
    ] * len(outcomes)


def test_a_template_without_inherit_is_refused_by_the_broker(
    cluster: RocketMQCluster, driver: RouteDriver, spools: Path
) -> None:
    # createTopicKey names a topic made by hand (perm 6, no inherit bit): the client takes its
    # route as the template, the broker refuses to create the topic from it.
    key = _topic("Plain")
    cluster.update_topic(key, cluster=CLUSTER, read_queues=2, write_queues=2)
    _hooked(
        driver,
        spools,
        "refused",
        cluster.namesrv_addr(),
        create_topic_key=key,
        poll_name_server_interval_ms=HOURLY,
        retry_times_when_send_failed=0,
    )
    topic = _topic("Refused")
    outcomes = driver.send("refused", topic, count=2)

    events = published(driver, spools, "refused")
    if cluster.major == 5:
        _template_is_tbw102_whatever_the_key(events, topic, key, outcomes)
        return
    sends = of(events, "send", topic)
    expected: list[tuple[str, str | None, int | None]] = []
    for outcome in outcomes:
        assert outcome.response_code == TOPIC_NOT_EXIST, outcome
        (cause,) = outcome.causes
        assert cause["responseCode"] == TOPIC_NOT_EXIST
        expected.append(("TOPIC_NOT_EXIST", broker_of(cluster, BROKERS, cause["brokerAddr"]), None))
    assert [(s["status"], s["broker"], None) for s in sends] == expected
    assert all(s["broker"] in BROKERS and s["queue_id"] in (0, 1) for s in sends)
    assert all((s["default_topic"], s["default_topic_queue_nums"]) == (key, 4) for s in sends)
    # Its fallback pull: the template's route, as the client takes it (min(4, 2) queues).
    pulls = [p for p in of(events, "route_pull", topic) if p["via_default"]]
    assert pulls and pulls[0]["result"] == "SUCCESS" and pulls[0]["create_topic_key"] == key
    assert sorted((q["broker"], q["write_queue_nums"], q["perm"]) for q in pulls[0]["queues"]) == [
        (b, 2, 6) for b in BROKERS
    ]


def test_a_template_with_inherit_auto_creates(
    cluster: RocketMQCluster, driver: RouteDriver, spools: Path
) -> None:
    # The topic named after the cluster has 16 queues and the inherit bit (experiment 11).
    _hooked(
        driver,
        spools,
        "inherit",
        cluster.namesrv_addr(),
        create_topic_key=CLUSTER,
        poll_name_server_interval_ms=HOURLY,
    )
    # Its first periodic refresh (10 ms after its start) must not swap the fallback route for
    # the topic's own right after the send: the hook writes that too, and AT_RISK would not open.
    driver.wait_for_first_refresh("inherit")
    topic = _topic("Inherit")
    (outcome,) = driver.send("inherit", topic)
    if cluster.major == 5:
        _template_is_tbw102_whatever_the_key(
            published(driver, spools, "inherit"), topic, CLUSTER, [outcome]
        )
        return
    assert outcome.ok, outcome
    events = published(driver, spools, "inherit")
    fallback = [p for p in of(events, "route_pull", topic) if p["via_default"]]
    assert len(fallback) == 1 and fallback[0]["result"] == "SUCCESS"
    template = cluster.route(CLUSTER)
    assert template is not None
    assert sorted(
        (q["broker"], q["read_queue_nums"], q["write_queue_nums"], q["perm"])
        for q in fallback[0]["queues"]
    ) == sorted((q.broker, 4, 4, q.perm) for q in template.queues)
    (send,) = of(events, "send", topic)
    assert (send["status"], send["broker"], send["queue_id"]) == (
        "SEND_OK",
        outcome.broker,
        outcome.queue_id,
    )
    assert send["default_topic"] == CLUSTER
    # The producer keeps the fallback route (its next refresh is an hour away).
    assert not [
        p
        for p in of(events, "route_pull", topic)
        if p["result"] == "SUCCESS" and not p["via_default"]
    ]


def test_an_unwritable_spool_neither_slows_nor_fails_sends(
    cluster: RocketMQCluster, driver: RouteDriver, spools: Path, tmp_path: Path
) -> None:
    topic = _topic("Down")
    cluster.update_topic(topic, cluster=CLUSTER, read_queues=4, write_queues=4)
    # A spool under a regular file: no directory can ever be made there (even as root).
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    down = HookSpec(spool_dir=blocker / "spool", cluster=CLUSTER, roll_interval_ms=50)
    driver.producer(ProducerSpec("down", cluster.namesrv_addr(), routewatch=down))
    _hooked(driver, spools, "up", cluster.namesrv_addr())
    driver.send("up", topic)  # both producers have the route and a connection to both brokers
    driver.send("down", topic)
    # Rounds of ten sends each, alternating, so that whatever else loads the machine (another
    # test's Spark, a GC) falls on both producers alike.
    rounds, per_round = 4, 10
    count = rounds * per_round
    up: list[SendOutcome] = []
    failing: list[SendOutcome] = []
    for _ in range(rounds):
        up += driver.send("up", topic, count=per_round)
        failing += driver.send("down", topic, count=per_round)
    assert all(o.ok for o in up + failing), up + failing

    # As fast: the writer never blocks a send (a blocked one would wait for its I/O). The
    # typical send is compared, not the sum, which one stalled send can double.
    def typical(outcomes: list[SendOutcome]) -> float:
        return statistics.median(o.elapsed_ms for o in outcomes)

    assert typical(failing) <= 2 * typical(up) + 5, (
        [o.elapsed_ms for o in failing],
        [o.elapsed_ms for o in up],
    )
    stats = driver.hook_stats("down", flush_ms=5_000)
    assert stats["written"] == 0 and stats["files"] == 0, stats
    # Every event dropped and counted: at least one send event per message, and the pulls.
    assert stats["droppedUnwritable"] == stats["dropped"] >= count + 1, stats
    assert not blocker.read_text()
    # Logged once (the first report comes at once, the next after the log interval).
    err = (cluster.workdir / "hook-driver" / "driver.err").read_text()
    assert err.count("routewatch hook: dropped") == 1, err
    assert "cannot write to the spool directory" in err


def test_the_job_evaluates_the_spools(
    cluster: RocketMQCluster, spools: Path, collector: Collector
) -> None:
    """The producers' events above and the collector's heartbeats, through the job's step:
    client events alone open ``NO_ROUTE_INFO`` (cause ``NO_NAMESRV``) and ``SEND_REJECTED``;
    with the brokers' registrations, ``NO_ROUTE_INFO``'s cause ``AUTO_CREATE_DISABLED`` and
    ``AT_RISK`` (a fallback route over both brokers, the topic created on one) are judged too.
    On 5.x the two template topics have no route (the template is TBW102's, which no broker
    holds): ``NO_ROUTE_INFO``, cause ``AUTO_CREATE_DISABLED``, for both."""
    final = evaluate_spools(spools, collector, CLUSTER)
    alerts = [a.to_dict() for a in final]

    def kinds(prefix: str) -> list[tuple[str, str | None]]:
        return sorted((a["kind"], a["cause"]) for a in alerts if str(a["topic"]).startswith(prefix))

    # one topic per way of sending (NO_ROUTE)
    assert kinds("Nowhere_") == [("NO_ROUTE_INFO", "NO_NAMESRV")] * len(NO_ROUTE)
    assert kinds("Absent_") == [("NO_ROUTE_INFO", "AUTO_CREATE_DISABLED")] * len(NO_ROUTE)
    if cluster.major == 5:  # the template is TBW102's whatever the key, and no broker holds it
        assert kinds("Refused_") == [("NO_ROUTE_INFO", "AUTO_CREATE_DISABLED")]
        assert kinds("Inherit_") == [("NO_ROUTE_INFO", "AUTO_CREATE_DISABLED")]
        assert not [a for a in alerts if a["kind"] == "AT_RISK"]
        return
    assert kinds("Refused_") == [("SEND_REJECTED", None)]
    (rejected,) = [a for a in alerts if str(a["topic"]).startswith("Refused_")]
    assert set(rejected["evidence"]["brokers"]) <= set(BROKERS)
    assert rejected["evidence"]["refusals"] == 2
    # The topic auto-created from the cluster's topic: on one broker of the two its fallback
    # route spans (PARTIAL_COVERAGE follows 60 s later, if the module ran that long).
    assert ("AT_RISK", None) in kinds("Inherit_")
    (risk,) = [a for a in alerts if a["kind"] == "AT_RISK"]
    assert str(risk["topic"]).startswith("Inherit_")
