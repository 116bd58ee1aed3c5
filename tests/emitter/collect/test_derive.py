"""From polls to heartbeats (``emitter/collect/derive.py``), on hand-made snapshots: what is
written, when, and what is never written."""

from __future__ import annotations

import orjson

from emitter.collect.derive import Deriver
from emitter.collect.poller import BrokerView, NamesrvView, Snapshot
from routewatch.codec import encode
from routewatch.events import HeldTopic, InferredAutoCreation
from routewatch.remoting import DataVersion, TopicConfig, TopicTable
from routewatch.validation import validate

NS1, NS2 = "127.0.0.1:9876", "127.0.0.1:9877"
A = ("C", "broker-a", 0)
ADDR = "127.0.0.1:10911"
V1, V2 = DataVersion(1000, 1), DataVersion(2000, 2)
T1 = TopicTable(V1, {"TBW102": TopicConfig(8, 8, 7), "2024": TopicConfig(4, 4, 6)})
T2 = TopicTable(V2, {"TBW102": TopicConfig(8, 8, 7)})


def snap(
    ts: int,
    versions: dict[str, DataVersion | None],
    table: TopicTable | None = None,
    *,
    broker_answers: bool = True,
    auto: bool = True,
    timeout_ms: int | None = None,
) -> Snapshot:
    s = Snapshot()
    for ns, version in versions.items():
        s.namesrvs[ns] = NamesrvView(ns, ts, {A: ADDR}, {ADDR: version})
    if broker_answers:
        s.brokers[ADDR] = BrokerView(ADDR, auto, 8, table, heartbeat_timeout_ms=timeout_ms)
    return s


def test_one_heartbeat_per_namesrv_listing_the_broker_and_valid_by_the_contract() -> None:
    d = Deriver(30, source="t")
    events = d.derive(snap(1_000, {NS1: V1, NS2: V1}, T1))
    assert [(e.namesrv, e.seq, e.event_id) for e in events] == [(NS1, 1, "t-1"), (NS2, 2, "t-2")]
    e = events[0]
    assert (e.cluster, e.broker, e.broker_id, e.broker_addr) == ("C", "broker-a", 0, ADDR)
    assert e.full and e.data_version == "1000-1" and e.shutdown is None and e.parts is None
    assert set(e.topics) == {"TBW102", "2024"}
    assert e.auto_create_topic_enable and e.default_topic_queue_nums == 8
    assert validate(orjson.loads(encode(e))) is None


def test_nothing_new_is_written_until_the_liveness_needs_renewing() -> None:
    """Heartbeats every 30 s, polls every 10 s: the polls at 10 and 20 s write nothing; the one
    at 30 s renews, also when it comes a few milliseconds early."""
    d = Deriver(30, source="t", poll_interval_s=10)
    d.derive(snap(0, {NS1: V1}, T1))
    assert d.derive(snap(10_000, {NS1: V1})) == []
    assert d.derive(snap(19_995, {NS1: V1})) == []
    (renewal,) = d.derive(snap(29_995, {NS1: V1}))
    assert renewal.data_version == "1000-1" and renewal.ts == 29_995


def test_a_poll_a_little_early_still_renews_at_the_heartbeat_interval() -> None:
    """The default, heartbeats at the poll interval (10 s): a poll that comes a few milliseconds
    before the 10 s renews, so a broker's heartbeats are never 20 s apart (seen on a real 4.9.8
    cluster before 2026-12-07)."""
    d = Deriver(10, source="t", poll_interval_s=10)
    d.derive(snap(0, {NS1: V1}, T1))
    written = [d.derive(snap(ts, {NS1: V1})) for ts in (9_995, 19_990, 30_002, 39_997)]
    assert [[e.ts for e in w] for w in written] == [[9_995], [19_990], [30_002], [39_997]]


def test_a_broker_with_its_own_timeout_is_renewed_within_half_of_it() -> None:
    """A 5.x broker in slave-acting-master mode expires 10 s after its last registration: the
    heartbeats say so, and renew it every 5 s (polls every second)."""
    d = Deriver(30, source="t", poll_interval_s=1)
    (first,) = d.derive(snap(0, {NS1: V1}, T1, timeout_ms=10_000))
    assert first.heartbeat_timeout_ms == 10_000
    assert validate(orjson.loads(encode(first))) is None
    assert d.derive(snap(4_499, {NS1: V1}, timeout_ms=10_000)) == []
    (renewal,) = d.derive(snap(4_500, {NS1: V1}, timeout_ms=10_000))  # (half a poll early)
    assert renewal.heartbeat_timeout_ms == 10_000
    # without it, 120 s: the field is absent, the interval is the heartbeat interval
    (back,) = d.derive(snap(6_000, {NS1: V1}))
    assert back.heartbeat_timeout_ms is None
    assert d.derive(snap(35_499, {NS1: V1})) == []


def test_a_timeout_shorter_than_two_polls_is_written_as_two_polls() -> None:
    """Looking every 10 s, the collector cannot renew a 10 s registration in time: it writes
    20 s (the job expires the broker up to one poll later than its NameServers do)."""
    d = Deriver(10, source="t", poll_interval_s=10)
    (first,) = d.derive(snap(0, {NS1: V1}, T1, timeout_ms=10_000))
    assert first.heartbeat_timeout_ms == 20_000
    # every poll renews it, even one that came a little early: had the poll at 9.99 s skipped
    # the renewal, the next (19.99 s, or later with a NameServer slower to answer) would race
    # the job's expiry at 20 s
    for ts in (9_990, 19_985, 30_010, 39_990):
        (renewal,) = d.derive(snap(ts, {NS1: V1}, timeout_ms=10_000))
        assert renewal.ts == ts and renewal.heartbeat_timeout_ms == 20_000


def test_a_long_own_timeout_is_renewed_before_two_polls_are_left_of_it() -> None:
    """30 s of its own, polls every 10 s: renewed once 10 s old, give or take half a poll —
    at the latest about two polls later, still inside the 30 s."""
    d = Deriver(30, source="t", poll_interval_s=10)
    d.derive(snap(0, {NS1: V1}, T1, timeout_ms=30_000))
    assert d.derive(snap(4_990, {NS1: V1}, timeout_ms=30_000)) == []
    (renewal,) = d.derive(snap(9_990, {NS1: V1}, timeout_ms=30_000))
    assert renewal.heartbeat_timeout_ms == 30_000


def test_a_changed_version_or_setting_is_written_at_once() -> None:
    d = Deriver(30, source="t")
    d.derive(snap(0, {NS1: V1}, T1))
    assert d.known(ADDR, V1) and not d.known(ADDR, V2)
    (changed,) = d.derive(snap(5_000, {NS1: V2}, T2))
    assert changed.data_version == "2000-2" and set(changed.topics) == {"TBW102"}
    (setting,) = d.derive(snap(6_000, {NS1: V2}, auto=False))
    assert setting.auto_create_topic_enable is False


def test_each_namesrv_gets_the_table_at_the_version_it_holds() -> None:
    d = Deriver(30, source="t")
    d.derive(snap(0, {NS1: V1, NS2: V1}, T1))
    # the broker's new table reached NS1 only: NS2 still holds the old one, and so routes a
    # topic the broker no longer holds
    events = d.derive(snap(5_000, {NS1: V2, NS2: V1}, T2))
    assert [(e.namesrv, e.data_version) for e in events] == [(NS1, "2000-2"), (NS2, "1000-1")]
    assert events[0].held is None
    assert set(events[1].topics) == {"TBW102", "2024"}
    assert events[1].held == {"2024": HeldTopic(held=False, perm=None)}


def test_an_unreachable_broker_still_listed_keeps_its_heartbeats() -> None:
    d = Deriver(30, source="t")
    d.derive(snap(0, {NS1: V1}, T1))
    assert d.derive(snap(10_000, {NS1: V1}, broker_answers=False)) == []
    (renewal,) = d.derive(snap(30_000, {NS1: V1}, broker_answers=False))
    assert renewal.data_version == "1000-1" and set(renewal.topics) == {"TBW102", "2024"}


def test_a_version_not_known_yet_renews_only_what_was_written() -> None:
    d = Deriver(30, source="t")
    d.derive(snap(0, {NS1: V1}, T1))
    # the NameServer holds V2 but the broker did not answer with it: no table is guessed
    assert d.derive(snap(10_000, {NS1: V2}, broker_answers=False)) == []
    (renewal,) = d.derive(snap(30_000, {NS1: V2}, broker_answers=False))
    assert renewal.data_version == "1000-1"


def test_a_broker_never_seen_answering_gets_no_heartbeat() -> None:
    d = Deriver(30, source="t")
    assert d.derive(snap(0, {NS1: V1}, broker_answers=False)) == []


def test_a_broker_no_namesrv_lists_and_a_silent_namesrv_get_nothing() -> None:
    d = Deriver(30, source="t")
    d.derive(snap(0, {NS1: V1, NS2: V1}, T1))
    later = snap(40_000, {NS1: V1}, T1)  # NS2 did not answer
    later.namesrvs[NS1].brokers.clear()  # NS1 dropped the broker
    assert d.derive(later) == []


B, B_ADDR = ("C", "broker-b", 0), "127.0.0.1:10912"


def with_b(s: Snapshot, table: TopicTable = T2) -> Snapshot:
    """``s`` with a second master, broker-b, listed by every NameServer with ``table``."""
    for view in s.namesrvs.values():
        view.brokers[B] = B_ADDR
        view.versions[B_ADDR] = table.version
    s.brokers[B_ADDR] = BrokerView(B_ADDR, True, 8, table)
    return s


def test_a_topic_that_appears_with_a_templates_config_is_written_as_inferred() -> None:
    d = Deriver(30, source="t")
    first = {e.broker: e for e in d.derive(with_b(snap(1_000, {NS1: V1}, T1)))}
    assert first["broker-a"].inferred_auto_created == {
        "2024": InferredAutoCreation(found="at_start", first_seen=1_000)
    }
    t3 = TopicTable(DataVersion(3000, 3), {**T1.topics, "New": TopicConfig(4, 4, 6)})
    (changed,) = d.derive(with_b(snap(3_000, {NS1: t3.version}, t3)))
    assert changed.inferred_auto_created == {
        "2024": InferredAutoCreation(found="at_start", first_seen=1_000),
        "New": InferredAutoCreation(found="while_watching", first_seen=3_000),
    }
    # renewals keep saying it while the table holds it
    renewal = {e.broker: e for e in d.derive(with_b(snap(33_000, {NS1: t3.version})))}
    assert renewal["broker-a"].inferred_auto_created == changed.inferred_auto_created
    assert renewal["broker-b"].inferred_auto_created is None
    assert validate(orjson.loads(encode(changed))) is None


def test_a_topic_on_the_only_master_is_not_taken_for_auto_created() -> None:
    d = Deriver(30, source="t")
    (first,) = d.derive(snap(1_000, {NS1: V1}, T1))
    t3 = TopicTable(DataVersion(3000, 3), {**T1.topics, "New": TopicConfig(4, 4, 6)})
    (changed,) = d.derive(snap(3_000, {NS1: t3.version}, t3))
    assert first.inferred_auto_created is None and changed.inferred_auto_created is None


def test_a_slave_carries_no_inference() -> None:
    slave, slave_addr = ("C", "broker-a", 1), "127.0.0.1:10921"
    d = Deriver(30, source="t")
    d.derive(with_b(snap(1_000, {NS1: V1}, T1)))
    t3 = TopicTable(DataVersion(3000, 3), {**T1.topics, "New": TopicConfig(4, 4, 6)})
    s = with_b(snap(3_000, {NS1: t3.version}, t3))
    s.namesrvs[NS1].brokers[slave] = slave_addr
    s.namesrvs[NS1].versions[slave_addr] = t3.version
    s.brokers[slave_addr] = BrokerView(slave_addr, True, 8, t3)
    events = {(e.broker, e.broker_id): e for e in d.derive(s)}
    assert set(events[("broker-a", 0)].inferred_auto_created or {}) == {"2024", "New"}
    assert events[("broker-a", 1)].inferred_auto_created is None
