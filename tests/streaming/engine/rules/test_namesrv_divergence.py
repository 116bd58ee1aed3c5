"""NAMESRV_DIVERGENCE: a broker live on some of the cluster's NameServers and not others, in
full, opened and resolved."""

from __future__ import annotations

from tests.streaming.engine.events import NS1, NS2, Trace, ms
from tests.streaming.engine.rules.support import alerts, expect, expired_remedy, final, run

DIVERGENCE_REMEDY = (
    "Check the broker process and its namesrvAddr list: it no longer reaches every NameServer."
)


# -- the NameServers of a cluster after a clean shutdown ------------------------------------------


def test_a_namesrv_stays_the_clusters_for_120_s_after_an_unregistration() -> None:
    t = Trace()
    t.hb(0, "a", ns=NS1)
    t.hb(0, "a", ns=NS2)
    t.every(0, 150, 30, "b", ns=NS1)  # b never reaches NS2
    t.hb(10, "a", ns=NS1, shutdown=True)
    t.hb(10, "a", ns=NS2, shutdown=True)  # NS2 stays the cluster's until 0 + 120 s

    assert alerts(run(t)) == [("NAMESRV_DIVERGENCE", "C", "b/0", 60.0, 120.0)]


# -- every alert in full, opened and resolved ------------------------------------------------------
#
# Every trace below is written by hand with explicit times; every alert it ends with is asserted
# field by field, and each test runs over the whole input at once and one event per batch.


def test_namesrv_divergence_resolves_when_live_on_every_namesrv_again(
    batch_size: int | None,
) -> None:
    t = Trace()
    for ns in (NS1, NS2):
        t.every(0, 240, 30, "a", ns=ns)
    t.hb(0, "b", {"T": 4}, ns=NS2)  # b's last registration on NS2: off it from 120 s
    t.every(0, 240, 30, "b", topics={"T": 4}, ns=NS1)
    t.hb(200, "b", {"T": 4}, ns=NS2)

    run_ = run(t, batch_size=batch_size)

    assert final(run_) == [
        expect(
            "NAMESRV_DIVERGENCE",
            broker="b",
            broker_id=0,
            severity="warning",
            opened=180,
            resolved=200,
            summary="Broker b (id 0) was registered on some NameServers of its cluster and not "
            "others from 2026-01-01T00:02:00.000Z; from 2026-01-01T00:03:20.000Z it was "
            "registered alike on every one.",
            evidence={
                "live_on": [NS1, NS2],
                "missing_on": [],
                "since": ms(120),
                "topics_differing": {"items": [], "count": 0},
                "system_topics": [],
                "resolution": "alike on every NameServer",
                "opened_with": {
                    "live_on": [NS1],
                    "missing_on": [NS2],
                    "since": ms(120),
                    "topics_differing": {"items": ["T"], "count": 1},
                    "system_topics": ["TBW102"],
                },
            },
            remedy=DIVERGENCE_REMEDY,
        )
    ]


def test_namesrv_divergence_resolves_when_live_on_none_and_broker_expired_takes_over(
    batch_size: int | None,
) -> None:
    t = Trace()
    for ns in (NS1, NS2):
        t.every(0, 240, 30, "a", ns=ns)
    t.every(0, 90, 30, "b", ns=NS1)  # b never reaches NS2, and expires at 210 s

    run_ = run(t, batch_size=batch_size)

    assert final(run_) == [
        expect(
            "NAMESRV_DIVERGENCE",
            broker="b",
            broker_id=0,
            severity="warning",
            opened=60,
            resolved=210,
            summary="Broker b (id 0) was registered on some NameServers of its cluster and not "
            "others from 2026-01-01T00:00:00.000Z; from 2026-01-01T00:03:30.000Z it was "
            "registered on none.",
            evidence={
                "live_on": [],
                "missing_on": [],
                "since": ms(0),
                "topics_differing": {"items": [], "count": 0},
                "system_topics": [],
                "resolution": "on no NameServer",
                "opened_with": {
                    "live_on": [NS1],
                    "missing_on": [NS2],
                    "since": ms(0),
                    "topics_differing": {"items": [], "count": 0},
                    "system_topics": ["TBW102"],
                },
            },
            remedy=DIVERGENCE_REMEDY,
        ),
        expect(
            "BROKER_EXPIRED",
            broker="b",
            broker_id=0,
            severity="critical",
            opened=210,
            summary="Broker b (id 0) has been silent for over 120 s on every NameServer; 0 "
            "topic(s) it held have no route left.",
            evidence={
                "last_heartbeat": ms(90),
                "addr": "b:10911",
                "namesrvs": [NS1],
                "topics_without_route": {"items": [], "count": 0},
                "system_topics": [],
            },
            remedy=expired_remedy("b"),
        ),
    ]


def test_namesrv_divergence_topics_differing_follow_the_brokers_table(
    batch_size: int | None,
) -> None:
    t = Trace()
    for ns in (NS1, NS2):
        t.every(0, 150, 30, "a", ns=ns)
    t.every(0, 90, 30, "b", topics={"T": 4}, ns=NS1)  # b never reaches NS2: diverged from 0 s
    t.every(120, 150, 30, "b", topics={"T": 4, "U": 4}, ns=NS1)  # U too, on NS1 only

    run_ = run(t, batch_size=batch_size)

    assert final(run_) == [
        expect(
            "NAMESRV_DIVERGENCE",
            broker="b",
            broker_id=0,
            severity="warning",
            opened=60,
            updated=120,
            summary=f"Broker b (id 0) is registered on {NS1} but not on {NS2}: clients see "
            "different routes by NameServer.",
            evidence={
                "live_on": [NS1],
                "missing_on": [NS2],
                "since": ms(0),
                "topics_differing": {"items": ["T", "U"], "count": 2},
                "system_topics": ["TBW102"],
            },
            remedy=DIVERGENCE_REMEDY,
        )
    ]
