"""Faithfulness: each claim the model makes of RocketMQ (docs/emitter.md), checked on it."""

from __future__ import annotations

import functools

import pytest

from emitter.broker import Broker
from emitter.versions import ROCKETMQ_4, ROCKETMQ_5, Release
from emitter.world import World
from routewatch.events import Event, Heartbeat, QueueData, RoutePull, Send, TopicConfig
from routewatch.rocketmq import TBW102

T = "TopicA"


def _world(
    seed: int = 0,
    *,
    auto_create: bool = True,
    namesrvs: int = 1,
    version: Release = ROCKETMQ_4,
    broker_version: Release | None = None,
) -> World:
    w = World(seed, version=version)
    for _ in range(namesrvs):
        w.add_namesrv()
    w.add_broker("broker-a", auto_create=auto_create, version=broker_version)
    w.add_broker("broker-b", auto_create=auto_create, version=broker_version)
    return w


def _route_brokers(w: World, topic: str = T, i: int = 0) -> list[str]:
    route = list(w.namesrvs.values())[i].route(topic)
    return [] if route is None else [q.broker for q in route]


def _of(events: list[Event], kind: type) -> list:  # type: ignore[type-arg]
    return [e for e in events if isinstance(e, kind)]


def test_brokers_register_at_start_then_10s_later_then_every_30s() -> None:
    w = _world()
    events = w.run(100)

    times = sorted(
        {(e.ts - w.sim.start_ms) // 1000 for e in _of(events, Heartbeat) if e.broker == "broker-a"}
    )
    assert times == [0, 10, 40, 70, 100]


def test_producers_refresh_their_routes_every_30s_from_10ms_after_start() -> None:
    w = _world()
    w.add_producer()
    events = w.run(95)

    pulls = [e.ts - w.sim.start_ms for e in _of(events, RoutePull)]
    assert pulls == [10, 30_010, 60_010, 90_010]


def test_an_auto_created_topic_gets_4_queues_per_broker_with_two_brokers() -> None:
    w = _world()
    p = w.add_producer()
    w.every(0.001, lambda: p.send(T), 5, 5.008)
    events = w.run(40)

    template = next(e for e in _of(events, RoutePull) if e.via_default)
    assert [(q.broker, q.write_queue_nums) for q in template.queues] == [
        ("broker-a", 4),
        ("broker-b", 4),
    ]
    route = next(iter(w.namesrvs.values())).route(T)
    assert route is not None
    assert [(q.broker, q.read_queue_nums, q.write_queue_nums, q.perm) for q in route] == [
        ("broker-a", 4, 4, 6),
        ("broker-b", 4, 4, 6),
    ]


@pytest.mark.parametrize("version", [ROCKETMQ_4, ROCKETMQ_5], ids=["rocketmq4", "rocketmq5"])
def test_after_auto_creating_a_4x_broker_registers_its_table_and_a_5x_broker_the_topic(
    version: Release,
) -> None:
    """A 4.x broker registers its whole table at once (``registerBrokerAll``), a 5.x broker
    the new topic alone under its new data version (``registerIncrementBrokerData``): the
    NameServer then skips the next full registration (same version), so the TBW102 that lost
    its inherit bit in memory reaches it on 4.x only."""
    w = _world(version=version)
    b = w.broker("broker-b")
    w.at(1, lambda: b.upsert_topic("Written", 4, 4))
    w.at(2, b.kill)
    w.at(3, lambda: b.start(auto_create=False))  # topics.json holds TBW102: a stale template
    p = w.add_producer(retries=0, create_topic_key="DefaultCluster")
    stale = w.add_producer("stale", retries=0)
    w.every(0.001, lambda: stale.send("Refused"), 5, 5.007)  # b's TBW102 loses its inherit bit
    w.every(0.001, lambda: p.send(T), 6, 6.007)  # auto-created on both, from the cluster topic
    events = w.run(50)

    registered = [
        sorted(hb.topics)
        for hb in _of(events, Heartbeat)
        if hb.broker == "broker-b" and hb.ts >= w.ms(6)
    ]
    tbw102 = {q.broker: q.perm for q in next(iter(w.namesrvs.values())).route(TBW102) or []}
    if version < (5, 0, 0):
        assert len(registered[0]) > 1 and T in registered[0]
        assert tbw102 == {"broker-a": 7, "broker-b": 6}
    else:
        assert registered[0] == [T]
        assert tbw102 == {"broker-a": 7, "broker-b": 7}
    assert _route_brokers(w) == ["broker-a", "broker-b"]


@pytest.mark.parametrize("seed", range(40))
def test_one_send_then_a_refresh_leaves_the_topic_on_exactly_one_broker(seed: int) -> None:
    w = _world(seed)
    p = w.add_producer()
    w.at(5, lambda: p.send(T))
    events = w.run(31)

    assert len(_route_brokers(w)) == 1
    refresh = [e for e in _of(events, RoutePull) if e.topic == T and not e.via_default][-1]
    assert refresh.result == "SUCCESS"
    assert [q.broker for q in refresh.queues] == _route_brokers(w)
    info = p.publish[T]
    assert info is not None and not info.via_default


@pytest.mark.parametrize("sends", [1, 2, 3, 4, 5, 6, 7, 8, 9])
def test_five_or_more_sends_before_the_refresh_always_reach_both_brokers(sends: int) -> None:
    reached = set()
    for seed in range(60):
        w = _world(seed)
        p = w.add_producer()
        w.every(0.01, functools.partial(p.send, T), 5, 5 + (sends - 1) * 0.01)
        w.run(31)
        reached.add(len(_route_brokers(w)))

    if sends >= 5:
        assert reached == {2}
    else:
        assert 1 in reached  # fewer sends can miss a broker, depending on the random start


def test_a_broker_without_a_usable_template_refuses_with_topic_not_exist() -> None:
    """broker-b's table changed (so topics.json holds TBW102) before it restarts with
    auto-creation off: it still registers TBW102, the template route names it, and it refuses
    the sends it gets there."""
    w = _world()
    b = w.broker("broker-b")
    w.at(1, lambda: b.upsert_topic("Orders", 8, 8))
    w.at(2, b.kill)
    w.at(3, lambda: b.start(auto_create=False))
    p = w.add_producer()
    w.every(1, lambda: p.send(T), 5, 20)
    events = w.run(25)

    refused = [e for e in _of(events, Send) if e.status == "TOPIC_NOT_EXIST"]
    assert refused
    assert {e.broker for e in refused} == {"broker-b"}
    assert all(
        isinstance(hb, Heartbeat) and TBW102 in hb.topics
        for hb in _of(events, Heartbeat)
        if hb.broker == "broker-b" and hb.full
    )
    assert _route_brokers(w) == ["broker-a"]


def test_a_broker_whose_table_never_changed_restarts_without_tbw102() -> None:
    """A broker writes topics.json only when its table changes: one that never changed and
    restarts with auto-creation off has no TBW102, and new topics land on the others."""
    w = _world()
    b = w.broker("broker-b")
    w.at(2, b.kill)
    w.at(3, lambda: b.start(auto_create=False))
    p = w.add_producer()
    w.every(1, lambda: p.send(T), 5, 20)
    events = w.run(25)

    assert TBW102 not in b.topics
    assert [q.broker for q in w.namesrvs[next(iter(w.namesrvs))].route(TBW102) or []] == [
        "broker-a"
    ]
    assert {e.status for e in _of(events, Send)} == {"SEND_OK"}
    assert _route_brokers(w) == ["broker-a"]


class TestNoRouteInfoCauses:
    """Each cause of "No route info of this topic" produces the events domain.md lists."""

    def test_no_namesrv_address(self) -> None:
        w = _world()
        p = w.add_producer(namesrvs=[])
        w.at(5, lambda: p.send(T))
        events = w.run(6)

        pulls = [e for e in _of(events, RoutePull) if e.topic == T]
        assert {(e.result, e.namesrv) for e in pulls} == {("NO_NAMESRV", None)}
        assert [e.status for e in _of(events, Send)] == ["NO_NAMESRV"]

    def test_auto_creation_off_and_topic_missing(self) -> None:
        w = _world(auto_create=False)
        p = w.add_producer()
        w.at(5, lambda: p.send(T))
        events = w.run(6)

        pulls = [(e.via_default, e.result) for e in _of(events, RoutePull) if e.topic == T]
        assert pulls == [(False, "TOPIC_NOT_EXIST"), (True, "TOPIC_NOT_EXIST")]
        assert all(not hb.auto_create_topic_enable for hb in _of(events, Heartbeat))
        assert [e.status for e in _of(events, Send)] == ["NO_ROUTE_INFO"]

    def test_create_topic_key_no_broker_has(self) -> None:
        w = _world()
        p = w.add_producer(create_topic_key="AUTO_CREATE_TOPIC_KEY")
        w.at(5, lambda: p.send(T))
        events = w.run(6)

        fallback = [e for e in _of(events, RoutePull) if e.topic == T and e.via_default]
        assert [(e.create_topic_key, e.result) for e in fallback] == [
            ("AUTO_CREATE_TOPIC_KEY", "TOPIC_NOT_EXIST")
        ]
        assert all(TBW102 in hb.topics for hb in _of(events, Heartbeat))
        assert [e.status for e in _of(events, Send)] == ["NO_ROUTE_INFO"]

    def test_tbw102_deleted_where_auto_creation_is_on(self) -> None:
        """Brokers before 4.8.0 let ``deleteTopic`` remove TBW102 (4.8.0 and later refuse)."""
        w = _world(broker_version=(4, 7, 1))
        p = w.add_producer()
        w.at(1, lambda: w.delete_topic(TBW102))
        w.at(15, lambda: p.send(T))
        events = w.run(16)

        latest = [hb for hb in _of(events, Heartbeat) if hb.ts > w.ms(1)]
        assert latest
        assert all(hb.auto_create_topic_enable and TBW102 not in hb.topics for hb in latest)
        assert [e.status for e in _of(events, Send)] == ["NO_ROUTE_INFO"]

    def test_no_live_broker(self) -> None:
        w = _world()
        p = w.add_producer()
        w.at(20, w.broker("broker-a").die)
        w.at(20, w.broker("broker-b").die)
        w.at(200, lambda: p.send(T))
        events = w.run(201)

        last_heartbeat = max(hb.ts for hb in _of(events, Heartbeat))
        failure = _of(events, Send)[0]
        assert failure.status == "NO_ROUTE_INFO"
        assert failure.ts - last_heartbeat > 120_000


def test_a_broker_from_4_8_refuses_to_delete_tbw102() -> None:
    """What RocketMQ 4.9.8 did: ``mqadmin deleteTopic`` of TBW102 fails on the first broker
    ("conflict with system topic") and no NameServer is asked."""
    w = _world()
    w.run(1)
    assert not w.delete_topic(TBW102)
    assert not w.broker("broker-a").delete_topic(TBW102)
    assert not w.broker("broker-a").upsert_topic(TBW102, 4, 4)
    assert all(TBW102 in b.topics for b in w.brokers.values())
    assert _route_brokers(w, TBW102) == ["broker-a", "broker-b"]


def test_a_killed_broker_leaves_every_route_at_once() -> None:
    """Its connections close with the process: each NameServer drops it then, with no event."""
    w = _world(namesrvs=2)
    w.at(1, lambda: w.create_topic(T, 4))
    w.at(60, w.broker("broker-b").kill)
    w.run(60)
    assert _route_brokers(w, i=0) == _route_brokers(w, i=1) == ["broker-a"]


@pytest.mark.parametrize(("version", "dropped_at"), [(ROCKETMQ_4, 160), (ROCKETMQ_5, 160)])
def test_a_silent_broker_leaves_routes_when_its_channel_has_been_idle_for_120s(
    version: Release, dropped_at: int
) -> None:
    w = _world(version=version)
    w.at(1, lambda: w.create_topic(T, 4))
    w.at(60, w.broker("broker-b").die)  # last registration at 40 s

    w.run(dropped_at - 0.001)
    assert _route_brokers(w) == ["broker-a", "broker-b"]
    w.run(dropped_at)
    assert _route_brokers(w) == ["broker-a"]


def test_a_clean_shutdown_leaves_routes_at_once() -> None:
    w = _world(namesrvs=2)
    w.at(1, lambda: w.create_topic(T, 4))
    w.at(60, w.broker("broker-b").shutdown)
    events = w.run(60)

    assert _route_brokers(w, i=0) == _route_brokers(w, i=1) == ["broker-a"]
    last = [hb for hb in _of(events, Heartbeat) if hb.broker == "broker-b"][-2:]
    assert [(hb.shutdown, hb.topics) for hb in last] == [(True, {}), (True, {})]


def test_a_lost_namesrv_stops_getting_registrations_and_drops_the_broker() -> None:
    w = _world(namesrvs=2)
    w.at(1, lambda: w.create_topic(T, 4))
    w.at(50, lambda: w.broker("broker-b").lose_namesrv("10.0.0.101:9876"))
    w.run(200)

    assert _route_brokers(w, i=0) == ["broker-a", "broker-b"]
    assert _route_brokers(w, i=1) == ["broker-a"]


def test_a_split_registration_replaces_the_table_once_every_part_arrived() -> None:
    w = World(0)
    ns = w.add_namesrv()
    b = w.add_broker("broker-a", split_size=2, start=False)
    b.stored = {
        f"T{i}": TopicConfig(read_queue_nums=4, write_queue_nums=4, perm=6) for i in range(4)
    }
    b.start()
    events = w.run(0)

    parts = _of(events, Heartbeat)
    assert [(hb.part, hb.parts) for hb in parts] == [(0, 4), (1, 4), (2, 4), (3, 4)]
    assert len({hb.data_version for hb in parts}) == 1
    assert sorted(t for hb in parts for t in hb.topics) == sorted(
        ["T0", "T1", "T2", "T3", TBW102, "DefaultCluster", "broker-a"]
    )
    assert all(ns.route(t) for t in ["T0", "T3", TBW102])


def test_an_admin_topic_change_registers_at_once_and_a_delete_on_one_broker_never_does() -> None:
    """A registration never removes a topic from a NameServer: deleted on broker-b alone, the
    topic stays routed there while broker-b lives; ``mqadmin deleteTopic`` removes it."""
    w = _world()
    w.at(1, lambda: w.create_topic(T, 8))
    w.run(1)
    assert _route_brokers(w) == ["broker-a", "broker-b"]
    w.at(2, lambda: w.broker("broker-b").delete_topic(T))
    w.run(100)
    assert T not in w.broker("broker-b").topics
    assert _route_brokers(w) == ["broker-a", "broker-b"]
    assert w.delete_topic(T)
    assert _route_brokers(w) == []


def test_a_restart_keeps_the_topic_table() -> None:
    w = _world()
    w.at(1, lambda: w.create_topic(T, 8))
    b = w.broker("broker-b")
    w.at(20, b.die)
    w.at(25, lambda: b.start(auto_create=False))
    w.run(26)

    assert T in b.topics and TBW102 in b.topics
    assert not b.auto_create


def test_a_restart_with_a_lost_store_starts_from_an_empty_table() -> None:
    w = _world()
    w.at(1, lambda: w.create_topic(T, 8))
    b = w.broker("broker-b")
    w.at(20, b.shutdown)
    w.at(25, lambda: b.start(keep_store=False))
    events = w.run(26)

    # Its own topics again: TBW102 (auto-creation is on), the cluster's and its name's.
    own = {TBW102, "DefaultCluster", "broker-b"}
    assert set(b.topics) == own
    hbs = [hb for hb in _of(events, Heartbeat) if hb.broker == "broker-b"]
    before, first = hbs[-3], hbs[-1]  # the full registration at 10 s, and the one at restart
    assert (first.ts, first.full, set(first.topics)) == (w.ms(25), True, own)
    assert first.data_version != before.data_version
    assert _route_brokers(w) == ["broker-a"]


def test_a_restart_with_the_store_registers_the_same_table_and_data_version() -> None:
    w = _world()
    w.at(1, lambda: w.create_topic(T, 8))
    b = w.broker("broker-b")
    w.at(20, b.shutdown)
    w.at(25, b.start)
    events = w.run(26)

    hbs = [hb for hb in _of(events, Heartbeat) if hb.broker == "broker-b"]
    before, down, first = hbs[-3:]
    assert (down.shutdown, first.ts) == (True, w.ms(25))
    assert (first.topics, first.data_version) == (before.topics, before.data_version)


def _with_slave(seed: int = 0) -> tuple[World, Broker, Broker]:
    w = _world(seed)
    slave = w.add_broker("broker-a", broker_id=1)
    return w, w.broker("broker-a"), slave


def test_a_slave_copies_its_masters_table_3s_after_start_then_every_10s() -> None:
    w, master, slave = _with_slave()
    w.at(1, lambda: master.upsert_topic(T, 8, 8))
    w.at(4, lambda: master.upsert_topic(T, 16, 16))
    w.run(2.999)
    assert T not in slave.topics
    w.run(3)
    assert slave.topics[T].write_queue_nums == 8
    w.run(12.999)
    assert slave.topics[T].write_queue_nums == 8
    events = w.run(13)
    assert slave.topics == master.topics

    # the slave registers what it copied with its next periodic registration, not at once
    slave_hbs = [hb for hb in _of(events, Heartbeat) if hb.broker_id == 1]
    assert [(hb.ts, hb.full) for hb in slave_hbs] == [(w.ms(0), True), (w.ms(10), True)]
    assert slave_hbs[-1].topics[T].write_queue_nums == 8
    master_at_1s = next(hb for hb in _of(events, Heartbeat) if hb.broker_id == 0 and not hb.full)
    assert slave_hbs[-1].data_version == master_at_1s.data_version  # taken over with the table
    # routes list broker-a once, with the master's counts
    assert next(iter(w.namesrvs.values())).route(T) == [
        QueueData(broker="broker-a", read_queue_nums=16, write_queue_nums=16, perm=6)
    ]


def test_a_slave_cut_off_from_its_master_keeps_the_table_it_had() -> None:
    w, master, slave = _with_slave()
    w.at(1, lambda: master.upsert_topic(T, 4, 4))
    w.at(20, slave.lose_master)
    w.at(30, lambda: master.upsert_topic(T, 8, 8))
    events = w.run(60)

    assert slave.topics[T].write_queue_nums == 4
    latest = [hb for hb in _of(events, Heartbeat) if hb.broker == "broker-a" and hb.full][-2:]
    assert {(hb.broker_id, hb.topics[T].write_queue_nums) for hb in latest} == {(0, 8), (1, 4)}

    w.at(61, slave.regain_master)
    w.run(63)
    assert slave.topics[T].write_queue_nums == 8


@pytest.mark.parametrize("version", [ROCKETMQ_4, ROCKETMQ_5], ids=["rocketmq4", "rocketmq5"])
def test_a_send_to_a_queue_the_topic_lacks_is_refused_and_written_by_no_one(
    version: Release,
) -> None:
    """A producer keyed to a broker's one-queue topic, TBW102 still routed: a 4.x client's
    template is the key's route (one queue: every send lands); a 5.x client's is TBW102's
    (4 queues per broker), so broker-b refuses and broker-a refuses queues 1-3 ("request
    queueId[q] is illegal", which the client library writes no event for), at once on 5.x."""
    w = _world(version=version)
    p = w.add_producer(create_topic_key="broker-a", retries=2)
    w.every(0.001, lambda: p.send(T), 5, 5.007)
    events = w.run(10)

    sends = [(e.status, e.broker, e.queue_id) for e in _of(events, Send)]
    route = next(iter(w.namesrvs.values())).route(T)
    assert route is not None
    assert [(q.broker, q.write_queue_nums) for q in route] == [("broker-a", 1)]
    if version < (5, 0, 0):
        assert sends == [("SEND_OK", "broker-a", 0)] * 8
    else:
        assert ("SEND_OK", "broker-a", 0) in sends
        assert {s for s in sends if s[0] != "SEND_OK"} <= {
            ("TOPIC_NOT_EXIST", "broker-b", q) for q in range(4)
        }
        assert len([s for s in sends if s[0] == "SEND_OK"]) < 8  # the illegal queues wrote nothing
