"""BROKER_EXPIRED: a broker silent on every NameServer, in full, opened and resolved, with the
topics it held that have no route left."""

from __future__ import annotations

from tests.streaming.engine.events import NS1, NS2, Trace, ms
from tests.streaming.engine.rules.support import expect, expired_remedy, final, run

# -- every alert in full, opened and resolved ------------------------------------------------------
#
# Every trace below is written by hand with explicit times; every alert it ends with is asserted
# field by field, and each test runs over the whole input at once and one event per batch.


def test_broker_expired_on_every_namesrv_resolves_on_a_heartbeat(batch_size: int | None) -> None:
    t = Trace()
    for ns in (NS1, NS2):
        t.every(0, 210, 30, "b", ns=ns)
    t.every(0, 30, 30, "a", topics={"T": 4}, ns=NS1)  # silent on NS1 after 30 s
    t.every(0, 60, 30, "a", topics={"T": 4}, ns=NS2)  # ... and on NS2 after 60 s: expired at 180 s
    t.hb(200, "a", ns=NS1)
    t.hb(200, "a", ns=NS2)

    run_ = run(t, batch_size=batch_size)

    assert final(run_) == [
        expect(
            "BROKER_EXPIRED",
            broker="a",
            broker_id=0,
            severity="critical",
            opened=180,
            resolved=200,
            summary="Broker a (id 0) was silent on every NameServer from "
            "2026-01-01T00:03:00.000Z; at 2026-01-01T00:03:20.000Z it registered again.",
            evidence={  # at its first heartbeat back (NS1's): T still routed by neither
                "last_heartbeat": ms(200),
                "addr": "a:10911",
                "namesrvs": [NS1, NS2],
                "topics_without_route": {"items": ["T"], "count": 1},
                "system_topics": [],
                "resolution": "heartbeat received",
                "opened_with": {
                    "last_heartbeat": ms(60),
                    "addr": "a:10911",
                    "namesrvs": [NS1, NS2],
                    "topics_without_route": {"items": ["T"], "count": 1},
                    "system_topics": [],
                },
            },
            remedy=expired_remedy("a"),
        )
    ]


def test_broker_expired_of_a_slave_resolves_when_it_unregisters(batch_size: int | None) -> None:
    t = Trace()
    t.every(0, 180, 30, "a")
    t.hb(0, "a", broker_id=1)  # the slave expires at 120 s
    t.hb(150, "a", broker_id=1, shutdown=True)

    run_ = run(t, batch_size=batch_size)

    assert final(run_) == [
        expect(
            "BROKER_EXPIRED",
            broker="a",
            broker_id=1,
            severity="critical",
            opened=120,
            resolved=150,
            summary="Broker a (id 1) was silent on every NameServer from "
            "2026-01-01T00:02:00.000Z; at 2026-01-01T00:02:30.000Z it unregistered.",
            evidence={
                "last_heartbeat": ms(150),
                "addr": "a:10911",
                "namesrvs": [NS1],
                "topics_without_route": {"items": [], "count": 0},
                "system_topics": [],
                "resolution": "unregistered",
                "opened_with": {
                    "last_heartbeat": ms(0),
                    "addr": "a:10911",
                    "namesrvs": [NS1],
                    "topics_without_route": {"items": [], "count": 0},
                    "system_topics": [],
                },
            },
            remedy=expired_remedy("a", 1),
        )
    ]


def test_a_broker_that_unregistered_does_not_expire(batch_size: int | None) -> None:
    t = Trace()
    t.every(0, 180, 30, "b")
    t.hb(0, "a")
    t.hb(10, "a", shutdown=True)

    assert final(run(t, batch_size=batch_size)) == []


def test_broker_expired_topics_without_route_follow_the_other_brokers(
    batch_size: int | None,
) -> None:
    t = Trace()
    t.hb(0, "a", {"T": 4})  # a expires at 120 s: b still holds T and TBW102
    t.every(0, 30, 30, "b", topics={"T": 4})  # b expires at 150 s: now no live broker holds them
    t.every(0, 180, 30, "d", cluster="D")

    run_ = run(t, batch_size=batch_size)

    assert final(run_, "BROKER_EXPIRED")[0] == expect(
        "BROKER_EXPIRED",
        broker="a",
        broker_id=0,
        severity="critical",
        opened=120,
        updated=150,
        summary="Broker a (id 0) has been silent for over 120 s on every NameServer; 1 topic(s) "
        "it held have no route left.",
        evidence={  # (TBW102 apart: a system topic)
            "last_heartbeat": ms(0),
            "addr": "a:10911",
            "namesrvs": [NS1],
            "topics_without_route": {"items": ["T"], "count": 1},
            "system_topics": ["TBW102"],
        },
        remedy=expired_remedy("a"),
    )
