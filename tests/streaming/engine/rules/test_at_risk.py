"""AT_RISK: producers holding a template route over brokers of which only some hold the topic,
from its condition's 5 s to its resolution."""

from __future__ import annotations

from typing import Any

from tests.streaming.engine.events import NS1, Trace, ms
from tests.streaming.engine.rules.support import (
    _s,
    _template_route_on_one_of_two,
    alerts,
    create_remedy,
    expect,
    final,
    run,
)

# -- AT_RISK's 5 s are of its condition, not of the alert ------------------------------------------


def test_at_risk_opens_when_partial_coverage_resolves_under_a_condition_held_all_along(
    batch_size: int | None,
) -> None:
    t = Trace()
    t.hb(0, "a")
    t.every(30, 180, 30, "a", topics={"T": 4})
    t.every(30, 180, 30, "b", topics={"T": 4})  # b holds T from 30 s
    t.hb(0, "b")
    t.hb(0, "c")  # c registers once: it expires at 120 s
    t.pull(0.5, "T", ["a", "b", "c"], via_default=True)
    t.send(1, "T", broker="a", auto_created=True)
    t.hb(1, "a", {"T": 4}, full=False)
    # The producer's template route covers a, b and c, of which one or two hold T from 1 s on:
    # AT_RISK from 6 s until PARTIAL_COVERAGE settles at 60.5 s (2 of 3 masters); when c expires
    # at 120 s, T is on every master left, PARTIAL_COVERAGE resolves, and AT_RISK, whose
    # condition has held since 1 s, opens at once.

    run_ = run(t, batch_size=batch_size)

    assert alerts(run_, "AT_RISK") + alerts(run_, "PARTIAL_COVERAGE") == [
        ("AT_RISK", "C", "T", 6.0, 60.5),
        ("AT_RISK", "C", "T", 120.0, None),
        ("PARTIAL_COVERAGE", "C", "T", 60.5, 120.0),
    ]
    (reopened,) = [a for a in run_.final_alerts() if a.kind == "AT_RISK" and a.state == "open"]
    assert reopened.evidence["condition_since"] == ms(1)


# -- AT_RISK when the topic is left on no broker --------------------------------------------------


def _at_risk_on_no_broker() -> dict[str, Any]:
    """The AT_RISK of ``_template_route_on_one_of_two`` once a, the one broker holding T, left at
    10 s: still open, and its summary says T is on none of the template brokers."""
    return expect(
        "AT_RISK",
        topic="T",
        severity="warning",
        opened=6,
        updated=10,
        summary="Topic T is on none of the 2 brokers its producers' template route covers any "
        "more; those producers keep that route until a route refresh succeeds (next by "
        "2026-01-01T00:00:30.500Z).",
        evidence={
            "producers": [
                {
                    "client_id": "p1",
                    "template_brokers": ["a", "b"],
                    "brokers_with_topic": [],
                    "template_route_since": ms(0.5),
                    "next_refresh_by": ms(30.5),
                }
            ],
            "brokers_with_topic": [],
            "condition_since": ms(1),
        },
        remedy=create_remedy("T", 4),
    )


def test_at_risk_stays_open_when_the_topic_is_left_on_no_broker(batch_size: int | None) -> None:
    t = _template_route_on_one_of_two()
    t.hb(10, "a", ns=NS1, shutdown=True)  # the one broker holding T leaves: k falls to 0
    t.hb(20, "b")

    run_ = run(t, batch_size=batch_size)

    assert alerts(run_) == [("AT_RISK", "C", "T", 6.0, None)]
    assert final(run_) == [_at_risk_on_no_broker()]


def test_at_risk_resolves_when_no_producer_holds_a_template_route(batch_size: int | None) -> None:
    t = _template_route_on_one_of_two()
    t.hb(10, "a", ns=NS1, shutdown=True)
    t.pull(20, "T", ["b"])  # a successful non-default pull replaces the template route

    run_ = run(t, batch_size=batch_size)

    assert alerts(run_, "AT_RISK") == [("AT_RISK", "C", "T", 6.0, 20.0)]
    assert final(run_) == [
        expect(
            "AT_RISK",
            topic="T",
            severity="warning",
            opened=6,
            resolved=20,
            summary="Topic T was on 1 of the 2 brokers its producers' template route covered "
            "from 2026-01-01T00:00:06.000Z; from 2026-01-01T00:00:20.000Z no producer held its "
            "template route.",
            evidence={
                "producers": [],
                "brokers_with_topic": [],
                "condition_since": ms(1),
                "resolution": "no template route left",
                "opened_with": {
                    "producers": [
                        {
                            "client_id": "p1",
                            "template_brokers": ["a", "b"],
                            "brokers_with_topic": ["a"],
                            "template_route_since": ms(0.5),
                            "next_refresh_by": ms(30.5),
                        }
                    ],
                    "brokers_with_topic": ["a"],
                    "condition_since": ms(1),
                },
            },
            remedy=create_remedy("T", 4),
        )
    ]


# -- every alert in full, opened and resolved ------------------------------------------------------
#
# Every trace below is written by hand with explicit times; every alert it ends with is asserted
# field by field, and each test runs over the whole input at once and one event per batch.


def test_at_risk_follows_its_producers_and_resolves_when_every_template_broker_holds_it(
    batch_size: int | None,
) -> None:
    t = Trace()
    t.hb(0, "a")
    t.hb(0, "b")
    t.hb(0, "c")
    t.pull(0.5, "T", ["a", "b"], via_default=True, client="p1")
    t.pull(0.8, "T", ["a", "b", "c"], via_default=True, client="p2")
    t.send(1, "T", broker="a", auto_created=True)
    t.hb(1, "a", {"T": 4}, full=False)  # the condition holds from 1 s: k = 1
    t.pull(20, "T", [], result="TIMEOUT", client="p2")  # keeps p2's route, moves its refresh
    t.send(22, "T", broker="b", client="p2", auto_created=True)
    t.hb(22, "b", {"T": 4}, full=False)  # p1's template brokers all hold T; p2's do not
    t.send(24, "T", broker="c", client="p2", auto_created=True)
    t.hb(24, "c", {"T": 4}, full=False)  # converged: all three hold T
    for broker in ("a", "b", "c"):
        t.every(30, 90, 30, broker, topics={"T": 4})

    run_ = run(t, batch_size=batch_size)

    assert final(run_) == [
        expect(
            "AT_RISK",
            topic="T",
            severity="warning",
            opened=6,
            updated=24,
            resolved=24,
            summary="Topic T was on 1 of the 3 brokers its producers' template route covered "
            "from 2026-01-01T00:00:06.000Z; from 2026-01-01T00:00:24.000Z every broker of its "
            "template route held it.",
            evidence={
                "producers": [],
                "brokers_with_topic": ["a", "b", "c"],
                "condition_since": ms(1),
                "resolution": "converged",
                "opened_with": {
                    "producers": [
                        {
                            "client_id": "p1",
                            "template_brokers": ["a", "b"],
                            "brokers_with_topic": ["a"],
                            "template_route_since": ms(0.5),
                            "next_refresh_by": ms(30.5),
                        },
                        {
                            "client_id": "p2",
                            "template_brokers": ["a", "b", "c"],
                            "brokers_with_topic": ["a"],
                            "template_route_since": ms(0.8),
                            "next_refresh_by": ms(30.8),
                        },
                    ],
                    "brokers_with_topic": ["a"],
                    "condition_since": ms(1),
                },
            },
            remedy=create_remedy("T", 4),
        )
    ]
    changes = [a for a in run_.cluster("C").alert_changes if a.kind == "AT_RISK"]
    assert [(_s(a.updated_at), a.state) for a in changes] == [
        (6.0, "open"),  # p1: 1 of 2, p2: 1 of 3
        (20.0, "open"),  # p2's failed pull: its next refresh is due at 50 s
        (22.0, "open"),  # p1 is no longer at risk
        (24.0, "resolved"),
    ]
    p1 = {
        "client_id": "p1",
        "template_brokers": ["a", "b"],
        "brokers_with_topic": ["a"],
        "template_route_since": ms(0.5),
        "next_refresh_by": ms(30.5),
    }
    p2 = {
        "client_id": "p2",
        "template_brokers": ["a", "b", "c"],
        "brokers_with_topic": ["a"],
        "template_route_since": ms(0.8),
        "next_refresh_by": ms(30.8),
    }
    assert (changes[0].summary, changes[0].evidence) == (
        "Topic T is on 1 of the 3 brokers its producers' template route covers; at their next "
        "route refresh (by 2026-01-01T00:00:30.800Z) it collapses to those brokers.",
        {"producers": [p1, p2], "brokers_with_topic": ["a"], "condition_since": ms(1)},
    )
    assert (changes[1].summary, changes[1].evidence) == (
        "Topic T is on 1 of the 3 brokers its producers' template route covers; at their next "
        "route refresh (by 2026-01-01T00:00:50.000Z) it collapses to those brokers.",
        {
            "producers": [p1, {**p2, "next_refresh_by": ms(50)}],
            "brokers_with_topic": ["a"],
            "condition_since": ms(1),
        },
    )


def test_at_risk_needs_5_s_without_a_break(batch_size: int | None) -> None:
    t = Trace()
    t.every(0, 60, 30, "a")
    t.every(0, 60, 30, "b")
    t.pull(0.5, "T", ["a", "b"], via_default=True)
    t.send(1, "T", broker="a", auto_created=True)
    t.hb(1, "a", {"T": 4}, full=False)
    t.send(5.5, "T", broker="b", auto_created=True)
    t.hb(5.5, "b", {"T": 4}, full=False)  # converged 4.5 s after the condition began

    assert final(run(t, batch_size=batch_size)) == []
