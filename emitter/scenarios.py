"""The scenario library: named deployments and scripts, each with the alerts it must end with.

Every scenario runs on one cluster, ``DefaultCluster``, with brokers ``broker-a`` and
``broker-b`` (masters) unless it says otherwise (``cluster-falls-silent`` adds ``ClusterB``),
one NameServer, and clients started at time 0 (so a producer refreshes its routes at 0.01 s,
30.01 s, 60.01 s, ...). Times are seconds from the start. The expected alerts are those a
correct monitor (``docs/alerts.md``) holds at the end of the trace, open or resolved, in every
cluster; they hold for every seed, because each script places its sends relative to the
refresh timer, not at random (or, like ``at-risk-topic-left-on-no-broker``, acts on whichever
broker the random queue choice picked).
"""

from __future__ import annotations

import dataclasses
import functools
import heapq
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

from emitter.broker import Broker
from emitter.versions import BEFORE_4_8, ROCKETMQ_4, Release
from emitter.world import DEFAULT_CLUSTER, World
from routewatch.alerts import AlertKind, AlertState, NoRouteCause, Severity
from routewatch.events import Event
from routewatch.rocketmq import PERM_READ, PERM_WRITE, TBW102

__all__ = ["SCENARIOS", "ExpectedAlert", "Scenario", "on_clusters", "scenario_names"]


@dataclass(frozen=True, slots=True)
class ExpectedAlert:
    """One alert a correct monitor ends with, in the terms of the alert catalogue."""

    kind: AlertKind
    state: AlertState
    severity: Severity
    topic: str | None = None
    broker: str | None = None
    broker_id: int | None = None
    cause: NoRouteCause | None = None
    cluster: str = DEFAULT_CLUSTER


@dataclass(frozen=True)
class Scenario:
    """A named script over a :class:`World`, run for ``duration_s`` seconds. ``expected`` are
    the alerts it ends with under every release line's behaviour, unless ``expected_on_5``
    says what it ends with under 5.x's (:mod:`emitter.versions`)."""

    name: str
    summary: str
    duration_s: int
    script: Callable[[World], None]
    expected: tuple[ExpectedAlert, ...] = field(default=())
    expected_on_5: tuple[ExpectedAlert, ...] | None = None

    def expected_under(self, version: Release = ROCKETMQ_4) -> tuple[ExpectedAlert, ...]:
        """The alerts a correct monitor ends with when the scenario runs under ``version``."""
        if version[0] >= 5 and self.expected_on_5 is not None:
            return self.expected_on_5
        return self.expected

    def world(
        self,
        seed: int = 0,
        sink: Callable[[Event], None] | None = None,
        version: Release = ROCKETMQ_4,
    ) -> World:
        """The scenario's world under RocketMQ ``version``'s behaviour, scripted but not run."""
        world = World(seed, sink=sink, version=version)
        self.script(world)
        return world

    def run(
        self,
        seed: int = 0,
        sink: Callable[[Event], None] | None = None,
        version: Release = ROCKETMQ_4,
    ) -> list[Event]:
        """Run the whole scenario; returns its events (empty when ``sink`` takes them)."""
        return self.world(seed, sink, version).run(self.duration_s)


SCENARIOS: dict[str, Scenario] = {}


def scenario_names() -> list[str]:
    return list(SCENARIOS)


def on_clusters(scenarios: Mapping[str, str], first_seed: int) -> list[Event]:
    """Scenarios run side by side, each on a cluster of its own (``{cluster: scenario}``, seeds
    counting up from ``first_seed``), merged in event-time order."""

    def on_cluster(cluster: str, name: str, seed: int) -> Iterator[Event]:
        for event in SCENARIOS[name].run(seed=seed):
            yield dataclasses.replace(event, cluster=cluster)

    streams = [
        on_cluster(c, name, seed) for seed, (c, name) in enumerate(scenarios.items(), first_seed)
    ]
    return list(heapq.merge(*streams, key=lambda e: e.ts))


def _scenario(
    name: str,
    duration_s: int,
    *expected: ExpectedAlert,
    on_5: tuple[ExpectedAlert, ...] | None = None,
) -> Callable[[Callable[[World], None]], Callable[[World], None]]:
    def register(script: Callable[[World], None]) -> Callable[[World], None]:
        summary = (script.__doc__ or "").strip().splitlines()[0]
        SCENARIOS[name] = Scenario(name, summary, duration_s, script, tuple(expected), on_5)
        return script

    return register


def _two_brokers(
    w: World,
    *,
    auto_create: bool = True,
    namesrvs: int = 1,
    version: Release | None = None,
) -> None:
    for _ in range(namesrvs):
        w.add_namesrv()
    w.add_broker("broker-a", auto_create=auto_create, version=version)
    w.add_broker("broker-b", auto_create=auto_create, version=version)


T = "TopicA"


def _stuck(topic: str = T, *, at_risk: bool = True) -> tuple[ExpectedAlert, ...]:
    out: tuple[ExpectedAlert, ...] = (
        ExpectedAlert("PARTIAL_COVERAGE", "open", "critical", topic=topic),
    )
    if at_risk:
        out += (ExpectedAlert("AT_RISK", "resolved", "warning", topic=topic),)
    return out


@_scenario("one-send-then-silence", 300, *_stuck())
def one_send_then_silence(w: World) -> None:
    """One send to a new topic at 5 s, then nothing: after the 30 s refresh it stays on one broker.

    The template route covers both brokers for 25 s while only one holds the topic (AT_RISK),
    then the refresh collapses it (PARTIAL_COVERAGE, critical: k = 1).
    """
    _two_brokers(w)
    p = w.add_producer()
    w.at(5, lambda: p.send(T))


@_scenario("burst-of-nine", 300)
def burst_of_nine(w: World) -> None:
    """Nine sends 1 ms apart at 5 s: round-robin over 8 template queues reaches both brokers."""
    _two_brokers(w)
    p = w.add_producer()
    w.every(0.001, lambda: p.send(T), 5, 5.008)


@_scenario("trickle-slower-than-refresh", 300, *_stuck())
def trickle(w: World) -> None:
    """One send every 40 s from 5 s: the first refresh comes before a second send, so the topic
    stays on the one broker the first send reached."""
    _two_brokers(w)
    p = w.add_producer()
    w.every(40, lambda: p.send(T), 5, 290)


@_scenario(
    "auto-create-off-topic-missing",
    200,
    ExpectedAlert("NO_ROUTE_INFO", "open", "critical", topic=T, cause="AUTO_CREATE_DISABLED"),
)
def auto_create_off(w: World) -> None:
    """Brokers run with autoCreateTopicEnable=false and nobody created the topic: every send
    fails with "No route info of this topic"."""
    _two_brokers(w, auto_create=False)
    p = w.add_producer()
    w.every(10, lambda: p.send(T), 5, 195)


@_scenario(
    "no-namesrv-address",
    200,
    ExpectedAlert("NO_ROUTE_INFO", "open", "critical", topic=T, cause="NO_NAMESRV"),
)
def no_namesrv(w: World) -> None:
    """A producer configured with no NameServer address: its pulls and sends fail with
    NO_NAMESRV, while the brokers are healthy."""
    _two_brokers(w)
    p = w.add_producer(namesrvs=[])
    w.every(10, lambda: p.send(T), 5, 195)


@_scenario(
    "create-topic-key-mismatch",
    200,
    ExpectedAlert("NO_ROUTE_INFO", "open", "critical", topic=T, cause="CREATE_TOPIC_KEY_MISMATCH"),
    on_5=(ExpectedAlert("SEND_REJECTED", "open", "warning", topic=T),),
)
def create_topic_key_mismatch(w: World) -> None:
    """A 4.3.0-style client whose createTopicKey is AUTO_CREATE_TOPIC_KEY, which no broker has,
    while the brokers do report TBW102: its fallback pull fails.

    A 5.x client (5.1.1+) takes TBW102's route as the template whatever its key, so its sends
    reach the brokers, which refuse them (no topic named by the key to create from):
    ``SEND_REJECTED`` in place of ``NO_ROUTE_INFO``.
    """
    _two_brokers(w)
    p = w.add_producer(create_topic_key="AUTO_CREATE_TOPIC_KEY")
    w.every(10, lambda: p.send(T), 5, 195)


@_scenario(
    "tbw102-deleted-one-broker",
    300,
    ExpectedAlert("TEMPLATE_MISSING", "open", "warning", broker="broker-a", broker_id=0),
    ExpectedAlert("STALE_ROUTE", "open", "warning", topic=TBW102),
    *_stuck(),
    ExpectedAlert("SEND_REJECTED", "resolved", "warning", topic=T),
)
def tbw102_deleted_one(w: World) -> None:
    """TBW102 deleted on broker-a only, at 1 s, on brokers before 4.8.0 (later ones refuse to
    delete it): broker-a's registrations lack it from 10 s, but the NameServer keeps routing
    TBW102 to broker-a (a registration never removes a topic), so producers still try broker-a
    for a new topic, are refused there (TOPIC_NOT_EXIST) and retry on broker-b: the topic lands
    only on broker-b (STALE_ROUTE: TBW102 routed to broker-a, which does not hold it). Five quick
    sends at 20 s reach broker-a at least once, whatever the rotation's random start."""
    _two_brokers(w, version=BEFORE_4_8)
    p = w.add_producer()
    w.at(1, lambda: w.broker("broker-a").delete_topic(TBW102))
    w.every(0.001, lambda: p.send(T), 20, 20.004)
    w.every(10, lambda: p.send(T), 30, 290)


@_scenario(
    "tbw102-deleted-all-brokers",
    200,
    ExpectedAlert("TEMPLATE_MISSING", "open", "warning", broker="broker-a", broker_id=0),
    ExpectedAlert("TEMPLATE_MISSING", "open", "warning", broker="broker-b", broker_id=0),
    ExpectedAlert("NO_ROUTE_INFO", "open", "critical", topic=T, cause="TEMPLATE_MISSING"),
)
def tbw102_deleted_all(w: World) -> None:
    """TBW102 deleted cluster-wide (mqadmin deleteTopic, at 1 s) on brokers before 4.8.0 (later
    ones refuse) that still have auto-creation on: new topics get no route at all."""
    _two_brokers(w, version=BEFORE_4_8)
    p = w.add_producer()
    w.at(1, lambda: w.delete_topic(TBW102))
    w.every(10, lambda: p.send(T), 20, 195)


@_scenario(
    "restarted-auto-create-off-stale-tbw102",
    300,
    *_stuck(),
    ExpectedAlert("SEND_REJECTED", "resolved", "warning", topic=T),
)
def restarted_stale_tbw102(w: World) -> None:
    """broker-b restarts at 3 s with autoCreateTopicEnable=false, keeping TBW102 from its
    topics.json (written when OrdersTopic was created at 1 s): producers still get it in the
    template route, and broker-b refuses their sends (TOPIC_NOT_EXIST) until the 30 s refresh;
    the refusals stop, so SEND_REJECTED resolves."""
    _two_brokers(w)
    w.at(1, lambda: w.create_topic("OrdersTopic", 8))
    p = w.add_producer()
    b = w.broker("broker-b")
    w.at(2, b.kill)
    w.at(3, lambda: b.start(auto_create=False))
    w.every(1, lambda: p.send(T), 5, 60)


@_scenario(
    "mixed-auto-create",
    300,
    ExpectedAlert("PARTIAL_COVERAGE", "open", "critical", topic=T),
)
def mixed_auto_create(w: World) -> None:
    """broker-a has auto-creation on, broker-b (fresh) has it off and no TBW102: the template
    route names broker-a alone, so new topics land only there."""
    w.add_namesrv()
    w.add_broker("broker-a", auto_create=True)
    w.add_broker("broker-b", auto_create=False)
    p = w.add_producer()
    w.every(5, lambda: p.send(T), 5, 295)


@_scenario("manual-creation-healthy", 300)
def manual_creation(w: World) -> None:
    """The healthy baseline: consumers subscribe first, the topic is created on every broker
    with mqadmin at 1 s, then a producer sends every second."""
    _two_brokers(w)
    w.add_consumer("consumer-group", [T])
    w.at(1, lambda: w.create_topic(T, 8))
    p = w.add_producer()
    w.every(1, lambda: p.send(T), 5, 295)


@_scenario(
    "queue-skew",
    120,
    ExpectedAlert("QUEUE_SKEW", "open", "info", topic=T),
    ExpectedAlert("QUEUE_SKEW", "open", "info", topic="TopicB"),
)
def queue_skew(w: World) -> None:
    """TopicA has 8 write queues on broker-a and 4 on broker-b; TopicB has 8 read and 4 write
    queues on both."""
    _two_brokers(w)
    w.at(1, lambda: w.broker("broker-a").upsert_topic(T, 8, 8))
    w.at(1, lambda: w.broker("broker-b").upsert_topic(T, 4, 4))
    w.at(1, lambda: w.create_topic("TopicB", 4, read=8))


@_scenario(
    "broker-dies",
    300,
    ExpectedAlert("BROKER_EXPIRED", "open", "critical", broker="broker-b", broker_id=0),
    ExpectedAlert("PARTIAL_COVERAGE", "open", "critical", topic="TopicOnlyB"),
)
def broker_dies(w: World) -> None:
    """broker-b dies at 60 s (last registration at 40 s) and expires at 160 s; TopicOnlyB,
    which lived only there, is left with no route at all.

    TopicOnlyB, made on broker-b alone (mqadmin updateTopic -b) at 1 s with the config a
    template gives, looks auto-created from the broker side (emitter/inference.py):
    PARTIAL_COVERAGE opens at 61 s, inferred, its remedy saying to silence it if deliberate.
    """
    _two_brokers(w)
    w.at(1, lambda: w.create_topic(T, 4))
    w.at(1, lambda: w.broker("broker-b").upsert_topic("TopicOnlyB", 4, 4))
    p = w.add_producer()
    w.every(5, lambda: p.send(T), 5, 295)
    w.at(60, w.broker("broker-b").die)


@_scenario("broker-clean-shutdown", 300)
def broker_shutdown(w: World) -> None:
    """broker-b shuts down cleanly at 60 s: it unregisters, so it must not be reported as
    expired, and the topic it shared stays covered by the live broker."""
    _two_brokers(w)
    w.at(1, lambda: w.create_topic(T, 4))
    p = w.add_producer()
    w.every(5, lambda: p.send(T), 5, 295)
    w.at(60, w.broker("broker-b").shutdown)


@_scenario(
    "namesrv-registration-lost",
    300,
    ExpectedAlert("NAMESRV_DIVERGENCE", "open", "warning", broker="broker-b", broker_id=0),
)
def namesrv_lost(w: World) -> None:
    """Two NameServers; broker-b's registrations to the second stop at 50 s (last at 40 s): it
    leaves that NameServer at 160 s and the two disagree from then on."""
    _two_brokers(w, namesrvs=2)
    w.at(1, lambda: w.create_topic(T, 4))
    w.at(50, lambda: w.broker("broker-b").lose_namesrv("10.0.0.101:9876"))


@_scenario(
    "broker-joins-late",
    300,
    ExpectedAlert("PARTIAL_COVERAGE", "open", "warning", topic=T),
)
def broker_joins_late(w: World) -> None:
    """A burst auto-creates the topic on both brokers at 5 s; broker-c joins at 100 s and never
    gets it: 2 of 3 expected brokers (warning)."""
    _two_brokers(w)
    p = w.add_producer()
    w.every(0.001, lambda: p.send(T), 5, 5.008)
    w.at(100, lambda: w.add_broker("broker-c"))


@_scenario("system-topics-one-broker", 200)
def system_topics(w: World) -> None:
    """RocketMQ's own topics on one broker only, some with skewed queues, and a retry topic
    auto-created by one send: none of them is a coverage or skew problem."""
    _two_brokers(w)
    a = w.broker("broker-a")
    rw = PERM_READ | PERM_WRITE
    for topic, read, write in [
        ("SCHEDULE_TOPIC_XXXX", 18, 18),
        ("RMQ_SYS_TRACE_TOPIC", 1, 1),
        ("rmq_sys_wheel_timer", 8, 4),
        ("%DLQ%consumer-group", 1, 2),
        ("BenchmarkTest", 1024, 1024),
        ("OFFSET_MOVED_EVENT", 1, 1),
        ("SELF_TEST_TOPIC", 1, 1),
        ("TRANS_CHECK_MAX_TIME_TOPIC", 1, 1),
        (DEFAULT_CLUSTER, 16, 16),
        ("broker-a", 1, 1),
    ]:
        w.at(1, functools.partial(a.upsert_topic, topic, read, write, rw))
    p = w.add_producer()
    w.at(5, lambda: p.send("%RETRY%consumer-group"))


@_scenario(
    "topic-created-after-no-route",
    300,
    ExpectedAlert("NO_ROUTE_INFO", "resolved", "critical", topic=T, cause="AUTO_CREATE_DISABLED"),
)
def created_after_no_route(w: World) -> None:
    """Auto-creation off: sends fail until the operator creates the topic at 50 s; the next
    send succeeds and the alert resolves."""
    _two_brokers(w, auto_create=False)
    p = w.add_producer()
    w.every(5, lambda: p.send(T), 5, 295)
    w.at(50, lambda: w.create_topic(T, 4))


@_scenario(
    "no-live-broker",
    300,
    ExpectedAlert("BROKER_EXPIRED", "open", "critical", broker="broker-a", broker_id=0),
    ExpectedAlert("BROKER_EXPIRED", "open", "critical", broker="broker-b", broker_id=0),
    ExpectedAlert("NO_ROUTE_INFO", "open", "critical", topic=T, cause="NO_LIVE_BROKER"),
)
def no_live_broker(w: World) -> None:
    """Both brokers die at 20 s (last registrations at 10 s) and expire at 130 s; sends to a new
    topic from 200 s get no route."""
    _two_brokers(w)
    p = w.add_producer()
    w.at(20, w.broker("broker-a").die)
    w.at(20, w.broker("broker-b").die)
    w.every(10, lambda: p.send(T), 200, 295)


@_scenario(
    "cluster-falls-silent",
    300,
    ExpectedAlert(
        "BROKER_EXPIRED", "open", "critical", broker="broker-c", broker_id=0, cluster="ClusterB"
    ),
    ExpectedAlert(
        "BROKER_EXPIRED", "open", "critical", broker="broker-d", broker_id=0, cluster="ClusterB"
    ),
)
def cluster_falls_silent(w: World) -> None:
    """Two clusters share two NameServers; ClusterB's brokers are all killed at 60 s while
    DefaultCluster keeps registering and sending: ClusterB's brokers expire at 160 s.

    ClusterB (broker-c, broker-d, TopicB; no client reports to the monitor) sends no event
    after its last registrations at 40 s, so only DefaultCluster's events carry time past
    40 s + 120 s: the monitor keeps one clock for the whole stream, not one per cluster.
    """
    _two_brokers(w, namesrvs=2)
    silent = [w.add_broker(name, cluster="ClusterB") for name in ("broker-c", "broker-d")]
    w.at(1, lambda: w.create_topic(T, 8))
    w.at(1, lambda: w.create_topic("TopicB", 8, cluster="ClusterB"))
    p = w.add_producer()
    w.every(5, lambda: p.send(T), 5, 295)
    for broker in silent:
        w.at(60, broker.die)


@_scenario(
    "broker-restarts-with-lost-store",
    200,
    ExpectedAlert("PARTIAL_COVERAGE", "open", "critical", topic=T),
    ExpectedAlert("NAMESRV_DIVERGENCE", "open", "warning", broker="broker-b", broker_id=0),
)
def restart_with_lost_store(w: World) -> None:
    """broker-b shuts down cleanly at 50 s and comes back at 70 s with its store lost: TopicA,
    auto-created on both brokers at 5 s, is now on broker-a only, for good.

    Two NameServers; the second cannot be reached from broker-b from 60 s to 85 s, so broker-b's
    first registration there after its shutdown is the immediate one of OrdersTopic, which the
    operator re-creates on broker-b by hand at 90 s; its first full one there is at 110 s. The
    shutdown emptied broker-b's table on that NameServer: from 90 s it lists OrdersTopic alone,
    not the table from before the shutdown (which held TopicA), so the coverage alert opened at
    70 s stays open. The two NameServers route broker-b different tables for good (the second
    OrdersTopic alone: the full registrations carry the data version it already has), so
    NAMESRV_DIVERGENCE, open from 70 s (registered on one NameServer only), stays open, naming
    the topics the second lacks. (OrdersTopic, made on both brokers at once at 1 s, is not
    taken for an auto-created topic by the broker side: on broker-a alone from 70 s to 90 s,
    it raises nothing.)
    """
    _two_brokers(w, namesrvs=2)
    b = w.broker("broker-b")
    second = list(w.namesrvs)[1]
    w.at(1, lambda: w.create_topic("OrdersTopic", 8))
    p = w.add_producer()
    w.every(0.001, lambda: p.send(T), 5, 5.008)
    w.every(5, lambda: p.send(T), 20, 195)
    w.at(50, b.shutdown)
    w.at(60, lambda: b.lose_namesrv(second))
    w.at(70, lambda: b.start(keep_store=False))
    w.at(85, lambda: b.regain_namesrv(second))
    w.at(90, lambda: b.upsert_topic("OrdersTopic", 8, 8))


@_scenario("broker-restarts-keeping-its-store", 200)
def restart_keeping_store(w: World) -> None:
    """broker-b shuts down cleanly at 50 s and starts again at 70 s with its store: its first
    registration carries its whole table again, under the data version it had before the
    shutdown, and TopicA (auto-created on both brokers at 5 s) is on both again."""
    _two_brokers(w)
    b = w.broker("broker-b")
    p = w.add_producer()
    w.every(0.001, lambda: p.send(T), 5, 5.008)
    w.every(5, lambda: p.send(T), 20, 195)
    w.at(50, b.shutdown)
    w.at(70, b.start)


@_scenario(
    "master-slave-queue-skew",
    120,
    ExpectedAlert("QUEUE_SKEW", "open", "info", topic=T),
    ExpectedAlert("PARTIAL_COVERAGE", "open", "critical", topic=T),
)
def master_slave_skew(w: World) -> None:
    """broker-a's slave (id 1) stops reaching its master at 20 s; at 30 s TopicA goes from 4 to
    8 queues on broker-a: the master registers 8 write queues, its slave 4, for good.

    TopicA is created on broker-a alone (mqadmin updateTopic -b) at 1 s with 4 queues; the
    slave copies its master's table at 3 s and 13 s (every 10 s) and registers it from 10 s.
    Routes list broker-a once, with the master's counts: the skew is only in the registrations.
    On broker-a alone with the config a template gives, TopicA looks auto-created from the
    broker side: PARTIAL_COVERAGE (inferred) opens at 61 s.
    """
    _two_brokers(w)
    slave = w.add_broker("broker-a", broker_id=1)
    master = w.broker("broker-a")
    w.at(1, lambda: master.upsert_topic(T, 4, 4))
    w.at(20, slave.lose_master)
    w.at(30, lambda: master.upsert_topic(T, 8, 8))


def _holder(w: World, topic: str) -> Broker:
    """The first master (by name) whose table holds ``topic``."""
    return next(b for b in w.masters() if topic in b.topics)


@_scenario(
    "at-risk-topic-left-on-no-broker",
    200,
    ExpectedAlert("AT_RISK", "open", "warning", topic=T),
)
def at_risk_left_on_no_broker(w: World) -> None:
    """One send to a new topic at 5 s lands on one broker, which shuts down cleanly at 20 s,
    before the producer's refresh: the topic is on no broker, and AT_RISK stays open.

    AT_RISK opens at 10 s (1 of the 2 brokers of the template route for 5 s). From 20 s no
    broker holds the topic; the producer's refreshes of it (30.01 s, 60.01 s, ...) fail with
    TOPIC_NOT_EXIST, so it keeps its template route over both brokers: the race is still on
    (its next send would create the topic wherever it lands). PARTIAL_COVERAGE never opens:
    when the coverage settles (60 s after the auto-creation), no broker holds the topic.
    """
    _two_brokers(w)
    p = w.add_producer()
    w.at(5, lambda: p.send(T))
    w.at(20, lambda: _holder(w, T).shutdown())


@_scenario(
    "broker-side-auto-created",
    200,
    ExpectedAlert("PARTIAL_COVERAGE", "open", "critical", topic="BeforeTopic"),
    ExpectedAlert("PARTIAL_COVERAGE", "open", "critical", topic="OneBrokerTopic"),
    ExpectedAlert("PARTIAL_COVERAGE", "open", "critical", topic="StuckTopic"),
)
def broker_side_auto_created(w: World) -> None:
    """Only the broker side is observed (routewatch collect, from 20 s): topics left on one
    broker by a plain producer, found from their configs — the real cluster's twin
    (tests/emitter/collect/test_collect_auto_created.py).

    A producer's one send to BeforeTopic at 5 s, before the collector starts, leaves it on one
    broker: found at the collector's start (20 s), settled at once. At 40 s the operator makes
    ClusterTopic on both brokers (updateTopic -c: nothing) and OneBrokerTopic on broker-a
    alone (updateTopic -b, the config a template gives: found while watching, PARTIAL_COVERAGE
    at 100 s, its remedy saying to silence it if deliberate). One send to StuckTopic at 45 s
    leaves it on one broker: PARTIAL_COVERAGE at 105 s, 60 s after the collector first saw it.
    No client event is written.
    """
    w.observe_broker_side_only(from_s=20)
    _two_brokers(w)
    p = w.add_producer()
    w.at(5, lambda: p.send("BeforeTopic"))
    w.at(40, lambda: w.create_topic("ClusterTopic", 8))
    w.at(40, lambda: w.broker("broker-a").upsert_topic("OneBrokerTopic", 8, 8))
    w.at(45, lambda: p.send("StuckTopic"))


@_scenario(
    "broker-side-alerts",
    300,
    ExpectedAlert("QUEUE_SKEW", "open", "info", topic="SkewTopic"),
    ExpectedAlert("PARTIAL_COVERAGE", "resolved", "warning", topic="SkewTopic"),
    ExpectedAlert("PARTIAL_COVERAGE", "open", "critical", topic="StuckTopic"),
    ExpectedAlert("TEMPLATE_MISSING", "open", "warning", broker="broker-c", broker_id=0),
    ExpectedAlert("NAMESRV_DIVERGENCE", "open", "warning", broker="broker-c", broker_id=0),
    ExpectedAlert("BROKER_EXPIRED", "open", "critical", broker="broker-b", broker_id=0),
)
def broker_side_alerts(w: World) -> None:
    """Every alert the broker side alone raises (routewatch collect, no client event) — the
    real cluster's twin (tests/emitter/collect/test_collect_rocketmq.py).

    Two NameServers; broker-a and broker-b register with both, broker-c (auto-creation off, so
    no TBW102) with the first only: NAMESRV_DIVERGENCE from 60 s. At 20 s SkewTopic is made
    with 8 queues on broker-a and 4 on broker-c (updateTopic -b): QUEUE_SKEW, and, as it looks
    auto-created on broker-a, PARTIAL_COVERAGE (2 of 3, warning) at 80 s. broker-c's
    auto-creation is turned on at run time (TEMPLATE_MISSING: it has no TBW102). One send to
    StuckTopic at 25 s leaves it on one broker (PARTIAL_COVERAGE at 85 s, critical). broker-b
    is killed at 30 s and expires at 130 s (its last registration at 10 s): SkewTopic is then
    on both masters left, and its PARTIAL_COVERAGE resolves.
    """
    w.observe_broker_side_only()
    first = w.add_namesrv().addr
    w.add_namesrv()
    w.add_broker("broker-a")
    w.add_broker("broker-b")
    c = w.add_broker("broker-c", namesrvs=[first], auto_create=False)
    p = w.add_producer()
    w.at(20, lambda: w.broker("broker-a").upsert_topic("SkewTopic", 8, 8))
    w.at(20, lambda: c.upsert_topic("SkewTopic", 4, 4))
    w.at(20, lambda: c.update_auto_create(True))
    w.at(25, lambda: p.send("StuckTopic"))
    w.at(30, w.broker("broker-b").kill)


@_scenario(
    "write-perm-wiped",
    330,
    ExpectedAlert("PARTIAL_COVERAGE", "open", "critical", topic="StuckTopic"),
)
def write_perm_wiped(w: World) -> None:
    """A broker's write permission wiped and given back on the NameServer (``mqadmin
    wipeWritePerm``, then ``addWritePerm``), seen from the broker side alone.

    One send to StuckTopic at 5 s leaves it on one broker (PARTIAL_COVERAGE, 1 of 2, critical,
    at 65 s); a burst at 5 s puts BurstTopic on both. At 120 s the write permission of the
    broker holding StuckTopic is wiped: no producer can send there, so StuckTopic is on none of
    the 1 writable broker left (0 of 1), while BurstTopic, on every writable broker, stays
    quiet — a read-only broker is not expected to take topics. At 220 s addWritePerm gives it
    back: StuckTopic is on 1 of 2 again.
    """
    w.observe_broker_side_only()
    _two_brokers(w)
    p = w.add_producer()
    w.at(5, lambda: p.send("StuckTopic"))
    w.every(0.001, lambda: p.send("BurstTopic"), 5, 5.008)

    def holder() -> str:
        return next(b.name for b in w.masters() if "StuckTopic" in b.topics)

    w.at(120, lambda: w.wipe_write_perm(holder()))
    w.at(220, lambda: w.add_write_perm(holder()))


@_scenario(
    "demo-mixed",
    300,
    ExpectedAlert("PARTIAL_COVERAGE", "open", "critical", topic="StuckTopic"),
    ExpectedAlert("AT_RISK", "resolved", "warning", topic="StuckTopic"),
    ExpectedAlert("NO_ROUTE_INFO", "open", "critical", topic="OrdersTopic", cause="NO_NAMESRV"),
    ExpectedAlert("BROKER_EXPIRED", "open", "critical", broker="broker-c", broker_id=0),
)
def demo_mixed(w: World) -> None:
    """The demo: healthy topics on three brokers, a topic stuck on one broker after a single
    auto-creating send, a client with no NameServer address, and broker-c dying at 60 s."""
    w.add_namesrv()
    w.add_namesrv()
    for name in ("broker-a", "broker-b", "broker-c"):
        w.add_broker(name)
    for topic in ("PaymentsTopic", "ShippingTopic"):
        w.at(1, functools.partial(w.create_topic, topic, 8))
    healthy = w.add_producer("payments-producer")
    w.add_consumer("payments-consumer", ["PaymentsTopic", "ShippingTopic"])
    w.every(1, lambda: healthy.send("PaymentsTopic"), 5, 295)
    w.every(2, lambda: healthy.send("ShippingTopic"), 5, 295)
    stuck = w.add_producer("stuck-producer")
    w.at(5, lambda: stuck.send("StuckTopic"))
    lost = w.add_producer("orders-producer", namesrvs=[])
    w.every(10, lambda: lost.send("OrdersTopic"), 20, 295)
    w.at(60, w.broker("broker-c").die)
