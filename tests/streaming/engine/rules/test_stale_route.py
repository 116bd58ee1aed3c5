"""STALE_ROUTE: a NameServer routes a topic to a live master whose own table lacks it (the
collector's ``held``), until the master holds it again, stops being routed it, or expires."""

from __future__ import annotations

from tests.streaming.engine.events import NS1, NS2, Trace
from tests.streaming.engine.rules.support import alerts, final, run


def _routed_to_b_not_held(until: float = 60) -> Trace:
    """Masters a and b registering T every 30 s on NS1; from 0 s NS1 routes T to b while b's own
    table lacks it (deleted there by hand, say)."""
    t = Trace()
    t.every(0, until, 30, "a", topics={"T": 4})
    t.every(0, until, 30, "b", topics={"T": 4}, not_held=("T",))
    return t


def test_a_topic_routed_to_a_master_that_does_not_hold_it_is_stale_until_it_does(
    batch_size: int | None,
) -> None:
    t = _routed_to_b_not_held(until=30)
    t.hb(60, "a", {"T": 4})
    t.hb(60, "b", {"T": 4})  # b holds T again

    run_ = run(t, batch_size=batch_size)

    assert alerts(run_) == [("STALE_ROUTE", "C", "T", 0.0, 60.0)]
    opened = run_.cluster("C").alert_changes[0]
    assert opened.summary == (
        "Topic T is routed to b, which does not hold it: sends routed there are refused "
        "(TOPIC_NOT_EXIST) unless auto-creation makes the topic again, and reads of those queues "
        "find nothing."
    )
    (stale,) = final(run_)
    assert stale["severity"] == "warning" and stale["state"] == "resolved"
    assert stale["summary"] == (
        "Topic T was routed to b, which did not hold it, from 2026-01-01T00:00:00.000Z; from "
        "2026-01-01T00:01:00.000Z no live master was routed it without holding it."
    )
    assert stale["evidence"] == {
        "stale_routes": {},
        "brokers_holding_topic": ["a", "b"],
        "resolution": "no stale route left",
        "opened_with": {"stale_routes": {NS1: ["b"]}, "brokers_holding_topic": ["a"]},
    }
    assert stale["remedy"].startswith("Make it there again with `mqadmin updateTopic -n ")
    assert " -b b:10911 " in stale["remedy"] and " -r 4 -w 4" in stale["remedy"]
    assert f"`mqadmin deleteTopic -n {NS1} -c C -t T`" in stale["remedy"]


def test_every_namesrv_that_routes_it_so_is_named() -> None:
    t = Trace()
    for ns in (NS1, NS2):
        t.hb(0, "a", {"T": 4}, ns=ns)
        t.hb(0, "b", {"T": 4}, ns=ns, not_held=("T",))
        t.hb(0, "c", {"T": 4}, ns=ns, not_held=("T",) if ns == NS2 else ())

    (stale,) = final(run(t))

    assert stale["summary"].startswith("Topic T is routed to b, c, which do not hold it:")
    assert stale["evidence"] == {
        "stale_routes": {NS1: ["b"], NS2: ["b", "c"]},
        "brokers_holding_topic": ["a", "c"],  # (c by its registration with NS1)
    }


def test_a_slave_or_a_master_gone_raises_none() -> None:
    t = Trace()
    t.every(0, 180, 30, "a", topics={"T": 4})
    t.every(0, 180, 30, "a", topics={"T": 4}, broker_id=1, not_held=("T",))  # a slave: not judged
    t.hb(0, "b", {"T": 4}, not_held=("T",))  # b's last registration: it expires at 120 s

    assert alerts(run(t)) == [
        ("STALE_ROUTE", "C", "T", 0.0, 120.0),
        ("BROKER_EXPIRED", "C", "b/0", 120.0, None),
    ]


def test_a_topic_a_namesrv_stops_routing_to_the_master_is_no_longer_stale() -> None:
    t = _routed_to_b_not_held(until=30)
    t.hb(60, "a", {"T": 4})
    t.hb(60, "b", {})  # NS1 no longer routes T to b

    assert alerts(run(t)) == [("STALE_ROUTE", "C", "T", 0.0, 60.0)]
